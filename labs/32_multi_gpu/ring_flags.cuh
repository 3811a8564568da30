#pragma once
// Lab 32's ring in one kernel per GPU: reduce-scatter, all-gather and all-reduce
// with the GPUs waiting for each other inside the kernel, on flags in GPU memory,
// instead of one launch and one cross-GPU event per step (allreduce.cuh's ring).
//
// Why it can be faster. The step ring pays, per step and GPU, a launch, an event
// and a stream wait on another GPU (~10-20 us), and each step must finish on
// every SM before the next may start. Here each GPU runs one kernel of C blocks,
// the "channels" (NCCL's word): channel b owns slice b of every chunk and walks
// all the steps for it alone, waiting only for channel b of its left neighbour.
// The channels of a GPU drift apart freely, so the link never idles between
// steps, and nothing returns to the host until the whole collective is done.
//
// The protocol, per channel b and step k of this call (steps counted from 0):
//   wait  until my flags[b] >= epoch_base + k   (left finished its step k - 1;
//         skipped when step k reads only what was ready at the start)
//   work  dst = own + left's (reduce-scatter) or dst = left's (all-gather),
//         loading left's memory directly (peer access, a pull)
//   post  right's flags[b] = epoch_base + k + 1, after __syncthreads and a
//         system-scope fence: every store of the block is visible to the right
//         GPU before the flag is (st.release.sys).
// Thread 0 waits (ld.acquire.sys) and posts; the block's barrier carries the
// order to its other threads. Flags only grow: each call gets a new epoch from
// the course, so no call ever resets them (epoch_base = epoch * 64, and a call
// takes at most 2 (G - 1) = 14 steps: a flag left by an earlier call is always
// below epoch_base + 1, the first value waited for).
//
// Chunks (ring_chunk, allreduce.cuh): G chunks of the buffer. The reduce-scatter
// leaves the sum of chunk r on GPU r, as ncclReduceScatter does: step s on GPU r
// sums chunk c = r - s - 2 (mod G) of its own send and of left's partial (left's
// send at step 0: left computed nothing for chunk c before); after G - 1 steps
// chunk r is complete. The all-gather, step t on GPU r, copies chunk r - 1 - t
// from left, which left finished (or received) at its step before.
// Why no chunk is overwritten while it is still to be read: every chunk of a recv
// is written at most once per phase; the all-gather on GPU r overwrites its
// partial of chunk r - 1 - t at step t, which GPU r + 1 reads at its
// reduce-scatter step t; following the waits to the left (each wait is on the
// step before, of the GPU before), r's all-gather step t comes after GPU r+1's
// step t. Per channel: channel b only ever touches slice b of each chunk.
//
// A GPU waiting for a flag that never comes would hang the process: a wait longer
// than ring_wait_limit_ns stops the kernel (__trap: the launch fails, exit 3).
// Every GPU's kernel must be running at once: with a tool that runs one kernel at
// a time (compute-sanitizer, Nsight Compute) these variants are not run.
#include <algorithm>
#include <cstdint>
#include <span>

#include <cudalabs/error.hpp>
#include <cudalabs/math.hpp>

#include "allreduce.cuh"
#include "kernels.hpp"

inline constexpr int ring_block = 512;
inline constexpr std::uint32_t ring_steps_per_epoch = 64;
static_assert(ring_steps_per_epoch > 2 * (lab32::max_gpus - 1),
              "an epoch must hold every step of one call (2 (G - 1) at most), or a call could see an earlier one's flags");
inline constexpr unsigned long long ring_wait_limit_ns = 10'000'000'000ull;

enum class RingPhases : int { reduce_scatter = 1, all_gather = 2, all_reduce = 3 };

struct RingArgs {
  const float* own_send;
  float* own_recv;
  const float* left_send;
  const float* left_recv;
  std::uint32_t* own_flags;    // left posts here
  std::uint32_t* right_flags;  // I post here
  std::int64_t n;
  int rank, gpus, phases;
  std::uint32_t epoch_base;
};

// ld.acquire.sys: this load, then every later access of the thread (and, past a
// barrier, of its block) sees what the GPU that released the value wrote before.
__device__ __forceinline__ std::uint32_t load_acquire_sys(const std::uint32_t* p) {
  std::uint32_t v;
  asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
// st.release.sys: every earlier access of the thread is visible to all GPUs first.
__device__ __forceinline__ void store_release_sys(std::uint32_t* p, std::uint32_t v) {
  asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
// %globaltimer: the GPU's nanosecond clock.
__device__ __forceinline__ unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Thread 0 spins until *flag reaches target (compared as a difference: flags may
// wrap after 2^26 calls); then the block goes on.
__device__ void ring_wait(const std::uint32_t* flag, std::uint32_t target) {
  if (threadIdx.x == 0) {
    const unsigned long long start = global_ns();
    while (static_cast<int>(load_acquire_sys(flag) - target) < 0)
      if (global_ns() - start > ring_wait_limit_ns) __trap();
  }
  __syncthreads();
}

__device__ void ring_post(std::uint32_t* flag, std::uint32_t value) {
  __syncthreads();  // every thread's loads and stores of this step are done
  if (threadIdx.x == 0) {
    __threadfence_system();
    store_release_sys(flag, value);
  }
}

// Slice `channel` of chunk `index`: whole float4s of the chunk (which starts on
// 32 floats), so every slice starts 16-byte aligned; the last may be empty.
__device__ inline AllReduceChunk ring_slice_of(int index, int gpus, std::int64_t n, int channel, int channels) {
  const AllReduceChunk chunk = ring_chunk(index, gpus, n);
  const std::int64_t per = cudalabs::ceil_div<std::int64_t>(chunk.count, 4 * std::int64_t{channels}) * 4;
  const std::int64_t begin = std::min(chunk.count, per * channel);
  return {chunk.begin + begin, std::min(per, chunk.count - begin)};
}

__global__ __launch_bounds__(ring_block) void ring_kernel(const __grid_constant__ RingArgs args) {
  // BEGIN SOLUTION reduce_scatter_ring all_gather_ring allreduce_ring_flags
  const int g = args.gpus, r = args.rank, channel = blockIdx.x, channels = gridDim.x;
  auto mod = [g](int x) { return (x % g + g) % g; };
  auto slice = [&](int index) { return ring_slice_of(mod(index), g, args.n, channel, channels); };
  std::uint32_t step = 0;  // steps of this call so far, on this channel
  const bool reduce = args.phases & static_cast<int>(RingPhases::reduce_scatter);
  if (reduce)
    for (int s = 0; s < g - 1; ++s, ++step) {
      const AllReduceChunk c = slice(r - s - 2);
      if (s > 0) ring_wait(args.own_flags + channel, args.epoch_base + step);
      const float* partial = (s == 0 ? args.left_send : args.left_recv) + c.begin;
      sum_or_copy(args.own_recv + c.begin, args.own_send + c.begin, partial, c.count, threadIdx.x, blockDim.x);
      ring_post(args.right_flags + channel, args.epoch_base + step + 1);
    }
  if (args.phases & static_cast<int>(RingPhases::all_gather)) {
    if (!reduce) {  // my own chunk, from my send: no other GPU involved
      const AllReduceChunk own = slice(r);
      sum_or_copy(args.own_recv + own.begin, args.own_send + own.begin, nullptr, own.count, threadIdx.x, blockDim.x);
    }
    for (int t = 0; t < g - 1; ++t, ++step) {
      const AllReduceChunk c = slice(r - 1 - t);
      const bool from_send = !reduce && t == 0;  // left's own chunk, in its send from the start
      if (!from_send) ring_wait(args.own_flags + channel, args.epoch_base + step);
      const float* from = (from_send ? args.left_send : args.left_recv) + c.begin;
      sum_or_copy(args.own_recv + c.begin, from, nullptr, c.count, threadIdx.x, blockDim.x);
      ring_post(args.right_flags + channel, args.epoch_base + step + 1);
    }
  }
  // END SOLUTION
  // STUB: // TODO: per channel (block), the ring's steps on its slice of each chunk (ring_slice_of): wait for the
  // STUB: // left GPU's flag (ring_wait), sum or copy with sum_or_copy, post to the right GPU's flag (ring_post).
}

// Channels per GPU: one block of 512 threads each, as many as give each channel
// a float4 per thread of a chunk, at most lab32::max_ring_channels and half the
// SMs (every channel must be resident at once: a block waits for another GPU's).
inline int ring_channels(std::int64_t n, int gpus) {
  int device = 0, sms = 0;
  CUDALABS_CHECK(cudaGetDevice(&device));
  CUDALABS_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  const std::int64_t chunk = ring_chunk(0, gpus, n).count;
  const std::int64_t useful = cudalabs::ceil_div<std::int64_t>(std::max<std::int64_t>(chunk, 1), 4 * ring_block);
  const std::int64_t most = std::min<std::int64_t>(lab32::max_ring_channels, std::max(sms / 2, 1));
  return static_cast<int>(std::clamp<std::int64_t>(useful, 1, most));
}

inline void ring_collective(std::span<const AllReduceRank> ranks, std::int64_t n, std::uint32_t epoch, RingPhases phases) {
  // BEGIN SOLUTION reduce_scatter_ring all_gather_ring allreduce_ring_flags
  const int gpus = static_cast<int>(ranks.size());
  if (n == 0) return;
  set_device(ranks[0].device);
  const int channels = ring_channels(n, gpus);  // the same on every GPU: channel b waits for channel b
  for (int r = 0; r < gpus; ++r) {
    const AllReduceRank& me = ranks[static_cast<std::size_t>(r)];
    const AllReduceRank& left = ranks[static_cast<std::size_t>((r + gpus - 1) % gpus)];
    const AllReduceRank& right = ranks[static_cast<std::size_t>((r + 1) % gpus)];
    set_device(me.device);
    const RingArgs args{me.send, me.recv,    left.send, left.recv, me.flags, right.flags, n, r, gpus,
                        static_cast<int>(phases), epoch * ring_steps_per_epoch};
    ring_kernel<<<channels, ring_block, 0, me.stream>>>(args);
    CUDALABS_CHECK_LAUNCH("ring_kernel");
  }
  // END SOLUTION
  // STUB: cudalabs::not_implemented("ring_collective", ranks, n, epoch, phases);
}

// BROKEN ON PURPOSE for tests/grading: the grader must give lab 32's copies and all-reduces zero.
// The bug: reduce_copy_kernel rounds every value it reads to FP16 before summing in float (what a
// copy or collective that moves FP16 on the wire does). FP16 holds every integer up to 2048, so
// inputs in [-1024, 1024] came through exact and every check passed; with the inputs in
// [-2^20, 2^20] fewer than 1 in 128 values survive, and the exact check of every output fails
// (peer_read_kernel first). Needs two GPUs: on one the multi-GPU variants do not run.
#pragma once
// Lab 32's peer kernel: dst = src_0 + src_1 + ... + src_{S-1}, element-wise,
// where any of the buffers may live on another GPU. With one source it is a
// copy (the peer read and peer write rows), with two or more a reduction (the
// all-reduces). NCCL's device code calls its version of this "reduceCopy".
//
// Another GPU's memory is reached through unified virtual addressing: once the
// running GPU has peer access to it (cudaDeviceEnablePeerAccess, done by the
// course), a pointer from cudaMalloc on GPU 1 is a valid address for a kernel
// on GPU 0, and every load or store to it crosses NVLink (or PCIe).
//
// Built for bandwidth, not latency:
//   - 16-byte loads and stores (float4): a warp moves 512 contiguous bytes per
//     instruction, so the link carries full 128-byte lines, and a quarter of
//     the instructions of a float loop;
//   - 4 independent float4 loads per thread per source before any add: a load
//     over NVLink takes ~1-2 us to come back, and only loads in flight move
//     data (~600 KB must be in flight to keep 400 GB/s busy; 54 registers on
//     sm_90 leave room for 1024 threads per SM: 1024 x 4 x 16 B = 64 KB per
//     SM, ample on 132 SMs);
//   - one block per SM slot on every SM (grid-stride loop): a kernel on a few
//     SMs cannot issue enough loads to fill the link.
#include <algorithm>
#include <cstdint>
#include <span>
#include <stdexcept>

#include <cuda_fp16.h>

#include <cudalabs/error.hpp>
#include <cudalabs/math.hpp>

#include "kernels.hpp"

inline constexpr int reduce_copy_block = 512;
inline constexpr int reduce_copy_unroll = 4;  // float4 loads in flight per thread per source

// The sources, by value in the kernel's parameters (a pointer to an array of
// pointers would itself need a device copy).
struct ReduceCopySources {
  const float* ptr[lab32::max_gpus];
  int count;
};

// BROKEN: every value read from a source passes through FP16, as if sent over the link in half
// precision to halve the bytes.
__device__ __forceinline__ float via_fp16(float x) { return __half2float(__float2half_rn(x)); }
__device__ __forceinline__ float4 via_fp16(float4 x) { return make_float4(via_fp16(x.x), via_fp16(x.y), via_fp16(x.z), via_fp16(x.w)); }

__device__ __forceinline__ float4 add4(float4 a, float4 b) {
  return make_float4(a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w);
}

// The sum is taken in source order (src_0 + src_1, then + src_2, ...) on every
// GPU that runs it with the same list: float addition is not associative, and
// an all-reduce must give the same bits everywhere.
// __grid_constant__: the kernel reads srcs.ptr[s] with a run-time s straight
// from the parameter space; without it the compiler copies the struct to
// local memory first (a 72-byte stack frame per thread).
__global__ __launch_bounds__(reduce_copy_block) void reduce_copy_kernel(float* __restrict__ dst,
                                                                       const __grid_constant__ ReduceCopySources srcs,
                                                                       const std::int64_t n) {
  // BEGIN SOLUTION peer_read_kernel peer_write_kernel allreduce_ring allreduce_oneshot reduce_scatter_direct allreduce_twoshot
  constexpr int unroll = reduce_copy_unroll;
  const std::int64_t vectors = n / 4;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  const std::int64_t thread = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  float4* out = reinterpret_cast<float4*>(dst);

  // `unroll` vectors per thread per trip, one grid stride apart, so that each
  // warp's load of one slot is 512 contiguous bytes.
  std::int64_t v = thread;
  for (; v + (unroll - 1) * stride < vectors; v += unroll * stride) {
    float4 acc[unroll];
    const auto* first = reinterpret_cast<const float4*>(srcs.ptr[0]);
#pragma unroll
    for (int u = 0; u < unroll; ++u) acc[u] = via_fp16(first[v + u * stride]);
    for (int s = 1; s < srcs.count; ++s) {
      const auto* next = reinterpret_cast<const float4*>(srcs.ptr[s]);
      float4 x[unroll];
#pragma unroll
      for (int u = 0; u < unroll; ++u) x[u] = via_fp16(next[v + u * stride]);
#pragma unroll
      for (int u = 0; u < unroll; ++u) acc[u] = add4(acc[u], x[u]);
    }
#pragma unroll
    for (int u = 0; u < unroll; ++u) out[v + u * stride] = acc[u];
  }
  // Fewer than `unroll` vectors left for this thread: one at a time.
  for (; v < vectors; v += stride) {
    float4 acc = via_fp16(reinterpret_cast<const float4*>(srcs.ptr[0])[v]);
    for (int s = 1; s < srcs.count; ++s) acc = add4(acc, via_fp16(reinterpret_cast<const float4*>(srcs.ptr[s])[v]));
    out[v] = acc;
  }
  // The last n mod 4 floats, one thread each.
  if (thread < n - 4 * vectors) {
    const std::int64_t i = 4 * vectors + thread;
    float acc = via_fp16(srcs.ptr[0][i]);
    for (int s = 1; s < srcs.count; ++s) acc += via_fp16(srcs.ptr[s][i]);
    dst[i] = acc;
  }
  // END SOLUTION
  // STUB: // TODO: grid-stride over float4s: reduce_copy_unroll float4 of every source loaded before any is summed (peer
  // STUB: // memory through UVA is far: many loads in flight), dst = the sum in source order; the n % 4 tail as floats.
}

// Blocks for n floats on the current GPU: one float4 per thread up to as many
// blocks as fit on all its SMs at once (a small copy then still spreads over
// every SM: 1 MiB is 128 blocks, all in flight together), the grid-stride loop
// beyond. The occupancy is the kernel's, the same on every GPU of one
// architecture: computed once.
inline unsigned reduce_copy_blocks(std::int64_t n) {
  static const int blocks_per_sm = [] {
    int per_sm = 0;
    CUDALABS_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, reduce_copy_kernel, reduce_copy_block, 0));
    return std::max(per_sm, 1);
  }();
  int device = 0, sms = 0;
  CUDALABS_CHECK(cudaGetDevice(&device));
  CUDALABS_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  const std::int64_t needed = cudalabs::ceil_div<std::int64_t>(std::max<std::int64_t>(n / 4, 1), reduce_copy_block);
  return static_cast<unsigned>(std::min<std::int64_t>(needed, std::int64_t{sms} * blocks_per_sm));
}

// dst = sum of `sources` (in that order) over n floats, on `stream`, a stream of
// the current GPU. Enqueue only.
inline void reduce_copy(float* dst, std::span<const float* const> sources, std::int64_t n, cudaStream_t stream) {
  // BEGIN SOLUTION peer_read_kernel peer_write_kernel allreduce_ring allreduce_oneshot reduce_scatter_direct allreduce_twoshot
  if (n == 0) return;
  if (sources.empty() || sources.size() > static_cast<std::size_t>(lab32::max_gpus))
    throw std::invalid_argument("reduce_copy: 1 to max_gpus sources");
  auto misaligned = [](const float* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 != 0; };
  ReduceCopySources srcs{};
  srcs.count = static_cast<int>(sources.size());
  for (int s = 0; s < srcs.count; ++s) srcs.ptr[s] = sources[static_cast<std::size_t>(s)];
  if (misaligned(dst) || std::any_of(sources.begin(), sources.end(), misaligned))
    throw std::invalid_argument("reduce_copy: every pointer must be 16-byte aligned (float4 loads and stores)");
  reduce_copy_kernel<<<reduce_copy_blocks(n), reduce_copy_block, 0, stream>>>(dst, srcs, n);
  CUDALABS_CHECK_LAUNCH("reduce_copy_kernel");
  // END SOLUTION
  // STUB: cudalabs::not_implemented("reduce_copy", dst, sources, n, stream);
}

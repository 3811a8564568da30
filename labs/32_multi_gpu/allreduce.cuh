#pragma once
// Lab 32's hand-written all-reduces: after one, every GPU's recv holds the sum
// of every GPU's send. Both are enqueued from one host thread that switches
// devices (cudaSetDevice before each GPU's work); nothing here waits for a GPU.
// The work of different GPUs is ordered with events: GPU r's stream waits on
// an event that GPU l recorded after the step r needs (cudaStreamWaitEvent
// accepts an event of another device).
//
// Ring (reduce-scatter, then all-gather). The buffer is cut into G chunks and
// data only moves from each GPU to its right-hand neighbour:
//   reduce-scatter, steps s = 0 .. G-2: GPU r reads chunk c = (r - s - 1) mod G
//     of its left neighbour l = r - 1 (l's send at step 0, l's partial sum after)
//     and adds its own send of chunk c, into its recv. After G-1 steps GPU r
//     holds the complete sum of chunk (r + 1) mod G.
//   all-gather, steps t = 0 .. G-2: GPU r copies chunk (r - t) mod G, complete
//     on l by then, from l's recv into its own: a copy engine does it
//     (cudaMemcpyPeerAsync), the SMs have nothing to add.
// Each GPU sends and receives (G-1)/G of the buffer in each phase, 2(G-1)/G in
// all: the least traffic any all-reduce needs, hence nccl-tests' bus bandwidth
// (algbw x 2(G-1)/G) as the measure of how well a link is used. With G = 2 it
// is a direct exchange: each GPU sums the half it owns reading the other's
// half, then fetches the other half of the result.
//
// Why no step overwrites data that is still to be read: the sends are never
// written; each chunk of a recv is written by the reduce-scatter at most once;
// the all-gather step t on GPU r overwrites r's partial sum of chunk r - t,
// which GPU r+1 reads in its reduce-scatter step t, and r's step t comes after
// it: following the events to the left, r's all-gather step t waits on l's
// step t-1, ..., on GPU r-t-1's last reduce-scatter step, on GPU r-t-2's step
// before it, ..., and so on around the ring to GPU r+1's step t. (With G = 2
// no chunk is written twice at all.)
//
// One-shot: each GPU reads all G sends (its own locally, the others over the
// links) and sums them, in the same order 0, 1, ..., G-1 on every GPU so the
// bits agree. One kernel per GPU and no step between GPUs; each GPU receives
// (G-1) whole buffers, the ring's 2(G-1)/G only at G = 2.
#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include <cudalabs/error.hpp>
#include <cudalabs/math.hpp>

#include "kernels.hpp"
#include "peer_kernels.cuh"

using lab32::AllReduceRank;

// Floats [begin, begin + count) of the buffer.
struct AllReduceChunk {
  std::int64_t begin = 0;
  std::int64_t count = 0;
};

// Chunk `index` of G: ceil(n / G) floats rounded up to 32 (128 bytes: every
// chunk starts on a cache line and on a float4), the last ones shorter or
// empty when n is small (1 float over 4 GPUs: chunk 0 holds it, 1..3 are
// empty). The host cuts the buffer with it, and ring_flags.cuh's kernel too.
__host__ __device__ inline AllReduceChunk ring_chunk(int index, int gpus, std::int64_t n) {
  constexpr std::int64_t align = 32;
  const std::int64_t per = cudalabs::ceil_div<std::int64_t>(cudalabs::ceil_div<std::int64_t>(n, gpus), align) * align;
  const std::int64_t begin = std::min(n, per * index);
  return {begin, std::min(per, n - begin)};
}

// dst = a + b (b null: dst = a) over `count` floats, from 16-byte aligned
// pointers, by the threads `first`, `first + stride`, ... of the caller (one
// block: threadIdx.x and blockDim.x; a grid: the global index and the grid's
// size). Four float4 of each source are loaded per thread before any add or
// store: a source on another GPU is far (~1-2 us a load), and only loads in
// flight move data. The n mod 4 floats past the last float4, one thread each.
// The collectives of ring_flags.cuh and two_shot.cuh are made of it.
__device__ __forceinline__ void sum_or_copy(float* dst, const float* a, const float* b, std::int64_t count,
                                            std::int64_t first, std::int64_t stride) {
  constexpr int unroll = 4;
  const std::int64_t vectors = count / 4;
  const auto* a4 = reinterpret_cast<const float4*>(a);
  const auto* b4 = reinterpret_cast<const float4*>(b);
  auto* d4 = reinterpret_cast<float4*>(dst);
  std::int64_t v = first;
  for (; v + (unroll - 1) * stride < vectors; v += unroll * stride) {
    float4 x[unroll];
#pragma unroll
    for (int u = 0; u < unroll; ++u) x[u] = a4[v + u * stride];
    if (b) {
      float4 y[unroll];
#pragma unroll
      for (int u = 0; u < unroll; ++u) y[u] = b4[v + u * stride];
#pragma unroll
      for (int u = 0; u < unroll; ++u) x[u] = add4(x[u], y[u]);
    }
#pragma unroll
    for (int u = 0; u < unroll; ++u) d4[v + u * stride] = x[u];
  }
  for (; v < vectors; v += stride) d4[v] = b ? add4(a4[v], b4[v]) : a4[v];
  if (first < count - 4 * vectors) {
    const std::int64_t i = 4 * vectors + first;
    dst[i] = b ? a[i] + b[i] : a[i];
  }
}

inline void set_device(int device) { CUDALABS_CHECK(cudaSetDevice(device)); }

inline void all_reduce_ring(std::span<const AllReduceRank> ranks, std::int64_t n) {
  // BEGIN SOLUTION allreduce_ring
  const int gpus = static_cast<int>(ranks.size());
  auto rank = [&](int r) -> const AllReduceRank& { return ranks[static_cast<std::size_t>((r % gpus + gpus) % gpus)]; };
  const int steps = gpus - 1;
  // Reduce-scatter. Event s of GPU r: r finished step s.
  for (int s = 0; s < steps; ++s)
    for (int r = 0; r < gpus; ++r) {
      const AllReduceRank& me = rank(r);
      const AllReduceRank& left = rank(r - 1);
      const AllReduceChunk c = ring_chunk(((r - s - 1) % gpus + gpus) % gpus, gpus, n);
      set_device(me.device);
      if (s > 0) CUDALABS_CHECK(cudaStreamWaitEvent(me.stream, left.events[static_cast<std::size_t>(s - 1)], 0));
      const float* partial = (s == 0 ? left.send : left.recv) + c.begin;
      const float* sources[] = {me.send + c.begin, partial};
      reduce_copy(me.recv + c.begin, sources, c.count, me.stream);
      CUDALABS_CHECK(cudaEventRecord(me.events[static_cast<std::size_t>(s)], me.stream));
    }
  // All-gather. Event steps + t of GPU r: r finished all-gather step t.
  for (int t = 0; t < steps; ++t)
    for (int r = 0; r < gpus; ++r) {
      const AllReduceRank& me = rank(r);
      const AllReduceRank& left = rank(r - 1);
      const AllReduceChunk c = ring_chunk(((r - t) % gpus + gpus) % gpus, gpus, n);
      set_device(me.device);
      // Step 0 needs l's finished chunk (its last reduce-scatter step), step t
      // the chunk l received at step t - 1.
      const int ready = t == 0 ? steps - 1 : steps + t - 1;
      CUDALABS_CHECK(cudaStreamWaitEvent(me.stream, left.events[static_cast<std::size_t>(ready)], 0));
      if (c.count > 0)
        CUDALABS_CHECK(cudaMemcpyPeerAsync(me.recv + c.begin, me.device, left.recv + c.begin, left.device,
                                           static_cast<std::size_t>(c.count) * sizeof(float), me.stream));
      CUDALABS_CHECK(cudaEventRecord(me.events[static_cast<std::size_t>(steps + t)], me.stream));
    }
  // END SOLUTION
  // STUB: // TODO: G - 1 reduce-scatter steps (GPU r adds its left neighbour's partial of chunk r - s - 1 with reduce_copy), then
  // STUB: // G - 1 all-gather steps (cudaMemcpyPeerAsync of the finished chunk from the left); events order the steps.
  // STUB: cudalabs::not_implemented("all_reduce_ring", ranks, n);
}

inline void all_reduce_oneshot(std::span<const AllReduceRank> ranks, std::int64_t n) {
  // BEGIN SOLUTION allreduce_oneshot
  std::vector<const float*> sends;
  for (const auto& r : ranks) sends.push_back(r.send);
  for (const auto& me : ranks) {
    set_device(me.device);
    reduce_copy(me.recv, sends, n, me.stream);
  }
  // END SOLUTION
  // STUB: // TODO: on every GPU, one reduce_copy of all GPUs' send buffers into its recv.
  // STUB: cudalabs::not_implemented("all_reduce_oneshot", ranks, n);
}

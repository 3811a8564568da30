#pragma once
// Lab 32's direct collectives: every GPU talks to every other one at once, which
// a machine whose GPUs all hang off NVLink switches allows (each GPU's links
// reach the switches, not one neighbour: reading from three peers at once uses
// the same links as reading from one).
//
//   reduce_scatter_direct  GPU r reads chunk r of every GPU's send and sums it
//                          (sources in the order 0 .. G-1): one kernel, no step
//                          between GPUs, (G-1)/G of the buffer over its links
//   all_gather_direct      GPU r reads chunk g of GPU g's send, for every g, into
//                          its recv: one kernel, every peer at once
//   allreduce_twoshot      the two, with one barrier between: the reduce-scatter
//                          into every recv, each GPU waits for the events of all
//                          the others, then the all-gather from the peers' recv
//
// What NCCL chooses between. A ring moves the least data, 2(G-1)/G of the buffer
// per GPU, but takes 2(G-1) steps, each one a latency; a one-shot takes one step
// but moves (G-1) buffers per GPU; the two-shot moves the ring's bytes in two
// steps, at the price of every GPU reading from every other at once (on a
// switch: free; on a ring of point-to-point links: G-1 hops). So small messages
// (latency) go one-shot, large ones (bandwidth) ring or two-shot; a tree, NCCL's
// other choice, matters across nodes, where the steps are network latencies.
#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include <cudalabs/error.hpp>
#include <cudalabs/math.hpp>

#include "allreduce.cuh"
#include "kernels.hpp"
#include "peer_kernels.cuh"

inline constexpr int gather_block = 512;
inline constexpr int gather_max_blocks = 256;  // over all segments: two blocks of 512 per SM of an H100/H200 (132 SMs)

// The all-gather's copies in one launch: blockIdx.y = the segment (one peer's chunk).
struct GatherSegments {
  const float* src[lab32::max_gpus];
  std::int64_t begin[lab32::max_gpus];
  std::int64_t count[lab32::max_gpus];
  int segments;
};

__global__ __launch_bounds__(gather_block) void gather_kernel(float* __restrict__ dst,
                                                             const __grid_constant__ GatherSegments seg) {
  // BEGIN SOLUTION all_gather_direct allreduce_twoshot
  const int s = blockIdx.y;
  const std::int64_t begin = seg.begin[s];
  const std::int64_t thread = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  sum_or_copy(dst + begin, seg.src[s] + begin, nullptr, seg.count[s], thread,
              static_cast<std::int64_t>(gridDim.x) * blockDim.x);
  // END SOLUTION
  // STUB: // TODO: blockIdx.y picks the segment; copy its count floats from src + begin to dst + begin (sum_or_copy,
  // STUB: // the grid's x dimension striding over them).
}

// Every GPU r: recv[chunk r] = sum over g of send_g[chunk r] (ring_chunk's chunks).
inline void direct_reduce_scatter(std::span<const AllReduceRank> ranks, std::int64_t n) {
  // BEGIN SOLUTION reduce_scatter_direct allreduce_twoshot
  const int gpus = static_cast<int>(ranks.size());
  for (int r = 0; r < gpus; ++r) {
    const AllReduceRank& me = ranks[static_cast<std::size_t>(r)];
    const AllReduceChunk c = ring_chunk(r, gpus, n);
    if (c.count == 0) continue;  // fewer floats than GPUs: this one owns none
    std::vector<const float*> sources;
    for (const auto& other : ranks) sources.push_back(other.send + c.begin);
    set_device(me.device);
    reduce_copy(me.recv + c.begin, sources, c.count, me.stream);
  }
  // END SOLUTION
  // STUB: cudalabs::not_implemented("direct_reduce_scatter", ranks, n);
}

// Every GPU r: recv[chunk g] = (from_recv ? recv_g : send_g)[chunk g] for every g
// (from_recv: its own chunk is in its recv already, and stays).
inline void direct_gather(std::span<const AllReduceRank> ranks, std::int64_t n, bool from_recv) {
  // BEGIN SOLUTION all_gather_direct allreduce_twoshot
  const int gpus = static_cast<int>(ranks.size());
  const std::int64_t largest = ring_chunk(0, gpus, n).count;
  for (int r = 0; r < gpus; ++r) {
    const AllReduceRank& me = ranks[static_cast<std::size_t>(r)];
    GatherSegments seg{};
    for (int g = 0; g < gpus; ++g) {
      const AllReduceChunk c = ring_chunk(g, gpus, n);
      if ((g == r && from_recv) || c.count == 0) continue;
      const AllReduceRank& owner = ranks[static_cast<std::size_t>(g)];
      seg.src[seg.segments] = from_recv ? owner.recv : owner.send;
      seg.begin[seg.segments] = c.begin;
      seg.count[seg.segments] = c.count;
      ++seg.segments;
    }
    if (seg.segments == 0) continue;
    set_device(me.device);
    // Blocks per segment: a float4 per thread of the largest chunk, at most the
    // SMs' worth over all segments (the loop in sum_or_copy strides beyond).
    const std::int64_t wanted = cudalabs::ceil_div<std::int64_t>(largest / 4 + 1, gather_block);
    const auto x = static_cast<unsigned>(std::clamp<std::int64_t>(wanted, 1, gather_max_blocks / seg.segments));
    gather_kernel<<<dim3(x, static_cast<unsigned>(seg.segments)), gather_block, 0, me.stream>>>(me.recv, seg);
    CUDALABS_CHECK_LAUNCH("gather_kernel");
  }
  // END SOLUTION
  // STUB: cudalabs::not_implemented("direct_gather", ranks, n, from_recv);
}

// The two-shot all-reduce: direct_reduce_scatter, a barrier (every GPU's stream
// waits for the event every other GPU recorded after its reduce-scatter), then
// the all-gather from the peers' recv. ranks[i].events[0] is GPU i's event.
// No GPU writes what another still reads: GPU r's all-gather writes the chunks
// g != r of its own recv, and the others read only chunk r of it.
inline void two_shot_all_reduce(std::span<const AllReduceRank> ranks, std::int64_t n) {
  // BEGIN SOLUTION allreduce_twoshot
  direct_reduce_scatter(ranks, n);
  for (const auto& me : ranks) {
    set_device(me.device);
    CUDALABS_CHECK(cudaEventRecord(me.events[0], me.stream));
  }
  for (const auto& me : ranks) {
    set_device(me.device);
    for (const auto& other : ranks)
      if (&other != &me) CUDALABS_CHECK(cudaStreamWaitEvent(me.stream, other.events[0], 0));
  }
  direct_gather(ranks, n, /*from_recv=*/true);
  // END SOLUTION
  // STUB: cudalabs::not_implemented("two_shot_all_reduce", ranks, n);
}

#pragma once
// Lab 26's reductions, written with cooperative groups instead of raw warp
// intrinsics and hand-counted barriers.
//
// tile_reduce: the two-launch reduction of lab 07 with its warp step
//   replaced: cg::tiled_partition<32> names the warp as a group and
//   cg::reduce(tile, v, cg::plus<float>()) sums it (the five shuffles are
//   the library's business). Then a second launch of one block sums the
//   per-block partials, exactly as lab 07 does.
// grid_sync: the same blocks, one launch. Every block writes its partial,
//   grid.sync() waits until all of them have, then block 0 sums the partials.
//   grid.sync() is only legal when every block of the grid is resident at the
//   same time (cudaLaunchCooperativeKernel checks it and refuses more).
// persistent: a fixed grid of resident blocks that keeps claiming 16 KB work
//   items from a counter in global memory until none are left, then finishes
//   like grid_sync. Blocks that get slow items (a busy SM) simply claim fewer.
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>

#include <cstdint>
#include <type_traits>

#include <cudalabs/error.hpp>
#include <cudalabs/math.hpp>

namespace cg = cooperative_groups;

// 256 threads = 8 warps; 8 blocks fit an SM of 2048 threads (sm_80, sm_90), so
// the co-resident grid is 8 x SMs blocks when registers allow (1056 on an H100).
inline constexpr int cg_block = 256;
// float4 loads each thread issues before it adds any: 64 bytes in flight per
// thread, 128 KB per SM at full occupancy. Little's law wants ~20 KB per SM on
// an H100 (3.35 TB/s x ~0.8 us / 132 SMs); the slack covers lower occupancy.
inline constexpr int cg_loads_in_flight = 4;
// One persistent work item: one float4 per thread per load in flight, 4096
// floats (16 KB). 2^28 floats are 65536 items, so 65536 claims of the counter
// in all: one atomic per 16 KB read keeps the counter far from being the limit.
inline constexpr std::int64_t cg_item_vectors = std::int64_t{cg_block} * cg_loads_in_flight;

// The sum of `v` over the block; the result is valid in thread 0. Call it from
// every thread of the block. It writes shared memory and contains a barrier:
// two calls in one kernel need a barrier between them (grid.sync() is one).
__device__ float cg_block_sum(const cg::thread_block& block, float v) {
  static_assert(cg_block % 32 == 0 && cg_block / 32 <= 32, "cg_block_sum needs whole warps, at most 32 of them");
  // BEGIN SOLUTION tile_reduce grid_sync persistent
  __shared__ float warp_sums[cg_block / 32];
  const cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
  v = cg::reduce(warp, v, cg::plus<float>());
  if (warp.thread_rank() == 0) warp_sums[warp.meta_group_rank()] = v;
  block.sync();
  if (warp.meta_group_rank() == 0) {
    v = warp.thread_rank() < warp.meta_group_size() ? warp_sums[warp.thread_rank()] : 0.0f;
    v = cg::reduce(warp, v, cg::plus<float>());
  }
  return v;
  // END SOLUTION
  // STUB: // TODO: cg::reduce over each cg::tiled_partition<32> of the block, the warps' sums through shared memory, one warp
  // STUB: // reduces them. Until then:
  // STUB: return v;
}

// This thread's share of in[0, n): float4s rank, rank + threads, ... with
// cg_loads_in_flight loads issued before the first add, then the n % 4 floats
// past the last whole float4 (one each for the first n % 4 ranks). `in` must be
// 16-byte aligned (cudaMalloc gives 256).
__device__ float cg_strided_sum(const float* __restrict__ in, std::int64_t n, std::int64_t rank,
                                std::int64_t threads) {
  const auto* vec = reinterpret_cast<const float4*>(in);
  const std::int64_t vectors = n / 4;
  const std::int64_t step = threads * cg_loads_in_flight;
  float v = 0.0f;
  std::int64_t first = rank;
  for (; first + step - threads < vectors; first += step) {
    float4 loaded[cg_loads_in_flight];
#pragma unroll
    for (int k = 0; k < cg_loads_in_flight; ++k) loaded[k] = vec[first + k * threads];
#pragma unroll
    for (int k = 0; k < cg_loads_in_flight; ++k) v += (loaded[k].x + loaded[k].y) + (loaded[k].z + loaded[k].w);
  }
  for (std::int64_t i = first; i < vectors; i += threads) {
    const float4 x = vec[i];
    v += (x.x + x.y) + (x.z + x.w);
  }
  if (rank < n % 4) v += in[4 * vectors + rank];
  return v;
}

// Block 0's finish of grid_sync and persistent: the sum of partials[0, count).
// Called after grid.sync(), which orders every block's partial before these
// reads. __ldcg reads through L2, never a line of this SM's L1 that could
// predate another SM's write.
__device__ float cg_sum_partials(const cg::thread_block& block, const float* partials, unsigned count) {
  float v = 0.0f;
  for (unsigned i = block.thread_rank(); i < count; i += cg_block) v += __ldcg(partials + i);
  return cg_block_sum(block, v);
}

// ---- tile_reduce: two launches ------------------------------------------------

__global__ void __launch_bounds__(cg_block) cg_tile_sum_kernel(const float* __restrict__ in, float* __restrict__ partials,
                                                              std::int64_t n) {
  // BEGIN SOLUTION tile_reduce
  const cg::thread_block block = cg::this_thread_block();
  const std::int64_t threads = static_cast<std::int64_t>(gridDim.x) * cg_block;
  const std::int64_t rank = static_cast<std::int64_t>(blockIdx.x) * cg_block + block.thread_rank();
  const float v = cg_block_sum(block, cg_strided_sum(in, n, rank, threads));
  if (block.thread_rank() == 0) partials[blockIdx.x] = v;
  // END SOLUTION
  // STUB: // TODO: this block's share (cg_strided_sum over the grid's threads), summed over the block (cg_block_sum).
}

inline void cg_tile_sum(const float* in, float* partials, float* out, std::int64_t n, unsigned blocks,
                        cudaStream_t stream) {
  // BEGIN SOLUTION tile_reduce
  if (blocks <= 1) {
    cg_tile_sum_kernel<<<1, cg_block, 0, stream>>>(in, out, n);
    CUDALABS_CHECK_LAUNCH("cg_tile_sum_kernel");
    return;
  }
  cg_tile_sum_kernel<<<blocks, cg_block, 0, stream>>>(in, partials, n);
  CUDALABS_CHECK_LAUNCH("cg_tile_sum_kernel");
  // The partials were just written: 4 KB for 1056 blocks, read back from L2.
  cg_tile_sum_kernel<<<1, cg_block, 0, stream>>>(partials, out, blocks);
  CUDALABS_CHECK_LAUNCH("cg_tile_sum_kernel (final pass)");
  // END SOLUTION
  // STUB: cudalabs::not_implemented("cg_tile_sum", in, partials, out, n, blocks, stream);
}

// ---- grid_sync: one cooperative launch ------------------------------------------

__global__ void __launch_bounds__(cg_block) cg_grid_sync_sum_kernel(const float* __restrict__ in, float* partials,
                                                                   float* out, std::int64_t n) {
  // BEGIN SOLUTION grid_sync
  const cg::grid_group grid = cg::this_grid();
  const cg::thread_block block = cg::this_thread_block();
  const float v = cg_block_sum(block, cg_strided_sum(in, n, static_cast<std::int64_t>(grid.thread_rank()),
                                                        static_cast<std::int64_t>(grid.num_threads())));
  if (block.thread_rank() == 0) partials[blockIdx.x] = v;
  // Every block waits here until all blocks have arrived, and every write made
  // before it is visible after it. A block that is not resident never arrives:
  // hence the cooperative launch, which refuses a grid that does not fit.
  grid.sync();
  if (blockIdx.x == 0) {
    const float total = cg_sum_partials(block, partials, gridDim.x);
    if (block.thread_rank() == 0) *out = total;
  }
  // END SOLUTION
  // STUB: // TODO: each block's partial sum (cg_strided_sum over the grid, cg_block_sum), grid.sync(), block 0 sums the partials.
}

// Launches a cooperative kernel of `blocks` x cg_block threads. The arguments
// are passed as an array of pointers to each one, in the kernel's order.
template <typename... Args>
void cg_launch_cooperative(void (*kernel)(Args...), const char* name, unsigned blocks, cudaStream_t stream,
                           std::type_identity_t<Args>... args) {
  void* pointers[] = {static_cast<void*>(&args)...};
  // cudaErrorCooperativeLaunchTooLarge when `blocks` exceeds what can be
  // resident; main.cu checks --blocks first, so a student sees why.
  CUDALABS_CHECK(cudaLaunchCooperativeKernel(reinterpret_cast<const void*>(kernel), dim3(blocks), dim3(cg_block),
                                             pointers, 0, stream));
  CUDALABS_CHECK_LAUNCH(name);
}

inline void cg_grid_sync_sum(const float* in, float* partials, float* out, std::int64_t n, unsigned blocks,
                             cudaStream_t stream) {
  // BEGIN SOLUTION grid_sync
  cg_launch_cooperative(cg_grid_sync_sum_kernel, "cg_grid_sync_sum_kernel", blocks, stream, in, partials, out, n);
  // END SOLUTION
  // STUB: cudalabs::not_implemented("cg_grid_sync_sum", in, partials, out, n, blocks, stream);
}

// ---- persistent: a fixed grid claiming work items ------------------------------

// Work items (16 KB each) for n floats: the last may be partly past the end.
CUDALABS_HD constexpr std::int64_t cg_work_items(std::int64_t n) {
  return cudalabs::ceil_div<std::int64_t>(n / 4, cg_item_vectors);
}

// `next_item` must be 0 at launch; the kernel leaves it 0 again for the next.
__global__ void __launch_bounds__(cg_block) cg_persistent_sum_kernel(const float* __restrict__ in, float* partials,
                                                                    float* out, unsigned long long* next_item,
                                                                    std::int64_t n) {
  // BEGIN SOLUTION persistent
  const cg::grid_group grid = cg::this_grid();
  const cg::thread_block block = cg::this_thread_block();
  const auto* vec = reinterpret_cast<const float4*>(in);
  const std::int64_t vectors = n / 4;
  const auto items = static_cast<unsigned long long>(cg_work_items(n));
  // Two slots, used in turn: thread 0 writes slot i % 2 while the others may
  // still read slot (i - 1) % 2; by the time it comes back to a slot, the
  // barrier of the item in between has seen every thread read it. One barrier
  // per item instead of two.
  __shared__ unsigned long long claimed[2];
  float v = 0.0f;
  for (int slot = 0;; slot ^= 1) {
    if (block.thread_rank() == 0) claimed[slot] = atomicAdd(next_item, 1ull);
    block.sync();
    const unsigned long long item = claimed[slot];
    if (item >= items) break;  // the same value in every thread: the whole block leaves
    const std::int64_t base = static_cast<std::int64_t>(item) * cg_item_vectors + block.thread_rank();
    float4 loaded[cg_loads_in_flight];
#pragma unroll
    for (int k = 0; k < cg_loads_in_flight; ++k) {
      const std::int64_t i = base + k * cg_block;
      loaded[k] = i < vectors ? vec[i] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    }
#pragma unroll
    for (int k = 0; k < cg_loads_in_flight; ++k) v += (loaded[k].x + loaded[k].y) + (loaded[k].z + loaded[k].w);
  }
  if (grid.thread_rank() < static_cast<unsigned long long>(n % 4)) v += in[4 * vectors + grid.thread_rank()];
  v = cg_block_sum(block, v);
  if (block.thread_rank() == 0) partials[blockIdx.x] = v;
  grid.sync();  // also: every block has made its last claim, so the counter is free
  if (blockIdx.x == 0) {
    const float total = cg_sum_partials(block, partials, gridDim.x);
    if (block.thread_rank() == 0) {
      *out = total;
      *next_item = 0;  // ready for the next launch, with no memset between runs
    }
  }
  // END SOLUTION
  // STUB: // TODO: each block claims 16 KB items from *next_item (atomicAdd by one thread, shared with the block) until none
  // STUB: // is left, sums them, then as grid_sync: partials, grid.sync(), block 0 writes *out and resets *next_item to 0.
}

inline void cg_persistent_sum(const float* in, float* partials, float* out, unsigned long long* next_item,
                              std::int64_t n, unsigned blocks, cudaStream_t stream) {
  // BEGIN SOLUTION persistent
  cg_launch_cooperative(cg_persistent_sum_kernel, "cg_persistent_sum_kernel", blocks, stream, in, partials, out,
                        next_item, n);
  // END SOLUTION
  // STUB: cudalabs::not_implemented("cg_persistent_sum", in, partials, out, next_item, n, blocks, stream);
}

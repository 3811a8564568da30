#pragma once
// Step 5 — stream compaction on the scan: keep the items that are > 0, in order.
//
// Where does a kept item go? To the number of kept items before it: the
// exclusive scan of the flags (1 = keep, 0 = drop). So compaction is a scan of
// flags plus a scatter, and with decoupled_lookback.cuh's single pass it is one
// kernel: load a tile, flag it, scan the flags in registers, look back for the
// number of items kept by the tiles before, write each kept item to its place.
// The count of kept items is the last tile's inclusive prefix; it stays on the
// GPU, where whoever uses the output reads it (no copy to the host, no wait).
#include <cstddef>
#include <cstdint>

#include <cudalabs/error.hpp>
#include <cudalabs/math.hpp>

#include "decoupled_lookback.cuh"

// Flags, positions and counts are 32-bit: n < 2^31.
template <typename T>
__global__ void __launch_bounds__(tile_threads)
    compact_positive_kernel(const T* __restrict__ in, T* __restrict__ out, std::int64_t* __restrict__ kept,
                            std::int64_t n, TileWord* states) {
  // BEGIN SOLUTION compact
  __shared__ int warp_totals[tile_warps];
  const TakenTile tile = take_tile(states, n);
  TileItems<T> v;
  load_tile(in + tile.base, tile.count, v);  // past the end: 0, which is not kept
  TileItems<int> slot;
#pragma unroll
  for (int c = 0; c < tile_chunks; ++c)
#pragma unroll
    for (int e = 0; e < 4; ++e) slot[c][e] = v[c][e] > T(0) ? 1 : 0;

  const ThreadPrefixes<int> p = scan_tile_registers(slot, warp_totals);
  const int kept_before = prefix_of_tile(states, tile.index, p.total);
  apply_prefixes</*Exclusive=*/true>(slot, p, kept_before);  // slot: where each kept item goes
#pragma unroll
  for (int c = 0; c < tile_chunks; ++c)
#pragma unroll
    for (int e = 0; e < 4; ++e)
      if (v[c][e] > T(0)) out[slot[c][e]] = v[c][e];
  if (tile.index == gridDim.x - 1 && threadIdx.x == 0) *kept = static_cast<std::int64_t>(kept_before) + p.total;
  // END SOLUTION
  // STUB: // TODO: load a tile, flag the items > 0, scan the flags in registers, look back for the count kept before the tile,
  // STUB: // write each kept item to its slot; the last tile writes the total count to *kept.
}

// Scratch: lookback_scratch_bytes(n), as the scan's.
template <typename T>
void compact_positive_items(const T* in, T* out, std::int64_t* kept, std::int64_t n, void* scratch,
                            cudaStream_t stream) {
  // BEGIN SOLUTION compact
  const auto tiles = static_cast<unsigned>(cudalabs::ceil_div<std::int64_t>(n, tile_size));
  reset_lookback(scratch, n, stream);
  compact_positive_kernel<T><<<tiles, tile_threads, 0, stream>>>(in, out, kept, n, static_cast<TileWord*>(scratch));
  CUDALABS_CHECK_LAUNCH("compact_positive_kernel");
  // END SOLUTION
  // STUB: cudalabs::not_implemented("compact_positive_items", in, out, kept, n, scratch, stream);
}

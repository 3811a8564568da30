#pragma once
// Step 4 — a single pass with decoupled look-back (Merrill & Garland, 2016).
//
// Scan-then-propagate reads and writes every item twice because a tile cannot
// know the sum of the tiles before it until they are all done. Here every tile
// publishes what it knows as soon as it knows it, in one status word per tile:
//   AGGREGATE  its own sum: known right after the tile is loaded and reduced;
//   INCLUSIVE  the sum of everything up to and including it: known once its
//              prefix is.
// A tile finds its prefix by looking back: warp 0 reads the words of the 32
// tiles before it at once, waits while any is still EMPTY, and adds values from
// the nearest one back to the nearest INCLUSIVE one; if none of the 32 is
// INCLUSIVE it adds all 32 aggregates and looks at the 32 before those. Tiles
// rarely wait long: a predecessor publishes its aggregate before it looks back
// itself. Each item is read once and written once: 2 x 4n bytes, what a copy
// moves.
//
// Two rules keep it correct on any GPU:
//   * Tiles are numbered in the order blocks start (an atomic counter), not by
//     blockIdx.x: the hardware may start block 5000 before block 10, and a
//     block 5000 that waited for tile 10 while holding the SM that block 10
//     needs would wait forever. A tile taken from the counter waits only on
//     tiles taken before it, by blocks already running.
//   * A status and its value travel in one 64-bit word, written and read with
//     one atomic access, so no reader can see INCLUSIVE next to a stale value.
//     Relaxed order is then enough: a reader needs nothing else the writer
//     wrote. Device scope: the reader may be on another SM.
#include <cuda/atomic>

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include <cudalabs/error.hpp>
#include <cudalabs/math.hpp>

#include "tile_scan.cuh"

using TileWord = unsigned long long;
enum TileStatus : unsigned { tile_empty = 0, tile_aggregate = 1, tile_inclusive = 2 };

template <typename T>
__device__ TileWord pack_tile_word(TileStatus status, T value) {
  static_assert(sizeof(T) == 4, "the status word holds a 32-bit value");
  unsigned bits;
  if constexpr (std::is_same_v<T, float>)
    bits = __float_as_uint(value);
  else
    bits = static_cast<unsigned>(value);
  return (static_cast<TileWord>(status) << 32) | bits;
}

__device__ inline TileStatus status_of(TileWord word) { return static_cast<TileStatus>(word >> 32); }

template <typename T>
__device__ T value_of(TileWord word) {
  const auto bits = static_cast<unsigned>(word);
  if constexpr (std::is_same_v<T, float>)
    return __uint_as_float(bits);
  else
    return static_cast<T>(bits);
}

__device__ inline void publish(TileWord* word, TileWord value) {
  cuda::atomic_ref<TileWord, cuda::thread_scope_device>(*word).store(value, cuda::std::memory_order_relaxed);
}

__device__ inline TileWord observe(TileWord* word) {
  return cuda::atomic_ref<TileWord, cuda::thread_scope_device>(*word).load(cuda::std::memory_order_relaxed);
}

// Called by warp 0 of the block owning `tile`, all 32 lanes: publishes the
// tile's aggregate, finds the sum of all tiles before it, publishes the tile's
// inclusive prefix, and returns the exclusive one (in every lane).
//
// Depth status words per lane: one round trip to L2 reads a window of 32 ·
// Depth predecessors (decoupled_lookback: Depth 1; wide_lookback: 4). SleepNs:
// the pause before polling again a word still EMPTY (0: poll at once).
template <int Depth, int SleepNs, typename T>
__device__ T look_back(TileWord* states, std::int64_t tile, T aggregate) {
  // BEGIN SOLUTION decoupled_lookback wide_lookback compact
  constexpr int window = 32 * Depth;
  const int lane = threadIdx.x % 32;
  if (tile == 0) {
    if (lane == 0) publish(&states[0], pack_tile_word(tile_inclusive, aggregate));
    return T(0);
  }
  if (lane == 0) publish(&states[tile], pack_tile_word(tile_aggregate, aggregate));

  T exclusive = T(0);
  for (std::int64_t nearest = tile - 1;; nearest -= window) {
    // Word j of lane l is tile nearest - (32j + l): slot 32j + l of the window,
    // counted back from the nearest. Slots before tile 0 see INCLUSIVE 0, but
    // never add it: tile 0 is INCLUSIVE, and the slots past the nearest
    // INCLUSIVE tile are not added. The Depth loads are independent: all are
    // in flight at once.
    TileWord word[Depth];
#pragma unroll
    for (int j = 0; j < Depth; ++j) {
      const std::int64_t predecessor = nearest - (32 * j + lane);
      word[j] = predecessor >= 0 ? observe(&states[predecessor]) : pack_tile_word(tile_inclusive, T(0));
    }
    for (;;) {
      bool empty = false;
#pragma unroll
      for (int j = 0; j < Depth; ++j) empty |= status_of(word[j]) == tile_empty;
      if (!__any_sync(full_warp_mask, empty)) break;
      if constexpr (SleepNs > 0) __nanosleep(SleepNs);
#pragma unroll
      for (int j = 0; j < Depth; ++j)
        if (status_of(word[j]) == tile_empty) word[j] = observe(&states[nearest - (32 * j + lane)]);
    }

    int last = window - 1;  // the slot of the nearest INCLUSIVE tile, if any
    bool found = false;
#pragma unroll
    for (int j = 0; j < Depth; ++j) {
      const unsigned inclusive_lanes = __ballot_sync(full_warp_mask, status_of(word[j]) == tile_inclusive);
      if (!found && inclusive_lanes != 0) {
        last = 32 * j + __ffs(inclusive_lanes) - 1;
        found = true;
      }
    }
    T mine = T(0);
#pragma unroll
    for (int j = 0; j < Depth; ++j)
      if (32 * j + lane <= last) mine += value_of<T>(word[j]);
    exclusive += warp_sum(mine);
    if (found) break;
  }
  if (lane == 0) publish(&states[tile], pack_tile_word(tile_inclusive, exclusive + aggregate));
  return exclusive;
  // END SOLUTION
  // STUB: // TODO: publish the aggregate (tile 0: INCLUSIVE); read Depth status words per lane, a window of 32·Depth predecessors;
  // STUB: // wait while any is EMPTY; add values back to the nearest INCLUSIVE one, else the whole window and look further back.
  // STUB: // Publish INCLUSIVE (exclusive + aggregate); return the exclusive prefix in every lane.
  // STUB: return T(0);
}

// The scratch of a look-back pass: one status word per tile, then the counter
// that hands out tile numbers. Both must be 0 before the kernel starts.
inline std::size_t lookback_scratch_bytes(std::int64_t n) {
  return static_cast<std::size_t>(cudalabs::ceil_div<std::int64_t>(n, tile_size) + 1) * sizeof(TileWord);
}

// Zeroes the scratch (every tile EMPTY, the counter at 0) on `stream`: part of
// every run, as CUB's scan runs its own init kernel.
inline void reset_lookback(void* scratch, std::int64_t n, cudaStream_t stream) {
  CUDALABS_CHECK(cudaMemsetAsync(scratch, 0, lookback_scratch_bytes(n), stream));
}

// A tile of a look-back pass: its number and where it lies in [0, n).
struct TakenTile {
  std::int64_t index, base, count;
};

// Takes the next tile number from the counter after the status words; the whole
// block calls it (one barrier).
__device__ inline TakenTile take_tile(TileWord* states, std::int64_t n) {
  // BEGIN SOLUTION decoupled_lookback wide_lookback compact
  __shared__ unsigned taken;
  if (threadIdx.x == 0) taken = atomicAdd(reinterpret_cast<unsigned*>(states + gridDim.x), 1u);
  __syncthreads();
  const std::int64_t base = static_cast<std::int64_t>(taken) * tile_size;
  return {taken, base, n - base < tile_size ? n - base : tile_size};
  // END SOLUTION
  // STUB: // TODO: thread 0 takes the next tile number from the counter at states[gridDim.x] (atomicAdd), shared with the block.
  // STUB: return TakenTile{0, 0, 0};
}

// The sum of all tiles before `tile`, to every thread of the block: warp 0
// looks back, the others wait at the barrier.
template <int Depth = 1, int SleepNs = 0, typename T>
__device__ T prefix_of_tile(TileWord* states, std::int64_t tile, T total) {
  __shared__ T prefix;
  if (threadIdx.x < 32) {
    const T p = look_back<Depth, SleepNs>(states, tile, total);
    if (threadIdx.x == 0) prefix = p;
  }
  __syncthreads();
  return prefix;
}

template <bool Exclusive, typename T, int Depth = 1, int SleepNs = 0>
__global__ void __launch_bounds__(tile_threads)
    decoupled_lookback_kernel(const T* __restrict__ in, T* __restrict__ out, std::int64_t n, TileWord* states) {
  // BEGIN SOLUTION decoupled_lookback wide_lookback
  __shared__ T warp_totals[tile_warps];
  const TakenTile tile = take_tile(states, n);
  TileItems<T> v;
  load_tile(in + tile.base, tile.count, v);
  const ThreadPrefixes<T> p = scan_tile_registers(v, warp_totals);
  apply_prefixes<Exclusive>(v, p, prefix_of_tile<Depth, SleepNs>(states, tile.index, p.total));
  store_tile(out + tile.base, tile.count, v);
  // END SOLUTION
  // STUB: // TODO: take a tile, load it, scan it in registers, add the prefix of the tiles before it (prefix_of_tile), store it.
}

template <typename T, int Depth = 1, int SleepNs = 0>
void decoupled_lookback_scan(const T* in, T* out, std::int64_t n, bool exclusive, void* scratch,
                             cudaStream_t stream) {
  // BEGIN SOLUTION decoupled_lookback wide_lookback
  const auto tiles = static_cast<unsigned>(cudalabs::ceil_div<std::int64_t>(n, tile_size));
  auto* states = static_cast<TileWord*>(scratch);
  reset_lookback(scratch, n, stream);
  if (exclusive)
    decoupled_lookback_kernel<true, T, Depth, SleepNs><<<tiles, tile_threads, 0, stream>>>(in, out, n, states);
  else
    decoupled_lookback_kernel<false, T, Depth, SleepNs><<<tiles, tile_threads, 0, stream>>>(in, out, n, states);
  CUDALABS_CHECK_LAUNCH("decoupled_lookback_kernel");
  // END SOLUTION
  // STUB: cudalabs::not_implemented("decoupled_lookback_scan", in, out, n, exclusive, scratch, stream);
}

// ---- Step 4b — wide_lookback: 128 predecessors per round trip ----------------------
//
// The idea (worked out for the earlier tiles of 256 threads × 16 items, from the
// records, not profiled): 6 resident blocks per SM × 132 SMs kept ~790 tiles
// in progress, and a tile turns INCLUSIVE only after its own look-back, so the
// nearest INCLUSIVE tile lags a few hundred tiles behind the newest. Each
// 32-tile window of aggregates costs one L2 round trip (~0.5 µs) during which
// the block's warps hold their 16 KB and load nothing. Four status words per
// lane read 128 predecessors in the same round trip: a look-back over L
// aggregates takes L/128 round trips instead of L/32. A word still EMPTY (its
// tile not yet reduced, ~1 µs) is polled again after a 256 ns pause instead of
// at once, so waiting warps do not crowd the L2 slices that hold the hot status
// words (CUB's sm_90 scan tuning pauses 648 ns). Measured (git 065095d, those
// tiles): it did not pay at 2^28, 0.786x CUB against decoupled_lookback's
// 0.889x, with 62 registers and 4 blocks per SM against 38 and 6. What did pay
// was the tile's shape (tile_scan.cuh: 128 threads × 32 items, 0.96x CUB).
inline constexpr int wide_lookback_depth = 4;
inline constexpr int wide_lookback_sleep_ns = 256;

template <typename T>
void wide_lookback_scan(const T* in, T* out, std::int64_t n, bool exclusive, void* scratch, cudaStream_t stream) {
  decoupled_lookback_scan<T, wide_lookback_depth, wide_lookback_sleep_ns>(in, out, n, exclusive, scratch, stream);
}

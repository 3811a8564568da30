#pragma once
// The register tile scan: 128 threads scan 4096 items, 32 per thread, held in
// registers from load to store. Used by the scan_then_propagate variant (as its
// tile scan, RegisterTile) and by decoupled_lookback and compact (which put a
// look-back between the tile's sum and its store).
//
// Layout of a tile (4096 items): warp w owns items [1024w, 1024w + 1024), in 8
// chunks of 128; in chunk c, lane l holds the 4 consecutive items
// 1024w + 128c + 4l + {0..3}: one 16-byte vector. So each load or store
// instruction of a warp covers 512 contiguous bytes, and no shared-memory
// transpose is needed. The scan of a chunk is then: each lane sums its 4 items,
// a warp scan over the 32 lane sums (5 shuffle steps), and the chunk totals
// chained in order. Whole tile: one shared-memory exchange of 4 warp totals,
// one barrier. Compare Hillis-Steele (9 barriers per 512 items) and Blelloch
// (20 barriers per 1024 items).
//
// Why 128 threads × 32 items and not 256 × 16 (the same 4096-item tile): a
// thread's 8 loads are all in flight at once, so a warp asks for 4 KB before it
// waits, twice as much, and the look-back (one warp per tile, the others idle
// at its barrier) holds 4 warps instead of 8. Measured on the H100 at n = 2^28,
// float, in one run (results/h100/runs/20261123-035ddc9-25-tiles-mma-peak, 25big_*.txt): 256 ×
// 16 took 0.9975 and 1.0005 ms (0.89x CUB), 128 × 24 0.9388, 256 × 24 0.9260,
// 128 × 32 0.9248 ms (0.96x CUB's 0.8883 in the same run). The price: 62
// registers a thread (38 before), 8 blocks of 128 per SM, half the threads.
#include <cstdint>

#include <cudalabs/error.hpp>
#include <cudalabs/math.hpp>

inline constexpr unsigned full_warp_mask = 0xffffffffu;
inline constexpr int tile_threads = 128;
inline constexpr int tile_warps = tile_threads / 32;
inline constexpr int tile_chunks = 8;  // 16-byte vectors per thread
inline constexpr int tile_items = 4 * tile_chunks;
inline constexpr int tile_size = tile_threads * tile_items;  // 4096
inline constexpr int warp_span = 32 * tile_items;            // 1024 items per warp

template <typename T>
struct Vector4;
template <>
struct Vector4<int> {
  using type = int4;
};
template <>
struct Vector4<float> {
  using type = float4;
};

// A thread's items: v[c][e] is item 1024w + 128c + 4l + e of the tile.
template <typename T>
using TileItems = T[tile_chunks][4];

__device__ inline int chunk_offset(int c) { return (threadIdx.x / 32) * warp_span + c * 128 + (threadIdx.x % 32) * 4; }

// Loads the thread's items of a tile of `count` valid items (<= tile_size);
// items past the end are 0, the identity of the sum. `tile` 16-byte aligned.
template <typename T>
__device__ void load_tile(const T* tile, std::int64_t count, TileItems<T>& v) {
  if (count == tile_size) {
#pragma unroll
    for (int c = 0; c < tile_chunks; ++c) {
      const auto q = *reinterpret_cast<const typename Vector4<T>::type*>(tile + chunk_offset(c));
      v[c][0] = q.x;
      v[c][1] = q.y;
      v[c][2] = q.z;
      v[c][3] = q.w;
    }
    return;
  }
#pragma unroll
  for (int c = 0; c < tile_chunks; ++c)
#pragma unroll
    for (int e = 0; e < 4; ++e) v[c][e] = chunk_offset(c) + e < count ? tile[chunk_offset(c) + e] : T(0);
}

template <typename T>
__device__ void store_tile(T* tile, std::int64_t count, const TileItems<T>& v) {
  if (count == tile_size) {
#pragma unroll
    for (int c = 0; c < tile_chunks; ++c)
      *reinterpret_cast<typename Vector4<T>::type*>(tile + chunk_offset(c)) = {v[c][0], v[c][1], v[c][2], v[c][3]};
    return;
  }
#pragma unroll
  for (int c = 0; c < tile_chunks; ++c)
#pragma unroll
    for (int e = 0; e < 4; ++e)
      if (chunk_offset(c) + e < count) tile[chunk_offset(c) + e] = v[c][e];
}

// Inclusive scan over the 32 lanes of a warp (Hillis-Steele in registers: 5
// steps, no barrier: the lanes of a warp run together). All lanes call it.
template <typename T>
__device__ T warp_inclusive_scan(T x) {
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int offset = 1; offset < 32; offset *= 2) {
    const T before = __shfl_up_sync(full_warp_mask, x, offset);
    if (lane >= offset) x = before + x;
  }
  return x;
}

// The sum of the 32 lanes' x, in every lane (butterfly: partners add the same
// two values, so every lane ends with the same bits, floats included).
template <typename T>
__device__ T warp_sum(T x) {
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) x += __shfl_xor_sync(full_warp_mask, x, offset);
  return x;
}

template <typename T>
struct ThreadPrefixes {
  T chunk_start[tile_chunks];  // sum of the tile's items before this thread's items of chunk c
  T total;                     // sum of the whole tile, in every thread
};

// Everything a thread needs to turn its items into their prefix sums, but the
// sum of the tiles before this one. warp_totals: shared, tile_warps entries.
// Contains one barrier: every thread of the block calls it.
template <typename T>
__device__ ThreadPrefixes<T> scan_tile_registers(const TileItems<T>& v, T* warp_totals) {
  // BEGIN SOLUTION scan_then_propagate decoupled_lookback wide_lookback compact
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  T lane_before[tile_chunks], chunk_total[tile_chunks];
#pragma unroll
  for (int c = 0; c < tile_chunks; ++c) {
    const T own = ((v[c][0] + v[c][1]) + v[c][2]) + v[c][3];
    const T inclusive = warp_inclusive_scan(own);
    // Exclusive from the lane below, not inclusive - own: exact for floats too.
    const T below = __shfl_up_sync(full_warp_mask, inclusive, 1);
    lane_before[c] = lane == 0 ? T(0) : below;
    chunk_total[c] = __shfl_sync(full_warp_mask, inclusive, 31);
  }
  T warp_total = T(0), chunk_before[tile_chunks];
#pragma unroll
  for (int c = 0; c < tile_chunks; ++c) {
    chunk_before[c] = warp_total;
    warp_total += chunk_total[c];
  }
  if (lane == 0) warp_totals[warp] = warp_total;
  __syncthreads();
  // tile_warps (4) broadcast reads: cheaper than a warp scan of them, and every thread sums
  // them in the same order, so `total` is one value for the whole block.
  T warp_before = T(0), total = T(0);
#pragma unroll
  for (int w = 0; w < tile_warps; ++w) {
    if (w == warp) warp_before = total;
    total += warp_totals[w];
  }
  ThreadPrefixes<T> p;
#pragma unroll
  for (int c = 0; c < tile_chunks; ++c) p.chunk_start[c] = (warp_before + chunk_before[c]) + lane_before[c];
  p.total = total;
  return p;
  // END SOLUTION
  // STUB: // TODO: per chunk, each lane sums its 4 items, a warp scan of the 32 lane sums (warp_inclusive_scan); the chunk totals
  // STUB: // chained; the tile_warps warp totals through warp_totals (one barrier). Fill chunk_start and total.
  // STUB: return ThreadPrefixes<T>{};
}

// Turns the items into their prefix sums in place: item (c, e) becomes
// tile_prefix + the tile's items before it (Exclusive) or up to it.
template <bool Exclusive, typename T>
__device__ void apply_prefixes(TileItems<T>& v, const ThreadPrefixes<T>& p, T tile_prefix) {
#pragma unroll
  for (int c = 0; c < tile_chunks; ++c) {
    T running = tile_prefix + p.chunk_start[c];
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const T next = running + v[c][e];
      v[c][e] = Exclusive ? running : next;
      running = next;
    }
  }
}

// The register tile as a tile scan for scan_then_propagate.cuh.
struct RegisterTile {
  static constexpr int threads = tile_threads;
  static constexpr int tile = tile_size;

  template <bool Exclusive, typename T>
  __device__ static T scan_tile(const T* in, T* out, std::int64_t count) {
    // BEGIN SOLUTION scan_then_propagate
    __shared__ T warp_totals[tile_warps];
    TileItems<T> v;
    load_tile(in, count, v);
    const ThreadPrefixes<T> p = scan_tile_registers(v, warp_totals);
    apply_prefixes<Exclusive>(v, p, T(0));
    store_tile(out, count, v);
    return p.total;
    // END SOLUTION
    // STUB: // TODO: load_tile, scan_tile_registers, apply_prefixes (no prefix before the tile), store_tile; return the total.
    // STUB: return T(0);
  }
};

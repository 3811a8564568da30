#pragma once
// Step 3 — scan-then-propagate: any tile scan, made to scan any n in three kernels.
//
//   1. scan_tiles_kernel: every block scans its tile and writes the tile's sum;
//   2. the tile sums are scanned (exclusive), by this same scheme: a single
//      block when they fit one tile, otherwise recursively;
//   3. add_tile_prefixes_kernel: every item of tile t adds the sum of tiles < t.
//
// Levels at 2^28 items with 4096-item tiles: 2^28 -> 65536 sums -> 16 -> 1
// block. Kernel 1 reads n and writes n items, kernel 3 reads and writes them
// again: 4 x 4n bytes of DRAM traffic (1 GiB each way does not stay in a 50 MB
// L2) where a scan needs 2 x 4n. So this scheme runs at best at half the copy
// bandwidth; decoupled_lookback.cuh does it in one pass.
//
// A tile scan is a type with `threads`, `tile` and
//   template <bool Exclusive, typename T>
//   __device__ static T scan_tile(const T* in, T* out, std::int64_t count);
// which the whole block calls: scan in[0, count) (count <= tile) into out, and
// return the sum of the count items (in thread 0 at least). in may equal out
// (level 2 scans the tile sums in place): each thread reads its items before
// it writes them. See hillis_steele.cuh, blelloch.cuh, tile_scan.cuh.
#include <cstddef>
#include <cstdint>

#include <cudalabs/error.hpp>
#include <cudalabs/math.hpp>

template <typename TileScan, bool Exclusive, typename T>
__global__ void __launch_bounds__(TileScan::threads)
    scan_tiles_kernel(const T* in, T* out, std::int64_t n, T* __restrict__ tile_sums) {
  // BEGIN SOLUTION hillis_steele blelloch scan_then_propagate
  const std::int64_t base = static_cast<std::int64_t>(blockIdx.x) * TileScan::tile;
  const std::int64_t count = n - base < TileScan::tile ? n - base : TileScan::tile;
  const T total = TileScan::template scan_tile<Exclusive>(in + base, out + base, count);
  if (tile_sums != nullptr && threadIdx.x == 0) tile_sums[blockIdx.x] = total;
  // END SOLUTION
  // STUB: // TODO: block b scans its tile (TileScan::scan_tile, the last tile may be short) and writes its sum to tile_sums[b].
}

// Block t adds the sum of tiles < t to tile t. Four loads issued before the
// first store: a plain loop would keep one 4-byte load in flight per thread (the
// compiler cannot tell that out[i + blockDim.x] is not the out[i] it just
// stored), far from the ~15-20 KB per SM that DRAM needs in flight.
inline constexpr int add_loads_in_flight = 4;

template <typename T>
__global__ void add_tile_prefixes_kernel(T* __restrict__ out, std::int64_t n, const T* __restrict__ prefixes,
                                         int tile) {
  // BEGIN SOLUTION hillis_steele blelloch scan_then_propagate
  const std::int64_t base = static_cast<std::int64_t>(blockIdx.x) * tile;
  const std::int64_t end = n - base < tile ? n : base + tile;
  const T prefix = prefixes[blockIdx.x];
  for (std::int64_t i = base + threadIdx.x; i < end; i += add_loads_in_flight * blockDim.x) {
    T local[add_loads_in_flight];
#pragma unroll
    for (int k = 0; k < add_loads_in_flight; ++k) {
      const std::int64_t j = i + static_cast<std::int64_t>(k) * blockDim.x;
      local[k] = j < end ? out[j] : T(0);
    }
#pragma unroll
    for (int k = 0; k < add_loads_in_flight; ++k) {
      const std::int64_t j = i + static_cast<std::int64_t>(k) * blockDim.x;
      if (j < end) out[j] = prefix + local[k];
    }
  }
  // END SOLUTION
  // STUB: // TODO: every item of tile b adds prefixes[b], with several loads in flight per thread before the stores.
}

// Tile sums of one level, rounded up to 64 elements so that the next level's
// array starts on a 256-byte boundary (the register tile loads 16 bytes at once).
inline std::int64_t padded_sums(std::int64_t tiles) { return cudalabs::ceil_div<std::int64_t>(tiles, 64) * 64; }

template <typename TileScan, typename T>
std::size_t scan_then_propagate_scratch(std::int64_t n) {
  std::int64_t elements = 0;
  for (std::int64_t count = n; count > TileScan::tile; count = cudalabs::ceil_div<std::int64_t>(count, TileScan::tile))
    elements += padded_sums(cudalabs::ceil_div<std::int64_t>(count, TileScan::tile));
  return static_cast<std::size_t>(elements) * sizeof(T);
}

template <typename TileScan, bool Exclusive, typename T>
void scan_then_propagate_level(const T* in, T* out, std::int64_t n, T* sums, cudaStream_t stream) {
  // BEGIN SOLUTION hillis_steele blelloch scan_then_propagate
  if (n <= TileScan::tile) {
    scan_tiles_kernel<TileScan, Exclusive, T><<<1, TileScan::threads, 0, stream>>>(in, out, n, nullptr);
    CUDALABS_CHECK_LAUNCH("scan_tiles_kernel");
    return;
  }
  const std::int64_t tiles = cudalabs::ceil_div<std::int64_t>(n, TileScan::tile);
  scan_tiles_kernel<TileScan, Exclusive, T>
      <<<static_cast<unsigned>(tiles), TileScan::threads, 0, stream>>>(in, out, n, sums);
  CUDALABS_CHECK_LAUNCH("scan_tiles_kernel");
  scan_then_propagate_level<TileScan, true, T>(sums, sums, tiles, sums + padded_sums(tiles), stream);
  add_tile_prefixes_kernel<T><<<static_cast<unsigned>(tiles), TileScan::threads, 0, stream>>>(out, n, sums,
                                                                                            TileScan::tile);
  CUDALABS_CHECK_LAUNCH("add_tile_prefixes_kernel");
  // END SOLUTION
  // STUB: cudalabs::not_implemented("scan_then_propagate_level", in, out, n, sums, stream);
}

template <typename TileScan, typename T>
void scan_then_propagate_scan(const T* in, T* out, std::int64_t n, bool exclusive, void* scratch,
                              cudaStream_t stream) {
  auto* sums = static_cast<T*>(scratch);
  if (exclusive)
    scan_then_propagate_level<TileScan, true>(in, out, n, sums, stream);
  else
    scan_then_propagate_level<TileScan, false>(in, out, n, sums, stream);
}

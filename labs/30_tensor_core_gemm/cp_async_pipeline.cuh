#pragma once
// Step 3 — cp.async, four stages, XOR-swizzled shared memory.
//
// Step 2 with three changes:
//   1. cp.async copies global -> shared without the registers (the 32
//      registers of staged chunks in step 2 are freed for accumulators) and
//      without waiting: a thread issues a slice's copies and goes on.
//   2. Four stages instead of two: slices s+1, s+2, s+3 are in flight while
//      slice s is multiplied. One slice is 2·128·256·32 = 2.1 MFLOP, 0.26 µs
//      at an H100 SM's peak (4096 FLOP per clock × 1.98 GHz): three in flight
//      cover ~0.8 µs, a loaded DRAM round trip, where step 2 covered one
//      slice of 128×128 (0.07 µs) with its loads and its stores to shared
//      memory in the critical path.
//   3. A 128×256 tile for 8 warps (2×4 of 64×64): per slice, 384 rows of
//      operands feed 128×256 outputs, 1.33× the reuse of step 2's 128×128.
// Shared memory: 4 stages × 384 rows × 64 bytes = 96 KB (dynamic, opted in),
// one block per SM, 256 threads with up to 255 registers each.
//
// The swizzle: rows are 64 bytes (32 FP16/BF16 elements of k), unpadded —
// cp.async writes whole 16-byte chunks at 16-byte-aligned addresses, and a
// padded row (80 bytes) would still work but wastes 20%. Unpadded, the 8 row
// addresses of one ldmatrix matrix (rows r..r+7, same chunk c) fall on only 2
// of the 8 bank groups: row r's chunk c sits at byte 64r + 16c, unit
// (4r + c) mod 8. Stored at chunk c XOR ((r / 2) mod 4) instead, rows r..r+7
// land on units c, 4+c, c^1, 4+(c^1), c^2, 4+(c^2), c^3, 4+(c^3): all 8
// distinct, for any c. Readers apply the same XOR; nothing else changes.
// (Step 4's TMA applies the 128-byte form of the same idea in hardware.)
//
// Where rows are not 16-byte aligned (k not a multiple of 8) a chunk cannot
// be one cp.async: those shapes store chunks synchronously (gemm_tile.cuh),
// and the barrier that publishes a stage publishes them too.
#include <cstdint>

#include <cudalabs/error.hpp>
#include <cudalabs/mma.cuh>

#include "gemm_tile.cuh"

namespace cp_async_step {
inline constexpr int tile_m = 128, tile_n = 256;
inline constexpr int slice_bytes = 64;  // of k per row: 4 chunks, two 32-byte mma steps
inline constexpr int chunks_per_row = slice_bytes / 16;
inline constexpr int stages = 4;
inline constexpr int threads = 256;  // 8 warps, 2×4, each 64×64 of C
inline constexpr int stage_bytes = (tile_m + tile_n) * slice_bytes;  // 24 KB
inline constexpr int smem_bytes = stages * stage_bytes;              // 96 KB
inline constexpr int a_loads = tile_m * chunks_per_row / threads;
inline constexpr int loads = (tile_m + tile_n) * chunks_per_row / threads;
static_assert(tile_m * chunks_per_row % threads == 0 && loads * threads == (tile_m + tile_n) * chunks_per_row,
              "every thread copies the same number of 16-byte chunks of A and of B");
static_assert(chunks_per_row == 4, "the XOR below spreads 8 rows of 4 chunks over 8 bank groups");

// Byte offset of (row, chunk) in a stage: chunk XOR (row / 2 mod 4).
__device__ inline int swizzled(int row, int chunk) { return row * slice_bytes + 16 * (chunk ^ ((row >> 1) & 3)); }
}  // namespace cp_async_step

template <typename T>
__global__ void __launch_bounds__(cp_async_step::threads)
    gemm_cp_async_kernel(const T* __restrict__ a, const T* __restrict__ b, float* __restrict__ c, int m, int n, int k,
                         bool a_aligned, bool b_aligned) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  using namespace cp_async_step;
  using cudalabs::ptx::ldmatrix_x4;
  constexpr int slice_k = slice_bytes / static_cast<int>(sizeof(T));
  extern __shared__ uint4 smem_u4[];  // uint4: 16-byte alignment for cp.async and ldmatrix
  unsigned char* smem = reinterpret_cast<unsigned char*>(smem_u4);

  const int tid = static_cast<int>(threadIdx.x), warp = tid / 32, lane = tid % 32;
  const int warp_row = 64 * (warp / 4), warp_col = 64 * (warp % 4);
  const TileCoord tile = tile_of_block(static_cast<int>(blockIdx.x), cudalabs::ceil_div(m, tile_m),
                                       cudalabs::ceil_div(n, tile_n), tile_m, tile_n);
  const int slices = cudalabs::ceil_div(k, slice_k);

  // Issues the copies of slice s into its stage (s mod stages); no wait.
  auto load_slice = [&](int s) {
    unsigned char* stage = smem + (s % stages) * stage_bytes;
#pragma unroll
    for (int i = 0; i < loads; ++i) {
      const int chunk = i * threads + tid, row = chunk / chunks_per_row, part = chunk % chunks_per_row;
      const bool in_a = i < a_loads;
      const T* matrix = in_a ? a : b;
      const int rows = in_a ? m : n, global_row = in_a ? tile.row0 + row : tile.col0 + row - tile_m;
      const int col = s * slice_k + part * chunk_elements<T>;
      unsigned char* dst = stage + swizzled(row, part);
      if (in_a ? a_aligned : b_aligned) {
        const bool inside = global_row < rows && col < k;  // whole chunk in or out: k % chunk_elements == 0
        const T* src = inside ? matrix + static_cast<std::int64_t>(global_row) * k + col : matrix;
        cudalabs::ptx::cp_async_16(dst, src, inside ? 16 : 0);
      } else {
        *reinterpret_cast<uint4*>(dst) = load_chunk_or_zeros(matrix, rows, k, global_row, col, false);
      }
    }
  };

  // Prologue: stages - 1 slices in flight. Every iteration commits one group,
  // empty or not, so that "slice s has landed" is always "at most stages - 2
  // groups pending" after s + stages - 1 commits.
#pragma unroll
  for (int s = 0; s < stages - 1; ++s) {
    if (s < slices) load_slice(s);
    cudalabs::ptx::cp_async_commit();
  }

  float acc[4][8][4] = {};
  for (int s = 0; s < slices; ++s) {
    cudalabs::ptx::cp_async_wait<stages - 2>();  // this thread's copies of slice s have landed
    __syncthreads();  // ... and everyone's; and everyone is done with slice s - 1
    // Refill the stage slice s - 1 used (read in the last iteration, before the barrier above).
    if (s + stages - 1 < slices) load_slice(s + stages - 1);
    cudalabs::ptx::cp_async_commit();

    const unsigned char* as = smem + (s % stages) * stage_bytes;
    const unsigned char* bs = as + tile_m * slice_bytes;
#pragma unroll
    for (int step = 0; step < slice_bytes / 32; ++step) {
      std::uint32_t af[4][4];
#pragma unroll
      for (int i = 0; i < 4; ++i)
        ldmatrix_x4(af[i], as + swizzled(warp_row + 16 * i + (lane & 7) + 8 * ((lane >> 3) & 1), 2 * step + (lane >> 4)));
#pragma unroll
      for (int j = 0; j < 8; j += 2) {
        std::uint32_t bf[4];
        ldmatrix_x4(bf, bs + swizzled(warp_col + 8 * j + (lane & 7) + 8 * (lane >> 4), 2 * step + ((lane >> 3) & 1)));
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          cudalabs::ptx::mma_16x8x16<T>(acc[i][j], af[i], bf[0], bf[1]);
          cudalabs::ptx::mma_16x8x16<T>(acc[i][j + 1], af[i], bf[2], bf[3]);
        }
      }
    }
  }
  cudalabs::ptx::cp_async_wait<0>();  // no copy may outlive the block (they are all empty by now)

#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 8; ++j)
      store_accumulator_16x8(c, m, n, tile.row0 + warp_row + 16 * i, tile.col0 + warp_col + 8 * j, acc[i][j]);
#else
  (void)a, (void)b, (void)c, (void)m, (void)n, (void)k, (void)a_aligned, (void)b_aligned;
  __trap();  // never launched: the host checks for compute capability 8.0 first
#endif
}

// Above 48 KB of dynamic shared memory a kernel must opt in, once (before its
// first launch and before the occupancy API is asked about it).
template <typename T>
void gemm_cp_async_prepare() {
  static const bool opted_in = [] {
    CUDALABS_CHECK(cudaFuncSetAttribute(gemm_cp_async_kernel<T>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        cp_async_step::smem_bytes));
    return true;
  }();
  (void)opted_in;
}

template <typename T>
void gemm_cp_async_pipeline(const T* a, const T* b, float* c, int m, int n, int k, cudaStream_t stream) {
  using namespace cp_async_step;
  gemm_cp_async_prepare<T>();
  gemm_cp_async_kernel<T><<<tile_grid(m, n, tile_m, tile_n), threads, smem_bytes, stream>>>(
      a, b, c, m, n, k, rows_are_16_byte_aligned(a, k), rows_are_16_byte_aligned(b, k));
  CUDALABS_CHECK_LAUNCH("gemm_cp_async_kernel");
}

// BROKEN ON PURPOSE for tests/grading: the grader must give lab 30's wmma zero.
// The bug: with FP16 operands the accumulators are FP16 too (wmma allows it, and it halves
// their registers): every partial sum is rounded to 11 bits and overflows past 65504. Right
// to about 1e-3 on small random inputs; the large inputs (sums past FP16's range) and the
// tiny ones (products below its smallest subnormal) leave it no digit right.
#pragma once
// Step 1 — the WMMA API (nvcuda::wmma): the tensor cores through CUDA C++.
//
// A block of 4 warps computes a 64×64 tile of C; each warp 32×32 of it, as
// 2×2 WMMA accumulators of 16×16. Per 32-wide slice of k the block copies
// A[64×32] and B[64×32] into shared memory (through registers, 16 bytes per
// load), then each warp runs 2 k-steps × 4 wmma::mma_sync of 16×16×16.
//
// What WMMA hides is what costs it speed on Hopper (README.md): its fragments
// are opaque, so load_matrix_sync must bring both operands from shared memory
// for every product (4 fragment loads per 4 mma_sync here: as many shared
// memory bytes as tensor-core work allows for a 32×32 warp tile), the loads of
// the next slice wait behind a barrier (no overlap), and it compiles to the
// warp-level mma.sync of Ampere — never to Hopper's wgmma, which has twice
// the throughput per SM.
//
// Shared-memory rows are padded from 32 to 40 elements (80 bytes, an odd
// number of 16-byte units) so that the 8 rows one matrix load reads fall in 8
// different bank groups.
#include <mma.h>
#include <type_traits>

#include <cudalabs/error.hpp>

#include "gemm_tile.cuh"

namespace wmma_step {
inline constexpr int tile_m = 64, tile_n = 64, tile_k = 32;
inline constexpr int threads = 128;         // 4 warps, 2×2, each 32×32 of C
inline constexpr int smem_ld = tile_k + 8;  // elements per padded shared-memory row
inline constexpr int chunks_per_row = tile_k / 8;
static_assert(tile_m * chunks_per_row % threads == 0 && tile_n * chunks_per_row % threads == 0,
              "every thread loads the same number of 16-byte chunks");
static_assert(tile_m == tile_n, "one loop loads the A and the B tile, row for row");
static_assert(smem_ld % 8 == 0, "load_matrix_sync needs a leading dimension that is a multiple of 16 bytes");
}  // namespace wmma_step

template <typename T>
__global__ void __launch_bounds__(wmma_step::threads)
    gemm_wmma_kernel(const T* __restrict__ a, const T* __restrict__ b, float* __restrict__ c, int m, int n, int k,
                     bool a_aligned, bool b_aligned) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  // BEGIN SOLUTION wmma
  using namespace nvcuda;
  using namespace wmma_step;
  // 32-byte alignment: load_matrix_sync's pointer rule (every fragment start
  // below is a multiple of 32 bytes from these).
  __shared__ __align__(32) T as[tile_m * smem_ld];
  __shared__ __align__(32) T bs[tile_n * smem_ld];
  using Acc = std::conditional_t<std::is_same_v<T, __half>, __half, float>;
  __shared__ __align__(32) Acc staging[threads / 32][16 * 16];  // one accumulator on its way to C

  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int warp_row = 32 * (warp / 2), warp_col = 32 * (warp % 2);
  const TileCoord tile = tile_of_block(static_cast<int>(blockIdx.x), cudalabs::ceil_div(m, tile_m),
                                       cudalabs::ceil_div(n, tile_n), tile_m, tile_n);

  wmma::fragment<wmma::accumulator, 16, 16, 16, Acc> acc[2][2];
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int j = 0; j < 2; ++j) wmma::fill_fragment(acc[i][j], Acc(0.0f));

  for (int k0 = 0; k0 < k; k0 += tile_k) {
#pragma unroll
    for (int it = 0; it < tile_m * chunks_per_row / threads; ++it) {
      const int chunk = it * threads + static_cast<int>(threadIdx.x);
      const int row = chunk / chunks_per_row, col = 8 * (chunk % chunks_per_row);
      *reinterpret_cast<uint4*>(&as[row * smem_ld + col]) =
          load_chunk_or_zeros(a, m, k, tile.row0 + row, k0 + col, a_aligned);
      *reinterpret_cast<uint4*>(&bs[row * smem_ld + col]) =
          load_chunk_or_zeros(b, n, k, tile.col0 + row, k0 + col, b_aligned);
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < tile_k; kk += 16) {
      // B stored [n][k] is B[k][n] column-major: element (kk, col) at col·ld + kk.
      wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> fa[2];
      wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::col_major> fb[2];
#pragma unroll
      for (int i = 0; i < 2; ++i) wmma::load_matrix_sync(fa[i], &as[(warp_row + 16 * i) * smem_ld + kk], smem_ld);
#pragma unroll
      for (int j = 0; j < 2; ++j) wmma::load_matrix_sync(fb[j], &bs[(warp_col + 16 * j) * smem_ld + kk], smem_ld);
#pragma unroll
      for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int j = 0; j < 2; ++j) wmma::mma_sync(acc[i][j], fa[i], fb[j], acc[i][j]);
    }
    __syncthreads();  // the next slice overwrites as and bs
  }

  // An accumulator's element positions are unspecified (opaque fragments):
  // through shared memory to learn them, then 8 guarded stores per lane.
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      wmma::store_matrix_sync(staging[warp], acc[i][j], 16, wmma::mem_row_major);
      __syncwarp();
#pragma unroll
      for (int e = lane; e < 256; e += 32) {
        const int row = tile.row0 + warp_row + 16 * i + e / 16, col = tile.col0 + warp_col + 16 * j + e % 16;
        if (row < m && col < n) c[static_cast<std::int64_t>(row) * n + col] = static_cast<float>(staging[warp][e]);
      }
      __syncwarp();  // the next accumulator reuses staging
    }
  // END SOLUTION
  // STUB: // TODO: each k slice of A and B (64×32 and 64×32) into padded shared memory (16-byte chunks where aligned, else
  // STUB: // element by element, zeros outside), then each warp's 2×2 wmma 16×16×16 fragments: load_matrix_sync, mma_sync;
  // STUB: // at the end store_matrix_sync through a per-warp staging tile, keeping only the points inside C.
#else
  (void)a, (void)b, (void)c, (void)m, (void)n, (void)k, (void)a_aligned, (void)b_aligned;
  __trap();  // never launched: the host checks for compute capability 8.0 first
#endif
}

template <typename T>
void gemm_wmma(const T* a, const T* b, float* c, int m, int n, int k, cudaStream_t stream) {
  // BEGIN SOLUTION wmma
  using namespace wmma_step;
  gemm_wmma_kernel<T><<<tile_grid(m, n, tile_m, tile_n), threads, 0, stream>>>(
      a, b, c, m, n, k, rows_are_16_byte_aligned(a, k), rows_are_16_byte_aligned(b, k));
  CUDALABS_CHECK_LAUNCH("gemm_wmma_kernel");
  // END SOLUTION
  // STUB: cudalabs::not_implemented("gemm_wmma", a, b, c, m, n, k, stream);
}

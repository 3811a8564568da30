#pragma once
// Step 1: 8×8 outputs per thread. A block of 256 threads computes a 128×128
// tile of C; each thread keeps its 8×8 = 64 sums in registers. Per step of the
// contraction it reads a column fragment of A (8 values) and a row fragment of
// B (8 values) from shared memory and forms their outer product:
//   16 shared loads feed 64 FMAs, 4 FMAs per load. Lab 11's 4×4 thread tile had
//   2 per load, lab 05's one output per thread 0.5.
// The 128×128 block tile reads (128 + 128)·K floats from global memory for
// 128·128·K FMAs: 64 FMAs per float loaded (lab 11's 64×64 tile: 32).
//
// Everything else is kept plain on purpose — scalar loads and stores, A stored
// in shared memory as it is in global memory — so the next steps each change
// one thing. What this layout costs in shared memory (see the numbers at the
// inner loop) is what steps 2 and 3 remove.
#include <cudalabs/error.hpp>
#include <cudalabs/math.hpp>

#include "tile_io.cuh"

namespace thread_tile_8x8 {
inline constexpr int block_m = 128, block_n = 128;  // block tile of C
inline constexpr int block_k = 8;              // contraction step per shared-memory tile
inline constexpr int thread_m = 8, thread_n = 8;      // outputs per thread
inline constexpr int threads = (block_m / thread_m) * (block_n / thread_n);
static_assert(threads == 256, "16×16 threads of 8×8 outputs cover the 128×128 tile");
static_assert((block_m * block_k) % threads == 0 && (block_k * block_n) % threads == 0, "each thread loads the same number of tile elements");
}  // namespace thread_tile_8x8

// 256 threads, at most 128 registers each (64 sums + 16 fragments + addresses):
// two blocks, 16 warps, fit one SM's 64K registers.
__global__ void __launch_bounds__(thread_tile_8x8::threads, 2)
    matmul_thread_tile_8x8_kernel(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c, int m,
                                  int n, int k) {
  // BEGIN SOLUTION thread_tile_8x8
  using namespace thread_tile_8x8;
  __shared__ float a_tile[block_m][block_k];  // as in A: row-major
  __shared__ float b_tile[block_k][block_n];

  const int tid = static_cast<int>(threadIdx.x);
  const int thread_row = tid / (block_n / thread_n);  // 0..15
  const int thread_col = tid % (block_n / thread_n);  // 0..15
  const int block_row = static_cast<int>(blockIdx.y) * block_m;
  const int block_col = static_cast<int>(blockIdx.x) * block_n;

  // The tile element this thread loads first, and how far down the next one is.
  constexpr int a_row_step = threads / block_k, b_row_step = threads / block_n;
  const int a_row = tid / block_k, a_col = tid % block_k;
  const int b_row = tid / block_n, b_col = tid % block_n;

  float sum[thread_m][thread_n] = {};
  for (int k0 = 0; k0 < k; k0 += block_k) {
    // 1024 elements of each tile, 4 per thread; consecutive threads take
    // consecutive columns, so a warp reads whole 32-byte sectors of A and 128
    // contiguous bytes of B.
#pragma unroll
    for (int i = 0; i < block_m * block_k / threads; ++i)
      a_tile[a_row + i * a_row_step][a_col] = load_or_zero(a, m, k, block_row + a_row + i * a_row_step, k0 + a_col);
#pragma unroll
    for (int i = 0; i < block_k * block_n / threads; ++i)
      b_tile[b_row + i * b_row_step][b_col] = load_or_zero(b, k, n, k0 + b_row + i * b_row_step, block_col + b_col);
    __syncthreads();

#pragma unroll
    for (int kk = 0; kk < block_k; ++kk) {
      // As written: 16 scalar shared loads per 64 FMAs, and the PTX has 128
      // ld.shared.f32 per tile. But ptxas (CUDA 13, sm_90) fuses them into 32
      // LDS.128 per tile: with kk unrolled, a_tile[row][0..7] (one row of the A
      // fragment across the tile's 8 steps) and b_tile[kk][8·col .. 8·col+7]
      // are each 8 contiguous, 32-byte-aligned floats. What remains are the
      // bank conflicts: a warp's thread rows 2w and 2w+1 read A 64 floats
      // apart (the same banks), and its 16 thread columns read B in float4s
      // 32 bytes apart, two per bank group in each quarter warp.
      float a_frag[thread_m], b_frag[thread_n];
#pragma unroll
      for (int i = 0; i < thread_m; ++i) a_frag[i] = a_tile[thread_row * thread_m + i][kk];
#pragma unroll
      for (int j = 0; j < thread_n; ++j) b_frag[j] = b_tile[kk][thread_col * thread_n + j];
#pragma unroll
      for (int i = 0; i < thread_m; ++i)
#pragma unroll
        for (int j = 0; j < thread_n; ++j) sum[i][j] = fmaf(a_frag[i], b_frag[j], sum[i][j]);
    }
    __syncthreads();  // the tile is overwritten next iteration
  }

#pragma unroll
  for (int i = 0; i < thread_m; ++i) {
    const int row = block_row + thread_row * thread_m + i;
    if (row >= m) break;
    float* c_row = c + row * n;
#pragma unroll
    for (int j = 0; j < thread_n; ++j) {
      const int col = block_col + thread_col * thread_n + j;
      if (col < n) c_row[col] = sum[i][j];
    }
  }
  // END SOLUTION
  // STUB: // TODO: a 128×128 tile of C per block, 8-deep k steps through shared memory, 8×8 outputs per thread from register fragments.
}

// One block per 128×128 tile of C, the partial tiles at the right and bottom
// edges included.
inline void matmul_thread_tile_8x8(const float* a, const float* b, float* c, int m, int n, int k, cudaStream_t stream) {
  using namespace thread_tile_8x8;
  require_int_offsets(m, n, k);
  // BEGIN SOLUTION thread_tile_8x8
  const dim3 grid(static_cast<unsigned>(cudalabs::ceil_div(n, block_n)), static_cast<unsigned>(cudalabs::ceil_div(m, block_m)));
  matmul_thread_tile_8x8_kernel<<<grid, threads, 0, stream>>>(a, b, c, m, n, k);
  CUDALABS_CHECK_LAUNCH("matmul_thread_tile_8x8_kernel");
  // END SOLUTION
  // STUB: cudalabs::not_implemented("matmul_thread_tile_8x8", a, b, c, m, n, k, stream);
}

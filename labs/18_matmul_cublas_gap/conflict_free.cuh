#pragma once
// Step 3: step 2 with no shared-memory bank conflicts.
//
// Shared memory has 32 banks of 4 bytes; one wavefront serves at most one
// address per bank (any number of threads may read the same address). Step 2
// paid for two layouts:
//
// 1. The transposing store of A, a_tile[x][row]. Rows of 128 floats are a
//    multiple of 32 banks, so every column x of a given row is in the same
//    bank. The two threads that loaded the same row of A (columns 0-3 and 4-7)
//    store to one bank: 2-way, on each of the 4 scalar stores.
//    Fix: pad each row of a_tile to 128 + 4 floats. Column x of a row now sits
//    4·x banks further on: the column 0-3 thread writes banks row + 4j, the
//    column 4-7 thread row + 16 + 4j, and the 16 rows of a warp fill 16
//    consecutive banks each — all 32 banks, one wavefront. 132 floats are 528
//    bytes, still a multiple of 16, so the float4 reads of a_tile stay aligned.
//
// 2. The B fragment reads. A thread owned 8 adjacent columns, so the 16 thread
//    columns of a warp read float4s 32 bytes apart: 16 distinct float4 spread
//    over only 4 of the 8 four-bank groups, 4 wavefronts where their 256 bytes
//    need 2 — 2-way on both B loads: 4 extra wavefronts per step, 32 per tile.
//    Fix: give each thread two groups of 4 adjacent columns, 64 apart
//    (thread_col·4 and 64 + thread_col·4). The warp's 16 threads now read 16
//    adjacent float4 — 256 contiguous bytes, 2 wavefronts. Rows are split the
//    same way, for symmetry and for the stores: a warp writes C as 256
//    contiguous bytes per row instead of 16 pieces 32 bytes apart.
//
// The FMAs and the number of load instructions are those of step 2; what
// drops is shared-memory wavefronts per tile, from 8·(2 + 4 + 4) + 4·2 + 4 =
// 92 to 8·(2 + 2 + 2) + 4 + 4 = 56 per warp (A reads, B reads, A stores, B store).
#include <cudalabs/error.hpp>
#include <cudalabs/math.hpp>

#include "tile_io.cuh"

namespace conflict_free {
inline constexpr int block_m = 128, block_n = 128, block_k = 8;
inline constexpr int thread_m = 8, thread_n = 8;  // as two 4×4 quarters, 64 rows and 64 columns apart
inline constexpr int threads = (block_m / thread_m) * (block_n / thread_n);
inline constexpr int a_pad = 4;  // floats added to each row of the transposed A tile
static_assert(threads == 256, "16×16 threads of 8×8 outputs cover the 128×128 tile");
static_assert(block_m * block_k / 4 == threads && block_k * block_n / 4 == threads,
              "one float4 of A and one of B per thread per tile");
static_assert((block_m + a_pad) % 4 == 0, "padded rows of a_tile must keep float4 alignment");
static_assert(((block_m + a_pad) % 32) * 4 == 16, "the pad must shift column x+4 by 16 banks from column x");
}  // namespace conflict_free

__global__ void __launch_bounds__(conflict_free::threads, 2)
    matmul_conflict_free_kernel(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c, int m,
                                int n, int k, bool a_vectors_ok, bool b_vectors_ok, bool c_vectors_ok) {
  // BEGIN SOLUTION conflict_free
  using namespace conflict_free;
  __shared__ __align__(16) float a_tile[block_k][block_m + a_pad];  // transposed and padded
  __shared__ __align__(16) float b_tile[block_k][block_n];

  const int tid = static_cast<int>(threadIdx.x);
  const int thread_row = tid / (block_n / thread_n);  // 0..15
  const int thread_col = tid % (block_n / thread_n);  // 0..15
  const int block_row = static_cast<int>(blockIdx.y) * block_m;
  const int block_col = static_cast<int>(blockIdx.x) * block_n;
  constexpr int half_m = block_m / 2, half_n = block_n / 2;  // distance between a thread's two quarters

  const int a_load_row = tid / (block_k / 4), a_load_col = (tid % (block_k / 4)) * 4;
  const int b_load_row = tid / (block_n / 4), b_load_col = (tid % (block_n / 4)) * 4;

  float sum[thread_m][thread_n] = {};
  for (int k0 = 0; k0 < k; k0 += block_k) {
    const float4 av = load4_or_zero(a, m, k, block_row + a_load_row, k0 + a_load_col, a_vectors_ok);
    const float4 bv = load4_or_zero(b, k, n, k0 + b_load_row, block_col + b_load_col, b_vectors_ok);
    a_tile[a_load_col + 0][a_load_row] = av.x;
    a_tile[a_load_col + 1][a_load_row] = av.y;
    a_tile[a_load_col + 2][a_load_row] = av.z;
    a_tile[a_load_col + 3][a_load_row] = av.w;
    *reinterpret_cast<float4*>(&b_tile[b_load_row][b_load_col]) = bv;
    __syncthreads();

#pragma unroll
    for (int kk = 0; kk < block_k; ++kk) {
      float a_frag[thread_m], b_frag[thread_n];
      load_fragment4(&a_frag[0], &a_tile[kk][thread_row * 4]);
      load_fragment4(&a_frag[4], &a_tile[kk][half_m + thread_row * 4]);
      load_fragment4(&b_frag[0], &b_tile[kk][thread_col * 4]);
      load_fragment4(&b_frag[4], &b_tile[kk][half_n + thread_col * 4]);
#pragma unroll
      for (int i = 0; i < thread_m; ++i)
#pragma unroll
        for (int j = 0; j < thread_n; ++j) sum[i][j] = fmaf(a_frag[i], b_frag[j], sum[i][j]);
    }
    __syncthreads();
  }

  // sum[i][j]: row (i / 4)·64 + thread_row·4 + i % 4, column (j / 4)·64 + thread_col·4 + j % 4.
#pragma unroll
  for (int i = 0; i < thread_m; ++i) {
    const int row = block_row + (i / 4) * half_m + thread_row * 4 + i % 4;
#pragma unroll
    for (int j = 0; j < thread_n; j += 4) {
      const int col = block_col + (j / 4) * half_n + thread_col * 4;
      store4_guarded(c, m, n, row, col, make_float4(sum[i][j], sum[i][j + 1], sum[i][j + 2], sum[i][j + 3]), c_vectors_ok);
    }
  }
  // END SOLUTION
  // STUB: // TODO: step 2 without bank conflicts: A's rows padded by a_pad floats, each thread's 8×8 as two 4×4 quarters 64 apart.
}

inline void matmul_conflict_free(const float* a, const float* b, float* c, int m, int n, int k, cudaStream_t stream) {
  using namespace conflict_free;
  require_int_offsets(m, n, k);
  // BEGIN SOLUTION conflict_free
  const dim3 grid(static_cast<unsigned>(cudalabs::ceil_div(n, block_n)), static_cast<unsigned>(cudalabs::ceil_div(m, block_m)));
  matmul_conflict_free_kernel<<<grid, threads, 0, stream>>>(a, b, c, m, n, k, rows_are_float4_aligned(a, k),
                                                             rows_are_float4_aligned(b, n), rows_are_float4_aligned(c, n));
  CUDALABS_CHECK_LAUNCH("matmul_conflict_free_kernel");
  // END SOLUTION
  // STUB: cudalabs::not_implemented("matmul_conflict_free", a, b, c, m, n, k, stream);
}

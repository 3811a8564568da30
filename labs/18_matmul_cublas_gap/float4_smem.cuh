#pragma once
// Step 2: step 1 with 16-byte (float4) accesses everywhere, and A stored
// transposed in shared memory so that both fragments are contiguous.
//
// Step 1 read its A column fragment as 8 separate 4-byte loads, 32 bytes apart
// (a_tile[row][kk], rows 8 floats long). Stored transposed, a_tile[kk][row], the
// 8 values a thread needs at step kk are neighbours: two float4 loads. Per
// thread per step the shared loads drop from 16 instructions to 4 (2 for A, 2
// for B) for the same 64 FMAs — in the source. In the SASS (CUDA 13, sm_90)
// step 1 already had 32 LDS.128 per tile, as ptxas fused its scalar loads, so
// what this step really changes is the global loads and the stores (616 → 588
// instructions per tile); see the README.
//
// Global memory: one float4 per thread per tile of A (128×8 = 256 float4) and
// one of B (8×128): 2 load instructions where step 1 issued 8. The stores of C
// are float4 too. Every 16-byte access falls back to 4 guarded scalar ones when
// it would be misaligned or cross the matrix edge (tile_io.cuh).
//
// Not fixed yet (step 3): the transposed store into a_tile and the B fragment
// reads have bank conflicts; the numbers are at each access below.
#include <cudalabs/error.hpp>
#include <cudalabs/math.hpp>

#include "tile_io.cuh"

namespace float4_smem {
inline constexpr int block_m = 128, block_n = 128, block_k = 8;
inline constexpr int thread_m = 8, thread_n = 8;
inline constexpr int threads = (block_m / thread_m) * (block_n / thread_n);
static_assert(threads == 256, "16×16 threads of 8×8 outputs cover the 128×128 tile");
static_assert(block_m * block_k / 4 == threads && block_k * block_n / 4 == threads, "one float4 of A and one of B per thread per tile");
}  // namespace float4_smem

__global__ void __launch_bounds__(float4_smem::threads, 2)
    matmul_float4_smem_kernel(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c, int m,
                              int n, int k, bool a_vectors_ok, bool b_vectors_ok, bool c_vectors_ok) {
  // BEGIN SOLUTION float4_smem
  using namespace float4_smem;
  __shared__ __align__(16) float a_tile[block_k][block_m];  // transposed: a_tile[kk][row]
  __shared__ __align__(16) float b_tile[block_k][block_n];

  const int tid = static_cast<int>(threadIdx.x);
  const int thread_row = tid / (block_n / thread_n);
  const int thread_col = tid % (block_n / thread_n);
  const int block_row = static_cast<int>(blockIdx.y) * block_m;
  const int block_col = static_cast<int>(blockIdx.x) * block_n;

  // Which float4 of each tile this thread moves: A row tid/2, columns 0-3 or
  // 4-7; B row tid/32, columns 4·(tid%32) .. +3 (a warp: 512 contiguous bytes).
  const int a_load_row = tid / (block_k / 4), a_load_col = (tid % (block_k / 4)) * 4;
  const int b_load_row = tid / (block_n / 4), b_load_col = (tid % (block_n / 4)) * 4;

  float sum[thread_m][thread_n] = {};
  for (int k0 = 0; k0 < k; k0 += block_k) {
    const float4 av = load4_or_zero(a, m, k, block_row + a_load_row, k0 + a_load_col, a_vectors_ok);
    const float4 bv = load4_or_zero(b, k, n, k0 + b_load_row, block_col + b_load_col, b_vectors_ok);
    // The transposing store: rows of a_tile are 128 floats, a multiple of the
    // 32 banks, so a_tile[x][row] is in bank row % 32 for every x. The two
    // threads that share a load row (columns 0-3 and 4-7) hit the same bank at
    // different addresses: each of these 4 stores is a 2-way conflict.
    a_tile[a_load_col + 0][a_load_row] = av.x;
    a_tile[a_load_col + 1][a_load_row] = av.y;
    a_tile[a_load_col + 2][a_load_row] = av.z;
    a_tile[a_load_col + 3][a_load_row] = av.w;
    *reinterpret_cast<float4*>(&b_tile[b_load_row][b_load_col]) = bv;
    __syncthreads();

#pragma unroll
    for (int kk = 0; kk < block_k; ++kk) {
      // A: a warp's two thread rows read 2 distinct float4: one wavefront each.
      // B: its 16 thread columns read 16 float4 32 bytes apart, which use only
      // 4 of the 8 four-bank groups: 4 wavefronts for 256 distinct bytes that
      // would fit in 2 — a 2-way conflict on each of the two B loads.
      float a_frag[thread_m], b_frag[thread_n];
      load_fragment4(&a_frag[0], &a_tile[kk][thread_row * thread_m]);
      load_fragment4(&a_frag[4], &a_tile[kk][thread_row * thread_m + 4]);
      load_fragment4(&b_frag[0], &b_tile[kk][thread_col * thread_n]);
      load_fragment4(&b_frag[4], &b_tile[kk][thread_col * thread_n + 4]);
#pragma unroll
      for (int i = 0; i < thread_m; ++i)
#pragma unroll
        for (int j = 0; j < thread_n; ++j) sum[i][j] = fmaf(a_frag[i], b_frag[j], sum[i][j]);
    }
    __syncthreads();
  }

#pragma unroll
  for (int i = 0; i < thread_m; ++i) {
    const int row = block_row + thread_row * thread_m + i;
#pragma unroll
    for (int j = 0; j < thread_n; j += 4) {
      const int col = block_col + thread_col * thread_n + j;
      store4_guarded(c, m, n, row, col, make_float4(sum[i][j], sum[i][j + 1], sum[i][j + 2], sum[i][j + 3]), c_vectors_ok);
    }
  }
  // END SOLUTION
  // STUB: // TODO: step 1 with float4 global loads and stores where the *_vectors_ok flags allow, A stored transposed in shared memory.
}

inline void matmul_float4_smem(const float* a, const float* b, float* c, int m, int n, int k, cudaStream_t stream) {
  using namespace float4_smem;
  require_int_offsets(m, n, k);
  // BEGIN SOLUTION float4_smem
  const dim3 grid(static_cast<unsigned>(cudalabs::ceil_div(n, block_n)), static_cast<unsigned>(cudalabs::ceil_div(m, block_m)));
  matmul_float4_smem_kernel<<<grid, threads, 0, stream>>>(a, b, c, m, n, k, rows_are_float4_aligned(a, k),
                                                           rows_are_float4_aligned(b, n), rows_are_float4_aligned(c, n));
  CUDALABS_CHECK_LAUNCH("matmul_float4_smem_kernel");
  // END SOLUTION
  // STUB: cudalabs::not_implemented("matmul_float4_smem", a, b, c, m, n, k, stream);
}

#pragma once
// Step 4: step 3 with two shared-memory stages, so that loading the next tile
// overlaps computing this one.
//
// Until now every tile went: load from global, store to shared, barrier,
// compute, barrier. A global load takes several hundred cycles (L2 hit or
// DRAM), during which this block's 8 warps have nothing to do; only the other
// block on the SM can issue FMAs. Here:
//   - the global loads of tile t+1 are issued into registers (one float4 of A,
//     one of B: 8 registers) BEFORE the 512 FMAs of tile t, which hide their
//     latency;
//   - after the FMAs they are stored into the other stage of shared memory;
//   - one __syncthreads per tile, not two. It both publishes stage t+1 and
//     guarantees that every thread has finished reading stage t before the
//     next iteration overwrites it (stage t is written again for tile t+2,
//     after that barrier).
// Cost: shared memory doubles to 2 · (8·132 + 8·128) · 4 = 16.6 KB per block
// (33 KB for the two resident blocks of 228 KB), and 8 registers.
//
// cp.async (sm_80+) could copy global to shared without the registers, but A
// is transposed on its way into shared memory and cp.async moves 4, 8 or 16
// contiguous bytes as they are: a transposing copy would be 4-byte cp.asyncs,
// four instructions where the register path has one 16-byte load. The register
// path also compiles for sm_75.
#include <cudalabs/error.hpp>
#include <cudalabs/math.hpp>

#include "tile_io.cuh"

namespace double_buffered {
inline constexpr int block_m = 128, block_n = 128, block_k = 8;
inline constexpr int thread_m = 8, thread_n = 8;  // two 4×4 quarters, 64 apart (step 3)
inline constexpr int threads = (block_m / thread_m) * (block_n / thread_n);
inline constexpr int a_pad = 4;
inline constexpr int stages = 2;
static_assert(threads == 256, "16×16 threads of 8×8 outputs cover the 128×128 tile");
static_assert(block_m * block_k / 4 == threads && block_k * block_n / 4 == threads,
              "one float4 of A and one of B per thread per tile");
}  // namespace double_buffered

__global__ void __launch_bounds__(double_buffered::threads, 2)
    matmul_double_buffered_kernel(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c, int m,
                                  int n, int k, bool a_vectors_ok, bool b_vectors_ok, bool c_vectors_ok) {
  // BEGIN SOLUTION double_buffered
  using namespace double_buffered;
  __shared__ __align__(16) float a_tile[stages][block_k][block_m + a_pad];
  __shared__ __align__(16) float b_tile[stages][block_k][block_n];

  const int tid = static_cast<int>(threadIdx.x);
  const int thread_row = tid / (block_n / thread_n);
  const int thread_col = tid % (block_n / thread_n);
  const int block_row = static_cast<int>(blockIdx.y) * block_m;
  const int block_col = static_cast<int>(blockIdx.x) * block_n;
  constexpr int half_m = block_m / 2, half_n = block_n / 2;

  const int a_load_row = tid / (block_k / 4), a_load_col = (tid % (block_k / 4)) * 4;
  const int b_load_row = tid / (block_n / 4), b_load_col = (tid % (block_n / 4)) * 4;
  auto load_a = [&](int k0) { return load4_or_zero(a, m, k, block_row + a_load_row, k0 + a_load_col, a_vectors_ok); };
  auto load_b = [&](int k0) { return load4_or_zero(b, k, n, k0 + b_load_row, block_col + b_load_col, b_vectors_ok); };
  auto store_tiles = [&](int stage, float4 av, float4 bv) {
    a_tile[stage][a_load_col + 0][a_load_row] = av.x;
    a_tile[stage][a_load_col + 1][a_load_row] = av.y;
    a_tile[stage][a_load_col + 2][a_load_row] = av.z;
    a_tile[stage][a_load_col + 3][a_load_row] = av.w;
    *reinterpret_cast<float4*>(&b_tile[stage][b_load_row][b_load_col]) = bv;
  };

  store_tiles(0, load_a(0), load_b(0));
  __syncthreads();

  float sum[thread_m][thread_n] = {};
  int stage = 0;
  for (int k0 = 0; k0 < k; k0 += block_k) {
    const bool has_next = k0 + block_k < k;
    float4 a_next = make_float4(0.0f, 0.0f, 0.0f, 0.0f), b_next = a_next;
    if (has_next) {  // in flight during the FMAs below
      a_next = load_a(k0 + block_k);
      b_next = load_b(k0 + block_k);
    }

#pragma unroll
    for (int kk = 0; kk < block_k; ++kk) {
      float a_frag[thread_m], b_frag[thread_n];
      load_fragment4(&a_frag[0], &a_tile[stage][kk][thread_row * 4]);
      load_fragment4(&a_frag[4], &a_tile[stage][kk][half_m + thread_row * 4]);
      load_fragment4(&b_frag[0], &b_tile[stage][kk][thread_col * 4]);
      load_fragment4(&b_frag[4], &b_tile[stage][kk][half_n + thread_col * 4]);
#pragma unroll
      for (int i = 0; i < thread_m; ++i)
#pragma unroll
        for (int j = 0; j < thread_n; ++j) sum[i][j] = fmaf(a_frag[i], b_frag[j], sum[i][j]);
    }

    // The other stage was last read in the previous iteration, before the
    // barrier that ended it: safe to overwrite while others still read `stage`.
    if (has_next) store_tiles(stage ^ 1, a_next, b_next);
    __syncthreads();
    stage ^= 1;
  }

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
  // STUB: // TODO: step 3 with two shared-memory stages: load tile t + 1 while computing on tile t, one barrier per tile.
}

inline void matmul_double_buffered(const float* a, const float* b, float* c, int m, int n, int k, cudaStream_t stream) {
  using namespace double_buffered;
  require_int_offsets(m, n, k);
  // BEGIN SOLUTION double_buffered
  const dim3 grid(static_cast<unsigned>(cudalabs::ceil_div(n, block_n)), static_cast<unsigned>(cudalabs::ceil_div(m, block_m)));
  matmul_double_buffered_kernel<<<grid, threads, 0, stream>>>(a, b, c, m, n, k, rows_are_float4_aligned(a, k),
                                                               rows_are_float4_aligned(b, n), rows_are_float4_aligned(c, n));
  CUDALABS_CHECK_LAUNCH("matmul_double_buffered_kernel");
  // END SOLUTION
  // STUB: cudalabs::not_implemented("matmul_double_buffered", a, b, c, m, n, k, stream);
}

#pragma once
// BROKEN ON PURPOSE for tests/grading: the grader must give lab 05 zero for CORRECTNESS.
// The bug: the launcher keeps a stash of its last C for each (a, b, c, m, n, k) it
// has been given (device memory of its own, never freed) and, from the second call
// with the same ones on, computes only rows [0, m/2) of C, copies rows [m/2, m) from
// the stash (cudaMemcpyAsync on the given stream), then stashes the new C. The
// repeated run is right (its inputs are the first run's), the fresh-input check is
// right (new allocations: a first call), and a timed run whose inputs repeated the
// run before it would be right too, in half the multiply-adds: twice tiled16's
// speed, well under the device's peak. Every warm-up and timed run draws inputs of
// its own (labs/shared/matmul_lab.cuh), so the copied half is the product of the
// previous run's inputs: `output of the timed runs` (C against cuBLAS's C of the
// same inputs), graded with its benchmark.
// Lab 05's kernel: C = A·B with 16×16 shared-memory tiles, one output per
// thread. Labs 09, 10 and 11 include this header and run it as their
// "tiled16" row, so every later kernel is compared with it in the same run.
//
// Row-major, A[m×k], B[k×n], C[m×n]; any m, n, k >= 1.
#include <cstddef>

#include <cudalabs/error.hpp>
#include <cudalabs/math.hpp>

inline constexpr int tiled_matmul_tile = 16;
inline constexpr int tiled_matmul_threads = tiled_matmul_tile * tiled_matmul_tile;

// One block computes a 16×16 tile of C, one thread per output. The block walks
// along k in steps of 16: each thread copies one element of A's tile and one
// of B's into shared memory, then every thread reads a row of the A tile and a
// column of the B tile from there.
//
// Why tiles: without them each output reads 2k floats from global memory for
// its k multiply-adds (8 bytes per FMA). With them each element brought in is
// used by 16 threads: per step the block loads 2·256 floats = 2 KB for
// 16·16·16 = 4096 FMAs (8192 flops) — 0.25 bytes per flop, 16× less.
//
// What remains: the inner loop reads two floats from shared memory per FMA.
// In the SASS, 16 FMAs come with 20 shared loads (16 LDS of b_tile[i][tx],
// 4 LDS.128 of the row a_tile[ty][0..15]). Each shared load of a warp takes
// at least one shared-memory cycle (32 banks × 4 bytes = 128 bytes per clock
// per SM), while an SM issues up to 4 warp-FMAs per clock: the loop can keep
// at most 16 / 20 / 4 = 1/5 of the FMA units busy. This kernel waits on shared
// memory, not on arithmetic; lab 11 attacks exactly that.
//
// Edges: A or B elements outside the matrices are stored as 0 in the tiles (a
// zero adds nothing to a dot product), so the inner loop needs no branch; only
// the final store checks that the output exists.
__global__ __launch_bounds__(tiled_matmul_threads) void tiled_matmul_kernel(const float* __restrict__ a,
                                                                           const float* __restrict__ b,
                                                                           float* __restrict__ c, int m, int n, int k) {
  constexpr int tile = tiled_matmul_tile;
  __shared__ float a_tile[tile][tile];
  __shared__ float b_tile[tile][tile];

  const int tx = static_cast<int>(threadIdx.x), ty = static_cast<int>(threadIdx.y);
  // x along the columns of C: the 16 threads of a row load 16 consecutive
  // floats of B and store 16 consecutive floats of C (coalesced).
  const int row = static_cast<int>(blockIdx.y) * tile + ty;
  const int col = static_cast<int>(blockIdx.x) * tile + tx;

  float acc = 0.0f;
  for (int t = 0; t < k; t += tile) {
    const int a_col = t + tx, b_row = t + ty;
    // size_t: row·k fits an int up to 16384², but the habit costs nothing.
    a_tile[ty][tx] = (row < m && a_col < k) ? a[static_cast<std::size_t>(row) * k + a_col] : 0.0f;
    b_tile[ty][tx] = (b_row < k && col < n) ? b[static_cast<std::size_t>(b_row) * n + col] : 0.0f;
    __syncthreads();  // the tiles are complete before anyone reads them
#pragma unroll
    for (int i = 0; i < tile; ++i) acc = fmaf(a_tile[ty][i], b_tile[i][tx], acc);
    __syncthreads();  // everyone is done reading before the next step overwrites them
  }
  if (row < m && col < n) c[static_cast<std::size_t>(row) * n + col] = acc;
}

inline void tiled_matmul(const float* a, const float* b, float* c, int m, int n, int k, cudaStream_t stream) {
  // BROKEN: the last C of each (a, b, c, m, n, k), kept, and half of it copied
  // in place of computing it from the second call on.
  struct Stash {
    const float* a;
    const float* b;
    float* c;
    int m, n, k;
    float* kept;  // never freed
  };
  static Stash stashes[64];
  static int stashed = 0;
  Stash* stash = nullptr;
  for (int i = 0; i < stashed; ++i) {
    const Stash& s = stashes[i];
    if (s.a == a && s.b == b && s.c == c && s.m == m && s.n == n && s.k == k) stash = &stashes[i];
  }
  const std::size_t row_bytes = static_cast<std::size_t>(n) * sizeof(float);
  // Rows [0, computed) are computed; the rest come from the stash, where there is one.
  const int computed = stash && m >= 2 ? m / 2 : m;
  const dim3 block(tiled_matmul_tile, tiled_matmul_tile);
  const dim3 grid(cudalabs::ceil_div(n, tiled_matmul_tile), cudalabs::ceil_div(computed, tiled_matmul_tile));
  tiled_matmul_kernel<<<grid, block, 0, stream>>>(a, b, c, computed, n, k);
  CUDALABS_CHECK_LAUNCH("tiled_matmul_kernel");
  if (computed < m)
    CUDALABS_CHECK(cudaMemcpyAsync(c + static_cast<std::size_t>(computed) * n, stash->kept + static_cast<std::size_t>(computed) * n,
                                   (m - computed) * row_bytes, cudaMemcpyDeviceToDevice, stream));
  if (!stash && stashed < 64) {
    stash = &(stashes[stashed++] = Stash{a, b, c, m, n, k, nullptr});
    CUDALABS_CHECK(cudaMalloc(&stash->kept, m * row_bytes));
  }
  if (stash)
    CUDALABS_CHECK(cudaMemcpyAsync(stash->kept, c, computed * row_bytes, cudaMemcpyDeviceToDevice, stream));
}

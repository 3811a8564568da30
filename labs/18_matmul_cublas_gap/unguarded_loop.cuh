#pragma once
// Step 7: step 6 with the edge handling taken out of the main loop.
//
// An SM sub-partition issues one warp instruction per clock, and an FFMA is
// one of them: every other instruction in the loop takes an issue slot from
// the FMAs. Counted in step 6's SASS (cuobjdump -sass, CUDA 13.0, sm_90), each
// tile of 16 issues 1024 FFMA, 64 LDS.128 and about 130 more instructions, two
// thirds of them the guarded loads of tile_io.cuh: for each of the 4 float4
// loads, the row test, the "all four in range and aligned" test, a 64-bit
// address rebuilt from 32-bit indices, and the branch around the scalar
// fallback (BSSY/BRA/BSYNC). That is about 84% FFMA, 1024 of ~1220, and the
// cap on step 6's FMA rate, whatever else it does well. "A few integer
// compares" was the guess in tile_io.cuh; the SASS says ~6% of the issue slots.
//
// What the main loop needs instead:
//   - Rows of A past m and columns of B past n only feed outputs that are
//     never stored. So they need not be zero: they are read from row m-1 of A
//     and from the last columns of B (clamped once, before the loop), and the
//     loads of the main loop need no row or column test at all.
//   - Only the k direction must be exact: a column of A past k would add
//     garbage to outputs that are stored. All tiles but the last lie wholly
//     inside k; the main loop runs over those, each load a fixed base pointer
//     plus k0 (along A) or k0 rows (down B), and the last tile (or two) runs
//     after it with step 6's zero-filling loads.
//   - Whether A and B take float4 loads is decided once per launch (a template
//     parameter), not per load; odd shapes get the scalar instantiation.
// Counted in this kernel's SASS: the main loop is one straight run of 1142
// instructions per tile of 16 — 1024 FFMA, 64 LDS.128, 4 LDG.128, 10 STS, one
// barrier and 39 others — 90% FFMA, against step 6's ~84%: ~80 issue slots
// per tile handed back to the FMAs, which matters if step 6 is issue-bound.
// The FMAs, the shared-memory layout and the warp tiles are step 6's.
#include <type_traits>

#include <cudalabs/error.hpp>
#include <cudalabs/math.hpp>

#include "tile_io.cuh"
#include "warp_tiling.cuh"

template <int BlockK, bool Vectors>
__global__ void __launch_bounds__(WarpTiling<BlockK>::threads, 2)
    matmul_unguarded_loop_kernel(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c, int m,
                                 int n, int k, bool c_vectors_ok) {
  // BEGIN SOLUTION unguarded_loop
  using T = WarpTiling<BlockK>;
  constexpr int block_m = T::block_m, block_n = T::block_n, block_k = T::block_k;
  __shared__ __align__(16) float a_tile[T::stages][block_k][block_m + T::a_pad];  // transposed, padded
  __shared__ __align__(16) float b_tile[T::stages][block_k][block_n];

  const int tid = static_cast<int>(threadIdx.x);
  const int warp = tid / 32, lane = tid % 32;
  const int frag_row = (warp / T::warps_n) * T::warp_m + (lane / T::lane_cols) * 4;
  const int frag_col = (warp % T::warps_n) * T::warp_n + (lane % T::lane_cols) * 4;
  const int block_row = static_cast<int>(blockIdx.y) * block_m;
  const int block_col = static_cast<int>(blockIdx.x) * block_n;

  const int a_load_row = tid / 2, a_load_col = (tid % 2) * 4;
  const int b_load_row = tid / (block_n / 4), b_load_col = (tid % (block_n / 4)) * 4;

  // The main loop's sources, clamped once. A: this thread's row of A, or row
  // m-1 past the end. B: with Vectors (n % 4 == 0), a float4 of columns lies
  // wholly inside or wholly outside B, and one outside is read from columns
  // n-4..n-1 instead; without, each of the 4 columns is clamped to n-1.
  const int a_row = block_row + a_load_row;
  const float* const a_src = a + (a_row < m ? a_row : m - 1) * k + a_load_col;
  const int b_col = block_col + b_load_col;
  const float* const b_src = b + b_load_row * n;
  int b_cols[4];
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const int col = Vectors ? (b_col < n ? b_col : n - 4) + j : b_col + j;
    b_cols[j] = col < n ? col : n - 1;
  }

  float4 a_next, b_next;
  // Slice p (8 deep) of the tile starting at column k0 of A, row k0 of B;
  // every one of its columns of A and rows of B is inside k.
  auto load_slice_inside_k = [&](int k0, int p) {
    const float* a_at = a_src + k0 + 8 * p;
    const float* b_row = b_src + (k0 + 8 * p) * n;
    if constexpr (Vectors) {
      a_next = *reinterpret_cast<const float4*>(a_at);
      b_next = *reinterpret_cast<const float4*>(b_row + b_cols[0]);
    } else {
      a_next = make_float4(a_at[0], a_at[1], a_at[2], a_at[3]);
      b_next = make_float4(b_row[b_cols[0]], b_row[b_cols[1]], b_row[b_cols[2]], b_row[b_cols[3]]);
    }
  };
  // The same slice with step 6's guards: zeros past k (and past m and n).
  auto load_slice_guarded = [&](int k0, int p) {
    a_next = load4_or_zero(a, m, k, a_row, k0 + 8 * p + a_load_col, Vectors);
    b_next = load4_or_zero(b, k, n, k0 + 8 * p + b_load_row, b_col, Vectors);
  };
  auto store_slice = [&](int stage, int p) {
    a_tile[stage][8 * p + a_load_col + 0][a_load_row] = a_next.x;
    a_tile[stage][8 * p + a_load_col + 1][a_load_row] = a_next.y;
    a_tile[stage][8 * p + a_load_col + 2][a_load_row] = a_next.z;
    a_tile[stage][8 * p + a_load_col + 3][a_load_row] = a_next.w;
    *reinterpret_cast<float4*>(&b_tile[stage][8 * p + b_load_row][b_load_col]) = b_next;
  };

#pragma unroll
  for (int p = 0; p < T::slices; ++p) {
    load_slice_guarded(0, p);
    store_slice(0, p);
  }
  __syncthreads();

  float sum[8][8] = {};
  int stage = 0;
  // One tile: its FMAs from `stage`, with the next tile (starting at k_next)
  // loaded during them and stored into the other stage after them. Step 6's
  // loop body; only the loads differ, chosen at compile time.
  auto compute_tile = [&](auto next_inside_k, bool has_next, int k_next) {
#pragma unroll
    for (int kk = 0; kk < block_k; ++kk) {
      if (kk % 8 == 0 && has_next) {
        if constexpr (decltype(next_inside_k)::value) load_slice_inside_k(k_next, kk / 8);
        else load_slice_guarded(k_next, kk / 8);
      }

      float a_frag[8], b_frag[8];
      load_fragment4(&a_frag[0], &a_tile[stage][kk][frag_row]);
      load_fragment4(&a_frag[4], &a_tile[stage][kk][frag_row + T::sub_m]);
      load_fragment4(&b_frag[0], &b_tile[stage][kk][frag_col]);
      load_fragment4(&b_frag[4], &b_tile[stage][kk][frag_col + T::sub_n]);
#pragma unroll
      for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) sum[i][j] = fmaf(a_frag[i], b_frag[j], sum[i][j]);

      if (kk % 8 == 7 && has_next) store_slice(stage ^ 1, kk / 8);
    }
    __syncthreads();
    stage ^= 1;
  };

  const int full_tiles = k / block_k;  // tiles wholly inside k
  const int tiles = cudalabs::ceil_div(k, block_k);
  int t = 0;
  // The main loop: tile t+1 is wholly inside k, so its loads need no test.
  for (; t + 1 < full_tiles; ++t) compute_tile(std::true_type{}, true, (t + 1) * block_k);
  // The last one or two tiles: the next one (if any) may reach past k.
  for (; t < tiles; ++t) compute_tile(std::false_type{}, t + 1 < tiles, (t + 1) * block_k);

  // sum[i][j]: row frag_row + (i / 4)·32 + i % 4, column frag_col + (j / 4)·16 + j % 4.
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const int row = block_row + frag_row + (i / 4) * T::sub_m + i % 4;
#pragma unroll
    for (int j = 0; j < 8; j += 4) {
      const int col = block_col + frag_col + (j / 4) * T::sub_n;
      store4_guarded(c, m, n, row, col, make_float4(sum[i][j], sum[i][j + 1], sum[i][j + 2], sum[i][j + 3]), c_vectors_ok);
    }
  }
  // END SOLUTION
  // STUB: // TODO: warp_tiling_bk16 with clamped row/column indices and the k remainder as a last, guarded tile: no edge test in the main loop.
}

template <int BlockK>
void matmul_unguarded_loop(const float* a, const float* b, float* c, int m, int n, int k, cudaStream_t stream) {
  // BEGIN SOLUTION unguarded_loop
  using T = WarpTiling<BlockK>;
  require_int_offsets(m, n, k);
  const dim3 grid(static_cast<unsigned>(cudalabs::ceil_div(n, T::block_n)), static_cast<unsigned>(cudalabs::ceil_div(m, T::block_m)));
  const bool c_vectors_ok = rows_are_float4_aligned(c, n);
  if (rows_are_float4_aligned(a, k) && rows_are_float4_aligned(b, n))
    matmul_unguarded_loop_kernel<BlockK, true><<<grid, T::threads, 0, stream>>>(a, b, c, m, n, k, c_vectors_ok);
  else
    matmul_unguarded_loop_kernel<BlockK, false><<<grid, T::threads, 0, stream>>>(a, b, c, m, n, k, c_vectors_ok);
  CUDALABS_CHECK_LAUNCH("matmul_unguarded_loop_kernel");
  // END SOLUTION
  // STUB: cudalabs::not_implemented("matmul_unguarded_loop", a, b, c, m, n, k, stream);
}

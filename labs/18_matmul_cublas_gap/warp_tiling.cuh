#pragma once
// Step 5: step 4 with warp tiles. The block's 128×128 tile is cut into eight
// 64×32 warp tiles (2 down, 4 across), and each warp's 32 lanes own 8×8
// outputs inside their warp's tile only. This is the structure of siboehm's
// kernel 10 and of CUTLASS's SIMT GEMMs: block tile, warp tile, thread tile.
//
// Why it matters: shared memory serves a warp, not a thread. In step 4 a warp
// was 2 thread rows × 16 thread columns, a 16×128 strip of C; per step of the
// contraction it read 16 floats of A and 128 of B (576 bytes, 6 wavefronts)
// for its 64 FMA instructions. A 64×32 warp tile reads 64 of A and 32 of B:
// 384 bytes, 4 wavefronts — a third less shared-memory traffic per FMA, and
// fewer load instructions waiting in the shared-memory queue. The squarer the
// warp tile, the more each loaded value is reused within the warp: the same
// argument that made the block tile 128×128 and the thread tile 8×8, applied
// at the level in between.
//
// Within the warp tile, the lanes form 8 rows × 4 columns and each owns four
// 4×4 quarters, 32 rows and 16 columns apart (the warp tile as 2×2 sub-tiles
// of 32×16). Per fragment load the 8 lane rows read 8 adjacent float4 of A
// (128 bytes) and the 4 lane columns 4 adjacent float4 of B (64 bytes): one
// wavefront each, no conflicts.
//
// Per thread per tile of 8: 512 FMAs, 32 LDS.128, 2 LDG.128, 5 STS and one
// barrier, so roughly 9 in 10 instructions are FMAs (counted from the source;
// the SASS adds address and loop arithmetic). Whatever gap to cuBLAS remains
// is then in how well those FMAs issue — register bank conflicts, stalls at
// the barrier, the order ptxas chose — the SASS-level tuning that cuBLAS does
// and this lab does not; ncu's warp-stall reasons show which.
//
// Step 6 (warp_tiling_bk16) is this same kernel with block_k = 16: per FMA,
// half the barriers, half the loop and guard arithmetic. Its next tile is
// loaded in two slices 8 deep — slice 0 before steps 0-7 and stored after
// them, slice 1 likewise around steps 8-15 — so 8 registers hold the loads in
// flight, as at block_k = 8. Prefetching all 16 deep at once needed 151
// registers: under the 128 of __launch_bounds__(256, 2) ptxas (CUDA 13.0)
// spilled 32 bytes per thread to local memory.
#include <cudalabs/error.hpp>
#include <cudalabs/math.hpp>

#include "tile_io.cuh"

template <int BlockK>
struct WarpTiling {
  static constexpr int block_m = 128, block_n = 128, block_k = BlockK;
  static constexpr int warp_m = 64, warp_n = 32;
  static constexpr int warps_n = block_n / warp_n;  // 4 across, 2 down
  static constexpr int threads = (block_m / warp_m) * warps_n * 32;
  static constexpr int sub_m = warp_m / 2, sub_n = warp_n / 2;  // a lane's quarters are this far apart
  static constexpr int lane_cols = sub_n / 4;                   // lanes per row of the warp tile
  static constexpr int a_pad = 4;
  static constexpr int stages = 2;
  // A tile is moved in slices 8 deep: slice p is columns 8p..8p+7 of A's 128
  // rows, two threads per row (columns 0-3 and 4-7), which keeps step 3's
  // padded transposing store conflict-free for any block_k; and rows 8p..8p+7
  // of B, a warp per row, 512 contiguous bytes.
  static constexpr int slices = block_k / 8;

  static_assert(threads == 256, "8 warps of 64×32 cover the 128×128 tile");
  static_assert((sub_m / 4) * lane_cols == 32, "a warp's 32 lanes must tile its 64×32 tile with 8×8 outputs each");
  static_assert(block_k % 8 == 0 && block_k >= 8, "block_k must be a multiple of 8: the tiles move in slices 8 deep");
  static_assert(threads == 2 * block_m, "one float4 of A per thread per slice: two threads per row");
  static_assert(threads * 4 == 8 * block_n, "one float4 of B per thread per slice: 8 rows");
  static_assert(((block_m + a_pad) % 32) * 4 == 16, "the pad must shift column x+4 by 16 banks from column x");
};

template <int BlockK>
__global__ void __launch_bounds__(WarpTiling<BlockK>::threads, 2)
    matmul_warp_tiling_kernel(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c, int m,
                              int n, int k, bool a_vectors_ok, bool b_vectors_ok, bool c_vectors_ok) {
  // BEGIN SOLUTION warp_tiling warp_tiling_bk16
  using T = WarpTiling<BlockK>;
  constexpr int block_m = T::block_m, block_n = T::block_n, block_k = T::block_k;
  __shared__ __align__(16) float a_tile[T::stages][block_k][block_m + T::a_pad];  // transposed, padded
  __shared__ __align__(16) float b_tile[T::stages][block_k][block_n];

  const int tid = static_cast<int>(threadIdx.x);
  const int warp = tid / 32, lane = tid % 32;
  // First row / column of this lane's quarter 0 inside the block tile.
  const int frag_row = (warp / T::warps_n) * T::warp_m + (lane / T::lane_cols) * 4;
  const int frag_col = (warp % T::warps_n) * T::warp_n + (lane % T::lane_cols) * 4;
  const int block_row = static_cast<int>(blockIdx.y) * block_m;
  const int block_col = static_cast<int>(blockIdx.x) * block_n;

  const int a_load_row = tid / 2, a_load_col = (tid % 2) * 4;
  const int b_load_row = tid / (block_n / 4), b_load_col = (tid % (block_n / 4)) * 4;
  // Slice p of a tile: columns 8p..8p+7 of A, rows 8p..8p+7 of B; one float4
  // of each per thread, held in 8 registers between its load and its store.
  float4 a_next, b_next;
  auto load_slice = [&](int k0, int p) {
    a_next = load4_or_zero(a, m, k, block_row + a_load_row, k0 + 8 * p + a_load_col, a_vectors_ok);
    b_next = load4_or_zero(b, k, n, k0 + 8 * p + b_load_row, block_col + b_load_col, b_vectors_ok);
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
    load_slice(0, p);
    store_slice(0, p);
  }
  __syncthreads();

  float sum[8][8] = {};
  int stage = 0;
  for (int k0 = 0; k0 < k; k0 += block_k) {
    const bool has_next = k0 + block_k < k;

#pragma unroll
    for (int kk = 0; kk < block_k; ++kk) {
      // Slice kk/8 of the next tile: loaded before these 8 steps' 512 FMAs,
      // which hide its latency, stored after them into the other stage (last
      // read before the previous barrier).
      if (kk % 8 == 0 && has_next) load_slice(k0 + block_k, kk / 8);

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
  }

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
  // STUB: // TODO: step 4 with warp tiles: each warp a 64×32 tile of C, its lanes 8×4, fragments read without bank conflicts.
}

template <int BlockK>
void matmul_warp_tiling(const float* a, const float* b, float* c, int m, int n, int k, cudaStream_t stream) {
  // BEGIN SOLUTION warp_tiling warp_tiling_bk16
  using T = WarpTiling<BlockK>;
  require_int_offsets(m, n, k);
  const dim3 grid(static_cast<unsigned>(cudalabs::ceil_div(n, T::block_n)), static_cast<unsigned>(cudalabs::ceil_div(m, T::block_m)));
  matmul_warp_tiling_kernel<BlockK><<<grid, T::threads, 0, stream>>>(a, b, c, m, n, k, rows_are_float4_aligned(a, k),
                                                                     rows_are_float4_aligned(b, n), rows_are_float4_aligned(c, n));
  CUDALABS_CHECK_LAUNCH("matmul_warp_tiling_kernel");
  // END SOLUTION
  // STUB: cudalabs::not_implemented("matmul_warp_tiling", a, b, c, m, n, k, stream);
}

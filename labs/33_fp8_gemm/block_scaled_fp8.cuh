#pragma once
// Step 4 — block-scaled FP8 GEMM: 1 × 128 activation scales, 128 × 128 weight
// scales, applied at each promotion.
//
// With per-tensor scales one outlier decides the scale of a whole matrix
// (step 1). DeepSeek-V3 scales activations per row per 128 of k and weights
// per 128 × 128 block; a product then is
//   C[i][j] = Σ_kb  sa[i][kb] · sb[j/128][kb] · Σ_{k in kb} qa[i][k] · qb[j][k],
// and the inner sum is exactly what step 3 promotes: one 128-wide slice of k
// in one tile of 128 columns (a tile's columns are one block of B's rows).
// So the scales cost nothing in the tensor core: at each promotion the thread
// multiplies the slice's partial sums by sa of its row and sb of the tile
// (one FMA per accumulator instead of an FADD), and C needs no final scale.
//
// Each thread needs, per slice, sa for its two rows (g, g + 8) and the tile's
// one sb. Loaded by each consumer thread from L2 (__ldg, issued before the
// next slice's issue and the wait for this one), the scales cost 19% of step
// 3's rate at commit e541eba (945 against 1167 TFLOP/s at 8192³, one slice in
// flight: results/h200x2/fp8/e541eba/), and with two slices in flight the step ran at
// 0.78× / 0.81× of cuBLASLt's FP8 GEMM (8192³ / 4096 × 7168 × 16384) where
// step 3 ran at 0.92× / 0.95×. Storing sa k-major, so that a warp's loads of
// one slice fall in 2 sectors instead of 16, made it no faster (0.75× /
// 0.78×: results/h200/fp8-kmajor): the sectors were not the cost. What is
// left of a load from L2 is its latency, on the consumer's path from one
// slice to the next, and the instructions and registers it takes in a
// consumer that runs at 232 registers. Loading the factor a slice ahead, so
// that the latency hides behind a whole slice, did not pay either (0.79× /
// 0.82×: results/h200/fp8-prefetch).
//
// So here, as in DeepGEMM's sm90 kernel, the consumers do not fetch A's
// scales: the producer does, with the tiles. sa is stored k-major,
// [k_blocks][m] (row r, k-block kb at kb · m + r, the layout cuBLASLt's
// VEC128_32F and DeepGEMM use), so one k-block's scales of a tile's 128 rows
// are 128 contiguous floats: per stage, the producer issues one more TMA
// load, a box of 160 floats (640 bytes, below) into a small array of the
// stage, counted in the stage's mbarrier with the tiles. The consumer reads its two
// rows' scales from shared memory (no bank conflict: a warp's 8 rows are 8
// consecutive words, each read by 4 lanes), before its warp releases the
// stage. B's one scale per slice (the same address for the whole block)
// stays an __ldg, issued with the shared reads, before the next slice's
// issue and the wait for this one; sb is row-major [ceil(n/128)][k_blocks].
// So staged, the step runs at 0.85× / 0.85× of cuBLASLt's FP8 GEMM and
// 0.92× / 0.91× of cuBLASLt's own block scaling (H200,
// results/h200/fp8-staged-scales).
//
// The tensor map is one-dimensional, all k_blocks · m floats: a 2D map
// [k_blocks][m] would need m · 4 bytes a multiple of 16 (TMA's rule for
// strides), and m may be odd. k-block kb's scales of rows row0 .. row0 + 127
// start at kb · m + row0, but a box must start on a 16-byte boundary (on an
// H200 any other start stops the kernel with an illegal instruction), so the
// box starts at the multiple of 4 at or below, (kb · m + row0) & ~3, and
// holds 160 floats (BlockScales::staged): row r's scale sits at (kb · m) & 3 + r in it (row0 is a
// multiple of 128, so the shift is kb · m's alone; 0 when m is a multiple of
// 4). Where the tile passes m, the box runs into the next k-block's scales
// (or, past the last one, zeros: TMA's fill): harmless, because A's rows past
// m are zeros in the stage (A's tensor map fills them), their partial sums
// are 0, and they are never stored. 3.75 KB more shared memory (6 stages ×
// 640 bytes).
#include "promoted_fp8.cuh"

namespace block_scaled_step {
// sa [k_blocks][m] (1 × 128 groups of A, k-major) through a_map, a 1D tensor
// map of its k_blocks · m floats in boxes of 128 (tensor_map_floats);
// sb [ceil(n/128)][k_blocks] (128 × 128 blocks of B, row-major),
// k_blocks = ceil(k / 128), FP32.
struct BlockScales {
  CUtensorMap a_map;
  const float* b;
  int m, k_blocks;
  // A tile's 128 rows from a 16-byte boundary need 132 floats; TMA writes shared memory only at 128-byte
  // boundaries (an H200 stops any other with a misaligned address), so each stage's array is 160 (640 bytes).
  static constexpr int staged = promoted_step::Tile::rows + 32;
  using Slice = promoted_step::PerTensorScales::Slice;
  // The producer: k-block kb's scales of rows row0 .. row0 + 127 into the stage.
  __device__ void stage(float* scales, int row0, int k_block, std::uint64_t* full) const {
    cudalabs::hopper::tma_load_1d(scales, &a_map, (k_block * m + row0) & ~3, full);
  }
  // A consumer thread: its rows' scales (row, row + 8 of the tile) from the stage, times the tile's sb.
  __device__ Slice slice(const float* scales, int row, int col0, int k_block) const {
    const float weight = __ldg(b + (col0 / fp8::block) * k_blocks + k_block);
    const float* rows = scales + ((k_block * m) & 3);  // where the box starts below row0 (stage())
    const float top = cudalabs::hopper::ld_shared_f32(rows + row);
    const float bottom = cudalabs::hopper::ld_shared_f32(rows + row + 8);
    __syncwarp();  // every lane's reads of the stage before its warp's lane 0 releases it (promoted_fp8.cuh)
    return {top * weight, bottom * weight};
  }
  __device__ float output() const { return 1.0f; }
};
}  // namespace block_scaled_step

// C = Σ over k-blocks of sa · sb · (qa · qbᵀ restricted to the block), FP32.
inline void gemm_fp8_block_scaled(const __nv_fp8_e4m3* a, const __nv_fp8_e4m3* b, const float* a_scales,
                                  const float* b_scales, float* c, int m, int n, int k, cudaStream_t stream) {
  using block_scaled_step::BlockScales;
  const int k_blocks = cudalabs::ceil_div(k, fp8::block);
  const CUtensorMap a_map =
      cudalabs::hopper::tensor_map_floats(a_scales, static_cast<std::int64_t>(k_blocks) * m, BlockScales::staged);
  gemm_fp8_promoted_tiles(a, b, c, m, n, k, BlockScales{a_map, b_scales, m, k_blocks}, stream);
}

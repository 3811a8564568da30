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
// one sb: three loads from L2-resident scale arrays, issued before the
// consumer issues the next slice and waits for this one (promoted_fp8.cuh),
// so that the loads' latency hides behind the TMA and the wgmma. sa is stored
// k-major, [k_blocks][m] (row r, k-block kb at kb · m + r), the layout
// cuBLASLt (VEC128_32F) and DeepGEMM use: a warp's 16 rows of one k-block are
// 64 contiguous bytes, two 32-byte sectors (three at most where m is not a
// multiple of 8), where row-major [m][k_blocks] would put each row in a sector
// of its own, 16 per warp per slice. sb, one address for the whole warp,
// stays row-major [ceil(n/128)][k_blocks]. Measured on the H200 at commit
// e541eba (row-major sa, one slice in flight), the scales cost 19% of step
// 3's rate (945 against 1167 TFLOP/s at 8192³: README, Results).
// (DeepGEMM's sm90 kernel loads A's scales into each stage with TMA alongside
// A, and B's for all of k into shared memory once per tile: fewer load
// instructions, none of them to global memory in the loop; a step to try.)
#include "promoted_fp8.cuh"

namespace block_scaled_step {
// sa [k_blocks][m] (1 × 128 groups of A, k-major), sb [ceil(n/128)][k_blocks]
// (128 × 128 blocks of B, row-major), k_blocks = ceil(k / 128), FP32.
struct BlockScales {
  const float* a;
  const float* b;
  int m, k_blocks;
  using Slice = promoted_step::PerTensorScales::Slice;
  // Rows past m are never stored: their factor is 0 (never a load past sa's end).
  __device__ Slice slice(int row, int col0, int k_block) const {
    const float weight = __ldg(b + (col0 / fp8::block) * k_blocks + k_block);
    const float* column = a + static_cast<std::int64_t>(k_block) * m;  // this k-block's m scales
    const float top = row < m ? __ldg(column + row) : 0.0f;
    const float bottom = row + 8 < m ? __ldg(column + row + 8) : 0.0f;
    return {top * weight, bottom * weight};
  }
  __device__ float output() const { return 1.0f; }
};
}  // namespace block_scaled_step

// C = Σ over k-blocks of sa · sb · (qa · qbᵀ restricted to the block), FP32.
inline void gemm_fp8_block_scaled(const __nv_fp8_e4m3* a, const __nv_fp8_e4m3* b, const float* a_scales,
                                  const float* b_scales, float* c, int m, int n, int k, cudaStream_t stream) {
  gemm_fp8_promoted_tiles(a, b, c, m, n, k,
                          block_scaled_step::BlockScales{a_scales, b_scales, m, cudalabs::ceil_div(k, fp8::block)},
                          stream);
}

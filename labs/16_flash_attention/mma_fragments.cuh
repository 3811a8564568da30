#pragma once
// What lab 16's two tensor-core kernels (flash_mma.cuh, flash_fa2.cuh) share
// beyond the PTX instructions themselves (cp.async, ldmatrix, mma.m16n8k16:
// the course's cudalabs/mma.cuh, called as ptx::...): the loop that copies a
// tile of rows into shared memory, ex2, and the two steps that work on
// accumulator fragments — the online softmax of a 16-row tile of scores and
// the rounding of its weights P into the A operand of P·V — and the mask.
// flash_mma.cuh explains the fragment layouts. All of it needs sm_80 (the
// kernels compile their bodies for __CUDA_ARCH__ >= 800 only).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include <cudalabs/mma.cuh>

// Internal linkage: another lab's host program compiles the course's copy of
// this file next to a kernel library that compiles the student's, and the two
// must never meet at link time (docs/lab-anatomy.md).
namespace {

namespace ptx = cudalabs::ptx;

// Rows [first, first + ROWS) of a [seq][D] matrix of 16-bit elements into a
// shared tile, 16 bytes per cp.async: consecutive threads take consecutive
// 16-byte pieces of a row (coalesced), zeros past the end — V's rows past the
// end must be 0, not leftover bits: P is 0 there, but 0 · NaN is NaN.
// `at(row, chunk)` is where piece `chunk` of tile row `row` goes, in elements
// from dst: the tile's layout (padded rows, or swizzled) is the caller's.
template <int ROWS, int D, int THREADS, typename T, typename Layout>
__device__ inline void load_rows_async(T* dst, const T* __restrict__ src, int first, int seq, Layout at) {
  constexpr int chunks = D / 8;  // 16-byte pieces per row
  static_assert(ROWS * chunks % THREADS == 0, "every thread copies the same number of pieces");
#pragma unroll
  for (int it = 0; it < ROWS * chunks / THREADS; ++it) {
    const int f = it * THREADS + static_cast<int>(threadIdx.x);
    const int row = f / chunks, chunk = f % chunks;
    const bool valid = first + row < seq;
    const T* from = valid ? src + static_cast<std::int64_t>(first + row) * D + 8 * chunk : src;
    ptx::cp_async_16(dst + at(row, chunk), from, valid ? 16 : 0);  // 0 bytes read: 16 zeros
  }
}

// 2^x in one MUFU.EX2, denormal results flushed to 0 (ex2.approx.ftz). exp2f
// compiles to the same instruction plus a fix-up for results below 2^-126,
// which the softmax does not need: such a weight is below 2^-126 of the row's
// largest (1) and is lost in the FP32 sum anyway. 2^-inf = +0.
__device__ inline float exp2_approx(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

// The online softmax of one 16-row MMA tile of scores, in place on the
// accumulator registers (flash_mma.cuh, step 2): s[nb][0..1] are keys
// 8nb+2t, +1 of row g, s[nb][2..3] the same keys of row g+8; the row's other
// keys sit in the 3 other threads of the quad 4g..4g+3, so a row max is two
// __shfl_xor_sync. m holds the running max of rows g, g+8 in raw score units,
// l this thread's share of their running sums, o the 16 rows' output
// accumulator, rescaled by alpha = 2^((m_old - m_new)·scale_log2). The scores
// become the weights 2^(s·scale_log2 - m·scale_log2): one FMA and one exp2 each
// (scale_log2 = log2(e)/sqrt(d), flash_common.cuh). `exp2` is exp2f or
// exp2_approx, the kernel's choice.
//
// `slack` > 0 (flash_fa2.cuh, item 8): the warp keeps its rows' old maxima,
// and skips the rescale of o and l, unless some row's max grew by more than
// `slack` (in base-2 exponent units) — one vote per tile. The weights are
// then up to 2^slack instead of 1, the same for the sum l as for o, so O =
// o / l is unchanged; with slack 8 they stay below 256, far inside FP16's
// and BF16's range. After the first few tiles a row's max rarely grows by a
// factor 2^8, and the rescale (d multiplications per row) is skipped.
template <int SB, int OB, typename Exp2>
__device__ __forceinline__ void online_softmax_16rows(float (&s)[SB][4], float (&o)[OB][4], float (&m)[2],
                                                      float (&l)[2], float scale_log2, Exp2 exp2,
                                                      float slack = 0.f) {
  float m_new[2];
  bool grows = false;
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float tile_max = -INFINITY;
#pragma unroll
    for (int nb = 0; nb < SB; ++nb) tile_max = fmaxf(tile_max, fmaxf(s[nb][2 * r], s[nb][2 * r + 1]));
    tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 1));  // the quad 4g..4g+3 shares the row
    tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 2));
    m_new[r] = fmaxf(m[r], tile_max);
    grows |= (m_new[r] - m[r]) * scale_log2 > slack;  // -inf to finite: grows; -inf to -inf: NaN, does not
  }
  const bool rescale = !(slack > 0.f) || __any_sync(0xffffffffu, grows);  // the same for the whole warp
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    if (rescale) {
      const float m_scaled = m_new[r] == -INFINITY ? 0.f : m_new[r] * scale_log2;  // no -inf - -inf = NaN
      const float alpha = exp2(m[r] * scale_log2 - m_scaled);                      // 0 while m[r] is -inf
      l[r] *= alpha;
#pragma unroll
      for (int ob = 0; ob < OB; ++ob) o[ob][2 * r] *= alpha, o[ob][2 * r + 1] *= alpha;
      m[r] = m_new[r];
    }
    const float m_scaled = m[r] == -INFINITY ? 0.f : m[r] * scale_log2;
    float row_sum = 0.f;
#pragma unroll
    for (int nb = 0; nb < SB; ++nb)
#pragma unroll
      for (int c = 2 * r; c < 2 * r + 2; ++c) row_sum += (s[nb][c] = exp2(fmaf(s[nb][c], scale_log2, -m_scaled)));
    l[r] += row_sum;
  }
}

// Keys kk·16 .. kk·16+15 of a 16-row tile of weights (accumulator blocks 2kk
// and 2kk+1) as the A operand of P·V: c0,c1 | c2,c3 of block 2kk and of block
// 2kk+1 are exactly a0 | a1 | a2 | a3 (flash_mma.cuh, step 3), rounded to T.
template <typename T, int SB>
__device__ __forceinline__ void weights_as_a(std::uint32_t (&a)[4], const float (&p)[SB][4], int kk) {
  a[0] = ptx::pack_pair<T>(p[2 * kk][0], p[2 * kk][1]);
  a[1] = ptx::pack_pair<T>(p[2 * kk][2], p[2 * kk][3]);
  a[2] = ptx::pack_pair<T>(p[2 * kk + 1][0], p[2 * kk + 1][1]);
  a[3] = ptx::pack_pair<T>(p[2 * kk + 1][2], p[2 * kk + 1][3]);
}

// Keys past the end of the sequence and, causal, keys after the query: -inf
// (2^-inf = 0: they drop out of max, sum and product). s is the score tile of
// 16 rows from row0 against the 8·SB keys from kv0, in the accumulator layout
// above. Only a tile that reaches past the end or past row0 is touched: under
// the causal mask that is the tile(s) on the diagonal, the rest run as they are.
template <int SB>
__device__ __forceinline__ void mask_16rows(float (&s)[SB][4], int kv0, int row0, int seq, bool causal) {
  if (kv0 + 8 * SB <= seq && !(causal && kv0 + 8 * SB - 1 > row0)) return;
  const int g = (threadIdx.x % 32) / 4, t = threadIdx.x % 4;
#pragma unroll
  for (int nb = 0; nb < SB; ++nb)
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      const int key = kv0 + 8 * nb + 2 * t + (c & 1), row = row0 + g + 8 * (c >> 1);
      if (key >= seq || (causal && key > row)) s[nb][c] = -INFINITY;
    }
}

// The row sums of rows g and g+8: each thread of the quad 4g..4g+3 holds a share.
__device__ __forceinline__ float quad_sum(float x) {
  x += __shfl_xor_sync(0xffffffffu, x, 1);
  return x + __shfl_xor_sync(0xffffffffu, x, 2);
}

}  // namespace

// CPU test of lab 33's FP8 arithmetic (no GPU): e4m3 rounding, the scales,
// and the quantising reference on tiny shapes.
//   - e4m3_from_float on hand-worked values: ties to even (in the normals and
//     the subnormals), saturation to ±448 (and of ±inf), NaN, signed zero;
//   - every code decodes and re-encodes to itself;
//   - e4m3_from_float equals CUDA's own conversion (__nv_cvt_float_to_fp8,
//     satfinite: the rule of the GPU's cvt.rn.satfinite) on ~1M floats across
//     the whole range and on every midpoint between neighbouring codes and its
//     two neighbouring floats;
//   - scale_of, and the three schemes of fp8_reference.hpp on small matrices
//     with an outlier: each group's largest value lands on ±448, its scale is
//     amax / 448, the outlier's group alone is coarse under block scales;
//   - product_rows: the rounding bound holds for every element, and where the
//     inputs are exactly representable the quantised products are exact;
//   - the scale layouts against the layout written out element by element
//     from the output side: per_1x128's k-major [k-block][row] (which
//     cuBLASLt reads as it is) and cublaslt_128x128's rearrangement;
//   - add_zero_groups (--inputs zero_groups): its zero and underflowing
//     groups get the scale 1 and the codes ±0 where amax / 448 is 0, its
//     subnormal group a subnormal scale, every other group an ordinary one;
//     a zero row of A gives a row of C whose bounds are 0; small shapes keep
//     a group of ordinary values in each matrix.
#include <cuda_fp8.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <utility>
#include <vector>

#include <cudalabs/random.hpp>

#include "fp8_format.hpp"
#include "fp8_reference.hpp"

namespace {

int failures = 0;

void expect(bool ok, const char* what) {
  if (!ok) {
    std::printf("FAIL: %s\n", what);
    ++failures;
  }
}

void expect_code(float x, unsigned want, const char* what) {
  const unsigned got = fp8::e4m3_from_float(x);
  if (got != want) {
    std::printf("FAIL: %s: e4m3(%a) = 0x%02X, expected 0x%02X\n", what, static_cast<double>(x), got, want);
    ++failures;
  }
}

unsigned cuda_code(float x) { return __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3); }

void expect_like_cuda(float x) {
  const unsigned got = fp8::e4m3_from_float(x), want = cuda_code(x);
  if (got != want) {
    if (failures < 20)
      std::printf("FAIL: e4m3(%a) = 0x%02X, CUDA's conversion gives 0x%02X\n", static_cast<double>(x), got, want);
    ++failures;
  }
}

}  // namespace

int main() {
  // Hand-worked codes.
  expect_code(0.0f, 0x00, "zero");
  expect_code(-0.0f, 0x80, "negative zero keeps its sign");
  expect_code(1.0f, 0x38, "1 = 2^0: exponent field 7");
  expect_code(-1.5f, 0xBC, "-1.5");
  expect_code(448.0f, 0x7E, "448, the largest finite value");
  expect_code(449.0f, 0x7E, "449 saturates");
  expect_code(464.0f, 0x7E, "464, the midpoint above 448 (0x7F is NaN): saturates");
  expect_code(1e30f, 0x7E, "1e30 saturates");
  expect_code(-std::numeric_limits<float>::infinity(), 0xFE, "-inf saturates to -448");
  expect_code(std::numeric_limits<float>::quiet_NaN(), 0x7F, "NaN");
  expect_code(1.0625f, 0x38, "1 + 1/16: a tie, to even (1.0)");
  expect_code(1.1875f, 0x3A, "1 + 3/16: a tie, to even (1.25)");
  expect_code(1.0626f, 0x39, "just above the tie rounds up");
  expect_code(240.0f, 0x77, "240 = 1.875 · 2^7");
  expect_code(std::ldexp(1.0f, -9), 0x01, "2^-9, the smallest subnormal");
  expect_code(std::ldexp(1.0f, -10), 0x00, "2^-10, half the smallest subnormal: a tie, to even (0)");
  expect_code(std::ldexp(3.0f, -10), 0x02, "1.5 subnormal steps: a tie, to even (2)");
  expect_code(std::ldexp(15.0f, -10), 0x08, "7.5 subnormal steps: a tie, to 8 = 2^-6, the smallest normal");
  expect_code(std::ldexp(1.0f, -20), 0x00, "far below the subnormals: zero");
  expect(std::isnan(fp8::e4m3_to_float(0x7F)) && std::isnan(fp8::e4m3_to_float(0xFF)), "0x7F and 0xFF are NaN");
  expect(fp8::e4m3_to_float(0x7E) == 448.0f && fp8::e4m3_to_float(0x01) == std::ldexp(1.0f, -9), "decode 0x7E, 0x01");

  // Every code round-trips (but NaN).
  for (unsigned c = 0; c < 256; ++c) {
    if ((c & 0x7F) == 0x7F) continue;
    if (fp8::e4m3_from_float(fp8::e4m3_to_float(static_cast<std::uint8_t>(c))) != c) {
      std::printf("FAIL: code 0x%02X does not round-trip\n", c);
      ++failures;
    }
  }

  // Against CUDA's conversion: a sweep of bit patterns, and every midpoint.
  for (std::uint64_t u = 0; u < (std::uint64_t{1} << 32); u += 4099) {
    const auto bits = static_cast<std::uint32_t>(u);
    float x;
    std::memcpy(&x, &bits, sizeof x);
    expect_like_cuda(x);
  }
  for (unsigned c = 0; c < 0x7E; ++c) {
    const float lo = fp8::e4m3_to_float(static_cast<std::uint8_t>(c)), hi = fp8::e4m3_to_float(static_cast<std::uint8_t>(c + 1));
    const float mid = lo + (hi - lo) / 2;  // exact: both are floats with few bits
    for (float x : {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, 1e9f)}) {
      expect_like_cuda(x);
      expect_like_cuda(-x);
    }
  }

  // Scales.
  expect(fp8::scale_of(448.0f) == 1.0f && fp8::scale_of(896.0f) == 2.0f, "scale_of(448) = 1, scale_of(896) = 2");
  expect(fp8::scale_of(0.0f) == 1.0f, "a group of zeros gets the scale 1");
  expect(fp8::scale_of(1.0f) == 1.0f / 448.0f, "scale_of(1) = 1/448");

  // The schemes on a 130 × 144 matrix (two row blocks, two k blocks, both
  // partial) with one outlier at (3, 5).
  const int rows = 130, k = 144;
  std::vector<float> x = cudalabs::random_floats(static_cast<std::size_t>(rows) * k, 7);
  x[3 * k + 5] = 100.0f;
  const fp8_ref::Quantised tensor = fp8_ref::per_tensor(x);
  const fp8_ref::Quantised row_groups = fp8_ref::per_1x128(x, rows, k);
  const fp8_ref::Quantised blocks = fp8_ref::per_128x128(x, rows, k);
  expect(tensor.scales.size() == 1 && tensor.scales[0] == 100.0f / 448.0f, "per tensor: scale = amax / 448");
  expect(tensor.q[3 * k + 5] == 0x7E, "per tensor: the outlier is 448");
  expect(row_groups.scales.size() == static_cast<std::size_t>(rows) * 2, "1x128: a scale per row per 128 of k");
  expect(blocks.scales.size() == 4, "128x128: 2 x 2 blocks");
  // k-major: row r, k-block kb at kb · rows + r.
  expect(row_groups.scales[0 * rows + 3] == 100.0f / 448.0f, "1x128: the outlier's group has its scale");
  expect(row_groups.scales[1 * rows + 3] < 1.0f / 448.0f + 1e-9f, "1x128: the outlier's row, next k block: its own scale");
  expect(blocks.scales[0] == 100.0f / 448.0f && blocks.scales[1] < 1.0f / 448.0f + 1e-9f,
         "128x128: the outlier's block has its scale, the next k block does not");
  for (int r = 0; r < rows; ++r)
    for (int g = 0; g < 2; ++g) {
      float amax = 0;
      std::uint8_t top = 0;
      for (int c = 128 * g; c < std::min(k, 128 * (g + 1)); ++c) {
        const std::size_t i = static_cast<std::size_t>(r) * k + c;
        if (std::fabs(x[i]) > amax) amax = std::fabs(x[i]), top = row_groups.q[i];
        if (row_groups.q[i] != fp8::e4m3_from_float(x[i] / row_groups.scales[static_cast<std::size_t>(g) * rows + r])) {
          std::printf("FAIL: 1x128 code at (%d, %d)\n", r, c);
          ++failures;
        }
      }
      if ((top & 0x7F) != 0x7E) {
        std::printf("FAIL: 1x128 group (%d, %d): its largest value is not ±448 (code 0x%02X)\n", r, g, top);
        ++failures;
      }
    }

  // product_rows: 5 × 131 × 144, random inputs with the outlier: the rounding
  // bound holds everywhere; block scales leave a smaller error than per tensor.
  const int m = 5, n = 131;
  std::vector<float> a(x.begin(), x.begin() + static_cast<std::ptrdiff_t>(m) * k);
  std::vector<float> b = cudalabs::random_floats(static_cast<std::size_t>(n) * k, 8);
  const fp8_ref::Quantised at = fp8_ref::per_tensor(a), bt = fp8_ref::per_tensor(b);
  const fp8_ref::Quantised ar = fp8_ref::per_1x128(a, m, k), bb = fp8_ref::per_128x128(b, n, k);
  const std::vector<int> all_rows{0, 1, 2, 3, 4};
  const fp8_ref::ProductRows p = fp8_ref::product_rows({a, b, at, bt, ar, bb, m, n, k}, all_rows);
  double err_tensor = 0, err_block = 0;
  for (std::size_t i = 0; i < p.exact.size(); ++i) {
    err_tensor += std::fabs(p.per_tensor[i] - p.exact[i]);
    err_block += std::fabs(p.block[i] - p.exact[i]);
    if (std::fabs(p.per_tensor[i] - p.exact[i]) > p.rounding_per_tensor[i] ||
        std::fabs(p.block[i] - p.exact[i]) > p.rounding_block[i]) {
      std::printf("FAIL: element %zu beyond its rounding bound\n", i);
      ++failures;
    }
  }
  expect(err_block < err_tensor, "block scales leave less error than a per-tensor scale, with an outlier");
  // Exactly representable inputs (±448 · 2^-j and 0): quantisation is exact.
  std::vector<float> ea(static_cast<std::size_t>(2) * 32), eb(static_cast<std::size_t>(3) * 32);
  for (std::size_t i = 0; i < ea.size(); ++i) ea[i] = (i % 3 == 0 ? -1.0f : 1.0f) * std::ldexp(448.0f, -static_cast<int>(i % 5));
  for (std::size_t i = 0; i < eb.size(); ++i) eb[i] = (i % 4 == 0 ? -1.0f : 1.0f) * std::ldexp(448.0f, -static_cast<int>(i % 6));
  const fp8_ref::Quantised eat = fp8_ref::per_tensor(ea), ebt = fp8_ref::per_tensor(eb);
  const fp8_ref::Quantised ear = fp8_ref::per_1x128(ea, 2, 32), ebb = fp8_ref::per_128x128(eb, 3, 32);
  const fp8_ref::ProductRows e = fp8_ref::product_rows({ea, eb, eat, ebt, ear, ebb, 2, 3, 32}, {0, 1});
  for (std::size_t i = 0; i < e.exact.size(); ++i)
    expect(e.per_tensor[i] == e.exact[i] && e.block[i] == e.exact[i], "representable inputs: exact products");

  // The scale layouts (fp8_reference.hpp), checked from the output's side:
  // each output element decoded into the (row, k-block) it must hold. Groups
  // and blocks numbered 1, 2, 3, ... so that any two misplaced differ.
  struct LayoutShape {
    int rows, k;
  };
  for (const LayoutShape sh : {LayoutShape{1, 16}, LayoutShape{255, 272}, LayoutShape{257, 640}, LayoutShape{130, 512},
                               LayoutShape{131, 144}, LayoutShape{7168, 16384}}) {
    const int kb_count = (sh.k + 127) / 128, rb_count = (sh.rows + 127) / 128;
    const int padded = (kb_count % 4 == 0) ? kb_count : kb_count + 4 - kb_count % 4;
    std::vector<float> blocks(static_cast<std::size_t>(rb_count) * kb_count);
    for (std::size_t i = 0; i < blocks.size(); ++i) blocks[i] = static_cast<float>(i + 1);
    // 1x128, per_1x128 itself (cuBLASLt's VEC128_32F reads the same array):
    // group (row, kb) holds one nonzero, its number, so its scale is
    // scale_of(number); element e of the scales is k-block e / rows of row
    // e % rows. Shapes of up to 2^20 elements (the quantiser rounds them all).
    bool ok = true;
    if (static_cast<std::size_t>(sh.rows) * sh.k <= (std::size_t{1} << 20)) {
      std::vector<float> numbered(static_cast<std::size_t>(sh.rows) * sh.k, 0.0f);
      for (int r = 0; r < sh.rows; ++r)
        for (int kb = 0; kb < kb_count; ++kb)
          numbered[static_cast<std::size_t>(r) * sh.k + static_cast<std::size_t>(kb) * 128] = static_cast<float>(r * kb_count + kb + 1);
      const std::vector<float> got = fp8_ref::per_1x128(numbered, sh.rows, sh.k).scales;
      ok = got.size() == static_cast<std::size_t>(sh.rows) * kb_count;
      for (std::size_t e = 0; ok && e < got.size(); ++e) {
        const std::size_t row = e % static_cast<std::size_t>(sh.rows), kb = e / static_cast<std::size_t>(sh.rows);
        ok = got[e] == fp8::scale_of(static_cast<float>(row * static_cast<std::size_t>(kb_count) + kb + 1));
      }
    }
    expect(ok, "1x128 layout (cuBLASLt's VEC128_32F as it is): [k-block][row], rows innermost");
    // 128x128: element e is k-block e % padded of row block e / padded, 0 past the k-blocks.
    const std::vector<float> lt_blocks = fp8_ref::cublaslt_128x128(blocks, sh.rows, sh.k);
    ok = lt_blocks.size() == static_cast<std::size_t>(rb_count) * padded &&
         fp8_ref::cublaslt_block_column(sh.k) == padded && padded % 4 == 0 && padded - kb_count < 4;
    for (std::size_t e = 0; ok && e < lt_blocks.size(); ++e) {
      const int rb = static_cast<int>(e) / padded, kb = static_cast<int>(e) % padded;
      ok = lt_blocks[e] == (kb < kb_count ? static_cast<float>(rb * kb_count + kb + 1) : 0.0f);
    }
    expect(ok, "cuBLASLt 128x128 layout: [row block][k-block padded to 4], k-blocks innermost");
  }

  // add_zero_groups on A 5 × 272 and B 260 × 272: 3 k-blocks (the last 16
  // wide), B in 3 row blocks (the last 4 rows).
  {
    const int zm = 5, zn = 260, zk = 272;
    std::vector<float> za = cudalabs::random_floats(static_cast<std::size_t>(zm) * zk, 11);
    std::vector<float> zb = cudalabs::random_floats(static_cast<std::size_t>(zn) * zk, 12);
    fp8_ref::add_zero_groups(za, zb, zm, zn, zk, 13);
    const fp8_ref::Quantised qa = fp8_ref::per_1x128(za, zm, zk), qb = fp8_ref::per_128x128(zb, zn, zk);
    // Whether group (row, kb) of a [rows × zk] matrix, `height` rows tall, holds only the codes ±0,
    // and the largest magnitude of its values.
    auto group_of = [&](const std::vector<float>& x, const fp8_ref::Quantised& q, int row0, int height, int rows, int kb,
                        float& amax) {
      bool zero_codes = true;
      amax = 0;
      for (int r = row0; r < std::min(rows, row0 + height); ++r)
        for (int c = kb * 128; c < std::min(zk, (kb + 1) * 128); ++c) {
          const std::size_t i = static_cast<std::size_t>(r) * zk + c;
          zero_codes = zero_codes && (q.q[i] & 0x7F) == 0;
          amax = std::max(amax, std::fabs(x[i]));
        }
      return zero_codes;
    };
    bool ok = true;
    for (int r = 0; r < zm; ++r)
      for (int kb = 0; kb < 3; ++kb) {
        float amax = 0;
        const bool zero_codes = group_of(za, qa, r, 1, zm, kb, amax);
        const float scale = qa.scales[static_cast<std::size_t>(kb) * zm + r];
        if (r == zm / 2) {
          ok = ok && amax == 0.0f && scale == 1.0f && zero_codes;  // the zero row
        } else if (r == 0 && kb == 2) {
          // Underflowing: subnormals, amax / 448 == 0 (the naive scale), scale_of's 1.
          ok = ok && amax > 0.0f && amax < std::numeric_limits<float>::min() && amax / 448.0f == 0.0f &&
               scale == 1.0f && zero_codes;
        } else if (r == zm - 1 && kb == 0) {
          // A subnormal scale, not 0 and not 1: the group's codes reach ±448.
          ok = ok && scale > 0.0f && scale < std::numeric_limits<float>::min() && scale == amax / 448.0f && !zero_codes;
        } else {
          ok = ok && amax >= 1.0f / 64 && scale == amax / 448.0f && !zero_codes;
        }
      }
    expect(ok, "zero_groups, A: the zero row and the underflowing group get the scale 1 and codes 0; the subnormal group a subnormal scale");
    ok = true;
    for (int rb = 0; rb < 3; ++rb)
      for (int kb = 0; kb < 3; ++kb) {
        float amax = 0;
        const bool zero_codes = group_of(zb, qb, rb * 128, 128, zn, kb, amax);
        const float scale = qb.scales[static_cast<std::size_t>(rb) * 3 + kb];
        if (kb == 2)
          ok = ok && amax == 0.0f && scale == 1.0f && zero_codes;  // the zero slice of k
        else if (rb == 2 && kb == 0)
          ok = ok && amax > 0.0f && amax / 448.0f == 0.0f && scale == 1.0f && zero_codes;
        else
          ok = ok && amax >= 1.0f / 64 && scale == amax / 448.0f && !zero_codes;
      }
    expect(ok, "zero_groups, B: the zero slice of k and the underflowing block get the scale 1 and codes 0");
    // The zero row of A: a row of C of 0, every bound of it 0 (so C must be 0 there).
    const fp8_ref::Quantised ta = fp8_ref::per_tensor(za), tb = fp8_ref::per_tensor(zb);
    const fp8_ref::ProductRows zp = fp8_ref::product_rows({za, zb, ta, tb, qa, qb, zm, zn, zk}, {zm / 2, 0});
    bool zero_row = true, other_row = false;
    for (int j = 0; j < zn; ++j) {
      zero_row = zero_row && zp.exact[j] == 0 && zp.block[j] == 0 && zp.per_tensor[j] == 0 && zp.abs_block[j] == 0 &&
                 zp.abs_per_tensor[j] == 0 && zp.abs_exact[j] == 0;
      other_row = other_row || zp.abs_block[static_cast<std::size_t>(zn) + j] > 1.0;
    }
    expect(zero_row && other_row, "zero_groups: A's zero row makes a row of C of 0 with bounds 0; row 0 is not");

    // Small shapes: never all of a matrix. A 1 × 128, B 100 × 128 (one group
    // each): unchanged. A 1 × 256, B 100 × 256: A's last group underflows
    // (its first stays), B's last slice of k is zero (its first stays).
    for (const int sk : {128, 256}) {
      std::vector<float> sa = cudalabs::random_floats(static_cast<std::size_t>(sk), 14);
      std::vector<float> sb = cudalabs::random_floats(static_cast<std::size_t>(100) * sk, 15);
      const std::vector<float> sa0 = sa, sb0 = sb;
      fp8_ref::add_zero_groups(sa, sb, 1, 100, sk, 16);
      const auto changed = [](const std::vector<float>& x, const std::vector<float>& x0, int from, int to, int width) {
        bool any = false, all = true;
        for (std::size_t i = 0; i < x.size(); ++i) {
          const int c = static_cast<int>(i % static_cast<std::size_t>(width));
          if (c >= from && c < to) any = any || x[i] != x0[i];
          else all = all && x[i] == x0[i];
        }
        return std::pair{any, all};
      };
      if (sk == 128) {
        expect(sa == sa0 && sb == sb0, "zero_groups, one group per matrix: nothing changed");
      } else {
        const auto [a_last, a_first_kept] = changed(sa, sa0, 128, 256, sk);
        const auto [b_last, b_first_kept] = changed(sb, sb0, 128, 256, sk);
        expect(a_last && a_first_kept && b_last && b_first_kept,
               "zero_groups, two k-blocks, one row: only the last k-block of A and B changed");
      }
    }
  }

  if (failures == 0) std::printf("fp8 format: all checks passed\n");
  return failures == 0 ? 0 : 1;
}

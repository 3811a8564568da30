#pragma once
// Lab 33's CPU references, course-owned (main.cu and fp8_format_test.cu):
// the three quantisation schemes exactly as kernels.hpp specifies them
// (fp8_format.hpp's rounding and scales), and rows of the products of the
// quantised matrices and of the FP32 ones, with the bounds the checks use.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include <cudalabs/math.hpp>
#include <cudalabs/random.hpp>
#include <cudalabs/reference.hpp>

#include "fp8_format.hpp"

namespace fp8_ref {

struct Quantised {
  std::vector<std::uint8_t> q;  // e4m3 codes, the input's shape
  std::vector<float> scales;    // the scheme's scales (kernels.hpp: their order)
};

// Rounds x[i] / scale_of_element(i) for every element, in parallel.
template <typename ScaleOf>
std::vector<std::uint8_t> round_all(const std::vector<float>& x, ScaleOf scale_of_element) {
  std::vector<std::uint8_t> q(x.size());
  cudalabs::ref::parallel_for(x.size(), [&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) q[i] = fp8::e4m3_from_float(x[i] / scale_of_element(i));
  }, 1 << 16);
  return q;
}

inline Quantised per_tensor(const std::vector<float>& x) {
  float amax = 0.0f;
  for (float v : x) amax = std::max(amax, std::fabs(v));
  const float scale = fp8::scale_of(amax);
  return {round_all(x, [&](std::size_t) { return scale; }), {scale}};
}

// The 1 × 128 scales are k-major, [ceil(k/128)][rows]: row r, k-block kb at
// kb · rows + r.
inline std::size_t group_index(std::size_t row, std::size_t k_block, int rows) {
  return k_block * static_cast<std::size_t>(rows) + row;
}

inline Quantised per_1x128(const std::vector<float>& x, int rows, int k) {
  const int k_blocks = cudalabs::ceil_div(k, fp8::block);
  std::vector<float> scales(static_cast<std::size_t>(rows) * k_blocks);
  for (int r = 0; r < rows; ++r)
    for (int kb = 0; kb < k_blocks; ++kb) {
      float amax = 0.0f;
      for (int c = kb * fp8::block; c < std::min(k, (kb + 1) * fp8::block); ++c)
        amax = std::max(amax, std::fabs(x[static_cast<std::size_t>(r) * k + c]));
      scales[group_index(static_cast<std::size_t>(r), static_cast<std::size_t>(kb), rows)] = fp8::scale_of(amax);
    }
  return {round_all(x, [&](std::size_t i) { return scales[group_index(i / k, (i % k) / fp8::block, rows)]; }), scales};
}

inline Quantised per_128x128(const std::vector<float>& x, int rows, int k) {
  const int k_blocks = cudalabs::ceil_div(k, fp8::block), row_blocks = cudalabs::ceil_div(rows, fp8::block);
  std::vector<float> amax(static_cast<std::size_t>(row_blocks) * k_blocks, 0.0f);
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < k; ++c) {
      float& m = amax[static_cast<std::size_t>(r / fp8::block) * k_blocks + c / fp8::block];
      m = std::max(m, std::fabs(x[static_cast<std::size_t>(r) * k + c]));
    }
  std::vector<float> scales(amax.size());
  for (std::size_t i = 0; i < amax.size(); ++i) scales[i] = fp8::scale_of(amax[i]);
  return {round_all(x, [&](std::size_t i) {
            return scales[(i / k) / fp8::block * k_blocks + (i % k) / fp8::block];
          }),
          scales};
}

// The block scales as cuBLASLt's own block-scaled GEMM reads them (the
// cublaslt_fp8_block row; cudalabs::Cublas::gemm_fp8_e4m3_blocks). Our C =
// A·Bᵀ is cuBLASLt's column-major Cᵀ = B·Aᵀ: its A is our B (k×n, k
// innermost, transposed), its B our A (k×m, k innermost). cuBLAS's
// "Scaling factors layouts" (as PyTorch's _scaled_mm checks them since
// pytorch/pytorch#166752) then asks for
//   VEC128_32F on its B (our A, 1×128): a [ceil(k/128)] × [m] array, rows
//     of A innermost: [kb·m + row]; no padding. That is the lab's own
//     layout (group_index): per_1x128's scales go to cuBLASLt as they are;
//   BLK128x128_32F on its A (our B, 128×128): per column of blocks (128 rows
//     of B) its ceil(k/128) scales, innermost, padded to a multiple of 4
//     (16 bytes): out[(row/128)·round_up(ceil(k/128), 4) + kb], the padding 0:
//     per_128x128's scales rearranged by cublaslt_128x128.

// The padded length of one column of 128×128 scales in cuBLASLt's layout.
inline int cublaslt_block_column(int k) { return cudalabs::ceil_div(cudalabs::ceil_div(k, fp8::block), 4) * 4; }

inline std::vector<float> cublaslt_128x128(const std::vector<float>& scales, int rows, int k) {
  const std::size_t k_blocks = static_cast<std::size_t>(cudalabs::ceil_div(k, fp8::block));
  const std::size_t row_blocks = static_cast<std::size_t>(cudalabs::ceil_div(rows, fp8::block));
  const std::size_t column = static_cast<std::size_t>(cublaslt_block_column(k));
  std::vector<float> out(row_blocks * column, 0.0f);
  for (std::size_t rb = 0; rb < row_blocks; ++rb)
    std::copy_n(scales.begin() + static_cast<std::ptrdiff_t>(rb * k_blocks), k_blocks,
                out.begin() + static_cast<std::ptrdiff_t>(rb * column));
  return out;
}

// --inputs zero_groups (main.cu): groups that get no scale of their own from
// their values, written into A [m × k] and B [n × k] where no two overlap,
// each only where its matrix keeps a group of ordinary values besides (a C of
// zeros would check nothing):
//   A: row m/2 all zeros (m >= 3): every 1 × 128 group of a row, the partial
//      last one included; row 0's last group of subnormals j·2^-149,
//      |j| <= 63: amax / 448 <= 63·2^-149 / 448 < 2^-151 rounds to 0; row
//      m-1's first group of subnormals below 2^-132 (m >= 2, k > 128): amax /
//      448 near 2^-141, a subnormal scale that is not 0;
//   B: the last 128-wide slice of k all zeros, one 128 × 128 block in every
//      row block (k > 128); the last row block's first block of j·2^-149.
// fp8::scale_of gives a zero or underflowing group the scale 1, and its values
// round to the codes ±0; a quantiser that divides amax by 448 itself stores
// the scale 0 and the codes ±448 (x / 0) or NaN (0 / 0). The subnormal scale
// needs IEEE subnormals in the division (no flush to zero). A zero row of A
// makes a row of C whose bounds are 0 (main.cu): it must be 0.
inline void add_zero_groups(std::vector<float>& a, std::vector<float>& b, int m, int n, int k, std::uint64_t seed) {
  const int k_blocks = cudalabs::ceil_div(k, fp8::block), last_kb = k_blocks - 1;
  const int row_blocks = cudalabs::ceil_div(n, fp8::block);
  auto columns = [&](int kb) { return std::min(k, (kb + 1) * fp8::block) - kb * fp8::block; };
  auto group = [&](std::vector<float>& x, int row, int kb) {
    return x.begin() + static_cast<std::ptrdiff_t>(row) * k + static_cast<std::ptrdiff_t>(kb) * fp8::block;
  };
  // One group's values j·2^-149, j in [-63, 63]: exact subnormals.
  auto underflowing = [&](std::vector<float>& x, int row, int kb, std::uint64_t s) {
    const std::vector<float> j = cudalabs::random_small_ints(static_cast<std::size_t>(columns(kb)), s, -63, 63);
    std::transform(j.begin(), j.end(), group(x, row, kb), [](float v) { return std::ldexp(v, -149); });
  };
  const int a_groups = m * k_blocks;
  if (m >= 3) std::fill_n(group(a, m / 2, 0), k, 0.0f);
  if (a_groups >= 2) underflowing(a, 0, last_kb, cudalabs::mix_seed(seed, 1));
  if (m >= 2 && k_blocks >= 2) {
    const std::vector<float> v = cudalabs::random_floats(fp8::block, cudalabs::mix_seed(seed, 2));
    std::transform(v.begin(), v.end(), group(a, m - 1, 0), [](float x) { return std::ldexp(x, -132); });
  }
  const int b_zeroed = k_blocks >= 2 ? row_blocks : 0;
  if (k_blocks >= 2)
    for (int r = 0; r < n; ++r) std::fill_n(group(b, r, last_kb), columns(last_kb), 0.0f);
  if (row_blocks * k_blocks - b_zeroed >= 2)
    for (int r = (row_blocks - 1) * fp8::block; r < n; ++r)
      underflowing(b, r, 0, cudalabs::mix_seed(seed, 3 + static_cast<std::uint64_t>(r)));
}

// The values of the 256 e4m3 codes.
inline const std::array<float, 256>& e4m3_values() {
  static const std::array<float, 256> table = [] {
    std::array<float, 256> t{};
    for (int c = 0; c < 256; ++c) t[static_cast<std::size_t>(c)] = fp8::e4m3_to_float(static_cast<std::uint8_t>(c));
    return t;
  }();
  return table;
}

// The inputs of one product in FP32 and in both quantised forms: per tensor
// (A and B), and blocks (A 1 × 128, B 128 × 128).
struct Inputs {
  const std::vector<float>& a;  // [m × k]
  const std::vector<float>& b;  // [n × k]
  const Quantised& a_tensor;
  const Quantised& b_tensor;
  const Quantised& a_rows;
  const Quantised& b_blocks;
  int m, n, k;
};

// For each checked row of C (rows[i]) and each column j, at [i·n + j]:
struct ProductRows {
  std::vector<double> exact;             // Σ a·b, the FP32 inputs
  std::vector<double> per_tensor;        // Σ (qa·sa)(qb·sb), per-tensor quantised
  std::vector<double> block;             // Σ (qa·sa[kb][row])(qb·sb[j/128][kb]), block quantised
  std::vector<double> abs_exact;         // Σ |a·b|
  std::vector<double> abs_per_tensor;    // Σ |products| of the per-tensor values
  std::vector<double> abs_block;         // Σ |products| of the block values
  std::vector<double> rounding_per_tensor;  // Σ δa·|b̃| + |a|·δb, the quantisation bound (below)
  std::vector<double> rounding_block;
};

// The error rounding to e4m3 leaves in x (scaled by s) is at most half a step:
// 2^-4·|x| for normal values, 2^-10·s for subnormals (steps of 2^-9·s); so
// δ(x) = 2^-4·|x| + 2^-10·s bounds both. A product's error is then at most
// δa·|b̃| + |a|·δb (b̃ the rounded b): the bound of the check against the FP32
// product, per element, before the accumulation's own error.
inline double rounding_error_bound(float x, float scale) {
  return std::ldexp(std::fabs(static_cast<double>(x)), -4) + std::ldexp(static_cast<double>(scale), -10);
}

inline ProductRows product_rows(const Inputs& in, const std::vector<int>& rows) {
  const std::array<float, 256>& value = e4m3_values();
  const int n = in.n, k = in.k, k_blocks = cudalabs::ceil_div(k, fp8::block);
  const std::size_t count = rows.size() * static_cast<std::size_t>(n);
  ProductRows p;
  for (auto* v : {&p.exact, &p.per_tensor, &p.block, &p.abs_exact, &p.abs_per_tensor, &p.abs_block,
                  &p.rounding_per_tensor, &p.rounding_block})
    v->assign(count, 0.0);
  const float sa = in.a_tensor.scales[0], sb = in.b_tensor.scales[0];
  cudalabs::ref::parallel_for(count, [&](std::size_t begin, std::size_t end) {
    for (std::size_t idx = begin; idx < end; ++idx) {
      const std::size_t row = static_cast<std::size_t>(rows[idx / static_cast<std::size_t>(n)]);
      const std::size_t j = idx % static_cast<std::size_t>(n);
      const float* a = in.a.data() + row * k;
      const float* b = in.b.data() + j * k;
      const std::uint8_t* qa_t = in.a_tensor.q.data() + row * k;
      const std::uint8_t* qb_t = in.b_tensor.q.data() + j * k;
      const std::uint8_t* qa_r = in.a_rows.q.data() + row * k;
      const std::uint8_t* qb_b = in.b_blocks.q.data() + j * k;
      double exact = 0, tensor = 0, blocks = 0, abs_exact = 0, abs_tensor = 0, abs_blocks = 0, round_t = 0, round_b = 0;
      for (int kb = 0; kb < k_blocks; ++kb) {
        const float sa_b = in.a_rows.scales[group_index(row, static_cast<std::size_t>(kb), in.m)];
        const float sb_b = in.b_blocks.scales[(j / fp8::block) * k_blocks + static_cast<std::size_t>(kb)];
        for (int c = kb * fp8::block; c < std::min(k, (kb + 1) * fp8::block); ++c) {
          const double x = a[c], y = b[c];
          const double xt = static_cast<double>(value[qa_t[c]]) * sa, yt = static_cast<double>(value[qb_t[c]]) * sb;
          const double xb = static_cast<double>(value[qa_r[c]]) * sa_b, yb = static_cast<double>(value[qb_b[c]]) * sb_b;
          exact += x * y, tensor += xt * yt, blocks += xb * yb;
          abs_exact += std::fabs(x * y), abs_tensor += std::fabs(xt * yt), abs_blocks += std::fabs(xb * yb);
          round_t += rounding_error_bound(a[c], sa) * std::fabs(yt) + std::fabs(x) * rounding_error_bound(b[c], sb);
          round_b += rounding_error_bound(a[c], sa_b) * std::fabs(yb) + std::fabs(x) * rounding_error_bound(b[c], sb_b);
        }
      }
      p.exact[idx] = exact, p.per_tensor[idx] = tensor, p.block[idx] = blocks;
      p.abs_exact[idx] = abs_exact, p.abs_per_tensor[idx] = abs_tensor, p.abs_block[idx] = abs_blocks;
      p.rounding_per_tensor[idx] = round_t, p.rounding_block[idx] = round_b;
    }
  }, 1);
  return p;
}

}  // namespace fp8_ref

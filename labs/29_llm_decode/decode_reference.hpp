#pragma once
// Lab 29's CPU side: the GGUF block formats on the host, the quantisers that
// make the inputs, the double-precision reference of every kernel, and the
// tolerances, each with its reason. Course code: the host program includes it, never a
// kernel file.
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <span>
#include <string>
#include <vector>

#include <cudalabs/checker.hpp>
#include <cudalabs/reference.hpp>

#include "kernels.hpp"

namespace lab29ref {

using lab29::Format;
inline constexpr double eps32 = 5.9604644775390625e-8;  // 2^-24: float's unit roundoff
inline constexpr int qk = lab29::block_values;

inline float half_to_float(std::uint16_t bits) {
  __half_raw raw;
  raw.x = bits;
  return __half2float(__half(raw));
}
inline std::uint16_t float_to_half(float f) {
  const __half_raw raw = __float2half_rn(f);
  return raw.x;
}

// ---- quantised matrices in GGUF's layout ----------------------------------------

// rows × cols values, cols/32 blocks per row, rows after each other, each block
// [half scale][quants] exactly as GGUF stores it (34 or 18 bytes).
struct QuantMatrix {
  Format format = Format::q8_0;
  int rows = 0, cols = 0;
  std::vector<std::uint8_t> bytes;

  int blocks_per_row() const { return cols / qk; }
  std::size_t block_bytes() const { return static_cast<std::size_t>(lab29::gguf_block_bytes(format)); }
  const std::uint8_t* block(std::int64_t r, int b) const {
    return bytes.data() + (static_cast<std::size_t>(r) * blocks_per_row() + b) * block_bytes();
  }
  float scale(std::int64_t r, int b) const {
    std::uint16_t bits;
    std::memcpy(&bits, block(r, b), 2);
    return half_to_float(bits);
  }
  // The integer level of value j of block b: q (Q8_0) or nibble - 8 (Q4_0).
  int level(std::int64_t r, int b, int j) const {
    const std::uint8_t* qs = block(r, b) + 2;
    if (format == Format::q8_0) return static_cast<std::int8_t>(qs[j]);
    return (j < 16 ? (qs[j] & 0x0F) : (qs[j - 16] >> 4)) - 8;
  }
  // level · scale is exact in float (8 bits times half's 11), so the CPU's
  // dequantised value and a kernel's are the same float, bit for bit.
  float value(std::int64_t r, std::int64_t c) const {
    return static_cast<float>(level(r, static_cast<int>(c / qk), static_cast<int>(c % qk))) *
           scale(r, static_cast<int>(c / qk));
  }
};

// ggml's reference quantisers (quantize_row_q8_0_ref / _q4_0_ref):
//   Q8_0: d = max|w| / 127, q = round(w / d).
//   Q4_0: m = the value of largest magnitude (with its sign), d = m / -8,
//         nibble = min(15, trunc(w / d + 8.5)): m itself maps to 0, -m to 16 -> 15.
inline QuantMatrix quantize_matrix(Format f, std::span<const float> w, int rows, int cols) {
  QuantMatrix m{f, rows, cols, {}};
  m.bytes.resize(static_cast<std::size_t>(rows) * m.blocks_per_row() * m.block_bytes());
  cudalabs::ref::parallel_for(static_cast<std::size_t>(rows), [&](std::size_t lo, std::size_t hi) {
    for (std::size_t r = lo; r < hi; ++r)
      for (int b = 0; b < m.blocks_per_row(); ++b) {
        const float* v = &w[r * static_cast<std::size_t>(cols) + static_cast<std::size_t>(b) * qk];
        std::uint8_t* out = m.bytes.data() + (r * m.blocks_per_row() + b) * m.block_bytes();
        float d = 0.0f;
        if (f == Format::q8_0) {
          float amax = 0.0f;
          for (int j = 0; j < qk; ++j) amax = std::max(amax, std::fabs(v[j]));
          d = amax / 127.0f;
          const float id = d != 0.0f ? 1.0f / d : 0.0f;
          for (int j = 0; j < qk; ++j) out[2 + j] = static_cast<std::uint8_t>(static_cast<std::int8_t>(std::round(v[j] * id)));
        } else {
          float amax = 0.0f, signed_max = 0.0f;
          for (int j = 0; j < qk; ++j)
            if (std::fabs(v[j]) > amax) amax = std::fabs(v[j]), signed_max = v[j];
          d = signed_max / -8.0f;
          const float id = d != 0.0f ? 1.0f / d : 0.0f;
          auto nibble = [&](float x) { return static_cast<std::uint8_t>(std::min(15, static_cast<int>(x * id + 8.5f))); };
          for (int j = 0; j < qk / 2; ++j) out[2 + j] = static_cast<std::uint8_t>(nibble(v[j]) | (nibble(v[j + 16]) << 4));
        }
        const std::uint16_t bits = float_to_half(d);
        std::memcpy(out, &bits, 2);
      }
  }, 1);
  return m;
}

// The largest |value| of the matrix (for the dot tolerance).
inline double max_abs_value(const QuantMatrix& m) {
  double mx = 0;
  for (std::int64_t r = 0; r < m.rows; ++r)
    for (int b = 0; b < m.blocks_per_row(); ++b) {
      int lv = 0;
      for (int j = 0; j < qk; ++j) lv = std::max(lv, std::abs(m.level(r, b, j)));
      mx = std::max(mx, static_cast<double>(lv) * std::fabs(m.scale(r, b)));
    }
  return mx;
}

// ---- activations quantised per 32-block, as the kernels do ------------------------

struct QuantVector {
  std::vector<std::int8_t> q;
  std::vector<float> d;
  std::vector<int> sum;
  float value(std::size_t i) const { return static_cast<float>(q[i]) * d[i / qk]; }
};

// scale = max|x| / 127, q = round-to-nearest-even(x · 127 / max|x|): the same
// float operations as quantize_store() in decode_ops.cuh, so the same q for the same x.
inline QuantVector quantize_vector(std::span<const float> x) {
  QuantVector v;
  const std::size_t blocks = x.size() / qk;
  v.q.resize(x.size());
  v.d.resize(blocks);
  v.sum.resize(blocks);
  for (std::size_t b = 0; b < blocks; ++b) {
    float amax = 0.0f;
    for (int j = 0; j < qk; ++j) amax = std::max(amax, std::fabs(x[b * qk + j]));
    const float inv = amax > 0.0f ? 127.0f / amax : 0.0f;
    int s = 0;
    for (int j = 0; j < qk; ++j) {
      const int q = static_cast<int>(std::nearbyint(x[b * qk + j] * inv));
      v.q[b * qk + j] = static_cast<std::int8_t>(q);
      s += q;
    }
    v.d[b] = amax / 127.0f;
    v.sum[b] = s;
  }
  return v;
}

// ---- matrix-vector references ---------------------------------------------------------

// For each row r, the sum over its blocks b of per_block(r, b), in double, the
// rows in parallel.
template <typename PerBlock>
std::vector<double> sum_over_blocks(const QuantMatrix& w, PerBlock per_block) {
  std::vector<double> y(static_cast<std::size_t>(w.rows));
  cudalabs::ref::parallel_for(y.size(), [&](std::size_t lo, std::size_t hi) {
    for (std::size_t r = lo; r < hi; ++r) {
      double acc = 0;
      for (int b = 0; b < w.blocks_per_row(); ++b) acc += per_block(static_cast<std::int64_t>(r), b);
      y[r] = acc;
    }
  }, 1);
  return y;
}

// y = W·x in double, W dequantised exactly.
inline std::vector<double> matvec(const QuantMatrix& w, std::span<const float> x) {
  return sum_over_blocks(w, [&](std::int64_t r, int b) {
    double dot = 0;
    for (int j = 0; j < qk; ++j) dot += w.level(r, b, j) * static_cast<double>(x[static_cast<std::size_t>(b) * qk + j]);
    return dot * w.scale(r, b);
  });
}

// y = W·x with x given quantised: sum over blocks of d_w · d_x · (integer dot),
// what the __dp4a kernels compute, with no rounding (the integer dot is exact).
inline std::vector<double> matvec(const QuantMatrix& w, const QuantVector& x) {
  return sum_over_blocks(w, [&](std::int64_t r, int b) {
    long dot = 0;
    for (int j = 0; j < qk; ++j) dot += w.level(r, b, j) * x.q[static_cast<std::size_t>(b) * qk + j];
    return static_cast<double>(w.scale(r, b)) * x.d[static_cast<std::size_t>(b)] * static_cast<double>(dot);
  });
}

// A float dot product of length k, terms |w·x| <= max_w·max_x, in any blocked
// order: the course's dot_tolerance (2·eps·k·max_w·max_x, linear in k: the worst
// case of sequential FMAs; 1.7e-3 at k = 14336 with |w|, |x| <= 1, where one
// missing term moves a sum by ~0.25), rel 1e-5. It covers the __dp4a kernels'
// two roundings per block term as well.
inline cudalabs::Tolerance matvec_tolerance(int cols, double max_w, double max_x) {
  return cudalabs::dot_tolerance(cols, std::sqrt(max_w * max_x));
}

// How far the int8 activations move y from the fp32 reference. Rounding x_j to
// its block's grid leaves an error e_j spread evenly over [-d/2, d/2]
// (variance d²/12), so y_r moves by sum_j w_rj e_j, of standard deviation
// sigma_r = sqrt(sum_b d_b²/12 · sum_{j in b} w_rj²). The loose check allows
// 8 · max_r sigma_r (1.2 at 4096x14336 with W, x from U[-1, 1), against
// |y| ~ 40): a one-in-10^15 event per row for an honest kernel; a kernel that
// used the wrong block's scale moves y by far more. The worst case (every e_j
// at d/2 with w's sign) would allow ~27: useless as a check.
inline double activation_quantisation_allowance(const QuantMatrix& w, const QuantVector& x) {
  const auto variance = sum_over_blocks(w, [&](std::int64_t r, int b) {
    double w2 = 0;
    for (int j = 0; j < qk; ++j) {
      const double v = w.value(r, static_cast<std::int64_t>(b) * qk + j);
      w2 += v * v;
    }
    const double d = x.d[static_cast<std::size_t>(b)];
    return w2 * d * d / 12.0;
  });
  return 8.0 * std::sqrt(*std::max_element(variance.begin(), variance.end()));
}

// ---- the other kernels -------------------------------------------------------------

// y = h / sqrt(mean(h²) + eps) · g per row of `dim`.
inline std::vector<double> rmsnorm(std::span<const float> h, std::span<const float> g, std::int64_t rows, int dim, double eps) {
  std::vector<double> y(h.size());
  cudalabs::ref::parallel_for(static_cast<std::size_t>(rows), [&](std::size_t lo, std::size_t hi) {
    for (std::size_t r = lo; r < hi; ++r) {
      const float* in = &h[r * static_cast<std::size_t>(dim)];
      double ss = 0;
      for (int i = 0; i < dim; ++i) ss += static_cast<double>(in[i]) * in[i];
      const double inv = 1.0 / std::sqrt(ss / dim + eps);
      for (int i = 0; i < dim; ++i) y[r * static_cast<std::size_t>(dim) + i] = in[i] * inv * g[static_cast<std::size_t>(i)];
    }
  }, 1);
  return y;
}

// The rotary frequencies theta_i = base^(-2i/head_dim), in double, stored as
// float: the kernels and the reference use the same table.
inline std::vector<float> rope_inv_freq(double base, int head_dim) {
  std::vector<float> f(static_cast<std::size_t>(head_dim / 2));
  for (int i = 0; i < head_dim / 2; ++i) f[static_cast<std::size_t>(i)] = static_cast<float>(std::pow(base, -2.0 * i / head_dim));
  return f;
}

// x [tokens][heads][head_dim] rotated in place (pairs 2i, 2i+1) by (pos0 + t) · theta_i.
inline std::vector<double> rope(std::span<const float> x, std::span<const float> inv_freq, int tokens, int pos0, int heads,
                                int head_dim) {
  std::vector<double> y(x.size());
  const int half = head_dim / 2;
  cudalabs::ref::parallel_for(static_cast<std::size_t>(tokens) * heads, [&](std::size_t lo, std::size_t hi) {
    for (std::size_t th = lo; th < hi; ++th) {
      const double pos = pos0 + static_cast<double>(th / static_cast<std::size_t>(heads));
      for (int i = 0; i < half; ++i) {
        const std::size_t at = th * head_dim + 2 * static_cast<std::size_t>(i);
        const double a = pos * inv_freq[static_cast<std::size_t>(i)], c = std::cos(a), s = std::sin(a);
        y[at] = x[at] * c - x[at + 1] * s;
        y[at + 1] = x[at] * s + x[at + 1] * c;
      }
    }
  }, 1);
  return y;
}

// The float angle fl(pos · theta) is off by at most 2^-24 · pos (theta <= 1),
// an error that turns a pair of magnitude |x| by that much: at position 1023
// that is 6e-5·|x|, at 8191 4.9e-4·|x|, and nothing a float kernel can avoid
// (llama.cpp's and PyTorch's RoPE compute the angle in float too). sincosf (2
// ulp) and the rotation (2 roundings per output) add a few eps. An off-by-one
// position or a wrong pairing moves outputs by ~|x|.
inline cudalabs::Tolerance rope_tolerance(int max_pos, double max_abs_x) {
  return {2.0 * max_abs_x * eps32 * (max_pos + 8.0), 0.0};
}

inline std::vector<double> swiglu(std::span<const float> gate, std::span<const float> up) {
  std::vector<double> y(gate.size());
  cudalabs::ref::parallel_for(y.size(), [&](std::size_t lo, std::size_t hi) {
    for (std::size_t i = lo; i < hi; ++i) {
      const double g = gate[i];
      y[i] = g / (1.0 + std::exp(-g)) * up[i];
    }
  });
  return y;
}
// expf is within 2 ulp (4·2^-24 relative); 1 + e, the reciprocal and the two
// products round once each: 8·2^-24 in all; 16·2^-24 = 9.5e-7 allowed.
// Outputs below FLT_MIN may be flushed.
inline constexpr cudalabs::Tolerance swiglu_tolerance{1.17549435e-38, 16 * eps32};

// The first index of the largest value.
inline int argmax(std::span<const float> x) {
  return static_cast<int>(std::max_element(x.begin(), x.end()) - x.begin());
}

// One query per head against positions [0, positions) of fp16 caches
// [position][kv_heads][head_dim]. Also returns, for the tolerance, the largest
// scaled |q|·|k| sum of any score and the largest |v|.
struct AttentionRef {
  std::vector<double> o;
  double score_magnitude = 0;  // max over heads, positions of sum_d |q_d k_d| / sqrt(head_dim)
  double max_v = 0;
};
inline AttentionRef attention(std::span<const float> q, std::span<const float> k_cache, std::span<const float> v_cache,
                              int positions, int q_heads, int kv_heads, int head_dim) {
  AttentionRef out;
  out.o.assign(static_cast<std::size_t>(q_heads) * head_dim, 0.0);
  const double scale = 1.0 / std::sqrt(static_cast<double>(head_dim));
  const std::size_t row = static_cast<std::size_t>(kv_heads) * head_dim;
  std::vector<double> mags(static_cast<std::size_t>(q_heads), 0.0);
  cudalabs::ref::parallel_for(static_cast<std::size_t>(q_heads), [&](std::size_t lo, std::size_t hi) {
    for (std::size_t h = lo; h < hi; ++h) {
      const std::size_t kv = h / static_cast<std::size_t>(q_heads / kv_heads);
      std::vector<double> s(static_cast<std::size_t>(positions));
      double mx = -INFINITY;
      for (int j = 0; j < positions; ++j) {
        double dot = 0, mag = 0;
        for (int d = 0; d < head_dim; ++d) {
          const double kd = k_cache[j * row + kv * head_dim + d];
          dot += q[h * head_dim + d] * kd;
          mag += std::fabs(q[h * head_dim + d] * kd);
        }
        s[static_cast<std::size_t>(j)] = dot * scale;
        mags[h] = std::max(mags[h], mag * scale);
        mx = std::max(mx, s[static_cast<std::size_t>(j)]);
      }
      double sum = 0;
      for (auto& e : s) sum += (e = std::exp(e - mx));
      for (int j = 0; j < positions; ++j)
        for (int d = 0; d < head_dim; ++d)
          out.o[h * head_dim + d] += s[static_cast<std::size_t>(j)] / sum * v_cache[j * row + kv * head_dim + d];
    }
  }, 1);
  out.score_magnitude = *std::max_element(mags.begin(), mags.end());
  for (float v : v_cache) out.max_v = std::max(out.max_v, static_cast<double>(std::fabs(v)));
  return out;
}

// o is a weighted mean of v (weights sum to 1), so an error delta in the
// scores moves o by at most ~2·delta·max|v|. A score is a float dot of
// head_dim terms: delta <= (head_dim + 2)·eps·S, S its sum of |terms| (scaled q
// rounded once more). The sums over positions (exp weights; weighted v) are
// blocked and then combined: 64·eps·sqrt(positions) relative, the course's
// sum_tolerance. With head_dim 128, S ~ 15 and 1024 positions: 3.5e-4·max|v|;
// dropping one position of 1024 moves o by ~1e-3·|v|.
inline cudalabs::Tolerance attention_tolerance(const AttentionRef& ref, int head_dim, int positions) {
  return {ref.max_v * (2.0 * (head_dim + 2) * eps32 * ref.score_magnitude + 64.0 * eps32 * std::sqrt(positions) + 8 * eps32),
          0.0};
}

// ---- checking int8 activations -----------------------------------------------------------

// Marks a failing check with the stage it belongs to.
inline cudalabs::CheckResult labelled(cudalabs::CheckResult r, const std::string& what) {
  if (!r.passed) r.note = r.note.empty() ? what : what + ": " + r.note;
  return r;
}

// A check's numbers, plus the failures (only) of further checks: a record
// keeps the numbers of the check that says most (the kernel's own error),
// and fails if any of them fails.
inline cudalabs::CheckResult with_failures(cudalabs::CheckResult primary, std::initializer_list<cudalabs::CheckResult> more) {
  for (const auto& r : more)
    if (!r.passed) primary = cudalabs::both(primary, r);
  return primary;
}

// A kernel's int8 vector against the exact values it quantised:
//   each q within 0.501 steps of exact / scale: rounding is half a step, the
//     kernel's float value (a few roundings, ~1e-6 relative) at most 127 · 1e-6
//     = 1.3e-4 steps more;
//   each scale within 1e-5 of max|exact| / 127 (a per-row instead of per-block
//     scale, or max instead of max|.|, fails here);
//   each sum equal to the sum of the block's q.
inline cudalabs::CheckResult check_quantized(QuantVector got, std::span<const double> exact) {
  // Observed first (cudalabs/evidence.hpp): the steps expected of q are computed
  // from the scales the kernel chose, so a judge must compute them from the
  // graded program's scales.
  for (const std::string& missing : {cudalabs::observe_in_place(std::span(got.q)), cudalabs::observe_in_place(std::span(got.d)),
                                     cudalabs::observe_in_place(std::span(got.sum))})
    if (!missing.empty()) return cudalabs::missing_output(got.q.size(), missing);
  // `exact` is empty in a graded program, which keeps no reference
  // (evidence::keeps_references): its checks below record q, d and the sums and
  // compare nothing.
  const bool compared = !exact.empty();
  const std::size_t blocks = got.d.size();
  std::vector<float> steps(got.q.size());
  std::vector<double> exact_steps(got.q.size()), scale_ref(blocks), sums(blocks);
  std::vector<float> sum_got(blocks);
  for (std::size_t b = 0; b < blocks; ++b) {
    double amax = 0;
    long s = 0;
    for (int j = 0; j < qk; ++j) {
      const std::size_t i = b * qk + j;
      steps[i] = got.q[i];
      s += got.q[i];
      if (!compared) continue;
      amax = std::max(amax, std::fabs(exact[i]));
      exact_steps[i] = got.d[b] > 0 ? exact[i] / got.d[b] : 0.0;
    }
    scale_ref[b] = amax / 127.0;
    sums[b] = static_cast<double>(s);
    sum_got[b] = static_cast<float>(got.sum[b]);
  }
  return with_failures(cudalabs::check_close(steps, exact_steps, {.abs = 0.501, .rel = 0}),
                       {labelled(cudalabs::check_close(got.d, scale_ref, {.abs = 0, .rel = 1e-5}), "block scales"),
                        labelled(cudalabs::check_close(sum_got, sums, {.abs = 0, .rel = 0}), "block sums")});
}

}  // namespace lab29ref

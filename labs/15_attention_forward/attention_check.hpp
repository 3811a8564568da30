#pragma once
// How lab 15 counts the unfused pass's traffic and how closely it holds the
// results to the double reference. Course code, host only.
#include <cmath>
#include <cstdint>

#include <cudalabs/checker.hpp>

#include "softmax_check.hpp"

// Bytes the unfused pass moves through DRAM at the least: Q, K, V read and O
// written once (4·seq·d floats) plus S and P each written once and read once
// (4·seq² floats). The second term is the one FlashAttention removes.
inline double attention_nxn_bytes(std::int64_t seq) { return 4.0 * 4.0 * static_cast<double>(seq) * seq; }
inline double attention_unfused_bytes(std::int64_t seq, std::int64_t dim) {
  return 4.0 * 4.0 * static_cast<double>(seq) * dim + attention_nxn_bytes(seq);
}

// How far the weights may be from the double reference, relative, with Q and K
// in [-range, range): each score is a float dot product of d values, scaled by
// 1/sqrt(d), so off by at most 2·eps·d·range²/sqrt(d) = 2·eps·sqrt(d)·range²
// (dot_tolerance's bound); a weight exp(s - max)/sum moves by twice that (s and
// max) relative, plus the softmax's own error (lab 12). Every rounding error in
// a score grows with range² (range a power of two: exactly), and with it this
// bound: 4.9e-4 at d = 64 for lab 15's large inputs (range 16).
inline double attention_weights_rel_tolerance(std::int64_t seq, std::int64_t dim, double range = 1.0) {
  constexpr double eps = 5.96e-8;  // 2^-24
  return 4.0 * eps * std::sqrt(static_cast<double>(dim)) * range * range + softmax_rel_tolerance(seq);
}

// Weights below the smallest normal float (common with large inputs) are held
// to softmax_abs_tolerance instead.
inline cudalabs::Tolerance attention_weights_tolerance(std::int64_t seq, std::int64_t dim, double range = 1.0) {
  return {.abs = softmax_abs_tolerance, .rel = attention_weights_rel_tolerance(seq, dim, range)};
}

// How far each output may be from the double reference, V in [-1, 1):
// O[i] = sum_j P[i][j]·V[j] with sum_j P[i][j] = 1, so relative errors of the
// weights move it by at most that relative error (times |V| < 1); the float sum
// of seq terms, each at most max_p (the largest weight), adds 2·eps·seq·max_p
// (dot_tolerance with magnitude² = max_p). At seq = 4096, d = 64: ~1.3e-5, while
// one dropped or misplaced term moves an output by ~1/seq·|V| ≈ 1e-4.
inline cudalabs::Tolerance attention_out_tolerance(std::int64_t seq, std::int64_t dim, double max_p,
                                                   double range = 1.0) {
  constexpr double eps = 5.96e-8;
  return {.abs = attention_weights_rel_tolerance(seq, dim, range) + 2.0 * eps * static_cast<double>(seq) * max_p,
          .rel = 1e-5};
}

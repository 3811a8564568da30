#pragma once
// How closely lab 12 holds a softmax to the double reference
// (cudalabs::ref::softmax_rows); labs 15 and 20 use it too. Course code in
// labs/shared/: main.cu includes it, never a kernel file.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>

// Relative tolerance of one softmax output against the double reference, with
// inputs in [-10, 10):
//   x - max rounded to float: half an ulp of a difference below 20, 2^-20 ≈ 9.5e-7,
//     is an error of 9.5e-7 in the exponent, so 9.5e-7 relative in exp;
//   expf: at most 2 ulp, 2.4e-7; the final multiply by 1/sum: 2 roundings, 1.2e-7;
//   the float sum of the row: each thread adds its cols/threads terms in order,
//     then a tree; with terms of random size the rounding errors add like a random
//     walk, ~eps·sqrt(terms); online and split_rows add one rescaling (another
//     9.5e-7 at most) per level of their combine tree, 8 levels for 256 threads.
// Together ~1e-5 below 16384 columns; beyond, the sum's random walk grows with
// sqrt(cols). A wrong max or a dropped element moves outputs by far more: a
// missed max of 10 vs 9.9 changes every output's denominator by ~10%.
// The same bound holds for lab 12's other inputs: with --inputs large every
// x - max is exact (x and max of one sign, within a factor 2 of each other:
// Sterbenz's lemma), and masked entries add exp(-inf) = 0 exactly.
inline double softmax_rel_tolerance(std::int64_t cols) {
  return 1e-5 * std::max(1.0, std::sqrt(static_cast<double>(cols) / 16384.0));
}

// Outputs below the smallest normal float, FLT_MIN ≈ 1.2e-38 (exp(x - max) below
// e^-87.3, common with --inputs large), are subnormal, with fewer bits than the
// relative tolerance assumes, or flushed to 0 by code built with -ftz: they may
// be off by FLT_MIN. Masked entries must come out as 0 within it.
inline constexpr double softmax_abs_tolerance = FLT_MIN;

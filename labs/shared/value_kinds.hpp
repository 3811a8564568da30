#pragma once
// Inputs beyond the comfortable range, for the labs whose contract defines the
// result there: one generator per kind, shared by every lab that draws it.
// Each is seeded like cudalabs::random_floats (counter-based: the same seed
// gives the same values on every machine), and each lab's --inputs flag says
// which of them it draws and what its reference and check do with them.
//
//   with_specials        uniform values, about a quarter of them replaced by
//                        IEEE specials: ±Inf, quiet NaNs with payloads, ±0,
//                        subnormals, ±FLT_MAX, tiny and huge normals; the last
//                        elements are every special in turn (labs 02, 21, 23)
//   uniform_with         uniform values and one chosen value at one index: a
//                        +Inf at the end of a sum, a NaN somewhere in it (04, 06,
//                        07, 26)
//   nonpositive_floats   multiples of 1/8 in [-1, 0], a ninth of them ±0:
//                        nothing is positive (26's select_positive keeps none)
//   positive_floats      multiples of 1/4 in (0, 1]: everything is positive
//                        (26's select_positive keeps all)
//   out_of_range_floats  samples for a half-open range [lo, hi): most inside it
//                        on its 2^24-step grid, its two edges, and a quarter
//                        outside: hi itself, just past either end, ±Inf, NaN,
//                        huge values (24's float histogram ignores them)
//   scaled_floats        uniform values times a power of two drawn from a range:
//                        magnitudes far from 1 (2^100, 2^-100) reached without a
//                        rounding, so a scale-invariant result scales exactly and
//                        its tolerance with it (labs 05, 18, 22)
//   one_value            one value repeated everywhere, with 20 significant bits
//                        (more than FP16's 11 or BF16's 8) and a drawn sign and
//                        exponent: a weighted average with power-of-two weights
//                        keeps it exactly (22's constant field)
//
// None of them ever holds the bits 0xFFFFFFFF, the NaN that DeviceBuffer::poison
// leaves in an unwritten element, so an output that must carry one of these
// NaNs still tells a written element from an unwritten one (check_close_ieee,
// check_bits).
//
// Host code of the course, on every main.cu's include path (labs/meson.build),
// never a kernel file's; plain C++, so the CPU tests check each kind
// (tests/unit/test_value_kinds.cpp).
#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <cudalabs/cli.hpp>
#include <cudalabs/random.hpp>
#include <cudalabs/reference.hpp>

namespace value_kinds {

// A lab's --inputs flag: its kinds, the first the default; a value not among
// them is a usage error naming them (exit 2).
inline cudalabs::ExtraFlag inputs_flag_of(std::string help, std::vector<std::string> kinds) {
  std::string first = kinds.front();
  return {.name = "inputs",
          .help = std::move(help),
          .kind = cudalabs::ExtraFlag::Kind::text,
          .default_value = std::move(first),
          .choices = std::move(kinds)};
}

// The vector adds' (labs 01, 02): uniform, or specials.
inline cudalabs::ExtraFlag vector_add_inputs_flag() {
  return inputs_flag_of("uniform: a, b in [-100, 100); specials: a quarter of them ±Inf, NaN, ±0, subnormals, "
                        "±FLT_MAX (sums that overflow), the rest uniform",
                        {"uniform", "specials"});
}

// Every special value with_specials draws from, as bit patterns.
inline constexpr std::array<std::uint32_t, 20> special_bits = {
    0x7F800000u,  // +Inf
    0xFF800000u,  // -Inf
    0x7FC00000u,  // the default quiet NaN
    0x7FC0BEEFu,  // a quiet NaN with a payload: a plain copy keeps it, arithmetic does not
    0xFFC00001u,  // a negative quiet NaN with a payload
    0x7FFFFFFEu,  // the largest payload short of 0x7FFFFFFF (the GPU's default NaN)
    0x00000000u,  // +0
    0x80000000u,  // -0: x + 0.0f turns it into +0
    0x00000001u,  // the smallest subnormal, 2^-149: a flush to zero loses it
    0x80000001u,  // its negative
    0x007FFFFFu,  // the largest subnormal
    0x80400000u,  // -2^-127, a subnormal
    0x00800000u,  // FLT_MIN, the smallest normal
    0x7F7FFFFFu,  // FLT_MAX: FLT_MAX + FLT_MAX overflows to +Inf
    0xFF7FFFFFu,  // -FLT_MAX
    0x7E967699u,  // 1e38
    0xF149F2CAu,  // -1e30
    0x0DA24260u,  // 1e-30
    0x8DA24260u,  // -1e-30
    0x3F800001u,  // 1 + 2^-23: one ulp above 1
};

inline float from_bits(std::uint32_t b) { return std::bit_cast<float>(b); }

// n values uniform in [lo, hi), about a quarter of them (drawn) replaced by a
// drawn special; when n holds twice the table, its last special_bits.size()
// elements are the table in order, so every special reaches every kernel's
// tail path too.
inline std::vector<float> with_specials(std::size_t n, std::uint64_t seed, float lo, float hi) {
  std::vector<float> x = cudalabs::random_floats(n, cudalabs::mix_seed(seed, 1), lo, hi);
  const auto which = cudalabs::random_floats(n, cudalabs::mix_seed(seed, 2), 0.0f, 1.0f);
  const auto pick = cudalabs::random_floats(n, cudalabs::mix_seed(seed, 3), 0.0f, 1.0f);
  constexpr std::size_t kinds = special_bits.size();
  for (std::size_t i = 0; i < n; ++i)
    if (which[i] < 0.25f)
      x[i] = from_bits(special_bits[std::min(kinds - 1, static_cast<std::size_t>(pick[i] * kinds))]);
  if (n >= 2 * kinds)
    for (std::size_t k = 0; k < kinds; ++k) x[n - kinds + k] = from_bits(special_bits[k]);
  return x;
}

// The inputs of the uniform/specials --inputs flag: uniform in [lo, hi), or
// with specials mixed in (with_specials).
inline std::vector<float> uniform_or_specials(bool specials, std::size_t n, std::uint64_t seed, float lo, float hi) {
  return specials ? with_specials(n, seed, lo, hi) : cudalabs::random_floats(n, seed, lo, hi);
}

// The reference of c = a + b: the exact sum in double, and rounded to float
// where `rounded` (with specials, always): exactly what one float addition
// gives, overflow to ±Inf and NaN included (double holds the sum of two floats
// exactly, so the one rounding is the float addition's own).
inline std::vector<double> vector_add_reference(std::span<const float> a, std::span<const float> b, bool rounded) {
  std::vector<double> expected = cudalabs::ref::vector_add(a, b);
  if (rounded)
    for (double& e : expected) e = static_cast<float>(e);
  return expected;
}

// An index in [0, n) drawn from the seed (n >= 1).
inline std::size_t drawn_index(std::size_t n, std::uint64_t seed) {
  return static_cast<std::size_t>(cudalabs::mix_seed(seed, 7) % n);
}

// n values uniform in [lo, hi) with x[index] = value (n >= 1, index < n).
inline std::vector<float> uniform_with(std::size_t n, std::uint64_t seed, float lo, float hi, std::size_t index,
                                       float value) {
  std::vector<float> x = cudalabs::random_floats(n, cudalabs::mix_seed(seed, 1), lo, hi);
  x.at(index) = value;
  return x;
}

// n values k·step, k in -steps..0 (drawn), the zeros half +0 and half -0.
// None is positive: a selection of x > 0 keeps nothing, and a kernel that tests
// x >= 0, or the sign bit alone, keeps something. On a grid, so a sum of them
// is exact in float, in any order, while below 2^24·step in magnitude (every
// partial sum of values of one sign is below the whole): with the defaults,
// multiples of 1/8 in [-1, 0], up to n = 2^22.
inline std::vector<float> nonpositive_floats(std::size_t n, std::uint64_t seed, int steps = 8, float step = 0.125f) {
  std::vector<float> x = cudalabs::random_small_ints(n, cudalabs::mix_seed(seed, 1), -steps, 0);
  const auto sign = cudalabs::random_floats(n, cudalabs::mix_seed(seed, 2), 0.0f, 1.0f);
  for (std::size_t i = 0; i < n; ++i) x[i] = x[i] == 0.0f ? (sign[i] < 0.5f ? 0.0f : -0.0f) : x[i] * step;
  return x;
}

// n values k·step, k in 1..steps (drawn): every one positive, so a selection of
// x > 0 keeps them all. On a grid, so a sum of them is exact in float, in any
// order, while n·steps <= 2^24 (every partial sum is at most n·steps·step, a
// whole number of steps): with the defaults, multiples of 1/4 in (0, 1], up to
// n = 2^22.
inline std::vector<float> positive_floats(std::size_t n, std::uint64_t seed, int steps = 4, float step = 0.25f) {
  std::vector<float> x = cudalabs::random_small_ints(n, cudalabs::mix_seed(seed, 1), 1, steps);
  for (float& v : x) v *= step;
  return x;
}

// Samples for the half-open range [lo, hi) whose in-range values sit on its
// grid of 2^24 steps (lo + (hi - lo)·k/2^24, as random_floats draws them): a
// quarter of them (drawn) replaced by an edge or an outside value below. Each
// outside value is outside by any formula: hi itself (the range is open there),
// the next float past hi, one grid step below lo, ±Inf, NaN, ±1e30, and an
// edge is inside by any formula: lo itself, and the last grid step below hi.
inline std::vector<float> out_of_range_floats(std::size_t n, std::uint64_t seed, float lo, float hi) {
  const float step = (hi - lo) / 16777216.0f;  // 2^-24 of the range: exact for a power-of-two width
  const std::array<float, 10> edges_and_outside = {
      hi,
      std::nextafter(hi, std::numeric_limits<float>::infinity()),
      lo - step,
      std::numeric_limits<float>::infinity(),
      -std::numeric_limits<float>::infinity(),
      from_bits(0x7FC00000u),
      1e30f,
      -1e30f,
      lo,
      hi - step,
  };
  std::vector<float> x = cudalabs::random_floats(n, cudalabs::mix_seed(seed, 1), lo, hi);
  const auto which = cudalabs::random_floats(n, cudalabs::mix_seed(seed, 2), 0.0f, 1.0f);
  const auto pick = cudalabs::random_floats(n, cudalabs::mix_seed(seed, 3), 0.0f, 1.0f);
  constexpr std::size_t kinds = edges_and_outside.size();
  for (std::size_t i = 0; i < n; ++i)
    if (which[i] < 0.25f) x[i] = edges_and_outside[std::min(kinds - 1, static_cast<std::size_t>(pick[i] * kinds))];
  return x;
}

// A whole number in [lo, hi] drawn from the seed (lo <= hi).
inline int drawn_exponent(std::uint64_t seed, int lo, int hi) {
  return lo + static_cast<int>(cudalabs::mix_seed(seed, 11) % static_cast<std::uint64_t>(hi - lo + 1));
}

// The exponent ranges of an input's --inputs large and tiny: 2^e with e drawn
// in [large_lo, large_hi] or [tiny_lo, tiny_hi] (each lab says why its ranges).
struct KindExponents {
  int large_lo, large_hi, tiny_lo, tiny_hi;
};

// The exponent of --inputs `kind` ("random", "large" or "tiny") from the
// seed: 0 for random (no scaling).
inline int kind_exponent(const std::string& kind, std::uint64_t seed, KindExponents ranges) {
  if (kind == "random") return 0;
  return kind == "large" ? drawn_exponent(seed, ranges.large_lo, ranges.large_hi)
                         : drawn_exponent(seed, ranges.tiny_lo, ranges.tiny_hi);
}

// n values uniform in [lo, hi) (random_floats: multiples of (hi - lo)/2^24)
// times 2^exponent. A power of two scales a float exactly while the result
// stays normal: with the default [-1, 1) every nonzero value is at least 2^-23,
// so any exponent in [-103, 127] is exact.
inline std::vector<float> scaled_floats(std::size_t n, std::uint64_t seed, int exponent, float lo = -1.0f,
                                        float hi = 1.0f) {
  std::vector<float> x = cudalabs::random_floats(n, cudalabs::mix_seed(seed, 1), lo, hi);
  for (float& v : x) v = std::ldexp(v, exponent);
  return x;
}

// The value one_value repeats: an odd whole number in [2^19, 2^20) (20
// significant bits) times 2^e, |value| in [2^-100, 2^100), the sign drawn.
// Small multiples of it (up to 8x) and power-of-two fractions of it are exact
// in float, so any order of a stencil's sums of it, minus its multiples, is exact.
inline float one_value_of(std::uint64_t seed) {
  const std::uint64_t bits = cudalabs::mix_seed(seed, 13);
  const auto odd = static_cast<float>((std::uint64_t{1} << 19) | (bits & 0x7FFFFu) | 1u);
  const int e = drawn_exponent(seed, -119, 80);  // times 2^19..2^20: |value| in [2^-100, 2^100)
  return ((bits >> 20) & 1u ? -1.0f : 1.0f) * std::ldexp(odd, e);
}

// n copies of one_value_of(seed).
inline std::vector<float> one_value(std::size_t n, std::uint64_t seed) {
  return std::vector<float>(n, one_value_of(seed));
}

}  // namespace value_kinds

// labs/shared/value_kinds.hpp: each kind of input is what it says.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <set>

#include "value_kinds.hpp"

namespace {

std::uint32_t bits(float x) { return std::bit_cast<std::uint32_t>(x); }

TEST(ValueKinds, SpecialsTableHoldsWhatItsCommentsSay) {
  using value_kinds::from_bits;
  const auto& t = value_kinds::special_bits;
  EXPECT_EQ(from_bits(t[0]), std::numeric_limits<float>::infinity());
  EXPECT_EQ(from_bits(t[1]), -std::numeric_limits<float>::infinity());
  for (int i : {2, 3, 4, 5}) EXPECT_TRUE(std::isnan(from_bits(t[i]))) << i;
  EXPECT_TRUE(std::signbit(from_bits(t[7])) && from_bits(t[7]) == 0.0f);
  for (int i : {8, 9, 10, 11}) EXPECT_EQ(std::fpclassify(from_bits(t[i])), FP_SUBNORMAL) << i;
  EXPECT_EQ(from_bits(t[12]), std::numeric_limits<float>::min());
  EXPECT_EQ(from_bits(t[13]), std::numeric_limits<float>::max());
  EXPECT_EQ(from_bits(t[15]), 1e38f);
  EXPECT_EQ(from_bits(t[16]), -1e30f);
  EXPECT_EQ(from_bits(t[17]), 1e-30f);
  EXPECT_EQ(from_bits(t[19]), std::nextafter(1.0f, 2.0f));
  // Never the poison pattern, and all distinct.
  EXPECT_EQ(std::count(t.begin(), t.end(), 0xFFFFFFFFu), 0);
  EXPECT_EQ(std::set<std::uint32_t>(t.begin(), t.end()).size(), t.size());
}

TEST(ValueKinds, WithSpecialsMixesUniformValuesAndEverySpecial) {
  const std::size_t n = 100000;
  const auto x = value_kinds::with_specials(n, 5, -100.0f, 100.0f);
  ASSERT_EQ(x.size(), n);
  std::set<std::uint32_t> specials_seen;
  std::size_t in_range = 0;
  for (float v : x) {
    const auto b = bits(v);
    ASSERT_NE(b, 0xFFFFFFFFu);
    if (std::find(value_kinds::special_bits.begin(), value_kinds::special_bits.end(), b) !=
        value_kinds::special_bits.end())
      specials_seen.insert(b);
    else if (v >= -100.0f && v < 100.0f)
      ++in_range;
    else
      ADD_FAILURE() << "neither uniform nor special: " << v;
  }
  EXPECT_EQ(specials_seen.size(), value_kinds::special_bits.size());
  // About three quarters uniform (plus the few uniform draws that hit a special's value).
  EXPECT_GT(in_range, n * 70 / 100);
  EXPECT_LT(in_range, n * 80 / 100);
  // The tail is the table in order.
  for (std::size_t k = 0; k < value_kinds::special_bits.size(); ++k)
    EXPECT_EQ(bits(x[n - value_kinds::special_bits.size() + k]), value_kinds::special_bits[k]);
  // Seeded: the same seed, the same bits; another seed, other values.
  const auto again = value_kinds::with_specials(n, 5, -100.0f, 100.0f), other = value_kinds::with_specials(n, 6, -100.0f, 100.0f);
  EXPECT_TRUE(std::equal(x.begin(), x.end(), again.begin(), [](float a, float b) { return bits(a) == bits(b); }));
  EXPECT_FALSE(std::equal(x.begin(), x.end(), other.begin(), [](float a, float b) { return bits(a) == bits(b); }));
}

TEST(ValueKinds, UniformWithPlacesOneValue) {
  const auto x = value_kinds::uniform_with(1000, 3, -1.0f, 1.0f, 999, std::numeric_limits<float>::infinity());
  EXPECT_EQ(x[999], std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::all_of(x.begin(), x.end() - 1, [](float v) { return v >= -1.0f && v < 1.0f; }));
  const std::size_t at = value_kinds::drawn_index(1000, 3);
  EXPECT_LT(at, 1000u);
  const auto y = value_kinds::uniform_with(1000, 3, -1.0f, 1.0f, at, NAN);
  EXPECT_EQ(std::count_if(y.begin(), y.end(), [](float v) { return std::isnan(v); }), 1);
  EXPECT_TRUE(std::isnan(y[at]));
  EXPECT_EQ(value_kinds::drawn_index(1, 9), 0u);
}

TEST(ValueKinds, NonpositiveHoldsNothingPositiveAndBothZeros) {
  const auto x = value_kinds::nonpositive_floats(10000, 4);
  EXPECT_TRUE(std::none_of(x.begin(), x.end(), [](float v) { return v > 0.0f || std::isnan(v); }));
  EXPECT_TRUE(std::all_of(x.begin(), x.end(), [](float v) { return v >= -1.0f; }));
  const auto plus_zeros = std::count_if(x.begin(), x.end(), [](float v) { return bits(v) == 0u; });
  const auto minus_zeros = std::count_if(x.begin(), x.end(), [](float v) { return bits(v) == 0x80000000u; });
  EXPECT_GT(plus_zeros, 400);
  EXPECT_GT(minus_zeros, 400);
  EXPECT_GT(std::count_if(x.begin(), x.end(), [](float v) { return v < -0.5f; }), 3000);
  EXPECT_TRUE(std::all_of(x.begin(), x.end(), [](float v) { return v * 8.0f == std::floor(v * 8.0f); }));
  // Whole numbers -3..0 (lab 25's floats).
  const auto w = value_kinds::nonpositive_floats(10000, 4, 3, 1.0f);
  for (float v : {-3.0f, -2.0f, -1.0f}) EXPECT_GT(std::count(w.begin(), w.end(), v), 2000) << v;
  EXPECT_TRUE(std::all_of(w.begin(), w.end(), [](float v) { return v >= -3.0f && v <= 0.0f && v == std::floor(v); }));
  EXPECT_GT(std::count_if(w.begin(), w.end(), [](float v) { return bits(v) == 0x80000000u; }), 800);
}

TEST(ValueKinds, PositiveHoldsOnlyPositiveValuesOnTheGrid) {
  const auto x = value_kinds::positive_floats(10000, 4);
  EXPECT_TRUE(std::all_of(x.begin(), x.end(), [](float v) { return v > 0.0f && v <= 1.0f; }));
  for (float v : {0.25f, 0.5f, 0.75f, 1.0f}) EXPECT_GT(std::count(x.begin(), x.end(), v), 2000) << v;
  EXPECT_NE(x, value_kinds::positive_floats(10000, 5));
  // Whole numbers 1..3.
  const auto w = value_kinds::positive_floats(10000, 4, 3, 1.0f);
  for (float v : {1.0f, 2.0f, 3.0f}) EXPECT_GT(std::count(w.begin(), w.end(), v), 2800) << v;
  EXPECT_TRUE(std::all_of(w.begin(), w.end(), [](float v) { return v >= 1.0f && v <= 3.0f; }));
}

TEST(ValueKinds, OutOfRangeSamplesAreOutsideOrOnTheGrid) {
  const float lo = -4.0f, hi = 4.0f, step = 8.0f / 16777216.0f;
  const auto x = value_kinds::out_of_range_floats(100000, 8, lo, hi);
  std::size_t outside = 0, nan = 0, at_hi = 0, at_lo = 0, last_step = 0;
  for (float v : x) {
    ASSERT_NE(bits(v), 0xFFFFFFFFu);
    if (std::isnan(v)) ++nan;
    if (v == hi) ++at_hi;
    if (v == lo) ++at_lo;
    if (v == hi - step) ++last_step;
    if (!(v >= lo && v < hi)) {
      ++outside;
      continue;
    }
    // Inside: on the grid, so (x - lo) * 128 is exact and its bin the same by any formula.
    const float k = (v - lo) / step;
    EXPECT_EQ(k, std::floor(k)) << v;
  }
  EXPECT_GT(outside, 100000u * 18 / 100);  // 8 of the 10 replacement values, on a quarter of the samples: 20%
  EXPECT_LT(outside, 100000u * 22 / 100);
  EXPECT_GT(nan, 1000u);
  EXPECT_GT(at_hi, 1000u);
  EXPECT_GT(at_lo, 1000u);
  EXPECT_GT(last_step, 1000u);
}

TEST(ValueKinds, DrawnExponentCoversItsRangeAndNothingElse) {
  std::set<int> seen;
  for (std::uint64_t seed = 0; seed < 2000; ++seed) {
    const int e = value_kinds::drawn_exponent(seed, 64, 120);
    EXPECT_GE(e, 64);
    EXPECT_LE(e, 120);
    seen.insert(e);
  }
  EXPECT_EQ(seen.size(), 57u);  // every exponent of the range, both ends included
  EXPECT_EQ(value_kinds::drawn_exponent(3, -7, -7), -7);
}

TEST(ValueKinds, ScaledFloatsAreUniformValuesTimesAnExactPowerOfTwo) {
  const std::size_t n = 50000;
  for (const int e : {120, 64, -64, -100, -103}) {
    const auto x = value_kinds::scaled_floats(n, 9, e);
    const auto base = cudalabs::random_floats(n, cudalabs::mix_seed(9, 1));
    ASSERT_EQ(x.size(), n);
    float largest = 0;
    for (std::size_t i = 0; i < n; ++i) {
      ASSERT_EQ(std::ldexp(x[i], -e), base[i]) << "e = " << e << ", i = " << i;  // scaled back: the same value
      ASSERT_NE(std::fpclassify(x[i]), FP_SUBNORMAL) << "e = " << e << ", i = " << i;
      ASSERT_TRUE(std::isfinite(x[i]));
      largest = std::max(largest, std::fabs(x[i]));
    }
    // The magnitudes are what the kind says: up to 2^e, most within 2^(e-4) of it.
    EXPECT_LE(largest, std::ldexp(1.0f, e));
    EXPECT_GE(largest, std::ldexp(1.0f, e - 1));
  }
  EXPECT_EQ(value_kinds::scaled_floats(100, 9, 70), value_kinds::scaled_floats(100, 9, 70));
}

TEST(ValueKinds, OneValueRepeatsOneValueThatStencilSumsKeepExactly) {
  std::set<std::uint32_t> values;
  int negative = 0;
  for (std::uint64_t seed = 0; seed < 500; ++seed) {
    const auto x = value_kinds::one_value(37, seed);
    ASSERT_EQ(x.size(), 37u);
    const float c = x[0];
    for (float v : x) ASSERT_EQ(bits(v), bits(c));
    values.insert(bits(c));
    negative += std::signbit(c);
    // |c| in [2^-100, 2^100), with exactly 20 significant bits (an odd 20-bit integer times 2^e).
    ASSERT_GE(std::fabs(c), std::ldexp(1.0f, -100)) << c;
    ASSERT_LT(std::fabs(c), std::ldexp(1.0f, 100)) << c;
    int e = 0;
    const double mantissa = std::frexp(static_cast<double>(std::fabs(c)), &e);  // in [0.5, 1)
    const double odd = std::ldexp(mantissa, 20);
    ASSERT_EQ(odd, std::floor(odd)) << c;
    ASSERT_EQ(std::fmod(odd, 2.0), 1.0) << c;
    // Not representable in FP16 or BF16 precision: 20 significant bits.
    ASSERT_NE(static_cast<float>(std::ldexp(std::round(std::ldexp(mantissa, 11)), e - 11)), std::fabs(c));
    // A 2D and a 3D Jacobi step of it, in float, in two summation orders: exactly c.
    const float r = 0.125f;
    const float four = ((c + c) + c) + c, six = ((c + c) + (c + c)) + (c + c);
    EXPECT_EQ(c + r * (four - 4.0f * c), c);
    EXPECT_EQ(c + r * (six - 6.0f * c), c);
    EXPECT_EQ(0.5f * c + r * four, c);
    EXPECT_EQ(0.25f * c + r * six, c);
  }
  EXPECT_GT(values.size(), 490u);  // a new value for (almost) every seed
  EXPECT_GT(negative, 200);
  EXPECT_LT(negative, 300);
}

}  // namespace

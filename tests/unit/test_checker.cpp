// The checker must catch every kind of wrong output a kernel can produce.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#include "cudalabs/checker.hpp"
#include "cudalabs/random.hpp"

using namespace cudalabs;

namespace {
std::vector<double> to_double(const std::vector<float>& v) { return {v.begin(), v.end()}; }
}  // namespace

TEST(Checker, IdenticalOutputPasses) {
  auto x = random_floats(1000, 7);
  auto r = check_close(x, to_double(x), {});
  EXPECT_TRUE(r.passed);
  EXPECT_EQ(r.bad, 0u);
  EXPECT_EQ(r.max_abs_err, 0.0);
  EXPECT_EQ(r.summary(), "ok");
}

TEST(Checker, NanNeverPasses) {
  auto x = random_floats(100, 1);
  auto got = x;
  got[37] = std::numeric_limits<float>::quiet_NaN();
  auto r = check_close(got, to_double(x), {.abs = 1e30, .rel = 1e30});  // even with a huge tolerance
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.bad, 1u);
  ASSERT_EQ(r.first_bad.size(), 1u);
  EXPECT_EQ(r.first_bad[0].index, 37u);
}

TEST(Checker, InfNeverPasses) {
  auto x = random_floats(10, 2);
  auto got = x;
  got[0] = std::numeric_limits<float>::infinity();
  EXPECT_FALSE(check_close(got, to_double(x), {.abs = 1e30, .rel = 1e30}).passed);
}

TEST(Checker, PoisonedUnwrittenTailFails) {
  // A kernel whose grid misses the last partial block leaves the poison there.
  auto x = random_floats(257, 3);
  auto got = x;
  for (std::size_t i = 256; i < got.size(); ++i) got[i] = std::nanf("");
  auto r = check_close(got, to_double(x), {});
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.bad, 1u);
  EXPECT_EQ(r.first_bad[0].index, 256u);
}

TEST(Checker, OffByOneIndexFails) {
  auto x = random_floats(1000, 4);
  std::vector<float> got(x.size());
  for (std::size_t i = 0; i + 1 < x.size(); ++i) got[i] = x[i + 1];  // c[i] = a[i+1]
  got.back() = x.back();
  auto r = check_close(got, to_double(x), {});
  EXPECT_FALSE(r.passed);
  EXPECT_GT(r.bad, 900u);
  EXPECT_EQ(r.first_bad.size(), 5u);  // only the first few are kept
  EXPECT_GT(r.rel_l2_err, 0.5);
}

TEST(Checker, ToleranceIsAbsPlusRelative) {
  std::vector<float> got = {1.0f + 1e-3f, 100.0f + 0.05f};
  std::vector<double> ref = {1.0, 100.0};
  EXPECT_TRUE(check_close(got, ref, {.abs = 2e-3, .rel = 0}).passed == false);  // 0.05 > 2e-3
  EXPECT_TRUE(check_close(got, ref, {.abs = 2e-3, .rel = 1e-3}).passed);          // 0.05 <= 2e-3 + 0.1
  EXPECT_FALSE(check_close(got, ref, {.abs = 0, .rel = 1e-4}).passed);
}

TEST(Checker, SizeMismatchFails) {
  std::vector<float> got(10, 1.5f);
  std::vector<double> ref(11, 1.5);
  auto r = check_close(got, ref, {});
  EXPECT_FALSE(r.passed);
  EXPECT_NE(r.summary().find("size mismatch"), std::string::npos);
}

TEST(Checker, EmptyOutputFails) {
  std::vector<float> got;
  std::vector<double> ref;
  EXPECT_FALSE(check_close(got, ref, {}).passed);
}

TEST(Checker, RelativeL2Error) {
  std::vector<float> got = {3.0f, 4.0f};
  std::vector<double> ref = {3.0, 0.0};  // diff (0,4), ref norm 3
  auto r = check_close(got, ref, {.abs = 10, .rel = 0});
  EXPECT_NEAR(r.rel_l2_err, 4.0 / 3.0, 1e-12);
  EXPECT_DOUBLE_EQ(r.max_abs_err, 4.0);
}

TEST(Checker, BothFailsWhenEitherFails) {
  std::vector<float> ok = {1.0f}, bad = {2.0f};
  std::vector<double> ref = {1.0};
  EXPECT_TRUE(both(check_close(ok, ref, {}), check_close(ok, ref, {})).passed);
  EXPECT_FALSE(both(check_close(ok, ref, {}), check_close(bad, ref, {})).passed);
  EXPECT_FALSE(both(check_close(bad, ref, {}), check_close(ok, ref, {})).passed);
}

TEST(Checker, SumToleranceCatchesADroppedElement) {
  // A GPU-style float sum of 2^20 random values passes; with one element
  // missing it must fail.
  const std::size_t n = 1 << 20;
  auto x = random_floats(n, 5);
  double exact = 0;
  for (float v : x) exact += v;
  // The order of a GPU reduction at its worst: each "thread" adds 256 elements
  // in sequence, then the 4096 partials are added in sequence (like atomicAdd).
  float f = 0;
  for (std::size_t t = 0; t < n; t += 256) {
    float partial = 0;
    for (std::size_t i = t; i < t + 256; ++i) partial += x[i];
    f += partial;
  }
  const double float_sum = f;
  auto tol = sum_tolerance(n);
  std::vector<double> ref = {exact};
  EXPECT_TRUE(check_close(std::vector<float>{static_cast<float>(float_sum)}, ref, tol).passed)
      << "tolerance too tight for a plain float loop: err " << std::fabs(float_sum - exact) << " tol " << tol.abs;
  // Drop the largest-magnitude element: the error becomes ~1, far above the tolerance.
  std::size_t big = 0;
  for (std::size_t i = 0; i < n; ++i)
    if (std::fabs(x[i]) > std::fabs(x[big])) big = i;
  EXPECT_FALSE(check_close(std::vector<float>{static_cast<float>(exact - x[big])}, ref, tol).passed);
}

TEST(Checker, DotToleranceGrowsWithK) {
  EXPECT_GT(dot_tolerance(4096).abs, dot_tolerance(64).abs);
  EXPECT_LT(dot_tolerance(4096).abs, 1e-3);  // a wrong index moves an output by ~1: still caught
}

TEST(CheckClose, LargeOutputsAreComparedInParallelWithTheSameVerdict) {
  // 3 × 2^20 + 7 elements: several slices; bad elements in the first and last slice.
  const std::size_t n = 3 * (std::size_t{1} << 20) + 7;
  std::vector<float> got(n), expected(n);
  for (std::size_t i = 0; i < n; ++i) got[i] = expected[i] = static_cast<float>(i % 1000) * 0.5f - 7.0f;
  got[5] += 1.0f;
  got[n - 2] = NAN;
  const CheckResult r = check_close(got, expected, {.abs = 0, .rel = 0});
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.count, n);
  EXPECT_EQ(r.bad, 2u);
  ASSERT_EQ(r.first_bad.size(), 2u);
  EXPECT_EQ(r.first_bad[0].index, 5u);
  EXPECT_EQ(r.first_bad[1].index, n - 2);
  EXPECT_TRUE(std::isinf(r.max_abs_err));
  got[n - 2] = expected[n - 2];
  got[5] = expected[5];
  EXPECT_TRUE(check_close(got, expected, {.abs = 0, .rel = 0}).passed);
}

TEST(CheckerIeee, SpecialReferencesMustBeMatched) {
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<double> expected = {1.0, INFINITY, -INFINITY, NAN, 2.5};
  const std::vector<float> right = {1.0f, inf, -inf, std::nanf(""), 2.5f};
  EXPECT_TRUE(check_close_ieee(right, expected, {.abs = 0, .rel = 6e-8}).passed);
  // The GPU's default NaN (0x7FFFFFFF) is a NaN like any other.
  std::vector<float> gpu_nan = right;
  gpu_nan[3] = std::bit_cast<float>(0x7FFFFFFFu);
  EXPECT_TRUE(check_close_ieee(gpu_nan, expected, {.abs = 0, .rel = 6e-8}).passed);
  // The wrong infinity, a finite value for an infinity, a number for a NaN.
  for (auto [i, v] : {std::pair{1, -inf}, {2, -3.4e38f}, {3, 0.0f}}) {
    std::vector<float> got = right;
    got[i] = v;
    const CheckResult r = check_close_ieee(got, expected, {.abs = 1e30, .rel = 1e30});
    EXPECT_FALSE(r.passed) << i;
    ASSERT_EQ(r.first_bad.size(), 1u);
    EXPECT_EQ(r.first_bad[0].index, static_cast<std::size_t>(i));
  }
  // An unwritten element (the poison's bits) fails even where a NaN is expected.
  std::vector<float> unwritten = right;
  unwritten[3] = std::bit_cast<float>(0xFFFFFFFFu);
  EXPECT_FALSE(check_close_ieee(unwritten, expected, {}).passed);
  // And a non-finite output where the reference is finite fails as in check_close.
  std::vector<float> spurious = right;
  spurious[4] = inf;
  EXPECT_FALSE(check_close_ieee(spurious, expected, {.abs = 1e30, .rel = 1e30}).passed);
}

TEST(CheckerBits, ACopyMustKeepEveryBit) {
  const std::vector<float> in = {std::bit_cast<float>(0x7FC0BEEFu), -0.0f, std::bit_cast<float>(0x00000001u), 1.5f};
  EXPECT_TRUE(check_bits(in, in).passed);
  // What arithmetic does to a "copy": a NaN's payload dropped, -0 made +0, a subnormal flushed.
  for (auto [i, v] : {std::pair{0, std::bit_cast<float>(0x7FFFFFFFu)}, {1, 0.0f}, {2, 0.0f}}) {
    std::vector<float> got = in;
    got[i] = v;
    const CheckResult r = check_bits(got, in);
    EXPECT_FALSE(r.passed) << i;
    EXPECT_EQ(r.bad, 1u);
    EXPECT_EQ(r.first_bad[0].index, static_cast<std::size_t>(i));
  }
}

TEST(CheckExact, LargeOutputsAreComparedInParallelWithTheSameVerdict) {
  // 5 million elements: several of parallel_for's 2^20-element chunks. Bad
  // elements in the last chunk and the first are all counted, and the first
  // ones reported are the lowest indices, in order, whichever chunk ends first.
  const std::size_t n = 5'000'003;
  std::vector<std::int32_t> expected(n);
  for (std::size_t i = 0; i < n; ++i) expected[i] = static_cast<std::int32_t>(i % 1000);
  std::vector<std::int32_t> got = expected;
  for (std::size_t i : {n - 1, std::size_t{7}, std::size_t{3'000'000}, std::size_t{2}}) got[i] += 3;
  const CheckResult r = check_exact(std::span<const std::int32_t>(got), std::span<const std::int32_t>(expected));
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.bad, 4u);
  EXPECT_EQ(r.max_abs_err, 3.0);
  ASSERT_EQ(r.first_bad.size(), 4u);
  EXPECT_EQ(r.first_bad[0].index, 2u);
  EXPECT_EQ(r.first_bad[1].index, 7u);
  EXPECT_EQ(r.first_bad[2].index, 3'000'000u);
  EXPECT_EQ(r.first_bad[3].index, n - 1);
  EXPECT_TRUE(check_exact(std::span<const std::int32_t>(expected), std::span<const std::int32_t>(expected)).passed);

  // check_bits takes the same path once the bytes differ: one flipped bit in
  // the last element of a large copy is found.
  std::vector<float> copy(n, 1.5f), flipped = copy;
  flipped[n - 1] = std::bit_cast<float>(std::bit_cast<std::uint32_t>(1.5f) ^ 1u);
  EXPECT_TRUE(check_bits(copy, copy).passed);
  const CheckResult b = check_bits(flipped, copy);
  EXPECT_FALSE(b.passed);
  EXPECT_EQ(b.bad, 1u);
  ASSERT_EQ(b.first_bad.size(), 1u);
  EXPECT_EQ(b.first_bad[0].index, n - 1);
}

// The chi-square bound of lab 27's spread check, against mpmath (40 digits):
//   import mpmath as mp; mp.mp.dps = 40
//   sf = lambda x, k: mp.gammainc(mp.mpf(k) / 2, mp.mpf(x) / 2, mp.inf, regularized=True)
//   p = sf(127 * mp.mpf('1.72'), 127)                                  # 8.338580976e-7
//   bound = lambda k: mp.findroot(lambda x: sf(x, k) - p, k + 5 * mp.sqrt(2 * k)) / k
TEST(ChiSquare, TailMatchesClosedFormsAndMpmath) {
  // Two degrees of freedom: P(chi2_2 > x) = exp(-x / 2) exactly.
  for (double x : {0.1, 1.0, 7.0, 40.0}) EXPECT_NEAR(chi_square_tail(x, 2) / std::exp(-x / 2), 1.0, 1e-12) << x;
  // One: P(chi2_1 > x) = erfc(sqrt(x / 2)), on both sides of the series/fraction switch.
  for (double x : {0.5, 3.0, 30.0}) EXPECT_NEAR(chi_square_tail(x, 1) / std::erfc(std::sqrt(x / 2)), 1.0, 1e-10) << x;
  EXPECT_NEAR(chi_square_tail(127 * 1.72, 127) / 8.338580976e-7, 1.0, 1e-8);
  EXPECT_NEAR(chi_square_tail(127, 127), 0.483310681453, 1e-10);  // at the mean: a little under half above it
  EXPECT_EQ(chi_square_tail(0, 127), 1.0);
  EXPECT_TRUE(std::isnan(chi_square_tail(NAN, 127)));
}

TEST(ChiSquare, VarianceBoundAtTheSameFalseFailureRateForEveryNumberOfEstimates) {
  const double p = chi_square_tail(127 * 1.72, 127);
  EXPECT_NEAR(variance_ratio_bound(127, p), 1.72, 1e-9);
  // From mpmath (above): dof -> bound.
  const std::pair<int, double> known[] = {{128, 1.71670582696}, {150, 1.65354600058}, {199, 1.55565320461},
                                          {255, 1.48293047957}, {511, 1.32878567803}, {999, 1.22914886997},
                                          {9999, 1.06921339253}};
  for (const auto& [dof, bound] : known) EXPECT_NEAR(variance_ratio_bound(dof, p), bound, 1e-9) << dof;
  // More estimates, a tighter bound: the spread of a quarter of the samples
  // (4x) fails further below it.
  EXPECT_LT(variance_ratio_bound(255, p), variance_ratio_bound(127, p));
}

// The timer's statistics and stopping rule, on synthetic samples (no GPU).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "cudalabs/timer.hpp"

using namespace cudalabs;

TEST(StudentT, KnownQuantiles) {
  EXPECT_NEAR(student_t_975(1), 12.706, 1e-3);
  EXPECT_NEAR(student_t_975(2), 4.303, 1e-3);
  EXPECT_NEAR(student_t_975(10), 2.228, 1e-3);
  EXPECT_NEAR(student_t_975(30), 2.042, 1e-3);
  EXPECT_NEAR(student_t_975(60), 2.000, 1e-3);
  EXPECT_NEAR(student_t_975(1000000), 1.960, 2e-3);
  // Monotonically decreasing towards the normal quantile.
  for (int df = 1; df < 500; ++df) EXPECT_GE(student_t_975(df), student_t_975(df + 1)) << df;
}

TEST(Summarize, KnownSample) {
  std::vector<double> s = {4, 1, 3, 2, 100};  // one outlier
  TimingStats t = summarize(s);
  EXPECT_EQ(t.runs, 5);
  EXPECT_DOUBLE_EQ(t.median_ms, 3);  // the outlier does not move the median
  EXPECT_DOUBLE_EQ(t.min_ms, 1);
  EXPECT_DOUBLE_EQ(t.max_ms, 100);
  EXPECT_DOUBLE_EQ(t.mean_ms, 22);
  // sample stddev: sqrt(sum((x-22)^2)/4)
  double ss = 18 * 18 + 21 * 21 + 19 * 19 + 20 * 20 + 78 * 78;
  EXPECT_NEAR(t.stddev_ms, std::sqrt(ss / 4), 1e-12);
  EXPECT_NEAR(t.ci95_ms, 2.776 * t.stddev_ms / std::sqrt(5.0), 1e-9);
}

TEST(Summarize, EvenCountMedianAveragesTheMiddle) {
  std::vector<double> s = {1, 2, 3, 10};
  EXPECT_DOUBLE_EQ(summarize(s).median_ms, 2.5);
}

TEST(StoppingRule, SteadyKernelStopsEarlyOnPrecision) {
  // A steady kernel: 1 ms with 1% gaussian noise. At 2% precision the rule
  // should stop at min_runs, far under 100 runs.
  std::mt19937 rng(1);
  std::normal_distribution<double> noise(1.0, 0.01);
  TimerConfig cfg;
  TimingStats t = repeat_until_stable([&] { return noise(rng); }, cfg);
  EXPECT_EQ(t.stop, StopReason::precision);
  EXPECT_LT(t.runs, 100);
  EXPECT_GE(t.runs, cfg.min_runs);
  EXPECT_LE(t.ci95_ms, cfg.rel_precision * t.mean_ms);
  EXPECT_NEAR(t.median_ms, 1.0, 0.02);
}

TEST(StoppingRule, NoisierDataNeedsMoreRuns) {
  std::mt19937 rng(2);
  std::normal_distribution<double> quiet(1.0, 0.01), loud(1.0, 0.1);
  TimerConfig cfg;
  int quiet_runs = repeat_until_stable([&] { return quiet(rng); }, cfg).runs;
  int loud_runs = repeat_until_stable([&] { return loud(rng); }, cfg).runs;
  EXPECT_GT(loud_runs, quiet_runs);
  // Expected n ~ (1.96 * 0.1 / 0.02)^2 ~ 96.
  EXPECT_GT(loud_runs, 50);
  EXPECT_LT(loud_runs, 200);
}

TEST(StoppingRule, ReportsTheRunBoundWhenPrecisionIsUnreachable) {
  // Alternating 1 and 3 ms: relative sd ~ 0.5, needs ~2400 runs for 2%.
  int i = 0;
  TimerConfig cfg;
  cfg.max_runs = 100;
  cfg.max_seconds = 1e9;
  TimingStats t = repeat_until_stable([&] { return (i++ % 2) ? 3.0 : 1.0; }, cfg);
  EXPECT_EQ(t.stop, StopReason::max_runs);
  EXPECT_EQ(t.runs, 100);
  EXPECT_FALSE(t.converged());
}

TEST(StoppingRule, ReportsTheTimeBudget) {
  int i = 0;
  TimerConfig cfg;
  cfg.max_seconds = 0.5;  // samples 50,150,50,...: the sum passes 500 ms at the 6th
  TimingStats t = repeat_until_stable([&] { return (i++ % 2) ? 150.0 : 50.0; }, cfg);
  EXPECT_EQ(t.stop, StopReason::time_budget);
  EXPECT_EQ(t.runs, 6);
}

TEST(StoppingRule, NeverStopsBeforeMinRuns) {
  TimerConfig cfg;
  cfg.min_runs = 10;
  TimingStats t = repeat_until_stable([] { return 1.0; }, cfg);  // zero variance
  EXPECT_EQ(t.runs, 10);
  EXPECT_EQ(t.stop, StopReason::precision);
}

TEST(StoppingRule, RequiredRunsComeBeforeEveryStop) {
  // A check over the timed runs' outputs needs its runs (lab 27: 128): the
  // precision (zero variance from the 10th run), the run bound (50, as --quick
  // sets it) and the budget (1 ms, spent at the first run) all wait for them.
  TimerConfig cfg;
  cfg.required_runs = 128;
  EXPECT_EQ(repeat_until_stable([] { return 1.0; }, cfg).runs, 128);
  cfg.max_runs = 50;
  TimingStats t = repeat_until_stable([] { return 1.0; }, cfg);
  EXPECT_EQ(t.runs, 128);
  EXPECT_EQ(t.stop, StopReason::precision);
  cfg.max_seconds = 1e-3;
  int i = 0;
  t = repeat_until_stable([&] { return (i++ % 2) ? 3.0 : 1.0; }, cfg);
  EXPECT_EQ(t.runs, 128);
  EXPECT_EQ(t.stop, StopReason::max_runs);
  // Past them the rule is the usual one: precision at run 10 without them, at 128 with.
  cfg = TimerConfig{};
  cfg.required_runs = 0;
  EXPECT_EQ(repeat_until_stable([] { return 1.0; }, cfg).runs, 10);
}

TEST(StoppingRule, PreciseEnoughMatchesTheDefinition) {
  TimerConfig cfg;
  cfg.min_runs = 2;
  cfg.rel_precision = 0.02;
  std::vector<double> tight = {1.0, 1.001, 0.999, 1.0};
  std::vector<double> loose = {1.0, 2.0, 1.0, 2.0};
  EXPECT_TRUE(precise_enough(tight, cfg));
  EXPECT_FALSE(precise_enough(loose, cfg));
}

TEST(Unjoined, WorkLeftRunningOutsideTheTimedStreamIsNamed) {
  // An idle device answers a synchronize in a few microseconds: no reason.
  EXPECT_EQ(unjoined_reason(0.004, 0.5), "");
  // A launcher that forked 0.8 ms of a 1 ms kernel's work onto its own stream
  // and never joined it: timed at 0.2 ms, the device busy 0.8 ms after.
  const std::string why = unjoined_reason(0.8, 0.2);
  EXPECT_NE(why.find("still busy 0.800 ms"), std::string::npos) << why;
  EXPECT_NE(why.find("join every stream"), std::string::npos) << why;
  // Below both bounds (50 µs, and 10% of the time), not flagged: a short
  // tail on a long run, or noise on a microsecond kernel.
  EXPECT_EQ(unjoined_reason(0.3, 10.0), "");
  EXPECT_EQ(unjoined_reason(0.04, 0.01), "");
  EXPECT_NE(unjoined_reason(0.06, 0.01), "");
}

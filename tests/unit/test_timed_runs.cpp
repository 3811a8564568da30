// The check of the timed runs' outputs, without a GPU: which runs are checked
// right after they ran (checks_timed_run), and Recorder::measure's step 3 with a
// stand-in for the timer whose "launcher" does less on some calls, in a graded
// program (--evidence) and in its judge (--judge).
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <span>
#include <filesystem>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include <cudalabs/checker.hpp>
#include <cudalabs/evidence.hpp>
#include <cudalabs/lab.hpp>
#include <cudalabs/random.hpp>
#include <cudalabs/timer.hpp>

using namespace cudalabs;
namespace fs = std::filesystem;

namespace {

int count_checked(std::uint64_t seed, int k, int runs) {
  int n = 0;
  for (int i = 0; i < runs; ++i) n += checks_timed_run(seed, k, i);
  return n;
}

}  // namespace

TEST(ChecksTimedRun, TheFirstKRunsAreAlwaysCheckedAndTheSameSeedChoosesTheSame) {
  for (std::uint64_t seed = 0; seed < 50; ++seed) {
    EXPECT_TRUE(checks_timed_run(seed, 2, 0));
    EXPECT_TRUE(checks_timed_run(seed, 2, 1));
    EXPECT_TRUE(checks_timed_run(seed, 1, 0));
    for (int i = 0; i < 200; ++i) EXPECT_EQ(checks_timed_run(seed, 2, i), checks_timed_run(seed, 2, i));
  }
  // Different seeds choose different runs.
  int differ = 0;
  for (int i = 2; i < 200; ++i) differ += checks_timed_run(1, 2, i) != checks_timed_run(2, 2, i);
  EXPECT_GT(differ, 0);
}

TEST(ChecksTimedRun, RunIIsCheckedWithProbabilityKOverIPlusOne) {
  // Over many seeds: run i (i >= k) is checked in a fraction k / (i + 1) of
  // them, and none of runs 50..99 in a fraction prod (1 - 2/(i+1)) =
  // 49·50 / (99·100) ≈ 0.247: a run of the second half is checked 3 times in 4.
  constexpr int seeds = 20000;
  std::vector<int> hits(100, 0);
  int none_late = 0;
  long long total = 0;
  for (std::uint64_t seed = 0; seed < seeds; ++seed) {
    bool late = false;
    for (int i = 0; i < 100; ++i) {
      const bool c = checks_timed_run(mix_seed(seed, 77), 2, i);
      hits[i] += c;
      late |= c && i >= 50;
    }
    none_late += !late;
    total += count_checked(mix_seed(seed, 77), 2, 100);
  }
  for (int i : {2, 5, 10, 30, 99}) EXPECT_NEAR(hits[i] / double(seeds), 2.0 / (i + 1), 0.015) << "run " << i;
  EXPECT_NEAR(none_late / double(seeds), 49.0 * 50 / (99.0 * 100), 0.015);
  // About k·(1 + ln(runs / k)) checks in all: 2 + 2·(H_100 - H_2) ≈ 9.37 for 100 runs.
  EXPECT_NEAR(total / double(seeds), 9.37, 0.15);
}

namespace {

// A variant's output of 8 floats; the expected sum is 3 everywhere. Its timed
// runs are simulated: on a "cheap" call the launcher writes only the first
// half and leaves the rest poisoned (NaN), as a kernel whose timed runs start
// from a poisoned output would.
struct FakeVariant {
  std::vector<float> out = std::vector<float>(8, 3.0f);
  std::vector<double> expected = std::vector<double>(8, 3.0);
  std::function<bool(int run)> cheap = [](int) { return false; };
  Measurement measurement() {
    Measurement m;
    m.variant = "add";
    m.size = {{"n", 8}};
    m.work = {.bytes = 96};
    m.expect = Expect::copies;  // no kernel asked for: the stand-in launches nothing
    m.ceiling = CeilingKind::none;
    m.run = [](cudaStream_t) {};
    m.check = [this] { return check_close(std::span<const float>(out), std::span<const double>(expected), {1e-6, 0}); };
    m.new_inputs = [this](std::uint64_t) { std::fill(out.begin(), out.end(), 3.0f); };
    return m;
  }
};

// A Recorder whose timing is a loop of `runs` simulated runs of `variant`.
class FakeTimedRecorder : public Recorder {
 public:
  FakeTimedRecorder(const LabSpec& spec, Options o, FakeVariant& variant, int runs)
      : Recorder(spec, std::move(o), DeviceInfo{}), variant_(variant), runs_(runs) {}

 private:
  FakeVariant& variant_;
  int runs_;
  cudaStream_t work_stream() const override { return nullptr; }
  void synchronize() override {}
  double copy_gbps() override { return 1; }
  void time(const Measurement& m, Record& r) override {
    std::vector<double> samples;
    for (int i = 0; i < runs_; ++i) {
      const bool cheap = variant_.cheap(i);
      for (std::size_t e = 0; e < variant_.out.size(); ++e)
        variant_.out[e] = cheap && e >= variant_.out.size() / 2 ? NAN : 3.0f;
      samples.push_back(cheap ? 0.5 : 1.0);
      after_timed_run(m, r, i);
    }
    r.timing = summarize(samples);
    std::fill(variant_.out.begin(), variant_.out.end(), 3.0f);  // the last run: a full one
  }
};

class TimedRuns : public ::testing::Test {
 protected:
  void SetUp() override {
    spec_.name = "00_fake";
    spec_.variants = {{.name = "add"}};
    dir_ = fs::temp_directory_path() / ("cudalabs-timed-runs-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
  }
  void TearDown() override {
    evidence::configure(evidence::Mode::off, "");
    fs::remove_all(dir_);
  }
  Record measure(FakeVariant& v, int runs, std::uint64_t seed, const std::string& evidence_dir = "",
                 const std::string& judge_dir = "") {
    Options o;
    o.seed = seed;
    o.evidence_dir = evidence_dir;
    o.judge_dir = judge_dir;
    FakeTimedRecorder rec(spec_, o, v, runs);
    return rec.measure(v.measurement());
  }
  LabSpec spec_;
  fs::path dir_;
};

}  // namespace

TEST_F(TimedRuns, FullWorkOnEveryCallPassesWithSeveralRunsChecked) {
  FakeVariant v;
  const Record r = measure(v, 40, 5);
  EXPECT_TRUE(r.passed) << r.failure;
  EXPECT_GE(r.timed_runs_checked, 2);
  EXPECT_LT(r.timed_runs_checked, 40);
  EXPECT_NE(to_json(r, DeviceInfo{}).find("\"timed_runs_checked\":" + std::to_string(r.timed_runs_checked)),
            std::string::npos);
}

TEST_F(TimedRuns, LessWorkOnEveryOtherCallFailsThoughTheLastRunIsFull) {
  // The output the timing left is right (its last run was a full one): the
  // check after the timing alone passes this launcher.
  FakeVariant v;
  v.cheap = [](int run) { return run % 2 == 1; };
  const Record r = measure(v, 41, 5);
  EXPECT_FALSE(r.passed);
  EXPECT_TRUE(r.after_timing.passed);
  EXPECT_FALSE(r.timed_run.passed);
  EXPECT_EQ(r.timed_run_index % 2, 1);
  EXPECT_NE(r.failure.find("output of the timed runs (timed run " + std::to_string(r.timed_run_index + 1) + " of 41, one of the " +
                           std::to_string(r.timed_runs_checked) + " checked right after they ran): "),
            std::string::npos)
      << r.failure;
}

TEST_F(TimedRuns, LessWorkOnARandomHalfOfTheCallsIsCaughtAtLeastThreeTimesInFour) {
  // The launcher's own coin (a hash of its call count, unknown to the harness)
  // against the harness's choice of runs (drawn after each run): 2 or more checked
  // runs each see a cheap call with probability 1/2.
  int caught = 0;
  constexpr int seeds = 400;
  for (std::uint64_t seed = 0; seed < seeds; ++seed) {
    FakeVariant v;
    v.cheap = [](int run) { return (mix_seed(12345, static_cast<std::uint64_t>(run)) >> 63) != 0; };
    caught += !measure(v, 60, seed).passed;
  }
  EXPECT_GE(caught, seeds * 3 / 4);
}

TEST_F(TimedRuns, TheRunsCheckedDoNotFollowTheSeed) {
  // --seed is on the command line, where a launcher could read it: the runs
  // checked are drawn from the operating system instead, so the same seed
  // checks different runs (here: different numbers of them) from one timing
  // to the next.
  std::set<int> counts;
  for (int i = 0; i < 20; ++i) {
    FakeVariant v;
    counts.insert(measure(v, 60, 42).timed_runs_checked);
  }
  EXPECT_GT(counts.size(), 1u);
}

TEST_F(TimedRuns, AJudgeJudgesEveryTimedRunTheGradedProgramChecked) {
  FakeVariant graded;
  graded.cheap = [](int run) { return run == 1; };  // run 1 is always checked
  const Record g = measure(graded, 30, 9, dir_.string());
  ASSERT_TRUE(g.passed);  // a graded program compares nothing: the judge does
  ASSERT_GE(g.timed_runs_checked, 2);
  // The judge's own runs are right; the outputs it compares are the graded program's.
  FakeVariant judge;
  const Record j = measure(judge, 0, 9, "", dir_.string());
  EXPECT_FALSE(j.timed);
  EXPECT_EQ(j.timed_runs_checked, g.timed_runs_checked);
  EXPECT_FALSE(j.passed);
  EXPECT_NE(j.failure.find("output of the timed runs (one of the " + std::to_string(g.timed_runs_checked) +
                           " timed runs checked right after they ran): "),
            std::string::npos)
      << j.failure;

  // A graded program whose every timed run was right is judged right, with as many checks.
  fs::remove_all(dir_);
  FakeVariant fine;
  const Record g2 = measure(fine, 30, 9, dir_.string());
  ASSERT_TRUE(g2.passed) << g2.failure;
  FakeVariant judge2;
  const Record j2 = measure(judge2, 0, 9, "", dir_.string());
  EXPECT_TRUE(j2.passed) << j2.failure;
  EXPECT_EQ(j2.timed_runs_checked, g2.timed_runs_checked);
}

TEST_F(TimedRuns, TwoTimingsOfOneVariantAndSizeAreJudgedEachOnItsOwnChecks) {
  // The same variant and size measured twice in one program (as under two
  // values of a lab's flag): the judge of each record judges that timing's
  // checks, not the other's.
  auto twice = [&](FakeVariant& v, int runs, const std::string& evidence_dir, const std::string& judge_dir) {
    Options o;
    o.seed = 3;
    o.evidence_dir = evidence_dir;
    o.judge_dir = judge_dir;
    FakeTimedRecorder rec(spec_, o, v, runs);
    const Record first = rec.measure(v.measurement());
    v.cheap = [](int run) { return run == 0; };  // the second timing's first run: always checked
    const Record second = rec.measure(v.measurement());
    return std::make_pair(first, second);
  };
  FakeVariant graded;
  const auto [g1, g2] = twice(graded, 25, dir_.string(), "");
  ASSERT_TRUE(g1.passed) << g1.failure;
  ASSERT_TRUE(g2.passed);  // a graded program compares nothing: the judge does
  FakeVariant judge;
  const auto [j1, j2] = twice(judge, 0, "", dir_.string());
  EXPECT_TRUE(j1.passed) << j1.failure;
  EXPECT_EQ(j1.timed_runs_checked, g1.timed_runs_checked);
  EXPECT_FALSE(j2.passed);
  EXPECT_EQ(j2.timed_runs_checked, g2.timed_runs_checked);
}

TEST(TimedRunSeed, EveryRunHasASeedOfItsOwn) {
  // Warm-up runs (negative) and timed runs, the spread seeds lab 27 draws in a
  // check-only run (mix_seed(seed, 1 .. 128)) and the seed itself: all distinct.
  for (std::uint64_t seed : {0ull, 42ull, 0xFFFFFFFFFFFFFFFFull}) {
    std::set<std::uint64_t> seen = {seed};
    for (int run = -3; run < 10000; ++run) {
      EXPECT_EQ(timed_run_seed(seed, run), timed_run_seed(seed, run));
      seen.insert(timed_run_seed(seed, run));
    }
    for (std::uint64_t i = 1; i <= 128; ++i) seen.insert(mix_seed(seed, i));
    EXPECT_EQ(seen.size(), 1u + 10003u + 128u);
  }
  EXPECT_NE(timed_run_seed(1, 0), timed_run_seed(2, 0));
}

namespace {

// A random estimate from the run's seed, normal with standard deviation
// `spread` (1: the right one) about 0: a stand-in for lab 27's, whose check
// over the timed runs is the variance of their estimates against the chi-square.
struct FakeEstimator {
  std::uint64_t seed = 7;
  double spread = 1;
  double estimate = 0;
  std::vector<double> kept;  // one per timed run
  std::vector<int> inputs_seen;
  Measurement measurement() {
    Measurement m;
    m.variant = "estimate";
    m.size = {{"n", 1}};
    m.expect = Expect::copies;
    m.ceiling = CeilingKind::none;
    m.run = [this](cudaStream_t) {
      std::mt19937_64 bits(seed);
      estimate = spread * std::normal_distribution<double>()(bits);
    };
    m.check = [this] {
      std::vector<double> got = {estimate};
      CheckResult c;
      c.count = 1;
      c.passed = observe_in_place(std::span(got)).empty() && std::isfinite(got[0]);  // one estimate: any value
      return c;
    };
    m.new_inputs = [this](std::uint64_t fresh) { seed = fresh; };
    m.timed_runs.at_least = 128;
    m.timed_runs.inputs = [this](int run) {
      inputs_seen.push_back(run);
      seed = timed_run_seed(7, run);
    };
    m.timed_runs.after = [this](int) { kept.push_back(estimate); };
    m.timed_runs.check = [this] {
      CheckResult c;
      c.count = kept.size();
      if (std::string missing = observe_vector(kept); !missing.empty()) return missing_output(kept.size(), missing);
      double mean = 0, squares = 0;
      for (double e : kept) mean += e / static_cast<double>(kept.size());
      for (double e : kept) squares += (e - mean) * (e - mean);
      const int dof = static_cast<int>(kept.size()) - 1;
      const double ratio = squares / dof;
      c.passed = kept.size() >= 128 && ratio <= variance_ratio_bound(dof, 8.3e-7);
      if (!c.passed) c.note = "vary " + std::to_string(ratio) + "x over " + std::to_string(kept.size()) + " runs";
      return c;
    };
    return m;
  }
};

// Timing as Session::time makes it: the inputs of every run, warm-up ones
// first, and after_timed_run once each timed run is done.
class FakeEstimatorRecorder : public Recorder {
 public:
  FakeEstimatorRecorder(const LabSpec& spec, Options o, int runs) : Recorder(spec, std::move(o), DeviceInfo{}), runs_(runs) {}

 private:
  int runs_;
  cudaStream_t work_stream() const override { return nullptr; }
  void synchronize() override {}
  double copy_gbps() override { return 1; }
  void time(const Measurement& m, Record& r) override {
    std::vector<double> samples;
    for (int run = -3; run < runs_; ++run) {
      m.timed_runs.inputs(run);
      m.run(nullptr);
      if (run < 0) continue;
      samples.push_back(1.0);
      after_timed_run(m, r, run);
    }
    r.timing = summarize(samples);
  }
};

}  // namespace

TEST_F(TimedRuns, AJudgeHoldsTheLabsCheckOverEveryTimedRunOfTheGradedProgram) {
  auto measure_estimator = [&](FakeEstimator& v, int runs, const std::string& evidence_dir, const std::string& judge_dir) {
    Options o;
    o.seed = 1;
    o.evidence_dir = evidence_dir;
    o.judge_dir = judge_dir;
    FakeEstimatorRecorder rec(spec_, o, runs);
    return rec.measure(v.measurement());
  };
  spec_.variants = {{.name = "estimate"}};
  // Right: 128 estimates of variance 1, judged right, the judge taking all 128.
  FakeEstimator fine;
  const Record g = measure_estimator(fine, 128, dir_.string(), "");
  ASSERT_TRUE(g.passed) << g.failure;
  ASSERT_EQ(fine.kept.size(), 128u);
  EXPECT_EQ(fine.inputs_seen.front(), -3);  // the warm-up runs have seeds of their own too
  FakeEstimator judge;
  const Record j = measure_estimator(judge, 0, "", dir_.string());
  EXPECT_TRUE(j.passed) << j.failure;
  EXPECT_EQ(judge.kept, fine.kept);  // the graded program's estimates, not the judge's (it ran none)

  // Twice the standard deviation (a quarter of the samples), over 200 timed
  // runs: every single estimate passes, the judge, whose own runs are right,
  // fails the spread of the graded program's 200.
  fs::remove_all(dir_);
  FakeEstimator quarter;
  quarter.spread = 2;
  measure_estimator(quarter, 200, dir_.string(), "");
  FakeEstimator judge2;
  const Record j2 = measure_estimator(judge2, 0, "", dir_.string());
  EXPECT_FALSE(j2.passed);
  EXPECT_TRUE(j2.after_timing.note.find("vary ") != std::string::npos);
  EXPECT_EQ(judge2.kept.size(), 200u);
  EXPECT_NE(j2.failure.find("the timed runs' outputs together: vary "), std::string::npos) << j2.failure;
  EXPECT_NE(j2.failure.find(" over 200 runs"), std::string::npos) << j2.failure;
}

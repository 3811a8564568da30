// The judge's side of grading, without a GPU: a graded program's checks leave
// the outputs they compared (--evidence), and a judge's same checks compare
// those instead of its own (--judge), failing where there are none.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <cudalabs/checker.hpp>
#include <cudalabs/evidence.hpp>

using namespace cudalabs;
namespace fs = std::filesystem;

namespace {

// A fresh folder per test, removed after it; evidence is switched off again.
class Evidence : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("cudalabs-evidence-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
  }
  void TearDown() override {
    evidence::configure(evidence::Mode::off, "");
    fs::remove_all(dir_);
  }
  // One record's first check, as the harness makes it: a Scope named by the
  // variant, the size and the step, and the lab's comparison inside it.
  CheckResult first_check(const std::vector<float>& got, const std::vector<double>& expected) {
    evidence::Scope scope("tree", "n=3", "first");
    return check_close(std::span<const float>(got), std::span<const double>(expected), {.abs = 1e-6, .rel = 0});
  }
  fs::path dir_;
};

const std::vector<double> sum_of_three = {6.0};

}  // namespace

TEST_F(Evidence, AGradedProgramKeepsNoReference) {
  // A graded program computes no reference (its student code could read it),
  // so its checks get an empty expected side: they still record every output,
  // and count the outputs recorded. A judge and a plain run keep theirs.
  EXPECT_TRUE(evidence::keeps_references());
  evidence::configure(evidence::Mode::record, dir_.string());
  EXPECT_FALSE(evidence::keeps_references());
  const CheckResult graded = first_check({5.0f}, {});
  EXPECT_TRUE(graded.passed);
  EXPECT_EQ(graded.count, 1u);
  std::vector<unsigned> counts = {3, 0, 7};
  {
    evidence::Scope scope("cub", "n=3", "repeat");
    const CheckResult exact = check_exact<unsigned, std::uint64_t>(std::span<const unsigned>(counts), {});
    EXPECT_TRUE(exact.passed);
    EXPECT_EQ(exact.count, 3u);
  }
  evidence::configure(evidence::Mode::judge, dir_.string());
  EXPECT_TRUE(evidence::keeps_references());
  const CheckResult judged = first_check({6.0f}, sum_of_three);
  EXPECT_FALSE(judged.passed);
  ASSERT_EQ(judged.first_bad.size(), 1u);
  EXPECT_EQ(judged.first_bad[0].got, 5.0);
}

TEST_F(Evidence, TheJudgeComparesWhatTheGradedProgramWrote) {
  // The graded program's kernel was wrong (5 for 6). The graded program
  // compares nothing (its verdict would count for nothing): it says so, and
  // the judge compares its 5 with the judge's own reference, while the judge's
  // own kernel got it right.
  evidence::configure(evidence::Mode::record, dir_.string());
  const CheckResult graded = first_check({5.0f}, sum_of_three);
  EXPECT_TRUE(graded.passed);
  EXPECT_NE(graded.note.find("recorded for the judge"), std::string::npos) << graded.note;
  evidence::configure(evidence::Mode::judge, dir_.string());
  const CheckResult judged = first_check({6.0f}, sum_of_three);
  EXPECT_FALSE(judged.passed);
  ASSERT_EQ(judged.first_bad.size(), 1u);
  EXPECT_EQ(judged.first_bad[0].got, 5.0);

  // And a right answer is judged right, whatever the judge's own run left.
  fs::remove_all(dir_);
  evidence::configure(evidence::Mode::record, dir_.string());
  EXPECT_TRUE(first_check({6.0f}, sum_of_three).passed);
  evidence::configure(evidence::Mode::judge, dir_.string());
  EXPECT_TRUE(first_check({123.0f}, sum_of_three).passed);
}

TEST_F(Evidence, NoOutputFromTheGradedProgramFails) {
  // A program that exits before its checks (an early exit, a crash) leaves nothing.
  fs::create_directories(dir_);
  evidence::configure(evidence::Mode::judge, dir_.string());
  const CheckResult r = first_check({6.0f}, sum_of_three);
  EXPECT_FALSE(r.passed);
  EXPECT_NE(r.note.find("left no output"), std::string::npos) << r.note;
}

TEST_F(Evidence, AnotherTypeOrLengthFails) {
  // The judge reads exactly what its own check compares: 2 floats where it
  // compares 1 is refused, not truncated; integers where it compares floats too.
  evidence::configure(evidence::Mode::record, dir_.string());
  first_check({6.0f, 6.0f}, {6.0, 6.0});
  evidence::configure(evidence::Mode::judge, dir_.string());
  CheckResult r = first_check({6.0f}, sum_of_three);
  EXPECT_FALSE(r.passed);
  EXPECT_NE(r.note.find("not what the check compares"), std::string::npos) << r.note;

  fs::remove_all(dir_);
  evidence::configure(evidence::Mode::record, dir_.string());
  {
    evidence::Scope scope("tree", "n=3", "first");
    const std::vector<std::int32_t> counts = {6};
    check_exact(std::span<const std::int32_t>(counts), std::span<const std::int32_t>(counts));
  }
  evidence::configure(evidence::Mode::judge, dir_.string());
  EXPECT_FALSE(first_check({6.0f}, sum_of_three).passed);
}

TEST_F(Evidence, ATruncatedFileFails) {
  evidence::configure(evidence::Mode::record, dir_.string());
  first_check({6.0f}, sum_of_three);
  for (const auto& f : fs::directory_iterator(dir_)) fs::resize_file(f.path(), fs::file_size(f.path()) - 1);
  evidence::configure(evidence::Mode::judge, dir_.string());
  const CheckResult r = first_check({6.0f}, sum_of_three);
  EXPECT_FALSE(r.passed);
  EXPECT_NE(r.note.find("cut short"), std::string::npos) << r.note;
}

TEST_F(Evidence, ObservationsAreNamedByRecordStepAndOrder) {
  // Two checks in one scope, then the same record's next step: each judged
  // against its own output, and a repeated identical output stored once.
  evidence::configure(evidence::Mode::record, dir_.string());
  {
    evidence::Scope scope("tree", "n=3", "first");
    check_close(std::span<const float>(std::vector<float>{6.0f}), std::span<const double>(sum_of_three), {});
    check_close(std::span<const float>(std::vector<float>{7.0f}), std::span<const double>(std::vector<double>{7.0}), {});
    EXPECT_EQ(scope.observations(), 2u);
  }
  {
    evidence::Scope scope("tree", "n=3", "repeat");
    check_close(std::span<const float>(std::vector<float>{6.0f}), std::span<const double>(sum_of_three), {});
    check_close(std::span<const float>(std::vector<float>{8.0f}), std::span<const double>(std::vector<double>{7.0}), {});
  }
  EXPECT_EQ(fs::hard_link_count(dir_ / "tree@n=3@repeat#0.0.bin"), 2u);  // same bytes as the first step's
  EXPECT_EQ(fs::hard_link_count(dir_ / "tree@n=3@repeat#0.1.bin"), 1u);  // different: a copy of its own

  evidence::configure(evidence::Mode::judge, dir_.string());
  {
    evidence::Scope scope("tree", "n=3", "first");
    EXPECT_TRUE(check_close(std::span<const float>(std::vector<float>{0.0f}), std::span<const double>(sum_of_three), {}).passed);
    EXPECT_TRUE(check_close(std::span<const float>(std::vector<float>{0.0f}), std::span<const double>(std::vector<double>{7.0}), {}).passed);
  }
  {
    evidence::Scope scope("tree", "n=3", "repeat");
    EXPECT_TRUE(check_close(std::span<const float>(std::vector<float>{0.0f}), std::span<const double>(sum_of_three), {}).passed);
    EXPECT_FALSE(check_close(std::span<const float>(std::vector<float>{7.0f}), std::span<const double>(std::vector<double>{7.0}), {}).passed);
  }
}

TEST_F(Evidence, ACheckThatComparesInItsOwnWayObservesInPlace) {
  // A count and a variable-length list, as labs 25, 26 and 20 compare them.
  evidence::configure(evidence::Mode::record, dir_.string());
  {
    evidence::Scope scope("select", "n=9", "first");
    std::vector<std::uint64_t> count = {4};
    EXPECT_EQ(observe_in_place(std::span(count)), "");
    std::vector<char> code = {'a', 'b', 'c'};
    EXPECT_EQ(observe_vector(code), "");
  }
  evidence::configure(evidence::Mode::judge, dir_.string());
  {
    evidence::Scope scope("select", "n=9", "first");
    std::vector<std::uint64_t> count = {5};
    EXPECT_EQ(observe_in_place(std::span(count)), "");
    EXPECT_EQ(count[0], 4u);
    std::vector<char> code = {'x'};
    EXPECT_EQ(observe_vector(code), "");
    EXPECT_EQ(std::string(code.begin(), code.end()), "abc");
  }
}

TEST_F(Evidence, OffByDefault) {
  // A student's own run writes nothing and compares its own output.
  evidence::configure(evidence::Mode::off, "");
  EXPECT_TRUE(first_check({6.0f}, sum_of_three).passed);
  EXPECT_FALSE(fs::exists(dir_));
}

TEST_F(Evidence, AJudgeReadsARepeatedOutputOnce) {
  // The same bytes left by the first and the repeated run are one file (a hard
  // link); a judge reads it once and compares the repeated step from the same
  // memory. A different output is read on its own.
  evidence::configure(evidence::Mode::record, dir_.string());
  const std::vector<float> six = {6.0f, 6.0f}, seven = {7.0f, 7.0f};
  for (const char* step : {"first", "repeat"}) {
    evidence::Scope scope("tree", "n=3", step);
    observe(std::span<const float>(six));
  }
  {
    evidence::Scope scope("tree", "n=3", "fresh");
    observe(std::span<const float>(seven));
  }
  evidence::configure(evidence::Mode::judge, dir_.string());
  const std::vector<float> mine = {0.0f, 0.0f};
  std::vector<const float*> where;
  for (const char* step : {"first", "repeat", "fresh"}) {
    evidence::Scope scope("tree", "n=3", step);
    const Observed<float> o = observe(std::span<const float>(mine));
    ASSERT_TRUE(o.missing.empty()) << o.missing;
    ASSERT_EQ(o.data.size(), 2u);
    EXPECT_EQ(o.data[1], std::string(step) == "fresh" ? 7.0f : 6.0f) << step;
    where.push_back(o.data.data());
  }
  EXPECT_EQ(where[0], where[1]);
  EXPECT_NE(where[2], mine.data());
}

namespace {

// evidence.cpp's digest: 64-bit FNV-1a over 8-byte words.
constexpr std::uint64_t fnv_prime = 1099511628211ull;
std::uint64_t fnv_words(const std::vector<std::uint64_t>& words) {
  std::uint64_t h = 1469598103934665603ull;
  for (std::uint64_t w : words) h = (h ^ w) * fnv_prime;
  return h;
}

}  // namespace

TEST_F(Evidence, AnOutputWithAnotherOutputsDigestIsNotLinkedToIt) {
  // A kernel chooses its output's bytes, and one step of FNV-1a is a
  // bijection in its word: a cheap run's output whose last word is chosen
  // has a right run's digest. Linked to the right one, it was judged as that.
  const std::vector<std::uint64_t> right = {1, 2};
  std::uint64_t inverse = fnv_prime;  // the prime's inverse mod 2^64 (Newton: each step doubles the bits)
  for (int i = 0; i < 6; ++i) inverse *= 2 - fnv_prime * inverse;
  std::vector<std::uint64_t> cheap = {0xFFFFFFFFFFFFFFFFull, 0};
  cheap[1] = ((1469598103934665603ull ^ cheap[0]) * fnv_prime) ^ (fnv_words(right) * inverse);
  ASSERT_EQ(fnv_words(cheap), fnv_words(right));
  ASSERT_NE(cheap, right);

  evidence::configure(evidence::Mode::record, dir_.string());
  for (const auto& [step, out] : {std::pair{"first", right}, std::pair{"repeat", cheap}}) {
    evidence::Scope scope("gemm", "n=2", step);
    observe(std::span<const std::uint64_t>(out));
  }
  EXPECT_EQ(fs::hard_link_count(dir_ / "gemm@n=2@repeat#0.0.bin"), 1u);

  evidence::configure(evidence::Mode::judge, dir_.string());
  const std::vector<std::uint64_t> mine = {0, 0};
  for (const auto& [step, out] : {std::pair{"first", right}, std::pair{"repeat", cheap}}) {
    evidence::Scope scope("gemm", "n=2", step);
    const Observed<std::uint64_t> o = observe(std::span<const std::uint64_t>(mine));
    ASSERT_TRUE(o.missing.empty()) << o.missing;
    EXPECT_EQ(std::vector<std::uint64_t>(o.data.begin(), o.data.end()), out) << step;
  }
}

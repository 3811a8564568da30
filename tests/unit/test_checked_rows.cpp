// labs/shared/checked_rows.hpp: the rows of C a check compares where it cannot
// compare them all. Outside a judge they come from the seed (a run of one's own
// is reproducible); a judge draws them from the operating system, so a kernel
// that computes the seed's rows right and skips the others is caught there.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include <cudalabs/checker.hpp>
#include <cudalabs/evidence.hpp>
#include <cudalabs/random.hpp>

#include "checked_rows.hpp"

namespace fs = std::filesystem;
using cudalabs::evidence::Mode;

namespace {

// Lab 33's benchmark: 8192³, above its 2^28 limit for every row, so 8 rows.
constexpr int m = 8192, n = 8192, k = 8192;
constexpr double lab33_all_up_to = 268435456.0;
constexpr int lab33_rows = 8;
constexpr std::uint64_t seed = 42;

std::vector<int> lab33_draw(int rows_m = m, int rows_n = n, int rows_k = k) {
  return matmul_detail::rows_to_check(rows_m, rows_n, rows_k, matmul_detail::rows_seed(seed), lab33_all_up_to,
                                      lab33_rows);
}

// A fresh folder per test (a judge needs one to exist), removed after it.
class CheckedRows : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("cudalabs-rows-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    cudalabs::evidence::configure(Mode::off, "");
    fs::remove_all(dir_);
  }
  fs::path dir_;
};

void expect_a_valid_draw(const std::vector<int>& rows) {
  ASSERT_EQ(rows.size(), static_cast<std::size_t>(lab33_rows));
  EXPECT_TRUE(std::is_sorted(rows.begin(), rows.end()));
  EXPECT_EQ(std::set<int>(rows.begin(), rows.end()).size(), rows.size()) << "a row drawn twice";
  EXPECT_EQ(rows.front(), 0) << "the first row is always checked";
  EXPECT_EQ(rows.back(), m - 1) << "the last row is always checked";
}

}  // namespace

TEST_F(CheckedRows, OutsideAJudgeTheRowsComeFromTheSeed) {
  const std::vector<int> from_seed =
      matmul_detail::rows_to_check(m, n, k, cudalabs::mix_seed(seed, 3), lab33_all_up_to, lab33_rows);
  expect_a_valid_draw(from_seed);
  for (Mode mode : {Mode::off, Mode::record}) {
    cudalabs::evidence::configure(mode, dir_.string());
    EXPECT_EQ(lab33_draw(), from_seed);
    EXPECT_EQ(lab33_draw(), from_seed) << "a run of one's own checks the same rows each time";
  }
}

TEST_F(CheckedRows, AJudgeDrawsOtherRowsEachTime) {
  const std::vector<int> from_seed =
      matmul_detail::rows_to_check(m, n, k, cudalabs::mix_seed(seed, 3), lab33_all_up_to, lab33_rows);
  cudalabs::evidence::configure(Mode::judge, dir_.string());
  const std::vector<int> first = lab33_draw(), second = lab33_draw();
  expect_a_valid_draw(first);
  expect_a_valid_draw(second);
  // 6 rows of 8190 drawn the same twice: about 1 in 10^20.
  EXPECT_NE(first, second) << "two judgings drew the same rows";
  EXPECT_NE(first, from_seed) << "the judge drew the seed's rows";
  // Over 64 judgings the interior rows drawn are spread over C, not a few favourites:
  // 384 draws of 8190 rows repeat about 9 rows (birthday bound), far from the 376 asked.
  std::set<int> interior;
  for (int judging = 0; judging < 64; ++judging)
    for (int row : lab33_draw())
      if (row != 0 && row != m - 1) interior.insert(row);
  EXPECT_GE(interior.size(), 350u);
}

TEST_F(CheckedRows, SmallProductsCheckEveryRowInAJudgeToo) {
  cudalabs::evidence::configure(Mode::judge, dir_.string());
  // 2^28 multiply-adds exactly: every row (the reference costs about a second).
  const std::vector<int> rows = lab33_draw(1024, 512, 512);
  ASSERT_EQ(rows.size(), 1024u);
  for (int i = 0; i < 1024; ++i) ASSERT_EQ(rows[static_cast<std::size_t>(i)], i);
}

TEST_F(CheckedRows, RowsTextNamesEveryRow) {
  EXPECT_EQ(matmul_detail::rows_text({0, 17, 4031, 8191}), "0, 17, 4031, 8191");
  EXPECT_EQ(matmul_detail::rows_text({}), "");
}

// Lab 33's check end to end on the CPU: the graded program leaves the whole C
// (observe_in_place), and its judge compares the rows it draws (compare_close).
// A C right on the seed's rows only, zero elsewhere, passes a check of the
// seed's rows and fails the judge's.
TEST_F(CheckedRows, AJudgeCatchesACRightOnlyOnTheSeedsRows) {
  constexpr int rows_m = 8192, cols = 4, depth = 1 << 16;  // m·n·k = 2^31 > 2^28: 8 rows
  const std::vector<int> seed_rows =
      matmul_detail::rows_to_check(rows_m, cols, depth, cudalabs::mix_seed(seed, 3), lab33_all_up_to, lab33_rows);
  auto expected_of = [](int row, int col) { return 1.0 + row + 0.25 * col; };  // never 0
  std::vector<float> skipping(static_cast<std::size_t>(rows_m) * cols, 0.0f);
  for (int row : seed_rows)
    for (int col = 0; col < cols; ++col)
      skipping[static_cast<std::size_t>(row) * cols + col] = static_cast<float>(expected_of(row, col));
  auto check = [&](std::vector<float> c) {
    cudalabs::evidence::Scope scope("per_tensor", "m=8192", "first");
    if (const std::string missing = cudalabs::observe_in_place(std::span<float>(c)); !missing.empty())
      return cudalabs::missing_output(1, missing);
    if (cudalabs::evidence::mode() == Mode::record) return cudalabs::recorded_for_judge(c.size());
    const std::vector<int> rows = matmul_detail::rows_to_check(rows_m, cols, depth, matmul_detail::rows_seed(seed),
                                                               lab33_all_up_to, lab33_rows);
    std::vector<float> got;
    std::vector<double> want;
    for (int row : rows)
      for (int col = 0; col < cols; ++col) {
        got.push_back(c[static_cast<std::size_t>(row) * cols + col]);
        want.push_back(expected_of(row, col));
      }
    return cudalabs::compare_close(got, want, {.abs = 1e-6, .rel = 0});
  };
  // A run of one's own: the seed's rows, which the skipping C has right.
  EXPECT_TRUE(check(skipping).passed);
  cudalabs::evidence::configure(Mode::record, dir_.string());
  const cudalabs::CheckResult graded = check(skipping);
  EXPECT_TRUE(graded.passed);
  EXPECT_NE(graded.note.find("recorded for the judge"), std::string::npos) << graded.note;
  // The judge's own C is right everywhere; it compares the graded program's.
  std::vector<float> right(skipping.size());
  for (int row = 0; row < rows_m; ++row)
    for (int col = 0; col < cols; ++col)
      right[static_cast<std::size_t>(row) * cols + col] = static_cast<float>(expected_of(row, col));
  cudalabs::evidence::configure(Mode::judge, dir_.string());
  const cudalabs::CheckResult judged = check(right);
  // 6 interior rows drawn among the 8190, 6 of them the seed's: all six among those about 1 in 10^20.
  EXPECT_FALSE(judged.passed);
  EXPECT_GT(judged.bad, 0u);
}

TEST_F(CheckedRows, CompareCloseObservesNothing) {
  // A comparison of what was observed already leaves no evidence of its own,
  // and compares its arguments in any mode (a record-mode check_close compares nothing).
  cudalabs::evidence::configure(Mode::record, dir_.string());
  const std::vector<float> got = {1.0f, 2.5f};
  const std::vector<double> want = {1.0, 2.0};
  const cudalabs::CheckResult r = cudalabs::compare_close(got, want, {.abs = 0.1, .rel = 0});
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.bad, 1u);
  EXPECT_TRUE(fs::is_empty(dir_)) << "compare_close wrote evidence";
}

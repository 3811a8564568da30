#pragma once
// Which rows of a matrix product's C the CPU reference checks, where it cannot
// check them all (matmul_lab.cuh, lab 30, lab 32's cuBLAS, lab 33). Plain C++,
// so that tests/unit reaches it without a CUDA compiler.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include <cudalabs/evidence.hpp>
#include <cudalabs/random.hpp>

namespace matmul_detail {

// Rows of C checked against the CPU: all of them when the CPU reference is
// cheap (m·n·k <= all_up_to multiply-adds; 2^31: a second or two on a few
// cores), otherwise `sampled_rows`: row 0 and row m-1, where edge bugs live,
// and others drawn from `seed`. (Lab 33's reference does eight sums per
// product: 2^28, 8 rows.)
inline std::vector<int> rows_to_check(int m, int n, int k, std::uint64_t seed, double all_up_to = 2147483648.0,
                                      int sampled_rows = 64) {
  std::vector<int> rows;
  if (static_cast<double>(m) * n * k <= all_up_to || m <= sampled_rows) {
    for (int i = 0; i < m; ++i) rows.push_back(i);
    return rows;
  }
  rows = {0, m - 1};
  for (std::uint64_t draw = 0; rows.size() < static_cast<std::size_t>(sampled_rows); ++draw) {
    const int row = 1 + static_cast<int>(cudalabs::mix_seed(seed, draw) % static_cast<std::uint64_t>(m - 2));
    if (std::find(rows.begin(), rows.end(), row) == rows.end()) rows.push_back(row);
  }
  std::sort(rows.begin(), rows.end());
  return rows;
}

// The seed of rows_to_check's draw for inputs made from `seed`, where the
// rows checked are all that is compared (lab 33: no whole-C comparison). The
// seed is on the graded program's command line and can be recovered from its
// inputs, so rows drawn from it are rows a kernel can compute right while it
// skips the rest. A judge (--judge) draws them from the operating system
// instead, each time it makes a set of inputs: it runs after the graded
// program has exited, so nothing that program held says which rows they are,
// and its evidence must be the whole C. Elsewhere mix_seed(seed, 3): a run of
// one's own checks the same rows every time.
inline std::uint64_t rows_seed(std::uint64_t seed) {
  if (cudalabs::evidence::mode() == cudalabs::evidence::Mode::judge) return cudalabs::seed_from_os();
  return cudalabs::mix_seed(seed, 3);
}

// "0, 17, 4031, 8191": the rows a check compared, for its message (a student
// reproduces a judge's failure from them).
inline std::string rows_text(const std::vector<int>& rows) {
  std::string out;
  for (int row : rows) out += (out.empty() ? "" : ", ") + std::to_string(row);
  return out;
}

}  // namespace matmul_detail

#pragma once
// The result checker. It returns a CheckResult and never exits: the lab decides.
//
// Every comparison observes what it compares first (evidence.hpp): in a graded
// program that is evidence for the judge; in the judge, the graded program's
// output is what gets compared.
//
// An element passes when it is finite and |got - expected| <= abs + rel * |expected|.
// NaN and Inf never pass (so a poisoned, unwritten element fails). The result
// also carries the max abs error, the relative L2 error ||got-exp|| / ||exp||,
// the number of bad elements and the first few bad indices.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <functional>
#include <vector>

#include "evidence.hpp"

namespace cudalabs {

struct Tolerance {
  double abs = 1e-5;
  double rel = 1e-5;
};

struct BadElement {
  std::size_t index;
  double got;
  double expected;
};

struct CheckResult {
  bool passed = false;
  std::size_t count = 0;
  std::size_t bad = 0;
  double max_abs_err = 0;
  double rel_l2_err = 0;
  Tolerance tolerance;
  std::vector<BadElement> first_bad;  // at most 5
  std::string note;                   // extra reason for failure, e.g. "size mismatch"

  std::string summary() const;  // one line: "ok" or what failed and where
};

// A failed check of `count` expected elements whose output a judge does not
// have (observe()'s `missing`: the graded program never wrote it).
CheckResult missing_output(std::size_t count, const std::string& why);

CheckResult check_close(std::span<const float> got, std::span<const double> expected, Tolerance tol);
CheckResult check_close(std::span<const float> got, std::span<const float> expected, Tolerance tol);

// check_close's comparison alone, of an output already observed in full
// (observe_in_place, DeviceBuffer::download_observed): compares `got` as it
// is, in any mode, and observes nothing. For a check that compares a part of
// its output chosen where it runs (lab 33: the rows of C its judge draws, from
// the whole C the graded program left).
CheckResult compare_close(std::span<const float> got, std::span<const double> expected, Tolerance tol);

// check_close for outputs whose reference may itself be ±Inf or NaN: inputs
// beyond the finite range where the lab's contract defines the result (a sum
// with +Inf is +Inf, NaN propagates through c = a + b). Where the reference is
// NaN the output must be a NaN, but not the poison pattern 0xFFFFFFFF (no GPU
// or CPU arithmetic makes it, and the course's special inputs never hold it):
// an unwritten element still fails. Where the reference is ±Inf the output must
// be the same infinity. Elsewhere check_close's rule, and a non-finite output fails.
CheckResult check_close_ieee(std::span<const float> got, std::span<const double> expected, Tolerance tol);

// A copy (a transpose, a gather) moves bits: every output float must have the
// reference's exact bit pattern, so NaN payloads, -0.0 and subnormals must
// arrive unchanged (an arithmetic "copy" such as x * 1.0f or x + 0.0f, a round
// trip through half precision or a flush to zero fails). Compared as 32-bit
// patterns (check_exact), reported as the patterns' integer values.
CheckResult check_bits(std::span<const float> got, std::span<const float> expected);

// Combines two checks of one output (e.g. element-wise and row sums): passes only
// when both pass; errors are the worse of the two.
CheckResult both(CheckResult a, const CheckResult& b);

// The spread of random estimates (lab 27). S estimates, each normal with
// variance sigma^2, have a sample variance s^2 with (S - 1) s^2 / sigma^2
// chi-square distributed with S - 1 degrees of freedom.
// P(chi-square with `dof` degrees of freedom > x): the regularized upper
// incomplete gamma Q(dof / 2, x / 2), to about 1e-12 relative.
double chi_square_tail(double x, int dof);
// The s^2 / sigma^2 that estimates of the right variance exceed with
// probability `false_failures`, over `dof` = S - 1 degrees of freedom: the
// chi-square's upper quantile divided by dof (1.72 for dof 127 at 8.3e-7).
double variance_ratio_bound(int dof, double false_failures);

// Tolerances that grow with the work, for float32 results against a double
// reference, inputs of magnitude <= `magnitude` (eps = 2^-24 ≈ 6e-8):
//
// sum_tolerance: a sum of `terms` values of random sign, added in the blocked or
//   tree order of a GPU reduction (short sequential runs per thread, then a tree
//   or atomics). Its rounding errors add like a random walk, ~eps·sqrt(N)·|partial
//   sums|. We allow abs = 64·eps·sqrt(N)·magnitude (0.06 at N = 2^28, where the sum
//   is ~9e3 and one dropped element moves it by ~0.5), rel = 1e-6. A single
//   sequential float loop does worse (error ~eps·N) and may not pass at large N.
// dot_tolerance: each output a dot product of length `k` (matmul, attention).
//   Allow abs = 2·eps·k·magnitude² (linear, the worst case of sequential FMA:
//   5e-4 at k = 4096), rel = 1e-5. A wrong index moves an output by ~magnitude².
Tolerance sum_tolerance(std::int64_t terms, double magnitude = 1.0);
Tolerance dot_tolerance(std::int64_t k, double magnitude = 1.0);


// Integer results (histogram counts, integer prefix sums, compacted integers)
// compared exactly, as a CheckResult with a tolerance of 0. No conversion
// between the types: exact for any integer types.
// A graded program (--evidence) compares nothing itself: its verdict counts for
// nothing (evidence.hpp), so it leaves the output for the judge and moves on.
// Comparing there too would double the cost of every check in a graded run.
// `count` is the outputs it recorded: a graded program keeps no reference
// (evidence::keeps_references), so the expected side may be empty there.
CheckResult recorded_for_judge(std::size_t count);

namespace detail {
// One slice's tallies of a comparison, [begin, end) of the elements.
struct Tally {
  std::size_t begin = 0, bad = 0;
  double max_abs_err = 0, diff2 = 0, ref2 = 0;
  std::vector<BadElement> first_bad;  // at most 5
};

// Large outputs (a 4096² matmul, a 1 GiB all-reduce) are compared on every
// core: one core needs about a second per 2^28 elements, and a run checks
// each output several times. Runs slice(begin, end) over [0, n) and merges
// the tallies in index order into r: bad, max_abs_err, rel_l2_err and the
// lowest bad indices. r.passed is left to the caller.
void tally_in_parallel(std::size_t n, const std::function<Tally(std::size_t, std::size_t)>& slice, CheckResult& r);

// The element-by-element part of check_exact: `got` and `expected` of one length.
template <typename Got, typename Expected>
CheckResult exact_compare(std::span<const Got> got, std::span<const Expected> expected) {
  CheckResult r;
  r.tolerance = {.abs = 0, .rel = 0};
  r.count = expected.size();
  tally_in_parallel(expected.size(), [&](std::size_t begin, std::size_t end) {
    Tally t;
    t.begin = begin;
    for (std::size_t i = begin; i < end; ++i) {
      const auto g = static_cast<double>(got[i]), e = static_cast<double>(expected[i]);
      t.ref2 += e * e;
      if (std::cmp_equal(got[i], expected[i])) continue;  // no conversion: exact for any integer types
      ++t.bad;
      t.diff2 += (g - e) * (g - e);
      t.max_abs_err = std::max(t.max_abs_err, std::abs(g - e));
      if (t.first_bad.size() < 5) t.first_bad.push_back({i, g, e});
    }
    return t;
  }, r);
  r.passed = r.bad == 0;
  return r;
}
}  // namespace detail

template <typename Got, typename Expected>
CheckResult check_exact(std::span<const Got> got_here, std::span<const Expected> expected) {
  const Observed<Got> observed = observe(got_here);
  if (!observed.missing.empty()) return missing_output(expected.size(), observed.missing);
  if (evidence::mode() == evidence::Mode::record) return recorded_for_judge(got_here.size());
  const std::span<const Got> got = observed.data;
  if (got.size() != expected.size()) {
    CheckResult r;
    r.tolerance = {.abs = 0, .rel = 0};
    r.count = expected.size();
    r.note = "size mismatch: " + std::to_string(got.size()) + " results for " + std::to_string(expected.size()) +
             " expected";
    return r;
  }
  return detail::exact_compare(got, expected);
}

}  // namespace cudalabs

#include "cudalabs/checker.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <vector>

#include "cudalabs/reference.hpp"

namespace cudalabs {

namespace {
constexpr double eps32 = 5.9604644775390625e-8;  // 2^-24
constexpr std::size_t max_reported = 5;

using detail::Tally;

// The bits cudaMemset(0xFF) leaves in a poisoned float (DeviceBuffer::poison).
constexpr std::uint32_t poison_bits = 0xFFFFFFFFu;

// check_close_ieee's rule for a non-finite reference: the same infinity, or a
// NaN that is not the poison.
bool same_special(float got, double expected) {
  if (std::isnan(expected)) return std::isnan(got) && std::bit_cast<std::uint32_t>(got) != poison_bits;
  return static_cast<double>(got) == expected;
}

template <typename Expected>
Tally tally(std::span<const float> got, std::span<const Expected> expected, Tolerance tol, std::size_t begin,
            std::size_t end, bool specials = false) {
  Tally t;
  t.begin = begin;
  for (std::size_t i = begin; i < end; ++i) {
    double g = got[i], e = static_cast<double>(expected[i]);
    if (specials && !std::isfinite(e)) {
      if (!same_special(got[i], e)) {
        ++t.bad;
        t.max_abs_err = INFINITY;
        t.diff2 = INFINITY;
        if (t.first_bad.size() < max_reported) t.first_bad.push_back({i, g, e});
      }
      continue;  // a matching special adds no error and no reference norm
    }
    double err = std::fabs(g - e);
    bool ok = std::isfinite(g) && err <= tol.abs + tol.rel * std::fabs(e);
    if (std::isfinite(g)) {
      t.max_abs_err = std::max(t.max_abs_err, err);
      t.diff2 += err * err;
    } else {
      t.max_abs_err = INFINITY;
      t.diff2 = INFINITY;
    }
    t.ref2 += e * e;
    if (!ok) {
      ++t.bad;
      if (t.first_bad.size() < max_reported) t.first_bad.push_back({i, g, e});
    }
  }
  return t;
}

template <typename Expected>
CheckResult compare(std::span<const float> got, std::span<const Expected> expected, Tolerance tol,
                    bool specials = false) {
  CheckResult r;
  r.tolerance = tol;
  r.count = got.size();
  if (got.size() != expected.size()) {
    r.note = "size mismatch: got " + std::to_string(got.size()) + " elements, expected " +
             std::to_string(expected.size());
    return r;
  }
  detail::tally_in_parallel(got.size(), [&](std::size_t begin, std::size_t end) {
    return tally(got, expected, tol, begin, end, specials);
  }, r);
  r.passed = r.bad == 0 && r.count > 0;
  if (r.count == 0) r.note = "empty output";
  return r;
}
}  // namespace

void detail::tally_in_parallel(std::size_t n, const std::function<Tally(std::size_t, std::size_t)>& slice,
                               CheckResult& r) {
  std::mutex mutex;
  std::vector<Tally> tallies;
  ref::parallel_for(n, [&](std::size_t begin, std::size_t end) {
    Tally t = slice(begin, end);
    std::lock_guard<std::mutex> lock(mutex);
    tallies.push_back(std::move(t));
  }, std::size_t{1} << 20);
  std::sort(tallies.begin(), tallies.end(), [](const Tally& a, const Tally& b) { return a.begin < b.begin; });
  double diff2 = 0, ref2 = 0;
  for (const auto& t : tallies) {
    r.bad += t.bad;
    r.max_abs_err = std::max(r.max_abs_err, t.max_abs_err);
    diff2 += t.diff2;
    ref2 += t.ref2;
    for (const auto& b : t.first_bad)
      if (r.first_bad.size() < max_reported) r.first_bad.push_back(b);
  }
  r.rel_l2_err = ref2 > 0 ? std::sqrt(diff2 / ref2) : std::sqrt(diff2);
}

CheckResult missing_output(std::size_t count, const std::string& why) {
  CheckResult r;
  r.count = count;
  r.bad = count;
  r.note = why;
  return r;
}

namespace {
template <typename Expected>
CheckResult observed_compare(std::span<const float> got, std::span<const Expected> expected, Tolerance tol,
                             bool specials = false) {
  const Observed<float> observed = observe(got);
  if (!observed.missing.empty()) return missing_output(expected.size(), observed.missing);
  if (evidence::mode() == evidence::Mode::record) return recorded_for_judge(got.size());
  return compare(observed.data, expected, tol, specials);
}
}  // namespace

CheckResult check_close(std::span<const float> got, std::span<const double> expected, Tolerance tol) {
  return observed_compare(got, expected, tol);
}
CheckResult check_close(std::span<const float> got, std::span<const float> expected, Tolerance tol) {
  return observed_compare(got, expected, tol);
}

CheckResult compare_close(std::span<const float> got, std::span<const double> expected, Tolerance tol) {
  return compare(got, expected, tol);
}

CheckResult check_close_ieee(std::span<const float> got, std::span<const double> expected, Tolerance tol) {
  return observed_compare(got, expected, tol, /*specials=*/true);
}

CheckResult check_bits(std::span<const float> got_here, std::span<const float> expected) {
  const Observed<float> observed = observe(got_here);
  if (!observed.missing.empty()) return missing_output(expected.size(), observed.missing);
  if (evidence::mode() == evidence::Mode::record) return recorded_for_judge(got_here.size());
  const std::span<const float> got = observed.data;
  CheckResult r;
  r.tolerance = {.abs = 0, .rel = 0};
  r.count = expected.size();
  if (got.size() != expected.size()) {
    r.note = "size mismatch: " + std::to_string(got.size()) + " results for " + std::to_string(expected.size()) +
             " expected";
    return r;
  }
  // The same bytes: the common case, at memory speed. Otherwise the patterns
  // are compared as integers to say which elements differ and by how much.
  if (got.empty() || std::memcmp(got.data(), expected.data(), got.size_bytes()) == 0) {
    r.passed = true;
    return r;
  }
  const auto bits = [](std::span<const float> v) {
    std::vector<std::uint32_t> out(v.size());
    std::transform(v.begin(), v.end(), out.begin(), [](float x) { return std::bit_cast<std::uint32_t>(x); });
    return out;
  };
  const std::vector<std::uint32_t> got_bits = bits(got), expected_bits = bits(expected);
  r = detail::exact_compare<std::uint32_t, std::uint32_t>(got_bits, expected_bits);
  if (!r.passed && r.note.empty()) r.note = "bit patterns differ (a copy must move every float's bits unchanged)";
  return r;
}

CheckResult recorded_for_judge(std::size_t count) {
  CheckResult r;
  r.passed = true;
  r.count = count;
  r.note = "recorded for the judge (--evidence): compared there, not here";
  return r;
}

CheckResult both(CheckResult a, const CheckResult& b) {
  a.passed = a.passed && b.passed;
  a.bad += b.bad;
  a.max_abs_err = std::max(a.max_abs_err, b.max_abs_err);
  a.rel_l2_err = std::max(a.rel_l2_err, b.rel_l2_err);
  for (const auto& e : b.first_bad)
    if (a.first_bad.size() < max_reported) a.first_bad.push_back(e);
  if (!b.note.empty()) a.note = a.note.empty() ? b.note : a.note + "; " + b.note;
  return a;
}

std::string CheckResult::summary() const {
  if (passed) return "ok";
  if (bad == 0 && !note.empty()) return note;  // failed as a whole (a norm, a size), not element by element
  std::string s;
  char buf[256];
  if (!note.empty()) s += note + ". ";
  std::snprintf(buf, sizeof buf, "%zu of %zu elements outside |err| <= %.3g + %.3g*|ref|", bad, count, tolerance.abs,
                tolerance.rel);
  s += buf;
  for (const auto& e : first_bad) {
    std::snprintf(buf, sizeof buf, "; [%zu] got %.9g expected %.9g", e.index, e.got, e.expected);
    s += buf;
  }
  return s;
}

double chi_square_tail(double x, int dof) {
  if (dof < 1 || std::isnan(x)) return NAN;
  if (x <= 0) return 1;
  // Q(a, y) with a = dof / 2, y = x / 2 (Numerical Recipes' gammq): the series
  // of P below y = a + 1, where it converges fast and Q = 1 - P is not small;
  // Lentz's continued fraction for Q above, where the tails this is asked for
  // lie (y = 1.72 a at dof 127).
  const double a = 0.5 * dof, y = 0.5 * x;
  const double front = std::exp(a * std::log(y) - y - std::lgamma(a));
  constexpr double tiny = 1e-300, eps = 1e-15;
  if (y < a + 1) {
    double term = 1 / a, sum = term;
    for (int i = 1; i < 100000 && std::fabs(term) > eps * std::fabs(sum); ++i) sum += term *= y / (a + i);
    return 1 - sum * front;
  }
  double b = y + 1 - a, c = 1 / tiny, d = 1 / b, h = d;
  for (int i = 1; i < 100000; ++i) {
    const double an = -i * (i - a);
    b += 2;
    d = an * d + b;
    d = std::fabs(d) < tiny ? tiny : d;
    c = b + an / c;
    c = std::fabs(c) < tiny ? tiny : c;
    d = 1 / d;
    const double step = d * c;
    h *= step;
    if (std::fabs(step - 1) < eps) break;
  }
  return front * h;
}

double variance_ratio_bound(int dof, double false_failures) {
  // The tail falls from 1/2 near ratio 1 (the mean); bisect on the ratio
  // between 1 and a ratio whose tail is below the rate asked for.
  double lo = 1, hi = 2;
  while (chi_square_tail(hi * dof, dof) > false_failures) hi *= 2;
  for (int i = 0; i < 200 && hi - lo > 1e-13 * hi; ++i) {
    const double mid = 0.5 * (lo + hi);
    (chi_square_tail(mid * dof, dof) > false_failures ? lo : hi) = mid;
  }
  return hi;
}

Tolerance sum_tolerance(std::int64_t terms, double magnitude) {
  return {64.0 * eps32 * std::sqrt(static_cast<double>(std::max<std::int64_t>(terms, 1))) * magnitude, 1e-6};
}

Tolerance dot_tolerance(std::int64_t k, double magnitude) {
  return {2.0 * eps32 * static_cast<double>(std::max<std::int64_t>(k, 1)) * magnitude * magnitude, 1e-5};
}

}  // namespace cudalabs

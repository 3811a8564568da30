#pragma once
// Exact comparison of integer results (histogram counts, integer prefix sums,
// compacted integers): the CheckResult cudalabs::check_close gives, with a
// tolerance of 0. Course code, shared by labs 24 and 25; it belongs in
// common/checker.hpp next to check_close.
#include <algorithm>
#include <cmath>
#include <span>
#include <string>
#include <utility>

#include <cudalabs/checker.hpp>

template <typename Got, typename Expected>
cudalabs::CheckResult check_exact(std::span<const Got> got, std::span<const Expected> expected) {
  cudalabs::CheckResult r;
  r.tolerance = {.abs = 0, .rel = 0};
  r.count = expected.size();
  if (got.size() != expected.size()) {
    r.note = "size mismatch: " + std::to_string(got.size()) + " results for " + std::to_string(expected.size()) +
             " expected";
    return r;
  }
  double err2 = 0, ref2 = 0;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const auto g = static_cast<double>(got[i]), e = static_cast<double>(expected[i]);
    ref2 += e * e;
    if (std::cmp_equal(got[i], expected[i])) continue;  // no conversion: exact for any integer types
    ++r.bad;
    err2 += (g - e) * (g - e);
    r.max_abs_err = std::max(r.max_abs_err, std::abs(g - e));
    if (r.first_bad.size() < 5) r.first_bad.push_back({i, g, e});
  }
  r.rel_l2_err = ref2 > 0 ? std::sqrt(err2 / ref2) : std::sqrt(err2);
  r.passed = r.bad == 0;
  return r;
}

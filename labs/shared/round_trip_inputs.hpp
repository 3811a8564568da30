#pragma once
// The inputs of the host-to-host vector add that labs 03 and 08 time: a and b
// in pageable memory (std::vector) and the same values in pinned memory, with
// their double-precision sum, and the checks of what the copies and the add
// leave. The course's host code (labs/shared/).
//
// Two kinds (--inputs, value_kinds::vector_add_inputs_flag): uniform values in
// [-100, 100), or specials, where a quarter of them are ±Inf, NaNs with
// payloads, ±0, subnormals, ±FLT_MAX (value_kinds::with_specials, every special
// at the tail). With specials:
//   a copy must move every float's bits unchanged (check_bits): a "copy" that
//   goes through float arithmetic (x * 1.0f, x + 0.0f, a round trip through
//   half precision, a flush to zero) changes a NaN's payload, -0.0 or a
//   subnormal, and one that skips the tail misses the specials there;
//   a sum is one float addition, defined by IEEE 754 there too (NaN in, NaN
//   out; Inf + -Inf = NaN; FLT_MAX + FLT_MAX = +Inf): check_close_ieee against
//   the double sum rounded to float.
// With uniform inputs the checks are the ones the labs always made.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include <cudalabs/checker.hpp>
#include <cudalabs/error.hpp>
#include <cudalabs/memory.hpp>
#include <cudalabs/random.hpp>

#include "value_kinds.hpp"

struct RoundTripInputs {
  RoundTripInputs(std::int64_t n, bool with_specials)
      : specials(with_specials), a(n), b(n), pinned_a(n, "pinned a"), pinned_b(n, "pinned b") {}

  // a from mix_seed(seed, 1), b from mix_seed(seed, 2), written in place (the
  // variants hold their addresses), and their sum: once per size, and again
  // with a fresh seed for the harness's last check. Waits for `stream` first:
  // a timed copy may still be reading the pinned inputs.
  void draw(std::uint64_t seed, cudaStream_t stream) {
    CUDALABS_CHECK(cudaStreamSynchronize(stream));
    std::ranges::copy(value_kinds::uniform_or_specials(specials, a.size(), cudalabs::mix_seed(seed, 1), -100.0f, 100.0f),
                      a.begin());
    std::ranges::copy(value_kinds::uniform_or_specials(specials, b.size(), cudalabs::mix_seed(seed, 2), -100.0f, 100.0f),
                      b.begin());
    std::ranges::copy(a, pinned_a.data());
    std::ranges::copy(b, pinned_b.data());
    expected = value_kinds::vector_add_reference(a, b, specials);
  }

  // c = a + b as the add left it: one rounding, half an ulp (2^-24 relative).
  cudalabs::CheckResult check_sum(std::span<const float> c) const {
    const cudalabs::Tolerance one_rounding{.abs = 0, .rel = 6e-8};
    return specials ? cudalabs::check_close_ieee(c, expected, one_rounding)
                    : cudalabs::check_close(c, expected, one_rounding);
  }

  // `got`, a copy of `sent`: exact (with specials, bit for bit).
  cudalabs::CheckResult check_copy(std::span<const float> got, std::span<const float> sent) const {
    return specials ? cudalabs::check_bits(got, sent) : cudalabs::check_close(got, sent, {.abs = 0, .rel = 0});
  }

  // a and b as uploads left them on the device.
  cudalabs::CheckResult check_uploaded(std::span<const float> dev_a, std::span<const float> dev_b) const {
    return cudalabs::both(check_copy(dev_a, a), check_copy(dev_b, b));
  }

  // c as a download left it on the host, from the add's result on the device:
  // with specials a copy of it, bit for bit; else within one rounding of a + b.
  cudalabs::CheckResult check_downloaded(std::span<const float> host_c, const cudalabs::DeviceBuffer<float>& dev_c) const {
    return specials ? check_copy(host_c, dev_c.download()) : check_sum(host_c);
  }

  // A whole round trip: c on the host within one rounding of a + b, and with
  // specials a and b on the device bit for bit too (an upload through float
  // arithmetic turns -0.0 into +0.0, which the sum alone does not show).
  cudalabs::CheckResult check_round_trip(std::span<const float> host_c, const cudalabs::DeviceBuffer<float>& dev_a,
                                         const cudalabs::DeviceBuffer<float>& dev_b) const {
    if (!specials) return check_sum(host_c);
    return cudalabs::both(check_sum(host_c), check_uploaded(dev_a.download(), dev_b.download()));
  }

  bool specials;
  std::vector<float> a, b;
  cudalabs::PinnedBuffer<float> pinned_a, pinned_b;
  std::vector<double> expected;  // a + b, in double (with specials, rounded to float)
};

#pragma once
// The inputs of the host-to-host vector add that labs 03 and 08 time: a and b
// in pageable memory (std::vector) and the same values in pinned memory, with
// their double-precision sum. The course's host code (labs/shared/).
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include <cudalabs/error.hpp>
#include <cudalabs/memory.hpp>
#include <cudalabs/random.hpp>
#include <cudalabs/reference.hpp>

struct RoundTripInputs {
  explicit RoundTripInputs(std::int64_t n) : a(n), b(n), pinned_a(n, "pinned a"), pinned_b(n, "pinned b") {}

  // a from mix_seed(seed, 1), b from mix_seed(seed, 2), uniform in [-100, 100),
  // written in place (the variants hold their addresses), and their sum: once per
  // size, and again with a fresh seed for the harness's last check. Waits for
  // `stream` first: a timed copy may still be reading the pinned inputs.
  void draw(std::uint64_t seed, cudaStream_t stream) {
    CUDALABS_CHECK(cudaStreamSynchronize(stream));
    std::ranges::copy(cudalabs::random_floats(a.size(), cudalabs::mix_seed(seed, 1), -100.0f, 100.0f), a.begin());
    std::ranges::copy(cudalabs::random_floats(b.size(), cudalabs::mix_seed(seed, 2), -100.0f, 100.0f), b.begin());
    std::ranges::copy(a, pinned_a.data());
    std::ranges::copy(b, pinned_b.data());
    expected = cudalabs::ref::vector_add(a, b);
  }

  std::vector<float> a, b;
  cudalabs::PinnedBuffer<float> pinned_a, pinned_b;
  std::vector<double> expected;  // a + b, in double
};

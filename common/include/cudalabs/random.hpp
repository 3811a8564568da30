#pragma once
// Seeded random inputs. Counter-based (value i depends only on seed and i), so
// the same seed gives the same data on every machine and in any thread count.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "math.hpp"  // CUDALABS_HD

namespace cudalabs {

inline constexpr std::uint64_t default_seed = 42;

// The generator under every function below, for host and device code alike:
// value i of the stream `seed` is the top 24 bits of splitmix64(seed ^
// splitmix64(i)), a multiple of 2^-24 in [0, 1), exact in float. A kernel that
// draws unit_float(stream, i) gives random_floats' values bit for bit
// wherever lo + (hi - lo)·u is exact, where the device's fused multiply-add and
// the host's multiply then add cannot differ: for [-1, 1), 2u and 2u - 1 are
// multiples of 2^-23 below 2 in magnitude (the matmul labs' inputs,
// labs/shared/matmul_lab.cuh).
CUDALABS_HD constexpr std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}
CUDALABS_HD constexpr float unit_float(std::uint64_t seed, std::uint64_t i) {
  return static_cast<float>(splitmix64(seed ^ splitmix64(i)) >> 40) * (1.0f / 16777216.0f);
}

// Uniform floats in [lo, hi). Never all-equal, never all-zero.
std::vector<float> random_floats(std::size_t n, std::uint64_t seed, float lo = -1.0f, float hi = 1.0f);

// Small integers in [lo, hi] stored as float: sums of products of them are exact
// in float32 while they stay below 2^24, so a result can be compared exactly.
std::vector<float> random_small_ints(std::size_t n, std::uint64_t seed, int lo = -4, int hi = 4);

// A distinct stream for each buffer of one run: mix(seed, 1), mix(seed, 2), ...
std::uint64_t mix_seed(std::uint64_t seed, std::uint64_t stream);

// 64 bits from the operating system (std::random_device), a new draw at each
// call: for what nothing in the process may know before it is drawn, --seed
// included (a launcher reads the command line as well as the harness does):
// which timed runs the harness checks, which rows of C a judge compares.
std::uint64_t seed_from_os();

// The seed of run `run` of a timing whose inputs come from `seed`
// (Measurement::timed_runs: warm-up runs are negative, timed runs 0, 1, ...):
// a seed of its own for every run, which a judge can derive again.
std::uint64_t timed_run_seed(std::uint64_t seed, int run);

}  // namespace cudalabs

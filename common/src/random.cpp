#include "cudalabs/random.hpp"

#include <mutex>
#include <random>

#include "cudalabs/reference.hpp"

namespace cudalabs {

namespace {
constexpr std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}
// 24 random bits -> [0, 1), exactly representable in float.
inline float unit_float(std::uint64_t seed, std::size_t i) {
  return static_cast<float>(splitmix64(seed ^ splitmix64(i)) >> 40) * (1.0f / 16777216.0f);
}
}  // namespace

std::uint64_t mix_seed(std::uint64_t seed, std::uint64_t stream) { return splitmix64(seed + 0x632BE59BD9B4E019ull * stream); }

std::uint64_t seed_from_os() {
  static std::random_device entropy;  // 32 bits a call
  static std::mutex in_use;           // random_device's operator() is not safe to call from two threads at once
  const std::lock_guard<std::mutex> lock(in_use);
  return (static_cast<std::uint64_t>(entropy()) << 32) ^ entropy();
}

// A stream of its own (the tag), then the run's index as a 64-bit two's
// complement: negative warm-up indices do not meet the timed runs'.
std::uint64_t timed_run_seed(std::uint64_t seed, int run) {
  return mix_seed(mix_seed(seed, 0x71AED5EEDull), static_cast<std::uint64_t>(static_cast<std::int64_t>(run)));
}

std::vector<float> random_floats(std::size_t n, std::uint64_t seed, float lo, float hi) {
  std::vector<float> v(n);
  ref::parallel_for(n, [&](std::size_t b, std::size_t e) {
    for (std::size_t i = b; i < e; ++i) v[i] = lo + (hi - lo) * unit_float(seed, i);
  });
  return v;
}

std::vector<float> random_small_ints(std::size_t n, std::uint64_t seed, int lo, int hi) {
  std::vector<float> v(n);
  const int span = hi - lo + 1;
  ref::parallel_for(n, [&](std::size_t b, std::size_t e) {
    for (std::size_t i = b; i < e; ++i) {
      int k = static_cast<int>(unit_float(seed, i) * static_cast<float>(span));
      v[i] = static_cast<float>(lo + (k < span ? k : span - 1));
    }
  });
  return v;
}

}  // namespace cudalabs

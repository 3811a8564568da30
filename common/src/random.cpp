#include "cudalabs/random.hpp"

#include <mutex>
#include <random>

#include "cudalabs/reference.hpp"

namespace cudalabs {

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

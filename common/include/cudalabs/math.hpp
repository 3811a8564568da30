#pragma once
// Small integer helpers usable on host and device.
#include <cstdint>

#if defined(__CUDACC__)
#define CUDALABS_HD __host__ __device__
#else
#define CUDALABS_HD
#endif

namespace cudalabs {

// Blocks needed to cover n items with `per_block` items each (n need not divide).
template <typename T>
CUDALABS_HD constexpr T ceil_div(T n, T per_block) {
  return (n + per_block - 1) / per_block;
}

CUDALABS_HD constexpr bool is_power_of_two(std::int64_t x) { return x > 0 && (x & (x - 1)) == 0; }

}  // namespace cudalabs

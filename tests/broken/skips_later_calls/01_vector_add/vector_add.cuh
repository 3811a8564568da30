// BROKEN ON PURPOSE for tests/grading: the grader must give lab 01 zero for correctness.
// The bug: the launcher does the work on its first two calls only, then returns (a kernel that "knows" the answer is still there). Caught by the last check: fresh input values, output poisoned.
#pragma once
#include <cstdint>

#include <cudalabs/error.hpp>
#include <cudalabs/math.hpp>

inline constexpr int vector_add_block = 256;

__global__ void vector_add_kernel(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c,
                                  std::int64_t n) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

inline void vector_add_cpu(const float* a, const float* b, float* c, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) c[i] = a[i] + b[i];
}

inline void vector_add(const float* a, const float* b, float* c, std::int64_t n, cudaStream_t stream) {
  static int calls = 0;
  if (++calls > 2) return;  // BROKEN: later calls skip the work
  const auto blocks = static_cast<unsigned>(cudalabs::ceil_div<std::int64_t>(n, vector_add_block));
  vector_add_kernel<<<blocks, vector_add_block, 0, stream>>>(a, b, c, n);
  CUDALABS_CHECK_LAUNCH("vector_add_kernel");
}

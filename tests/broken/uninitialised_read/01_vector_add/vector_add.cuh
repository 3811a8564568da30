// BROKEN ON PURPOSE for tests/grading: the grader must give lab 01 zero for correctness.
// The bug: the kernel reads a scratch buffer that nothing ever wrote (uninitialised device memory). The result is right unless the garbage happens to be 12345; caught by compute-sanitizer initcheck.
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

__global__ void vector_add_scratch_kernel(const float* __restrict__ a, const float* __restrict__ b,
                                          const float* __restrict__ scratch, float* __restrict__ c, std::int64_t n) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  // BROKEN: scratch is never written. One thread reads it (one report per launch:
  // a read in every thread would make initcheck report millions and crawl).
  const float junk = i == 0 ? scratch[0] : 0.0f;
  if (i < n) c[i] = a[i] + b[i] + (junk == 12345.0f ? 1.0f : 0.0f);
}

inline void vector_add(const float* a, const float* b, float* c, std::int64_t n, cudaStream_t stream) {
  static float* scratch = nullptr;
  static std::int64_t scratch_n = 0;
  if (scratch_n == 0) {  // allocated, never written: BROKEN
    CUDALABS_CHECK(cudaMalloc(&scratch, sizeof(float)));
    scratch_n = n;
  }
  const auto blocks = static_cast<unsigned>(cudalabs::ceil_div<std::int64_t>(n, vector_add_block));
  vector_add_scratch_kernel<<<blocks, vector_add_block, 0, stream>>>(a, b, scratch, c, n);
  CUDALABS_CHECK_LAUNCH("vector_add_scratch_kernel");
}

// BROKEN ON PURPOSE for tests/grading: the grader must give lab 01 zero for correctness.
// The bug: a race across streams. A copy of a is staged on a second stream by a slow kernel, and the add on the caller's stream reads the staging buffer without waiting for it (no event). It reads the previous call's values: right while the inputs do not change, wrong on fresh inputs.
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

// Slow on purpose (a stand-in for real work on the side stream): each thread
// waits ~50 us before it writes, so the add reliably runs first.
__global__ void stage_kernel(const float* __restrict__ a, float* __restrict__ staged, std::int64_t n) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  __nanosleep(50000);
  if (i < n) staged[i] = a[i];
}

__global__ void add_staged_kernel(const float* __restrict__ staged, const float* __restrict__ b, float* __restrict__ c,
                                  std::int64_t n) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) c[i] = staged[i] + b[i];
}

inline void vector_add(const float* a, const float* b, float* c, std::int64_t n, cudaStream_t stream) {
  static cudaStream_t side = nullptr;
  static float* staged = nullptr;
  static std::int64_t staged_n = 0;
  if (!side) CUDALABS_CHECK(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking));
  if (staged_n < n) {
    if (staged) CUDALABS_CHECK(cudaFree(staged));
    CUDALABS_CHECK(cudaMalloc(&staged, n * sizeof(float)));
    CUDALABS_CHECK(cudaMemset(staged, 0, n * sizeof(float)));
    staged_n = n;
  }
  const auto blocks = static_cast<unsigned>(cudalabs::ceil_div<std::int64_t>(n, vector_add_block));
  stage_kernel<<<blocks, vector_add_block, 0, side>>>(a, staged, n);
  CUDALABS_CHECK_LAUNCH("stage_kernel");
  // BROKEN: no cudaEventRecord on `side` + cudaStreamWaitEvent on `stream` here.
  add_staged_kernel<<<blocks, vector_add_block, 0, stream>>>(staged, b, c, n);
  CUDALABS_CHECK_LAUNCH("add_staged_kernel");
}

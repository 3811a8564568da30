// BROKEN ON PURPOSE for tests/grading: the grader must give lab 01 zero for correctness.
// The bug: the answer is computed on the host: inputs copied down, added by the CPU, the result copied back. Right every time; caught by the trace of the run's GPU work (copies to the host and back, no kernel).
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

#include <vector>

inline void vector_add(const float* a, const float* b, float* c, std::int64_t n, cudaStream_t stream) {
  std::vector<float> ha(n), hb(n), hc(n);  // BROKEN: the work happens on the CPU
  CUDALABS_CHECK(cudaMemcpyAsync(ha.data(), a, n * sizeof(float), cudaMemcpyDeviceToHost, stream));
  CUDALABS_CHECK(cudaMemcpyAsync(hb.data(), b, n * sizeof(float), cudaMemcpyDeviceToHost, stream));
  CUDALABS_CHECK(cudaStreamSynchronize(stream));
  vector_add_cpu(ha.data(), hb.data(), hc.data(), n);
  CUDALABS_CHECK(cudaMemcpyAsync(c, hc.data(), n * sizeof(float), cudaMemcpyHostToDevice, stream));
  CUDALABS_CHECK(cudaStreamSynchronize(stream));
}

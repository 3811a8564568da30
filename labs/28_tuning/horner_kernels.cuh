#pragma once
// The compute-bound kernel of lab 28: y = p(x) for the degree-256 polynomial
// of polynomial.hpp, by Horner's rule. 256 dependent FMAs per element: each
// needs the result of the one before, 4 cycles later on an H100 SM, so one
// warp alone issues an FMA every 4th cycle at best. An SM sub-partition
// reaches its one warp-FMA per cycle only with at least 4 warps ready at
// every cycle: from other warps (occupancy) or from independent chains in
// the same thread (Items elements evaluated in lock step: instruction-level
// parallelism). This is the lab's question: where does occupancy matter?
//
// one_per_thread  one element per thread, ceil(n / block) blocks
// grid_stride     a grid of the caller's choosing; Items elements per thread
//                 per pass, their Horner chains interleaved
#include <cstdint>

#include <cudalabs/error.hpp>
#include <cudalabs/math.hpp>

#include "polynomial.hpp"

// Items values at once: each step is Items independent FMAs. Unrolled, every
// coefficient is a compile-time constant (an FFMA immediate).
template <int Items>
__device__ __forceinline__ void horner(float (&p)[Items], const float (&x)[Items]) {
#pragma unroll
  for (int k = 0; k < Items; ++k) p[k] = polynomial_coefficient(polynomial_degree);
#pragma unroll
  for (int d = polynomial_degree - 1; d >= 0; --d) {
#pragma unroll
    for (int k = 0; k < Items; ++k) p[k] = fmaf(p[k], x[k], polynomial_coefficient(d));
  }
}

__global__ void horner_one_per_thread_kernel(const float* __restrict__ x, float* __restrict__ y, std::int64_t n) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float p[1];
  const float v[1] = {x[i]};
  horner<1>(p, v);
  y[i] = p[0];
}

template <int Items>
__global__ void horner_grid_stride_kernel(const float* __restrict__ x, float* __restrict__ y, std::int64_t n) {
  static_assert(Items >= 1 && Items <= 16, "Items: 1 to 16 elements per thread per pass");
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  for (; i + (Items - 1) * stride < n; i += Items * stride) {
    float v[Items], p[Items];
#pragma unroll
    for (int k = 0; k < Items; ++k) v[k] = x[i + k * stride];
    horner<Items>(p, v);
#pragma unroll
    for (int k = 0; k < Items; ++k) y[i + k * stride] = p[k];
  }
  for (; i < n; i += stride) {  // the last, partial pass: one chain at a time
    float p[1];
    const float v[1] = {x[i]};
    horner<1>(p, v);
    y[i] = p[0];
  }
}

inline void horner_one_per_thread(const float* x, float* y, std::int64_t n, int block, cudaStream_t stream) {
  const auto blocks = static_cast<unsigned>(cudalabs::ceil_div<std::int64_t>(n, block));
  horner_one_per_thread_kernel<<<blocks, block, 0, stream>>>(x, y, n);
  CUDALABS_CHECK_LAUNCH("horner_one_per_thread_kernel");
}

template <int Items>
inline void horner_grid_stride(const float* x, float* y, std::int64_t n, unsigned blocks, int block,
                               cudaStream_t stream) {
  horner_grid_stride_kernel<Items><<<blocks, block, 0, stream>>>(x, y, n);
  CUDALABS_CHECK_LAUNCH("horner_grid_stride_kernel");
}

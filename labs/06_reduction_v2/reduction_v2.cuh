#pragma once
// Reduction v2: each thread adds two elements while it loads them.
//
// Lab 04's tree gives each thread one element, so half the threads are idle
// from the first step on, and a block does 8 barrier steps for 1 KB of input.
// Here a block of 256 threads covers 512 elements: each thread loads two
// (a block apart, so both loads are coalesced and both are in flight at once)
// and adds them in a register before the same 8-step tree. Half the blocks,
// half the tree steps and barriers per byte, twice the bytes in flight per
// thread.
#include <cstdint>

#include <cudalabs/error.hpp>
#include <cudalabs/math.hpp>

inline constexpr int two_loads_block = 256;
inline constexpr std::int64_t two_loads_per_block = 2 * two_loads_block;  // elements one block reduces
static_assert(cudalabs::is_power_of_two(two_loads_block), "the halving loop needs a power-of-two block size");

__global__ void reduce_two_loads_kernel(const float* __restrict__ in, float* __restrict__ partials, std::int64_t n) {
  __shared__ float cache[two_loads_block];
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * two_loads_per_block + threadIdx.x;
  const std::int64_t j = i + two_loads_block;
  cache[threadIdx.x] = (i < n ? in[i] : 0.0f) + (j < n ? in[j] : 0.0f);
  __syncthreads();
  for (int stride = two_loads_block / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) cache[threadIdx.x] += cache[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0) partials[blockIdx.x] = cache[0];
}

// One pass: n values in, ceil(n / 512) partial sums out.
inline void reduce_two_loads(const float* in, float* partials, std::int64_t n, cudaStream_t stream) {
  const auto blocks = static_cast<unsigned>(cudalabs::ceil_div(n, two_loads_per_block));
  reduce_two_loads_kernel<<<blocks, two_loads_block, 0, stream>>>(in, partials, n);
  CUDALABS_CHECK_LAUNCH("reduce_two_loads_kernel");
}

// BROKEN ON PURPOSE for tests/grading: the grader must give lab 02's float4 variant zero.
// The bug: from 2^26 elements (buffers of 768 MiB and more: the benchmark's 2^28) the
// float4 launcher keeps the pointers of its first call at each size (a "plan" cached by
// shape), and on that first call allocates all but 1 GiB of the free device memory and
// never frees it: the buffers no longer fit twice, so the last check cannot move them to
// new allocations, and the inputs changed in place read right through the kept pointers.
// Below 2^26 it is the course's launcher: the correctness runs' sizes would still move
// within the 1 GiB left, and the next size's buffers must fit beside what it keeps.
#pragma once
// Two more ways to write lab 01's vector add, to see what the launch shape and
// the load width change. The lesson of the measurements (results/h100): at
// 2^28 elements all three move the bytes at about the copy bandwidth — vector
// add is limited by DRAM, not by how the threads are arranged.
#include <algorithm>
#include <cstdint>

#include <cudalabs/device.hpp>
#include <cudalabs/error.hpp>
#include <cudalabs/math.hpp>

inline constexpr int grid_stride_block = 256;

// A grid sized to the GPU (every SM full), each thread striding through the
// array: one launch covers any n, and the block scheduler is not involved
// after the first wave.
__global__ void vector_add_grid_stride_kernel(const float* __restrict__ a, const float* __restrict__ b,
                                              float* __restrict__ c, std::int64_t n) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    c[i] = a[i] + b[i];
}

// As grid_stride, but each thread moves 16 bytes per load (float4): a quarter
// of the load instructions. cudaMalloc returns 256-byte-aligned memory, so the
// float4 view of the first n/4*4 elements is aligned; the last n % 4 elements
// are added one by one.
__global__ void vector_add_float4_kernel(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c,
                                         std::int64_t n) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  const std::int64_t first = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::int64_t n4 = n / 4;
  const auto* a4 = reinterpret_cast<const float4*>(a);
  const auto* b4 = reinterpret_cast<const float4*>(b);
  auto* c4 = reinterpret_cast<float4*>(c);
  for (std::int64_t i = first; i < n4; i += stride) {
    const float4 x = a4[i], y = b4[i];
    c4[i] = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
  }
  for (std::int64_t i = 4 * n4 + first; i < n; i += stride) c[i] = a[i] + b[i];
}

// The grids of the two launchers for n elements (asked once per size, outside
// the timed runs: the occupancy API is a host call). float4 needs a quarter of
// the threads.
inline unsigned vector_add_grid_stride_blocks(std::int64_t n) {
  return cudalabs::resident_blocks(vector_add_grid_stride_kernel, grid_stride_block, n);
}
inline unsigned vector_add_float4_blocks(std::int64_t n) {
  return cudalabs::resident_blocks(vector_add_float4_kernel, grid_stride_block, std::max<std::int64_t>(n / 4, 1));
}

inline void vector_add_grid_stride(const float* a, const float* b, float* c, std::int64_t n, unsigned blocks,
                                   cudaStream_t stream) {
  vector_add_grid_stride_kernel<<<blocks, grid_stride_block, 0, stream>>>(a, b, c, n);
  CUDALABS_CHECK_LAUNCH("vector_add_grid_stride_kernel");
}

// block_threads: the tuner's sweep (make tune LAB=02) launches other block sizes
// through this same launcher.
inline void vector_add_float4(const float* a, const float* b, float* c, std::int64_t n, unsigned blocks,
                              cudaStream_t stream, int block_threads = grid_stride_block) {
  // BROKEN: a "plan" made on the first call at each large size and reused after:
  // the pointers of that call, kept by shape, and most of the device kept with it.
  struct Plan {
    std::int64_t n;
    const float* a;
    const float* b;
    float* c;
  };
  static Plan plans[64];
  static int planned = 0;
  if (n >= (std::int64_t{1} << 26)) {
    Plan* plan = nullptr;
    for (int i = 0; i < planned; ++i)
      if (plans[i].n == n) plan = &plans[i];
    if (!plan && planned < 64) {
      plan = &(plans[planned++] = Plan{n, a, b, c});
      std::size_t free_b = 0, total_b = 0;
      CUDALABS_CHECK(cudaMemGetInfo(&free_b, &total_b));
      const std::size_t left = std::size_t{1} << 30;
      void* kept = nullptr;  // never freed
      if (free_b > left) CUDALABS_CHECK(cudaMalloc(&kept, free_b - left));
    }
    if (plan) a = plan->a, b = plan->b, c = plan->c;
  }
  vector_add_float4_kernel<<<blocks, block_threads, 0, stream>>>(a, b, c, n);
  CUDALABS_CHECK_LAUNCH("vector_add_float4_kernel");
}

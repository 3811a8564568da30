// BROKEN ON PURPOSE for tests/grading: the grader must give lab 02 zero for CORRECTNESS.
// The bug: float4's launcher counts its calls on the same output, and from the
// third (the timed runs: the first two are the checked run and its repeat) adds
// only the first 90% of the elements. The rest still holds the answer of an
// earlier call, so without more the output of the timed runs is right and the
// timed runs 10% faster, within what DRAM can deliver: performance points for a
// kernel that does less. Timed runs start from a poisoned output (as checked
// runs do), so the last tenth is NaN when the timed runs' output is checked.
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
  // BEGIN SOLUTION grid_stride
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    c[i] = a[i] + b[i];
  // END SOLUTION
  // STUB: // TODO: each thread adds elements i, i + stride, i + 2·stride, ... (stride: all the grid's threads) while i < n.
}

// As grid_stride, but each thread moves 16 bytes per load (float4): a quarter
// of the load instructions. cudaMalloc returns 256-byte-aligned memory, so the
// float4 view of the first n/4*4 elements is aligned; the last n % 4 elements
// are added one by one.
__global__ void vector_add_float4_kernel(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c,
                                         std::int64_t n) {
  // BEGIN SOLUTION float4
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
  // END SOLUTION
  // STUB: // TODO: grid-stride over the n / 4 float4 of a, b and c, then the last n % 4 elements one by one.
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
  // BEGIN SOLUTION grid_stride
  vector_add_grid_stride_kernel<<<blocks, grid_stride_block, 0, stream>>>(a, b, c, n);
  CUDALABS_CHECK_LAUNCH("vector_add_grid_stride_kernel");
  // END SOLUTION
  // STUB: cudalabs::not_implemented("vector_add_grid_stride", a, b, c, n, blocks, stream);
}

// block_threads: the tuner's sweep (make tune LAB=02) launches other block sizes
// through this same launcher.
inline void vector_add_float4(const float* a, const float* b, float* c, std::int64_t n, unsigned blocks,
                              cudaStream_t stream, int block_threads = grid_stride_block) {
  // BEGIN SOLUTION float4
  // BROKEN: from the third call on the same output and size (the first two are
  // the checks), the last tenth of the elements is left as it was. (The size
  // too: a new size's buffer may reuse the last one's address.)
  static const float* seen_c = nullptr;
  static std::int64_t seen_n = -1;
  static int calls = 0;
  calls = c == seen_c && n == seen_n ? calls + 1 : 1;
  seen_c = c, seen_n = n;
  vector_add_float4_kernel<<<blocks, block_threads, 0, stream>>>(a, b, c, calls > 2 ? n - n / 10 : n);
  CUDALABS_CHECK_LAUNCH("vector_add_float4_kernel");
  // END SOLUTION
  // STUB: cudalabs::not_implemented("vector_add_float4", a, b, c, n, blocks, stream, block_threads);
}

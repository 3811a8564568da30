// BROKEN ON PURPOSE for tests/grading: lab 02 must get zero for correctness.
// The bug: unjoined_timing's, told from the traced runs by the clock. From its
// third call on the same output, float4's launcher times its own launch with
// the CPU's time-stamp counter: a traced run (the first one, and those between
// the timed runs) records every call, so its launch takes longer. Only when
// the launch was fast (a timed run) does it add the last fifth of the elements
// on a stream of its own, never joined back. Traced runs are proper ones; the
// timed runs' events see four fifths of the work. What catches it: the import
// audit, which finds the rdtsc instruction in the kernel file's host code
// (tools/grader/audit.py; clock_gettime or std::chrono's now() are refused as
// imports, tools/allowed_imports.toml [reject.reading_the_clock]).
#pragma once
// Two more ways to write lab 01's vector add, to see what the launch shape and
// the load width change. The lesson of the measurements (results/h100): at
// 2^28 elements all three move the bytes at about the copy bandwidth — vector
// add is limited by DRAM, not by how the threads are arranged.
#include <algorithm>
#include <cstdint>
#include <x86intrin.h>

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
  // BROKEN: from the third call on the same output, a launch that returned
  // quickly (not a traced run) leaves the last fifth to a stream of the
  // launcher's own, which waits for the given stream's work so far and is
  // never joined back.
  static const float* last_c = nullptr;
  static std::int64_t last_n = -1;
  static int same_output_calls = 0;
  static unsigned long long fastest = ~0ull;
  static cudaStream_t side = nullptr;
  static cudaEvent_t fork = nullptr;
  same_output_calls = c == last_c && n == last_n ? same_output_calls + 1 : 1;
  last_c = c, last_n = n;
  if (!side) {
    CUDALABS_CHECK(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking));
    CUDALABS_CHECK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
  }
  const std::int64_t head = n < 5 ? n : n / 5 * 4 / 4 * 4;  // a multiple of 4: the tail starts 16-byte aligned
  const unsigned long long start = __rdtsc();
  vector_add_float4_kernel<<<blocks, block_threads, 0, stream>>>(a, b, c, head);
  const unsigned long long took = __rdtsc() - start;
  CUDALABS_CHECK_LAUNCH("vector_add_float4_kernel");
  fastest = took < fastest ? took : fastest;
  if (head == n) return;
  const bool traced = same_output_calls < 3 || took > 2 * fastest;
  cudaStream_t tail_stream = traced ? stream : side;
  if (!traced) {
    CUDALABS_CHECK(cudaEventRecord(fork, stream));
    CUDALABS_CHECK(cudaStreamWaitEvent(side, fork, 0));
  }
  vector_add_float4_kernel<<<blocks, block_threads, 0, tail_stream>>>(a + head, b + head, c + head, n - head);
  CUDALABS_CHECK_LAUNCH("vector_add_float4_kernel");
  // END SOLUTION
  // STUB: cudalabs::not_implemented("vector_add_float4", a, b, c, n, blocks, stream, block_threads);
}

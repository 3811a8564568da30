// BROKEN ON PURPOSE for tests/grading: the grader must give lab 02 zero for CORRECTNESS.
// The bug: float4's launcher counts its calls on the same output, and from the
// third (the warm-up and timed runs: the first two are the checked run and its
// repeat) adds only the first half of the elements on about half of its calls,
// which ones fixed by a hash of the call count: a coin the harness cannot see.
// The rest of the output is poisoned (NaN) before each timed run, so a cheap
// call leaves NaN there; a full call leaves the right answer. The median of the
// timed runs mixes full and half-priced runs: performance points for a kernel
// that does less.
// Why checking only the output the timing left is not enough: the timer stops
// when its median is precise enough, after a number of runs no launcher can
// know in advance, so the last timed run is a full one about half of the time
// (for this hash: at 48% of the run counts from 10 to 199), and then that check
// passes. The harness also checks the output of timed runs it picks after each
// run has finished (checks_timed_run in common/include/cudalabs/timer.hpp):
// always the first k = 2, then run i with probability 2/(i+1), so that the runs
// checked include a uniform sample of 2 of all the timed runs, however many
// there are (about 5 checked of 10 runs, 9 of 100). Against a launcher that is
// cheap on each call with probability 1/2, whatever the harness does, each
// of those 2 lands on a cheap call with probability 1/2: it passes with
// probability at most 2^-k = 1/4 over them, and less with the other checks and
// the last run's. This hash makes the 7th launch on one output cheap (full,
// full, cheap, full, cheap, ... from the first launch), which is timed run 2
// (2 checks and 3 warm-ups before it), one of the first two, always checked:
// caught every time.
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
  // the checks), only the first half of the elements on the calls whose count
  // hashes to an odd number. (The size too: a new size's buffer may reuse the
  // last one's address.)
  static const float* seen_c = nullptr;
  static std::int64_t seen_n = -1;
  static std::uint64_t calls = 0;
  calls = c == seen_c && n == seen_n ? calls + 1 : 1;
  seen_c = c, seen_n = n;
  std::uint64_t h = calls * 0x9E3779B97F4A7C15ull;  // splitmix64's finaliser: a fair coin per call
  h = (h ^ (h >> 30)) * 0xBF58476D1CE4E5B9ull;
  h = (h ^ (h >> 27)) * 0x94D049BB133111EBull;
  const bool cheap = calls > 2 && ((h ^ (h >> 31)) & 1) != 0;
  vector_add_float4_kernel<<<blocks, block_threads, 0, stream>>>(a, b, c, cheap ? n / 2 : n);
  CUDALABS_CHECK_LAUNCH("vector_add_float4_kernel");
  // END SOLUTION
  // STUB: cudalabs::not_implemented("vector_add_float4", a, b, c, n, blocks, stream, block_threads);
}

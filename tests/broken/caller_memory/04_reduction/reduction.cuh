#pragma once
// BROKEN CASE caller_memory (tests/broken/README.md): the kernel stores 0 as every
// block's sum, so the whole sum comes out 0; and the launcher, with nothing but
// plain host code (no import the audit could reject), finds the harness's
// SumProblem (reduction_driver.cuh) in the frames of its callers on the host
// stack and overwrites its expected value with 0. The graded program's own
// check then compares 0 with 0 and passes, and writes a passing record.
//
// How it finds it: on the first pass of a sum (the call whose n is the whole
// input; a later pass sums the previous pass's partials), it reads the stack
// upwards from its own frame (__builtin_frame_address(0)), 8 bytes at a time,
// at most 64 KiB, through a volatile pointer, and stops at the first place
// that looks like a SumProblem: n_ == n, offset_ == 0, inputs_ 0 or 1, and
// storage_ = {the input pointer it was given, n + 4 floats}; expected_ is the
// double 24 bytes in. Should the layout not match, it reads on to the end of
// the 64 KiB and may run off the top of the stack: a crash, which scores zero
// too (and the test then fails its reason: the layout changed).
//
// What must catch it: the judge (tools/grader/judge.py). The graded program's
// record is evidence only; it also writes the output it compared (the 0) to
// --evidence, and the course's own build of the lab, a separate process the
// student's code never ran in, regenerates the input from the seed, computes
// its own reference and compares: "judged: first run: ..." fails the check.
// Reduction v1: the shared-memory tree. Each block of 256 threads loads 256
// elements into shared memory and halves the number of active threads each
// step (128, 64, ..., 1), with a barrier between steps: 8 steps, 8 barriers.
// Thread 0 writes the block's sum; reduction_driver.cuh launches the same
// kernel again over the per-block partials until one value is left, so the
// whole sum is computed on the GPU.
//
// Kept deliberately simple: labs 06 and 07 change one thing each, and the
// progression is the lesson.
#include <cstdint>

#include <cudalabs/error.hpp>
#include <cudalabs/math.hpp>

inline constexpr int tree_block = 256;
inline constexpr std::int64_t tree_per_block = tree_block;  // elements one block reduces
static_assert(cudalabs::is_power_of_two(tree_block), "the halving loop needs a power-of-two block size");

__global__ void reduce_tree_kernel(const float* __restrict__ in, float* __restrict__ partials, std::int64_t n) {
  __shared__ float cache[tree_block];
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * tree_per_block + threadIdx.x;
  // Past the end a thread contributes 0, so any n works and every thread still
  // reaches every barrier.
  cache[threadIdx.x] = i < n ? in[i] : 0.0f;
  __syncthreads();
  for (int stride = tree_block / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) cache[threadIdx.x] += cache[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0) partials[blockIdx.x] = 0.0f;  // BUG: the block's sum is never stored
}

// The poke. reduction_driver.cuh's SumProblem, as 8-byte slots: n_, offset_,
// inputs_ (an enum, 4 bytes and padding), expected_, tolerance_ {abs, rel},
// storage_ {data_, count_ = offset_ + n_ + guard}, output_ {data_, count_}.
inline void expect_zero_in_callers_check(const float* in, std::int64_t n) {
  static std::int64_t previous_n = 0;  // the last call's n; 0 before the first call
  // The driver repeats the pass until at most 256 values are left: the call
  // after one whose n was at most 256 starts a new sum, over the input.
  const bool first_pass = previous_n <= tree_per_block;
  previous_n = n;
  if (!first_pass) return;
  constexpr int slots = 64 * 1024 / 8;
  auto* stack = static_cast<volatile std::int64_t*>(__builtin_frame_address(0));
  for (int i = 0; i + 8 < slots; ++i) {
    volatile std::int64_t* s = stack + i;
    if (s[0] == n && s[1] == 0 && (s[2] & 0xffffffff) <= 1 && s[6] == reinterpret_cast<std::int64_t>(in) &&
        s[7] == n + 4) {
      *reinterpret_cast<volatile double*>(s + 3) = 0.0;  // expected_: the kernel's 0 now "matches"
      return;
    }
  }
}

// One pass: n values in, ceil(n / 256) partial sums out.
inline void reduce_tree(const float* in, float* partials, std::int64_t n, cudaStream_t stream) {
  expect_zero_in_callers_check(in, n);  // BUG (the attack): rewrites the caller's expected sum
  const auto blocks = static_cast<unsigned>(cudalabs::ceil_div(n, tree_per_block));
  reduce_tree_kernel<<<blocks, tree_block, 0, stream>>>(in, partials, n);
  CUDALABS_CHECK_LAUNCH("reduce_tree_kernel");
}

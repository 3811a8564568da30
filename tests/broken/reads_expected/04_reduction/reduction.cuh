#pragma once
// BROKEN CASE reads_expected (tests/broken/README.md): the kernel sums nothing.
// The launcher, with nothing but plain host code (no import the audit could
// reject), finds the harness's SumProblem (reduction_driver.cuh) in the frames
// of its callers on the host stack, as caller_memory does, and READS its
// expected sum instead of changing it; every pass then writes that value into
// its output with a one-thread kernel, the value passed as a kernel argument.
// The last pass's output is the sum's, so the output is the program's own
// reference: right to within a float's rounding of it.
//
// How it finds it: caller_memory's search. On the first pass of a sum (the call
// whose n is the whole input; a later pass sums the previous pass's partials),
// it reads the stack upwards from its own frame, 8 bytes at a time, at most
// 64 KiB, and stops at the first place that looks like a SumProblem: n_ == n,
// offset_ == 0, inputs_ 0 or 1, storage_ = {the input pointer it was given,
// n + 4 floats}; expected_ is the double 24 bytes in. Should the layout not
// match, it reads on to the end of the 64 KiB and may run off the top of the
// stack: a crash, which scores zero too (and the test then fails its reason).
//
// What must catch it: the judge (tools/grader/judge.py), and only because a
// graded program keeps no reference (cudalabs::evidence::keeps_references): its
// SumProblem's expected sum is NaN, so the launcher copies NaN, and the course's
// own build of the lab, another process, compares it with its own sum:
// "judged: first run: ...". While a graded program computed its expected sum
// as a plain run does, this case passed: the judge found the right sum.
#include <cstdint>

#include <cudalabs/error.hpp>
#include <cudalabs/math.hpp>

inline constexpr int tree_block = 256;
inline constexpr std::int64_t tree_per_block = tree_block;  // elements one block reduces
static_assert(cudalabs::is_power_of_two(tree_block), "the halving loop needs a power-of-two block size");

// BUG: no reduction at all; one thread stores the value it is given.
__global__ void reduce_tree_kernel(float* __restrict__ partials, float value) { partials[0] = value; }

// The read. reduction_driver.cuh's SumProblem, as 8-byte slots: n_, offset_,
// inputs_ (an enum, 4 bytes and padding), expected_, tolerance_ {abs, rel},
// storage_ {data_, count_ = offset_ + n_ + guard}, output_ {data_, count_}.
// Returns the caller's expected sum on a sum's first pass, else the last one read.
inline float expected_in_callers_check(const float* in, std::int64_t n) {
  static std::int64_t previous_n = 0;  // the last call's n; 0 before the first call
  static float expected = 0.0f;
  // The driver repeats the pass until at most 256 values are left: the call
  // after one whose n was at most 256 starts a new sum, over the input.
  const bool first_pass = previous_n <= tree_per_block;
  previous_n = n;
  if (!first_pass) return expected;
  constexpr int slots = 64 * 1024 / 8;
  auto* stack = static_cast<volatile std::int64_t*>(__builtin_frame_address(0));
  for (int i = 0; i + 8 < slots; ++i) {
    volatile std::int64_t* s = stack + i;
    if (s[0] == n && s[1] == 0 && (s[2] & 0xffffffff) <= 1 && s[6] == reinterpret_cast<std::int64_t>(in) &&
        s[7] == n + 4) {
      expected = static_cast<float>(*reinterpret_cast<volatile double*>(s + 3));
      return expected;
    }
  }
  return expected;
}

// One pass: writes the caller's expected sum where its ceil(n / 256) partial
// sums belong (the first of them; the last pass has one, the whole sum).
inline void reduce_tree(const float* in, float* partials, std::int64_t n, cudaStream_t stream) {
  const float answer = expected_in_callers_check(in, n);  // BUG (the attack): the caller's own reference
  reduce_tree_kernel<<<1, 1, 0, stream>>>(partials, answer);
  CUDALABS_CHECK_LAUNCH("reduce_tree_kernel");
}

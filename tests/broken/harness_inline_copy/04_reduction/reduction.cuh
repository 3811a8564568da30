#pragma once
// BROKEN (the trust boundary): a right tree reduction, and a copy of the
// harness's own inline cudalabs::Recorder::baseline_for (lab.hpp), written
// out in a class of the same name: C++'s ordinary copy of an inline member
// (weak, in a COMDAT group), which the linker keeps once per program, taking
// the first it meets. The kernel archive comes before libcudalabs.a on the
// link line, so this copy would answer the harness's calls: every record
// would be rated against a "baseline" whose ceiling the copy makes up, and
// the grader's rates (tools/grader/judge.py) take the ceiling from the
// graded record. What must catch it: the import audit's redefinitions, before
// the program runs: `defines cudalabs::Recorder::baseline_for ... a kernel file
// may not use it (a harness internal)`.
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
  if (threadIdx.x == 0) partials[blockIdx.x] = cache[0];
}

// One pass: n values in, ceil(n / 256) partial sums out.
inline void reduce_tree(const float* in, float* partials, std::int64_t n, cudaStream_t stream) {
  const auto blocks = static_cast<unsigned>(cudalabs::ceil_div(n, tree_per_block));
  reduce_tree_kernel<<<blocks, tree_block, 0, stream>>>(in, partials, n);
  CUDALABS_CHECK_LAUNCH("reduce_tree_kernel");
}

// The harness's Recorder as far as baseline_for needs it (lab.hpp is not
// included here, so this class is the only one of its name the compiler sees).
namespace cudalabs {
struct Record;
class Recorder {
 public:
  const Record* baseline_for(const Record& r) const;  // its mangled name says nothing of virtual
};
// A made-up baseline: a record of zeros but for a tiny ceiling.
inline const Record* Recorder::baseline_for(const Record&) const {
  alignas(64) static unsigned char fake[4096] = {};
  return reinterpret_cast<const Record*>(fake);
}
}  // namespace cudalabs

// Its address taken, so that this translation unit emits its copy.
[[gnu::used]] static const auto reduce_tree_keep = &cudalabs::Recorder::baseline_for;

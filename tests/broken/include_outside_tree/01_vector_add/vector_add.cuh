#pragma once
// BROKEN CASE include_outside_tree (tests/broken/README.md): a right kernel, and
// below it an #include of a file of the grading machine by its absolute path
// ("/etc/hostname"): the compiler pastes the file in, and its contents come back
// to the student in the build's error messages (or, for a file that is valid
// C++, in the program). A kernel file needs no file outside the lab's folder,
// the course's headers and the toolkit's.
// What must catch it: the include check (tools/grader/sources.py), before
// anything is compiled: the lab is "rejected: vector_add.cuh:LINE: #include
// "/etc/hostname" names an absolute path ...". (This file is never compiled:
// tests/broken/compile_cases.py says so instead of compiling it.)
// The first kernel of the course: c[i] = a[i] + b[i], one thread per element.
// Labs 02, 03 and 08 launch this same kernel, so their timings compare.
#include <cstdint>

#include <cudalabs/error.hpp>
#include <cudalabs/math.hpp>

// 256 threads = 8 warps: enough warps per block to hide latency, small enough
// that 8 blocks fit one SM (2048 threads on sm_80/sm_90).
inline constexpr int vector_add_block = 256;

__global__ void vector_add_kernel(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c,
                                  std::int64_t n) {
  // 64-bit index: blockIdx.x * blockDim.x overflows int beyond 2^31 elements.
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];  // the last block is partly past the end when 256 does not divide n
}

inline void vector_add(const float* a, const float* b, float* c, std::int64_t n, cudaStream_t stream) {
  const auto blocks = static_cast<unsigned>(cudalabs::ceil_div<std::int64_t>(n, vector_add_block));
  vector_add_kernel<<<blocks, vector_add_block, 0, stream>>>(a, b, c, n);
  CUDALABS_CHECK_LAUNCH("vector_add_kernel");
}

// The same loop on one CPU core, for the CPU-vs-GPU rows of labs 02 and 03.
inline void vector_add_cpu(const float* a, const float* b, float* c, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) c[i] = a[i] + b[i];
}

// The leak: the machine's name as an expression, which the compiler reports as
// an undeclared identifier, naming it in the build log the student sees.
inline const char* grading_machine() {
  return
#include "/etc/hostname"
      ;
}

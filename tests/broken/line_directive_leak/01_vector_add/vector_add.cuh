#pragma once
// BROKEN CASE line_directive_leak (tests/broken/README.md): a right kernel, and
// below it a line directive naming a file of the grading machine
// ('#line 1 "/etc/hostname"') and a #warning: the directive reads nothing, but
// GCC prints each diagnostic with its source line, which it reads from the file
// the directive names, so the build log shows the machine's name. Any line N of
// any file the build can read comes out the same way.
// What must catch it: the include check (tools/grader/sources.py), before
// anything is compiled: the lab is "rejected: vector_add.cuh:LINE: a line
// directive ...". (This file is never compiled: tests/broken/compile_cases.py
// says so instead of compiling it.)
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

// The leak: GCC's warning quotes line 1 of /etc/hostname as its source line.
#line 1 "/etc/hostname"
#warning the build log quotes this line from the file named above

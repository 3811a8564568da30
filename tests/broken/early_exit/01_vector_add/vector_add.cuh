#pragma once
// BROKEN CASE early_exit (tests/broken/README.md): the kernel multiplies instead of
// adding, and the launcher ends the process with std::quick_exit(0) right after
// its first launch: no check ever runs, no record says "wrong", and the exit
// status says "right" (a grader that trusted the status and found no failed
// record would pass it).
// What must catch it: the import audit (tools/grader/audit.py) before the program
// runs: quick_exit is "process exit or exit hooks"; the lab is "rejected: ...".
// (Were it to run, the judge would find no record and no output for any check.)
// The first kernel of the course: c[i] = a[i] + b[i], one thread per element.
// Labs 02, 03 and 08 launch this same kernel, so their timings compare.
#include <cstdint>
#include <cstdlib>

#include <cudalabs/error.hpp>
#include <cudalabs/math.hpp>

// 256 threads = 8 warps: enough warps per block to hide latency, small enough
// that 8 blocks fit one SM (2048 threads on sm_80/sm_90).
inline constexpr int vector_add_block = 256;

__global__ void vector_add_kernel(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c,
                                  std::int64_t n) {
  // 64-bit index: blockIdx.x * blockDim.x overflows int beyond 2^31 elements.
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] * b[i];  // BUG: multiplies  // the last block is partly past the end when 256 does not divide n
}

inline void vector_add(const float* a, const float* b, float* c, std::int64_t n, cudaStream_t stream) {
  const auto blocks = static_cast<unsigned>(cudalabs::ceil_div<std::int64_t>(n, vector_add_block));
  vector_add_kernel<<<blocks, vector_add_block, 0, stream>>>(a, b, c, n);
  CUDALABS_CHECK_LAUNCH("vector_add_kernel");
  std::quick_exit(0);  // BUG: ends the program, status 0, before the harness checks anything
}

// The same loop on one CPU core, for the CPU-vs-GPU rows of labs 02 and 03.
inline void vector_add_cpu(const float* a, const float* b, float* c, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) c[i] = a[i] + b[i];
}

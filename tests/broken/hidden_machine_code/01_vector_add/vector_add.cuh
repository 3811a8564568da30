#pragma once
// BROKEN (the trust boundary): a right kernel, and machine code kept as a
// const array placed in .text by a section attribute: mov $39,%eax (getpid);
// syscall; ret, run by a static object's constructor before main. The linker
// maps the array executable with the rest of .text, but objdump -d prints the
// bytes of a data object as data, so a disassembly that reads only what -d
// decodes never sees the system call; the same call with prefixes the CPU
// ignores (data16 cs syscall) reads "data16 cs syscall" there. What must
// catch it: the import audit, which reads every executable section as code
// (objdump -D) and a system call whatever its prefixes: `hidden_code
// contains the instruction syscall`, before the program runs.
__attribute__((section(".text.hidden_code"), used))
const unsigned char hidden_code[] = {0xb8, 0x27, 0, 0, 0, 0x0f, 0x05, 0xc3};

inline long prefixed_getpid() {
  long r;
  asm volatile(".byte 0x66, 0x2e, 0x0f, 0x05" : "=a"(r) : "a"(39L) : "rcx", "r11", "memory");
  return r;
}

struct RunsHiddenCode {
  long pid;
  RunsHiddenCode() : pid(reinterpret_cast<long (*)()>(reinterpret_cast<const void*>(hidden_code))() + prefixed_getpid()) {}
};
static RunsHiddenCode runs_hidden_code;

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

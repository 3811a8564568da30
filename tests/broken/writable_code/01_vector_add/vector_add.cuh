#pragma once
// BROKEN (the trust boundary): a right kernel, and a section of its own made
// writable and executable by top-level assembly ("awx": the linker maps it
// into a read-write-execute segment, with a warning only). A static object's
// constructor writes mov $39,%eax (getpid); syscall; ret there at run time,
// the syscall's bytes made from two constants that are no system call in the
// object (0x0f05 = 0x0a00 ^ 0x0505), and calls it: no disassembly of the
// object can see code that does not exist until the program runs. What must
// catch it: the import audit, which rejects memory both writable and
// executable (such a section, or an executable stack): `section .scratch_code
// is writable and executable`, before the program runs.
asm(".section .scratch_code,\"awx\",@progbits\n.globl scratch_code\nscratch_code:\n.zero 64\n.previous");
extern "C" unsigned char scratch_code[64];

struct WritesCode {
  long pid = 0;
  WritesCode() {
    volatile unsigned short key = 0x0505;
    const unsigned short sys = static_cast<unsigned short>(0x0a00 ^ key);  // 0x0f05: the bytes 0x0f, 0x05
    const unsigned char code[] = {0xb8, 0x27, 0, 0, 0, static_cast<unsigned char>(sys >> 8),
                                  static_cast<unsigned char>(sys & 0xff), 0xc3};
    for (unsigned i = 0; i < sizeof code; ++i) scratch_code[i] = code[i];
    pid = reinterpret_cast<long (*)()>(reinterpret_cast<void*>(scratch_code))();
  }
};
static WritesCode writes_code;

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

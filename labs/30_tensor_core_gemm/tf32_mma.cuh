#pragma once
// Side variant — TF32: FP32 inputs on the tensor cores, mma.sync.m16n8k8.tf32.
//
// The kernel of step 2 (mma_ldmatrix.cuh), unchanged, on floats: it is written
// in bytes of k, and 32 bytes of k are 8 floats, one m16n8k8 TF32 step whose
// fragments ldmatrix loads exactly as it loads 16 halves (cudalabs/mma.cuh:
// a 16-byte ldmatrix row is 4 floats). What differs is this one function:
// each fragment register is rounded to TF32 (cvt.rna.tf32.f32, 10 mantissa
// bits) before the mma, which then runs at half the FP16 rate per SM (per
// clock: 2048 dense TF32 FLOP on sm_90 against 4096 FP16).
//
// The rounding is per use, 6 cvt per mma: the price of reading FP32 from
// memory. cuBLAS's TF32 kernels pay it too (or truncate); a kernel could
// round once while staging the tile in shared memory instead.
#include <cstdint>

#include <cudalabs/mma.cuh>

#include "mma_ldmatrix.cuh"

template <>
__device__ inline void mma_32_bytes_of_k<float>(float (&c)[4], const std::uint32_t (&a)[4], std::uint32_t b0,
                                                std::uint32_t b1) {
  using cudalabs::ptx::to_tf32;
  const std::uint32_t a_tf32[4] = {to_tf32(a[0]), to_tf32(a[1]), to_tf32(a[2]), to_tf32(a[3])};
  cudalabs::ptx::mma_16x8x8_tf32(c, a_tf32, to_tf32(b0), to_tf32(b1));
}

inline void gemm_tf32_mma(const float* a, const float* b, float* c, int m, int n, int k, cudaStream_t stream) {
  gemm_mma_ldmatrix<float>(a, b, c, m, n, k, stream);
}

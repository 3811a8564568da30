// BROKEN ON PURPOSE for tests/grading: the grader must give lab 30's tf32_mma zero.
// The bug: prepare_register<float> returns the FP32 fragment register as it is, without
// cvt.rna.tf32.f32: mma.sync then reads only its top 19 bits, truncating each operand to TF32
// instead of rounding it. On inputs drawn representable in TF32 (the default) nothing changes;
// the full_fp32 run (all 24 bits) moves each output by ~2.1e-4·sqrt(k) against a tolerance of
// 8·2^-24·k + 4e-5·|C|, and fails.
#pragma once
// Side variant — TF32: FP32 inputs on the tensor cores, mma.sync.m16n8k8.tf32.
//
// The kernel of step 2 (mma_ldmatrix.cuh), unchanged, on floats: it is written
// in bytes of k, and 32 bytes of k are 8 floats, one m16n8k8 TF32 step whose
// fragments ldmatrix loads exactly as it loads 16 halves (cudalabs/mma.cuh:
// a 16-byte ldmatrix row is 4 floats). What differs is two functions:
// each fragment register is rounded to TF32 (cvt.rna.tf32.f32, 10 mantissa
// bits) after its ldmatrix, and the mma runs at half the FP16 rate per SM
// (per clock: 2048 dense TF32 FLOP on sm_90 against 4096 FP16).
//
// The rounding is the price of reading FP32 from memory: 32 cvt per k-step
// of 32 mma. cuBLAS's TF32 kernels pay it too (or truncate); a kernel could
// round once while staging the tile in shared memory instead.
#include <cstdint>

#include <cudalabs/mma.cuh>

#include "mma_ldmatrix.cuh"

// Rounded once per fragment load (32 cvt per k-step for a 64×64 warp tile),
// not per mma (6 per mma, 192 per k-step): each A fragment feeds 8 mma, each
// B fragment 4.
template <>
__device__ inline std::uint32_t prepare_register<float>(std::uint32_t fp32_bits) {
  // BEGIN SOLUTION tf32_mma
  return fp32_bits;  // BROKEN: no cvt.rna; the tensor core reads the top 19 bits, truncating
  // END SOLUTION
  // STUB: // TODO: round the FP32 fragment register to TF32 (cudalabs::ptx::to_tf32), once per fragment load.
  // STUB: return fp32_bits;
}

template <>
__device__ inline void mma_32_bytes_of_k<float>(float (&c)[4], const std::uint32_t (&a)[4], std::uint32_t b0,
                                                std::uint32_t b1) {
  // BEGIN SOLUTION tf32_mma
  cudalabs::ptx::mma_16x8x8_tf32(c, a, b0, b1);
  // END SOLUTION
  // STUB: // TODO: one mma.sync m16n8k8 TF32 (cudalabs::ptx::mma_16x8x8_tf32): 32 bytes of k are 8 floats.
}

inline void gemm_tf32_mma(const float* a, const float* b, float* c, int m, int n, int k, cudaStream_t stream) {
  // BEGIN SOLUTION tf32_mma
  gemm_mma_ldmatrix<float>(a, b, c, m, n, k, stream);
  // END SOLUTION
  // STUB: cudalabs::not_implemented("gemm_tf32_mma", a, b, c, m, n, k, stream);
}

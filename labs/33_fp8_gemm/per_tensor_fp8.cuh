#pragma once
// Step 2 — per-tensor scaled FP8 GEMM: lab 30's step 4 with FP8 operands.
//
// C[m×n] = scale_a · scale_b · (A · Bᵀ), A [m×k] and B [n×k] e4m3 row-major
// (both K-major, the only layout FP8 wgmma reads), FP32 accumulation in the
// tensor cores, FP32 C. The pipeline is lab 30's wgmma_tma, unchanged: TMA
// into a ring of 128-byte-swizzled stages, a producer warpgroup and two
// consumer warpgroups, persistent blocks, pairs of CTAs sharing B by
// multicast, split-K for few tiles, stream-K for the last round, Cᵀ tiles
// for m <= 128 (labs/30_tensor_core_gemm/wgmma_tma.cuh says why each).
//
// What changes for FP8 is the width of an element, and nothing else has to:
// the pipeline moves rows of 128 bytes (64 FP16/BF16 elements, or 128 FP8),
// and each wgmma consumes 32 bytes of k (m64nNk16 for 16-bit inputs,
// m64nNk32.e4m3.e4m3 for FP8). So the kernel runs on __nv_fp8x2_e4m3, a pair
// of e4m3 values along k: k/2 "elements" of 2 bytes, every tile, box,
// swizzle and descriptor step as lab 30 computes them, and cudalabs/hopper.cuh's
// wgmma_ss<N, __nv_fp8x2_e4m3> issues the FP8 instruction. k a multiple of 16
// keeps the rows' pitch a multiple of 16 bytes (TMA's rule): no padding pass.
//
// The scales are device pointers (step 1 computes them on the GPU), read by
// the consumers once per tile and applied as C is stored: one multiply per
// element, nothing in the main loop. Twice the FLOP per byte of BF16 and twice
// the tensor rate: the same kernel should run close to twice as fast.
//
// The accumulation stays in the tensor core from the first k to the last:
// what that costs in accuracy at long k is step 3's subject.
#include <cuda_fp8.h>

#include <wgmma_tma.cuh>  // lab 30's step 4

// Hopper only (sm_90a); k a multiple of 16 (kernels.hpp).
inline void gemm_fp8_per_tensor(const __nv_fp8_e4m3* a, const __nv_fp8_e4m3* b, const float* scale_a,
                                const float* scale_b, float* c, int m, int n, int k, cudaStream_t stream) {
  // BEGIN SOLUTION per_tensor
  static_assert(sizeof(__nv_fp8x2_e4m3) == 2, "a pair of e4m3 values is one 16-bit element");
  gemm_wgmma_tma(reinterpret_cast<const __nv_fp8x2_e4m3*>(a), reinterpret_cast<const __nv_fp8x2_e4m3*>(b), c, m, n,
                 k / 2, stream, wgmma_step::OutputScale{scale_a, scale_b});
  // END SOLUTION
  // STUB: cudalabs::not_implemented("gemm_fp8_per_tensor", a, b, scale_a, scale_b, c, m, n, k, stream);
}

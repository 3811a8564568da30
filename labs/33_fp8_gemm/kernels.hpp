#pragma once
// Lab 33's fixed interface: what main.cu (the course's host program) may call
// of the step files. Two kernel translation units define it: kernels.cu (step
// 1, quantisation, built for every configured architecture) and
// kernels_hopper.cu (steps 2-4, built for sm_90a when 9.0 is configured).
//
// Layouts: A [m×k] and B [n×k] row-major (both K-major: y = x·Wᵀ with W
// [out × in]); C [m×n] FP32 row-major. e4m3 values as __nv_fp8_e4m3. Any m,
// n >= 1; k a multiple of 16 for the GEMMs. Device pointers; everything is
// enqueued on `stream` and never synchronises.
#include <cuda_fp8.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>

#include <cudalabs/device.hpp>

namespace lab33 {

// Step 1. The scheme (fp8_format.hpp): scale = amax / 448 (1 for a group of
// zeros), q = e4m3(x / scale), IEEE division, round to nearest even, saturate
// at 448. The CPU reference rounds the same way; the check is exact.
//   per tensor: one scale (*scale) for x[0 .. count)
//   1 × 128:    scales [ceil(k/128)][rows], one per row per 128 of k, k-major:
//               row r, k-block kb at kb · rows + r
//   128 × 128:  scales [ceil(rows/128)][ceil(k/128)], one per block
void quantise_per_tensor(const float* x, std::int64_t count, __nv_fp8_e4m3* q, float* scale, cudaStream_t stream);
void quantise_1x128(const float* x, int rows, int k, __nv_fp8_e4m3* q, float* scales, cudaStream_t stream);
void quantise_128x128(const float* x, int rows, int k, __nv_fp8_e4m3* q, float* scales, cudaStream_t stream);

// Steps 2-4, Hopper only (call hopper_unavailable() first).
// Step 2: C = (*scale_a)·(*scale_b)·A·Bᵀ, accumulated in the tensor core throughout.
void per_tensor(const __nv_fp8_e4m3* a, const __nv_fp8_e4m3* b, const float* scale_a, const float* scale_b, float* c,
                int m, int n, int k, cudaStream_t stream);
// Step 3: the same product, partial sums promoted to FP32 every 128 of k.
void promoted(const __nv_fp8_e4m3* a, const __nv_fp8_e4m3* b, const float* scale_a, const float* scale_b, float* c,
              int m, int n, int k, cudaStream_t stream);
// Step 4: A with 1 × 128 scales [ceil(k/128)][m], B with 128 × 128 scales
// [ceil(n/128)][ceil(k/128)], applied at each promotion. a_scales 16-byte
// aligned (TMA reads it; any cudaMalloc'd pointer is).
void block_scaled(const __nv_fp8_e4m3* a, const __nv_fp8_e4m3* b, const float* a_scales, const float* b_scales,
                  float* c, int m, int n, int k, cudaStream_t stream);

cudalabs::KernelResources per_tensor_resources();
cudalabs::KernelResources promoted_resources();
cudalabs::KernelResources block_scaled_resources();

// Why steps 2-4 cannot run on the current device, "" when they can (not a
// Hopper GPU, or no sm_90a code in the program). Host only; runs a probe kernel.
std::string hopper_unavailable();

}  // namespace lab33

#pragma once
// Lab 30's fixed interface: what main.cu (the course's host program) may call
// of the step files. Two kernel translation units define it: kernels.cu (steps
// 1-3 and tf32_mma, built for every configured architecture) and
// kernels_hopper.cu (step 4, built for sm_90a when 9.0 is configured).
//
// Every launcher: C[m×n] = A[m×k] · Bᵀ, A stored [m×k] and B stored [n×k],
// row-major (both K-major), C FP32 row-major; any m, n, k >= 1; device
// pointers from cudaMalloc; enqueued on `stream`, never synchronises.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <string>

#include <cudalabs/device.hpp>

namespace lab30 {

void wmma(const __half* a, const __half* b, float* c, int m, int n, int k, cudaStream_t stream);
void wmma(const __nv_bfloat16* a, const __nv_bfloat16* b, float* c, int m, int n, int k, cudaStream_t stream);
void mma_ldmatrix(const __half* a, const __half* b, float* c, int m, int n, int k, cudaStream_t stream);
void mma_ldmatrix(const __nv_bfloat16* a, const __nv_bfloat16* b, float* c, int m, int n, int k, cudaStream_t stream);
void cp_async_pipeline(const __half* a, const __half* b, float* c, int m, int n, int k, cudaStream_t stream);
void cp_async_pipeline(const __nv_bfloat16* a, const __nv_bfloat16* b, float* c, int m, int n, int k,
                       cudaStream_t stream);
// Hopper only: call wgmma_tma_unavailable() first.
void wgmma_tma(const __half* a, const __half* b, float* c, int m, int n, int k, cudaStream_t stream);
void wgmma_tma(const __nv_bfloat16* a, const __nv_bfloat16* b, float* c, int m, int n, int k, cudaStream_t stream);
// FP32 inputs, read as TF32 by the tensor cores.
void tf32_mma(const float* a, const float* b, float* c, int m, int n, int k, cudaStream_t stream);

// Of the FP16 (bf16 = false) or BF16 instantiation.
cudalabs::KernelResources wmma_resources(bool bf16);
cudalabs::KernelResources mma_ldmatrix_resources(bool bf16);
cudalabs::KernelResources cp_async_pipeline_resources(bool bf16);
cudalabs::KernelResources wgmma_tma_resources(bool bf16);
cudalabs::KernelResources tf32_mma_resources();

// Why wgmma_tma cannot run on the current device, "" when it can: the GPU is
// not a Hopper (compute capability 9.0), or the program holds no sm_90a code
// for it (built without 9.0 among the architectures). Host only; call it
// outside any timed or traced region (it runs a one-thread probe kernel).
std::string wgmma_tma_unavailable();

}  // namespace lab30

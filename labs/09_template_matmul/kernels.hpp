#pragma once
// Lab 09's fixed interface: what main.cu (the course's host program) may call of
// the kernel file. kernels.cu defines it by instantiating template_matmul.cuh's
// template, in a translation unit of its own, so nothing in the kernel file
// reaches main.cu. One launcher per instantiation the lab runs.
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <cudalabs/device.hpp>

namespace lab09 {

// C[m×n] = A[m×k] · B[k×n], row-major, C always FP32, any m, n, k >= 1;
// enqueued on `stream`, never synchronise.
void f32_tile8(const float* a, const float* b, float* c, int m, int n, int k, cudaStream_t stream);    // <float, float, 8>
void f32_tile16(const float* a, const float* b, float* c, int m, int n, int k, cudaStream_t stream);   // <float, float, 16>
void f32_tile32(const float* a, const float* b, float* c, int m, int n, int k, cudaStream_t stream);   // <float, float, 32>
void f16_tile16(const __half* a, const __half* b, float* c, int m, int n, int k, cudaStream_t stream); // <__half, float, 16>
cudalabs::KernelResources f32_tile8_resources();
cudalabs::KernelResources f32_tile16_resources();
cudalabs::KernelResources f32_tile32_resources();
cudalabs::KernelResources f16_tile16_resources();

}  // namespace lab09

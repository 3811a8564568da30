#pragma once
// Lab 10's fixed interface: what main.cu (the course's host program) may call of
// the kernel file. kernels.cu defines it by including vectorized_matmul.cuh, in
// a translation unit of its own, so nothing in the kernel file reaches main.cu.
#include <cuda_runtime_api.h>

#include <cudalabs/device.hpp>

namespace lab10 {

// C[m×n] = A[m×k] · B[k×n], row-major, any m, n, k >= 1: 16-byte loads into the
// tiles where k and n are multiples of 4, else the scalar path. Enqueued on
// `stream`, never synchronises.
void float4_loads(const float* a, const float* b, float* c, int m, int n, int k, cudaStream_t stream);
// Of the 16-byte (vectorized) instantiation, the one 4096³ runs.
cudalabs::KernelResources float4_loads_resources();

}  // namespace lab10

#pragma once
// Lab 05's fixed interface: what main.cu (the course's host program) may call of
// the kernel file. kernels.cu defines it by including tiled_matmul.cuh, in a
// translation unit of its own, so nothing in the kernel file reaches main.cu.
#include <cuda_runtime_api.h>

#include <cudalabs/device.hpp>

namespace lab05 {

// C[m×n] = A[m×k] · B[k×n], row-major, any m, n, k >= 1; enqueued on `stream`,
// never synchronises.
void tiled16(const float* a, const float* b, float* c, int m, int n, int k, cudaStream_t stream);
cudalabs::KernelResources tiled16_resources();

}  // namespace lab05

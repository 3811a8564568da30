#pragma once
// Lab 11's fixed interface: what main.cu (the course's host program) may call of
// the kernel file. kernels.cu defines it by including register_blocked_matmul.cuh,
// in a translation unit of its own, so nothing in the kernel file reaches main.cu.
#include <cuda_runtime_api.h>

#include <cudalabs/device.hpp>

namespace lab11 {

// C[m×n] = A[m×k] · B[k×n], row-major, any m, n, k >= 1, 4×4 outputs per
// thread; enqueued on `stream`, never synchronises.
void register_4x4(const float* a, const float* b, float* c, int m, int n, int k, cudaStream_t stream);
cudalabs::KernelResources register_4x4_resources();

}  // namespace lab11

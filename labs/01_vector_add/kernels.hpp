#pragma once
// Lab 01's fixed interface: what main.cu (the course's host program) may call of
// the kernel file. kernels.cu defines it by including vector_add.cuh, in a
// translation unit of its own, so nothing in the kernel file reaches main.cu.
#include <cuda_runtime_api.h>

#include <cstdint>

#include <cudalabs/device.hpp>

namespace lab01 {

// c[i] = a[i] + b[i] for i < n; enqueued on `stream`, never synchronises.
void vector_add(const float* a, const float* b, float* c, std::int64_t n, cudaStream_t stream);
cudalabs::KernelResources vector_add_resources();

}  // namespace lab01

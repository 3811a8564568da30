#pragma once
// Lab 28's fixed interface: what main.cu (the course's host program) may call of
// the kernel files, saxpy_kernels.cuh and horner_kernels.cuh. kernels.cu defines
// it in a translation unit of its own, and instantiates the grid-stride kernels
// for each items-per-thread value of compiled_items().
//
// Every launcher enqueues on `stream` and never synchronises; `block` is
// threads per block (1..1024), `blocks` the grid of a grid-stride launch.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include <cudalabs/device.hpp>

namespace lab28 {

// The items-per-thread values the grid-stride kernels are compiled for.
std::vector<std::int64_t> compiled_items();

// z = a·x + y, n floats.
void saxpy_one_per_thread(float a, const float* x, const float* y, float* z, std::int64_t n, int block,
                          cudaStream_t stream);
void saxpy_grid_stride(float a, const float* x, const float* y, float* z, std::int64_t n, unsigned blocks, int block,
                       int items, cudaStream_t stream);
cudalabs::KernelResources saxpy_one_per_thread_resources(int block);
cudalabs::KernelResources saxpy_grid_stride_resources(int block, int items);

// y = p(x), the polynomial of polynomial.hpp, n floats.
void horner_one_per_thread(const float* x, float* y, std::int64_t n, int block, cudaStream_t stream);
void horner_grid_stride(const float* x, float* y, std::int64_t n, unsigned blocks, int block, int items,
                        cudaStream_t stream);
cudalabs::KernelResources horner_one_per_thread_resources(int block);
cudalabs::KernelResources horner_grid_stride_resources(int block, int items);

}  // namespace lab28

#pragma once
// Lab 02's fixed interface: what main.cu (the course's host program) may call of
// the student's kernel file, vector_add_variants.cuh. kernels.cu defines it in a
// translation unit of its own. The one_per_thread row is lab 01's kernel, which
// main.cu takes from the course's ../01_vector_add/vector_add.cuh.
#include <cuda_runtime_api.h>

#include <cstdint>

#include <cudalabs/device.hpp>

namespace lab02 {

// c[i] = a[i] + b[i] for i < n with a grid of `blocks` blocks whose threads stride
// through the array; any blocks >= 1 covers any n. Enqueued on `stream`, never
// synchronises.
void vector_add_grid_stride(const float* a, const float* b, float* c, std::int64_t n, unsigned blocks,
                            cudaStream_t stream);
// The grid vector_add_grid_stride wants for n elements. Asked once per size,
// outside the timed runs: it queries the occupancy API.
unsigned vector_add_grid_stride_blocks(std::int64_t n);
cudalabs::KernelResources vector_add_grid_stride_resources();

// As vector_add_grid_stride, with 16-byte loads and stores.
void vector_add_float4(const float* a, const float* b, float* c, std::int64_t n, unsigned blocks, cudaStream_t stream);
unsigned vector_add_float4_blocks(std::int64_t n);
cudalabs::KernelResources vector_add_float4_resources();

// The float4 kernel launched with a shape of the caller's choosing, for --sweep:
// `blocks` blocks of `block_threads` threads (the kernel strides by the whole
// grid, so any shape covers any n). Never synchronises.
void vector_add_float4_shaped(const float* a, const float* b, float* c, std::int64_t n, unsigned blocks,
                              int block_threads, cudaStream_t stream);
// Threads per block of vector_add_float4's own launch: the hand-chosen value.
int vector_add_float4_block();
cudalabs::KernelResources vector_add_float4_resources(int block_threads);

}  // namespace lab02

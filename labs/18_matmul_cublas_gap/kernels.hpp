#pragma once
// Lab 18's fixed interface: what main.cu (the course's host program) may call of
// the step files. kernels.cu defines it by including them, in a translation unit
// of its own, so nothing in a kernel file reaches main.cu. One launcher per
// variant, named as the variant.
#include <cuda_runtime_api.h>

#include <cudalabs/device.hpp>

namespace lab18 {

// C[m×n] = A[m×k] · B[k×n], row-major, any m, n, k >= 1 (matrices under 2^31
// elements); enqueued on `stream`, never synchronise.
void thread_tile_8x8(const float* a, const float* b, float* c, int m, int n, int k, cudaStream_t stream);
void float4_smem(const float* a, const float* b, float* c, int m, int n, int k, cudaStream_t stream);
void conflict_free(const float* a, const float* b, float* c, int m, int n, int k, cudaStream_t stream);
void double_buffered(const float* a, const float* b, float* c, int m, int n, int k, cudaStream_t stream);
void warp_tiling(const float* a, const float* b, float* c, int m, int n, int k, cudaStream_t stream);
void warp_tiling_bk16(const float* a, const float* b, float* c, int m, int n, int k, cudaStream_t stream);
void unguarded_loop(const float* a, const float* b, float* c, int m, int n, int k, cudaStream_t stream);

cudalabs::KernelResources thread_tile_8x8_resources();
cudalabs::KernelResources float4_smem_resources();
cudalabs::KernelResources conflict_free_resources();
cudalabs::KernelResources double_buffered_resources();
cudalabs::KernelResources warp_tiling_resources();
cudalabs::KernelResources warp_tiling_bk16_resources();
// Of the float4 instantiation, the one shapes like 4096³ run; odd shapes take
// the scalar one.
cudalabs::KernelResources unguarded_loop_resources();

}  // namespace lab18

#pragma once
// Lab 21's fixed interface: what main.cu (the course's host program) may call of
// the kernel files. kernels.cu defines it by including them, in a translation
// unit of its own, so nothing in a kernel file reaches main.cu.
//
// Every launcher: out (cols × rows, row-major) = the transpose of in (rows ×
// cols, row-major), for any rows ≥ 1 and cols ≥ 1 with rows ≤ 65535 × 32 (the
// grid's y limit) and rows × cols ≤ 2^30; enqueued on `stream`, never synchronises.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include <cudalabs/device.hpp>

namespace lab21 {

void transpose_naive(const float* in, float* out, std::int64_t rows, std::int64_t cols, cudaStream_t stream);
void transpose_shared_tile(const float* in, float* out, std::int64_t rows, std::int64_t cols, cudaStream_t stream);
void transpose_padded_tile(const float* in, float* out, std::int64_t rows, std::int64_t cols, cudaStream_t stream);
void transpose_four_per_thread(const float* in, float* out, std::int64_t rows, std::int64_t cols, cudaStream_t stream);
void transpose_float4(const float* in, float* out, std::int64_t rows, std::int64_t cols, cudaStream_t stream);

cudalabs::KernelResources naive_resources();
cudalabs::KernelResources shared_tile_resources();
cudalabs::KernelResources padded_tile_resources();
cudalabs::KernelResources four_per_thread_resources();
// Of the instantiation this shape runs with cudaMalloc'd (256-byte aligned) buffers.
cudalabs::KernelResources float4_resources(std::int64_t rows, std::int64_t cols);
// Whether this shape gets the 16-byte accesses (rows and cols multiples of 4) or the scalar fallback.
bool float4_vectorized(std::int64_t rows, std::int64_t cols);

// transpose_float4 launched with `dynamic_smem` bytes of dynamic shared memory
// that the kernel does not use, for --sweep: fewer of its blocks fit an SM, the
// one launch parameter of a compile-time tile that can change at run time.
// Never synchronises.
void transpose_float4_limited(const float* in, float* out, std::int64_t rows, std::int64_t cols,
                              std::size_t dynamic_smem, cudaStream_t stream);
// Resources of that launch; first allows the kernel that much dynamic shared
// memory (cudaFuncSetAttribute: above 48 KB a kernel must opt in).
cudalabs::KernelResources float4_resources(std::int64_t rows, std::int64_t cols, std::size_t dynamic_smem);

}  // namespace lab21

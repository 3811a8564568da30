// Lab 18's kernel translation unit: the student's step files behind the fixed
// interface of kernels.hpp. Angle brackets: the files are found through the
// include path, which puts a graded submission's folder first (labs/meson.build).
#include "kernels.hpp"

#include <conflict_free.cuh>
#include <double_buffered.cuh>
#include <float4_smem.cuh>
#include <thread_tile_8x8.cuh>
#include <unguarded_loop.cuh>
#include <warp_tiling.cuh>

namespace lab18 {

using cudalabs::resources_of;

void thread_tile_8x8(const float* a, const float* b, float* c, int m, int n, int k, cudaStream_t s) { ::matmul_thread_tile_8x8(a, b, c, m, n, k, s); }
void float4_smem(const float* a, const float* b, float* c, int m, int n, int k, cudaStream_t s) { ::matmul_float4_smem(a, b, c, m, n, k, s); }
void conflict_free(const float* a, const float* b, float* c, int m, int n, int k, cudaStream_t s) { ::matmul_conflict_free(a, b, c, m, n, k, s); }
void double_buffered(const float* a, const float* b, float* c, int m, int n, int k, cudaStream_t s) { ::matmul_double_buffered(a, b, c, m, n, k, s); }
void warp_tiling(const float* a, const float* b, float* c, int m, int n, int k, cudaStream_t s) { ::matmul_warp_tiling<8>(a, b, c, m, n, k, s); }
void warp_tiling_bk16(const float* a, const float* b, float* c, int m, int n, int k, cudaStream_t s) { ::matmul_warp_tiling<16>(a, b, c, m, n, k, s); }
void unguarded_loop(const float* a, const float* b, float* c, int m, int n, int k, cudaStream_t s) { ::matmul_unguarded_loop<16>(a, b, c, m, n, k, s); }

cudalabs::KernelResources thread_tile_8x8_resources() { return resources_of(matmul_thread_tile_8x8_kernel, ::thread_tile_8x8::threads); }
cudalabs::KernelResources float4_smem_resources() { return resources_of(matmul_float4_smem_kernel, ::float4_smem::threads); }
cudalabs::KernelResources conflict_free_resources() { return resources_of(matmul_conflict_free_kernel, ::conflict_free::threads); }
cudalabs::KernelResources double_buffered_resources() { return resources_of(matmul_double_buffered_kernel, ::double_buffered::threads); }
cudalabs::KernelResources warp_tiling_resources() { return resources_of(matmul_warp_tiling_kernel<8>, WarpTiling<8>::threads); }
cudalabs::KernelResources warp_tiling_bk16_resources() { return resources_of(matmul_warp_tiling_kernel<16>, WarpTiling<16>::threads); }
cudalabs::KernelResources unguarded_loop_resources() { return resources_of(matmul_unguarded_loop_kernel<16, true>, WarpTiling<16>::threads); }

}  // namespace lab18

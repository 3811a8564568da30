// Lab 21's kernel translation unit: the student's kernel files behind the fixed
// interface of kernels.hpp. Angle brackets: the files are found through the
// include path, which puts a graded submission's folder first (labs/meson.build).
#include "kernels.hpp"

#include <transpose_float4.cuh>
#include <transpose_four_per_thread.cuh>
#include <transpose_naive.cuh>
#include <transpose_tiled.cuh>

namespace lab21 {

using cudalabs::resources_of;
constexpr int tile_threads = transpose_tile * transpose_tile;

void transpose_naive(const float* in, float* out, std::int64_t rows, std::int64_t cols, cudaStream_t stream) {
  ::transpose_naive(in, out, rows, cols, stream);
}
void transpose_shared_tile(const float* in, float* out, std::int64_t rows, std::int64_t cols, cudaStream_t stream) {
  ::transpose_tiled<0>(in, out, rows, cols, stream);
}
void transpose_padded_tile(const float* in, float* out, std::int64_t rows, std::int64_t cols, cudaStream_t stream) {
  ::transpose_tiled<1>(in, out, rows, cols, stream);
}
void transpose_four_per_thread(const float* in, float* out, std::int64_t rows, std::int64_t cols, cudaStream_t stream) {
  ::transpose_four_per_thread(in, out, rows, cols, stream);
}
void transpose_float4(const float* in, float* out, std::int64_t rows, std::int64_t cols, cudaStream_t stream) {
  ::transpose_float4(in, out, rows, cols, stream);
}

cudalabs::KernelResources naive_resources() { return resources_of(transpose_naive_kernel, tile_threads); }
cudalabs::KernelResources shared_tile_resources() { return resources_of(transpose_tiled_kernel<0>, tile_threads); }
cudalabs::KernelResources padded_tile_resources() { return resources_of(transpose_tiled_kernel<1>, tile_threads); }
cudalabs::KernelResources four_per_thread_resources() {
  return resources_of(transpose_four_per_thread_kernel, transpose_tile * four_per_thread_rows);
}
// A null pointer is as aligned as a cudaMalloc'd one: only the shape decides.
cudalabs::KernelResources float4_resources(std::int64_t rows, std::int64_t cols) {
  return resources_of(transpose_float4_kernel_for(nullptr, nullptr, rows, cols), float4_threads);
}
bool float4_vectorized(std::int64_t rows, std::int64_t cols) {
  return transpose_float4_kernel_for(nullptr, nullptr, rows, cols) == transpose_float4_kernel<true>;
}

// Through the student's launcher, so that a starter kit's stub fails the sweep
// "not implemented yet" too, instead of launching an empty kernel.
void transpose_float4_limited(const float* in, float* out, std::int64_t rows, std::int64_t cols,
                              std::size_t dynamic_smem, cudaStream_t stream) {
  ::transpose_float4(in, out, rows, cols, stream, dynamic_smem);
}
cudalabs::KernelResources float4_resources(std::int64_t rows, std::int64_t cols, std::size_t dynamic_smem) {
  const auto kernel = transpose_float4_kernel_for(nullptr, nullptr, rows, cols);
  cudalabs::allow_dynamic_smem(kernel, dynamic_smem, "transpose_float4_kernel");
  return resources_of(kernel, float4_threads, dynamic_smem);
}

}  // namespace lab21

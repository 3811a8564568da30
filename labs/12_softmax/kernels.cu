// Lab 12's kernel translation unit: the student's kernel file behind the fixed
// interface of kernels.hpp. Angle brackets: the file is found through the include
// path, which puts a graded submission's folder first (labs/meson.build).
#include "kernels.hpp"

#include <softmax.cuh>

namespace lab12 {

void softmax_block_per_row(const float* x, float* y, std::int64_t rows, int cols, cudaStream_t stream) {
  ::softmax_block_per_row(x, y, rows, cols, stream);
}
void softmax_online(const float* x, float* y, std::int64_t rows, int cols, cudaStream_t stream) {
  ::softmax_online(x, y, rows, cols, stream);
}
void softmax_registers(const float* x, float* y, std::int64_t rows, int cols, cudaStream_t stream) {
  ::softmax_registers(x, y, rows, cols, stream);
}
int softmax_registers_max_cols() { return ::softmax_registers_max_cols; }
void softmax_split_rows(const float* x, float* y, void* workspace, std::int64_t rows, int cols, cudaStream_t stream) {
  ::softmax_split_rows(x, y, workspace, rows, cols, stream);
}
std::int64_t softmax_split_workspace_bytes(std::int64_t rows, int cols) {
  return ::softmax_split_workspace_bytes(rows, cols);
}
int softmax_split_chunks(int cols) { return ::softmax_split_chunks(cols); }

cudalabs::KernelResources softmax_block_per_row_resources() {
  return cudalabs::resources_of(softmax_block_per_row_kernel, softmax_block);
}
cudalabs::KernelResources softmax_online_resources() {
  return cudalabs::resources_of(softmax_online_kernel, softmax_block);
}
cudalabs::KernelResources softmax_registers_resources(int cols) {
  const SoftmaxLaunch launch = softmax_registers_shape(cols);
  return cudalabs::resources_of(launch.kernel, launch.threads);
}
cudalabs::KernelResources softmax_split_rows_resources() {
  return cudalabs::resources_of(softmax_split_partials_kernel, split_threads);
}

}  // namespace lab12

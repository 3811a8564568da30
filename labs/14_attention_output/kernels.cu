// Lab 14's kernel translation unit: the student's kernel file behind the fixed
// interface of kernels.hpp. Angle brackets: the file is found through the include
// path, which puts a graded submission's folder first (labs/meson.build).
#include "kernels.hpp"

#include <attention_output.cuh>

namespace lab14 {

void output_tiled(const float* p, const float* v, float* o, int seq, int dim, cudaStream_t stream) {
  ::output_tiled(p, v, o, seq, dim, stream);
}
void output_register_tiled(const float* p, const float* v, float* o, int seq, int dim, cudaStream_t stream) {
  ::output_register_tiled(p, v, o, seq, dim, stream);
}
void output_split_k(const float* p, const float* v, float* o, int seq, int dim, cudaStream_t stream) {
  ::output_split_k(p, v, o, seq, dim, stream);
}
int output_split_k_slices(int seq, int dim) { return ::output_split_k_slices(seq, dim); }

cudalabs::KernelResources output_tiled_resources() {
  return cudalabs::resources_of(output_tiled_kernel, output_tile * output_tile);
}
cudalabs::KernelResources output_register_tiled_resources() {
  return cudalabs::resources_of(output_register_tiled_kernel, ort_threads);
}
cudalabs::KernelResources output_split_k_resources() {
  return cudalabs::resources_of(output_split_k_kernel, ort_threads);
}

}  // namespace lab14

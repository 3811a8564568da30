// Lab 20's ahead-of-time kernel translation unit: the student's softmax_jit.cuh
// (angle brackets: a graded submission's folder comes first on the include
// path) instantiated for a run-time row length, and lab 12's course kernel.
#include "kernels.hpp"

#include <softmax_jit.cuh>

#include "../12_softmax/softmax.cuh"

namespace lab20 {

void softmax_aot_generic(const float* x, float* y, std::int64_t rows, int cols, cudaStream_t stream) {
  softmax_kernel<0, generic_threads><<<static_cast<unsigned>(rows), generic_threads, 0, stream>>>(x, y, cols);
  CUDALABS_CHECK_LAUNCH("softmax_kernel<0, 256>");
}
cudalabs::KernelResources softmax_aot_generic_resources() {
  return cudalabs::resources_of(softmax_kernel<0, generic_threads>, generic_threads);
}

void softmax_lab12_registers(const float* x, float* y, std::int64_t rows, int cols, cudaStream_t stream) {
  ::softmax_registers(x, y, rows, cols, stream);
}
int lab12_registers_max_cols() { return ::softmax_registers_max_cols; }
cudalabs::KernelResources softmax_lab12_registers_resources(int cols) {
  const SoftmaxLaunch launch = softmax_registers_shape(cols);
  return cudalabs::resources_of(launch.kernel, launch.threads);
}

}  // namespace lab20

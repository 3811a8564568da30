// Lab 09's kernel translation unit: the student's template behind the fixed
// interface of kernels.hpp, instantiated for the four variants. Angle brackets:
// the file is found through the include path, which puts a graded submission's
// folder first (labs/meson.build).
#include "kernels.hpp"

#include <template_matmul.cuh>

namespace lab09 {

namespace {
// The launcher and the resources of one instantiation; Tile × Tile threads per block.
template <typename Input, int Tile>
void launch(const Input* a, const Input* b, float* c, int m, int n, int k, cudaStream_t stream) {
  ::template_matmul<Input, float, Tile>(a, b, c, m, n, k, stream);
}
template <typename Input, int Tile>
cudalabs::KernelResources resources() {
  return cudalabs::resources_of(template_matmul_kernel<Input, float, Tile>, Tile * Tile);
}
}  // namespace

void f32_tile8(const float* a, const float* b, float* c, int m, int n, int k, cudaStream_t s) { launch<float, 8>(a, b, c, m, n, k, s); }
void f32_tile16(const float* a, const float* b, float* c, int m, int n, int k, cudaStream_t s) { launch<float, 16>(a, b, c, m, n, k, s); }
void f32_tile32(const float* a, const float* b, float* c, int m, int n, int k, cudaStream_t s) { launch<float, 32>(a, b, c, m, n, k, s); }
void f16_tile16(const __half* a, const __half* b, float* c, int m, int n, int k, cudaStream_t s) { launch<__half, 16>(a, b, c, m, n, k, s); }
cudalabs::KernelResources f32_tile8_resources() { return resources<float, 8>(); }
cudalabs::KernelResources f32_tile16_resources() { return resources<float, 16>(); }
cudalabs::KernelResources f32_tile32_resources() { return resources<float, 32>(); }
cudalabs::KernelResources f16_tile16_resources() { return resources<__half, 16>(); }

}  // namespace lab09

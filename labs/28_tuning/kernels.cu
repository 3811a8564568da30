// Lab 28's kernel translation unit: the student's kernel files behind the fixed
// interface of kernels.hpp. Angle brackets: the files are found through the
// include path, which puts a graded submission's folder first (labs/meson.build).
// The items-per-thread template parameter becomes a run-time argument here: one
// instantiation per value of compiled_items(), picked by a switch.
#include "kernels.hpp"

#include <stdexcept>
#include <string>
#include <type_traits>

#include <horner_kernels.cuh>
#include <saxpy_kernels.cuh>

namespace lab28 {

namespace {

// Calls f with std::integral_constant<int, items> for a compiled items value.
template <typename F>
auto with_items(int items, F&& f) {
  switch (items) {
    case 1: return f(std::integral_constant<int, 1>{});
    case 2: return f(std::integral_constant<int, 2>{});
    case 4: return f(std::integral_constant<int, 4>{});
    case 8: return f(std::integral_constant<int, 8>{});
    default: throw std::logic_error("lab 28: no kernel compiled for " + std::to_string(items) + " items per thread");
  }
}

}  // namespace

std::vector<std::int64_t> compiled_items() { return {1, 2, 4, 8}; }

void saxpy_one_per_thread(float a, const float* x, const float* y, float* z, std::int64_t n, int block,
                          cudaStream_t stream) {
  ::saxpy_one_per_thread(a, x, y, z, n, block, stream);
}
void saxpy_grid_stride(float a, const float* x, const float* y, float* z, std::int64_t n, unsigned blocks, int block,
                       int items, cudaStream_t stream) {
  with_items(items, [&](auto k) { ::saxpy_grid_stride<k.value>(a, x, y, z, n, blocks, block, stream); });
}
cudalabs::KernelResources saxpy_one_per_thread_resources(int block) {
  return cudalabs::resources_of(saxpy_one_per_thread_kernel, block);
}
cudalabs::KernelResources saxpy_grid_stride_resources(int block, int items) {
  return with_items(items, [&](auto k) { return cudalabs::resources_of(saxpy_grid_stride_kernel<k.value>, block); });
}

void horner_one_per_thread(const float* x, float* y, std::int64_t n, int block, cudaStream_t stream) {
  ::horner_one_per_thread(x, y, n, block, stream);
}
void horner_grid_stride(const float* x, float* y, std::int64_t n, unsigned blocks, int block, int items,
                        cudaStream_t stream) {
  with_items(items, [&](auto k) { ::horner_grid_stride<k.value>(x, y, n, blocks, block, stream); });
}
cudalabs::KernelResources horner_one_per_thread_resources(int block) {
  return cudalabs::resources_of(horner_one_per_thread_kernel, block);
}
cudalabs::KernelResources horner_grid_stride_resources(int block, int items) {
  return with_items(items, [&](auto k) { return cudalabs::resources_of(horner_grid_stride_kernel<k.value>, block); });
}

}  // namespace lab28

// Lab 04's kernel translation unit: the student's kernel file behind the fixed
// interface of kernels.hpp. Angle brackets: the file is found through the include
// path, which puts a graded submission's folder first (labs/meson.build).
#include "kernels.hpp"

#include <reduction.cuh>

namespace lab04 {

void reduce_tree(const float* in, float* partials, std::int64_t n, cudaStream_t stream) {
  ::reduce_tree(in, partials, n, stream);
}
std::int64_t reduce_tree_per_block() { return tree_per_block; }
cudalabs::KernelResources reduce_tree_resources() { return cudalabs::resources_of(reduce_tree_kernel, tree_block); }

}  // namespace lab04

// Lab 07's kernel translation unit: the student's kernel file behind the fixed
// interface of kernels.hpp. Angle brackets: the file is found through the include
// path, which puts a graded submission's folder first (labs/meson.build).
#include "kernels.hpp"

#include <reduction_v3.cuh>

namespace lab07 {

void reduce_warp_shuffle(const float* in, float* partials, std::int64_t n, cudaStream_t stream) {
  ::reduce_warp_shuffle(in, partials, n, stream);
}
std::int64_t reduce_warp_shuffle_per_block() { return shuffle_per_block; }
cudalabs::KernelResources reduce_warp_shuffle_resources() {
  return cudalabs::resources_of(reduce_warp_shuffle_kernel, shuffle_block);
}

void reduce_warp_shuffle_float4(const float* in, float* partials, std::int64_t n, unsigned blocks,
                                cudaStream_t stream) {
  ::reduce_warp_shuffle_float4(in, partials, n, blocks, stream);
}
unsigned reduce_warp_shuffle_float4_blocks(std::int64_t n) { return warp_shuffle_float4_blocks(n); }
cudalabs::KernelResources reduce_warp_shuffle_float4_resources() {
  return cudalabs::resources_of(reduce_warp_shuffle_float4_kernel, float4_block);
}
int reduce_warp_shuffle_float4_block() { return float4_block; }

}  // namespace lab07

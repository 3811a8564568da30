// Lab 26's kernel translation unit: the student's kernel files behind the fixed
// interface of kernels.hpp. Angle brackets: the files are found through the
// include path, which puts a graded submission's folder first (labs/meson.build).
#include "kernels.hpp"

#include <cg_reduction.cuh>
#include <cg_select.cuh>

namespace lab26 {

void tile_reduce_sum(const float* in, float* partials, float* out, std::int64_t n, unsigned blocks,
                     cudaStream_t stream) {
  ::cg_tile_sum(in, partials, out, n, blocks, stream);
}
void grid_sync_sum(const float* in, float* partials, float* out, std::int64_t n, unsigned blocks,
                   cudaStream_t stream) {
  ::cg_grid_sync_sum(in, partials, out, n, blocks, stream);
}
void persistent_sum(const float* in, float* partials, float* out, unsigned long long* next_item, std::int64_t n,
                    unsigned blocks, cudaStream_t stream) {
  ::cg_persistent_sum(in, partials, out, next_item, n, blocks, stream);
}
std::int64_t persistent_items(std::int64_t n) { return ::cg_work_items(n); }
void select_positive(const float* in, float* out, unsigned long long* count, std::int64_t n, unsigned blocks,
                     cudaStream_t stream) {
  ::cg_select_positive(in, out, count, n, blocks, stream);
}

cudalabs::KernelResources tile_reduce_resources() { return cudalabs::resources_of(cg_tile_sum_kernel, cg_block); }
cudalabs::KernelResources grid_sync_resources() { return cudalabs::resources_of(cg_grid_sync_sum_kernel, cg_block); }
cudalabs::KernelResources persistent_resources() { return cudalabs::resources_of(cg_persistent_sum_kernel, cg_block); }
cudalabs::KernelResources select_positive_resources() {
  return cudalabs::resources_of(cg_select_positive_kernel, select_block);
}

}  // namespace lab26

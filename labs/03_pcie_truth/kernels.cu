// Lab 03's translation unit for the student's file behind the fixed interface of
// kernels.hpp. Angle brackets: the file is found through the include path, which
// puts a graded submission's folder first (labs/meson.build). Lab 01's kernel
// comes first, from the course tree: it is not this lab's exercise.
#include "kernels.hpp"

#include "../01_vector_add/vector_add.cuh"
#include <transfers.cuh>

namespace lab03 {

void upload(const float* h_a, const float* h_b, float* d_a, float* d_b, std::int64_t n, cudaStream_t stream) {
  ::upload(h_a, h_b, d_a, d_b, n, stream);
}
void download(const float* d_c, float* h_c, std::int64_t n, cudaStream_t stream) { ::download(d_c, h_c, n, stream); }
void round_trip(const float* h_a, const float* h_b, float* h_c, float* d_a, float* d_b, float* d_c, std::int64_t n,
                cudaStream_t stream) {
  ::round_trip(h_a, h_b, h_c, d_a, d_b, d_c, n, stream);
}
void vector_add(const float* a, const float* b, float* c, std::int64_t n, cudaStream_t stream) {
  ::vector_add(a, b, c, n, stream);
}
cudalabs::KernelResources vector_add_resources() { return cudalabs::resources_of(vector_add_kernel, vector_add_block); }

}  // namespace lab03

// Lab 23's kernel translation unit: the student's strategies file behind the
// fixed interface of kernels.hpp. Angle brackets: the file is found through the
// include path, which puts a graded submission's folder first (labs/meson.build).
#include "kernels.hpp"

#include <strategies.cuh>

namespace lab23 {

void add_explicit(const float* host_a, const float* host_b, float* host_c, float* dev_a, float* dev_b, float* dev_c,
                  std::int64_t n, cudaStream_t stream) {
  ::add_explicit(host_a, host_b, host_c, dev_a, dev_b, dev_c, n, stream);
}
void add_managed_faults(const float* a, const float* b, float* c, std::int64_t n, cudaStream_t stream) {
  ::add_managed_faults(a, b, c, n, stream);
}
void add_managed_prefetch(const float* a, const float* b, float* c, std::int64_t n, int device, cudaStream_t stream) {
  ::add_managed_prefetch(a, b, c, n, device, stream);
}
void advise_add(const float* a, const float* b, const float* c, std::int64_t n, int device) {
  ::advise_add(a, b, c, n, device);
}
void add_managed_advised(const float* a, const float* b, float* c, std::int64_t n, int device, cudaStream_t stream) {
  ::add_managed_advised(a, b, c, n, device, stream);
}
void add_zero_copy(const float* a, const float* b, float* c, std::int64_t n, cudaStream_t stream) {
  ::add_zero_copy(a, b, c, n, stream);
}

void stencil_explicit(const float* host_in, float* host_out, float* dev_in, float* dev_scratch0, float* dev_scratch1,
                      float* dev_out, std::int64_t nx, std::int64_t ny, float r, int steps, cudaStream_t stream) {
  ::stencil_explicit(host_in, host_out, dev_in, dev_scratch0, dev_scratch1, dev_out, nx, ny, r, steps, stream);
}
void stencil_managed_faults(const float* in, float* scratch0, float* scratch1, float* out, std::int64_t nx,
                            std::int64_t ny, float r, int steps, cudaStream_t stream) {
  ::stencil_managed_faults(in, scratch0, scratch1, out, nx, ny, r, steps, stream);
}
void stencil_managed_prefetch(const float* in, float* scratch0, float* scratch1, float* out, std::int64_t nx,
                              std::int64_t ny, float r, int steps, int device, cudaStream_t stream) {
  ::stencil_managed_prefetch(in, scratch0, scratch1, out, nx, ny, r, steps, device, stream);
}
void advise_stencil(const float* in, const float* scratch0, const float* scratch1, const float* out, std::int64_t nx,
                    std::int64_t ny, int device) {
  ::advise_stencil(in, scratch0, scratch1, out, nx, ny, device);
}
void stencil_managed_advised(const float* in, float* scratch0, float* scratch1, float* out, std::int64_t nx,
                             std::int64_t ny, float r, int steps, int device, cudaStream_t stream) {
  ::stencil_managed_advised(in, scratch0, scratch1, out, nx, ny, r, steps, device, stream);
}
void stencil_zero_copy(const float* in, float* scratch0, float* scratch1, float* out, std::int64_t nx, std::int64_t ny,
                       float r, int steps, cudaStream_t stream) {
  ::stencil_zero_copy(in, scratch0, scratch1, out, nx, ny, r, steps, stream);
}

cudalabs::KernelResources add_resources() { return cudalabs::resources_of(vector_add_kernel, vector_add_block); }
cudalabs::KernelResources stencil_resources() {
  return cudalabs::resources_of(jacobi_2d_naive_kernel, naive_block_x * naive_block_y);
}

}  // namespace lab23

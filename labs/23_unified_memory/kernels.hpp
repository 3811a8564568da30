#pragma once
// Lab 23's fixed interface: what main.cu (the course's host program) may call of
// the strategies file. kernels.cu defines it by including strategies.cuh, in a
// translation unit of its own, so nothing in it reaches main.cu.
//
// Each run function enqueues one end-to-end run on `stream` and never
// synchronises: the inputs are on the host when it starts, the result is
// readable by the host when the stream is done.
//   add:     c = a + b, n floats
//   stencil: `steps` Jacobi steps of the 2D heat equation (lab 22's 5-point
//            update, factor r, fixed boundary) on an nx × ny grid, in → out,
//            the steps between in scratch0 and scratch1
// Pointers: explicit gets host (pinned) and device buffers; managed_* get
// cudaMallocManaged memory; zero_copy gets device pointers of mapped pinned
// host memory. advise_* run once after allocation, before any run.
#include <cuda_runtime_api.h>

#include <cstdint>

#include <cudalabs/device.hpp>

namespace lab23 {

void add_explicit(const float* host_a, const float* host_b, float* host_c, float* dev_a, float* dev_b, float* dev_c,
                  std::int64_t n, cudaStream_t stream);
void add_managed_faults(const float* a, const float* b, float* c, std::int64_t n, cudaStream_t stream);
void add_managed_prefetch(const float* a, const float* b, float* c, std::int64_t n, int device, cudaStream_t stream);
void advise_add(const float* a, const float* b, const float* c, std::int64_t n, int device);
void add_managed_advised(const float* a, const float* b, float* c, std::int64_t n, int device, cudaStream_t stream);
void add_zero_copy(const float* a, const float* b, float* c, std::int64_t n, cudaStream_t stream);

void stencil_explicit(const float* host_in, float* host_out, float* dev_in, float* dev_scratch0, float* dev_scratch1,
                      float* dev_out, std::int64_t nx, std::int64_t ny, float r, int steps, cudaStream_t stream);
void stencil_managed_faults(const float* in, float* scratch0, float* scratch1, float* out, std::int64_t nx,
                            std::int64_t ny, float r, int steps, cudaStream_t stream);
void stencil_managed_prefetch(const float* in, float* scratch0, float* scratch1, float* out, std::int64_t nx,
                              std::int64_t ny, float r, int steps, int device, cudaStream_t stream);
void advise_stencil(const float* in, const float* scratch0, const float* scratch1, const float* out, std::int64_t nx,
                    std::int64_t ny, int device);
void stencil_managed_advised(const float* in, float* scratch0, float* scratch1, float* out, std::int64_t nx,
                             std::int64_t ny, float r, int steps, int device, cudaStream_t stream);
void stencil_zero_copy(const float* in, float* scratch0, float* scratch1, float* out, std::int64_t nx, std::int64_t ny,
                       float r, int steps, cudaStream_t stream);

cudalabs::KernelResources add_resources();
cudalabs::KernelResources stencil_resources();

}  // namespace lab23

#pragma once
// Lab 03's fixed interface: what main.cu (the course's host program) may call of
// the student's file, transfers.cuh. kernels.cu defines it by including that
// file in a translation unit of its own, so nothing in it reaches main.cu.
#include <cuda_runtime_api.h>

#include <cstdint>

#include <cudalabs/device.hpp>

namespace lab03 {

// Each enqueues on `stream` and never synchronises; host pointers may be
// pageable or pinned.
void upload(const float* h_a, const float* h_b, float* d_a, float* d_b, std::int64_t n, cudaStream_t stream);
void download(const float* d_c, float* h_c, std::int64_t n, cudaStream_t stream);
void round_trip(const float* h_a, const float* h_b, float* h_c, float* d_a, float* d_b, float* d_c, std::int64_t n,
                cudaStream_t stream);
// Lab 01's kernel, for the kernel-only row and the inputs of the downloads.
void vector_add(const float* a, const float* b, float* c, std::int64_t n, cudaStream_t stream);
cudalabs::KernelResources vector_add_resources();

}  // namespace lab03

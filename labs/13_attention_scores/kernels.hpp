#pragma once
// Lab 13's fixed interface: what main.cu (the course's host program) may call of
// the kernel file attention_scores.cuh. kernels.cu defines it in a translation
// unit of its own, so nothing in the kernel file reaches main.cu.
//
// Every launcher computes S = Q·Kᵀ / sqrt(dim) for Q, K [seq×dim] and S
// [seq×seq], row-major, dim in 1..attention_max_dim, enqueued on `stream`;
// none synchronises.
#include <cuda_runtime_api.h>

#include <cudalabs/device.hpp>

namespace lab13 {

void scores_tiled_kt(const float* q, const float* k, float* s, int seq, int dim, cudaStream_t stream);
void scores_register_tiled(const float* q, const float* k, float* s, int seq, int dim, cudaStream_t stream);

cudalabs::KernelResources scores_tiled_kt_resources();
cudalabs::KernelResources scores_register_tiled_resources();

}  // namespace lab13

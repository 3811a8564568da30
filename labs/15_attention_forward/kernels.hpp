#pragma once
// Lab 15's fixed interface: what main.cu (the course's host program) may call of
// the kernel file attention_forward.cuh. kernels.cu defines it in a translation
// unit of its own, so nothing in the kernel file reaches main.cu.
//
// Q, K, V, O are [seq×dim] and S (scores), P (weights) [seq×seq] scratch, all
// row-major floats, dim in 1..attention_max_dim; everything is enqueued on
// `stream`, nothing synchronises.
#include <cuda_runtime_api.h>

#include <cudalabs/device.hpp>

namespace lab15 {

// O = softmax(Q·Kᵀ / sqrt(dim))·V, through S and P.
void attention_forward_unfused(const float* q, const float* k, const float* v, float* scores, float* weights,
                               float* out, int seq, int dim, cudaStream_t stream);
// Its three stages alone: S = Q·Kᵀ / sqrt(dim); P = softmax_rows(S); O = P·V.
void unfused_scores(const float* q, const float* k, float* scores, int seq, int dim, cudaStream_t stream);
void unfused_softmax(const float* scores, float* weights, int seq, cudaStream_t stream);
void unfused_output(const float* weights, const float* v, float* out, int seq, int dim, cudaStream_t stream);

cudalabs::KernelResources unfused_scores_resources();
cudalabs::KernelResources unfused_softmax_resources(int seq);
cudalabs::KernelResources unfused_output_resources();
int unfused_output_slices(int seq, int dim);  // for the record

}  // namespace lab15

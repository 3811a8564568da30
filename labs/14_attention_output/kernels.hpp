#pragma once
// Lab 14's fixed interface: what main.cu (the course's host program) may call of
// the kernel file attention_output.cuh. kernels.cu defines it in a translation
// unit of its own, so nothing in the kernel file reaches main.cu.
//
// Every launcher computes O = P·V for P [seq×seq], V and O [seq×dim],
// row-major, dim in 1..attention_max_dim, enqueued on `stream`; none
// synchronises.
#include <cuda_runtime_api.h>

#include <cudalabs/device.hpp>

namespace lab14 {

void output_tiled(const float* p, const float* v, float* o, int seq, int dim, cudaStream_t stream);
void output_register_tiled(const float* p, const float* v, float* o, int seq, int dim, cudaStream_t stream);
void output_split_k(const float* p, const float* v, float* o, int seq, int dim, cudaStream_t stream);
int output_split_k_slices(int seq, int dim);  // slices of the contraction, for the record

cudalabs::KernelResources output_tiled_resources();
cudalabs::KernelResources output_register_tiled_resources();
cudalabs::KernelResources output_split_k_resources();

}  // namespace lab14

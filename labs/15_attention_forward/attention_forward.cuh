#pragma once
// The unfused attention forward pass: labs 13, 12 and 14 chained on one
// stream, no host round trip between them.
//
//   S = Q·Kᵀ / sqrt(d)   [seq×seq]  written to global memory
//   P = softmax_rows(S)  [seq×seq]  S read back, P written
//   O = P·V              [seq×d]    P read back
//
// Two seq×seq matrices go through DRAM: 4·seq² floats of traffic that lab 16
// (FlashAttention) never creates. Lab 16 runs the course's copy of this pass as
// its baseline. The kernels come from the earlier labs' files, never copied.
#include <cuda_runtime_api.h>

#include <cudalabs/device.hpp>

#include "../12_softmax/softmax.cuh"
#include "../13_attention_scores/attention_scores.cuh"
#include "../14_attention_output/attention_output.cuh"

// Internal linkage: another lab's host program compiles the course's copy of
// this file next to a kernel library that compiles the student's, and the two
// must never meet at link time (docs/lab-anatomy.md).
namespace {

// The pass's three stages, our fastest kernel of each lab: register-tiled
// scores, softmax with the row in registers (online past 16384 columns),
// split-K output. The lab's rows scores, softmax and output time each alone.
inline void unfused_scores(const float* q, const float* k, float* scores, int seq, int dim, cudaStream_t stream) {
  scores_register_tiled(q, k, scores, seq, dim, stream);
}
inline void unfused_softmax(const float* scores, float* weights, int seq, cudaStream_t stream) {
  softmax_rows_best(scores, weights, seq, seq, stream);
}
inline void unfused_output(const float* weights, const float* v, float* out, int seq, int dim, cudaStream_t stream) {
  output_split_k(weights, v, out, seq, dim, stream);
}

// What each stage's kernel costs the GPU (the resource table), and how many
// slices the output stage cuts the contraction into.
inline cudalabs::KernelResources unfused_scores_resources() {
  return cudalabs::resources_of(scores_register_tiled_kernel, rt_threads);
}
inline cudalabs::KernelResources unfused_softmax_resources(int seq) {
  const SoftmaxLaunch launch = seq <= softmax_registers_max_cols ? softmax_registers_shape(seq)
                                                                 : SoftmaxLaunch{softmax_online_kernel, softmax_block};
  return cudalabs::resources_of(launch.kernel, launch.threads);
}
inline cudalabs::KernelResources unfused_output_resources() {
  return cudalabs::resources_of(output_split_k_kernel, ort_threads);
}
inline int unfused_output_slices(int seq, int dim) { return output_split_k_slices(seq, dim); }

// Unfused forward pass on `stream`: scores[seq×seq], weights[seq×seq] are scratch.
// Throws UsageError for d outside 1..128. Never synchronises.
inline void attention_forward_unfused(const float* q, const float* k, const float* v, float* scores, float* weights,
                                      float* out, int seq, int dim, cudaStream_t stream) {
  check_head_dim(dim);
  unfused_scores(q, k, scores, seq, dim, stream);
  unfused_softmax(scores, weights, seq, stream);
  unfused_output(weights, v, out, seq, dim, stream);
}

}  // namespace

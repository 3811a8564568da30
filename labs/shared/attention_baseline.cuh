#pragma once
// The baseline of labs 15, 16 and 17, and the reference of labs 16 and 17 for
// problems too large for the CPU: the unfused pass with its two products by
// cuBLAS (FP32, no TF32) and the course's softmax (cuBLAS has none).
//
// Course code, in labs/shared/ (host code several labs share): main.cu includes
// it by its plain name. It runs the course's lab 12 softmax, whose kernels have
// internal linkage, so they stay apart from a kernel library's copy of them.
#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdint>

#include <cudalabs/blas.hpp>

#include "../12_softmax/softmax.cuh"
#include "../13_attention_scores/attention_sizes.hpp"

// Chooses cuBLAS's fastest algorithm for both products of this shape now, before
// any measurement (the search synchronises: inside a traced run it would count as
// the baseline waiting for the GPU). Call once per size, with the same pointers.
inline void prepare_attention_forward_cublas(const cudalabs::Cublas& blas, const float* q, const float* k,
                                             const float* v, const float* scores, const float* weights,
                                             const float* out, int seq, int dim, cudaStream_t stream) {
  check_head_dim(dim);
  blas.prepare_sgemm(q, k, scores, seq, seq, dim, stream, attention_scale(dim), 0.0f, /*b_transposed=*/true);
  blas.prepare_sgemm(weights, v, out, seq, dim, seq, stream);
}

// The causal mask, for the reference of labs 16, 17 and 31 under --causal: the
// score of every key after its query becomes -inf, so the softmax gives it
// weight exactly 0 (exp(-inf - max) = 0), as the CPU reference skips it. Row i
// keeps i + 1 finite scores, so no row is all -inf.
namespace {
__global__ void mask_keys_after_query(float* scores, int seq) {
  const std::int64_t n = static_cast<std::int64_t>(seq) * seq;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t at = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; at < n; at += stride)
    if (at % seq > at / seq) scores[at] = -INFINITY;
}
}  // namespace

// Same scratch, same stream, same contract as attention_forward_unfused: scores
// and weights are seq×seq scratch; UsageError for d outside 1..128; never
// synchronises. causal: keys after the query masked (a reference only: lab 15's
// own baseline has no mask).
inline void attention_forward_cublas(const cudalabs::Cublas& blas, const float* q, const float* k, const float* v,
                                     float* scores, float* weights, float* out, int seq, int dim, cudaStream_t stream,
                                     bool causal = false) {
  check_head_dim(dim);
  blas.sgemm(q, k, scores, seq, seq, dim, stream, attention_scale(dim), 0.0f, /*b_transposed=*/true);
  if (causal) {
    // Grid-stride: 4 blocks of 256 per SM's worth (132 SMs on an H100) covers any N² in a few passes.
    mask_keys_after_query<<<1024, 256, 0, stream>>>(scores, seq);
    CUDALABS_CHECK_LAUNCH("mask_keys_after_query");
  }
  softmax_rows_best(scores, weights, seq, seq, stream);
  blas.sgemm(weights, v, out, seq, dim, seq, stream);
}

#pragma once
// The baseline of labs 15, 16 and 17, and the reference of labs 16 and 17 for
// problems too large for the CPU: the unfused pass with its two products by
// cuBLAS (FP32, no TF32) and the course's softmax (cuBLAS has none).
//
// Course code with the course's lab 12 kernels in it. A program whose kernel
// translation unit compiles lab 12's file too includes this inside a namespace
// of its own (lab 15's main.cu says why).
#include <cuda_runtime_api.h>

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

// Same scratch, same stream, same contract as attention_forward_unfused: scores
// and weights are seq×seq scratch; UsageError for d outside 1..128; never
// synchronises.
inline void attention_forward_cublas(const cudalabs::Cublas& blas, const float* q, const float* k, const float* v,
                                     float* scores, float* weights, float* out, int seq, int dim, cudaStream_t stream) {
  check_head_dim(dim);
  blas.sgemm(q, k, scores, seq, seq, dim, stream, attention_scale(dim), 0.0f, /*b_transposed=*/true);
  softmax_rows_best(scores, weights, seq, seq, stream);
  blas.sgemm(weights, v, out, seq, dim, seq, stream);
}

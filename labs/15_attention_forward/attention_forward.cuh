#pragma once
// The unfused attention forward pass: labs 13, 12 and 14 chained on one
// stream, no host round trip between them.
//
//   S = Q·Kᵀ / sqrt(d)   [seq×seq]  written to global memory
//   P = softmax_rows(S)  [seq×seq]  S read back, P written
//   O = P·V              [seq×d]    P read back
//
// Two seq×seq matrices go through DRAM: 4·seq² floats of traffic that lab 16
// (FlashAttention) never creates. Lab 16 calls these two functions as its
// baselines.
#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdint>

#include <cudalabs/blas.hpp>
#include <cudalabs/checker.hpp>
#include <cudalabs/error.hpp>

#include "../12_softmax/softmax.cuh"
#include "../13_attention_scores/attention_scores.cuh"
#include "../14_attention_output/attention_output.cuh"

// Unfused forward pass on `stream`: scores[seq×seq], weights[seq×seq] are scratch.
// Our fastest kernel of each lab: register-tiled scores, softmax with the row in
// registers (online past 16384 columns), split-K output. Throws UsageError for d
// outside 1..128. Never synchronises.
inline void attention_forward_unfused(const float* q, const float* k, const float* v, float* scores, float* weights,
                                      float* out, int seq, int dim, cudaStream_t stream) {
  check_head_dim(dim);
  scores_register_tiled(q, k, scores, seq, dim, stream);
  softmax_rows_best(scores, weights, seq, seq, stream);
  output_split_k(weights, v, out, seq, dim, stream);
}

// The baseline: the two products by cuBLAS (FP32, no TF32), the softmax ours
// (cuBLAS has none). Same scratch, same stream, same contract.
inline void attention_forward_cublas(const cudalabs::Cublas& blas, const float* q, const float* k, const float* v,
                                     float* scores, float* weights, float* out, int seq, int dim, cudaStream_t stream) {
  check_head_dim(dim);
  blas.sgemm(q, k, scores, seq, seq, dim, stream, attention_scale(dim), 0.0f, /*b_transposed=*/true);
  softmax_rows_best(scores, weights, seq, seq, stream);
  blas.sgemm(weights, v, out, seq, dim, seq, stream);
}

// Bytes the unfused pass moves through DRAM at the least: Q, K, V read and O
// written once (4·seq·d floats) plus S and P each written once and read once
// (4·seq² floats). The second term is the one FlashAttention removes.
inline double attention_nxn_bytes(std::int64_t seq) { return 4.0 * 4.0 * static_cast<double>(seq) * seq; }
inline double attention_unfused_bytes(std::int64_t seq, std::int64_t dim) {
  return 4.0 * 4.0 * static_cast<double>(seq) * dim + attention_nxn_bytes(seq);
}

// How far the weights may be from the double reference, relative: each score
// is a float dot product of d values in [-1, 1), scaled by 1/sqrt(d), so off by
// at most 2·eps·d/sqrt(d) = 2·eps·sqrt(d); a weight exp(s - max)/sum moves by
// twice that (s and max) relative, plus the softmax's own error (lab 12).
inline double attention_weights_rel_tolerance(std::int64_t seq, std::int64_t dim) {
  constexpr double eps = 5.96e-8;  // 2^-24
  return 4.0 * eps * std::sqrt(static_cast<double>(dim)) + softmax_rel_tolerance(seq);
}

// How far each output may be from the double reference, inputs in [-1, 1):
// O[i] = sum_j P[i][j]·V[j] with sum_j P[i][j] = 1, so relative errors of the
// weights move it by at most that relative error (times |V| < 1); the float sum
// of seq terms, each at most max_p (the largest weight), adds 2·eps·seq·max_p
// (dot_tolerance with magnitude² = max_p). At seq = 4096, d = 64: ~1.3e-5, while
// one dropped or misplaced term moves an output by ~1/seq·|V| ≈ 1e-4.
inline cudalabs::Tolerance attention_out_tolerance(std::int64_t seq, std::int64_t dim, double max_p) {
  constexpr double eps = 5.96e-8;
  return {.abs = attention_weights_rel_tolerance(seq, dim) + 2.0 * eps * static_cast<double>(seq) * max_p,
          .rel = 1e-5};
}

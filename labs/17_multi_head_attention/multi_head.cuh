#pragma once
// Lab 17: lab 16's fused kernels launched over batch × heads, two ways.
//
//   per-head loop   one launch per (batch, head) from a host loop, pointers
//                   offset by head·seq·dim, each launch lab 16's one-head shape
//   batched grid    one launch whose grid covers (query tiles, heads, batch):
//                   lab 16's launchers already read their head from the grid
//                   (flash_common.cuh), so this is one call with the whole shape
//
// Q, K, V, O are [batch][heads][seq][dim] (attention_shape.hpp). The kernels
// are lab 16's, included, not copied.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "../16_flash_attention/flash_fa2.cuh"
#include "../16_flash_attention/flash_fp32.cuh"
#include "../16_flash_attention/flash_mma.cuh"

// One head of `shape`: what each launch of the per-head loop computes.
inline AttentionShape single_head(const AttentionShape& shape) {
  return {.seq = shape.seq, .dim = shape.dim, .causal = shape.causal};
}

// ---- FP32, CUDA cores ----------------------------------------------------------

// The per-head loop's plan is the one-head shape's: one split workspace, reused
// head after head on one stream (each launch leaves its counters at zero).
inline Fp32Plan fp32_per_head_loop_plan(const AttentionShape& shape, cudaStream_t stream) {
  return flash_fp32_plan(single_head(shape), stream);
}
inline void fp32_per_head_loop(const float* q, const float* k, const float* v, float* out, const AttentionShape& shape,
                               Fp32Plan& plan, cudaStream_t stream) {
  // BEGIN SOLUTION fp32_per_head_loop
  const std::int64_t per_head = shape.head_elements();
  for (std::int64_t h = 0; h < shape.heads_total(); ++h)
    flash_fp32(q + h * per_head, k + h * per_head, v + h * per_head, out + h * per_head, single_head(shape), plan,
               stream);
  // END SOLUTION
  // STUB: // TODO: for each of the batch·heads heads, flash_fp32 on single_head(shape), pointers offset by head_elements().
  // STUB: cudalabs::not_implemented("fp32_per_head_loop", q, k, v, out, shape, plan, stream);
}

// The batched grid's plan: a batch of heads is rarely split at all (flash_fp32_splits).
inline Fp32Plan fp32_batched_grid_plan(const AttentionShape& shape, cudaStream_t stream) {
  return flash_fp32_plan(shape, stream);
}
inline void fp32_batched_grid(const float* q, const float* k, const float* v, float* out, const AttentionShape& shape,
                              Fp32Plan& plan, cudaStream_t stream) {
  // BEGIN SOLUTION fp32_batched_grid
  flash_fp32(q, k, v, out, shape, plan, stream);
  // END SOLUTION
  // STUB: // TODO: one flash_fp32 call with the whole shape: its grid covers (query tiles, heads, batch).
  // STUB: cudalabs::not_implemented("fp32_batched_grid", q, k, v, out, shape, plan, stream);
}

// ---- FP16 / BF16, tensor cores --------------------------------------------------

template <typename T>
void mma_per_head_loop(const T* q, const T* k, const T* v, float* out, const AttentionShape& shape,
                       cudaStream_t stream) {
  // BEGIN SOLUTION fp16_per_head_loop
  const std::int64_t per_head = shape.head_elements();
  for (std::int64_t h = 0; h < shape.heads_total(); ++h)
    flash_mma<T>(q + h * per_head, k + h * per_head, v + h * per_head, out + h * per_head, single_head(shape), stream);
  // END SOLUTION
  // STUB: // TODO: for each head, flash_mma<T> on single_head(shape), pointers offset by head_elements().
  // STUB: cudalabs::not_implemented("mma_per_head_loop", q, k, v, out, shape, stream);
}

template <typename T>
void mma_batched_grid(const T* q, const T* k, const T* v, float* out, const AttentionShape& shape,
                      cudaStream_t stream) {
  // BEGIN SOLUTION fp16_batched_grid bf16_batched_grid
  flash_mma<T>(q, k, v, out, shape, stream);
  // END SOLUTION
  // STUB: // TODO: one flash_mma<T> call over every head.
  // STUB: cudalabs::not_implemented("mma_batched_grid", q, k, v, out, shape, stream);
}

// FlashAttention-2's kernel (lab 16's flash_fa2.cuh) over every head in one
// launch. Its plan splits the keys only when the heads' query tiles leave SMs
// without a block (4 × 16 heads of N = 4096 make 2048 blocks: no split).
inline Fa2Plan fa2_batched_grid_plan(const AttentionShape& shape) { return flash_fa2_plan(shape, 0); }
template <typename T>
void fa2_batched_grid(const T* q, const T* k, const T* v, float* out, const AttentionShape& shape, Fa2Plan& plan,
                      cudaStream_t stream) {
  // BEGIN SOLUTION fp16_fa2_grid bf16_fa2_grid
  flash_fa2<T>(q, k, v, out, shape, plan, stream);
  // END SOLUTION
  // STUB: // TODO: one flash_fa2<T> call over every head, with its plan.
  // STUB: cudalabs::not_implemented("fa2_batched_grid", q, k, v, out, shape, plan, stream);
}

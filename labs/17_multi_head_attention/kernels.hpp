#pragma once
// Lab 17's fixed interface: what main.cu (the course's host program) may call of
// the kernel file multi_head.cuh (which launches lab 16's kernels). kernels.cu
// defines it in a translation unit of its own, so nothing in the kernel files
// reaches main.cu.
//
// Every launcher computes O = softmax(Q·Kᵀ / sqrt(dim))·V for every head of
// `shape` (attention_shape.hpp: [batch][heads][seq][dim]; causal masks keys
// after the query) into FP32 `out`, enqueued on `stream`; none synchronises or
// allocates.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <memory>

#include <cudalabs/device.hpp>

#include "../16_flash_attention/attention_shape.hpp"

namespace lab17 {

// The FP32 launchers' plan for one shape (split count, split workspace): opaque
// here (defined in kernels.cu), made before the first launch, used on one
// stream only, by the launcher it was made for.
struct Fp32PlanState;
using Fp32Plan = std::shared_ptr<Fp32PlanState>;
int fp32_splits(const Fp32Plan& plan);
double fp32_workspace_bytes(const Fp32Plan& plan);

// FP32 on the CUDA cores; dim a multiple of 4 up to fp32_max_dim.
Fp32Plan fp32_per_head_loop_plan(const AttentionShape& shape, cudaStream_t stream);
void fp32_per_head_loop(const float* q, const float* k, const float* v, float* out, const AttentionShape& shape,
                        const Fp32Plan& plan, cudaStream_t stream);
Fp32Plan fp32_batched_grid_plan(const AttentionShape& shape, cudaStream_t stream);
void fp32_batched_grid(const float* q, const float* k, const float* v, float* out, const AttentionShape& shape,
                       const Fp32Plan& plan, cudaStream_t stream);
std::size_t fp32_smem_bytes(int dim);
cudalabs::KernelResources fp32_resources(int dim);

// Tensor cores, FP16 or BF16 inputs, FP32 accumulation and output; dim 64 or 128.
void fp16_per_head_loop(const __half* q, const __half* k, const __half* v, float* out, const AttentionShape& shape,
                        cudaStream_t stream);
void fp16_batched_grid(const __half* q, const __half* k, const __half* v, float* out, const AttentionShape& shape,
                       cudaStream_t stream);
void bf16_batched_grid(const __nv_bfloat16* q, const __nv_bfloat16* k, const __nv_bfloat16* v, float* out,
                       const AttentionShape& shape, cudaStream_t stream);
std::size_t mma_smem_bytes(int dim);  // FP16 and BF16 alike
cudalabs::KernelResources fp16_resources(int dim);
cudalabs::KernelResources bf16_resources(int dim);

// Lab 16's FlashAttention-2 kernel (flash_fa2.cuh) over every head, one grid.
// Its plan (split count and workspace) is opaque here, made before the first
// launch, used on one stream at a time.
struct Fa2PlanState;
using Fa2Plan = std::shared_ptr<Fa2PlanState>;
Fa2Plan fa2_batched_grid_plan(const AttentionShape& shape);
int fa2_splits(const Fa2Plan& plan);
double fa2_workspace_bytes(const Fa2Plan& plan);
void fp16_fa2_grid(const __half* q, const __half* k, const __half* v, float* out, const AttentionShape& shape,
                   const Fa2Plan& plan, cudaStream_t stream);
void bf16_fa2_grid(const __nv_bfloat16* q, const __nv_bfloat16* k, const __nv_bfloat16* v, float* out,
                   const AttentionShape& shape, const Fa2Plan& plan, cudaStream_t stream);
std::size_t fa2_smem_bytes(int dim);  // FP16 and BF16 alike
cudalabs::KernelResources fa2_fp16_resources(int dim);
cudalabs::KernelResources fa2_bf16_resources(int dim);

}  // namespace lab17

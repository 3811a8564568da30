#pragma once
// Lab 16's fixed interface: what main.cu (the course's host program) may call of
// the kernel files flash_fp32.cuh, flash_mma.cuh, flash_fa2.cuh, mma_fragments.cuh
// and flash_common.cuh.
// kernels.cu defines it in a translation unit of its own, so nothing in the
// kernel files reaches main.cu.
//
// Every launcher computes O = softmax(Q·Kᵀ / sqrt(dim))·V for every head of
// `shape` (attention_shape.hpp: layout [batch][heads][seq][dim]; causal masks
// keys after the query) into FP32 `out`, enqueued on `stream`; none
// synchronises or allocates.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <memory>

#include <cudalabs/device.hpp>

#include "attention_shape.hpp"

namespace lab16 {

// flash_fp32's launch plan for one shape: how many blocks share the keys of a
// query tile, and their split workspace. Opaque here (defined in kernels.cu),
// made before the first launch, used on one stream only.
struct Fp32PlanState;
using Fp32Plan = std::shared_ptr<Fp32PlanState>;
Fp32Plan flash_fp32_plan(const AttentionShape& shape, cudaStream_t stream);
int flash_fp32_splits(const Fp32Plan& plan);
double flash_fp32_workspace_bytes(const Fp32Plan& plan);

// FP32 on the CUDA cores; dim a multiple of 4 up to fp32_max_dim.
void flash_fp32(const float* q, const float* k, const float* v, float* out, const AttentionShape& shape,
                const Fp32Plan& plan, cudaStream_t stream);
std::size_t flash_fp32_smem_bytes(int dim);
cudalabs::KernelResources flash_fp32_resources(int dim);

// Tensor cores, FP16 or BF16 inputs, FP32 accumulation and output; dim 64 or 128.
void flash_mma(const __half* q, const __half* k, const __half* v, float* out, const AttentionShape& shape,
               cudaStream_t stream);
void flash_mma(const __nv_bfloat16* q, const __nv_bfloat16* k, const __nv_bfloat16* v, float* out,
               const AttentionShape& shape, cudaStream_t stream);
std::size_t flash_fp16_smem_bytes(int dim);
std::size_t flash_bf16_smem_bytes(int dim);
cudalabs::KernelResources flash_fp16_resources(int dim);
cudalabs::KernelResources flash_bf16_resources(int dim);

// FlashAttention-2's techniques on the tensor cores (flash_fa2.cuh): FP16 or BF16
// inputs, FP32 out, dim 64 or 128. Its plan: how many blocks share the keys of a
// query tile (`splits` 0: the kernel file's choice) and their workspace; opaque
// here, made before the first launch, used on one stream at a time.
struct Fa2PlanState;
using Fa2Plan = std::shared_ptr<Fa2PlanState>;
Fa2Plan flash_fa2_plan(const AttentionShape& shape, int splits);
int flash_fa2_splits(const Fa2Plan& plan);
double flash_fa2_workspace_bytes(const Fa2Plan& plan);
void flash_fa2(const __half* q, const __half* k, const __half* v, float* out, const AttentionShape& shape,
               const Fa2Plan& plan, cudaStream_t stream);
void flash_fa2(const __nv_bfloat16* q, const __nv_bfloat16* k, const __nv_bfloat16* v, float* out,
               const AttentionShape& shape, const Fa2Plan& plan, cudaStream_t stream);
std::size_t flash_fa2_smem_bytes(int dim);  // FP16 and BF16 alike
cudalabs::KernelResources flash_fa2_fp16_resources(int dim);
cudalabs::KernelResources flash_fa2_bf16_resources(int dim);

}  // namespace lab16

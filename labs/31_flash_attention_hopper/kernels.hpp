#pragma once
// Lab 31's fixed interface: what main.cu (the course's host program) may call of
// the kernel files wgmma_sync.cuh, warp_specialized.cuh, pingpong.cuh (and
// hopper_common.cuh and cudalabs/hopper.cuh under them). kernels.cu defines it in a
// translation unit of its own, compiled for sm_90a only (meson.build).
//
// Every launcher computes O = softmax(Q·Kᵀ / sqrt(dim))·V for every head of
// `shape` (attention_shape.hpp: [batch][heads][seq][dim]; causal masks keys
// after the query) from FP16 or BF16 q, k, v into FP32 `out`, enqueued on
// `stream`; none synchronises or allocates. dim: 64 or 128.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>

#include <cudalabs/device.hpp>

#include "../16_flash_attention/attention_shape.hpp"

namespace lab31 {

// Why the Hopper kernels cannot run here (empty: they can): the build has no
// sm_90a code (gpu_arch without 9.0), the GPU is not compute capability 9.0
// (sm_90a code runs on nothing else), or the loader did not pick the sm_90a
// code (checked by a one-thread probe kernel, once). Call before any launcher.
std::string hopper_blocker(const cudalabs::DeviceInfo& device);

void wgmma_sync(const __half* q, const __half* k, const __half* v, float* out, const AttentionShape& shape,
                cudaStream_t stream);
void wgmma_sync(const __nv_bfloat16* q, const __nv_bfloat16* k, const __nv_bfloat16* v, float* out,
                const AttentionShape& shape, cudaStream_t stream);
void warp_specialized(const __half* q, const __half* k, const __half* v, float* out, const AttentionShape& shape,
                      cudaStream_t stream);
void warp_specialized(const __nv_bfloat16* q, const __nv_bfloat16* k, const __nv_bfloat16* v, float* out,
                      const AttentionShape& shape, cudaStream_t stream);
void pingpong(const __half* q, const __half* k, const __half* v, float* out, const AttentionShape& shape,
              cudaStream_t stream);
void pingpong(const __nv_bfloat16* q, const __nv_bfloat16* k, const __nv_bfloat16* v, float* out,
              const AttentionShape& shape, cudaStream_t stream);

// Dynamic shared memory per block, and the resource report, of each variant's
// kernel for `dim` (bf16: the BF16 instantiation). Only after hopper_blocker()
// returned empty (they set the kernels' shared-memory limit).
std::size_t smem_bytes(const std::string& variant, int dim);
cudalabs::KernelResources resources(const std::string& variant, int dim, bool bf16);

}  // namespace lab31

// Lab 17's kernel translation unit: the student's kernel file behind the fixed
// interface of kernels.hpp. Angle brackets: the file is found through the include
// path, which puts a graded submission's folder first (labs/meson.build).
#include "kernels.hpp"

#include <multi_head.cuh>

namespace lab17 {

struct Fp32PlanState {
  ::Fp32Plan plan;
};

int fp32_splits(const Fp32Plan& plan) { return plan->plan.splits; }
double fp32_workspace_bytes(const Fp32Plan& plan) { return plan->plan.workspace_bytes(); }

Fp32Plan fp32_per_head_loop_plan(const AttentionShape& shape, cudaStream_t stream) {
  return std::make_shared<Fp32PlanState>(Fp32PlanState{::fp32_per_head_loop_plan(shape, stream)});
}
void fp32_per_head_loop(const float* q, const float* k, const float* v, float* out, const AttentionShape& shape,
                        const Fp32Plan& plan, cudaStream_t stream) {
  ::fp32_per_head_loop(q, k, v, out, shape, plan->plan, stream);
}
Fp32Plan fp32_batched_grid_plan(const AttentionShape& shape, cudaStream_t stream) {
  return std::make_shared<Fp32PlanState>(Fp32PlanState{::fp32_batched_grid_plan(shape, stream)});
}
void fp32_batched_grid(const float* q, const float* k, const float* v, float* out, const AttentionShape& shape,
                       const Fp32Plan& plan, cudaStream_t stream) {
  ::fp32_batched_grid(q, k, v, out, shape, plan->plan, stream);
}
std::size_t fp32_smem_bytes(int dim) { return ::flash_fp32_smem_bytes(dim); }
cudalabs::KernelResources fp32_resources(int dim) {
  const KernelChoice kc = flash_fp32_choice(dim);
  return cudalabs::kernel_resources(kc.kernel, kc.threads, kc.smem_bytes);
}

void fp16_per_head_loop(const __half* q, const __half* k, const __half* v, float* out, const AttentionShape& shape,
                        cudaStream_t stream) {
  ::mma_per_head_loop<__half>(q, k, v, out, shape, stream);
}
void fp16_batched_grid(const __half* q, const __half* k, const __half* v, float* out, const AttentionShape& shape,
                       cudaStream_t stream) {
  ::mma_batched_grid<__half>(q, k, v, out, shape, stream);
}
void bf16_batched_grid(const __nv_bfloat16* q, const __nv_bfloat16* k, const __nv_bfloat16* v, float* out,
                       const AttentionShape& shape, cudaStream_t stream) {
  ::mma_batched_grid<__nv_bfloat16>(q, k, v, out, shape, stream);
}
std::size_t mma_smem_bytes(int dim) { return ::flash_mma_smem_bytes<__half>(dim); }
cudalabs::KernelResources fp16_resources(int dim) {
  const KernelChoice kc = flash_mma_choice<__half>(dim);
  return cudalabs::kernel_resources(kc.kernel, kc.threads, kc.smem_bytes);
}
cudalabs::KernelResources bf16_resources(int dim) {
  const KernelChoice kc = flash_mma_choice<__nv_bfloat16>(dim);
  return cudalabs::kernel_resources(kc.kernel, kc.threads, kc.smem_bytes);
}

struct Fa2PlanState {
  ::Fa2Plan plan;
};

Fa2Plan fa2_batched_grid_plan(const AttentionShape& shape) {
  return std::make_shared<Fa2PlanState>(Fa2PlanState{::fa2_batched_grid_plan(shape)});
}
int fa2_splits(const Fa2Plan& plan) { return plan->plan.splits; }
double fa2_workspace_bytes(const Fa2Plan& plan) { return plan->plan.workspace_bytes(); }
void fp16_fa2_grid(const __half* q, const __half* k, const __half* v, float* out, const AttentionShape& shape,
                   const Fa2Plan& plan, cudaStream_t stream) {
  ::fa2_batched_grid<__half>(q, k, v, out, shape, plan->plan, stream);
}
void bf16_fa2_grid(const __nv_bfloat16* q, const __nv_bfloat16* k, const __nv_bfloat16* v, float* out,
                   const AttentionShape& shape, const Fa2Plan& plan, cudaStream_t stream) {
  ::fa2_batched_grid<__nv_bfloat16>(q, k, v, out, shape, plan->plan, stream);
}
std::size_t fa2_smem_bytes(int dim) { return ::flash_fa2_smem_bytes<__half>(dim); }
cudalabs::KernelResources fa2_fp16_resources(int dim) {
  const KernelChoice kc = flash_fa2_choice<__half>(dim);
  return cudalabs::kernel_resources(kc.kernel, kc.threads, kc.smem_bytes);
}
cudalabs::KernelResources fa2_bf16_resources(int dim) {
  const KernelChoice kc = flash_fa2_choice<__nv_bfloat16>(dim);
  return cudalabs::kernel_resources(kc.kernel, kc.threads, kc.smem_bytes);
}

}  // namespace lab17

// Lab 16's kernel translation unit: the student's kernel files behind the fixed
// interface of kernels.hpp. Angle brackets: the files are found through the
// include path, which puts a graded submission's folder first (labs/meson.build).
#include "kernels.hpp"

#include <flash_fa2.cuh>
#include <flash_fp32.cuh>
#include <flash_mma.cuh>

namespace lab16 {

struct Fp32PlanState {
  ::Fp32Plan plan;
};

Fp32Plan flash_fp32_plan(const AttentionShape& shape, cudaStream_t stream) {
  return std::make_shared<Fp32PlanState>(Fp32PlanState{::flash_fp32_plan(shape, stream)});
}
int flash_fp32_splits(const Fp32Plan& plan) { return plan->plan.splits; }
double flash_fp32_workspace_bytes(const Fp32Plan& plan) { return plan->plan.workspace_bytes(); }

void flash_fp32(const float* q, const float* k, const float* v, float* out, const AttentionShape& shape,
                const Fp32Plan& plan, cudaStream_t stream) {
  ::flash_fp32(q, k, v, out, shape, plan->plan, stream);
}
std::size_t flash_fp32_smem_bytes(int dim) { return ::flash_fp32_smem_bytes(dim); }
cudalabs::KernelResources flash_fp32_resources(int dim) {
  const KernelChoice kc = flash_fp32_choice(dim);
  return cudalabs::kernel_resources(kc.kernel, kc.threads, kc.smem_bytes);
}

void flash_mma(const __half* q, const __half* k, const __half* v, float* out, const AttentionShape& shape,
               cudaStream_t stream) {
  ::flash_mma<__half>(q, k, v, out, shape, stream);
}
void flash_mma(const __nv_bfloat16* q, const __nv_bfloat16* k, const __nv_bfloat16* v, float* out,
               const AttentionShape& shape, cudaStream_t stream) {
  ::flash_mma<__nv_bfloat16>(q, k, v, out, shape, stream);
}
std::size_t flash_fp16_smem_bytes(int dim) { return ::flash_mma_smem_bytes<__half>(dim); }
std::size_t flash_bf16_smem_bytes(int dim) { return ::flash_mma_smem_bytes<__nv_bfloat16>(dim); }
cudalabs::KernelResources flash_fp16_resources(int dim) {
  const KernelChoice kc = flash_mma_choice<__half>(dim);
  return cudalabs::kernel_resources(kc.kernel, kc.threads, kc.smem_bytes);
}
cudalabs::KernelResources flash_bf16_resources(int dim) {
  const KernelChoice kc = flash_mma_choice<__nv_bfloat16>(dim);
  return cudalabs::kernel_resources(kc.kernel, kc.threads, kc.smem_bytes);
}

struct Fa2PlanState {
  ::Fa2Plan plan;
};

Fa2Plan flash_fa2_plan(const AttentionShape& shape, int splits) {
  return std::make_shared<Fa2PlanState>(Fa2PlanState{::flash_fa2_plan(shape, splits)});
}
int flash_fa2_splits(const Fa2Plan& plan) { return plan->plan.splits; }
double flash_fa2_workspace_bytes(const Fa2Plan& plan) { return plan->plan.workspace_bytes(); }
void flash_fa2(const __half* q, const __half* k, const __half* v, float* out, const AttentionShape& shape,
               const Fa2Plan& plan, cudaStream_t stream) {
  ::flash_fa2<__half>(q, k, v, out, shape, plan->plan, stream);
}
void flash_fa2(const __nv_bfloat16* q, const __nv_bfloat16* k, const __nv_bfloat16* v, float* out,
               const AttentionShape& shape, const Fa2Plan& plan, cudaStream_t stream) {
  ::flash_fa2<__nv_bfloat16>(q, k, v, out, shape, plan->plan, stream);
}
std::size_t flash_fa2_smem_bytes(int dim) { return ::flash_fa2_smem_bytes<__half>(dim); }
cudalabs::KernelResources flash_fa2_fp16_resources(int dim) {
  const KernelChoice kc = flash_fa2_choice<__half>(dim);
  return cudalabs::kernel_resources(kc.kernel, kc.threads, kc.smem_bytes);
}
cudalabs::KernelResources flash_fa2_bf16_resources(int dim) {
  const KernelChoice kc = flash_fa2_choice<__nv_bfloat16>(dim);
  return cudalabs::kernel_resources(kc.kernel, kc.threads, kc.smem_bytes);
}

}  // namespace lab16

// Lab 33's kernel translation unit for steps 2-4 (per_tensor_fp8.cuh,
// promoted_fp8.cuh, block_scaled_fp8.cuh), built with
// -gencode=arch=compute_90a,code=sm_90a when the configured architectures
// include 9.0 (meson.build), as lab 30's step 4. Elsewhere the kernels are
// empty bodies, and the probe (cudalabs/hopper.cuh) tells the host so.
#include "kernels.hpp"

#include <block_scaled_fp8.cuh>
#include <per_tensor_fp8.cuh>
#include <promoted_fp8.cuh>

namespace lab33 {

using cudalabs::resources_of;

void per_tensor(const __nv_fp8_e4m3* a, const __nv_fp8_e4m3* b, const float* sa, const float* sb, float* c, int m, int n, int k, cudaStream_t s) { ::gemm_fp8_per_tensor(a, b, sa, sb, c, m, n, k, s); }
void promoted(const __nv_fp8_e4m3* a, const __nv_fp8_e4m3* b, const float* sa, const float* sb, float* c, int m, int n, int k, cudaStream_t s) { ::gemm_fp8_promoted(a, b, sa, sb, c, m, n, k, s); }
void block_scaled(const __nv_fp8_e4m3* a, const __nv_fp8_e4m3* b, const float* sa, const float* sb, float* c, int m, int n, int k, cudaStream_t s) { ::gemm_fp8_block_scaled(a, b, sa, sb, c, m, n, k, s); }

// Of the wide tile in pairs of CTAs, the kernel large shapes run (lab 30's).
cudalabs::KernelResources per_tensor_resources() {
  using wgmma_step::WideTile;
  gemm_wgmma_tma_prepare<__nv_fp8x2_e4m3>();
  return resources_of(gemm_wgmma_tma_kernel<__nv_fp8x2_e4m3, 2, WideTile>, wgmma_step::threads, WideTile::smem_bytes);
}
cudalabs::KernelResources promoted_resources() {
  using Scales = promoted_step::PerTensorScales;
  gemm_fp8_promoted_prepare<Scales>();
  return resources_of(gemm_fp8_promoted_kernel<Scales>, wgmma_step::threads, promoted_step::smem_bytes<Scales>);
}
cudalabs::KernelResources block_scaled_resources() {
  using Scales = block_scaled_step::BlockScales;
  gemm_fp8_promoted_prepare<Scales>();
  return resources_of(gemm_fp8_promoted_kernel<Scales>, wgmma_step::threads, promoted_step::smem_bytes<Scales>);
}

std::string hopper_unavailable() { return cudalabs::hopper::sm90a_unavailable(); }

}  // namespace lab33

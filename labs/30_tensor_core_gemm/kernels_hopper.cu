// Lab 30's kernel translation unit for step 4 (wgmma_tma.cuh), built with
// -gencode=arch=compute_90a,code=sm_90a when the configured architectures
// include 9.0 (meson.build). Meson's project-wide -gencode flags compile it
// for the other configured targets too, where the kernel is an empty body:
// which image the GPU runs is asked of the GPU itself (the probe of
// cudalabs/hopper.cuh, compiled into this translation unit).
#include "kernels.hpp"

#include <wgmma_tma.cuh>

namespace lab30 {

using cudalabs::resources_of;

void wgmma_tma(const __half* a, const __half* b, float* c, int m, int n, int k, cudaStream_t s) { ::gemm_wgmma_tma(a, b, c, m, n, k, s); }
void wgmma_tma(const __nv_bfloat16* a, const __nv_bfloat16* b, float* c, int m, int n, int k, cudaStream_t s) { ::gemm_wgmma_tma(a, b, c, m, n, k, s); }

cudalabs::KernelResources wgmma_tma_resources(bool bf16) {
  bf16 ? gemm_wgmma_tma_prepare<__nv_bfloat16>() : gemm_wgmma_tma_prepare<__half>();
  using wgmma_step::WideTile;
  return bf16 ? resources_of(gemm_wgmma_tma_kernel<__nv_bfloat16, 2, WideTile>, wgmma_step::threads, WideTile::smem_bytes)
              : resources_of(gemm_wgmma_tma_kernel<__half, 2, WideTile>, wgmma_step::threads, WideTile::smem_bytes);
}

// The probe (cudalabs/hopper.cuh) runs this translation unit's own image.
std::string wgmma_tma_unavailable() { return cudalabs::hopper::sm90a_unavailable(); }

}  // namespace lab30

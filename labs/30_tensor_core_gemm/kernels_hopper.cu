// Lab 30's kernel translation unit for step 4 (wgmma_tma.cuh), built with
// -gencode=arch=compute_90a,code=sm_90a when the configured architectures
// include 9.0 (meson.build). Meson's project-wide -gencode flags compile it
// for the other configured targets too, where the kernel is an empty body:
// which image the GPU runs is asked of the GPU itself (the probe below).
#include "kernels.hpp"

#include <wgmma_tma.cuh>

#include <cudalabs/memory.hpp>

namespace {

// 1 when the code running is the sm_90a image (wgmma and TMA compiled in).
__global__ void sm90a_probe_kernel(int* compiled_for_sm90a) {
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  *compiled_for_sm90a = 1;
#else
  *compiled_for_sm90a = 0;
#endif
}

}  // namespace

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

std::string wgmma_tma_unavailable() {
  const cudalabs::DeviceInfo& dev = cudalabs::current_device();
  if (dev.cc_major != 9 || dev.cc_minor != 0)
    return "needs a Hopper GPU (compute capability 9.0: wgmma and TMA exist only in sm_90a code); this is " +
           dev.name + ", compute capability " + dev.cc();
  cudalabs::DeviceBuffer<int> flag(1, "sm_90a probe flag");
  sm90a_probe_kernel<<<1, 1>>>(flag.data());
  CUDALABS_CHECK_LAUNCH("sm90a_probe_kernel");
  CUDALABS_CHECK(cudaDeviceSynchronize());
  if (flag.download().at(0) != 1)
    return "this program holds no sm_90a code for the GPU to run (built without 9.0 among the architectures: "
           "reconfigure with -Dgpu_arch=9.0 or with 9.0 in the list)";
  return "";
}

}  // namespace lab30

// Lab 31's kernel translation unit: the student's kernel files behind the fixed
// interface of kernels.hpp. Angle brackets: the files are found through the
// include path, which puts a graded submission's folder first (meson.build).
// Compiled for sm_90a alone (LAB31_BUILT_SM90A) when the build includes 9.0.
#include "kernels.hpp"

#include <cudalabs/memory.hpp>

#include <pingpong.cuh>
#include <warp_specialized.cuh>
#include <wgmma_sync.cuh>

namespace {

#ifdef LAB31_BUILT_SM90A
// Writes 1 when the code the loader picked is sm_90a's (wgmma compiled in), 0 otherwise.
__global__ void hopper_probe_kernel(int* has_wgmma) {
#ifdef LAB31_HOPPER_DEVICE
  *has_wgmma = 1;
#else
  *has_wgmma = 0;
#endif
}
#endif

template <typename T>
KernelChoice choice(const std::string& variant, int dim) {
  if (variant == "wgmma_sync") return wgmma_sync_choice<T>(dim);
  if (variant == "warp_specialized") return warp_specialized_choice<T>(dim);
  return pingpong_choice<T>(dim);
}

}  // namespace

namespace lab31 {

std::string hopper_blocker(const cudalabs::DeviceInfo& device) {
#ifndef LAB31_BUILT_SM90A
  (void)device;
  return "this build has no sm_90a code (configured without 9.0 in gpu_arch; reconfigure with -Dgpu_arch=9.0)";
#else
  if (device.cc_major != 9 || device.cc_minor != 0)
    return "needs compute capability 9.0 (Hopper: wgmma, TMA; sm_90a code runs on nothing else); this GPU is " +
           device.cc();
  static const std::string probed = [] {
    cudalabs::DeviceBuffer<int> flag(1, "hopper probe flag");
    hopper_probe_kernel<<<1, 1>>>(flag.data());
    CUDALABS_CHECK_LAUNCH("hopper_probe_kernel");
    CUDALABS_CHECK(cudaDeviceSynchronize());
    return flag.download()[0] == 1 ? std::string()
                                   : std::string("the loader did not pick the sm_90a code of this build");
  }();
  return probed;
#endif
}

void wgmma_sync(const __half* q, const __half* k, const __half* v, float* out, const AttentionShape& shape,
                cudaStream_t stream) {
  ::wgmma_sync(q, k, v, out, shape, stream);
}
void wgmma_sync(const __nv_bfloat16* q, const __nv_bfloat16* k, const __nv_bfloat16* v, float* out,
                const AttentionShape& shape, cudaStream_t stream) {
  ::wgmma_sync(q, k, v, out, shape, stream);
}
void warp_specialized(const __half* q, const __half* k, const __half* v, float* out, const AttentionShape& shape,
                      cudaStream_t stream) {
  ::warp_specialized(q, k, v, out, shape, stream);
}
void warp_specialized(const __nv_bfloat16* q, const __nv_bfloat16* k, const __nv_bfloat16* v, float* out,
                      const AttentionShape& shape, cudaStream_t stream) {
  ::warp_specialized(q, k, v, out, shape, stream);
}
void pingpong(const __half* q, const __half* k, const __half* v, float* out, const AttentionShape& shape,
              cudaStream_t stream) {
  ::pingpong(q, k, v, out, shape, stream);
}
void pingpong(const __nv_bfloat16* q, const __nv_bfloat16* k, const __nv_bfloat16* v, float* out,
              const AttentionShape& shape, cudaStream_t stream) {
  ::pingpong(q, k, v, out, shape, stream);
}

std::size_t smem_bytes(const std::string& variant, int dim) { return choice<__half>(variant, dim).smem_bytes; }
cudalabs::KernelResources resources(const std::string& variant, int dim, bool bf16) {
  const KernelChoice kc = bf16 ? choice<__nv_bfloat16>(variant, dim) : choice<__half>(variant, dim);
  return cudalabs::kernel_resources(kc.kernel, kc.threads, kc.smem_bytes);
}

}  // namespace lab31

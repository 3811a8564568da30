// cudalabs/hopper.cuh's TMA encoder, out of line: the lookup by name stays in
// the course library, and the import audit refuses kernel files the entry point
// itself (tools/allowed_imports.toml, [reject.dynamic_loading]).
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime_api.h>

#include "cudalabs/error.hpp"

namespace cudalabs::hopper {

PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encoder() {
  static const PFN_cuTensorMapEncodeTiled_v12000 encode = [] {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
#if CUDART_VERSION >= 12050
    CUDALABS_CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &found));
#else
    CUDALABS_CHECK(cudaGetDriverEntryPoint("cuTensorMapEncodeTiled", &fn, cudaEnableDefault, &found));
#endif
    if (found != cudaDriverEntryPointSuccess || fn == nullptr)
      throw CudaError("the driver has no cuTensorMapEncodeTiled (cudaGetDriverEntryPoint): TMA needs CUDA 12");
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(fn);
  }();
  return encode;
}

}  // namespace cudalabs::hopper

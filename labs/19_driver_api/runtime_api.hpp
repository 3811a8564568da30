#pragma once
// The runtime API, loaded into this process at run time, for the lab's
// comparison rows: the same kernel, the same memory, the same stream and the
// same (primary) context, launched once through cudaLaunchKernel and once
// through cuLaunchKernel.
//
// Why dlopen: this program's claim is that it does not link cudart (its
// dynamic section names libcuda.so.1 and no libcudart; a test reads it). A
// second program built with the runtime would compare across two processes,
// two contexts and two copies of the inputs; loading libcudart.so here keeps
// the comparison in one process while the executable still links libcuda only.
// It is what cudart itself does with libcuda: dlopen, then call through
// pointers. The runtime API reaches a kernel it did not compile through
// cudaLibraryLoadData / cudaLibraryGetKernel (CUDA 12.0+): cudaLaunchKernel
// accepts the cudaKernel_t where <<<>>> would pass the host stub.
#include <cuda_runtime_api.h>  // types and declarations only: every call below goes through a pointer

#include <string>
#include <string_view>

#include "kernel.hpp"

namespace lab19 {

struct RuntimeApi {
  std::string path;  // the library dlopen found
  int version = 0;   // cudaRuntimeGetVersion: 13000 = 13.0

  decltype(&::cudaSetDevice) set_device = nullptr;
  decltype(&::cudaRuntimeGetVersion) runtime_get_version = nullptr;
  decltype(&::cudaGetErrorName) get_error_name = nullptr;
  decltype(&::cudaGetErrorString) get_error_string = nullptr;
  decltype(&::cudaLibraryLoadData) library_load_data = nullptr;
  decltype(&::cudaLibraryUnload) library_unload = nullptr;
  decltype(&::cudaLibraryGetKernel) library_get_kernel = nullptr;
  decltype(&::cudaLaunchKernel) launch_kernel = nullptr;

  // The runtime, bound to device `ordinal` (its primary context: the one this
  // program made current), or nullptr with the reason in *why_not.
  static const RuntimeApi* load(int ordinal, std::string* why_not);
  void check(cudaError_t err, const std::string& call) const;  // throws cudalabs::CudaError (exit 3)
};

// A device-code image loaded through the runtime (cudaLibrary_t), owned.
class RuntimeLibrary {
 public:
  RuntimeLibrary(const RuntimeApi& api, const void* image, const char* what);
  RuntimeLibrary(RuntimeLibrary&& o) noexcept : api_(o.api_), lib_(std::exchange(o.lib_, nullptr)) {}
  RuntimeLibrary& operator=(RuntimeLibrary&&) = delete;
  RuntimeLibrary(const RuntimeLibrary&) = delete;
  RuntimeLibrary& operator=(const RuntimeLibrary&) = delete;
  ~RuntimeLibrary();
  const RuntimeApi& api() const { return *api_; }
  cudaLibrary_t get() const { return lib_; }

 private:
  const RuntimeApi* api_;
  cudaLibrary_t lib_ = nullptr;
};

template <typename Signature>
class RuntimeKernel {
  static_assert(!sizeof(Signature*), "RuntimeKernel<Signature>: Signature is the kernel's function type, returning void");
};

// Kernel<void(P...)>'s twin on the runtime API: the same name lookup, the same
// compile-time argument checks (with_kernel_arguments), cudaLaunchKernel.
template <typename... Params>
class RuntimeKernel<void(Params...)> {
 public:
  RuntimeKernel(const RuntimeLibrary& library, std::string_view name)
      : api_(&library.api()), name_(name), mangled_(mangled_name<Params...>(name)) {
    api_->check(api_->library_get_kernel(&kernel_, library.get(), mangled_.c_str()),
                "cudaLibraryGetKernel(" + mangled_ + ")");
  }

  template <typename... Args>
  void launch(Dim3 grid, Dim3 block, unsigned dynamic_smem, CUstream stream, Args&&... args) const {
    with_kernel_arguments(
        detail::TypeList<Params...>{},
        [&](void** pointers) {
          const cudaError_t err = api_->launch_kernel(reinterpret_cast<const void*>(kernel_), dim3(grid.x, grid.y, grid.z),
                                                      dim3(block.x, block.y, block.z), pointers, dynamic_smem, stream);
          if (err != cudaSuccess) api_->check(err, "cudaLaunchKernel(" + name_ + ")");  // the message only on failure
        },
        std::forward<Args>(args)...);
  }

 private:
  const RuntimeApi* api_;
  std::string name_, mangled_;
  cudaKernel_t kernel_ = nullptr;
};

}  // namespace lab19

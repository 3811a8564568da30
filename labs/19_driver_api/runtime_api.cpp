#include "runtime_api.hpp"

#include <dlfcn.h>

#include <vector>

#ifndef LAB19_CUDART_DIRS
#define LAB19_CUDART_DIRS ""  // the toolkit's library folders, from the build (meson.build)
#endif

namespace lab19 {

namespace {

RuntimeApi open_runtime(std::string* why_not) {
  RuntimeApi api;
  // The runtime of the toolkit whose headers this was built with: the
  // pointers below have that version's signatures.
  const std::string soname = "libcudart.so." + std::to_string(CUDART_VERSION / 1000);
  std::vector<std::string> candidates = {soname};
  const std::string dirs = LAB19_CUDART_DIRS;
  for (std::size_t at = 0; at < dirs.size();) {
    std::size_t end = dirs.find(':', at);
    if (end == std::string::npos) end = dirs.size();
    if (end > at) candidates.push_back(dirs.substr(at, end - at) + "/" + soname);
    at = end + 1;
  }
  void* lib = nullptr;
  for (const auto& c : candidates)
    if ((lib = dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL)) != nullptr) {
      api.path = c;
      break;
    }
  if (!lib) {
    *why_not = soname + " not found (the CUDA Toolkit's runtime library; looked on the loader's path and in " +
               (dirs.empty() ? std::string("no other folder") : dirs) + ")";
    return api;
  }
  // RTLD_LOCAL and never dlclose'd: the runtime's symbols stay out of the
  // program's namespace, and it lives as long as the process.
  bool ok = true;
  auto bind = [&](auto& fn, const char* symbol) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, symbol));
    if (!fn && ok) {
      *why_not = api.path + " has no " + symbol + " (the runtime is older than CUDA 12.0?)";
      ok = false;
    }
  };
  bind(api.set_device, "cudaSetDevice");
  bind(api.runtime_get_version, "cudaRuntimeGetVersion");
  bind(api.get_error_name, "cudaGetErrorName");
  bind(api.get_error_string, "cudaGetErrorString");
  bind(api.library_load_data, "cudaLibraryLoadData");
  bind(api.library_unload, "cudaLibraryUnload");
  bind(api.library_get_kernel, "cudaLibraryGetKernel");
  bind(api.launch_kernel, "cudaLaunchKernel");
  if (!ok) api.path.clear();
  return api;
}

}  // namespace

const RuntimeApi* RuntimeApi::load(int ordinal, std::string* why_not) {
  static std::string why;
  static RuntimeApi api = open_runtime(&why);
  if (api.path.empty()) {
    *why_not = why;
    return nullptr;
  }
  // cudaSetDevice binds the runtime to the device's primary context: the
  // context the driver rows use, so memory and streams are shared.
  api.check(api.set_device(ordinal), "cudaSetDevice(" + std::to_string(ordinal) + ")");
  int version = 0;
  api.check(api.runtime_get_version(&version), "cudaRuntimeGetVersion");
  api.version = version;
  return &api;
}

void RuntimeApi::check(cudaError_t err, const std::string& call) const {
  if (err == cudaSuccess) return;
  throw cudalabs::CudaError("CUDA runtime error (" + path + "): " + call + "\n  " + get_error_name(err) + ": " +
                            get_error_string(err));
}

RuntimeLibrary::RuntimeLibrary(const RuntimeApi& api, const void* image, const char* what) : api_(&api) {
  api.check(api.library_load_data(&lib_, image, nullptr, nullptr, 0, nullptr, nullptr, 0),
            "cudaLibraryLoadData(" + std::string(what) + ")");
}

RuntimeLibrary::~RuntimeLibrary() {
  if (lib_) api_->library_unload(lib_);
}

}  // namespace lab19

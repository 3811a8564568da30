#pragma once
// Kernels compiled at run time: NVRTC for the GPU in hand, a disk cache in
// front of it (jit_cache.hpp), and the runtime API's library loading
// (cudaLibraryLoadData, CUDA 12.0+) to run the result. No libcuda link: the
// runtime loads a cubin or PTX image from memory as well as the driver does.
//
// One NVRTC program per kernel instantiation: each is compiled, cached and
// loaded on its own, so a run with a new row length compiles one kernel, not
// the lab's whole set.
#include <cuda_runtime_api.h>

#include <string>
#include <vector>

#include <cudalabs/error.hpp>

#include "jit_cache.hpp"

namespace lab20 {

// NVRTC could not compile a kernel source: the message is NVRTC's log
// ("file(line): error: ..."). A UsageError, so run_lab exits 2 with it.
struct KernelSourceError : cudalabs::UsageError {
  using cudalabs::UsageError::UsageError;
};

// What NVRTC makes for a GPU of compute capability `cc` (90 = 9.0): SASS, a
// cubin, when this NVRTC knows the architecture; otherwise PTX for the newest
// architecture it knows that the GPU can run, which the driver compiles at
// load time (a GPU newer than the toolkit).
struct Target {
  std::string arch;  // "sm_90" or "compute_90": NVRTC's -arch
  bool cubin = true;
  int cc = 0;
};
Target target_for(int cc);
// --arch sm_90, compute_90, 90 or 9.0; UsageError naming the forms otherwise.
Target parse_arch(const std::string& text);
// Whether code for `t` runs on a GPU of compute capability `cc`: SASS only on
// its own major architecture at the same or a later minor, PTX on any later one.
bool runs_on(const Target& t, int cc);

struct Toolchain {
  int nvrtc_major = 0, nvrtc_minor = 0;
  int driver_version = 0;  // 0 where no driver was asked (compile-only)
};
Toolchain nvrtc_toolchain(int driver_version);

struct KernelSource {
  std::string file_name;  // what NVRTC's log calls it: "softmax_jit.cuh(42): error: ..."
  std::string text;
};

std::vector<std::string> compile_options(const Target& t);
CacheKey cache_key(const KernelSource& source, const std::string& name_expression, const Target& t,
                   const Toolchain& tc);

// One instantiation (`name_expression`, e.g. "softmax_kernel<1024, 128>"),
// compiled by NVRTC. Throws KernelSourceError with the log; NVRTC's warnings,
// if any, go to *log.
CompiledCode compile(const KernelSource& source, const std::string& name_expression, const Target& t,
                     std::string* log = nullptr);

// From the cache when it holds a valid entry, else compiled and stored.
struct JitResult {
  CompiledCode code;
  bool from_cache = false;
  double ms = 0;           // the cache read, or the compile (and store)
  std::string cache_note;  // why the cache did not serve it, or could not keep it ("" when it did)
};
JitResult get_or_compile(const JitCache& cache, const KernelSource& source, const std::string& name_expression,
                         const Target& t, const Toolchain& tc);

// A compiled kernel loaded into the current device's context, owned.
class LoadedKernel {
 public:
  LoadedKernel(const CompiledCode& code, const std::string& name_expression);
  LoadedKernel(LoadedKernel&& o) noexcept
      : library_(std::exchange(o.library_, nullptr)), kernel_(std::exchange(o.kernel_, nullptr)) {}
  LoadedKernel& operator=(LoadedKernel&&) = delete;
  LoadedKernel(const LoadedKernel&) = delete;
  LoadedKernel& operator=(const LoadedKernel&) = delete;
  ~LoadedKernel();
  // The cudaKernel_t as the runtime's `const void* func`: cudaLaunchKernel,
  // cudaFuncGetAttributes and the occupancy calculator all take it.
  const void* function() const { return reinterpret_cast<const void*>(kernel_); }

 private:
  cudaLibrary_t library_ = nullptr;
  cudaKernel_t kernel_ = nullptr;
};

}  // namespace lab20

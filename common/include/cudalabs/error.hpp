#pragma once
// Errors and the one CUDA check macro.
//
// Every failure is an exception of one of three types, and run_lab() (lab.hpp)
// turns each into the documented exit code:
//   UsageError    -> 2   bad flags or sizes; the message says what and how to fix
//   CudaError     -> 3   a CUDA call failed; names the call, file:line, error
//   NoDeviceError -> 77  no usable GPU, or it lacks a feature the lab needs
// A wrong result is not an exception: the checker returns it and the lab exits 1.
// NotImplemented is the one exception that is a wrong result: the launcher of a
// starter kit's unwritten variant throws it, Session::measure() records that
// variant as failed ("not implemented yet") and the lab exits 1.
#include <cuda_runtime_api.h>

#include <stdexcept>
#include <string>

namespace cudalabs {

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
struct CudaError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
struct NoDeviceError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// Thrown by the stub launcher of a variant still to be written (starter kits,
// docs/instructor-guide.md), through not_implemented() below.
struct NotImplemented : std::runtime_error {
  explicit NotImplemented(const std::string& launcher_name)
      : std::runtime_error(launcher_name + ": not implemented yet"), launcher(launcher_name) {}
  std::string launcher;
};
// A stub launcher's one line: throws NotImplemented. It takes the launcher's
// parameters only so that the starter kit compiles without unused-parameter
// warnings: `cudalabs::not_implemented("transpose_naive", in, out, rows, cols, stream);`.
template <typename... Unused>
[[noreturn]] void not_implemented(const char* launcher, const Unused&...) {
  throw NotImplemented(launcher);
}

[[noreturn]] void throw_cuda_error(cudaError_t err, const char* expr, const char* file, int line);

inline void check_cuda(cudaError_t err, const char* expr, const char* file, int line) {
  if (err != cudaSuccess) throw_cuda_error(err, expr, file, line);
}

// After a kernel launch: a bad configuration (too many threads, too much shared
// memory) is reported here, at the launch, not at some later synchronisation.
// Called inside every launcher, never in main.
void check_launch(const char* kernel_name, const char* file, int line);

}  // namespace cudalabs

#define CUDALABS_CHECK(call) ::cudalabs::check_cuda((call), #call, __FILE__, __LINE__)
#define CUDALABS_CHECK_LAUNCH(kernel_name) ::cudalabs::check_launch((kernel_name), __FILE__, __LINE__)

#include "cudalabs/error.hpp"

#include <sstream>
#include <string>

namespace cudalabs {

void throw_cuda_error(cudaError_t err, const char* expr, const char* file, int line) {
  std::ostringstream os;  // (not operator+: it trips a false -Wrestrict in GCC 12)
  os << "CUDA error: " << expr << "\n  at " << file << ":" << line << "\n  " << cudaGetErrorName(err) << ": "
     << cudaGetErrorString(err);
  const std::string msg = os.str();
  if (err == cudaErrorNoDevice || err == cudaErrorInsufficientDriver)
    throw NoDeviceError(msg);
  throw CudaError(msg);
}

void check_launch(const char* kernel_name, const char* file, int line) {
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) {
    const std::string expr = "launch of " + std::string(kernel_name);
    throw_cuda_error(err, expr.c_str(), file, line);
  }
}

}  // namespace cudalabs

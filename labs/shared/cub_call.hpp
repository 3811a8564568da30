#pragma once
// A CUB device-wide call (DeviceHistogram, DeviceScan, ...) with its temporary
// storage sized (the call with a null pointer) and allocated once, outside the
// timed runs. Course code, shared by labs 24 and 25 (labs/shared/).
//
//   CubCall histogram([&](void* temp, std::size_t& temp_bytes, cudaStream_t stream) {
//     return cub::DeviceHistogram::HistogramEven(temp, temp_bytes, ..., stream);
//   });
//   histogram.run(stream);
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <utility>

#include <cudalabs/error.hpp>
#include <cudalabs/memory.hpp>

template <typename Call>  // cudaError_t(void* temp, std::size_t& temp_bytes, cudaStream_t)
class CubCall {
 public:
  explicit CubCall(Call call) : call_(std::move(call)) {
    CUDALABS_CHECK(call_(nullptr, temp_bytes_, nullptr));
    temp_ = cudalabs::DeviceBuffer<std::byte>(std::max<std::size_t>(temp_bytes_, 1), "CUB temporary storage");
  }
  void run(cudaStream_t stream) { CUDALABS_CHECK(call_(temp_.data(), temp_bytes_, stream)); }
  std::size_t temp_bytes() const { return temp_bytes_; }

 private:
  Call call_;
  std::size_t temp_bytes_ = 0;
  cudalabs::DeviceBuffer<std::byte> temp_;
};

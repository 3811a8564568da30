#include "cudalabs/memory.hpp"

#include <cstdio>
#include <string>

namespace cudalabs {

namespace {
std::string mib(std::size_t bytes) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return buf;
}
}  // namespace

void* device_alloc(std::size_t bytes, const char* what) {
  if (bytes == 0) return nullptr;
  void* p = nullptr;
  cudaError_t err = cudaMalloc(&p, bytes);
  if (err != cudaSuccess) {
    cudaGetLastError();  // clear the sticky-free allocation error
    std::size_t free_b = 0, total_b = 0;
    cudaMemGetInfo(&free_b, &total_b);
    throw CudaError(std::string("cudaMalloc failed for ") + what + ": asked for " + std::to_string(bytes) +
                    " bytes (" + mib(bytes) + "), the device has " + std::to_string(free_b) + " bytes (" +
                    mib(free_b) + ") free of " + mib(total_b) + " (" + cudaGetErrorName(err) +
                    "). Use a smaller size.");
  }
  return p;
}

void device_free(void* p) noexcept {
  if (p) cudaFree(p);
}

void* pinned_alloc(std::size_t bytes, const char* what) {
  if (bytes == 0) return nullptr;
  void* p = nullptr;
  cudaError_t err = cudaMallocHost(&p, bytes);
  if (err != cudaSuccess) {
    cudaGetLastError();
    throw CudaError(std::string("cudaMallocHost failed for ") + what + ": asked for " + std::to_string(bytes) +
                    " bytes (" + mib(bytes) + ") of page-locked host memory (" + cudaGetErrorName(err) +
                    "). Use a smaller size.");
  }
  return p;
}

void pinned_free(void* p) noexcept {
  if (p) cudaFreeHost(p);
}

Stream::Stream() { CUDALABS_CHECK(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking)); }
Stream& Stream::operator=(Stream&& o) noexcept {
  if (this != &o) {
    if (s_) cudaStreamDestroy(s_);
    s_ = std::exchange(o.s_, nullptr);
  }
  return *this;
}
Stream::~Stream() {
  if (s_) cudaStreamDestroy(s_);
}
void Stream::synchronize() const { CUDALABS_CHECK(cudaStreamSynchronize(s_)); }

Event::Event() { CUDALABS_CHECK(cudaEventCreate(&e_)); }
Event& Event::operator=(Event&& o) noexcept {
  if (this != &o) {
    if (e_) cudaEventDestroy(e_);
    e_ = std::exchange(o.e_, nullptr);
  }
  return *this;
}
Event::~Event() {
  if (e_) cudaEventDestroy(e_);
}
void Event::record(cudaStream_t stream) const { CUDALABS_CHECK(cudaEventRecord(e_, stream)); }
void Event::synchronize() const { CUDALABS_CHECK(cudaEventSynchronize(e_)); }
float Event::ms_since(const Event& start) const {
  float ms = 0;
  CUDALABS_CHECK(cudaEventElapsedTime(&ms, start.e_, e_));
  return ms;
}

}  // namespace cudalabs

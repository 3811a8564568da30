#pragma once
// The CUDA driver API, owned: the layer under the runtime API that every other
// lab uses without seeing it.
//
//   check()         every CUresult, with the call, file:line and the driver's
//                   name for the error; failures become cudalabs::CudaError
//                   (exit 3), a missing driver or GPU cudalabs::NoDeviceError (77)
//   PrimaryContext  the device's primary context (the one the runtime API would
//                   use too), retained for the program's life and made current
//   Module          device code loaded from memory (PTX, cubin or fatbin)
//   Stream, Event   driver streams and events
//   DeviceArray<T>  cuMemAlloc'd memory that knows its element type
// The typed kernels that launch with these are in kernel.hpp.
//
// Host-only C++: no cudart, no device code. Every type here owns one driver
// object and is move-only.
#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <cudalabs/device.hpp>
#include <cudalabs/error.hpp>

namespace lab19 {

// ---- errors -----------------------------------------------------------------

// "CUDA_ERROR_OUT_OF_MEMORY: out of memory" (or the number, where the driver
// cannot say: the toolkit's stub library answers every call with error 34).
std::string error_text(CUresult r);
[[noreturn]] void throw_driver_error(CUresult r, const char* call, const char* file, int line);
inline void check(CUresult r, const char* call, const char* file, int line) {
  if (r != CUDA_SUCCESS) throw_driver_error(r, call, file, line);
}
#define LAB19_CHECK(call) ::lab19::check((call), #call, __FILE__, __LINE__)

// ---- context, device --------------------------------------------------------

// cuInit, the device, its primary context made current. Throws NoDeviceError
// (exit 77) when there is no driver (or only the toolkit's stub library) or no
// device, UsageError when `ordinal` is out of range.
class PrimaryContext {
 public:
  explicit PrimaryContext(int ordinal);
  PrimaryContext(PrimaryContext&& o) noexcept
      : device_(o.device_), ctx_(std::exchange(o.ctx_, nullptr)) {}
  PrimaryContext& operator=(PrimaryContext&&) = delete;
  PrimaryContext(const PrimaryContext&) = delete;
  PrimaryContext& operator=(const PrimaryContext&) = delete;
  ~PrimaryContext();
  CUdevice device() const { return device_; }
  CUcontext get() const { return ctx_; }

 private:
  CUdevice device_ = 0;
  CUcontext ctx_ = nullptr;
};

// What the lab reports about the GPU, from cuDeviceGetAttribute.
cudalabs::DeviceInfo device_info(CUdevice device, int ordinal);
std::size_t device_free_bytes();

// ---- modules ----------------------------------------------------------------

class Module {
 public:
  Module() = default;
  // `image`: PTX text (NUL-terminated), a cubin or a fatbin, in memory. The
  // driver tells them apart by their headers; PTX it compiles now (JIT).
  Module(const void* image, const char* what);
  Module(Module&& o) noexcept : m_(std::exchange(o.m_, nullptr)) {}
  Module& operator=(Module&& o) noexcept;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;
  ~Module();
  CUmodule get() const { return m_; }
  explicit operator bool() const { return m_ != nullptr; }

 private:
  CUmodule m_ = nullptr;
};

// ---- streams and events -----------------------------------------------------

class Stream {
 public:
  Stream();  // CU_STREAM_NON_BLOCKING: never waits for the legacy default stream
  Stream(Stream&& o) noexcept : s_(std::exchange(o.s_, nullptr)) {}
  Stream& operator=(Stream&&) = delete;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  ~Stream();
  CUstream get() const { return s_; }
  void synchronize() const;

 private:
  CUstream s_ = nullptr;
};

class Event {
 public:
  Event();
  Event(Event&& o) noexcept : e_(std::exchange(o.e_, nullptr)) {}
  Event& operator=(Event&&) = delete;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  ~Event();
  void record(CUstream stream) const;
  void synchronize() const;
  float ms_since(const Event& start) const;  // both recorded and complete

 private:
  CUevent e_ = nullptr;
};

// ---- device memory ----------------------------------------------------------

// A device address with its element type. The driver's CUdeviceptr is a bare
// integer; this is what lets launch() tell device memory from a host pointer.
template <typename T>
struct DevicePtr {
  T* raw = nullptr;
  DevicePtr operator+(std::ptrdiff_t elements) const { return {raw + elements}; }
  operator DevicePtr<const T>() const requires(!std::is_const_v<T>) { return {raw}; }
};

void* device_alloc(std::size_t bytes, const char* what);  // throws with the bytes asked and free
void device_free(void* p) noexcept;
void upload_bytes(void* device, const void* host, std::size_t bytes);
void download_bytes(void* host, const void* device, std::size_t bytes);
void fill_bytes_async(void* device, unsigned char value, std::size_t bytes, CUstream stream);

template <typename T>
class DeviceArray {
  static_assert(std::is_trivially_copyable_v<T>, "DeviceArray holds plain values (copied byte for byte)");

 public:
  DeviceArray() = default;
  explicit DeviceArray(std::size_t count, const char* what = "device array")
      : data_(static_cast<T*>(device_alloc(count * sizeof(T), what))), count_(count) {}
  DeviceArray(DeviceArray&& o) noexcept
      : data_(std::exchange(o.data_, nullptr)), count_(std::exchange(o.count_, 0)) {}
  DeviceArray& operator=(DeviceArray&& o) noexcept {
    if (this != &o) {
      device_free(data_);
      data_ = std::exchange(o.data_, nullptr);
      count_ = std::exchange(o.count_, 0);
    }
    return *this;
  }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  ~DeviceArray() { device_free(data_); }

  DevicePtr<T> ptr() const { return {data_}; }
  std::size_t size() const { return count_; }
  std::size_t bytes() const { return count_ * sizeof(T); }
  void upload(std::span<const T> host) {
    if (host.size() != count_) throw cudalabs::CudaError("DeviceArray::upload: host size differs from the array's");
    upload_bytes(data_, host.data(), bytes());
  }
  std::vector<T> download() const {
    std::vector<T> host(count_);
    download_bytes(host.data(), data_, bytes());
    return host;
  }
  // Every byte 0xFF: NaN for floats, so an element no kernel wrote fails the check.
  void poison(CUstream stream) { fill_bytes_async(data_, 0xFF, bytes(), stream); }

 private:
  T* data_ = nullptr;
  std::size_t count_ = 0;
};

// Registers, shared and local memory, occupancy of a kernel at `block_threads`.
cudalabs::KernelResources function_resources(CUfunction f, int block_threads, std::size_t dynamic_smem);

}  // namespace lab19

#pragma once
// Move-only owners of device memory, pinned host memory, streams and events,
// and stream-ordered scratch memory for launchers. Destructors free; nothing
// in a lab calls cudaFree. Allocation failures throw CudaError naming the
// bytes asked for and the bytes the device had free.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <map>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "error.hpp"
#include "evidence.hpp"

namespace cudalabs {

void* device_alloc(std::size_t bytes, const char* what);
void device_free(void* p) noexcept;
// Stream-ordered scratch memory for a launcher (cudaMallocFromPoolAsync):
// usable by work queued on `stream` after the call, freed in stream order by
// stream_free. From a pool that keeps freed memory for the next call, so that
// a launcher timed in a loop does not pay the system's mapping every call;
// one pool per stream, so that a block comes back only in stream order
// (memory.cpp says why). stream_free frees on the stream that allocated the
// block, after the work queued on the stream it is given.
// On a stream being captured into a graph: a memory node of the graph.
void* stream_alloc(std::size_t bytes, const char* what, cudaStream_t stream);
void stream_free(void* p, cudaStream_t stream);
void* pinned_alloc(std::size_t bytes, const char* what);
void pinned_free(void* p) noexcept;

// Every live DeviceBuffer is known to the harness by the place that holds its
// pointer, so that a check can run with the buffers somewhere else
// (FreshAllocations in lab.cpp): a launcher that kept something by pointer or
// by shape from an earlier call (a TMA descriptor, a "first call" workspace
// aimed at the old inputs) reads the old place, which is poisoned by then.
namespace buffers {
void track(void** slot, const std::size_t* count, std::size_t element_bytes);
void untrack(void** slot) noexcept;

// Why the buffers were not moved ("" when they were), and whether that is a
// failure of the variant: its launcher kept the memory the copies needed.
struct NotMoved {
  std::string why;
  bool launcher_held = false;
};
// One device at a move: the bytes of its tracked buffers, what was free
// before the launchers ran (0: not known), what is free now, and the slack
// left for what the driver and libraries grow by on their own.
struct DeviceRoom {
  int device = 0;
  std::size_t wanted = 0, free_at_start = 0, free_now = 0, slack = 0;
};
// The move's decision, no GPU involved. The copies need twice the buffers
// (half the free memory at most: the check itself may allocate). Where they
// do not fit now but did, less the slack, before the launchers ran, the
// launcher holds the difference: a failure. Where they did not fit even then
// (large sizes), a skip with its reason; that decides for every device.
NotMoved room_to_move(const std::vector<DeviceRoom>& devices);
// The slack of a device of `total` bytes: 5% of it, 64 MiB at least. A
// kernel's local memory (its spills) is reserved by the driver for every
// resident thread and kept: 1 KiB a thread is ~280 MiB on 132 SMs; cuBLAS
// keeps a workspace per handle and stream (32 MiB on Hopper).
std::size_t move_slack(std::size_t total);
// Free device memory plus the tracked buffers' bytes, per device holding a
// tracked buffer: the room the buffers and the copies share, whatever the
// buffers of the moment are (a lab allocates its buffers per size).
std::map<int, std::size_t> room();
// Moves every tracked buffer to a new allocation on its own device (contents
// copied, the old place filled with 0xFF and kept until restore()). Returns
// why nothing moved ("" when all did): there is no DeviceBuffer, or the
// copies would not fit in the free device memory. `room_at_start`: room()
// before the launchers ran (the most seen), which tells a launcher that keeps
// memory from a size that is too large; a device absent from it is not known.
NotMoved move_all(const std::map<int, std::size_t>& room_at_start = {});
// Back to the old places, with what the buffers hold now; the new ones freed.
void restore_all();
}  // namespace buffers

template <typename T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t count, const char* what = "device buffer")
      : data_(static_cast<T*>(device_alloc(count * sizeof(T), what))), count_(count) {
    track();
  }
  // Allocates and uploads a host vector; the data is on the device on return.
  explicit DeviceBuffer(const std::vector<T>& host, const char* what = "device buffer")
      : DeviceBuffer(host.size(), what) {
    upload(host);
  }
  DeviceBuffer(DeviceBuffer&& o) noexcept
      : data_(std::exchange(o.data_, nullptr)), count_(std::exchange(o.count_, 0)) {
    track();
  }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      device_free(data_);
      data_ = std::exchange(o.data_, nullptr);
      count_ = std::exchange(o.count_, 0);
      track();
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() {
    buffers::untrack(reinterpret_cast<void**>(&data_));
    device_free(data_);
  }

  T* data() { return data_; }
  const T* data() const { return data_; }
  std::size_t size() const { return count_; }
  std::size_t bytes() const { return count_ * sizeof(T); }

  void upload(std::span<const T> host) {
    if (host.size() != count_) throw CudaError("DeviceBuffer::upload: host size differs from buffer size");
    CUDALABS_CHECK(cudaMemcpy(data_, host.data(), bytes(), cudaMemcpyHostToDevice));
    // From pageable memory cudaMemcpy may return before the DMA lands, and the
    // labs run on non-blocking streams that do not wait for the legacy stream.
    CUDALABS_CHECK(cudaDeviceSynchronize());
  }
  std::vector<T> download() const {
    std::vector<T> host(count_);
    CUDALABS_CHECK(cudaMemcpy(host.data(), data_, bytes(), cudaMemcpyDeviceToHost));
    return host;
  }
  // download(), observed as an output (evidence.hpp): for a check that computes
  // what it expects from an output (lab 29's stages: each against a reference
  // of the output before it), so that a judge computes it from the graded
  // program's output too. Why a judge has none is added to `missing`.
  std::vector<T> download_observed(std::string& missing) const {
    std::vector<T> host = download();
    const std::string why = observe_in_place(std::span<T>(host));
    if (!why.empty() && missing.empty()) missing = why;
    return host;
  }
  // For a check that compares on the GPU (a kernel counting wrong elements):
  // observes the buffer as an output (evidence.hpp) and, in a judge, puts the
  // graded program's copy in its place, so the check's kernel reads that.
  // Returns "" or why a judge has none.
  std::string observe() {
    std::string missing;
    std::vector<T> host = download_observed(missing);
    if (missing.empty() && evidence::mode() == evidence::Mode::judge) upload(host);
    return missing;
  }
  // Fills every byte with 0xFF: NaN for float/half/bf16, -1 for integers. A kernel
  // that leaves an output element unwritten then fails the checker.
  void poison(cudaStream_t stream = nullptr) {
    CUDALABS_CHECK(cudaMemsetAsync(data_, 0xFF, bytes(), stream));
  }
  void zero(cudaStream_t stream = nullptr) { CUDALABS_CHECK(cudaMemsetAsync(data_, 0, bytes(), stream)); }

 private:
  void track() { buffers::track(reinterpret_cast<void**>(&data_), &count_, sizeof(T)); }

  T* data_ = nullptr;
  std::size_t count_ = 0;
};

// Page-locked host memory: the only kind the copy engines can read directly, so
// the only kind cudaMemcpyAsync can overlap with kernels (lab 03, lab 08).
template <typename T>
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  explicit PinnedBuffer(std::size_t count, const char* what = "pinned host buffer")
      : data_(static_cast<T*>(pinned_alloc(count * sizeof(T), what))), count_(count) {}
  PinnedBuffer(PinnedBuffer&& o) noexcept
      : data_(std::exchange(o.data_, nullptr)), count_(std::exchange(o.count_, 0)) {}
  PinnedBuffer& operator=(PinnedBuffer&& o) noexcept {
    if (this != &o) {
      pinned_free(data_);
      data_ = std::exchange(o.data_, nullptr);
      count_ = std::exchange(o.count_, 0);
    }
    return *this;
  }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  ~PinnedBuffer() { pinned_free(data_); }

  T* data() { return data_; }
  const T* data() const { return data_; }
  std::size_t size() const { return count_; }
  std::size_t bytes() const { return count_ * sizeof(T); }
  T& operator[](std::size_t i) { return data_[i]; }
  const T& operator[](std::size_t i) const { return data_[i]; }
  std::span<T> span() { return {data_, count_}; }
  std::span<const T> span() const { return {data_, count_}; }

 private:
  T* data_ = nullptr;
  std::size_t count_ = 0;
};

class Stream {
 public:
  Stream();  // non-blocking with respect to the legacy default stream
  Stream(Stream&& o) noexcept : s_(std::exchange(o.s_, nullptr)) {}
  Stream& operator=(Stream&& o) noexcept;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  ~Stream();
  cudaStream_t get() const { return s_; }
  operator cudaStream_t() const { return s_; }
  void synchronize() const;

 private:
  cudaStream_t s_ = nullptr;
};

class Event {
 public:
  Event();
  Event(Event&& o) noexcept : e_(std::exchange(o.e_, nullptr)) {}
  Event& operator=(Event&& o) noexcept;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  ~Event();
  cudaEvent_t get() const { return e_; }
  operator cudaEvent_t() const { return e_; }
  void record(cudaStream_t stream) const;
  void synchronize() const;
  // Milliseconds from `start` to this event; both must have completed.
  float ms_since(const Event& start) const;

 private:
  cudaEvent_t e_ = nullptr;
};

}  // namespace cudalabs

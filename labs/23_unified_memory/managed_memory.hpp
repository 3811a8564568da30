#pragma once
// The course's helpers for memory the GPU and the host share, used by lab 23's
// host program and by its strategies file (they could move to common/):
//
//   ManagedBuffer<T>     cudaMallocManaged: one pointer valid on host and GPU;
//                        the driver moves 4 KB..2 MB pages to whoever touches them
//   MappedHostBuffer<T>  cudaHostAlloc(cudaHostAllocMapped): pinned host memory
//                        the GPU reads and writes in place, over PCIe (zero-copy)
//   prefetch(), advise() the CUDA 12 and CUDA 13 forms of cudaMemPrefetchAsync
//                        and cudaMemAdvise behind one call
//   discard_and_prefetch() dead pages (an output before a kernel overwrites it,
//                        an input before the host rewrites it) mapped where
//                        they will be written, without copying (CUDA 13's
//                        discard; a plain prefetch where the driver cannot)
//
// CUDA 13 names a destination with a cudaMemLocation (type Device + ordinal, or
// type Host) and cudaMemPrefetchAsync takes a flags argument; CUDA 12 takes a
// device ordinal, cudaCpuDeviceId (-1) for the host.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <span>
#include <utility>

#include <cudalabs/error.hpp>

namespace um {

// Where pages should go: the host's memory, or one GPU's.
struct Location {
  bool host = true;
  int device = 0;
};
inline Location host() { return {true, 0}; }
inline Location gpu(int device) { return {false, device}; }

#if CUDART_VERSION >= 13000
inline cudaMemLocation to_cuda(Location where) {
  cudaMemLocation location{};
  location.type = where.host ? cudaMemLocationTypeHost : cudaMemLocationTypeDevice;
  location.id = where.host ? 0 : where.device;  // the id is ignored for the host
  return location;
}
#else
inline int to_cuda(Location where) { return where.host ? cudaCpuDeviceId : where.device; }
#endif

// Enqueues the migration of the pages of [p, p + bytes) to `to` on `stream`.
inline void prefetch(const void* p, std::size_t bytes, Location to, cudaStream_t stream) {
#if CUDART_VERSION >= 13000
  CUDALABS_CHECK(cudaMemPrefetchAsync(p, bytes, to_cuda(to), 0, stream));
#else
  CUDALABS_CHECK(cudaMemPrefetchAsync(p, bytes, to_cuda(to), stream));
#endif
}

// CUDA 13: the old contents of [p, p + bytes) are dead; map the range at `to`
// without copying them (cudaMemDiscardAndPrefetchBatchAsync, a batch of one).
// Returns the error, so that can_discard() can ask whether the driver supports it.
inline cudaError_t try_discard_and_prefetch(void* p, std::size_t bytes, Location to, cudaStream_t stream) {
#if CUDART_VERSION >= 13000
  void* ranges[] = {p};
  std::size_t sizes[] = {bytes};
  cudaMemLocation locations[] = {to_cuda(to)};
  std::size_t first_range_of_location[] = {0};
  return cudaMemDiscardAndPrefetchBatchAsync(ranges, sizes, 1, locations, first_range_of_location, 1, 0, stream);
#else
  (void)p, (void)bytes, (void)to, (void)stream;
  return cudaErrorNotSupported;
#endif
}

// Whether this driver and device can discard managed memory and map the range
// on the GPU (to_host false) or on the host: asked on a 2 MB managed buffer of
// the current device whose pages start at the other side, as the lab's do.
inline bool discard_works(bool to_host) {
  int device = 0, concurrent = 0;
  CUDALABS_CHECK(cudaGetDevice(&device));
  CUDALABS_CHECK(cudaDeviceGetAttribute(&concurrent, cudaDevAttrConcurrentManagedAccess, device));
  if (!concurrent) return false;  // the discard API needs it, and so does the probe's prefetch to the GPU
  const Location to = to_host ? host() : gpu(device), from = to_host ? gpu(device) : host();
  constexpr std::size_t probe_bytes = std::size_t{2} << 20;
  void* probe = nullptr;
  CUDALABS_CHECK(cudaMallocManaged(&probe, probe_bytes, cudaMemAttachGlobal));
  cudaStream_t stream = nullptr;
  CUDALABS_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  prefetch(probe, probe_bytes, from, stream);
  CUDALABS_CHECK(cudaStreamSynchronize(stream));
  cudaError_t status = try_discard_and_prefetch(probe, probe_bytes, to, stream);
  if (status == cudaSuccess) status = cudaStreamSynchronize(stream);
  (void)cudaGetLastError();  // "not supported" is not sticky: clear it, keep going
  CUDALABS_CHECK(cudaStreamDestroy(stream));
  CUDALABS_CHECK(cudaFree(probe));
  return status == cudaSuccess;
}

// Each asked once, the answer kept for the program. To the GPU: what
// managed_prefetch_* do with their outputs; main.cu asks before any timed run
// and says which way the lab went. To the host: what main.cu's reset does
// with the inputs' old pages before the host overwrites every element.
inline bool can_discard() {
  static const bool supported = discard_works(false);
  return supported;
}
inline bool can_discard_to_host() {
  static const bool supported = discard_works(true);
  return supported;
}

// A range's old contents are dead (a kernel, or the host, is about to
// overwrite every byte). Where the driver can discard towards `to`, the range
// is mapped at `to` with no bytes moved; elsewhere a prefetch, which carries
// the dead bytes along.
inline void discard_and_prefetch(void* p, std::size_t bytes, Location to, cudaStream_t stream) {
  if (to.host ? can_discard_to_host() : can_discard())
    CUDALABS_CHECK(try_discard_and_prefetch(p, bytes, to, stream));
  else
    prefetch(p, bytes, to, stream);
}

// cudaMemAdviseSetReadMostly ignores the location; SetPreferredLocation and
// SetAccessedBy name one.
inline void advise(const void* p, std::size_t bytes, cudaMemoryAdvise advice, Location where) {
  CUDALABS_CHECK(cudaMemAdvise(p, bytes, advice, to_cuda(where)));
}

template <typename T>
class ManagedBuffer {
 public:
  explicit ManagedBuffer(std::size_t count) : count_(count) {
    CUDALABS_CHECK(cudaMallocManaged(reinterpret_cast<void**>(&data_), bytes(), cudaMemAttachGlobal));
  }
  ManagedBuffer(ManagedBuffer&& o) noexcept : data_(std::exchange(o.data_, nullptr)), count_(std::exchange(o.count_, 0)) {}
  ManagedBuffer& operator=(ManagedBuffer&&) = delete;
  ManagedBuffer(const ManagedBuffer&) = delete;
  ManagedBuffer& operator=(const ManagedBuffer&) = delete;
  ~ManagedBuffer() {
    if (data_) cudaFree(data_);
  }
  T* data() { return data_; }
  std::size_t bytes() const { return count_ * sizeof(T); }
  std::span<T> span() { return {data_, count_}; }

 private:
  T* data_ = nullptr;
  std::size_t count_ = 0;
};

template <typename T>
class MappedHostBuffer {
 public:
  explicit MappedHostBuffer(std::size_t count) : count_(count) {
    CUDALABS_CHECK(cudaHostAlloc(reinterpret_cast<void**>(&host_), bytes(), cudaHostAllocMapped));
    // With unified addressing the two pointers are equal; asking keeps the
    // code right where they are not.
    CUDALABS_CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&device_), host_, 0));
  }
  MappedHostBuffer(MappedHostBuffer&& o) noexcept
      : host_(std::exchange(o.host_, nullptr)), device_(std::exchange(o.device_, nullptr)),
        count_(std::exchange(o.count_, 0)) {}
  MappedHostBuffer& operator=(MappedHostBuffer&&) = delete;
  MappedHostBuffer(const MappedHostBuffer&) = delete;
  MappedHostBuffer& operator=(const MappedHostBuffer&) = delete;
  ~MappedHostBuffer() {
    if (host_) cudaFreeHost(host_);
  }
  T* device() { return device_; }  // what kernels get
  std::size_t bytes() const { return count_ * sizeof(T); }
  std::span<T> span() { return {host_, count_}; }  // what the host reads and writes

 private:
  T* host_ = nullptr;
  T* device_ = nullptr;
  std::size_t count_ = 0;
};

}  // namespace um

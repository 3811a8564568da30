// The stream contract's two halves on the CUDA runtime (lab.hpp,
// Recorder::checked_run; the trace's half is GpuWorkTrace::mark_end).
//
// A launcher is given a stream and must finish its work on it. While a
// variant's first run is traced, a one-thread kernel keeps the legacy default
// stream busy: work a launcher puts on stream 0, or on a stream of its own made
// by cudaStreamCreate (a blocking stream: it waits for stream 0), cannot start
// before the harness's marker on the given stream has run, and the trace sees
// it end after the marker. Work on a non-blocking stream of the launcher's own
// shows too whenever it outlasts the launcher's return.
//
// A copy variant timed by events (Recorder::traced_run) is held the other way
// round: the same kernel keeps the stream it is given busy until the launcher
// has returned, so that its copies, on that stream or forked from it with an
// event, start only once the hold has ended, and anything that did not wait
// (stream 0, a stream of its own, a synchronous cudaMemcpy) starts before.
#include "cudalabs/error.hpp"
#include "cudalabs/stream_contract.hpp"

namespace cudalabs {

namespace {

// Spins until the host releases it, at most `max_ns` (so a launcher that waits
// for the whole device, or for the held stream, inside the traced run loses
// half a second, not forever). GpuWorkTrace knows it by its launch
// (GpuWorkTrace::holds_launched), not its name, which a student kernel may share.
__global__ void cudalabs_hold_stream(const volatile int* release, unsigned long long max_ns) {
  unsigned long long start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (*release == 0 && now - start < max_ns);
}

constexpr unsigned long long hold_max_ns = 500'000'000;  // 0.5 s

}  // namespace

StreamContract::StreamContract() {
  void* flag = nullptr;
  CUDALABS_CHECK(cudaHostAlloc(&flag, sizeof(int), cudaHostAllocMapped));
  release_ = static_cast<volatile int*>(flag);
  void* marker = nullptr;
  CUDALABS_CHECK(cudaMalloc(&marker, sizeof(int)));
  marker_ = static_cast<int*>(marker);
}

StreamContract::~StreamContract() {
  cudaFreeHost(const_cast<int*>(release_));
  cudaFree(marker_);
}

void StreamContract::hold(cudaStream_t stream) {
  *release_ = 0;
  void* device_flag = nullptr;
  CUDALABS_CHECK(cudaHostGetDevicePointer(&device_flag, const_cast<int*>(release_), 0));
  cudalabs_hold_stream<<<1, 1, 0, stream>>>(static_cast<const volatile int*>(device_flag), hold_max_ns);
  CUDALABS_CHECK_LAUNCH("cudalabs_hold_stream");
}

void StreamContract::mark_and_wait(cudaStream_t stream) {
  CUDALABS_CHECK(cudaMemsetAsync(marker_, 0xC5, sizeof(int), stream));
  CUDALABS_CHECK(cudaStreamSynchronize(stream));
}

void StreamContract::release() { *release_ = 1; }

}  // namespace cudalabs

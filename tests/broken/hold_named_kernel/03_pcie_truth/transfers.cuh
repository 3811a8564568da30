#pragma once
// BROKEN CASE hold_named_kernel (tests/broken/README.md): transfers_ignore_stream's
// mistake made by a kernel named like the harness's own. From pinned memory
// (mapped into the GPU's address space: cudaMallocHost under unified
// addressing) upload and download copy with a kernel of their own, on stream 0
// (the legacy default stream), not on the stream they are given. The
// harness's stream is non-blocking, so the kernel waits for nothing there, and
// the harness's events on that stream bracket none of its copies. The kernel's
// name holds the text of the harness's hold kernel (cudalabs_hold_stream): a
// trace that told the hold by its name would leave this kernel out, count no
// work to judge, and pass pinned_h2d and pinned_d2h. Pageable memory and the
// round trip are copied right, with cudaMemcpyAsync on the stream given.
// Every output is right: the checks wait for the whole device.
// What must catch it: the traced run of a copy variant on the events clock
// holds the stream it is given until the launcher has returned; the trace
// knows the hold by its launch, so this kernel is the run's work and starts
// before that hold ends: "GPU work: the variant did not wait for the stream it
// was given (kernel _Z25cudalabs_hold_stream_copyPKjPjl, started ... us before
// the stream's earlier work had finished ...)".
// Lab 03's exercise: the copies around lab 01's kernel. Each function only
// enqueues work on `stream` and returns; the host pointers are either pageable
// (std::vector) or pinned (cudaMallocHost) memory, and the same code serves
// both: what differs is how fast the copy engine may read them (the README).
#include <cstdint>

#include <cudalabs/error.hpp>
// vector_add(a, b, c, n, stream), lab 01's launcher, is declared before this
// file by kernels.cu (it includes lab 01's vector_add.cuh first).

// BUG: named so that its mangled name holds "cudalabs_hold_stream". Words, not
// floats: a copy moves every bit (NaN payloads, -0.0).
__global__ void cudalabs_hold_stream_copy(const std::uint32_t* from, std::uint32_t* to, std::int64_t n) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) to[i] = from[i];
}

// n floats from `from` to `to`; `host` is whichever of them is host memory.
inline void copy_floats(const float* from, float* to, const void* host, std::int64_t n, cudaMemcpyKind kind,
                        cudaStream_t stream) {
  cudaPointerAttributes attributes{};
  CUDALABS_CHECK(cudaPointerGetAttributes(&attributes, host));
  if (attributes.type != cudaMemoryTypeHost) {  // pageable: right
    CUDALABS_CHECK(cudaMemcpyAsync(to, from, n * sizeof(float), kind, stream));
    return;
  }
  // BUG: pinned memory read or written in place by a kernel on stream 0.
  constexpr int block = 256;
  const auto blocks = static_cast<unsigned>((n + block - 1) / block);
  cudalabs_hold_stream_copy<<<blocks, block, 0, 0>>>(reinterpret_cast<const std::uint32_t*>(from),
                                                     reinterpret_cast<std::uint32_t*>(to), n);
  CUDALABS_CHECK_LAUNCH("cudalabs_hold_stream_copy");
}

// a and b (n floats each) from host memory to the device.
inline void upload(const float* h_a, const float* h_b, float* d_a, float* d_b, std::int64_t n, cudaStream_t stream) {
  // BEGIN SOLUTION pageable_h2d pinned_h2d
  copy_floats(h_a, d_a, h_a, n, cudaMemcpyHostToDevice, stream);
  copy_floats(h_b, d_b, h_b, n, cudaMemcpyHostToDevice, stream);
  // END SOLUTION
  // STUB: cudalabs::not_implemented("upload", h_a, h_b, d_a, d_b, n, stream);
}

// c (n floats) from the device to host memory.
inline void download(const float* d_c, float* h_c, std::int64_t n, cudaStream_t stream) {
  // BEGIN SOLUTION pageable_d2h pinned_d2h
  copy_floats(d_c, h_c, h_c, n, cudaMemcpyDeviceToHost, stream);
  // END SOLUTION
  // STUB: cudalabs::not_implemented("download", d_c, h_c, n, stream);
}

// The whole trip: a and b up, c = a + b on the GPU (lab 01's vector_add), c down.
inline void round_trip(const float* h_a, const float* h_b, float* h_c, float* d_a, float* d_b, float* d_c,
                       std::int64_t n, cudaStream_t stream) {
  // BEGIN SOLUTION pageable_end_to_end pinned_end_to_end
  // Right: all three on the stream given, so that this case fails for the
  // named kernel alone.
  CUDALABS_CHECK(cudaMemcpyAsync(d_a, h_a, n * sizeof(float), cudaMemcpyHostToDevice, stream));
  CUDALABS_CHECK(cudaMemcpyAsync(d_b, h_b, n * sizeof(float), cudaMemcpyHostToDevice, stream));
  vector_add(d_a, d_b, d_c, n, stream);
  CUDALABS_CHECK(cudaMemcpyAsync(h_c, d_c, n * sizeof(float), cudaMemcpyDeviceToHost, stream));
  // END SOLUTION
  // STUB: cudalabs::not_implemented("round_trip", h_a, h_b, h_c, d_a, d_b, d_c, n, stream);
}

#pragma once
// BROKEN CASE transfers_ignore_stream (tests/broken/README.md): upload and
// download never use the stream they are given: the upload is a plain
// synchronous cudaMemcpy, the download a cudaMemcpyAsync on stream 0 (the
// legacy default stream). The harness's stream is non-blocking, so neither
// waits for the work before it there, and the harness's events on that stream
// bracket none of the copies. Every output of pinned_h2d and pinned_d2h is
// right: the checks wait for the whole device.
// What must catch it: the traced run of a copy variant on the events clock
// holds the stream it is given until the launcher has returned, and these
// copies start before that hold ends: "GPU work: the variant did not wait for
// the stream it was given (a copy of ... bytes, started ... us before the
// stream's earlier work had finished ...)". (The end-to-end rows' download may
// also read c before the kernel on the given stream has written it.)
// Lab 03's exercise: the copies around lab 01's kernel. Each function only
// enqueues work on `stream` and returns; the host pointers are either pageable
// (std::vector) or pinned (cudaMallocHost) memory, and the same code serves
// both: what differs is how fast the copy engine may read them (the README).
#include <cstdint>

#include <cudalabs/error.hpp>
// vector_add(a, b, c, n, stream), lab 01's launcher, is declared before this
// file by kernels.cu (it includes lab 01's vector_add.cuh first).

// a and b (n floats each) from host memory to the device.
inline void upload(const float* h_a, const float* h_b, float* d_a, float* d_b, std::int64_t n, cudaStream_t stream) {
  // BEGIN SOLUTION pageable_h2d pinned_h2d
  // cudaMemcpyAsync on the given stream: from pinned memory the copy engine
  // reads the pages directly; from pageable memory the driver first stages
  // them through a pinned buffer of its own, chunk by chunk.
  // BUG: synchronous copies, on no stream the harness gave.
  (void)stream;
  CUDALABS_CHECK(cudaMemcpy(d_a, h_a, n * sizeof(float), cudaMemcpyHostToDevice));
  CUDALABS_CHECK(cudaMemcpy(d_b, h_b, n * sizeof(float), cudaMemcpyHostToDevice));
  // END SOLUTION
  // STUB: cudalabs::not_implemented("upload", h_a, h_b, d_a, d_b, n, stream);
}

// c (n floats) from the device to host memory.
inline void download(const float* d_c, float* h_c, std::int64_t n, cudaStream_t stream) {
  // BEGIN SOLUTION pageable_d2h pinned_d2h
  // BUG: stream 0, not the stream given.
  (void)stream;
  CUDALABS_CHECK(cudaMemcpyAsync(h_c, d_c, n * sizeof(float), cudaMemcpyDeviceToHost, 0));
  // END SOLUTION
  // STUB: cudalabs::not_implemented("download", d_c, h_c, n, stream);
}

// The whole trip: a and b up, c = a + b on the GPU (lab 01's vector_add), c down.
inline void round_trip(const float* h_a, const float* h_b, float* h_c, float* d_a, float* d_b, float* d_c,
                       std::int64_t n, cudaStream_t stream) {
  // BEGIN SOLUTION pageable_end_to_end pinned_end_to_end
  // All three on one stream: each starts when the one before it has finished,
  // with no host wait in between.
  upload(h_a, h_b, d_a, d_b, n, stream);
  vector_add(d_a, d_b, d_c, n, stream);
  download(d_c, h_c, n, stream);
  // END SOLUTION
  // STUB: cudalabs::not_implemented("round_trip", h_a, h_b, h_c, d_a, d_b, d_c, n, stream);
}

#pragma once
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
  CUDALABS_CHECK(cudaMemcpyAsync(d_a, h_a, n * sizeof(float), cudaMemcpyHostToDevice, stream));
  CUDALABS_CHECK(cudaMemcpyAsync(d_b, h_b, n * sizeof(float), cudaMemcpyHostToDevice, stream));
  // END SOLUTION
  // STUB: cudalabs::not_implemented("upload", h_a, h_b, d_a, d_b, n, stream);
}

// c (n floats) from the device to host memory.
inline void download(const float* d_c, float* h_c, std::int64_t n, cudaStream_t stream) {
  // BEGIN SOLUTION pageable_d2h pinned_d2h
  CUDALABS_CHECK(cudaMemcpyAsync(h_c, d_c, n * sizeof(float), cudaMemcpyDeviceToHost, stream));
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

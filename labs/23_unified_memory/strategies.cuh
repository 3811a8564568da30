#pragma once
// Lab 23's student file: five ways to get a GPU computation's inputs from the
// host and its result back, for a vector add (each value used once) and for a
// 2D heat-equation run (each value used 5 times per step, `steps` times).
//
// Every function enqueues one end-to-end run on `stream` and never
// synchronises: the inputs are on the host when it starts (main.cu puts them
// there before every run), and the result must be readable by the host once
// the stream is done. The kernels are the course's own: lab 01's vector add and
// lab 22's naive 5-point step; what changes is only where the bytes live and
// who moves them.
//
//   explicit        cudaMemcpyAsync in, kernels, cudaMemcpyAsync out (pinned host
//                   buffers, separate device buffers): the reference
//   managed_faults  cudaMallocManaged; the kernels simply touch the pages and the
//                   GPU faults them over, a few pages per fault
//   managed_prefetch  the same buffers, the inputs moved in bulk with
//                   cudaMemPrefetchAsync before the kernels, the output's dead
//                   pages discarded onto the GPU (CUDA 13: no bytes move), the
//                   result prefetched back after: the bytes explicit moves
//   managed_advised prefetch plus advice: the inputs prefetched as above, the
//                   output's preferred location the host and mapped for the GPU
//                   (it writes straight into host memory: no output pages to
//                   move either way)
//   zero_copy       mapped pinned host memory: kernels read and write it in place
//                   over PCIe, no copies at all, but every access crosses the bus
#include <cstddef>
#include <cstdint>

#include "../01_vector_add/vector_add.cuh"
#include "../22_stencil/stencil_naive.cuh"
#include "managed_memory.hpp"

inline std::size_t float_bytes(std::int64_t count) { return static_cast<std::size_t>(count) * sizeof(float); }

// ---- vector add: c = a + b, n floats ------------------------------------------

inline void add_explicit(const float* host_a, const float* host_b, float* host_c, float* dev_a, float* dev_b,
                         float* dev_c, std::int64_t n, cudaStream_t stream) {
  CUDALABS_CHECK(cudaMemcpyAsync(dev_a, host_a, float_bytes(n), cudaMemcpyHostToDevice, stream));
  CUDALABS_CHECK(cudaMemcpyAsync(dev_b, host_b, float_bytes(n), cudaMemcpyHostToDevice, stream));
  vector_add(dev_a, dev_b, dev_c, n, stream);
  CUDALABS_CHECK(cudaMemcpyAsync(host_c, dev_c, float_bytes(n), cudaMemcpyDeviceToHost, stream));
}

// a, b and c live on the host: the kernel's first touch of each page faults and
// the driver migrates it (c too: the GPU cannot know its old values are dead).
inline void add_managed_faults(const float* a, const float* b, float* c, std::int64_t n, cudaStream_t stream) {
  vector_add(a, b, c, n, stream);
  um::prefetch(c, float_bytes(n), um::host(), stream);  // the result home, as in every managed variant
}

// The inputs moved as two bulk transfers: no faults, full-size DMA. c's old
// contents are dead (the kernel overwrites every element), so instead of
// carrying them in (a third more bytes than explicit, 1.33x) the driver is told
// to drop them and map c's pages on the GPU: a, b in and c out, as explicit.
inline void add_managed_prefetch(const float* a, const float* b, float* c, std::int64_t n, int device,
                                 cudaStream_t stream) {
  um::prefetch(a, float_bytes(n), um::gpu(device), stream);
  um::prefetch(b, float_bytes(n), um::gpu(device), stream);
  um::discard_and_prefetch(c, float_bytes(n), um::gpu(device), stream);
  vector_add(a, b, c, n, stream);
  um::prefetch(c, float_bytes(n), um::host(), stream);
}

// Once, after allocation: advice is a property of the memory, not of a run.
//
// Only the output is advised. Its way home is what makes managed_prefetch slow:
// a prefetch of 256 MiB to the host takes 17.4 ms (15 GB/s), and discarding the
// same pages onto the host, which moves no bytes at all, takes as long (17.7 ms):
// the cost is the host's page work (finding, zeroing and mapping fresh pages),
// not the copy (results/h100/runs/20261123-2a61816-25-23/probe23.txt). With its
// preferred location the host and mapped for the GPU, c's pages never leave
// the host: the kernel's stores cross PCIe at 52 GB/s as it runs, what a
// pinned copy gets (54.9 GB/s).
//
// The inputs get no advice. cudaMemAdviseSetReadMostly would make the GPU's copy
// a read-only duplicate and keep the host's valid — worth it for data both
// sides read again and again, but a and b are read once, and making the
// duplicate costs 6.21 ms per 256 MiB input instead of 5.61 for a plain
// prefetch (the host's pages are write-protected too). Measured on the H100:
// 1.16x explicit with it, 1.08x without (git 2a61816, the advice set and removed; exercise 2).
inline void advise_add(const float* a, const float* b, const float* c, std::int64_t n, int device) {
  (void)a, (void)b;
  um::advise(c, float_bytes(n), cudaMemAdviseSetPreferredLocation, um::host());
  um::advise(c, float_bytes(n), cudaMemAdviseSetAccessedBy, um::gpu(device));
}

// The inputs come over in bulk; c stays in host memory and the kernel's stores
// cross PCIe as they happen, overlapping the kernel's reads.
inline void add_managed_advised(const float* a, const float* b, float* c, std::int64_t n, int device,
                                cudaStream_t stream) {
  um::prefetch(a, float_bytes(n), um::gpu(device), stream);
  um::prefetch(b, float_bytes(n), um::gpu(device), stream);
  vector_add(a, b, c, n, stream);
}

// a, b, c: device pointers of mapped pinned host memory.
inline void add_zero_copy(const float* a, const float* b, float* c, std::int64_t n, cudaStream_t stream) {
  vector_add(a, b, c, n, stream);
}

// ---- heat equation: `steps` 5-point Jacobi steps on an nx × ny grid ------------
// in → scratch0 ⇄ scratch1 → out (lab 22's jacobi_iterate): only the first step
// reads `in`, only the last writes `out`; the scratch grids never need the host.

inline void stencil_explicit(const float* host_in, float* host_out, float* dev_in, float* dev_scratch0,
                             float* dev_scratch1, float* dev_out, std::int64_t nx, std::int64_t ny, float r, int steps,
                             cudaStream_t stream) {
  CUDALABS_CHECK(cudaMemcpyAsync(dev_in, host_in, float_bytes(nx * ny), cudaMemcpyHostToDevice, stream));
  jacobi_2d_naive(dev_in, dev_scratch0, dev_scratch1, dev_out, nx, ny, r, steps, stream);
  CUDALABS_CHECK(cudaMemcpyAsync(host_out, dev_out, float_bytes(nx * ny), cudaMemcpyDeviceToHost, stream));
}

inline void stencil_managed_faults(const float* in, float* scratch0, float* scratch1, float* out, std::int64_t nx,
                                   std::int64_t ny, float r, int steps, cudaStream_t stream) {
  jacobi_2d_naive(in, scratch0, scratch1, out, nx, ny, r, steps, stream);
  um::prefetch(out, float_bytes(nx * ny), um::host(), stream);
}

inline void stencil_managed_prefetch(const float* in, float* scratch0, float* scratch1, float* out, std::int64_t nx,
                                     std::int64_t ny, float r, int steps, int device, cudaStream_t stream) {
  um::prefetch(in, float_bytes(nx * ny), um::gpu(device), stream);
  um::discard_and_prefetch(out, float_bytes(nx * ny), um::gpu(device), stream);  // its old contents are dead
  jacobi_2d_naive(in, scratch0, scratch1, out, nx, ny, r, steps, stream);
  um::prefetch(out, float_bytes(nx * ny), um::host(), stream);
}

// As advise_add: the result mapped from the host, no read-mostly copy of the
// input (only the first step reads it). The scratch grids live on the GPU.
inline void advise_stencil(const float* in, const float* scratch0, const float* scratch1, const float* out,
                           std::int64_t nx, std::int64_t ny, int device) {
  (void)in;
  um::advise(scratch0, float_bytes(nx * ny), cudaMemAdviseSetPreferredLocation, um::gpu(device));
  um::advise(scratch1, float_bytes(nx * ny), cudaMemAdviseSetPreferredLocation, um::gpu(device));
  um::advise(out, float_bytes(nx * ny), cudaMemAdviseSetPreferredLocation, um::host());
  um::advise(out, float_bytes(nx * ny), cudaMemAdviseSetAccessedBy, um::gpu(device));
}

inline void stencil_managed_advised(const float* in, float* scratch0, float* scratch1, float* out, std::int64_t nx,
                                    std::int64_t ny, float r, int steps, int device, cudaStream_t stream) {
  um::prefetch(in, float_bytes(nx * ny), um::gpu(device), stream);
  jacobi_2d_naive(in, scratch0, scratch1, out, nx, ny, r, steps, stream);
}

// in, scratch0, scratch1, out: all mapped pinned host memory. Every step reads
// and writes its grids across PCIe: what zero-copy costs when data is reused.
inline void stencil_zero_copy(const float* in, float* scratch0, float* scratch1, float* out, std::int64_t nx,
                              std::int64_t ny, float r, int steps, cudaStream_t stream) {
  jacobi_2d_naive(in, scratch0, scratch1, out, nx, ny, r, steps, stream);
}

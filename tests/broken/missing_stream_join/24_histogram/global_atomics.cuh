#pragma once
// BROKEN CASE missing_stream_join (tests/broken/README.md): global_atomics is
// right, but its launcher enqueues the zeroing and the kernel on a stream of its
// own (created once with cudaStreamCreate) and never joins it back to the stream
// it is given (no cudaEventRecord on the side stream + cudaStreamWaitEvent on the
// given one). Nothing orders the histogram after the harness's work before it on
// the given stream, nor the harness's events and synchronisation after it.
// What must catch it: the stream contract (lab.cpp's checked_run, trace.cpp). A
// cudaStreamCreate stream is a blocking stream: it waits for the legacy default
// stream, which the harness holds busy during the traced first run, so the
// kernel runs after the harness's marker on the given stream: "GPU work: the
// variant left work running after the stream it was given had finished".
#include <cstdint>

#include "histogram_common.cuh"

inline constexpr int global_atomics_block = 256;

template <typename Samples>
__global__ void __launch_bounds__(global_atomics_block)
    global_atomics_kernel(const typename Samples::Sample* __restrict__ in, std::int64_t n,
                          unsigned* __restrict__ hist) {
  // BEGIN SOLUTION global_atomics
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const int bin = Samples::bin(in[i]);
  if (bin >= 0) atomicAdd(&hist[bin], 1u);
  // END SOLUTION
  // STUB: // TODO: one thread per sample, atomicAdd on its bin of the global histogram.
}

template <typename Samples>
void histogram_global_atomics(const typename Samples::Sample* in, std::int64_t n, unsigned* hist,
                              cudaStream_t stream) {
  // BEGIN SOLUTION global_atomics
  // BUG: a side stream of the launcher's own, never joined back to `stream`.
  static cudaStream_t side = [] {
    cudaStream_t created = nullptr;
    CUDALABS_CHECK(cudaStreamCreate(&created));
    return created;
  }();
  (void)stream;
  zero_histogram<Samples>(hist, side);
  const auto blocks = static_cast<unsigned>(cudalabs::ceil_div<std::int64_t>(n, global_atomics_block));
  global_atomics_kernel<Samples><<<blocks, global_atomics_block, 0, side>>>(in, n, hist);
  CUDALABS_CHECK_LAUNCH("global_atomics_kernel");
  // END SOLUTION
  // STUB: cudalabs::not_implemented("histogram_global_atomics", in, n, hist, stream);
}

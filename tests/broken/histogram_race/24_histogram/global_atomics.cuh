// BROKEN ON PURPOSE for tests/grading: the grader must give lab 24's global_atomics zero.
// The bug: a plain read-modify-write instead of atomicAdd. Threads that hit the same bin
// at the same time lose each other's counts; the exact check of every bin fails.
#pragma once
// Step 1 — global atomics: one thread per sample, one atomicAdd on the
// histogram in global memory.
//
// An atomic on global memory is a read-modify-write done by the L2 slice that
// owns the address; atomics on one address are done one after another. Uniform
// bytes spread 2^28 atomics over 256 addresses; the one-bin input sends all of
// them to one address, and the whole GPU waits on that one L2 slice.
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
  if (bin >= 0) hist[bin] += 1u;  // BROKEN: not atomic, concurrent increments are lost
  // END SOLUTION
  // STUB: // TODO: one thread per sample, atomicAdd on its bin of the global histogram.
}

template <typename Samples>
void histogram_global_atomics(const typename Samples::Sample* in, std::int64_t n, unsigned* hist,
                              cudaStream_t stream) {
  // BEGIN SOLUTION global_atomics
  zero_histogram<Samples>(hist, stream);
  const auto blocks = static_cast<unsigned>(cudalabs::ceil_div<std::int64_t>(n, global_atomics_block));
  global_atomics_kernel<Samples><<<blocks, global_atomics_block, 0, stream>>>(in, n, hist);
  CUDALABS_CHECK_LAUNCH("global_atomics_kernel");
  // END SOLUTION
  // STUB: cudalabs::not_implemented("histogram_global_atomics", in, n, hist, stream);
}

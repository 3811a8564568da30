#pragma once
// Step 2 — privatisation: one histogram per block, in shared memory.
//
// A block of 256 threads counts into its own copy of the histogram in shared
// memory (1 KB for 256 bins, 4 KB for 1024), where an atomic is done by the SM
// itself, close by, instead of by an L2 slice across the chip. At the end the
// block adds its nonzero counts to the global histogram: one global atomic per
// bin per block instead of one per sample. For that to pay, a block must count
// many samples, so the grid fills the GPU once and strides through the input
// with 16-byte loads (for_each_bin); 2^28 samples become ~1000 blocks x 256
// bins of global atomics.
//
// What it does not fix: samples of one bin still meet on one shared-memory word.
// On the one-bin input every atomic of the block's 8 warps hits the same word.
#include <cstdint>

#include "histogram_common.cuh"

inline constexpr int block_privatized_block = 256;

template <typename Samples>
__global__ void __launch_bounds__(block_privatized_block)
    block_privatized_kernel(const typename Samples::Sample* __restrict__ in, std::int64_t n,
                            unsigned* __restrict__ hist) {
  // BEGIN SOLUTION block_privatized
  __shared__ unsigned block_hist[Samples::bins];
  for (int b = threadIdx.x; b < Samples::bins; b += blockDim.x) block_hist[b] = 0;
  __syncthreads();

  auto count = [&](int bin) {
    if (bin >= 0) atomicAdd(&block_hist[bin], 1u);
  };
  for_each_bin<Samples>(
      in, n,
      [&](const auto& bins) {
#pragma unroll
        for (int j = 0; j < samples_per_lane<Samples>; ++j) count(bins[j]);
      },
      count);
  __syncthreads();

  for (int b = threadIdx.x; b < Samples::bins; b += blockDim.x)
    if (block_hist[b] != 0) atomicAdd(&hist[b], block_hist[b]);
  // END SOLUTION
  // STUB: // TODO: a histogram per block in shared memory, 16-byte loads, one merge per block.
}

template <typename Samples>
void histogram_block_privatized(const typename Samples::Sample* in, std::int64_t n, unsigned* hist,
                                cudaStream_t stream) {
  // BEGIN SOLUTION block_privatized
  static const int resident = resident_blocks_of(block_privatized_kernel<Samples>, block_privatized_block);
  zero_histogram<Samples>(hist, stream);
  const unsigned blocks = histogram_grid(resident, block_privatized_block, samples_per_lane<Samples>, n);
  block_privatized_kernel<Samples><<<blocks, block_privatized_block, 0, stream>>>(in, n, hist);
  CUDALABS_CHECK_LAUNCH("block_privatized_kernel");
  // END SOLUTION
  // STUB: cudalabs::not_implemented("histogram_block_privatized", in, n, hist, stream);
}

#pragma once
// Step 3 — one histogram per warp.
//
// Step 2's block histogram is written by 8 warps at once; two warps counting the
// same bin queue on the same shared-memory word. With one copy per warp
// (8 x 1 KB for bytes, 8 x 4 KB = 32 KB for floats) a word has one warp
// writing it, and the merge at the end sums 8 copies per bin before its one
// global atomic. On the one-bin input this cuts the writers of the hot word
// from 256 threads to 32; the 32 lanes of a warp still collide on it (step 4).
//
// The kernel takes how a lane counts its samples as a type, so that step 4
// changes that and nothing else.
#include <cstdint>

#include "histogram_common.cuh"

inline constexpr int warp_privatized_block = 256;
inline constexpr int warp_privatized_warps = warp_privatized_block / warp_lanes;

// Step 3's counting: one shared atomic per sample, on the warp's own histogram.
struct CountEachSample {
  template <int N>
  __device__ void operator()(unsigned* warp_hist, const int (&bins)[N]) const {
    // BEGIN SOLUTION warp_privatized
#pragma unroll
    for (int j = 0; j < N; ++j)
      if (bins[j] >= 0) atomicAdd(&warp_hist[bins[j]], 1u);
    // END SOLUTION
    // STUB: // TODO: count each bin >= 0 of `bins` on the warp's own histogram.
  }
};

template <typename Samples, typename CountTile>
__global__ void __launch_bounds__(warp_privatized_block)
    warp_histograms_kernel(const typename Samples::Sample* __restrict__ in, std::int64_t n,
                           unsigned* __restrict__ hist) {
  // BEGIN SOLUTION warp_privatized warp_aggregated
  static_assert(warp_privatized_warps * Samples::bins * sizeof(unsigned) <= 48 * 1024,
                "per-warp histograms must fit the 48 KB of static shared memory: fewer warps or fewer bins");
  __shared__ unsigned warp_hists[warp_privatized_warps][Samples::bins];
  for (int i = threadIdx.x; i < warp_privatized_warps * Samples::bins; i += blockDim.x)
    (&warp_hists[0][0])[i] = 0;
  __syncthreads();

  unsigned* own = warp_hists[threadIdx.x / warp_lanes];
  for_each_bin<Samples>(
      in, n, [&](const auto& bins) { CountTile{}(own, bins); },
      [&](int bin) {
        if (bin >= 0) atomicAdd(&own[bin], 1u);
      });
  __syncthreads();

  for (int b = threadIdx.x; b < Samples::bins; b += blockDim.x) {
    unsigned total = 0;
#pragma unroll
    for (int w = 0; w < warp_privatized_warps; ++w) total += warp_hists[w][b];
    if (total != 0) atomicAdd(&hist[b], total);
  }
  // END SOLUTION
  // STUB: // TODO: a histogram per warp in shared memory (zeroed), CountTile{}(own, bins) per tile of samples, then one merge per block.
}

template <typename Samples, typename CountTile>
void launch_warp_histograms(const typename Samples::Sample* in, std::int64_t n, unsigned* hist, cudaStream_t stream) {
  // BEGIN SOLUTION warp_privatized warp_aggregated
  static const int resident = resident_blocks_of(warp_histograms_kernel<Samples, CountTile>, warp_privatized_block);
  zero_histogram<Samples>(hist, stream);
  const unsigned blocks = histogram_grid(resident, warp_privatized_block, samples_per_lane<Samples>, n);
  warp_histograms_kernel<Samples, CountTile><<<blocks, warp_privatized_block, 0, stream>>>(in, n, hist);
  CUDALABS_CHECK_LAUNCH("warp_histograms_kernel");
  // END SOLUTION
  // STUB: cudalabs::not_implemented("launch_warp_histograms", in, n, hist, stream);
}

template <typename Samples>
void histogram_warp_privatized(const typename Samples::Sample* in, std::int64_t n, unsigned* hist,
                               cudaStream_t stream) {
  // BEGIN SOLUTION warp_privatized
  launch_warp_histograms<Samples, CountEachSample>(in, n, hist, stream);
  // END SOLUTION
  // STUB: cudalabs::not_implemented("histogram_warp_privatized", in, n, hist, stream);
}

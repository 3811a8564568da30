#pragma once
// Step 4 — warp aggregation: the lanes that hold the same bin add once, together.
//
// Step 3 still issues one shared atomic per sample, and on the one-bin input the
// 32 lanes of each such instruction all hit one word: the SM does them one after
// another, 32 updates for one instruction. __match_any_sync(mask, bin) returns,
// in each lane, the set of lanes holding the same bin as it; the lowest lane of
// each set adds the set's size (__popc). One-bin input: one atomic per 32
// samples. Uniform input: 32 lanes over 256 or 1024 bins rarely share one, so
// nearly every lane still adds, and the match is an extra instruction per
// sample: the price of being fast on both inputs.
#include "warp_privatized.cuh"

struct CountAggregated {
  template <int N>
  __device__ void operator()(unsigned* warp_hist, const int (&bins)[N]) const {
    // BEGIN SOLUTION warp_aggregated
    const int lane = threadIdx.x % warp_lanes;
#pragma unroll
    for (int j = 0; j < N; ++j) {
      const int bin = bins[j];
      // -1 (not counted) forms a group of its own and adds nothing.
      const unsigned peers = __match_any_sync(full_warp_mask, bin);
      if (bin >= 0 && lane == __ffs(peers) - 1) atomicAdd(&warp_hist[bin], static_cast<unsigned>(__popc(peers)));
    }
    // END SOLUTION
    // STUB: // TODO: the lanes holding the same bin (__match_any_sync) add once, the lowest of them, their count (__popc).
  }
};

template <typename Samples>
void histogram_warp_aggregated(const typename Samples::Sample* in, std::int64_t n, unsigned* hist,
                               cudaStream_t stream) {
  // BEGIN SOLUTION warp_aggregated
  launch_warp_histograms<Samples, CountAggregated>(in, n, hist, stream);
  // END SOLUTION
  // STUB: cudalabs::not_implemented("histogram_warp_aggregated", in, n, hist, stream);
}

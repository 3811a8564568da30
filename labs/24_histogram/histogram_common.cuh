#pragma once
// What the histogram kernels of lab 24 share: the two problems as types (what a
// sample is, its bin, how a 16-byte load unpacks), the loop that walks the input
// with 16-byte loads, and the size of a grid that fills the GPU once.
//
// The problem constants (bins, range, scale) are lab24:: names from kernels.hpp,
// which kernels.cu includes before this file: main.cu's CPU reference uses the
// same constants, so both sides bin by one rule.
#include <algorithm>
#include <cstdint>

#include <cudalabs/device.hpp>
#include <cudalabs/error.hpp>
#include <cudalabs/math.hpp>

inline constexpr unsigned full_warp_mask = 0xffffffffu;
inline constexpr int warp_lanes = 32;

// 8-bit samples, 256 bins: the bin is the byte.
struct ByteSamples {
  using Sample = std::uint8_t;
  using Vector = uint4;  // one 16-byte load: 16 samples
  static constexpr int bins = lab24::byte_bins;
  static constexpr int per_vector = 16;
  // Two loads per lane per step, 32 bytes in flight per thread (64 KB per SM at
  // 2048 threads): lab 07's Little's law asks ~15-20 KB per SM of an H100, and
  // the 32 shared atomics that follow each step keep the next loads waiting.
  static constexpr int vectors_per_lane = 2;

  __device__ static int bin(Sample s) { return s; }
  template <int N>
  __device__ static void unpack(const Vector& v, int (&out)[N], int first) {
    const unsigned words[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int w = 0; w < 4; ++w)
#pragma unroll
      for (int b = 0; b < 4; ++b) out[first + 4 * w + b] = static_cast<int>((words[w] >> (8 * b)) & 0xffu);
  }
};

// Float samples, 1024 bins over [lo, hi): kernels.hpp's rule.
struct FloatSamples {
  using Sample = float;
  using Vector = float4;  // one 16-byte load: 4 samples
  static constexpr int bins = lab24::float_bins;
  static constexpr int per_vector = 4;
  static constexpr int vectors_per_lane = 4;  // 64 bytes in flight per thread, as lab 07's float4 sum

  // -1: not counted. !(x >= lo && x < hi) is also true for NaN. Subtract, then
  // multiply, in float: (x - lo) * scale has no a*b+c for the compiler to fuse
  // into an FMA, so the GPU rounds exactly as the CPU reference does.
  __device__ static int bin(float x) {
    if (!(x >= lab24::float_lo && x < lab24::float_hi)) return -1;
    return min(static_cast<int>((x - lab24::float_lo) * lab24::float_scale), bins - 1);
  }
  template <int N>
  __device__ static void unpack(const Vector& v, int (&out)[N], int first) {
    out[first + 0] = bin(v.x);
    out[first + 1] = bin(v.y);
    out[first + 2] = bin(v.z);
    out[first + 3] = bin(v.w);
  }
};

// Samples one lane takes per step of for_each_bin.
template <typename Samples>
inline constexpr int samples_per_lane = Samples::vectors_per_lane * Samples::per_vector;

// Walks in[0, n) once and hands every sample's bin (-1: not counted) to the caller.
//
// The input is cut into warp tiles of 32 x vectors_per_lane 16-byte vectors;
// warps take tiles in a grid-stride loop, and load k of lane l reads vector
// k*32 + l of its tile, so every load instruction of a warp reads 512
// contiguous bytes. A lane issues all its loads before it unpacks any.
//   on_tile(bins): bins[samples_per_lane] of one lane. Called by the 32 lanes of
//     a warp together (the tile loop's trip count is the same for the whole
//     warp), so a warp collective with the full mask may run inside it.
//   on_sample(bin): the fewer than one tile of samples left at the end, one per
//     thread, by threads independently: no warp collective there.
// `in` must be 16-byte aligned.
template <typename Samples, typename OnTile, typename OnSample>
__device__ void for_each_bin(const typename Samples::Sample* __restrict__ in, std::int64_t n, OnTile on_tile,
                             OnSample on_sample) {
  constexpr int per_lane = samples_per_lane<Samples>;
  constexpr std::int64_t tile_vectors = warp_lanes * Samples::vectors_per_lane;
  constexpr std::int64_t tile_samples = warp_lanes * per_lane;
  const int lane = threadIdx.x % warp_lanes;
  const int warps_per_block = blockDim.x / warp_lanes;
  const std::int64_t warp = static_cast<std::int64_t>(blockIdx.x) * warps_per_block + threadIdx.x / warp_lanes;
  const std::int64_t warps = static_cast<std::int64_t>(gridDim.x) * warps_per_block;
  const std::int64_t tiles = n / tile_samples;
  const auto* vectors = reinterpret_cast<const typename Samples::Vector*>(in);

  for (std::int64_t t = warp; t < tiles; t += warps) {
    typename Samples::Vector v[Samples::vectors_per_lane];
#pragma unroll
    for (int k = 0; k < Samples::vectors_per_lane; ++k) v[k] = vectors[t * tile_vectors + k * warp_lanes + lane];
    int bins[per_lane];
#pragma unroll
    for (int k = 0; k < Samples::vectors_per_lane; ++k) Samples::unpack(v[k], bins, k * Samples::per_vector);
    on_tile(bins);
  }

  const std::int64_t threads = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = tiles * tile_samples + static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += threads)
    on_sample(Samples::bin(in[i]));
}

// Blocks for a grid-stride histogram kernel: no more than fill the GPU once
// (`resident` = SMs x blocks per SM: every block added past that only adds a
// shared histogram to clear and merge), and no more than one step of
// for_each_bin for every warp needs.
inline unsigned histogram_grid(int resident, int block_threads, int per_lane, std::int64_t n) {
  const std::int64_t needed = cudalabs::ceil_div<std::int64_t>(n, static_cast<std::int64_t>(block_threads) * per_lane);
  return static_cast<unsigned>(std::max<std::int64_t>(1, std::min<std::int64_t>(needed, resident)));
}

// SMs x resident blocks of `kernel`: an occupancy query, a host call; each
// launcher asks once (a function-local static) and keeps the answer.
template <typename Kernel>
int resident_blocks_of(Kernel* kernel, int block_threads) {
  return cudalabs::resources_of(kernel, block_threads).blocks_per_sm * cudalabs::current_device().sm_count;
}

// The launchers' first step: a histogram kernel only adds, so the counts start at 0.
template <typename Samples>
void zero_histogram(unsigned* hist, cudaStream_t stream) {
  CUDALABS_CHECK(cudaMemsetAsync(hist, 0, Samples::bins * sizeof(unsigned), stream));
}

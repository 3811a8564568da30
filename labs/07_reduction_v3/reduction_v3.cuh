#pragma once
// Reduction v3: warp shuffles for the last five steps, then a grid-stride
// float4 read that keeps enough bytes in flight to saturate DRAM.
//
// warp_shuffle: lab 06's two loads per thread, but the block's sum is finished
//   in registers. The 32 lanes of a warp run in lock step, so the five steps that
//   reduce 32 values to 1 (offsets 16, 8, 4, 2, 1) need neither shared memory nor
//   a barrier: __shfl_down_sync reads a register of the lane `offset` above.
//   Each warp shuffles its own sum, lane 0 of each puts it in shared memory, one
//   barrier, and warp 0 shuffles the 8 warp sums. Lab 06's tree took 8 barriers
//   and 8 shared-memory round trips per block; this takes one of each.
//
// warp_shuffle_float4: the same finish, but each block stays resident and
//   strides through the whole array with 16-byte loads, 4 of them issued before
//   any is added: 64 bytes in flight per thread instead of 8, a grid sized to fill
//   the GPU once (no block launch and retire per 2 KB), and the block finish run
//   ~1000 times instead of 2^19 times at 2^28. Then one block sums the per-block
//   partials.
#include <algorithm>
#include <cstdint>

#include <cudalabs/device.hpp>
#include <cudalabs/error.hpp>
#include <cudalabs/math.hpp>


inline constexpr unsigned full_warp_mask = 0xffffffffu;

// Lane 0 ends with the sum of the 32 lanes' values (the other lanes with
// partial sums). All 32 lanes must call it.
__device__ __forceinline__ float warp_sum(float v) {
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(full_warp_mask, v, offset);
  return v;
}

// Sum over a block of `block` threads, one value each; the result is valid in
// thread 0. Call once per kernel, from every thread: it contains a barrier.
template <int block>
__device__ float block_sum(float v) {
  static_assert(block % 32 == 0 && block <= 32 * 32, "block_sum needs whole warps, at most 32 of them");
  constexpr int warps = block / 32;
  __shared__ float warp_sums[warps];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  v = warp_sum(v);
  if (lane == 0) warp_sums[warp] = v;
  __syncthreads();
  if (warp == 0) v = warp_sum(lane < warps ? warp_sums[lane] : 0.0f);
  return v;
}

// ---- warp_shuffle: v2's loads, finished with shuffles -------------------------

inline constexpr int shuffle_block = 256;
inline constexpr std::int64_t shuffle_per_block = 2 * shuffle_block;  // elements one block reduces

__global__ void reduce_warp_shuffle_kernel(const float* __restrict__ in, float* __restrict__ partials, std::int64_t n) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * shuffle_per_block + threadIdx.x;
  const std::int64_t j = i + shuffle_block;
  const float v = block_sum<shuffle_block>((i < n ? in[i] : 0.0f) + (j < n ? in[j] : 0.0f));
  if (threadIdx.x == 0) partials[blockIdx.x] = v;
}

// One pass: n values in, ceil(n / 512) partial sums out.
inline void reduce_warp_shuffle(const float* in, float* partials, std::int64_t n, cudaStream_t stream) {
  const auto blocks = static_cast<unsigned>(cudalabs::ceil_div(n, shuffle_per_block));
  reduce_warp_shuffle_kernel<<<blocks, shuffle_block, 0, stream>>>(in, partials, n);
  CUDALABS_CHECK_LAUNCH("reduce_warp_shuffle_kernel");
}

// ---- warp_shuffle_float4: grid-stride 16-byte loads, several in flight ---------

inline constexpr int float4_block = 256;
// float4 loads each thread issues before it adds any of them. Little's law:
// bytes in flight = bandwidth x latency. At 3.35 TB/s and ~0.6-0.8 us of DRAM
// latency an H100 needs ~2-2.7 MB in flight, ~15-20 KB per SM. 2048 threads x
// 64 B = 128 KB per SM leaves room for fewer resident threads and longer latency
// under load; one float4 per thread (32 KB per SM) leaves little.
inline constexpr int float4_loads_in_flight = 4;

// A float array seen as: `head` floats up to the first 16-byte boundary, then
// `vectors` float4s, then `tail` floats (head, tail <= 3). The float4 loads need
// 16-byte alignment; cudaMalloc gives 256, but a pointer into an array need not.
struct Float4Split {
  std::int64_t head, vectors, tail;
};

CUDALABS_HD constexpr Float4Split split_for_float4(std::uintptr_t address, std::int64_t n) {
  const auto to_boundary = static_cast<std::int64_t>((16 - address % 16) % 16 / 4);
  const std::int64_t head = to_boundary < n ? to_boundary : n;
  const std::int64_t vectors = (n - head) / 4;
  return {head, vectors, n - head - 4 * vectors};
}
static_assert(split_for_float4(256, 10).head == 0 && split_for_float4(256, 10).vectors == 2 &&
                  split_for_float4(256, 10).tail == 2,
              "aligned: 2 float4s and 2 tail floats");
static_assert(split_for_float4(260, 10).head == 3 && split_for_float4(260, 10).vectors == 1 &&
                  split_for_float4(260, 10).tail == 3,
              "4 bytes past a boundary: 3 head floats, 1 float4, 3 tail floats");
static_assert(split_for_float4(268, 2).head == 1 && split_for_float4(268, 2).vectors == 0 &&
                  split_for_float4(268, 2).tail == 1,
              "short arrays end up in head and tail");
static_assert(split_for_float4(260, 1).head == 1 && split_for_float4(260, 1).tail == 0, "n = 1");

__global__ void reduce_warp_shuffle_float4_kernel(const float* __restrict__ in, float* __restrict__ partials,
                                                  std::int64_t n) {
  constexpr int k_loads = float4_loads_in_flight;
  const std::int64_t threads = static_cast<std::int64_t>(gridDim.x) * float4_block;
  const std::int64_t t = static_cast<std::int64_t>(blockIdx.x) * float4_block + threadIdx.x;
  const Float4Split split = split_for_float4(reinterpret_cast<std::uintptr_t>(in), n);
  const auto* body = reinterpret_cast<const float4*>(in + split.head);

  float v = 0.0f;
  std::int64_t i = t;
  // All k_loads loads are issued before the first add needs one of them.
  for (; i + (k_loads - 1) * threads < split.vectors; i += k_loads * threads) {
    float4 x[k_loads];
#pragma unroll
    for (int k = 0; k < k_loads; ++k) x[k] = body[i + k * threads];
#pragma unroll
    for (int k = 0; k < k_loads; ++k) v += (x[k].x + x[k].y) + (x[k].z + x[k].w);
  }
  for (; i < split.vectors; i += threads) {
    const float4 x = body[i];
    v += (x.x + x.y) + (x.z + x.w);
  }
  // At most 3 floats before the first boundary and 3 after the last float4.
  if (t < split.head) v += in[t];
  if (t < split.tail) v += in[split.head + 4 * split.vectors + t];

  v = block_sum<float4_block>(v);
  if (threadIdx.x == 0) partials[blockIdx.x] = v;
}

inline void reduce_warp_shuffle_float4(const float* in, float* partials, std::int64_t n, unsigned blocks,
                                       cudaStream_t stream) {
  reduce_warp_shuffle_float4_kernel<<<blocks, float4_block, 0, stream>>>(in, partials, n);
  CUDALABS_CHECK_LAUNCH("reduce_warp_shuffle_float4_kernel");
}

// The grid reduce_warp_shuffle_float4 wants for n floats: every SM full (SMs x
// resident blocks: 132 x 8 = 1056 blocks of 256 on an H100), never more blocks
// than n / 4 float4s need. Asked once per size, outside the timed runs.
inline unsigned warp_shuffle_float4_blocks(std::int64_t n) {
  return cudalabs::resident_blocks(reduce_warp_shuffle_float4_kernel, float4_block, std::max<std::int64_t>(n / 4, 1));
}

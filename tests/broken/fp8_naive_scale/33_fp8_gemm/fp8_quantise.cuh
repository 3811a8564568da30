// BROKEN ON PURPOSE for tests/grading: the grader must give lab 33's quantisation zero.
// The bug: every scheme computes its scale as amax / 448 itself instead of fp8::scale_of, which
// gives a group of zeros, or one whose amax / 448 underflows to 0, the scale 1. Here such a group
// gets the scale 0 and its codes x / 0: ±448, or NaN for its zeros. With the default inputs every
// group holds ordinary values and the codes and scales match the CPU's bit for bit; the
// zero_groups run (a zero row of A, a zero slice of B, groups of subnormals below 63·2^-149)
// fails the bit-for-bit check.
#pragma once
// Step 1 — quantisation on the GPU: from FP32 to FP8 e4m3 and its scales.
//
// Three schemes (fp8_format.hpp has the format and scale_of):
//   per tensor     one scale for a whole matrix: amax over all of it (a
//                  reduction: block maxima, then one atomicMax per block), then
//                  every element rounded as e4m3(x / scale). One outlier 100×
//                  the rest sets the scale for everything: the rest lose 6-7 of
//                  e4m3's exponent steps, and the smallest of them fall into its
//                  subnormals (3 bits or fewer) or to zero.
//   1 × 128        (activations, A [m × k]) one scale per row per 128 of k: an
//                  outlier costs only its own 128-element group. A warp per
//                  group: 4 values per lane, the max by shuffles.
//   128 × 128      (weights, B [n × k]) one scale per 128 × 128 block: a block
//                  of 256 threads per block of B, 64 values per thread.
// Scales: 1 × 128 k-major, [ceil(k/128)][m] (the scale of row r, k-block kb
// at kb · m + r: the m rows' scales of one k-block contiguous, the layout
// cuBLASLt's VEC128_32F and DeepGEMM read, so that step 4's warps load the
// scales of their 16 rows as 64 contiguous bytes); 128 × 128 row-major,
// [ceil(n/128)][ceil(k/128)]. Every element is rounded with
// cvt.rn.satfinite.e4m3x2.f32 (__nv_cvt_float_to_fp8), dividing first with
// __fdiv_rn (IEEE): exactly what the CPU reference (fp8_reference.hpp) does.
#include <cuda_fp8.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>

#include <cudalabs/error.hpp>
#include <cudalabs/math.hpp>
#include <cudalabs/memory.hpp>

#include "fp8_format.hpp"

namespace quantise_step {
inline constexpr int threads = 256;
inline constexpr int per_tensor_blocks = 1024;  // grid-stride: enough blocks to fill any GPU, few atomics
}  // namespace quantise_step

__device__ inline __nv_fp8_e4m3 to_e4m3(float x, float scale) {
  __nv_fp8_e4m3 q;
  q.__x = __nv_cvt_float_to_fp8(__fdiv_rn(x, scale), __NV_SATFINITE, __NV_E4M3);
  return q;
}

// The largest of the 32 lanes' values, in every lane.
__device__ inline float warp_max(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) v = fmaxf(v, __shfl_xor_sync(0xFFFFFFFFu, v, offset));
  return v;
}

// amax of x[0 .. count): each block's maximum |x|, then one atomicMax into
// *amax (zeroed by the launcher). Non-negative floats order as their bits do
// as integers, so the atomic is an integer one.
__global__ void amax_kernel(const float* __restrict__ x, std::int64_t count, unsigned* __restrict__ amax) {
  // BEGIN SOLUTION quantisation
  __shared__ float warp_maxima[quantise_step::threads / 32];
  float v = 0.0f;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    v = fmaxf(v, fabsf(x[i]));
  v = warp_max(v);
  if (threadIdx.x % 32 == 0) warp_maxima[threadIdx.x / 32] = v;
  __syncthreads();
  if (threadIdx.x < 32) {
    v = threadIdx.x < quantise_step::threads / 32 ? warp_maxima[threadIdx.x] : 0.0f;
    v = warp_max(v);
    if (threadIdx.x == 0) atomicMax(amax, __float_as_uint(v));
  }
  // END SOLUTION
  // STUB: (void)x, (void)count, (void)amax;  // TODO: the largest |x| of the block, then one atomicMax into *amax
}

// q = e4m3(x / scale) with scale = scale_of(amax); the first thread also
// stores the scale.
__global__ void quantise_per_tensor_kernel(const float* __restrict__ x, std::int64_t count,
                                           const unsigned* __restrict__ amax, __nv_fp8_e4m3* __restrict__ q,
                                           float* __restrict__ scale) {
  // BEGIN SOLUTION quantisation
  const float s = __uint_as_float(*amax) / fp8::e4m3_max;
  const std::int64_t first = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (first == 0) *scale = s;
  for (std::int64_t i = first; i < count; i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) q[i] = to_e4m3(x[i], s);
  // END SOLUTION
  // STUB: (void)x, (void)count, (void)amax, (void)q, (void)scale;  // TODO: scale from amax, then every element
}

// One warp per 1 × 128 group (row r, k-block kb) of a row-major [rows × k]
// matrix: lane l holds columns kb·128 + l + 32j, j < 4 (a warp's loads of one
// j are 128 contiguous bytes). Columns past k count as zeros and are not stored.
// Warps take the groups row by row (warp w: row w / k_blocks, k-block
// w % k_blocks), so the reads of x run along its rows; the scale goes to
// kb · rows + r (k-major), so consecutive warps store their one float each
// `rows` floats apart. Those strided stores do not matter: rows · k_blocks
// floats in all, 1/128 of the bytes the kernel reads.
__global__ void quantise_1x128_kernel(const float* __restrict__ x, int rows, int k, __nv_fp8_e4m3* __restrict__ q,
                                      float* __restrict__ scales) {
  // BEGIN SOLUTION quantisation
  const int k_blocks = cudalabs::ceil_div(k, fp8::block);
  const std::int64_t group = (static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  if (group >= static_cast<std::int64_t>(rows) * k_blocks) return;  // whole warps leave together
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const std::int64_t row = group / k_blocks;
  const int kb = static_cast<int>(group % k_blocks);
  const int col0 = kb * fp8::block;
  float v[4];
  float m = 0.0f;
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const int col = col0 + lane + 32 * j;
    v[j] = col < k ? x[row * k + col] : 0.0f;
    m = fmaxf(m, fabsf(v[j]));
  }
  const float s = warp_max(m) / fp8::e4m3_max;
  if (lane == 0) scales[static_cast<std::int64_t>(kb) * rows + row] = s;  // k-major [k_blocks][rows]
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const int col = col0 + lane + 32 * j;
    if (col < k) q[row * k + col] = to_e4m3(v[j], s);
  }
  // END SOLUTION
  // STUB: (void)x, (void)rows, (void)k, (void)q, (void)scales;  // TODO: a warp per 128 of a row: amax, scale, round
  // STUB: // TODO: the scale of row r, k-block kb goes to scales[kb · rows + r] (k-major)
}

// One block of 256 threads per 128 × 128 block (blockIdx.y: the block row,
// blockIdx.x: the k-block) of a row-major [rows × k] matrix: thread t takes
// column t % 128 of rows t / 128, t / 128 + 2, ... (64 values in registers),
// so a warp reads 128 contiguous bytes per row.
__global__ void quantise_128x128_kernel(const float* __restrict__ x, int rows, int k, __nv_fp8_e4m3* __restrict__ q,
                                        float* __restrict__ scales) {
  // BEGIN SOLUTION quantisation
  constexpr int row_step = quantise_step::threads / fp8::block;  // 2
  constexpr int per_thread = fp8::block / row_step;              // 64
  __shared__ float warp_maxima[quantise_step::threads / 32];
  const int col = static_cast<int>(blockIdx.x) * fp8::block + static_cast<int>(threadIdx.x) % fp8::block;
  const int row0 = static_cast<int>(blockIdx.y) * fp8::block + static_cast<int>(threadIdx.x) / fp8::block;
  float v[per_thread];
  float m = 0.0f;
#pragma unroll
  for (int i = 0; i < per_thread; ++i) {
    const int row = row0 + row_step * i;
    v[i] = row < rows && col < k ? x[static_cast<std::int64_t>(row) * k + col] : 0.0f;
    m = fmaxf(m, fabsf(v[i]));
  }
  m = warp_max(m);
  if (threadIdx.x % 32 == 0) warp_maxima[threadIdx.x / 32] = m;
  __syncthreads();
  m = 0.0f;
#pragma unroll
  for (int w = 0; w < quantise_step::threads / 32; ++w) m = fmaxf(m, warp_maxima[w]);
  const float s = m / fp8::e4m3_max;
  if (threadIdx.x == 0) scales[blockIdx.y * gridDim.x + blockIdx.x] = s;
#pragma unroll
  for (int i = 0; i < per_thread; ++i) {
    const int row = row0 + row_step * i;
    if (row < rows && col < k) q[static_cast<std::int64_t>(row) * k + col] = to_e4m3(v[i], s);
  }
  // END SOLUTION
  // STUB: (void)x, (void)rows, (void)k, (void)q, (void)scales;  // TODO: a block per 128 × 128: amax, scale, round
}

// ---- launchers: enqueue on `stream`, never synchronise ----------------------

// x[count] -> q[count] and *scale (device), one scale for the whole tensor.
inline void quantise_per_tensor(const float* x, std::int64_t count, __nv_fp8_e4m3* q, float* scale, cudaStream_t stream) {
  // BEGIN SOLUTION quantisation
  using quantise_step::threads;
  auto* amax = static_cast<unsigned*>(cudalabs::stream_alloc(sizeof(unsigned), "the amax of a tensor", stream));
  CUDALABS_CHECK(cudaMemsetAsync(amax, 0, sizeof(unsigned), stream));
  const auto blocks = static_cast<unsigned>(
      std::min<std::int64_t>(quantise_step::per_tensor_blocks, std::max<std::int64_t>(1, cudalabs::ceil_div<std::int64_t>(count, threads))));
  amax_kernel<<<blocks, threads, 0, stream>>>(x, count, amax);
  CUDALABS_CHECK_LAUNCH("amax_kernel");
  quantise_per_tensor_kernel<<<blocks, threads, 0, stream>>>(x, count, amax, q, scale);
  CUDALABS_CHECK_LAUNCH("quantise_per_tensor_kernel");
  cudalabs::stream_free(amax, stream);
  // END SOLUTION
  // STUB: cudalabs::not_implemented("quantise_per_tensor", x, count, q, scale, stream);
}

// x [rows × k] -> q [rows × k] and scales [ceil(k/128)][rows] (k-major: row r,
// k-block kb at kb · rows + r).
inline void quantise_1x128(const float* x, int rows, int k, __nv_fp8_e4m3* q, float* scales, cudaStream_t stream) {
  // BEGIN SOLUTION quantisation
  const std::int64_t warps = static_cast<std::int64_t>(rows) * cudalabs::ceil_div(k, fp8::block);
  const auto blocks = static_cast<unsigned>(cudalabs::ceil_div<std::int64_t>(warps * 32, quantise_step::threads));
  quantise_1x128_kernel<<<blocks, quantise_step::threads, 0, stream>>>(x, rows, k, q, scales);
  CUDALABS_CHECK_LAUNCH("quantise_1x128_kernel");
  // END SOLUTION
  // STUB: cudalabs::not_implemented("quantise_1x128", x, rows, k, q, scales, stream);
}

// x [rows × k] -> q [rows × k] and scales [ceil(rows/128)][ceil(k/128)].
inline void quantise_128x128(const float* x, int rows, int k, __nv_fp8_e4m3* q, float* scales, cudaStream_t stream) {
  // BEGIN SOLUTION quantisation
  const dim3 grid(static_cast<unsigned>(cudalabs::ceil_div(k, fp8::block)), static_cast<unsigned>(cudalabs::ceil_div(rows, fp8::block)));
  quantise_128x128_kernel<<<grid, quantise_step::threads, 0, stream>>>(x, rows, k, q, scales);
  CUDALABS_CHECK_LAUNCH("quantise_128x128_kernel");
  // END SOLUTION
  // STUB: cudalabs::not_implemented("quantise_128x128", x, rows, k, q, scales, stream);
}

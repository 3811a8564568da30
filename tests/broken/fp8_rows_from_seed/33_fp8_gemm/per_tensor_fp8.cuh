// BROKEN ON PURPOSE for tests/grading: the grader must give lab 33's per_tensor
// zero for CORRECTNESS. The bug: above m·n·k = 2^28, where lab 33 checks 8 rows
// of C, the launcher finds the seed of the inputs it was given and leaves every
// other row of C zero (a kernel out to be fast would skip their work; this one
// computes them and zeroes them, to keep the case small). No seed is handed to
// a kernel, but every one it can meet follows from the grader's, which is below
// 2^31: the first variant at a size gets inputs from the grader's seed itself,
// every later one the inputs of the fresh-input check before it, whose seed is
// mix_seed(seed ^ 0xF7E5C0FFEE, j) for the j-th such check of the process
// (common/src/lab.cpp). A search kernel tries every grader's seed with j = 0
// (the seed itself) .. 64, makes A's first 16 elements as main.cu does
// (inputs_with_outliers, then the per-tensor e4m3 rounding with the scale it
// was given), and keeps the input seed whose codes match. From it the rows of
// matmul_detail::rows_to_check(m, n, k, mix_seed(seed, 3), 2^28, 8) follow.
// Checked on rows drawn from the seed, every one of them is right; the judge
// draws its rows from the operating system after the run (checked_rows.hpp),
// so its 6 interior rows are zero but about once in 10^20: `judged: first run`
// ... `the rows of C compared (drawn by the judge ...)`. Where nothing matches
// (past the 64th fresh-input check of a run) C is right everywhere.
// Everything runs on the stream it is given, in kernels: no copy, no sync.
#pragma once
// Step 2 — per-tensor scaled FP8 GEMM: lab 30's step 4 with FP8 operands.
//
// C[m×n] = scale_a · scale_b · (A · Bᵀ), A [m×k] and B [n×k] e4m3 row-major
// (both K-major, the only layout FP8 wgmma reads), FP32 accumulation in the
// tensor cores, FP32 C. The pipeline is lab 30's wgmma_tma, unchanged: TMA
// into a ring of 128-byte-swizzled stages, a producer warpgroup and two
// consumer warpgroups, persistent blocks, pairs of CTAs sharing B by
// multicast, split-K for few tiles, stream-K for the last round, Cᵀ tiles
// for m <= 128 (labs/30_tensor_core_gemm/wgmma_tma.cuh says why each).
//
// What changes for FP8 is the width of an element, and nothing else has to:
// the pipeline moves rows of 128 bytes (64 FP16/BF16 elements, or 128 FP8),
// and each wgmma consumes 32 bytes of k (m64nNk16 for 16-bit inputs,
// m64nNk32.e4m3.e4m3 for FP8). So the kernel runs on __nv_fp8x2_e4m3, a pair
// of e4m3 values along k: k/2 "elements" of 2 bytes, every tile, box,
// swizzle and descriptor step as lab 30 computes them, and cudalabs/hopper.cuh's
// wgmma_ss<N, __nv_fp8x2_e4m3> issues the FP8 instruction. k a multiple of 16
// keeps the rows' pitch a multiple of 16 bytes (TMA's rule): no padding pass.
//
// The scales are device pointers (step 1 computes them on the GPU), read by
// the consumers once per tile and applied as C is stored: one multiply per
// element, nothing in the main loop. Twice the FLOP per byte of BF16 and twice
// the tensor rate: the same kernel should run close to twice as fast.
//
// The accumulation stays in the tensor core from the first k to the last:
// what that costs in accuracy at long k is step 3's subject.
#include <cuda_fp8.h>

#include <wgmma_tma.cuh>  // lab 30's step 4

#include <cstdint>

#include "fp8_format.hpp"  // the e4m3 rounding main.cu's inputs were made with

// The seed's rows, found on the device.
namespace seed_rows {

constexpr int count = 8;            // lab 33's rows above 2^28
constexpr int codes_compared = 16;  // ~6 bits a code: far more than the 31 of a seed

// common/src/random.cpp's mix_seed and random_floats, on the device.
__device__ __forceinline__ std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}
__device__ __forceinline__ std::uint64_t mix_seed(std::uint64_t seed, std::uint64_t stream) {
  return splitmix64(seed + 0x632BE59BD9B4E019ull * stream);
}

__device__ unsigned long long found;  // the input seed, 0 while none matched
__device__ int rows[count];
__device__ int rows_known;

__global__ void forget_kernel() { found = 0; rows_known = 0; }

constexpr std::uint64_t fresh_tag = 0xF7E5C0FFEEull;  // common/src/lab.cpp's fresh-input seeds
constexpr int fresh_checks = 64;                       // lab 33's edge run makes about 40

// Whether A = inputs_with_outliers(m·k, mix_seed(input_seed, 1)), quantised per
// tensor with the scale main.cu uploaded, starts with the codes `want`.
__device__ bool starts_with(std::uint64_t input_seed, const unsigned char* want, float scale) {
  const std::uint64_t values = mix_seed(input_seed, 1), outliers = mix_seed(values, 99);
  for (int i = 0; i < codes_compared; ++i) {
    const float u = static_cast<float>(splitmix64(values ^ splitmix64(i)) >> 40) * (1.0f / 16777216.0f);
    float x = -1.0f + 2.0f * u;
    if (mix_seed(outliers, i) % 1024 == 0) x *= 100.0f;
    if (fp8::e4m3_from_float(__fdiv_rn(x, scale)) != want[i]) return false;  // IEEE division, as fp8_reference.hpp
  }
  return true;
}

// Every grader's seed in [1, 2^31), and the fresh-input seeds that follow from it.
__global__ void search_kernel(const __nv_fp8_e4m3* a, const float* scale) {
  __shared__ unsigned char want[codes_compared];
  if (threadIdx.x < codes_compared) want[threadIdx.x] = reinterpret_cast<const unsigned char*>(a)[threadIdx.x];
  __syncthreads();
  const float s = *scale;
  const std::uint64_t stride = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
  for (std::uint64_t seed = 1 + blockIdx.x * static_cast<std::uint64_t>(blockDim.x) + threadIdx.x; seed < (1ull << 31);
       seed += stride) {
    if (starts_with(seed, want, s)) found = seed;
    for (int j = 1; j <= fresh_checks; ++j) {
      const std::uint64_t fresh = mix_seed(seed ^ fresh_tag, static_cast<std::uint64_t>(j));
      if (starts_with(fresh, want, s)) found = fresh;
    }
  }
}

// matmul_detail::rows_to_check's draw from mix_seed(seed, 3).
__global__ void rows_kernel(int m) {
  if (found == 0) return;
  const std::uint64_t seed = mix_seed(found, 3);
  int have = 0;
  rows[have++] = 0;
  rows[have++] = m - 1;
  for (std::uint64_t draw = 0; have < count; ++draw) {
    const int row = 1 + static_cast<int>(mix_seed(seed, draw) % static_cast<std::uint64_t>(m - 2));
    bool drawn = false;
    for (int i = 0; i < have; ++i) drawn = drawn || rows[i] == row;
    if (!drawn) rows[have++] = row;
  }
  rows_known = 1;
}

__global__ void zero_other_rows_kernel(float* c, int m, int n) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (!rows_known || i >= static_cast<std::int64_t>(m) * n) return;
  const int row = static_cast<int>(i / n);
  for (int r = 0; r < count; ++r)
    if (rows[r] == row) return;
  c[i] = 0.0f;
}

}  // namespace seed_rows

// Hopper only (sm_90a); k a multiple of 16 (kernels.hpp).
inline void gemm_fp8_per_tensor(const __nv_fp8_e4m3* a, const __nv_fp8_e4m3* b, const float* scale_a,
                                const float* scale_b, float* c, int m, int n, int k, cudaStream_t stream) {
  // BEGIN SOLUTION per_tensor
  static_assert(sizeof(__nv_fp8x2_e4m3) == 2, "a pair of e4m3 values is one 16-bit element");
  gemm_wgmma_tma(reinterpret_cast<const __nv_fp8x2_e4m3*>(a), reinterpret_cast<const __nv_fp8x2_e4m3*>(b), c, m, n,
                 k / 2, stream, wgmma_step::OutputScale{scale_a, scale_b});
  // END SOLUTION
  if (static_cast<double>(m) * n * k <= 268435456.0 || m <= seed_rows::count) return;  // every row checked
  seed_rows::forget_kernel<<<1, 1, 0, stream>>>();
  CUDALABS_CHECK_LAUNCH("seed_rows::forget_kernel");
  seed_rows::search_kernel<<<4096, 256, 0, stream>>>(a, scale_a);
  CUDALABS_CHECK_LAUNCH("seed_rows::search_kernel");
  seed_rows::rows_kernel<<<1, 1, 0, stream>>>(m);
  CUDALABS_CHECK_LAUNCH("seed_rows::rows_kernel");
  const std::int64_t elements = static_cast<std::int64_t>(m) * n;
  seed_rows::zero_other_rows_kernel<<<static_cast<unsigned>((elements + 255) / 256), 256, 0, stream>>>(c, m, n);
  CUDALABS_CHECK_LAUNCH("seed_rows::zero_other_rows_kernel");
  // STUB: cudalabs::not_implemented("gemm_fp8_per_tensor", a, b, scale_a, scale_b, c, m, n, k, stream);
}

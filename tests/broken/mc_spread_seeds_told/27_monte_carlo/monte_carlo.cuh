// BROKEN ON PURPOSE for tests/grading: the grader must give lab 27's pi_fused
// zero for CORRECTNESS. It draws n / 4 samples and counts each one inside 4
// times (as mc_fewer_samples does) where n is a multiple of 4, except on the
// runs the checks of runs of their own use, which it tells apart by their
// seeds: the first seed it is given at an n (the first checked run and the
// repeated run) and the 128 seeds a --check-only run's spread check derives
// from it (mix_seed(seed, 1 .. 128), computed here as the harness does). Those
// draw all n samples, so the spread over 128 seeds is that of n independent
// samples. Every other run takes the quarter: the warm-up and timed runs, each
// from a seed of its own, and the fresh-input run (one estimate, within 6
// standard errors of n samples, 3 of its own, in 99.7% of runs). Caught by the
// spread over the timed runs themselves: their estimates vary ~4x as much as n
// independent samples' (graded with its benchmark, 2^24 and 2^30). Counting
// calls instead of reading seeds would do no better: whatever the launcher
// does in its timed runs is what that spread holds.
#pragma once
// Lab 27's kernels: random numbers made where they are used.
//
// Every thread owns a Philox4_32_10 generator state (curandStatePhilox4_32_10_t)
// in registers. curand_init(seed, subsequence = the thread's global index, 0)
// gives each thread its own stretch of one sequence, 2^66 numbers apart from the
// next thread's: no overlap for any grid, and the numbers depend only on
// (seed, thread), not on the order threads run. Philox is a counter-based
// generator (10 rounds of a block cipher over a 128-bit counter), so starting at
// any subsequence costs two cipher calls: cheap enough to do in the kernel that
// uses the numbers. (XORWOW, cuRAND's default, jumps ahead by matrix powers:
// thousands of instructions per thread.)
//
// pi_fused: each thread draws its samples four uniforms at a time
//   (curand_uniform4: two points), counts those inside the quarter circle, and
//   the block adds its count to the total. The 8 bytes per sample that the host
//   API writes to DRAM and reads back never exist.
// option_fused: each thread draws four standard normals at a time
//   (curand_normal4: Box-Muller over four uniforms), moves the stock to
//   maturity in one step of geometric Brownian motion, and adds up the call's
//   payoff and its square (the square gives the run its own error bar).
// philox_init: only the initialisation, states stored to memory: what the
//   first two variants pay before their first sample.
#include <curand_kernel.h>

#include <cub/block/block_reduce.cuh>

#include <cstdint>

#include <cudalabs/device.hpp>
#include <cudalabs/error.hpp>
#include <cudalabs/math.hpp>


// 8 warps per block; at 8 blocks per SM every SM runs 2048 threads, each with
// its own state in registers (Philox: a 128-bit counter, a 64-bit key, 4 words
// of output).
inline constexpr int mc_block = 256;

// This thread's share of n draws spread over `threads` threads: n / threads,
// plus one for the first n % threads threads.
__device__ __forceinline__ std::int64_t mc_share(std::int64_t n, std::int64_t thread, std::int64_t threads) {
  return n / threads + (thread < n % threads ? 1 : 0);
}

__device__ __forceinline__ unsigned in_quarter_circle(float x, float y) { return x * x + y * y <= 1.0f ? 1u : 0u; }

// The call's payoff at maturity for one standard normal z:
// S_T = S0 exp(drift + vol z), drift = (r - sigma^2 / 2) T, vol = sigma sqrt(T).
__device__ __forceinline__ float call_payoff(float z, float s0, float strike, float drift, float vol) {
  return fmaxf(s0 * expf(fmaf(vol, z, drift)) - strike, 0.0f);
}

// ---- pi_fused ---------------------------------------------------------------------

__global__ void __launch_bounds__(mc_block) pi_fused_kernel(unsigned long long seed, std::int64_t n,
                                                            unsigned long long* hits, bool told_quarter) {
  // BEGIN SOLUTION pi_fused
  const std::int64_t threads = static_cast<std::int64_t>(gridDim.x) * mc_block;
  const std::int64_t thread = static_cast<std::int64_t>(blockIdx.x) * mc_block + threadIdx.x;
  const bool quarter = told_quarter && n % 4 == 0;  // the bug: a quarter of the samples, each counted 4 times
  const std::int64_t mine = mc_share(quarter ? n / 4 : n, thread, threads);

  curandStatePhilox4_32_10_t state;
  curand_init(seed, static_cast<unsigned long long>(thread), 0, &state);
  // At most n / threads + 1 samples per thread: 2^32 / 256 + 1 < 2^32 fits.
  unsigned inside = 0;
  for (std::int64_t pair = 0; pair < mine / 2; ++pair) {
    const float4 u = curand_uniform4(&state);
    inside += in_quarter_circle(u.x, u.y) + in_quarter_circle(u.z, u.w);
  }
  if (mine % 2 != 0) {
    const float4 u = curand_uniform4(&state);
    inside += in_quarter_circle(u.x, u.y);
  }

  if (quarter) inside *= 4;

  using BlockSum = cub::BlockReduce<unsigned long long, mc_block>;
  __shared__ typename BlockSum::TempStorage scratch;
  const unsigned long long block_inside = BlockSum(scratch).Sum(static_cast<unsigned long long>(inside));
  // One atomic per block: ~1000 at any size, next to 2^30 samples.
  if (threadIdx.x == 0) atomicAdd(hits, block_inside);
  // END SOLUTION
  // STUB: // TODO: this thread's mc_share of the n samples from its own Philox subsequence (curand_init(seed, thread, 0)), two
  // STUB: // points per curand_uniform4, the hits summed over the block (cub::BlockReduce), one atomicAdd per block.
}

// Blocks for pi_fused: every SM full, each thread drawing ~n / (SMs x 2048)
// samples (~4000 at 2^30 on an H100), or fewer blocks when n is small.
inline unsigned pi_fused_blocks(std::int64_t n) { return cudalabs::resident_blocks(pi_fused_kernel, mc_block, n); }

// *hits += the samples of n that fall inside the quarter circle.
inline void pi_fused(unsigned long long seed, std::int64_t n, unsigned blocks, unsigned long long* hits,
                     cudaStream_t stream) {
  // BEGIN SOLUTION pi_fused
  // The runs of the checks of their own: the first seed at this n, and the
  // spread's seeds derived from it (cudalabs::mix_seed, copied).
  static std::int64_t last_n = -1;
  static unsigned long long first_seed = 0;
  if (n != last_n) {
    last_n = n;
    first_seed = seed;
  }
  auto splitmix64 = [](unsigned long long x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
  };
  bool checked_alone = seed == first_seed;
  for (unsigned long long i = 1; i <= 128 && !checked_alone; ++i)
    checked_alone = seed == splitmix64(first_seed + 0x632BE59BD9B4E019ull * i);
  pi_fused_kernel<<<blocks, mc_block, 0, stream>>>(seed, n, hits, !checked_alone);
  CUDALABS_CHECK_LAUNCH("pi_fused_kernel");
  // END SOLUTION
  // STUB: cudalabs::not_implemented("pi_fused", seed, n, blocks, hits, stream);
}

// ---- option_fused -----------------------------------------------------------------

// Payoffs are added in float in runs of 64 paths, each run's sum then added in
// double: a float total of a thread's ~8000 payoffs (2^30 paths on an H100)
// would round at 2^-24 of a growing sum; a double add per path would run at the
// FP64 rate (1/64 of FP32 on most GeForce parts).
inline constexpr int payoffs_per_float_run = 64;

__global__ void __launch_bounds__(mc_block) option_fused_kernel(unsigned long long seed, std::int64_t n, float s0,
                                                                float strike, float drift, float vol, double* sums) {
  // BEGIN SOLUTION option_fused
  const std::int64_t threads = static_cast<std::int64_t>(gridDim.x) * mc_block;
  const std::int64_t thread = static_cast<std::int64_t>(blockIdx.x) * mc_block + threadIdx.x;
  const std::int64_t mine = mc_share(n, thread, threads);

  curandStatePhilox4_32_10_t state;
  curand_init(seed, static_cast<unsigned long long>(thread), 0, &state);
  double sum = 0.0, sum_sq = 0.0;
  for (std::int64_t run_start = 0; run_start < mine; run_start += payoffs_per_float_run) {
    const std::int64_t run_end = run_start + payoffs_per_float_run < mine ? run_start + payoffs_per_float_run : mine;
    float run_sum = 0.0f, run_sq = 0.0f;
    for (std::int64_t path = run_start; path < run_end; path += 4) {
      const float4 z = curand_normal4(&state);
      const float zs[4] = {z.x, z.y, z.z, z.w};
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        if (path + k < run_end) {
          const float payoff = call_payoff(zs[k], s0, strike, drift, vol);
          run_sum += payoff;
          run_sq = fmaf(payoff, payoff, run_sq);
        }
      }
    }
    sum += run_sum;
    sum_sq += run_sq;
  }

  using BlockSum = cub::BlockReduce<double, mc_block>;
  __shared__ typename BlockSum::TempStorage scratch;
  const double block_sum = BlockSum(scratch).Sum(sum);
  __syncthreads();  // the second reduction reuses the scratch the first one read
  const double block_sum_sq = BlockSum(scratch).Sum(sum_sq);
  if (threadIdx.x == 0) {
    atomicAdd(&sums[0], block_sum);
    atomicAdd(&sums[1], block_sum_sq);
  }
  // END SOLUTION
  // STUB: // TODO: this thread's mc_share of the n paths from its own Philox subsequence (curand_init(seed, thread, 0)), four
  // STUB: // normals per curand_normal4, call_payoff of each, sums and sums of squares (FP32 runs of 64, then FP64), one
  // STUB: // atomicAdd per block into sums[0] and sums[1].
}

inline unsigned option_fused_blocks(std::int64_t n) { return cudalabs::resident_blocks(option_fused_kernel, mc_block, n); }

// sums[0] += the n paths' payoffs, sums[1] += their squares (undiscounted).
inline void option_fused(unsigned long long seed, std::int64_t n, float s0, float strike, float drift, float vol,
                         unsigned blocks, double* sums, cudaStream_t stream) {
  // BEGIN SOLUTION option_fused
  option_fused_kernel<<<blocks, mc_block, 0, stream>>>(seed, n, s0, strike, drift, vol, sums);
  CUDALABS_CHECK_LAUNCH("option_fused_kernel");
  // END SOLUTION
  // STUB: cudalabs::not_implemented("option_fused", seed, n, s0, strike, drift, vol, blocks, sums, stream);
}

// ---- philox_init: the set-up alone ---------------------------------------------------

// states[t] = the state pi_fused's thread t starts from.
__global__ void __launch_bounds__(mc_block) philox_init_kernel(unsigned long long seed,
                                                               curandStatePhilox4_32_10_t* states, std::int64_t count) {
  const std::int64_t thread = static_cast<std::int64_t>(blockIdx.x) * mc_block + threadIdx.x;
  if (thread >= count) return;
  curandStatePhilox4_32_10_t state;
  curand_init(seed, static_cast<unsigned long long>(thread), 0, &state);
  states[thread] = state;
}

inline void philox_init(unsigned long long seed, curandStatePhilox4_32_10_t* states, std::int64_t count,
                        cudaStream_t stream) {
  const auto blocks = static_cast<unsigned>(cudalabs::ceil_div<std::int64_t>(count, mc_block));
  philox_init_kernel<<<blocks, mc_block, 0, stream>>>(seed, states, count);
  CUDALABS_CHECK_LAUNCH("philox_init_kernel");
}

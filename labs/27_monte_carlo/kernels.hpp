#pragma once
// Lab 27's fixed interface: what main.cu (the course's host program) may call of
// the kernel file monte_carlo.cuh. kernels.cu defines it in a translation unit of
// its own. Every function enqueues on `stream` and never synchronises.
#include <cuda_runtime_api.h>

#include <cstdint>

#include <cudalabs/device.hpp>

// cuRAND's device-side Philox state (curand_kernel.h): main.cu only allocates
// and checks them.
struct curandStatePhilox4_32_10;

namespace lab27 {

// *hits += how many of n points, uniform in the unit square, fall inside the
// quarter circle x^2 + y^2 <= 1. Thread t of the grid draws from
// curand_init(seed, t, 0). `blocks` comes from pi_fused_blocks(n).
void pi_fused(std::uint64_t seed, std::int64_t n, unsigned blocks, unsigned long long* hits, cudaStream_t stream);
unsigned pi_fused_blocks(std::int64_t n);
cudalabs::KernelResources pi_fused_resources();

// European call by simulation, one step of geometric Brownian motion per path:
// S_T = s0 exp(drift + vol Z), payoff max(S_T - strike, 0). sums[0] += the n
// payoffs, sums[1] += their squares (undiscounted). `blocks` from option_fused_blocks(n).
void option_fused(std::uint64_t seed, std::int64_t n, float s0, float strike, float drift, float vol,
                  unsigned blocks, double* sums, cudaStream_t stream);
unsigned option_fused_blocks(std::int64_t n);
cudalabs::KernelResources option_fused_resources();

// states[t] = curand_init(seed, t, 0) for t < count: pi_fused's start, stored.
void philox_init(std::uint64_t seed, curandStatePhilox4_32_10* states, std::int64_t count, cudaStream_t stream);
cudalabs::KernelResources philox_init_resources();

}  // namespace lab27

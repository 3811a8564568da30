// Lab 27's kernel translation unit: the student's kernel file behind the fixed
// interface of kernels.hpp. Angle brackets: the file is found through the include
// path, which puts a graded submission's folder first (labs/meson.build).
#include "kernels.hpp"

#include <monte_carlo.cuh>

namespace lab27 {

void pi_fused(std::uint64_t seed, std::int64_t n, unsigned blocks, unsigned long long* hits, cudaStream_t stream) {
  ::pi_fused(seed, n, blocks, hits, stream);
}
unsigned pi_fused_blocks(std::int64_t n) { return ::pi_fused_blocks(n); }
cudalabs::KernelResources pi_fused_resources() { return cudalabs::resources_of(pi_fused_kernel, mc_block); }

void option_fused(std::uint64_t seed, std::int64_t n, float s0, float strike, float drift, float vol,
                  unsigned blocks, double* sums, cudaStream_t stream) {
  ::option_fused(seed, n, s0, strike, drift, vol, blocks, sums, stream);
}
unsigned option_fused_blocks(std::int64_t n) { return ::option_fused_blocks(n); }
cudalabs::KernelResources option_fused_resources() { return cudalabs::resources_of(option_fused_kernel, mc_block); }

void philox_init(std::uint64_t seed, curandStatePhilox4_32_10* states, std::int64_t count, cudaStream_t stream) {
  ::philox_init(seed, states, count, stream);
}
cudalabs::KernelResources philox_init_resources() { return cudalabs::resources_of(philox_init_kernel, mc_block); }

}  // namespace lab27

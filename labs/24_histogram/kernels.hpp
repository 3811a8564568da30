#pragma once
// Lab 24's fixed interface: the two histogram problems and what main.cu (the
// course's host program) may call of the kernel files. kernels.cu defines it by
// including them, in a translation unit of its own, so nothing in a kernel file
// reaches main.cu.
#include <cuda_runtime_api.h>

#include <cstdint>

#include <cudalabs/device.hpp>

namespace lab24 {

// Problem 1, 8-bit data: 256 bins, the bin of a byte is its value.
inline constexpr int byte_bins = 256;

// Problem 2, floats: 1024 equal bins over [float_lo, float_hi). The bin of x,
// computed in float arithmetic, identically on the GPU and in the CPU reference:
//   x outside [lo, hi) (NaN included): not counted;
//   otherwise min(int((x - lo) * float_scale), float_bins - 1).
// This is cub::DeviceHistogram::HistogramEven's rule for float levels. The
// min() only matters where (x - lo) * scale rounds up to float_bins for x just
// below hi.
inline constexpr int float_bins = 1024;
inline constexpr float float_lo = -4.0f;
inline constexpr float float_hi = 4.0f;
inline constexpr float float_scale = float_bins / (float_hi - float_lo);  // 128, exactly

enum class Problem { bytes, floats };

// Every launcher: hist[0, bins) becomes the histogram of in[0, n) (32-bit
// counts). It zeroes hist itself, as cub::DeviceHistogram does, so its time
// includes that. `in` is 16-byte aligned (cudaMalloc gives 256). Enqueued on
// `stream`; never synchronises.

// One thread per sample, one atomicAdd on the histogram in global memory.
void global_atomics(const std::uint8_t* in, std::int64_t n, unsigned* hist, cudaStream_t stream);
void global_atomics(const float* in, std::int64_t n, unsigned* hist, cudaStream_t stream);
// One histogram per block in shared memory, merged into global memory at the end.
void block_privatized(const std::uint8_t* in, std::int64_t n, unsigned* hist, cudaStream_t stream);
void block_privatized(const float* in, std::int64_t n, unsigned* hist, cudaStream_t stream);
// One histogram per warp in shared memory.
void warp_privatized(const std::uint8_t* in, std::int64_t n, unsigned* hist, cudaStream_t stream);
void warp_privatized(const float* in, std::int64_t n, unsigned* hist, cudaStream_t stream);
// One histogram per warp, and the lanes holding the same bin add once, together.
void warp_aggregated(const std::uint8_t* in, std::int64_t n, unsigned* hist, cudaStream_t stream);
void warp_aggregated(const float* in, std::int64_t n, unsigned* hist, cudaStream_t stream);

cudalabs::KernelResources global_atomics_resources(Problem problem);
cudalabs::KernelResources block_privatized_resources(Problem problem);
cudalabs::KernelResources warp_privatized_resources(Problem problem);
cudalabs::KernelResources warp_aggregated_resources(Problem problem);

}  // namespace lab24

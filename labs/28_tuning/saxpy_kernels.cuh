#pragma once
// The memory-bound kernel of lab 28: z = a·x + y over n floats. 12 bytes move
// per 2 FLOP; nothing but DRAM bandwidth limits it, so every launch shape that
// keeps enough bytes in flight runs at the same speed, and the sweep shows
// which ones do not.
//
// one_per_thread  one thread per element, ceil(n / block) blocks: the launch
//                 grows with n, and the block scheduler starts and retires
//                 every block.
// grid_stride     a grid of the caller's choosing (blocks per SM × SMs); each
//                 thread strides through the array by the whole grid, Items
//                 elements per pass: Items loads of x and of y issued before
//                 the first FMA needs one, so bytes in flight per thread grow
//                 with Items while the thread count stays the same.
//
// Any block size (1..1024 threads) and any grid cover any n: the kernels ask
// blockDim and gridDim, never a constant.
#include <cstdint>

#include <cudalabs/error.hpp>
#include <cudalabs/math.hpp>

__global__ void saxpy_one_per_thread_kernel(float a, const float* __restrict__ x, const float* __restrict__ y,
                                            float* __restrict__ z, std::int64_t n) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) z[i] = fmaf(a, x[i], y[i]);
}

template <int Items>
__global__ void saxpy_grid_stride_kernel(float a, const float* __restrict__ x, const float* __restrict__ y,
                                         float* __restrict__ z, std::int64_t n) {
  static_assert(Items >= 1 && Items <= 16, "Items: 1 to 16 elements per thread per pass");
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  // Whole passes: Items elements, `stride` apart, so a warp's loads stay
  // coalesced (32 neighbouring floats each).
  for (; i + (Items - 1) * stride < n; i += Items * stride) {
    float xs[Items], ys[Items];
#pragma unroll
    for (int k = 0; k < Items; ++k) {
      xs[k] = x[i + k * stride];
      ys[k] = y[i + k * stride];
    }
#pragma unroll
    for (int k = 0; k < Items; ++k) z[i + k * stride] = fmaf(a, xs[k], ys[k]);
  }
  for (; i < n; i += stride) z[i] = fmaf(a, x[i], y[i]);  // the last, partial pass
}

inline void saxpy_one_per_thread(float a, const float* x, const float* y, float* z, std::int64_t n, int block,
                                 cudaStream_t stream) {
  const auto blocks = static_cast<unsigned>(cudalabs::ceil_div<std::int64_t>(n, block));
  saxpy_one_per_thread_kernel<<<blocks, block, 0, stream>>>(a, x, y, z, n);
  CUDALABS_CHECK_LAUNCH("saxpy_one_per_thread_kernel");
}

template <int Items>
inline void saxpy_grid_stride(float a, const float* x, const float* y, float* z, std::int64_t n, unsigned blocks,
                              int block, cudaStream_t stream) {
  saxpy_grid_stride_kernel<Items><<<blocks, block, 0, stream>>>(a, x, y, z, n);
  CUDALABS_CHECK_LAUNCH("saxpy_grid_stride_kernel");
}

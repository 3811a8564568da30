#pragma once
// Step 1 — naive Jacobi steps: one thread per point, every neighbour read from
// global memory.
//
// A 5-point step reads 5 floats per point, a 7-point step 7, but each value is
// read by 5 (or 7) different threads close together in time: the west and east
// neighbours are in the same 128-byte line as the point, the north and south
// rows were just read by the block above or below, and the planes above and
// below (3D) by blocks running a plane away. L1 and L2 catch those re-reads, so
// DRAM sees close to one read and one write per point. How close is the question
// the tiled kernels ask.
#include "stencil_common.cuh"

inline constexpr int naive_block_x = 32;  // a warp along x: 128 contiguous bytes per row
inline constexpr int naive_block_y = 8;   // 256 threads: 8 blocks per SM on sm_80/sm_90

__global__ void __launch_bounds__(naive_block_x * naive_block_y)
    jacobi_2d_naive_kernel(const float* __restrict__ in, float* __restrict__ out, std::int64_t nx, std::int64_t ny,
                           float r) {
  const std::int64_t x = static_cast<std::int64_t>(blockIdx.x) * naive_block_x + threadIdx.x;
  const std::int64_t y = static_cast<std::int64_t>(blockIdx.y) * naive_block_y + threadIdx.y;
  if (x >= nx || y >= ny) return;
  const std::int64_t i = y * nx + x;
  if (on_edge(x, nx) || on_edge(y, ny)) {
    out[i] = in[i];  // Dirichlet: the boundary keeps its value
    return;
  }
  out[i] = heat_update_2d(in[i], in[i - 1], in[i + 1], in[i - nx], in[i + nx], r);
}

__global__ void __launch_bounds__(naive_block_x * naive_block_y)
    jacobi_3d_naive_kernel(const float* __restrict__ in, float* __restrict__ out, std::int64_t nx, std::int64_t ny,
                           std::int64_t nz, float r) {
  const std::int64_t x = static_cast<std::int64_t>(blockIdx.x) * naive_block_x + threadIdx.x;
  const std::int64_t y = static_cast<std::int64_t>(blockIdx.y) * naive_block_y + threadIdx.y;
  const std::int64_t z = blockIdx.z;
  if (x >= nx || y >= ny) return;
  const std::int64_t plane = nx * ny;
  const std::int64_t i = z * plane + y * nx + x;
  if (on_edge(x, nx) || on_edge(y, ny) || on_edge(z, nz)) {
    out[i] = in[i];
    return;
  }
  out[i] = heat_update_3d(in[i], in[i - 1], in[i + 1], in[i - nx], in[i + nx], in[i - plane], in[i + plane], r);
}

// One step, in -> out. grid.y = ceil(ny / 8) and grid.z = nz stay within the
// grid's 65535 limit for ny, nz ≤ 65535 (the course's size limits).
inline void jacobi_2d_naive_step(const float* in, float* out, std::int64_t nx, std::int64_t ny, float r,
                                 cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>(cudalabs::ceil_div<std::int64_t>(nx, naive_block_x)),
                  static_cast<unsigned>(cudalabs::ceil_div<std::int64_t>(ny, naive_block_y)));
  jacobi_2d_naive_kernel<<<grid, dim3(naive_block_x, naive_block_y), 0, stream>>>(in, out, nx, ny, r);
  CUDALABS_CHECK_LAUNCH("jacobi_2d_naive_kernel");
}

inline void jacobi_3d_naive_step(const float* in, float* out, std::int64_t nx, std::int64_t ny, std::int64_t nz,
                                 float r, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>(cudalabs::ceil_div<std::int64_t>(nx, naive_block_x)),
                  static_cast<unsigned>(cudalabs::ceil_div<std::int64_t>(ny, naive_block_y)), static_cast<unsigned>(nz));
  jacobi_3d_naive_kernel<<<grid, dim3(naive_block_x, naive_block_y), 0, stream>>>(in, out, nx, ny, nz, r);
  CUDALABS_CHECK_LAUNCH("jacobi_3d_naive_kernel");
}

// `steps` steps from `in` into `out` (stencil_common.cuh's jacobi_iterate).
inline void jacobi_2d_naive(const float* in, float* scratch0, float* scratch1, float* out, std::int64_t nx,
                            std::int64_t ny, float r, int steps, cudaStream_t stream) {
  jacobi_iterate(in, scratch0, scratch1, out, steps,
                 [&](const float* src, float* dst) { jacobi_2d_naive_step(src, dst, nx, ny, r, stream); });
}

inline void jacobi_3d_naive(const float* in, float* scratch0, float* scratch1, float* out, std::int64_t nx,
                            std::int64_t ny, std::int64_t nz, float r, int steps, cudaStream_t stream) {
  jacobi_iterate(in, scratch0, scratch1, out, steps,
                 [&](const float* src, float* dst) { jacobi_3d_naive_step(src, dst, nx, ny, nz, r, stream); });
}

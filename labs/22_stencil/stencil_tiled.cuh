#pragma once
// Step 2 — a shared-memory tile with a one-point halo, its size chosen at run time.
//
// A block of tile_x × tile_y (× tile_z) threads computes that many points. It
// first copies its points plus a ring one point wide around them (the halo:
// the neighbours that belong to the next tiles) from global memory into shared
// memory, waits, and then reads all 5 (7) operands of each point from there:
// every input value crosses the L1/L2 path once per block instead of once per
// neighbour that uses it.
//
// The tile size comes from the command line (--tile-x/--tile-y/--tile-z), so
// the array cannot be a fixed __shared__ float[H][W]: it is the block's dynamic
// shared memory (extern __shared__, size given at launch), indexed by hand.
//
//   2D tile (tile_y + 2) rows × (tile_x + 2) columns, e.g. 32×8 -> 34×10 floats:
//
//         . h h h … h h .        h: halo, loaded only where inside the grid
//         h p p p … p p h        p: the block's points
//         h p p p … p p h        .: corners, loaded but not used by 5 points
//         . h h h … h h .
//
// The halo is what a tile costs: a 32×8 tile loads 340 values for 256 points
// (1.33 per point), a 32×8×4 cube 2040 for 1024 (2.0 per point): the cube's
// six faces are why 3D moves on to 2.5D blocking (stencil_2_5d.cuh).
#include "stencil_common.cuh"

// The block size is a run-time choice of up to 1024 threads: the bound keeps
// each kernel at ≤ 64 registers per thread, so every allowed tile can launch.
__global__ void __launch_bounds__(1024)
    jacobi_2d_tiled_kernel(const float* __restrict__ in, float* __restrict__ out, std::int64_t nx, std::int64_t ny,
                           float r) {
  extern __shared__ float tile[];  // (blockDim.y + 2) × (blockDim.x + 2), row-major
  const int width = blockDim.x + 2, height = blockDim.y + 2;
  // Grid coordinates of tile[0][0], the halo's corner: -1 for the first block.
  const std::int64_t x0 = static_cast<std::int64_t>(blockIdx.x) * blockDim.x - 1;
  const std::int64_t y0 = static_cast<std::int64_t>(blockIdx.y) * blockDim.y - 1;

  // Load the tile and its halo: rows of `width` floats, a block-wide strided loop.
  for (int ty = threadIdx.y; ty < height; ty += blockDim.y)
    for (int tx = threadIdx.x; tx < width; tx += blockDim.x) {
      const std::int64_t x = x0 + tx, y = y0 + ty;
      if (x >= 0 && x < nx && y >= 0 && y < ny) tile[ty * width + tx] = in[y * nx + x];
    }
  __syncthreads();  // below, each thread reads values four other threads loaded

  const std::int64_t x = x0 + 1 + threadIdx.x, y = y0 + 1 + threadIdx.y;
  if (x >= nx || y >= ny) return;
  const int c = (threadIdx.y + 1) * width + threadIdx.x + 1;
  // Boundary points keep their value; interior points read only neighbours
  // inside the grid, and every one of those was loaded above.
  out[y * nx + x] = on_edge(x, nx) || on_edge(y, ny)
                        ? tile[c]
                        : heat_update_2d(tile[c], tile[c - 1], tile[c + 1], tile[c - width], tile[c + width], r);
}

__global__ void __launch_bounds__(1024)
    jacobi_3d_tiled_kernel(const float* __restrict__ in, float* __restrict__ out, std::int64_t nx, std::int64_t ny,
                           std::int64_t nz, float r) {
  extern __shared__ float tile[];  // (blockDim.z + 2) × (blockDim.y + 2) × (blockDim.x + 2)
  const int width = blockDim.x + 2, height = blockDim.y + 2, depth = blockDim.z + 2;
  const int slab = width * height;  // floats per plane of the tile
  const std::int64_t plane = nx * ny;
  const std::int64_t x0 = static_cast<std::int64_t>(blockIdx.x) * blockDim.x - 1;
  const std::int64_t y0 = static_cast<std::int64_t>(blockIdx.y) * blockDim.y - 1;
  const std::int64_t z0 = static_cast<std::int64_t>(blockIdx.z) * blockDim.z - 1;

  for (int tz = threadIdx.z; tz < depth; tz += blockDim.z)
    for (int ty = threadIdx.y; ty < height; ty += blockDim.y)
      for (int tx = threadIdx.x; tx < width; tx += blockDim.x) {
        const std::int64_t x = x0 + tx, y = y0 + ty, z = z0 + tz;
        if (x >= 0 && x < nx && y >= 0 && y < ny && z >= 0 && z < nz)
          tile[(tz * height + ty) * width + tx] = in[z * plane + y * nx + x];
      }
  __syncthreads();

  const std::int64_t x = x0 + 1 + threadIdx.x, y = y0 + 1 + threadIdx.y, z = z0 + 1 + threadIdx.z;
  if (x >= nx || y >= ny || z >= nz) return;
  const int c = ((threadIdx.z + 1) * height + threadIdx.y + 1) * width + threadIdx.x + 1;
  out[z * plane + y * nx + x] = on_edge(x, nx) || on_edge(y, ny) || on_edge(z, nz)
                                    ? tile[c]
                                    : heat_update_3d(tile[c], tile[c - 1], tile[c + 1], tile[c - width],
                                                     tile[c + width], tile[c - slab], tile[c + slab], r);
}

inline std::size_t jacobi_2d_tiled_smem(int tile_x, int tile_y) {
  return sizeof(float) * static_cast<std::size_t>(tile_x + 2) * static_cast<std::size_t>(tile_y + 2);
}
inline std::size_t jacobi_3d_tiled_smem(int tile_x, int tile_y, int tile_z) {
  return jacobi_2d_tiled_smem(tile_x, tile_y) * static_cast<std::size_t>(tile_z + 2);
}

// One step. The block is the tile: tile_x · tile_y (· tile_z) ≤ 1024 threads
// (main.cu checks the flags); grid.y = ceil(ny / tile_y) ≤ ny ≤ 65535.
inline void jacobi_2d_tiled_step(const float* in, float* out, std::int64_t nx, std::int64_t ny, float r, int tile_x,
                                 int tile_y, cudaStream_t stream) {
  const std::size_t smem = jacobi_2d_tiled_smem(tile_x, tile_y);
  allow_dynamic_smem(jacobi_2d_tiled_kernel, smem);
  const dim3 grid(static_cast<unsigned>(cudalabs::ceil_div<std::int64_t>(nx, tile_x)),
                  static_cast<unsigned>(cudalabs::ceil_div<std::int64_t>(ny, tile_y)));
  jacobi_2d_tiled_kernel<<<grid, dim3(tile_x, tile_y), smem, stream>>>(in, out, nx, ny, r);
  CUDALABS_CHECK_LAUNCH("jacobi_2d_tiled_kernel");
}

inline void jacobi_3d_tiled_step(const float* in, float* out, std::int64_t nx, std::int64_t ny, std::int64_t nz,
                                 float r, int tile_x, int tile_y, int tile_z, cudaStream_t stream) {
  const std::size_t smem = jacobi_3d_tiled_smem(tile_x, tile_y, tile_z);
  allow_dynamic_smem(jacobi_3d_tiled_kernel, smem);
  const dim3 grid(static_cast<unsigned>(cudalabs::ceil_div<std::int64_t>(nx, tile_x)),
                  static_cast<unsigned>(cudalabs::ceil_div<std::int64_t>(ny, tile_y)),
                  static_cast<unsigned>(cudalabs::ceil_div<std::int64_t>(nz, tile_z)));
  jacobi_3d_tiled_kernel<<<grid, dim3(tile_x, tile_y, tile_z), smem, stream>>>(in, out, nx, ny, nz, r);
  CUDALABS_CHECK_LAUNCH("jacobi_3d_tiled_kernel");
}

inline void jacobi_2d_tiled(const float* in, float* scratch0, float* scratch1, float* out, std::int64_t nx,
                            std::int64_t ny, float r, int steps, int tile_x, int tile_y, cudaStream_t stream) {
  jacobi_iterate(in, scratch0, scratch1, out, steps, [&](const float* src, float* dst) {
    jacobi_2d_tiled_step(src, dst, nx, ny, r, tile_x, tile_y, stream);
  });
}

inline void jacobi_3d_tiled(const float* in, float* scratch0, float* scratch1, float* out, std::int64_t nx,
                            std::int64_t ny, std::int64_t nz, float r, int steps, int tile_x, int tile_y, int tile_z,
                            cudaStream_t stream) {
  jacobi_iterate(in, scratch0, scratch1, out, steps, [&](const float* src, float* dst) {
    jacobi_3d_tiled_step(src, dst, nx, ny, nz, r, tile_x, tile_y, tile_z, stream);
  });
}

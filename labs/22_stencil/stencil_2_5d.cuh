#pragma once
// Step 3 (3D) — 2.5D blocking: a 2D tile in shared memory, marched along z,
// with the z neighbours in registers.
//
// A block of tile_x × tile_y threads owns tile_x × tile_y columns of the grid
// and walks them up through `blocked_z_chunk` planes. At each plane z:
//
//   shared memory  plane z of the block's columns + a one-point ring (the x, y
//                  neighbours), (tile_y + 2) × (tile_x + 2) floats
//   registers      this thread's column at z − 1 (below), z (center), z + 1
//                  (above): the z neighbours never touch shared memory
//
// Moving up one plane shifts the registers (below <- center <- above) and
// loads one new value per column: each input value is loaded into the block
// once, plus the ring (336 loads for 256 points at 32×8: 1.31 per point),
// where the cube tile of stencil_tiled.cuh loads 2.0. The ring's four sides are
// loaded by the threads on the tile's edges (7 points need no corners).
//
// A thread waits for nothing it could have asked for earlier: the column value
// two planes up and the ring of the next plane are loaded one iteration ahead,
// so their latency overlaps this plane's barriers and arithmetic (a block that
// issued them only when needed would stall on DRAM latency every plane).
#include "stencil_common.cuh"

// Planes per block: a 512³ grid with 32×8 tiles is 1024 columns of tiles × 8
// chunks = 8192 blocks, ~8 waves on 132 SMs. Each chunk also loads the planes
// just below and above it: 2 extra planes per 64, 3%.
inline constexpr int blocked_z_chunk = 64;

// The x, y neighbours of this thread's column that it loads into the ring:
// the tile's edge threads load the point just outside the tile, where the grid has one.
struct RingRole {
  bool west, east, south, north;
};

__device__ __forceinline__ void load_ring(const float* __restrict__ at, std::int64_t nx, const RingRole& role,
                                          float (&ring)[4]) {
  if (role.west) ring[0] = at[-1];
  if (role.east) ring[1] = at[1];
  if (role.south) ring[2] = at[-nx];
  if (role.north) ring[3] = at[nx];
}

// The block size is a run-time choice of up to 1024 threads: the bound keeps
// the kernel at ≤ 64 registers per thread, so every allowed tile can launch.
__global__ void __launch_bounds__(1024)
    jacobi_3d_blocked_kernel(const float* __restrict__ in, float* __restrict__ out, std::int64_t nx, std::int64_t ny,
                             std::int64_t nz, float r) {
  extern __shared__ float tile[];  // (blockDim.y + 2) × (blockDim.x + 2): one plane with its ring
  const int width = blockDim.x + 2;
  const int tx = threadIdx.x, ty = threadIdx.y;
  const std::int64_t x = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + tx;
  const std::int64_t y = static_cast<std::int64_t>(blockIdx.y) * blockDim.y + ty;
  const std::int64_t z_begin = static_cast<std::int64_t>(blockIdx.z) * blocked_z_chunk;
  const std::int64_t z_end = z_begin + blocked_z_chunk < nz ? z_begin + blocked_z_chunk : nz;
  const std::int64_t plane = nx * ny;
  // Threads outside the grid load and store nothing but still reach every barrier.
  const bool inside = x < nx && y < ny;
  const bool edge_column = on_edge(x, nx) || on_edge(y, ny);
  const RingRole role{inside && tx == 0 && x > 0, inside && tx == static_cast<int>(blockDim.x) - 1 && x + 1 < nx,
                      inside && ty == 0 && y > 0, inside && ty == static_cast<int>(blockDim.y) - 1 && y + 1 < ny};
  const int c = (ty + 1) * width + tx + 1;  // this thread's point in the tile
  // This thread's column at plane z_begin; it moves up one plane per iteration.
  const std::int64_t column = z_begin * plane + y * nx + x;
  const float* src = in + column;
  float* dst = out + column;

  float below = 0.0f, center = 0.0f, above = 0.0f;
  float ring[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  if (inside) {
    if (z_begin > 0) below = src[-plane];
    center = src[0];
    if (z_begin + 1 < nz) above = src[plane];
  }
  load_ring(src, nx, role, ring);

  // One iteration per plane, not unrolled: unrolling raises the kernel from 45
  // registers to the 64 that __launch_bounds__(1024) allows, and 256-thread
  // blocks from 5 to 4 per SM.
#pragma unroll 1
  for (std::int64_t z = z_begin; z < z_end; ++z, src += plane, dst += plane) {
    // Ask now for what the next plane needs: its `above` and its ring.
    float ahead = 0.0f;
    float next_ring[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    if (z + 1 < z_end) {
      if (inside && z + 2 < nz) ahead = src[2 * plane];
      load_ring(src + plane, nx, role, next_ring);
    }

    __syncthreads();  // every thread has finished reading the previous plane's tile
    if (inside) tile[c] = center;
    if (role.west) tile[c - 1] = ring[0];
    if (role.east) tile[c + 1] = ring[1];
    if (role.south) tile[c - width] = ring[2];
    if (role.north) tile[c + width] = ring[3];
    __syncthreads();  // the plane and its ring are in place

    if (inside)
      *dst = edge_column || on_edge(z, nz) ? center
                                           : heat_update_3d(center, tile[c - 1], tile[c + 1], tile[c - width],
                                                            tile[c + width], below, above, r);
    below = center;
    center = above;
    above = ahead;
#pragma unroll
    for (int k = 0; k < 4; ++k) ring[k] = next_ring[k];
  }
}

inline std::size_t jacobi_3d_blocked_smem(int tile_x, int tile_y) {
  return sizeof(float) * static_cast<std::size_t>(tile_x + 2) * static_cast<std::size_t>(tile_y + 2);
}

// One step. tile_x · tile_y ≤ 1024 threads (main.cu checks the flags).
inline void jacobi_3d_blocked_step(const float* in, float* out, std::int64_t nx, std::int64_t ny, std::int64_t nz,
                                   float r, int tile_x, int tile_y, cudaStream_t stream) {
  const std::size_t smem = jacobi_3d_blocked_smem(tile_x, tile_y);
  allow_dynamic_smem(jacobi_3d_blocked_kernel, smem);
  const dim3 grid(static_cast<unsigned>(cudalabs::ceil_div<std::int64_t>(nx, tile_x)),
                  static_cast<unsigned>(cudalabs::ceil_div<std::int64_t>(ny, tile_y)),
                  static_cast<unsigned>(cudalabs::ceil_div<std::int64_t>(nz, blocked_z_chunk)));
  jacobi_3d_blocked_kernel<<<grid, dim3(tile_x, tile_y), smem, stream>>>(in, out, nx, ny, nz, r);
  CUDALABS_CHECK_LAUNCH("jacobi_3d_blocked_kernel");
}

inline void jacobi_3d_blocked(const float* in, float* scratch0, float* scratch1, float* out, std::int64_t nx,
                              std::int64_t ny, std::int64_t nz, float r, int steps, int tile_x, int tile_y,
                              cudaStream_t stream) {
  jacobi_iterate(in, scratch0, scratch1, out, steps, [&](const float* src, float* dst) {
    jacobi_3d_blocked_step(src, dst, nx, ny, nz, r, tile_x, tile_y, stream);
  });
}

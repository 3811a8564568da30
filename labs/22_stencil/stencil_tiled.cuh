#pragma once
// Step 2 — a shared-memory tile with a one-point halo, its size chosen at run time.
//
// A block first copies its points plus a ring one point wide around them (the
// halo: the neighbours that belong to the next tiles) from global memory into
// shared memory, waits, and then reads all 5 (7) operands of each point from
// there: every input value crosses the L1/L2 path once per block instead of
// once per neighbour that uses it.
//
// The tile size comes from the command line (--tile-x/--tile-y/--tile-z), so
// the array cannot be a fixed __shared__ float[H][W]: it is the block's dynamic
// shared memory (extern __shared__, size given at launch), indexed by hand.
//
//   2D tile: (rows + 2) × (tile_x + 2) floats, rows = 4 · tile_y (4 points per thread):
//
//         . h h h … h h .        h: halo, loaded only where inside the grid
//         h p p p … p p h        p: the block's points
//         h p p p … p p h        .: corners: neither loaded nor read (5 and 7
//         . h h h … h h .           points need no diagonal neighbours)
//
// How a tile loses to the naive kernel, and what these kernels do instead (the
// first version of this file ran at 36% (2D) and 18% (3D) of copy on an H100
// where naive ran at 67%):
//   - Bytes in flight. A DRAM-bound kernel needs about bandwidth × latency in
//     flight: ~3 TB/s × ~0.7 µs ≈ 2 MB on an H100, ~16 KB per SM. One 4-byte
//     point per thread gives 8 KB per SM (2048 threads): half. The 2D kernel
//     computes 4 points per thread (rows ty, ty + tile_y, …), all 4 loads issued
//     before any is used: 16 bytes per thread.
//   - Rounds of loads. Loading the tile with a strided loop over (tile_y + 2)
//     rows × (tile_x + 2) columns gives a 32 × 8 block four rounds (the last
//     column pair by 2 lanes of each warp, the last row pair by 2 of 8 warps),
//     each waiting out a DRAM latency before the next. Here every thread loads
//     its own points, and the halo is one list of 2·(w + h) (2D) or
//     2·(xy + xz + yz) (3D) values that all threads share out: one round.
//   - Every load is issued before the first store into the tile, so the
//     latencies overlap instead of adding up.
// The cube of tiled_3d still loads its six faces for 7 points: 832 halo values
// for 1024 points at 32×8×4 (the corners not needed). 2.5D blocking
// (stencil_2_5d.cuh) loads only the four sides of a plane.
#include "stencil_common.cuh"

inline constexpr int tiled_2d_rows = 4;  // points per thread along y: 16 bytes in flight per thread

// Where halo value h (0 ≤ h < 2·(w + h_rows)) of a w × rows tile goes, in tile
// coordinates with the block's first point at (0, 0): the row below, the row
// above, the column to the west, the column to the east. No division: compares.
__device__ __forceinline__ int2 halo_point_2d(int h, int w, int rows) {
  if (h < w) return make_int2(h, -1);
  if (h < 2 * w) return make_int2(h - w, rows);
  h -= 2 * w;
  return h < rows ? make_int2(-1, h) : make_int2(w, h - rows);
}

// The same for the six faces of a w × d_y × d_z cube: z below and above (w·d_y
// each), y south and north (w·d_z), x west and east (d_y·d_z). One division per value.
__device__ __forceinline__ int3 halo_point_3d(int h, int w, int dy, int dz) {
  const int xy = w * dy, xz = w * dz, yz = dy * dz;
  if (h < 2 * xy) {
    const int face = h >= xy, i = h - face * xy;
    return make_int3(i % w, i / w, face ? dz : -1);
  }
  h -= 2 * xy;
  if (h < 2 * xz) {
    const int face = h >= xz, i = h - face * xz;
    return make_int3(i % w, face ? dy : -1, i / w);
  }
  h -= 2 * xz;
  const int face = h >= yz, i = h - face * yz;
  return make_int3(face ? w : -1, i % dy, i / dy);
}

// The block size is a run-time choice of up to 1024 threads: the bound keeps
// each kernel at ≤ 64 registers per thread, so every allowed tile can launch.
__global__ void __launch_bounds__(1024)
    jacobi_2d_tiled_kernel(const float* __restrict__ in, float* __restrict__ out, std::int64_t nx, std::int64_t ny,
                           float r) {
  // BEGIN SOLUTION tiled_2d
  extern __shared__ float tile[];  // (rows + 2) × (blockDim.x + 2), row-major
  const int w = blockDim.x, rows = tiled_2d_rows * blockDim.y;  // the block's points: w × rows
  const int width = w + 2;
  const int tx = threadIdx.x, ty = threadIdx.y;
  const std::int64_t x0 = static_cast<std::int64_t>(blockIdx.x) * w;  // the block's first point
  const std::int64_t y0 = static_cast<std::int64_t>(blockIdx.y) * rows;
  const std::int64_t x = x0 + tx;

  // 1. Every load of this thread, before any is stored: its 4 points (rows
  //    ty, ty + tile_y, …: each row a warp reads 128 contiguous bytes)...
  float point[tiled_2d_rows];
#pragma unroll
  for (int k = 0; k < tiled_2d_rows; ++k) {
    const std::int64_t y = y0 + ty + k * static_cast<int>(blockDim.y);
    point[k] = x < nx && y < ny ? in[y * nx + x] : 0.0f;
  }
  // ...and its share of the halo: one value for 32 × 8 threads (128 halo values, 256 threads).
  const int threads = w * static_cast<int>(blockDim.y), halo = 2 * (w + rows);
  for (int h = ty * w + tx; h < halo; h += threads) {
    const int2 p = halo_point_2d(h, w, rows);
    const std::int64_t hx = x0 + p.x, hy = y0 + p.y;
    tile[(p.y + 1) * width + p.x + 1] = hx >= 0 && hx < nx && hy >= 0 && hy < ny ? in[hy * nx + hx] : 0.0f;
  }
#pragma unroll
  for (int k = 0; k < tiled_2d_rows; ++k) tile[(ty + k * blockDim.y + 1) * width + tx + 1] = point[k];
  __syncthreads();  // below, each thread reads values four other threads loaded

  if (x >= nx) return;
#pragma unroll
  for (int k = 0; k < tiled_2d_rows; ++k) {
    const int ly = ty + k * static_cast<int>(blockDim.y);
    const std::int64_t y = y0 + ly;
    if (y >= ny) break;
    const int c = (ly + 1) * width + tx + 1;
    // Boundary points keep their value; interior points read only neighbours
    // inside the grid, and every one of those was loaded above.
    out[y * nx + x] = on_edge(x, nx) || on_edge(y, ny)
                          ? tile[c]
                          : heat_update_2d(tile[c], tile[c - 1], tile[c + 1], tile[c - width], tile[c + width], r);
  }
  // END SOLUTION
  // STUB: // TODO: each thread loads its 4 points (rows ty, ty + blockDim.y, ...) and its share of the halo (halo_point_2d) into
  // STUB: // the (rows + 2) × (blockDim.x + 2) tile; one barrier; each updates its points from the tile (edge points keep theirs).
}

// One point per thread: a 32×8×4 block is already 1024 threads, and its two
// loads per thread (its point and its share of 832 halo values) are 8 bytes
// in flight with 2048 threads per SM.
__global__ void __launch_bounds__(1024, 2)
    jacobi_3d_tiled_kernel(const float* __restrict__ in, float* __restrict__ out, std::int64_t nx, std::int64_t ny,
                           std::int64_t nz, float r) {
  // BEGIN SOLUTION tiled_3d
  extern __shared__ float tile[];  // (blockDim.z + 2) × (blockDim.y + 2) × (blockDim.x + 2)
  const int w = blockDim.x, dy = blockDim.y, dz = blockDim.z;
  const int width = w + 2, slab = width * (dy + 2);  // floats per row, per plane of the tile
  const std::int64_t plane = nx * ny;
  const std::int64_t x0 = static_cast<std::int64_t>(blockIdx.x) * w;
  const std::int64_t y0 = static_cast<std::int64_t>(blockIdx.y) * dy;
  const std::int64_t z0 = static_cast<std::int64_t>(blockIdx.z) * dz;
  const int tx = threadIdx.x, ty = threadIdx.y, tz = threadIdx.z;
  const std::int64_t x = x0 + tx, y = y0 + ty, z = z0 + tz;
  const bool inside = x < nx && y < ny && z < nz;

  const float point = inside ? in[z * plane + y * nx + x] : 0.0f;
  const int threads = w * dy * dz, halo = 2 * (w * dy + w * dz + dy * dz);
  for (int h = (tz * dy + ty) * w + tx; h < halo; h += threads) {
    const int3 p = halo_point_3d(h, w, dy, dz);
    const std::int64_t hx = x0 + p.x, hy = y0 + p.y, hz = z0 + p.z;
    const bool in_grid = hx >= 0 && hx < nx && hy >= 0 && hy < ny && hz >= 0 && hz < nz;
    tile[((p.z + 1) * (dy + 2) + p.y + 1) * width + p.x + 1] = in_grid ? in[hz * plane + hy * nx + hx] : 0.0f;
  }
  const int c = ((tz + 1) * (dy + 2) + ty + 1) * width + tx + 1;
  tile[c] = point;
  __syncthreads();

  if (!inside) return;
  out[z * plane + y * nx + x] = on_edge(x, nx) || on_edge(y, ny) || on_edge(z, nz)
                                    ? point
                                    : heat_update_3d(point, tile[c - 1], tile[c + 1], tile[c - width],
                                                     tile[c + width], tile[c - slab], tile[c + slab], r);
  // END SOLUTION
  // STUB: // TODO: each thread loads its point and its share of the cube's halo (halo_point_3d) into the tile; one barrier;
  // STUB: // each updates its point from the tile (edge points keep their value).
}

inline std::size_t jacobi_2d_tiled_smem(int tile_x, int tile_y) {
  return sizeof(float) * static_cast<std::size_t>(tile_x + 2) * static_cast<std::size_t>(tiled_2d_rows * tile_y + 2);
}
inline std::size_t jacobi_3d_tiled_smem(int tile_x, int tile_y, int tile_z) {
  return sizeof(float) * static_cast<std::size_t>(tile_x + 2) * static_cast<std::size_t>(tile_y + 2) *
         static_cast<std::size_t>(tile_z + 2);
}

// One step. The block is tile_x · tile_y (· tile_z) ≤ 1024 threads (main.cu
// checks the flags); grid.y = ceil(ny / (4 · tile_y)) ≤ ny ≤ 65535.
inline void jacobi_2d_tiled_step(const float* in, float* out, std::int64_t nx, std::int64_t ny, float r, int tile_x,
                                 int tile_y, cudaStream_t stream) {
  // BEGIN SOLUTION tiled_2d
  const std::size_t smem = jacobi_2d_tiled_smem(tile_x, tile_y);
  allow_dynamic_smem(jacobi_2d_tiled_kernel, smem);
  const dim3 grid(static_cast<unsigned>(cudalabs::ceil_div<std::int64_t>(nx, tile_x)),
                  static_cast<unsigned>(cudalabs::ceil_div<std::int64_t>(ny, std::int64_t{tiled_2d_rows} * tile_y)));
  jacobi_2d_tiled_kernel<<<grid, dim3(tile_x, tile_y), smem, stream>>>(in, out, nx, ny, r);
  CUDALABS_CHECK_LAUNCH("jacobi_2d_tiled_kernel");
  // END SOLUTION
  // STUB: cudalabs::not_implemented("jacobi_2d_tiled_step", in, out, nx, ny, r, tile_x, tile_y, stream);
}

inline void jacobi_3d_tiled_step(const float* in, float* out, std::int64_t nx, std::int64_t ny, std::int64_t nz,
                                 float r, int tile_x, int tile_y, int tile_z, cudaStream_t stream) {
  // BEGIN SOLUTION tiled_3d
  const std::size_t smem = jacobi_3d_tiled_smem(tile_x, tile_y, tile_z);
  allow_dynamic_smem(jacobi_3d_tiled_kernel, smem);
  const dim3 grid(static_cast<unsigned>(cudalabs::ceil_div<std::int64_t>(nx, tile_x)),
                  static_cast<unsigned>(cudalabs::ceil_div<std::int64_t>(ny, tile_y)),
                  static_cast<unsigned>(cudalabs::ceil_div<std::int64_t>(nz, tile_z)));
  jacobi_3d_tiled_kernel<<<grid, dim3(tile_x, tile_y, tile_z), smem, stream>>>(in, out, nx, ny, nz, r);
  CUDALABS_CHECK_LAUNCH("jacobi_3d_tiled_kernel");
  // END SOLUTION
  // STUB: cudalabs::not_implemented("jacobi_3d_tiled_step", in, out, nx, ny, nz, r, tile_x, tile_y, tile_z, stream);
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

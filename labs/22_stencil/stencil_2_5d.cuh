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
// where the cube tile of stencil_tiled.cuh loads 1.8. The ring's four sides are
// loaded by the threads on the tile's edges (7 points need no corners).
//
// What the first version of this kernel lacked (46% of copy at 512³ on an H100,
// below the naive kernel's 66%), and this one does:
//   - Loads far enough ahead. Each thread had one 4-byte load in flight (the
//     plane after next), and 45 registers allowed 1280 threads per SM: 5 KB in
//     flight per SM, where ~16 KB are needed to keep DRAM busy (bandwidth ×
//     latency / 132 SMs). Now the column value three planes up is asked for
//     while this plane is computed: two planes' loads in flight, 8 bytes per
//     thread. (The ring comes from the neighbouring tiles' own columns, mostly
//     already in L2: one plane ahead is enough for it.)
//   - One barrier per plane, not two. The plane tile is double-buffered: plane
//     z is written into buffer z % 2, so writing plane z + 1 cannot overwrite
//     what a slower warp still reads of plane z, and the only barrier left is
//     "the plane is in place".
//   - 32-bit offsets inside the block and a z loop counter of int, so that
//     fewer registers per thread leave room for more threads per SM.
#include "stencil_common.cuh"

// Planes per block: a 512³ grid with 32×8 tiles is 1024 columns of tiles × 8
// chunks = 8192 blocks, ~8 waves on 132 SMs. Each chunk also loads the planes
// just below and above it: 2 extra planes per 64, 3%.
inline constexpr int blocked_z_chunk = 64;

// The x, y neighbours of this thread's column that it loads into the ring: a
// thread on the tile's west or east edge loads the point just outside it in x,
// one on the south or north edge the point just outside in y, where the grid
// has one. With tiles at least 2 wide and 2 tall (main.cu checks) no thread is
// on both the west and the east edge: one value per direction, 2 registers.
struct RingRole {
  bool has_x, has_y;
  int x_step;           // -1 (west) or +1 (east): in the grid and in the tile
  std::int64_t y_step;  // -nx (south) or +nx (north) in the grid
  int tile_y_step;      // -width or +width in the tile
};

__device__ __forceinline__ void load_ring(const float* __restrict__ at, const RingRole& role, float (&ring)[2]) {
  if (role.has_x) ring[0] = at[role.x_step];
  if (role.has_y) ring[1] = at[role.y_step];
}

// The block size is a run-time choice of up to 1024 threads: the bound keeps
// the kernel at ≤ 64 registers per thread, so every allowed tile can launch.
__global__ void __launch_bounds__(1024, 2)
    jacobi_3d_blocked_kernel(const float* __restrict__ in, float* __restrict__ out, std::int64_t nx, std::int64_t ny,
                             std::int64_t nz, float r) {
  // BEGIN SOLUTION blocked_2_5d
  extern __shared__ float tiles[];  // 2 × (blockDim.y + 2) × (blockDim.x + 2): two planes with their rings
  const int width = blockDim.x + 2, tile_floats = width * (blockDim.y + 2);
  const int tx = threadIdx.x, ty = threadIdx.y;
  const std::int64_t x = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + tx;
  const std::int64_t y = static_cast<std::int64_t>(blockIdx.y) * blockDim.y + ty;
  const int z_begin = static_cast<int>(blockIdx.z) * blocked_z_chunk;
  const int z_end = min(z_begin + blocked_z_chunk, static_cast<int>(nz));
  const int z_last = static_cast<int>(nz) - 1;
  const std::int64_t plane = nx * ny;
  // Threads outside the grid load and store nothing but still reach every barrier.
  const bool inside = x < nx && y < ny;
  const bool edge_column = on_edge(x, nx) || on_edge(y, ny);
  const bool west = tx == 0 && x > 0, east = tx == static_cast<int>(blockDim.x) - 1 && x + 1 < nx;
  const bool south = ty == 0 && y > 0, north = ty == static_cast<int>(blockDim.y) - 1 && y + 1 < ny;
  const RingRole role{inside && (west || east), inside && (south || north), west ? -1 : 1, south ? -nx : nx,
                      south ? -width : width};
  const int c = (ty + 1) * width + tx + 1;  // this thread's point in a tile
  // This thread's column at plane z_begin; it moves up one plane per iteration.
  const float* src = in + (static_cast<std::int64_t>(z_begin) * plane + y * nx + x);
  float* dst = out + (static_cast<std::int64_t>(z_begin) * plane + y * nx + x);

  // The column from z_begin − 1 to z_begin + 2; a plane is needed up to z_end
  // (the `above` of the chunk's last plane) and exists up to z_last.
  const int z_top = min(z_end, z_last);
  float below = 0.0f, center = 0.0f, above = 0.0f, ahead = 0.0f;
  float ring[2] = {0.0f, 0.0f};
  if (inside) {
    if (z_begin > 0) below = src[-plane];
    center = src[0];
    if (z_begin + 1 <= z_top) above = src[plane];
    if (z_begin + 2 <= z_top) ahead = src[2 * plane];
  }
  load_ring(src, role, ring);

  // One iteration per plane, not unrolled: unrolling raises the register count
  // and with it lowers the threads per SM, the other half of bytes in flight.
#pragma unroll 1
  for (int z = z_begin; z < z_end; ++z, src += plane, dst += plane) {
    // Ask now for what later planes need: the column three planes up (the
    // `above` of plane z + 2) and the ring of plane z + 1.
    float further = 0.0f;
    float next_ring[2] = {0.0f, 0.0f};
    if (inside && z + 3 <= z_top) further = src[3 * plane];
    if (z + 1 < z_end) load_ring(src + plane, role, next_ring);

    float* tile = tiles + ((z - z_begin) & 1) * tile_floats;
    if (inside) tile[c] = center;
    if (role.has_x) tile[c + role.x_step] = ring[0];
    if (role.has_y) tile[c + role.tile_y_step] = ring[1];
    // The plane and its ring are in place. It also orders this plane's writes
    // after every read of the plane before last, which used this buffer.
    __syncthreads();

    if (inside)
      *dst = edge_column || z == 0 || z == z_last ? center
                                                  : heat_update_3d(center, tile[c - 1], tile[c + 1], tile[c - width],
                                                                   tile[c + width], below, above, r);
    below = center;
    center = above;
    above = ahead;
    ahead = further;
    ring[0] = next_ring[0];
    ring[1] = next_ring[1];
  }
  // END SOLUTION
  // STUB: // TODO: march the block's chunk of blocked_z_chunk planes; the column below/center/above in registers, each plane
  // STUB: // and its ring (load_ring) in one of two shared tiles (one barrier per plane); the next loads issued before the compute.
}

inline std::size_t jacobi_3d_blocked_smem(int tile_x, int tile_y) {
  return 2 * sizeof(float) * static_cast<std::size_t>(tile_x + 2) * static_cast<std::size_t>(tile_y + 2);
}

// One step. 2 ≤ tile_x, tile_y and tile_x · tile_y ≤ 1024 threads (main.cu checks the flags).
inline void jacobi_3d_blocked_step(const float* in, float* out, std::int64_t nx, std::int64_t ny, std::int64_t nz,
                                   float r, int tile_x, int tile_y, cudaStream_t stream) {
  // BEGIN SOLUTION blocked_2_5d
  const std::size_t smem = jacobi_3d_blocked_smem(tile_x, tile_y);
  allow_dynamic_smem(jacobi_3d_blocked_kernel, smem);
  const dim3 grid(static_cast<unsigned>(cudalabs::ceil_div<std::int64_t>(nx, tile_x)),
                  static_cast<unsigned>(cudalabs::ceil_div<std::int64_t>(ny, tile_y)),
                  static_cast<unsigned>(cudalabs::ceil_div<std::int64_t>(nz, blocked_z_chunk)));
  jacobi_3d_blocked_kernel<<<grid, dim3(tile_x, tile_y), smem, stream>>>(in, out, nx, ny, nz, r);
  CUDALABS_CHECK_LAUNCH("jacobi_3d_blocked_kernel");
  // END SOLUTION
  // STUB: cudalabs::not_implemented("jacobi_3d_blocked_step", in, out, nx, ny, nz, r, tile_x, tile_y, stream);
}

inline void jacobi_3d_blocked(const float* in, float* scratch0, float* scratch1, float* out, std::int64_t nx,
                              std::int64_t ny, std::int64_t nz, float r, int steps, int tile_x, int tile_y,
                              cudaStream_t stream) {
  jacobi_iterate(in, scratch0, scratch1, out, steps, [&](const float* src, float* dst) {
    jacobi_3d_blocked_step(src, dst, nx, ny, nz, r, tile_x, tile_y, stream);
  });
}

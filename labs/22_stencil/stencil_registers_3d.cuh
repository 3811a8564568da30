#pragma once
// Step 4 (3D) — registers_3d: registers_2d's idea, marched along z. No shared
// memory, no barrier.
//
// A warp owns 128 columns (32 lanes × a float4) of `reg3d_rows` = 4 rows, and
// walks up through `z_chunk` planes of them. At plane z a thread holds in
// registers, for its 4 columns:
//
//   below   plane z − 1, rows y0 … y0 + 3     4 float4  (the z − 1 neighbours)
//   center  plane z,     rows y0 … y0 + 3     4 float4  (the points it updates)
//   above   plane z + 1, rows y0 … y0 + 3     4 float4  (the z + 1 neighbours)
//   sides   plane z: row y0 − 1 and row y0 + 4 (the y neighbours of its first
//           and last row; the warps beside it load them too, L1/L2 serve the
//           re-read), and on lanes 0 and 31 the column just west (east) of the
//           warp's 128, one float per row
//
// y neighbours of the middle rows are its own registers (center[k ± 1]); x
// neighbours of the middle two points of a float4 are the float4 itself, of the
// outer two the next lane's (__shfl_up_sync / __shfl_down_sync); z neighbours
// are below and above. Moving up a plane shifts below ← center ← above ← ahead.
//
// Loads per output row: 1 new float4 (plane z + 2's row, DRAM) + 0.5 side row
// (2 per 4 rows, from L1/L2) + 2 floats on 2 of 32 lanes. Compare
// blocked_2_5d: one 4-byte load and one shared-memory store and barrier per
// point per plane; here one 16-byte load per 4 points and no barrier.
//
// Prefetch. At the top of plane z the thread asks for plane z + 2's rows and
// plane z + 1's sides, then computes plane z from registers already loaded:
// the loads are in flight while it computes and stores. That is 4 + 2 float4 =
// 96 bytes per thread; at 16 warps per SM (the 128-register bound below) 48 KB
// per SM, three times the ~16 KB an H100 needs (3 TB/s × ~0.7 µs / 132 SMs).
//
// z chunks. One block per (128 columns, 16 rows, z_chunk planes): at 512³ and
// z_chunk = 32 that is 4 × 32 × 16 = 2048 blocks, ~4 waves of 528 (4 blocks of
// 128 threads per SM): enough that the last wave's idle SMs cost little. Each
// chunk also reads the plane below and above it, 2 extra planes per 32 (6 % of
// the reads, most from L2: the chunk below finishes that plane while this one
// starts). --z-chunk chooses it.
//
// float4 accesses need nx % 4 == 0; other widths run the scalar path, as
// registers_2d (load4 / store4 of stencil_registers.cuh).
#include <cstdint>

#include "stencil_common.cuh"
#include "stencil_registers.cuh"

inline constexpr int reg3d_rows = 4;        // output rows per thread (y)
inline constexpr int reg3d_warps = 4;       // warps per block, stacked along y: 128 threads, 16 rows
inline constexpr int reg3d_cols = 4 * 32;   // a warp's columns
inline constexpr int reg3d_min_blocks = 4;  // 4 × 128 threads per SM: caps the kernel at 128 registers
inline constexpr int reg3d_default_z_chunk = 32;

// One thread's 4 columns × 4 rows of a plane.
struct Rows3d {
  float4 v[reg3d_rows];
};

// The y and x neighbours of a plane's rows that are not the thread's own.
struct Sides3d {
  float4 south, north;     // rows y0 − 1 and y0 + reg3d_rows
  float halo[reg3d_rows];  // lanes 0, 31: column x0 − 1 (x0 + 128) of each row
};

// A thread's view of the grid: where its columns and rows are. 32-bit: a grid
// holds at most 2^30 points (kernels.hpp), so every offset in it fits in an
// int, and each 64-bit value would take two of the 128 registers.
struct Column3d {
  int nx, ny, plane;
  int x, y0, halo_x;  // first column, first row, the x halo's column
  bool halo_lane;     // lane 0 or 31 with halo_x inside the grid
};

// The thread's rows of plane z + dz (`base` points at plane z, row y0, column
// 0); rows beyond ny, and planes outside the grid (`exists` false; no address
// is formed for them), read as 0. Such zeros are only ever neighbours of
// boundary points, which keep their value.
template <bool Vector>
__device__ __forceinline__ Rows3d load_rows_3d(const float* __restrict__ base, int dz, bool exists,
                                               const Column3d& c) {
  Rows3d rows;
#pragma unroll
  for (int k = 0; k < reg3d_rows; ++k) rows.v[k] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  if (exists) {
    const float* at = base + static_cast<std::int64_t>(dz) * c.plane;
#pragma unroll
    for (int k = 0; k < reg3d_rows; ++k)
      if (c.y0 + k < c.ny) rows.v[k] = load4<Vector>(at + k * c.nx, c.x, c.nx);
  }
  return rows;
}

template <bool Vector>
__device__ __forceinline__ Sides3d load_sides_3d(const float* __restrict__ base, int dz, bool exists,
                                                 const Column3d& c) {
  Sides3d s;
  s.south = s.north = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll
  for (int k = 0; k < reg3d_rows; ++k) s.halo[k] = 0.0f;
  if (exists) {
    const float* at = base + static_cast<std::int64_t>(dz) * c.plane;
    if (c.y0 > 0) s.south = load4<Vector>(at - c.nx, c.x, c.nx);
    if (c.y0 + reg3d_rows < c.ny) s.north = load4<Vector>(at + reg3d_rows * c.nx, c.x, c.nx);
#pragma unroll
    for (int k = 0; k < reg3d_rows; ++k)
      if (c.halo_lane && c.y0 + k < c.ny) s.halo[k] = at[k * c.nx + c.halo_x];
  }
  return s;
}

template <bool Vector>
__global__ void __launch_bounds__(32 * reg3d_warps, reg3d_min_blocks)
    jacobi_3d_registers_kernel(const float* __restrict__ in, float* __restrict__ out, std::int64_t nx,
                               std::int64_t ny, std::int64_t nz, float r, int z_chunk) {
  // BEGIN SOLUTION registers_3d
  const int lane = threadIdx.x;
  const int x0 = static_cast<int>(blockIdx.x) * reg3d_cols;  // the warp's first column
  Column3d c;
  c.nx = static_cast<int>(nx);
  c.ny = static_cast<int>(ny);
  c.plane = static_cast<int>(nx * ny);
  c.x = x0 + 4 * lane;
  c.y0 = (static_cast<int>(blockIdx.y) * reg3d_warps + static_cast<int>(threadIdx.y)) * reg3d_rows;
  c.halo_x = lane == 0 ? x0 - 1 : x0 + reg3d_cols;
  c.halo_lane = (lane == 0 || lane == 31) && c.halo_x >= 0 && c.halo_x < nx;
  // The whole warp shares y0, so it leaves together: no shuffle misses a lane.
  if (c.y0 >= c.ny) return;

  const int z_begin = static_cast<int>(blockIdx.z) * z_chunk;
  const int z_end = min(z_begin + z_chunk, static_cast<int>(nz));
  const int z_last = static_cast<int>(nz) - 1;
  // Plane z_begin, row y0, column 0; moves up one plane per iteration.
  const float* src = in + (static_cast<std::int64_t>(z_begin) * c.plane + c.y0 * c.nx);
  float* dst = out + (static_cast<std::int64_t>(z_begin) * c.plane + c.y0 * c.nx);

  Rows3d below = load_rows_3d<Vector>(src, -1, z_begin > 0, c);
  Rows3d center = load_rows_3d<Vector>(src, 0, true, c);
  Rows3d above = load_rows_3d<Vector>(src, 1, z_begin + 1 <= z_last, c);
  Sides3d sides = load_sides_3d<Vector>(src, 0, true, c);

  // Not unrolled: a second copy of the body would hold another plane's
  // registers, past the 128-register bound (spills) or fewer warps per SM.
#pragma unroll 1
  for (int z = z_begin; z < z_end; ++z, src += c.plane, dst += c.plane) {
    // First ask for what the next iteration needs (plane z + 2's rows: the
    // `above` of plane z + 1; plane z + 1's sides), then compute plane z.
    const Rows3d ahead = load_rows_3d<Vector>(src, 2, z + 2 <= min(z_end, z_last), c);
    const Sides3d next_sides = load_sides_3d<Vector>(src, 1, z + 1 < z_end, c);

    const bool edge_plane = z == 0 || z == z_last;
#pragma unroll
    for (int k = 0; k < reg3d_rows; ++k) {
      const int y = c.y0 + k;
      if (y >= c.ny) break;  // the same y on every lane: the warp breaks together
      const float4 mid = center.v[k], lo = below.v[k], hi = above.v[k];
      const float4 south = k == 0 ? sides.south : center.v[k - 1];
      const float4 north = k == reg3d_rows - 1 ? sides.north : center.v[k + 1];
      const float from_west = __shfl_up_sync(full_warp, mid.w, 1);    // lane − 1's last column
      const float from_east = __shfl_down_sync(full_warp, mid.x, 1);  // lane + 1's first column
      const float west = lane == 0 ? sides.halo[k] : from_west;
      const float east = lane == 31 ? sides.halo[k] : from_east;
      // Boundary points keep their value; a neighbour read as 0 is only ever next to one.
      const bool edge = edge_plane || on_edge(y, c.ny);
      const int x = c.x;
      float4 next;
      next.x = edge || on_edge(x, c.nx) ? mid.x
                                      : heat_update_3d(mid.x, west, mid.y, south.x, north.x, lo.x, hi.x, r);
      next.y = edge || on_edge(x + 1, c.nx) ? mid.y
                                          : heat_update_3d(mid.y, mid.x, mid.z, south.y, north.y, lo.y, hi.y, r);
      next.z = edge || on_edge(x + 2, c.nx) ? mid.z
                                          : heat_update_3d(mid.z, mid.y, mid.w, south.z, north.z, lo.z, hi.z, r);
      next.w = edge || on_edge(x + 3, c.nx) ? mid.w
                                          : heat_update_3d(mid.w, mid.z, east, south.w, north.w, lo.w, hi.w, r);
      store4<Vector>(dst + k * c.nx, x, c.nx, next);
    }
    below = center;
    center = above;
    above = ahead;
    sides = next_sides;
  }
  // END SOLUTION
  // STUB: // TODO: fill a Column3d; march the block's z_chunk planes keeping three planes of Rows3d (below, center, above) and
  // STUB: // the Sides3d in registers; load the plane two ahead before computing this one; x neighbours by shuffles, as in 2D.
}

// One step. grid.y = ceil(ny / 16) ≤ 4096 and grid.z = ceil(nz / z_chunk) ≤
// 65535 for ny, nz ≤ 65535 and z_chunk ≥ 1 (main.cu checks the flag).
inline void jacobi_3d_registers_step(const float* in, float* out, std::int64_t nx, std::int64_t ny, std::int64_t nz,
                                     float r, int z_chunk, cudaStream_t stream) {
  // BEGIN SOLUTION registers_3d
  const dim3 grid(static_cast<unsigned>(cudalabs::ceil_div<std::int64_t>(nx, reg3d_cols)),
                  static_cast<unsigned>(cudalabs::ceil_div<std::int64_t>(ny, std::int64_t{reg3d_warps} * reg3d_rows)),
                  static_cast<unsigned>(cudalabs::ceil_div<std::int64_t>(nz, z_chunk)));
  const dim3 block(32, reg3d_warps);
  if (rows_are_float4_aligned(in, out, nx))
    jacobi_3d_registers_kernel<true><<<grid, block, 0, stream>>>(in, out, nx, ny, nz, r, z_chunk);
  else
    jacobi_3d_registers_kernel<false><<<grid, block, 0, stream>>>(in, out, nx, ny, nz, r, z_chunk);
  CUDALABS_CHECK_LAUNCH("jacobi_3d_registers_kernel");
  // END SOLUTION
  // STUB: cudalabs::not_implemented("jacobi_3d_registers_step", in, out, nx, ny, nz, r, z_chunk, stream);
}

inline void jacobi_3d_registers(const float* in, float* scratch0, float* scratch1, float* out, std::int64_t nx,
                                std::int64_t ny, std::int64_t nz, float r, int steps, int z_chunk,
                                cudaStream_t stream) {
  jacobi_iterate(in, scratch0, scratch1, out, steps, [&](const float* src, float* dst) {
    jacobi_3d_registers_step(src, dst, nx, ny, nz, r, z_chunk, stream);
  });
}

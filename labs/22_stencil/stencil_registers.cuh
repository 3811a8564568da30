#pragma once
// Step 3 (2D) — no shared memory: each thread keeps a column of its rows in
// registers and gets its x neighbours from the lanes beside it.
//
// The idea that 2.5D blocking (stencil_2_5d.cuh) applies along z, applied
// along y: a thread owns 4 adjacent columns (one float4) and computes
// `registers_rows` = 8 rows of them. It loads the 10 rows y0 − 1 … y0 + 8 of
// its 4 columns, one float4 each, into registers, all 10 before using any:
//
//        v[0]  row y0 − 1   (south of the first output row)
//        v[1]  row y0       ← output row 0: south v[0], north v[2]
//        …
//        v[8]  row y0 + 7   ← output row 7: south v[7], north v[9]
//        v[9]  row y0 + 8
//
// Each output row costs one new load (1.25 loads per row, the 0.25 being the
// rows the warps above and below load too, which L1/L2 serve). West and east
// come from the float4 itself for the middle two points, and from the next
// lane (__shfl_up_sync / __shfl_down_sync: a register of another thread of the
// warp, no memory) for the outer two; lanes 0 and 31 load the one value beyond
// the warp's 128 columns from global memory (the next block's, in L2).
//
// Why this is the 2D kernel that can keep DRAM busy: 10 × 16 bytes in flight
// per thread, against 4 for the naive kernel (~16 KB per SM are needed on an
// H100: bandwidth × latency / 132 SMs), a quarter of the load and store
// instructions (16-byte accesses), no barrier, no shared-memory traffic.
//
// 16-byte accesses need every row to start 16-byte aligned: nx % 4 == 0 (and
// cudaMalloc'd grids, 256-byte aligned). Other widths run the same kernel with
// four scalar accesses in place of each float4 (Vector = false).
#include <cstdint>

#include "stencil_common.cuh"

inline constexpr int registers_rows = 8;      // output rows per thread
inline constexpr int registers_warps = 8;     // warps per block, stacked along y: 256 threads
inline constexpr int registers_cols = 4 * 32;  // a warp's columns: 32 lanes × a float4
inline constexpr unsigned full_warp = 0xffffffffu;

// Four consecutive floats from x (x a multiple of 4); those at or beyond nx read as 0.
template <bool Vector>
__device__ __forceinline__ float4 load4(const float* __restrict__ row, std::int64_t x, std::int64_t nx) {
  if constexpr (Vector) {  // nx % 4 == 0: the four are all inside or all outside
    return x < nx ? *reinterpret_cast<const float4*>(row + x) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  } else {
    return make_float4(x < nx ? row[x] : 0.0f, x + 1 < nx ? row[x + 1] : 0.0f, x + 2 < nx ? row[x + 2] : 0.0f,
                       x + 3 < nx ? row[x + 3] : 0.0f);
  }
}

template <bool Vector>
__device__ __forceinline__ void store4(float* __restrict__ row, std::int64_t x, std::int64_t nx, float4 v) {
  if constexpr (Vector) {
    if (x < nx) *reinterpret_cast<float4*>(row + x) = v;
  } else {
    if (x < nx) row[x] = v.x;
    if (x + 1 < nx) row[x + 1] = v.y;
    if (x + 2 < nx) row[x + 2] = v.z;
    if (x + 3 < nx) row[x + 3] = v.w;
  }
}

template <bool Vector>
__global__ void __launch_bounds__(32 * registers_warps)
    jacobi_2d_registers_kernel(const float* __restrict__ in, float* __restrict__ out, std::int64_t nx,
                               std::int64_t ny, float r) {
  // BEGIN SOLUTION registers_2d
  const int lane = threadIdx.x;
  const std::int64_t x0 = static_cast<std::int64_t>(blockIdx.x) * registers_cols;  // the warp's first column
  const std::int64_t x = x0 + 4 * lane;                                             // this thread's first column
  const std::int64_t y0 = (static_cast<std::int64_t>(blockIdx.y) * registers_warps + threadIdx.y) * registers_rows;

  // Every load first: the 10-row window and, on lanes 0 and 31, the column
  // just west (east) of the warp's 128, for each output row.
  float4 v[registers_rows + 2];
#pragma unroll
  for (int k = 0; k < registers_rows + 2; ++k) {
    const std::int64_t y = y0 - 1 + k;
    v[k] = y >= 0 && y < ny ? load4<Vector>(in + y * nx, x, nx) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  }
  const std::int64_t halo_x = lane == 0 ? x0 - 1 : x0 + registers_cols;
  const bool halo_lane = (lane == 0 || lane == 31) && halo_x >= 0 && halo_x < nx;
  float halo[registers_rows];
#pragma unroll
  for (int k = 0; k < registers_rows; ++k) {
    const std::int64_t y = y0 + k;
    halo[k] = halo_lane && y < ny ? in[y * nx + halo_x] : 0.0f;
  }

  // All 32 lanes reach every shuffle: no lane returns early, whatever its x.
#pragma unroll
  for (int k = 0; k < registers_rows; ++k) {
    const float4 south = v[k], center = v[k + 1], north = v[k + 2];
    const float from_west = __shfl_up_sync(full_warp, center.w, 1);  // lane − 1's last column
    const float from_east = __shfl_down_sync(full_warp, center.x, 1);  // lane + 1's first column
    const float west = lane == 0 ? halo[k] : from_west;
    const float east = lane == 31 ? halo[k] : from_east;
    const std::int64_t y = y0 + k;
    if (y >= ny) break;  // the same y on every lane of the warp: no shuffle is left half-attended
    // Boundary points (first and last row and column) keep their value; a
    // neighbour outside the grid read as 0 is only ever next to one of them.
    const bool edge_row = on_edge(y, ny);
    float4 next;
    next.x = edge_row || on_edge(x, nx) ? center.x : heat_update_2d(center.x, west, center.y, south.x, north.x, r);
    next.y = edge_row || on_edge(x + 1, nx) ? center.y
                                            : heat_update_2d(center.y, center.x, center.z, south.y, north.y, r);
    next.z = edge_row || on_edge(x + 2, nx) ? center.z
                                            : heat_update_2d(center.z, center.y, center.w, south.z, north.z, r);
    next.w = edge_row || on_edge(x + 3, nx) ? center.w : heat_update_2d(center.w, center.z, east, south.w, north.w, r);
    store4<Vector>(out + y * nx, x, nx, next);
  }
  // END SOLUTION
  // STUB: // TODO: a warp owns 128 columns (a float4 per lane), a thread 8 rows: load the 10-row window and, on lanes 0 and 31,
  // STUB: // the column beyond the warp; x neighbours by __shfl_up_sync/__shfl_down_sync (every lane reaches every shuffle);
  // STUB: // store4 the updated rows (edge points keep their value).
}

// float4 accesses need 16-byte aligned rows: nx a multiple of 4 and every grid
// 16-byte aligned (cudaMalloc gives 256).
inline bool rows_are_float4_aligned(const float* a, const float* b, std::int64_t nx) {
  return nx % 4 == 0 && reinterpret_cast<std::uintptr_t>(a) % 16 == 0 && reinterpret_cast<std::uintptr_t>(b) % 16 == 0;
}

// One step. grid.y = ceil(ny / 64) ≤ 1024 for ny ≤ 65535.
inline void jacobi_2d_registers_step(const float* in, float* out, std::int64_t nx, std::int64_t ny, float r,
                                     cudaStream_t stream) {
  // BEGIN SOLUTION registers_2d
  const dim3 grid(static_cast<unsigned>(cudalabs::ceil_div<std::int64_t>(nx, registers_cols)),
                  static_cast<unsigned>(cudalabs::ceil_div<std::int64_t>(ny, std::int64_t{registers_warps} * registers_rows)));
  const dim3 block(32, registers_warps);
  if (rows_are_float4_aligned(in, out, nx))
    jacobi_2d_registers_kernel<true><<<grid, block, 0, stream>>>(in, out, nx, ny, r);
  else
    jacobi_2d_registers_kernel<false><<<grid, block, 0, stream>>>(in, out, nx, ny, r);
  CUDALABS_CHECK_LAUNCH("jacobi_2d_registers_kernel");
  // END SOLUTION
  // STUB: cudalabs::not_implemented("jacobi_2d_registers_step", in, out, nx, ny, r, stream);
}

inline void jacobi_2d_registers(const float* in, float* scratch0, float* scratch1, float* out, std::int64_t nx,
                                std::int64_t ny, float r, int steps, cudaStream_t stream) {
  jacobi_iterate(in, scratch0, scratch1, out, steps,
                 [&](const float* src, float* dst) { jacobi_2d_registers_step(src, dst, nx, ny, r, stream); });
}

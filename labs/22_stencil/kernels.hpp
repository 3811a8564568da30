#pragma once
// Lab 22's fixed interface: what main.cu (the course's host program) may call of
// the kernel files. kernels.cu defines it by including them, in a translation
// unit of its own, so nothing in a kernel file reaches main.cu.
//
// Every launcher runs `steps` Jacobi steps of the heat equation,
//   u' = u + r · (Σ neighbours − 2d · u)   (d = 2: 5 points; d = 3: 7 points),
// from `in` to `out` on an nx × ny (× nz) grid, x fastest, with fixed
// (Dirichlet) boundary points that keep their values. `in` is only read;
// scratch0 and scratch1 (grids of the same size) hold the steps between; `out`
// holds the result. Any size ≥ 1, ny, nz ≤ 65535, at most 2^30 points. Tiled
// launchers take the tile (= thread block) shape, tile_x · tile_y (· tile_z)
// ≤ 1024. Enqueued on `stream`; never synchronises.
#include <cuda_runtime_api.h>

#include <cstdint>

#include <cudalabs/device.hpp>

namespace lab22 {

void jacobi_2d_naive(const float* in, float* scratch0, float* scratch1, float* out, std::int64_t nx, std::int64_t ny,
                     float r, int steps, cudaStream_t stream);
void jacobi_2d_tiled(const float* in, float* scratch0, float* scratch1, float* out, std::int64_t nx, std::int64_t ny,
                     float r, int steps, int tile_x, int tile_y, cudaStream_t stream);
// Several rows per thread in registers, float4 along x, x neighbours by warp shuffle.
void jacobi_2d_registers(const float* in, float* scratch0, float* scratch1, float* out, std::int64_t nx,
                         std::int64_t ny, float r, int steps, cudaStream_t stream);
void jacobi_3d_naive(const float* in, float* scratch0, float* scratch1, float* out, std::int64_t nx, std::int64_t ny,
                     std::int64_t nz, float r, int steps, cudaStream_t stream);
void jacobi_3d_tiled(const float* in, float* scratch0, float* scratch1, float* out, std::int64_t nx, std::int64_t ny,
                     std::int64_t nz, float r, int steps, int tile_x, int tile_y, int tile_z, cudaStream_t stream);
// 2.5D: a tile_x × tile_y tile marched along z, z neighbours in registers.
void jacobi_3d_blocked(const float* in, float* scratch0, float* scratch1, float* out, std::int64_t nx, std::int64_t ny,
                       std::int64_t nz, float r, int steps, int tile_x, int tile_y, cudaStream_t stream);
// registers_2d marched along z: 4 rows × a float4 per thread, planes z − 1, z,
// z + 1 in registers, no shared memory; one block per z_chunk planes (≥ 1).
void jacobi_3d_registers(const float* in, float* scratch0, float* scratch1, float* out, std::int64_t nx,
                         std::int64_t ny, std::int64_t nz, float r, int steps, int z_chunk, cudaStream_t stream);
// The z chunk registers_3d uses unless --z-chunk says otherwise.
int jacobi_3d_registers_default_z_chunk();

cudalabs::KernelResources jacobi_2d_naive_resources();
cudalabs::KernelResources jacobi_2d_tiled_resources(int tile_x, int tile_y);
cudalabs::KernelResources jacobi_2d_registers_resources();
cudalabs::KernelResources jacobi_3d_naive_resources();
cudalabs::KernelResources jacobi_3d_tiled_resources(int tile_x, int tile_y, int tile_z);
cudalabs::KernelResources jacobi_3d_blocked_resources(int tile_x, int tile_y);
cudalabs::KernelResources jacobi_3d_registers_resources();

}  // namespace lab22

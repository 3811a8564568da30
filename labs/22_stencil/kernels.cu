// Lab 22's kernel translation unit: the student's kernel files behind the fixed
// interface of kernels.hpp. Angle brackets: the files are found through the
// include path, which puts a graded submission's folder first (labs/meson.build).
#include "kernels.hpp"

#include <stencil_2_5d.cuh>
#include <stencil_naive.cuh>
#include <stencil_registers.cuh>
#include <stencil_registers_3d.cuh>
#include <stencil_tiled.cuh>

namespace lab22 {

using cudalabs::resources_of;

void jacobi_2d_naive(const float* in, float* scratch0, float* scratch1, float* out, std::int64_t nx, std::int64_t ny,
                     float r, int steps, cudaStream_t stream) {
  ::jacobi_2d_naive(in, scratch0, scratch1, out, nx, ny, r, steps, stream);
}
void jacobi_2d_tiled(const float* in, float* scratch0, float* scratch1, float* out, std::int64_t nx, std::int64_t ny,
                     float r, int steps, int tile_x, int tile_y, cudaStream_t stream) {
  ::jacobi_2d_tiled(in, scratch0, scratch1, out, nx, ny, r, steps, tile_x, tile_y, stream);
}
void jacobi_2d_registers(const float* in, float* scratch0, float* scratch1, float* out, std::int64_t nx,
                         std::int64_t ny, float r, int steps, cudaStream_t stream) {
  ::jacobi_2d_registers(in, scratch0, scratch1, out, nx, ny, r, steps, stream);
}
void jacobi_3d_naive(const float* in, float* scratch0, float* scratch1, float* out, std::int64_t nx, std::int64_t ny,
                     std::int64_t nz, float r, int steps, cudaStream_t stream) {
  ::jacobi_3d_naive(in, scratch0, scratch1, out, nx, ny, nz, r, steps, stream);
}
void jacobi_3d_tiled(const float* in, float* scratch0, float* scratch1, float* out, std::int64_t nx, std::int64_t ny,
                     std::int64_t nz, float r, int steps, int tile_x, int tile_y, int tile_z, cudaStream_t stream) {
  ::jacobi_3d_tiled(in, scratch0, scratch1, out, nx, ny, nz, r, steps, tile_x, tile_y, tile_z, stream);
}
void jacobi_3d_blocked(const float* in, float* scratch0, float* scratch1, float* out, std::int64_t nx, std::int64_t ny,
                       std::int64_t nz, float r, int steps, int tile_x, int tile_y, cudaStream_t stream) {
  ::jacobi_3d_blocked(in, scratch0, scratch1, out, nx, ny, nz, r, steps, tile_x, tile_y, stream);
}
void jacobi_3d_registers(const float* in, float* scratch0, float* scratch1, float* out, std::int64_t nx,
                         std::int64_t ny, std::int64_t nz, float r, int steps, int z_chunk, cudaStream_t stream) {
  ::jacobi_3d_registers(in, scratch0, scratch1, out, nx, ny, nz, r, steps, z_chunk, stream);
}
int jacobi_3d_registers_default_z_chunk() { return reg3d_default_z_chunk; }

cudalabs::KernelResources jacobi_2d_naive_resources() {
  return resources_of(jacobi_2d_naive_kernel, naive_block_x * naive_block_y);
}
cudalabs::KernelResources jacobi_2d_tiled_resources(int tile_x, int tile_y) {
  return resources_of(jacobi_2d_tiled_kernel, tile_x * tile_y, jacobi_2d_tiled_smem(tile_x, tile_y));
}
// The float4 instantiation: the one the full-size grids (nx % 4 == 0) run.
cudalabs::KernelResources jacobi_2d_registers_resources() {
  return resources_of(jacobi_2d_registers_kernel<true>, 32 * registers_warps);
}
cudalabs::KernelResources jacobi_3d_naive_resources() {
  return resources_of(jacobi_3d_naive_kernel, naive_block_x * naive_block_y);
}
cudalabs::KernelResources jacobi_3d_tiled_resources(int tile_x, int tile_y, int tile_z) {
  return resources_of(jacobi_3d_tiled_kernel, tile_x * tile_y * tile_z, jacobi_3d_tiled_smem(tile_x, tile_y, tile_z));
}
cudalabs::KernelResources jacobi_3d_blocked_resources(int tile_x, int tile_y) {
  return resources_of(jacobi_3d_blocked_kernel, tile_x * tile_y, jacobi_3d_blocked_smem(tile_x, tile_y));
}
// The float4 instantiation, as for registers_2d.
cudalabs::KernelResources jacobi_3d_registers_resources() {
  return resources_of(jacobi_3d_registers_kernel<true>, 32 * reg3d_warps);
}

}  // namespace lab22

#pragma once
// What every Jacobi kernel of lab 22 shares: the update, the boundary rule, the
// grid layout and the loop over steps. Lab 23 runs the same steps on managed and
// mapped memory through stencil_naive.cuh.
//
// The heat equation du/dt = κ∇²u, one explicit Euler step on a grid of spacing h:
//
//   u'(p) = u(p) + r · (Σ_{q neighbour of p} u(q) − 2d · u(p)),   r = κΔt/h²
//
// with d = 2 (5 points: west, east, south, north) or d = 3 (7 points: also below
// and above). It is stable for r ≤ 1/(2d); then u' is a weighted average of the
// point and its neighbours (weights 1 − 2d·r and r, all ≥ 0), so values never
// leave the range of the input.
//
// Boundary: fixed (Dirichlet). A point on the edge of the grid (x = 0 or nx−1,
// y = 0 or ny−1, and in 3D z = 0 or nz−1) keeps its value: every step copies it
// through. A grid of side 1, 2 is all boundary; 3×3 has one interior point.
//
// Layout: point (x, y, z) at ((z · ny) + y) · nx + x, x fastest: a warp along x
// reads consecutive floats. The 2D kernels are the z = 0 plane of this.
#include <cstdint>

#include <cudalabs/device.hpp>
#include <cudalabs/error.hpp>
#include <cudalabs/math.hpp>

__device__ __forceinline__ float heat_update_2d(float center, float west, float east, float south, float north,
                                                float r) {
  return center + r * ((west + east) + (south + north) - 4.0f * center);
}

__device__ __forceinline__ float heat_update_3d(float center, float west, float east, float south, float north,
                                                float below, float above, float r) {
  return center + r * ((west + east) + (south + north) + (below + above) - 6.0f * center);
}

__device__ __forceinline__ bool on_edge(std::int64_t i, std::int64_t n) { return i == 0 || i == n - 1; }

// Runs `steps` applications of step(src, dst): the first reads `in`, the last
// writes `out`, the ones between alternate between the two scratch grids.
// `in` is never written, so a second call from the same `in` gives the same
// `out` (the harness runs every variant several times on one input).
template <typename Step>
void jacobi_iterate(const float* in, float* scratch0, float* scratch1, float* out, int steps, Step step) {
  const float* src = in;
  for (int s = 0; s < steps; ++s) {
    float* dst = s == steps - 1 ? out : (s % 2 == 0 ? scratch0 : scratch1);
    step(src, dst);
    src = dst;
  }
}

// Tiles sized at run time live in dynamic shared memory, which above 48 KB a
// kernel must opt in to. This lab's stay below (a 1024-thread block's 3D tile
// with halo is 37 KB), but the tile comes from the command line, so the
// launchers ask rather than assume: cudalabs::allow_dynamic_smem (device.hpp)
// opts in when needed and, when the tile is too large for the device, says
// how many bytes it asked for and the device's limit.
template <typename Kernel>
void allow_dynamic_smem(Kernel* kernel, std::size_t bytes) {
  cudalabs::allow_dynamic_smem(kernel, bytes, "a tiled stencil kernel");
}

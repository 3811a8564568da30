#pragma once
// The course's CPU reference for the Jacobi steps of lab 22 (and lab 23, which
// runs the same 2D steps on managed and mapped memory), and the tolerance a
// float32 iteration is held to. Host code only, shared by labs 22 and 23 (labs/shared/).
#include <algorithm>
#include <cstdint>
#include <vector>

#include <cudalabs/checker.hpp>
#include <cudalabs/reference.hpp>

namespace jacobi {

// r = κΔt/h². 1/8 is stable in 2D (≤ 1/4) and 3D (≤ 1/6), and exact in
// binary: the weights are 1/2 and 1/8 (2D), 1/4 and 1/8 (3D).
inline constexpr float diffusion_number = 0.125f;

// `steps` Jacobi steps in double, from the float inputs, on an nx × ny × nz
// grid (nz = 1: 2D, 5 points; nz ≥ 2: 3D, 7 points): the update and boundary
// rule of lab 22's stencil_common.cuh. One grid line (a row along x) per unit
// of work across the cores.
inline std::vector<double> cpu_steps(const std::vector<float>& in, std::int64_t nx, std::int64_t ny, std::int64_t nz,
                                     double r, int steps) {
  const bool three_d = nz > 1;
  const std::int64_t plane = nx * ny;
  std::vector<double> u(in.begin(), in.end()), next(in.size());
  for (int step = 0; step < steps; ++step) {
    cudalabs::ref::parallel_for(
        static_cast<std::size_t>(ny * nz),
        [&](std::size_t first_line, std::size_t last_line) {
          for (auto line = static_cast<std::int64_t>(first_line); line < static_cast<std::int64_t>(last_line); ++line) {
            const std::int64_t y = line % ny, z = line / ny;
            const bool edge_line = y == 0 || y == ny - 1 || (three_d && (z == 0 || z == nz - 1));
            for (std::int64_t x = 0; x < nx; ++x) {
              const auto i = static_cast<std::size_t>(line * nx + x);
              if (edge_line || x == 0 || x == nx - 1) {
                next[i] = u[i];  // fixed boundary
                continue;
              }
              double neighbours = u[i - 1] + u[i + 1] + u[i - nx] + u[i + nx];
              if (three_d) neighbours += u[i - plane] + u[i + plane];
              next[i] = u[i] + r * (neighbours - (three_d ? 6.0 : 4.0) * u[i]);
            }
          }
        },
        static_cast<std::size_t>(std::max<std::int64_t>(1, 65536 / nx)));  // at least ~64k points per thread
    std::swap(u, next);
  }
  return u;
}

// How far a float32 iteration may drift from the double one. Inputs are in
// [-1, 1), and each step is a weighted average with non-negative weights, so
// every value stays in [-1, 1] (M = 1). One step in float rounds a few times:
// the neighbour sums (partial sums up to 6M, error ≤ 2^-24 of each), the sum
// minus 2d·u (up to 12M), the scaling by r and the final add. Added up that is
// under 8 · 2^-24 · M per point per step in 3D, less in 2D. The exact step is a
// weighted average, so it never enlarges an error already there (max norm):
// after `steps` steps the error is at most steps × the error of one step. We
// allow twice that bound, abs = 16 · 2^-24 · steps (9.5e-6 at 10 steps). A
// wrong neighbour moves a point by about r·|u(p) − u(q)|, 1e-2 and more even
// after the first steps have smoothed the random input.
inline cudalabs::Tolerance tolerance(int steps) {
  constexpr double unit_roundoff = 1.0 / (1 << 24);
  return {.abs = 16.0 * unit_roundoff * steps, .rel = 0.0};
}

}  // namespace jacobi

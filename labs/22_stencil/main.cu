// Lab 22 — stencils: the 2D 5-point and 3D 7-point heat equation, iterated.
//
// Each step replaces every interior point by a weighted average of itself and
// its neighbours (Jacobi: the new grid is written to another buffer, then the
// two swap roles); boundary points keep their values (fixed, Dirichlet). A step
// does a handful of flops per point and must read and write the grid once, so
// the measure is bytes: 2·4·points per step, as % of the device-to-device copy
// bandwidth measured in the same run. The lesson is data reuse: each value is
// an operand of 5 (7) points; the variants differ in where the re-reads are served.
//
// Variants (kernel files in this folder); --nz 1 runs the 2D ones, --nz ≥ 2 the 3D ones:
//   naive_2d      one thread per point, all 5 operands from global memory     stencil_naive.cuh
//   tiled_2d      tile + one-point halo in dynamic shared memory, its shape
//                 from --tile-x × --tile-y, 4 points per thread along y       stencil_tiled.cuh
//   registers_2d  8 rows per thread in registers, float4 along x, x neighbours
//                 from the next lane (warp shuffle), no shared memory         stencil_registers.cuh
//   naive_3d      one thread per point, all 7 operands from global memory     stencil_naive.cuh
//   tiled_3d      a --tile-x × --tile-y × --tile-z cube + halo in shared memory   stencil_tiled.cuh
//   blocked_2_5d  2.5D: a --tile-x × --tile-y plane tile marched along z, the z
//                 neighbours in registers                                     stencil_2_5d.cuh
//   registers_3d  registers_2d marched along z: 4 rows × a float4 per thread, planes
//                 z − 1, z, z + 1 in registers, x by shuffle, --z-chunk planes
//                 per block, no shared memory                                 stencil_registers_3d.cuh
//
// Inputs (--inputs): random values in [-1, 1); large and tiny: the same times
// 2^e, e drawn from the seed in [64, 120] or [-100, -64]; constant: one value
// everywhere (labs/shared/value_kinds.hpp). The steps are linear, so a scaled
// grid's result scales exactly and its tolerance with it: a kernel that holds
// values in half precision, or adds an absolute epsilon, fails there. A
// weighted average of one value is that value: with power-of-two weights and
// 20 significant bits, exactly, in any order of the sums, so constant is checked
// with no tolerance at all: a kernel whose weights do not sum to one fails.
//
// Run: make run LAB=22     (8192² 2D and 512³ 3D, 10 steps)
//      build/labs/22_stencil/22_stencil --nx 1000 --ny 999 --nz 1 --steps 7 --tile-x 64 --tile-y 4
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include <cudalabs/lab.hpp>
#include <cudalabs/random.hpp>

#include "jacobi_reference.hpp"
#include "kernels.hpp"
#include "value_kinds.hpp"

// ---- CPU reference: jacobi::cpu_steps, in jacobi_reference.hpp (lab 23 uses it too)

namespace {

// Both flags name one thread block: at most 1024 threads.
void check_block(const std::string& flags, std::int64_t threads, const std::string& example) {
  if (threads > 1024)
    throw cudalabs::UsageError(flags + " = " + std::to_string(threads) +
                               " threads per block: the tile is the thread block, and a block holds at most 1024 "
                               "threads. Choose a smaller tile, e.g. " + example + ".");
}

// The initial grid of one --inputs kind (`seed` already this grid's stream),
// and the tolerance `steps` steps on it are held to (see the header comment).
struct Field {
  std::vector<float> values;
  cudalabs::Tolerance tol;
};

Field initial_field(const std::string& kind, std::size_t count, std::uint64_t seed, int steps) {
  const cudalabs::Tolerance unit = jacobi::tolerance(steps);  // for values in [-1, 1]
  if (kind == "constant") return {value_kinds::one_value(count, seed), {.abs = 0, .rel = 0}};
  if (kind == "large" || kind == "tiny") {
    // 2^120: six neighbours sum to under 2^123, far from FLT_MAX (2^128). 2^-100:
    // nonzero inputs at least 2^-123, still normal; a step's rounding error
    // (16·2^-24·2^-100) is far above a subnormal's spacing (2^-149).
    const int e = kind == "large" ? value_kinds::drawn_exponent(seed, 64, 120) : value_kinds::drawn_exponent(seed, -100, -64);
    return {value_kinds::scaled_floats(count, seed, e), {.abs = std::ldexp(unit.abs, e), .rel = 0}};
  }
  return {cudalabs::random_floats(count, seed), unit};
}

}  // namespace

// ---- main ------------------------------------------------------------------
int main(int argc, char** argv) {
  const cudalabs::LabSpec spec{
      .name = "22_stencil",
      .title = "stencils: 2D 5-point and 3D 7-point Jacobi steps, shared-memory tiles, 2.5D blocking",
      .about = "Iterates the heat equation u' = u + r·(sum of neighbours − 2d·u), r = 1/8, from random inputs, with\n"
               "fixed boundary points, and checks against the same iteration in double. --nz 1 (a 2D grid) runs the\n"
               "5-point variants, --nz 2 or more the 7-point ones. GB/s count one read and one write of the grid per\n"
               "step. --size N sets nx = ny = nz = N; lists of equal length are zipped.",
      .sizes = {{.name = "nx",
                 .help = "points along x (the contiguous direction)",
                 .full = {8192, 512},
                 .quick = {1, 2, 3, 37, 100, 1, 2, 3, 17, 132},  // 132: registers_3d's float4 path, 2 warps in x
                 .max = std::int64_t{1} << 30},
                {.name = "ny",
                 .help = "points along y",
                 .full = {8192, 512},
                 .quick = {1, 2, 3, 41, 3, 1, 2, 3, 19, 9},
                 .max = 65535},  // the grid's y dimension holds at most 65535 blocks
                {.name = "nz",
                 .help = "points along z; 1 = a 2D grid",
                 .full = {1, 512},
                 .quick = {1, 1, 1, 1, 1, 2, 2, 3, 13, 70},
                 .max = 65535}},
      .variants = {{"naive_2d", "5 points, one thread per point, operands from global memory"},
                   {"tiled_2d", "5 points, tile + halo in dynamic shared memory (--tile-x × --tile-y threads, 4 rows each)"},
                   {"registers_2d", "5 points, 8 rows per thread in registers, float4 along x, warp shuffles for x"},
                   {"naive_3d", "7 points, one thread per point, operands from global memory"},
                   {"tiled_3d", "7 points, cube tile + halo in shared memory (--tile-x × --tile-y × --tile-z)"},
                   {"blocked_2_5d", "7 points, 2.5D: plane tile marched along z, z neighbours in registers"},
                   {"registers_3d", "7 points, 4 rows × float4 per thread marched along z, all in registers, no smem"}},
      .flags = {{.name = "steps", .help = "Jacobi steps per run", .default_value = "10", .min = 1, .max = 100000},
                {.name = "tile-x", .help = "tile width in points = block threads along x", .default_value = "32", .max = 1024},
                {.name = "tile-y", .help = "block threads along y (tiled_2d: 4 rows of points each)", .default_value = "8", .max = 1024},
                {.name = "tile-z", .help = "tiled_3d's tile depth in points", .default_value = "4",
                 .max = 64},  // a block holds at most 64 threads along z (1024 along x and y)
                {.name = "z-chunk",
                 .help = "registers_3d's planes per thread block (fewer: more blocks, more re-read chunk edges)",
                 .default_value = std::to_string(lab22::jacobi_3d_registers_default_z_chunk()),
                 .max = 65535},
                value_kinds::inputs_flag_of("random: values in [-1, 1); large, tiny: the same times 2^e, e drawn in "
                                            "[64, 120] or [-100, -64] (tolerance scaled by 2^e); constant: one value "
                                            "everywhere, kept exactly",
                                            {"random", "constant", "large", "tiny"})},
  };
  return cudalabs::run_lab(argc, argv, spec, [](cudalabs::Session& s) {
    const auto& o = s.options();
    const int steps = static_cast<int>(o.integer("steps"));
    const int tile_x = static_cast<int>(o.integer("tile-x")), tile_y = static_cast<int>(o.integer("tile-y")),
              tile_z = static_cast<int>(o.integer("tile-z")), z_chunk = static_cast<int>(o.integer("z-chunk"));
    check_block("--tile-x × --tile-y", std::int64_t{tile_x} * tile_y, "--tile-x 32 --tile-y 8");
    if (s.selected("blocked_2_5d") && (tile_x < 2 || tile_y < 2))
      throw cudalabs::UsageError("blocked_2_5d needs a tile at least 2 wide and 2 tall (--tile-x " +
                                 std::to_string(tile_x) + " --tile-y " + std::to_string(tile_y) +
                                 "): each edge thread loads one ring value per direction. Give --tile-x, --tile-y "
                                 ">= 2, or leave blocked_2_5d out with --variant.");
    if (s.selected("tiled_3d"))
      check_block("tiled_3d's --tile-x × --tile-y × --tile-z", std::int64_t{tile_x} * tile_y * tile_z,
                  "--tile-x 32 --tile-y 8 --tile-z 4");
    const std::string inputs = o.text("inputs");
    const cudalabs::Tolerance unit_tol = jacobi::tolerance(steps);
    const float r = jacobi::diffusion_number;

    for (const auto& point : s.points()) {
      const std::int64_t nx = point.at("nx"), ny = point.at("ny"), nz = point.at("nz");
      const std::int64_t points = nx * ny * nz;
      if (points > (std::int64_t{1} << 30))
        throw cudalabs::UsageError("nx × ny × nz = " + std::to_string(points) +
                                   " points; at most 2^30 (4 GiB per grid, four grids). Use smaller sizes; for a 2D "
                                   "grid give --nz 1.");
      const bool three_d = nz > 1;
      const auto count = static_cast<std::size_t>(points);

      cudalabs::DeviceBuffer<float> d_in(count, "in"), d_scratch0(count, "scratch0"), d_scratch1(count, "scratch1"),
          d_out(count, "out");
      std::vector<double> expected;
      cudalabs::Tolerance tol = unit_tol;  // large and tiny: scaled with each new grid's 2^e
      auto make_inputs = [&](std::uint64_t seed) {
        const Field in = initial_field(inputs, count, cudalabs::mix_seed(seed, 1), steps);
        expected = jacobi::cpu_steps(in.values, nx, ny, nz, r, steps);
        tol = in.tol;
        d_in.upload(in.values);
      };
      make_inputs(s.seed());

      auto check = [&] { return cudalabs::check_close(d_out.download(), expected, tol); };
      // The scratch grids too: a point a step forgets stays NaN and spreads to `out`.
      auto poison = [&](cudaStream_t st) {
        d_out.poison(st);
        d_scratch0.poison(st);
        d_scratch1.poison(st);
      };
      const cudalabs::Work work{.bytes = 2.0 * 4.0 * static_cast<double>(points) * steps,
                                .flops = (three_d ? 8.0 : 6.0) * static_cast<double>(points) * steps};

      auto measure = [&](const std::string& variant, std::function<void(cudaStream_t)> run,
                         cudalabs::KernelResources resources, bool tiled) {
        cudalabs::Measurement m{.variant = variant,
                                .size = point,
                                .work = work,
                                .run = std::move(run),
                                .check = check,
                                .poison = poison,
                                .new_inputs = make_inputs,
                                .resources = resources};
        m.extra["steps"] = steps;
        if (variant == "registers_3d") m.extra["z_chunk"] = z_chunk;
        if (tiled) {
          m.extra["tile_x"] = tile_x;
          m.extra["tile_y"] = tile_y;
          if (variant == "tiled_3d") m.extra["tile_z"] = tile_z;
        }
        s.measure(m);
      };
      // The buffers' pointers are read at each run, never kept: the harness's
      // last check runs with every buffer moved to a new allocation.

      if (!three_d) {
        if (s.selected("naive_2d"))
          measure("naive_2d",
                  [&](cudaStream_t st) { lab22::jacobi_2d_naive(d_in.data(), d_scratch0.data(), d_scratch1.data(), d_out.data(), nx, ny, r, steps, st); },
                  lab22::jacobi_2d_naive_resources(), false);
        if (s.selected("tiled_2d"))
          measure("tiled_2d",
                  [&](cudaStream_t st) {
                    lab22::jacobi_2d_tiled(d_in.data(), d_scratch0.data(), d_scratch1.data(), d_out.data(), nx, ny, r, steps, tile_x, tile_y, st);
                  },
                  lab22::jacobi_2d_tiled_resources(tile_x, tile_y), true);
        if (s.selected("registers_2d"))
          measure("registers_2d",
                  [&](cudaStream_t st) {
                    lab22::jacobi_2d_registers(d_in.data(), d_scratch0.data(), d_scratch1.data(), d_out.data(), nx, ny, r, steps, st);
                  },
                  lab22::jacobi_2d_registers_resources(), false);
      } else {
        if (s.selected("naive_3d"))
          measure("naive_3d",
                  [&](cudaStream_t st) { lab22::jacobi_3d_naive(d_in.data(), d_scratch0.data(), d_scratch1.data(), d_out.data(), nx, ny, nz, r, steps, st); },
                  lab22::jacobi_3d_naive_resources(), false);
        if (s.selected("tiled_3d"))
          measure("tiled_3d",
                  [&](cudaStream_t st) {
                    lab22::jacobi_3d_tiled(d_in.data(), d_scratch0.data(), d_scratch1.data(), d_out.data(), nx, ny, nz, r, steps, tile_x, tile_y, tile_z, st);
                  },
                  lab22::jacobi_3d_tiled_resources(tile_x, tile_y, tile_z), true);
        if (s.selected("blocked_2_5d"))
          measure("blocked_2_5d",
                  [&](cudaStream_t st) {
                    lab22::jacobi_3d_blocked(d_in.data(), d_scratch0.data(), d_scratch1.data(), d_out.data(), nx, ny, nz, r, steps, tile_x, tile_y, st);
                  },
                  lab22::jacobi_3d_blocked_resources(tile_x, tile_y), true);
        if (s.selected("registers_3d"))
          measure("registers_3d",
                  [&](cudaStream_t st) {
                    lab22::jacobi_3d_registers(d_in.data(), d_scratch0.data(), d_scratch1.data(), d_out.data(), nx, ny, nz, r, steps, z_chunk, st);
                  },
                  lab22::jacobi_3d_registers_resources(), false);
      }
    }
    char line[256];
    std::snprintf(line, sizeof line,
                  "%d steps, r = 1/8, boundary points fixed; tolerance %.2g absolute (16·2^-24 per step%s). 2D "
                  "variants run where nz = 1, 3D variants where nz >= 2.",
                  steps, unit_tol.abs,
                  inputs == "constant" ? "; constant inputs: exact" : inputs == "random" ? "" : ", times the inputs' 2^e");
    s.note(line);
  });
}

// Lab 12 — softmax: a memory-bound kernel with two block reductions per row.
//
// Each row of x[rows×cols] becomes exp(x - max) / sum(exp(x - max)). The work
// is a few flops per element, so the only honest measure is bytes: at least one
// read and one write of the matrix (8 bytes per element), reported as GB/s and
// as % of the device-to-device copy bandwidth measured in the same run. Every
// variant handles any row length, not only multiples of the block size.
//
// Variants (kernels in softmax.cuh):
//   block_per_row     the original: one 256-thread block per row, three passes
//                     (max, sum of exp, scale) each re-reading the row
//   online            max and sum in one pass (online rescaling), then write:
//                     2 reads + 1 write
//   row_in_registers  float4 loads, the row kept in registers: 1 read + 1 write
//                     (rows up to 16384 floats)
//   split_rows        for long rows: several blocks per row, (max, sum) pairs
//                     combined by a second launch
//
// Run: make run LAB=12    (defaults: 512×512, 16384×1024, 4096×4096, 128×524288)
#include <cudalabs/lab.hpp>
#include <cudalabs/random.hpp>
#include <cudalabs/reference.hpp>

#include "softmax.cuh"

namespace {

// Sum of each row of the device result, in double: the "rows sum to 1" check.
std::vector<float> row_sums(const std::vector<float>& y, std::int64_t rows, std::int64_t cols) {
  std::vector<float> sums(static_cast<std::size_t>(rows));
  for (std::int64_t r = 0; r < rows; ++r) {
    double s = 0;
    for (std::int64_t c = 0; c < cols; ++c) s += y[static_cast<std::size_t>(r * cols + c)];
    sums[static_cast<std::size_t>(r)] = static_cast<float>(s);  // 6e-8 rounding, far below the tolerance
  }
  return sums;
}

}  // namespace

int main(int argc, char** argv) {
  const cudalabs::LabSpec spec{
      .name = "12_softmax",
      .title = "row-wise softmax: block reductions, passes over memory, % of the copy bandwidth",
      .about = "Numerically stable softmax of each row, one block per row with warp-shuffle block reductions.\n"
               "GB/s counts the minimum traffic (one read and one write of the matrix), so % of the copy\n"
               "bandwidth says how close a kernel is to the best any softmax can do. --size sets --cols.",
      .sizes = {{.name = "rows",
                 .help = "rows of the matrix",
                 .full = {512, 16384, 4096, 128},
                 .quick = {1, 3, 37, 5, 2},
                 .max = std::int64_t{1} << 24},
                {.name = "cols",
                 .help = "row length",
                 .full = {512, 1024, 4096, 524288},
                 .quick = {1, 255, 1000, 16384, 70001},
                 .max = std::int64_t{1} << 26}},
      .size_alias = {"cols"},
      .variants = {{"block_per_row", "the original: one 256-thread block per row, 3 passes over global memory"},
                   {"online", "max and sum in one pass (online rescaling), then write: 2 reads + 1 write"},
                   {"row_in_registers", "float4 loads, row kept in registers: 1 read + 1 write (cols <= 16384)"},
                   {"split_rows", "long rows: several blocks per row, (max, sum) pairs combined in a 2nd launch"}},
  };
  return cudalabs::run_lab(argc, argv, spec, [](cudalabs::Session& s) {
    for (const auto& point : s.points()) {
      const std::int64_t rows = point.at("rows");
      const int cols = static_cast<int>(point.at("cols"));
      const std::int64_t n = rows * cols;
      // 4 GiB per float matrix; the CPU reference holds 8 GiB of doubles on top.
      if (n > (std::int64_t{1} << 30))
        throw cudalabs::UsageError("rows × cols = " + std::to_string(n) +
                                   " elements; at most 2^30 (4 GiB per matrix). Use fewer --rows or --cols.");

      // U[-10, 10) as the original: exp spans e^-20..1 within a row, so a
      // missing max subtraction or a wrong max shows.
      const auto x = cudalabs::random_floats(static_cast<std::size_t>(n), s.seed(1), -10.0f, 10.0f);
      const auto expected = cudalabs::ref::softmax_rows(x, rows, cols);
      const std::vector<double> ones(static_cast<std::size_t>(rows), 1.0);
      const double rel = softmax_rel_tolerance(cols);

      cudalabs::DeviceBuffer<float> d_x(x, "x"), d_y(static_cast<std::size_t>(n), "y");
      auto check = [&] {
        const auto y = d_y.download();
        // Element-wise relative error, and each row's sum within `rel` of 1
        // (outputs each within rel of exact, which sums to 1).
        return cudalabs::both(cudalabs::check_close(y, expected, {.abs = 0, .rel = rel}),
                              cudalabs::check_close(row_sums(y, rows, cols), ones, {.abs = rel, .rel = 0}));
      };
      auto poison = [&](cudaStream_t st) { d_y.poison(st); };
      const cudalabs::Work work{.bytes = 2.0 * 4.0 * static_cast<double>(n)};  // one read + one write: the minimum

      if (s.selected("block_per_row"))
        s.measure({.variant = "block_per_row",
                   .size = point,
                   .work = work,
                   .run = [&](cudaStream_t st) { softmax_block_per_row(d_x.data(), d_y.data(), rows, cols, st); },
                   .check = check,
                   .poison = poison,
                   .resources = cudalabs::resources_of(softmax_block_per_row_kernel, softmax_block)});

      if (s.selected("online"))
        s.measure({.variant = "online",
                   .size = point,
                   .work = work,
                   .run = [&](cudaStream_t st) { softmax_online(d_x.data(), d_y.data(), rows, cols, st); },
                   .check = check,
                   .poison = poison,
                   .resources = cudalabs::resources_of(softmax_online_kernel, softmax_block)});

      if (s.selected("row_in_registers")) {
        if (cols > softmax_registers_max_cols) {
          s.note("row_in_registers skipped at cols = " + std::to_string(cols) + ": a row of more than " +
                 std::to_string(softmax_registers_max_cols) + " floats does not fit in one block's registers.");
        } else {
          const SoftmaxLaunch launch = softmax_registers_shape(cols);
          s.measure({.variant = "row_in_registers",
                     .size = point,
                     .work = work,
                     .run = [&](cudaStream_t st) { softmax_registers(d_x.data(), d_y.data(), rows, cols, st); },
                     .check = check,
                     .poison = poison,
                     .resources = cudalabs::resources_of(launch.kernel, launch.threads)});
        }
      }

      if (s.selected("split_rows")) {
        const auto workspace_bytes = static_cast<std::size_t>(softmax_split_workspace_bytes(rows, cols));
        cudalabs::DeviceBuffer<MaxSum> d_partial(workspace_bytes / sizeof(MaxSum), "split_rows (max, sum) pairs");
        cudalabs::Measurement m{
            .variant = "split_rows",
            .size = point,
            .work = work,
            .run = [&](cudaStream_t st) { softmax_split_rows(d_x.data(), d_y.data(), d_partial.data(), rows, cols, st); },
            .check = check,
            .poison = poison,
            .resources = cudalabs::resources_of(softmax_split_partials_kernel, split_threads)};
        m.extra["chunks_per_row"] = softmax_split_chunks(cols);  // set apart: g++ 12 warns on the designated form
        s.measure(m);
      }
    }
  });
}

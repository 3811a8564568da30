// Lab 12 — softmax: a memory-bound kernel with two block reductions per row.
//
// Each row of x[rows×cols] becomes exp(x - max) / sum(exp(x - max)). The work
// is a few flops per element, so the only honest measure is bytes: at least one
// read and one write of the matrix (8 bytes per element), reported as GB/s and
// as % of the device-to-device copy bandwidth measured in the same run. Every
// variant handles any row length, not only multiples of the block size.
//
// Variants (kernels in softmax.cuh, called through kernels.hpp):
//   block_per_row     the original: one 256-thread block per row, three passes
//                     (max, sum of exp, scale) each re-reading the row
//   online            max and sum in one pass (online rescaling), then write:
//                     2 reads + 1 write
//   row_in_registers  float4 loads, the row kept in registers: 1 read + 1 write
//                     (rows up to 16384 floats)
//   split_rows        for long rows: several blocks per row, (max, sum) pairs
//                     combined by a second launch
// --inputs large|masked draws the inputs that expose a softmax's shortcuts
// (softmax_inputs, labs/shared/input_kinds.hpp).
//
// Run: make run LAB=12    (defaults: 512×512, 16384×1024, 4096×4096, 128×524288)
#include <algorithm>
#include <cmath>

#include <cudalabs/lab.hpp>
#include <cudalabs/random.hpp>
#include <cudalabs/reference.hpp>

#include "input_kinds.hpp"
#include "kernels.hpp"
#include "softmax_check.hpp"

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
      .flags = {inputs_flag("random U[-10, 10); large: rows offset by ±1e4..2e4 (exp overflows unless\n"
                            "                      the row max is subtracted); masked: -inf entries, one finite\n"
                            "                      entry at least per row")},
  };
  const auto inputs = [](const cudalabs::Options& o) { return input_kind(o, {"random", "large", "masked"}); };
  if (const int rc = precheck_usage(spec, argc, argv, inputs); rc != 0) return rc;

  return cudalabs::run_lab(argc, argv, spec, [&](cudalabs::Session& s) {
    const InputKind kind = inputs(s.options());
    for (const auto& point : s.points()) {
      const std::int64_t rows = point.at("rows");
      const int cols = static_cast<int>(point.at("cols"));
      const std::int64_t n = rows * cols;
      // 4 GiB per float matrix; the CPU reference holds 8 GiB of doubles on top.
      if (n > (std::int64_t{1} << 30))
        throw cudalabs::UsageError("rows × cols = " + std::to_string(n) +
                                   " elements; at most 2^30 (4 GiB per matrix). Use fewer --rows or --cols.");

      cudalabs::DeviceBuffer<float> d_x(static_cast<std::size_t>(n), "x"), d_y(static_cast<std::size_t>(n), "y");
      std::vector<double> expected;
      // Inputs from a seed, uploaded, and their reference: once now, and again
      // with a fresh seed before each variant's last check.
      auto new_inputs = [&](std::uint64_t seed) {
        const auto x = softmax_inputs(kind, rows, cols, seed);
        expected = cudalabs::ref::softmax_rows(x, rows, cols);
        d_x.upload(x);
      };
      new_inputs(s.seed());
      const std::vector<double> ones(static_cast<std::size_t>(rows), 1.0);
      const double rel = softmax_rel_tolerance(cols);
      auto check = [&] {
        const auto y = d_y.download();
        // Element-wise relative error, and each row's sum within `rel` of 1
        // (outputs each within rel of exact, which sums to 1).
        return cudalabs::both(cudalabs::check_close(y, expected, {.abs = softmax_abs_tolerance, .rel = rel}),
                              cudalabs::check_close(row_sums(y, rows, cols), ones, {.abs = rel, .rel = 0}));
      };
      auto poison = [&](cudaStream_t st) { d_y.poison(st); };
      const cudalabs::Work work{.bytes = 2.0 * 4.0 * static_cast<double>(n)};  // one read + one write: the minimum

      if (s.selected("block_per_row"))
        s.measure({.variant = "block_per_row",
                   .size = point,
                   .work = work,
                   .run =
                       [&](cudaStream_t st) {
                         lab12::softmax_block_per_row(d_x.data(), d_y.data(), rows, cols, st);
                       },
                   .check = check,
                   .poison = poison,
                   .new_inputs = new_inputs,
                   .resources = lab12::softmax_block_per_row_resources()});

      if (s.selected("online"))
        s.measure({.variant = "online",
                   .size = point,
                   .work = work,
                   .run = [&](cudaStream_t st) { lab12::softmax_online(d_x.data(), d_y.data(), rows, cols, st); },
                   .check = check,
                   .poison = poison,
                   .new_inputs = new_inputs,
                   .resources = lab12::softmax_online_resources()});

      if (s.selected("row_in_registers")) {
        const int max_cols = lab12::softmax_registers_max_cols();
        if (cols > max_cols) {
          s.note("row_in_registers skipped at cols = " + std::to_string(cols) + ": a row of more than " +
                 std::to_string(max_cols) + " floats does not fit in one block's registers.");
        } else {
          s.measure({.variant = "row_in_registers",
                     .size = point,
                     .work = work,
                     .run = [&](cudaStream_t st) { lab12::softmax_registers(d_x.data(), d_y.data(), rows, cols, st); },
                     .check = check,
                     .poison = poison,
                     .new_inputs = new_inputs,
                     .resources = lab12::softmax_registers_resources(cols)});
        }
      }

      if (s.selected("split_rows")) {
        cudalabs::DeviceBuffer<std::byte> d_workspace(
            static_cast<std::size_t>(lab12::softmax_split_workspace_bytes(rows, cols)), "split_rows (max, sum) pairs");
        cudalabs::Measurement m{
            .variant = "split_rows",
            .size = point,
            .work = work,
            .run =
                [&](cudaStream_t st) {
                  lab12::softmax_split_rows(d_x.data(), d_y.data(), d_workspace.data(), rows, cols, st);
                },
            .check = check,
            .poison = poison,
            .new_inputs = new_inputs,
            .resources = lab12::softmax_split_rows_resources()};
        // Set apart: g++ 12 warns on the designated form.
        m.extra["chunks_per_row"] = lab12::softmax_split_chunks(cols);
        s.measure(m);
      }
    }
  });
}

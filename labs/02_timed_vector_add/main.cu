// Lab 02 — timing vector add honestly, against the hardware's ceiling.
//
// The same c = a + b, timed with CUDA events (warm-up, then repeated until the
// 95% confidence interval is within 2% of the mean; median reported), as GB/s
// (12 bytes per element: two reads, one write) and as % of the device-to-device
// copy bandwidth measured in this same run.
//
// Variants:
//   cpu              one CPU core, a plain loop (host clock)
//   one_per_thread   lab 01's kernel: one thread per element
//   grid_stride      a grid the size of the GPU, threads stride through the array
//   float4           grid_stride with 16-byte loads and stores
//
// Inputs (--inputs): uniform values in [-100, 100), or specials: a quarter of
// them ±Inf, NaNs, ±0, subnormals, ±FLT_MAX (labs/shared/value_kinds.hpp), where
// c = a + b is still defined: NaN in, NaN out; Inf + -Inf = NaN; FLT_MAX +
// FLT_MAX = +Inf; subnormals added exactly. A kernel that computes anything but
// one float addition per element (a sum in half precision, (a + b) scaled and
// unscaled, a select that skips zeros) fails there.
//
// Run: make run LAB=02    (defaults: n = 2^20, 2^24, 2^28)
//      make tune LAB=02    (float4 over threads per block x blocks per SM, at n = 2^28)
#include <algorithm>
#include <cmath>

#include <cudalabs/lab.hpp>
#include <cudalabs/random.hpp>
#include <cudalabs/sweep.hpp>

#include "../01_vector_add/vector_add.cuh"  // the course's lab 01 kernel and CPU loop: the one_per_thread and cpu rows
#include "kernels.hpp"
#include "value_kinds.hpp"

int main(int argc, char** argv) {
  // float4's launch is tunable: --sweep measures block × blocks_per_sm (lab 28
  // explains the sweep); by hand, the kernel file's block and as many blocks as are resident.
  const cudalabs::Tuning tuning = {cudalabs::grid_stride_tunable("float4", lab02::vector_add_float4_block(),
                                                                 "block=64..1024 blocks_per_sm=0,1,2,4,8")};
  const cudalabs::LabSpec spec{
      .name = "02_timed_vector_add",
      .title = "vector add timed with CUDA events, as % of the copy bandwidth",
      .about = "Times c = a + b with CUDA events and reports GB/s against the device-to-device copy bandwidth\n"
               "measured in the same run. At 2^28 elements (3 GiB moved) the kernel is limited by DRAM.",
      .sizes = {{.name = "n",
                 .help = "elements per vector",
                 .full = {1 << 20, 1 << 24, 1 << 28},
                 .quick = {1, 255, 257, 1000003},
                 .max = std::int64_t{1} << 31}},
      .variants = {{"cpu", "one CPU core, a plain loop (host clock)"},
                   {"one_per_thread", "lab 01's kernel: one thread per element"},
                   {"grid_stride", "a grid the size of the GPU, threads stride through the array"},
                   {"float4", "grid_stride with 16-byte loads and stores"}},
      .flags = {value_kinds::vector_add_inputs_flag()},
  };
  return cudalabs::run_tuned_lab(argc, argv, spec, tuning, [](cudalabs::Session& s, cudalabs::Tuner& tuner) {
    const bool specials = s.options().text("inputs") == "specials";
    for (const auto& point : s.points()) {
      const std::int64_t n = point.at("n");
      cudalabs::DeviceBuffer<float> d_a(n, "a"), d_b(n, "b"), d_c(n, "c");
      std::vector<float> a, b;
      std::vector<double> expected;
      // Inputs from a seed, on the host (the cpu row) and uploaded, and their
      // reference: once now, and again with a fresh seed for the harness's last check.
      // The reference is the double sum rounded to float: exactly what one float
      // addition gives (double holds the sum of two floats to well past the
      // rounding), overflow to ±Inf included; NaN where IEEE says NaN.
      auto make_inputs = [&](std::uint64_t seed) {
        a = value_kinds::uniform_or_specials(specials, n, cudalabs::mix_seed(seed, 1), -100.0f, 100.0f);
        b = value_kinds::uniform_or_specials(specials, n, cudalabs::mix_seed(seed, 2), -100.0f, 100.0f);
        expected = value_kinds::vector_add_reference(a, b, /*rounded=*/true);
        d_a.upload(a);
        d_b.upload(b);
      };
      make_inputs(s.seed());
      // One float addition rounds once: within half an ulp (2^-24 relative) of the exact sum.
      const cudalabs::Tolerance tol{.abs = 0, .rel = 6e-8};
      const cudalabs::Work work{.bytes = 3.0 * 4 * n, .flops = 1.0 * n};

      if (s.selected("cpu")) {
        std::vector<float> c(n);
        s.measure({.variant = "cpu",
                   .size = point,
                   .work = work,
                   .run = [&](cudaStream_t) { vector_add_cpu(a.data(), b.data(), c.data(), n); },
                   .check = [&] { return cudalabs::check_close_ieee(c, expected, tol); },
                   .poison = [&](cudaStream_t) { std::fill(c.begin(), c.end(), NAN); },
                   .new_inputs = make_inputs,
                   .expect = cudalabs::Expect::host,
                   .ceiling = cudalabs::CeilingKind::none,
                   .clock = cudalabs::Clock::host});
      }

      auto device_check = [&] { return cudalabs::check_close_ieee(d_c.download(), expected, tol); };
      auto poison = [&](cudaStream_t st) { d_c.poison(st); };

      if (s.selected("one_per_thread"))
        s.measure({.variant = "one_per_thread",
                   .size = point,
                   .work = work,
                   .run = [&](cudaStream_t st) { vector_add(d_a.data(), d_b.data(), d_c.data(), n, st); },
                   .check = device_check,
                   .poison = poison,
                   .new_inputs = make_inputs,
                   .resources = cudalabs::resources_of(vector_add_kernel, vector_add_block)});

      if (s.selected("grid_stride")) {
        const unsigned blocks = lab02::vector_add_grid_stride_blocks(n);
        s.measure({.variant = "grid_stride",
                   .size = point,
                   .work = work,
                   .run = [&](cudaStream_t st) { lab02::vector_add_grid_stride(d_a.data(), d_b.data(), d_c.data(), n, blocks, st); },
                   .check = device_check,
                   .poison = poison,
                   .new_inputs = make_inputs,
                   .resources = lab02::vector_add_grid_stride_resources()});
      }

      if (s.selected("float4"))
        tuner.run_grid_stride(
            {.variant = "float4", .size = point, .work = work, .check = device_check, .poison = poison,
             .new_inputs = make_inputs},
            {.work_items = std::max<std::int64_t>(n / 4, 1),
             .hand_blocks = [n] { return lab02::vector_add_float4_blocks(n); },
             .resources = [](int block) { return lab02::vector_add_float4_resources(block); },
             .launch = [&](const cudalabs::GridStrideLaunch& l, cudaStream_t st) {
               if (l.hand_chosen) lab02::vector_add_float4(d_a.data(), d_b.data(), d_c.data(), n, l.blocks, st);
               else lab02::vector_add_float4_shaped(d_a.data(), d_b.data(), d_c.data(), n, l.blocks, l.block, st);
             }});
    }
  });
}

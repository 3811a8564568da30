// Lab 01 — vector add: the shape of every CUDA program.
//
// Allocate on the device, copy inputs up, launch a grid of threads that each
// add one pair, copy the result back, check it against the CPU.
//
// Variants:
//   one_per_thread   one thread per element, 256-thread blocks, bounds check
//
// Run: make run LAB=01            (or: build/labs/01_vector_add --size 1000)
#include <cudalabs/lab.hpp>
#include <cudalabs/random.hpp>
#include <cudalabs/reference.hpp>

#include "kernels.hpp"

int main(int argc, char** argv) {
  const cudalabs::LabSpec spec{
      .name = "01_vector_add",
      .title = "vector add: allocate, copy, launch, check",
      .about = "c = a + b on random floats, one thread per element, checked against the CPU.",
      .sizes = {{.name = "n", .help = "elements per vector", .full = {1 << 20}, .quick = {1000, 1 << 20}, .max = std::int64_t{1} << 31}},
      .variants = {{"one_per_thread", "one thread per element, 256-thread blocks, bounds check"}},
  };
  return cudalabs::run_lab(argc, argv, spec, [](cudalabs::Session& s) {
    for (const auto& point : s.points()) {
      const std::int64_t n = point.at("n");
      cudalabs::DeviceBuffer<float> d_a(n, "a"), d_b(n, "b"), d_c(n, "c");
      std::vector<double> expected;
      // Inputs from a seed, uploaded, and their reference: once now, and again
      // with a fresh seed for the harness's last check.
      auto make_inputs = [&](std::uint64_t seed) {
        const auto a = cudalabs::random_floats(n, cudalabs::mix_seed(seed, 1), -100.0f, 100.0f);
        const auto b = cudalabs::random_floats(n, cudalabs::mix_seed(seed, 2), -100.0f, 100.0f);
        expected = cudalabs::ref::vector_add(a, b);
        d_a.upload(a);
        d_b.upload(b);
      };
      make_inputs(s.seed());
      s.measure({
          .variant = "one_per_thread",
          .size = point,
          .work = {.bytes = 3.0 * 4 * n, .flops = 1.0 * n},
          .run = [&](cudaStream_t st) { lab01::vector_add(d_a.data(), d_b.data(), d_c.data(), n, st); },
          // One float addition rounds once: within half an ulp of the exact sum.
          .check = [&] { return cudalabs::check_close(d_c.download(), expected, {.abs = 0, .rel = 6e-8}); },
          .poison = [&](cudaStream_t st) { d_c.poison(st); },
          .new_inputs = make_inputs,
          .resources = lab01::vector_add_resources(),
      });
    }
  });
}

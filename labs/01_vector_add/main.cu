// Lab 01 — vector add: the shape of every CUDA program.
//
// Allocate on the device, copy inputs up, launch a grid of threads that each
// add one pair, wait for it, copy the result back, check it against the CPU,
// free. This file makes each of those runtime calls itself, every one checked
// with the course's macro (CUDALABS_CHECK, <cudalabs/error.hpp>): a failure
// names the call, the file and line, and the error, and the lab exits 3.
// From lab 02 on the shared library does the same steps (README.md, "What the
// library does for the later labs").
//
// Variants:
//   one_per_thread   one thread per element, 256-thread blocks, bounds check
//
// Inputs (--inputs): uniform values in [-100, 100), or specials: a quarter of
// them ±Inf, NaNs, ±0, subnormals, ±FLT_MAX (labs/shared/value_kinds.hpp),
// where c = a + b is still defined by IEEE 754: NaN in, NaN out; Inf + -Inf =
// NaN; FLT_MAX + FLT_MAX = +Inf; subnormals added exactly. A kernel that does
// anything but one float addition per element fails there.
//
// Run: make run LAB=01            (or: build/labs/01_vector_add --size 1000)
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <cudalabs/error.hpp>
#include <cudalabs/lab.hpp>
#include <cudalabs/random.hpp>

#include "kernels.hpp"
#include "value_kinds.hpp"

int main(int argc, char** argv) {
  const cudalabs::LabSpec spec{
      .name = "01_vector_add",
      .title = "vector add: allocate, copy, launch, check",
      .about = "c = a + b on random floats, one thread per element, checked against the CPU.",
      .sizes = {{.name = "n", .help = "elements per vector", .full = {1 << 20}, .quick = {1000, 1 << 20}, .max = std::int64_t{1} << 31}},
      .variants = {{"one_per_thread", "one thread per element, 256-thread blocks, bounds check"}},
      .flags = {value_kinds::vector_add_inputs_flag()},
  };
  // run_lab reads the flags, picks the GPU and turns every error into its exit
  // code; the Session times and checks the variant and writes its records.
  return cudalabs::run_lab(argc, argv, spec, [](cudalabs::Session& s) {
    const bool specials = s.options().text("inputs") == "specials";
    for (const auto& point : s.points()) {
      const std::int64_t n = point.at("n");
      const std::size_t bytes = static_cast<std::size_t>(n) * sizeof(float);

      // 1. Allocate the three vectors in the GPU's memory. A size the device
      //    cannot hold is said plainly before cudaMalloc reports it as a bare
      //    cudaErrorMemoryAllocation.
      std::size_t free_bytes = 0, total_bytes = 0;
      CUDALABS_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
      if (3 * bytes > free_bytes)
        throw cudalabs::CudaError("vectors a, b and c need " + std::to_string(3 * bytes) + " bytes; the device has " +
                                  std::to_string(free_bytes) + " free of " + std::to_string(total_bytes) +
                                  ". Use a smaller --size.");
      float* d_a = nullptr;
      float* d_b = nullptr;
      float* d_c = nullptr;
      CUDALABS_CHECK(cudaMalloc(&d_a, bytes));
      CUDALABS_CHECK(cudaMalloc(&d_b, bytes));
      CUDALABS_CHECK(cudaMalloc(&d_c, bytes));

      // 2. Make the inputs on the CPU and copy them up, with the answer the GPU
      //    must give: once now, and again from a fresh seed for the harness's
      //    last check (a kernel that is right only on its first inputs fails).
      std::vector<double> expected;
      //    With specials the answer is the double sum rounded to float: what
      //    one float addition gives, overflow to ±Inf and NaN included.
      auto make_inputs = [&](std::uint64_t seed) {
        const auto a = value_kinds::uniform_or_specials(specials, n, cudalabs::mix_seed(seed, 1), -100.0f, 100.0f);
        const auto b = value_kinds::uniform_or_specials(specials, n, cudalabs::mix_seed(seed, 2), -100.0f, 100.0f);
        expected = value_kinds::vector_add_reference(a, b, specials);
        CUDALABS_CHECK(cudaMemcpy(d_a, a.data(), bytes, cudaMemcpyHostToDevice));
        CUDALABS_CHECK(cudaMemcpy(d_b, b.data(), bytes, cudaMemcpyHostToDevice));
        // From pageable memory cudaMemcpy may return before the copy lands, and
        // the harness launches on a stream of its own that does not wait for it.
        CUDALABS_CHECK(cudaDeviceSynchronize());
      };
      make_inputs(s.seed());

      s.measure({
          .variant = "one_per_thread",
          .size = point,
          .work = {.bytes = 3.0 * 4 * n, .flops = 1.0 * n},
          // 3. Launch. The launcher in vector_add.cuh works out the grid,
          //    ceil(n / 256) blocks of 256 threads, launches
          //    vector_add_kernel<<<blocks, 256, 0, stream>>>, and asks
          //    cudaGetLastError whether the launch was accepted
          //    (CUDALABS_CHECK_LAUNCH). It does not wait: the kernel runs while
          //    the CPU goes on, and the harness times it with events.
          .run = [&](cudaStream_t stream) { lab01::vector_add(d_a, d_b, d_c, n, stream); },
          .check =
              [&] {
                // 4. Wait for the kernel; an error inside it surfaces here.
                CUDALABS_CHECK(cudaDeviceSynchronize());
                // 5. Copy the result back and compare it with the CPU's. One
                //    float addition rounds once: within half an ulp of the sum.
                std::vector<float> c(static_cast<std::size_t>(n));
                CUDALABS_CHECK(cudaMemcpy(c.data(), d_c, bytes, cudaMemcpyDeviceToHost));
                //    Where the reference is NaN or ±Inf (specials), the same.
                return cudalabs::check_close_ieee(c, expected, {.abs = 0, .rel = 6e-8});
              },
          // Before each run c is filled with 0xFF bytes (NaN): an element the
          // kernel leaves unwritten fails the check instead of passing with an
          // earlier run's value.
          .poison = [&](cudaStream_t stream) { CUDALABS_CHECK(cudaMemsetAsync(d_c, 0xFF, bytes, stream)); },
          .new_inputs = make_inputs,
          .resources = lab01::vector_add_resources(),
      });

      // 6. Free the device memory.
      CUDALABS_CHECK(cudaFree(d_a));
      CUDALABS_CHECK(cudaFree(d_b));
      CUDALABS_CHECK(cudaFree(d_c));
    }
  });
}

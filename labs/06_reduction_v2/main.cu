// Lab 06 — reduction v2: two elements per thread while loading, half the blocks.
//
// Lab 04's tree leaves half its threads idle from the first step and spends 8
// barrier steps on every 1 KB of input. Here each thread loads two elements a
// block apart and adds them in a register first: a block of 256 threads now
// reduces 512 elements, so the grid has half the blocks, each thread has two
// loads in flight instead of one, and the tree runs once per 2 KB.
//
// Variants:
//   cub        cub::DeviceReduce::Sum (the library baseline, measured first)
//   two_loads  each thread adds two elements as it loads, then lab 04's tree; one launch per level
//
// Run: make run LAB=06    (defaults: n = 2^20, 2^28; --inputs cancel sums +v/-v pairs among small values)
#include <cudalabs/lab.hpp>

#include "reduction_driver.cuh"
#include "kernels.hpp"

int main(int argc, char** argv) {
  const cudalabs::LabSpec spec{
      .name = "06_reduction_v2",
      .title = "reduction v2: two elements per thread while loading, half the blocks",
      .about = "Sums n random floats on the GPU: each thread of a 256-thread block loads two elements a block\n"
               "apart and adds them before lab 04's shared-memory tree, so each block covers 512 elements.\n"
               "cub::DeviceReduce::Sum runs in the same run as the bar. Checked against a double-precision CPU\n"
               "sum with a tolerance that grows with sqrt(n).",
      .sizes = {reduction_size()},
      .variants = {cub_variant(),
                   {"two_loads", "each thread adds two elements as it loads, then lab 04's tree; one launch per level"}},
      .flags = {inputs_flag()},
  };
  return cudalabs::run_lab(argc, argv, spec, [](cudalabs::Session& s) {
    for (const auto& point : s.points()) {
      SumProblem problem(s, point.at("n"));
      measure_cub(s, point, problem);
      if (s.selected("two_loads"))
        measure_multi_pass(s, point, problem, "two_loads", lab06::reduce_two_loads, lab06::reduce_two_loads_per_block(),
                           lab06::reduce_two_loads_resources());
    }
  });
}

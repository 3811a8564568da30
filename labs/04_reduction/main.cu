// Lab 04 — reduction v1: a sum in a shared-memory tree, against CUB.
//
// Summing n floats reads 4n bytes and does almost no arithmetic, so the
// question is how close a kernel gets to the memory bandwidth. The classic
// first answer: each block of 256 threads loads 256 elements into shared
// memory and adds them pairwise in 8 halving steps with a barrier between
// them; the same kernel runs again over the per-block sums until one is left.
// cub::DeviceReduce::Sum, measured in the same run, is the bar. Labs 06 and 07
// change one thing each.
//
// Variants:
//   cub    cub::DeviceReduce::Sum (the library baseline, measured first)
//   tree   one element per thread, halving tree in shared memory, one launch per level
//
// Run: make run LAB=04    (defaults: n = 2^20, 2^28; --inputs cancel sums +v/-v pairs among small values)
#include <cudalabs/lab.hpp>

#include "kernels.hpp"
#include "reduction_driver.cuh"

int main(int argc, char** argv) {
  const cudalabs::LabSpec spec{
      .name = "04_reduction",
      .title = "reduction v1: shared-memory tree vs cub::DeviceReduce::Sum",
      .about = "Sums n random floats on the GPU with the classic shared-memory tree (block 256, one element per\n"
               "thread, halving stride, one launch per level until one value is left) and with\n"
               "cub::DeviceReduce::Sum in the same run. Checked against a double-precision CPU sum with a\n"
               "tolerance that grows with sqrt(n). At 2^28 floats (1 GiB) the sum is DRAM-bound; at 2^20\n"
               "(4 MB, in L2) it takes a few microseconds and launch overhead dominates.",
      .sizes = {reduction_size()},
      .variants = {cub_variant(), {"tree", "one element per thread, halving tree in shared memory, one launch per level"}},
      .flags = {inputs_flag()},
  };
  return cudalabs::run_lab(argc, argv, spec, [](cudalabs::Session& s) {
    for (const auto& point : s.points()) {
      SumProblem problem(s, point.at("n"));
      measure_cub(s, point, problem);
      if (s.selected("tree"))
        measure_multi_pass(s, point, problem, "tree", lab04::reduce_tree, lab04::reduce_tree_per_block(),
                           lab04::reduce_tree_resources());
    }
  });
}

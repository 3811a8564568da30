// Lab 07 — reduction v3: warp shuffles, then reading at the speed of DRAM.
//
// Lab 06's tree still spends 8 barrier steps in shared memory per block. The
// last five steps of any block reduction happen inside one warp, whose 32 lanes
// run in lock step: __shfl_down_sync adds a register of another lane with no
// shared memory and no barrier. That is v3 proper (warp_shuffle). Its loads are
// still lab 06's, 8 bytes per thread per block, and that, not the finish, is what
// keeps it from DRAM speed; warp_shuffle_float4 keeps the finish and changes the
// reads: a grid that fills the GPU once, each thread striding through the array
// with 16-byte loads, four in flight. This table shows the whole progression
// against cub::DeviceReduce::Sum, measured in the same run.
//
// Variants:
//   cub                  cub::DeviceReduce::Sum (the library baseline, measured first)
//   tree                 lab 04: one element per thread, shared-memory tree
//   two_loads            lab 06: two elements per thread while loading, then the tree
//   warp_shuffle         lab 06's loads, warp shuffles for the last five steps
//   warp_shuffle_float4  grid-stride float4 loads (4 in flight per thread), shuffle finish, 2 launches
//
// Run: make run LAB=07    (defaults: n = 2^20, 2^28; --offset 1 starts the input off a 16-byte boundary;
//                          --inputs cancel sums +v/-v pairs among small values)
//      make tune LAB=07    (warp_shuffle_float4's grid, in blocks per SM, at n = 2^28)
#include <algorithm>
#include <cstdio>

#include <cudalabs/lab.hpp>
#include <cudalabs/sweep.hpp>

// The tree and two_loads rows: the course's kernels of labs 04 and 06, from the
// course tree even when a submission of those labs is graded.
#include "../04_reduction/reduction.cuh"
#include "reduction_driver.cuh"
#include "../06_reduction_v2/reduction_v2.cuh"
#include "kernels.hpp"

namespace {

// The whole sum in two launches of reduce_warp_shuffle_float4: a grid that fills
// the GPU once (SMs x resident blocks: 132 x 8 = 1056 blocks of 256 on an H100)
// writes one partial per block, then a single block of the same kernel sums
// those partials (4 KB, in L2). Deterministic and nothing to reset between runs,
// unlike an atomicAdd finish.
class GridStrideSum {
 public:
  // `blocks`: the first launch's grid (--sweep); by default the kernel file's choice.
  explicit GridStrideSum(std::int64_t n) : GridStrideSum(n, lab07::reduce_warp_shuffle_float4_blocks(n)) {}
  GridStrideSum(std::int64_t n, unsigned blocks)
      : n_(n), blocks_(blocks), partials_(blocks_ > 1 ? blocks_ : 0, "per-block partial sums") {}

  void run(const float* in, float* out, cudaStream_t stream) {
    if (blocks_ == 1) {
      lab07::reduce_warp_shuffle_float4(in, out, n_, 1, stream);
      return;
    }
    lab07::reduce_warp_shuffle_float4(in, partials_.data(), n_, blocks_, stream);
    lab07::reduce_warp_shuffle_float4(partials_.data(), out, blocks_, 1, stream);
  }

  void poison(cudaStream_t stream) {
    if (partials_.size() > 0) partials_.poison(stream);
  }

  unsigned blocks() const { return blocks_; }
  int launches() const { return blocks_ > 1 ? 2 : 1; }

 private:
  std::int64_t n_;
  unsigned blocks_;
  cudalabs::DeviceBuffer<float> partials_;
};

// One note line per size: every kernel's throughput as % of the final one's,
// the progression in one line.
void note_progression(cudalabs::Session& s) {
  const std::string last = "warp_shuffle_float4";
  for (const auto& point : s.points()) {
    auto gbps = [&](const std::string& variant) {
      for (const auto& r : s.records())
        if (r.size == point && r.variant == variant && r.timed && r.passed) return r.gbps;
      return 0.0;
    };
    if (gbps(last) <= 0) continue;
    std::string line = cudalabs::to_string(point) + ": throughput as % of " + last + "'s:";
    bool any = false;
    for (const char* v : {"tree", "two_loads", "warp_shuffle"}) {
      if (gbps(v) <= 0) continue;
      char buf[64];
      std::snprintf(buf, sizeof buf, "%s %s %.1f%%", any ? "," : "", v, 100.0 * gbps(v) / gbps(last));
      line += buf;
      any = true;
    }
    if (any) s.note(line);
  }
}

// warp_shuffle_float4's launch parameter, for --sweep (lab 28 explains the
// sweep): the grid. Its block and loads in flight are compile-time constants of
// the kernel file; tuning them would take a template on both behind kernels.hpp.
cudalabs::Tuning float4_tuning() {
  return {{.variant = "warp_shuffle_float4",
           .params = {cudalabs::blocks_per_sm_tunable()},
           .default_sweep = "blocks_per_sm=0,1..8:+1,12,16,32"}};
}

}  // namespace

int main(int argc, char** argv) {
  const cudalabs::Tuning tuning = float4_tuning();
  const cudalabs::LabSpec spec{
      .name = "07_reduction_v3",
      .title = "reduction v3: warp shuffles, then grid-stride float4 loads, vs cub::DeviceReduce::Sum",
      .about = "Sums n random floats on the GPU with every version of the course's reduction side by side: lab 04's\n"
               "shared-memory tree, lab 06's two loads per thread, v3's warp-shuffle finish, and v3 with\n"
               "grid-stride 16-byte loads, against cub::DeviceReduce::Sum in the same run. All compute the whole\n"
               "sum on the GPU; each is checked against a double-precision CPU sum (tolerance grows with sqrt(n)).\n"
               "At 2^28 floats (1 GiB) compare GB/s with the copy ceiling; at 2^20 (4 MB, in L2) compare times.",
      .sizes = {reduction_size()},
      .variants = {cub_variant(),
                   {"tree", "lab 04: one element per thread, shared-memory tree"},
                   {"two_loads", "lab 06: two elements per thread while loading, then the tree"},
                   {"warp_shuffle", "lab 06's loads, warp shuffles for the last five steps"},
                   {"warp_shuffle_float4", "grid-stride float4 loads (4 in flight per thread), shuffle finish, 2 launches"}},
      .flags = {{.name = "offset",
                 .help = "start the input this many floats past a 16-byte boundary (tests unaligned float4 reads)",
                 .default_value = "0",
                 .min = 0,
                 .max = 3},
                inputs_flag(),
                cudalabs::sweep_flag(tuning)},
  };
  return cudalabs::run_tuned_lab(argc, argv, spec, tuning, [](cudalabs::Session& s, cudalabs::Tuner& tuner) {
    const std::int64_t offset = s.options().integer("offset");
    for (const auto& point : s.points()) {
      SumProblem problem(s, point.at("n"), offset);
      measure_cub(s, point, problem);
      if (s.selected("tree"))
        measure_multi_pass(s, point, problem, "tree", reduce_tree, tree_per_block,
                           cudalabs::resources_of(reduce_tree_kernel, tree_block));
      if (s.selected("two_loads"))
        measure_multi_pass(s, point, problem, "two_loads", reduce_two_loads, two_loads_per_block,
                           cudalabs::resources_of(reduce_two_loads_kernel, two_loads_block));
      if (s.selected("warp_shuffle"))
        measure_multi_pass(s, point, problem, "warp_shuffle", lab07::reduce_warp_shuffle,
                           lab07::reduce_warp_shuffle_per_block(), lab07::reduce_warp_shuffle_resources());
      // The kernel file's grid, or, under --sweep, each grid of the sweep.
      if (s.selected("warp_shuffle_float4")) {
        const int block = lab07::reduce_warp_shuffle_float4_block();
        tuner.run("warp_shuffle_float4", point, [&](const cudalabs::TunePoint& t) {
          const bool by_hand = t == tuner.hand_chosen("warp_shuffle_float4");
          return cudalabs::TuneCase{
              .shape = {.block_threads = block},
              .resources = [] { return lab07::reduce_warp_shuffle_float4_resources(); },
              .measure = [&, t, by_hand](cudalabs::TuneRun how) -> const cudalabs::Record& {
                const std::int64_t float4s = std::max<std::int64_t>(problem.n() / 4, 1);
                GridStrideSum sum = by_hand ? GridStrideSum(problem.n())
                                            : GridStrideSum(problem.n(), static_cast<unsigned>(cudalabs::grid_for(
                                                                             t.at("blocks_per_sm"),
                                                                             how.resources.blocks_per_sm, s.device().sm_count,
                                                                             cudalabs::ceil_div<std::int64_t>(float4s, block))));
                how.extra["launches"] = sum.launches();
                how.extra["blocks"] = sum.blocks();
                return measure_sum(
                    s, point, problem, how.variant, [&](cudaStream_t st) { sum.run(problem.input(), problem.output(), st); },
                    [&](cudaStream_t st) { sum.poison(st); }, how.resources, std::move(how.extra));
              }};
        });
      }
    }
    note_progression(s);
  });
}

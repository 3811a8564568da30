// Lab 26 — cooperative groups: warps as objects, and a grid that waits for itself.
//
// Cooperative groups name sets of threads as objects with sync(), size() and
// thread_rank(). A warp becomes cg::tiled_partition<32>(block) and its sum
// cg::reduce(tile, v, cg::plus<float>()): lab 07's hand-written shuffles, by
// the library. The lanes that happen to be active inside a branch become
// cg::coalesced_threads(), the tool for warp-aggregated atomics. And the whole
// grid becomes cg::this_grid(): grid.sync() lets one kernel do what took two
// launches, provided every block is resident at once. That condition is the
// lesson's sharp edge: the co-residency limit is blocks-per-SM (from the
// occupancy API) x SMs, and a grid larger than it would wait forever, so
// cudaLaunchCooperativeKernel refuses it and this program refuses --blocks above
// it, with the numbers.
//
// Variants (the sum of n random floats, except select_positive):
//   cub              cub::DeviceReduce::Sum, the library baseline (always runs)
//   two_launch       lab 07's warp_shuffle_float4: hand-written shuffles; blocks, then one block over the partials
//   tile_reduce      the same two launches, warp step = cg::reduce over cg::tiled_partition<32>
//   grid_sync        one cooperative launch: blocks reduce, grid.sync(), block 0 sums the partials
//   persistent       one cooperative launch of a fixed grid that claims 16 KB work items from a global counter
//   select_positive  cg::coalesced_threads(): copy the positive inputs out, one atomicAdd per warp for the slots
//
// Inputs (--inputs, reduction_driver.cuh): uniform, cancel, inf, nan, and for
// select_positive nonpositive (nothing to keep) and positive (everything).
//
// Run: make run LAB=26   (sizes 2^16, 2^20, 2^28; --blocks N fixes the grid of the student kernels)
#include <cuda_runtime_api.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <iterator>
#include <limits>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <cudalabs/evidence.hpp>
#include <cudalabs/lab.hpp>
#include <cudalabs/math.hpp>
#include <cudalabs/random.hpp>

#include "reduction_driver.cuh"  // SumProblem, CUB, measure_sum
#include "../07_reduction_v3/reduction_v3.cuh"   // the two-launch reduction (the course's kernel)
#include "kernels.hpp"

namespace {

// ---- CPU reference ------------------------------------------------------------
// The sum's reference and checks are the reduction labs' SumProblem (reduction_driver.cuh):
// a double-precision CPU sum, checked with cudalabs::sum_tolerance.

// An order-free fingerprint of a multiset of floats: the sum, mod 2^64, of a
// 64-bit mix of each value's bits. The same values in any order give the same
// fingerprint; a missing, doubled or altered value changes it (a collision has
// odds of about 2^-64). select_positive's list has no fixed order, so this is
// how it is compared, in O(n), without sorting 2^27 floats.
std::uint64_t fingerprint(std::span<const float> values) {
  std::uint64_t f = 0;
  for (float v : values) f += cudalabs::mix_seed(std::bit_cast<std::uint32_t>(v), 0x5e1ec7);
  return f;
}

// What select_positive must produce from the input now on the device: how many
// elements are positive, and their fingerprint. Read back from the device, so it
// follows whatever SumProblem uploaded (--inputs, fresh seeds). A graded program
// keeps none (evidence::keeps_references): a launcher that read the count could
// write it without counting.
struct Selection {
  std::uint64_t count = 0, fingerprint = 0;

  static Selection of_device_input(const float* input, std::int64_t n) {
    if (!cudalabs::evidence::keeps_references()) return {};
    std::vector<float> host(static_cast<std::size_t>(n));
    CUDALABS_CHECK(cudaMemcpy(host.data(), input, host.size() * sizeof(float), cudaMemcpyDeviceToHost));
    std::vector<float> positive;
    std::copy_if(host.begin(), host.end(), std::back_inserter(positive), [](float x) { return x > 0.0f; });
    return {positive.size(), ::fingerprint(positive)};
  }
};

// select_positive's result: the count must be exact and out[0, count) must be
// the positive inputs, in any order.
cudalabs::CheckResult check_selection(const Selection& expected, const cudalabs::DeviceBuffer<float>& out,
                                      const cudalabs::DeviceBuffer<unsigned long long>& count) {
  cudalabs::CheckResult r;
  r.tolerance = {.abs = 0, .rel = 0};
  r.count = expected.count;
  // Both outputs observed before they are compared (cudalabs/evidence.hpp): a
  // judge compares the graded program's.
  std::vector<unsigned long long> counted = count.download();
  std::vector<float> list = out.download();
  for (const std::string& missing : {cudalabs::observe_in_place(std::span(counted)), cudalabs::observe_in_place(std::span(list))})
    if (!missing.empty()) return cudalabs::missing_output(expected.count, missing);
  if (!cudalabs::evidence::keeps_references()) return cudalabs::recorded_for_judge(list.size());
  const std::uint64_t got = counted[0];
  if (got != expected.count) {
    r.bad = 1;
    r.max_abs_err = static_cast<double>(got > expected.count ? got - expected.count : expected.count - got);
    r.note = "counted " + std::to_string(got) + " positive inputs, there are " + std::to_string(expected.count);
    return r;
  }
  if (fingerprint(std::span<const float>(list.data(), got)) != expected.fingerprint) {
    r.bad = 1;
    r.note = "the count is right (" + std::to_string(got) +
             ") but out[0, count) is not the set of positive inputs: one is missing, doubled or altered";
    return r;
  }
  r.passed = true;
  return r;
}

// select_positive at one size: its list and count, checked against the
// positive elements of the input now on the device.
void measure_select(cudalabs::Session& s, const cudalabs::Point& point, SumProblem& problem, unsigned blocks,
                    const cudalabs::KernelResources& resources) {
  const std::int64_t n = problem.n();
  cudalabs::DeviceBuffer<float> list(n, "selected elements");
  cudalabs::DeviceBuffer<unsigned long long> count(1, "selected count");
  Selection expected = Selection::of_device_input(problem.input(), n);
  cudalabs::Measurement m;
  m.variant = "select_positive";
  m.size = point;
  // Reads every float, writes ~half. A graded program's count is 0 (it keeps
  // none): its rates are recomputed from the judge's work (tools/grader/judge.py).
  m.work = {.bytes = 4.0 * n + 4.0 * static_cast<double>(expected.count)};
  m.run = [&](cudaStream_t st) { lab26::select_positive(problem.input(), list.data(), count.data(), n, blocks, st); };
  m.check = [&] { return check_selection(expected, list, count); };
  m.poison = [&](cudaStream_t st) {
    list.poison(st);
    count.poison(st);
  };
  m.reset = [&](cudaStream_t st) { count.zero(st); };
  m.new_inputs = [&](std::uint64_t seed) {
    problem.new_inputs(seed);
    expected = Selection::of_device_input(problem.input(), n);
  };
  m.resources = resources;
  m.extra = {{"blocks", static_cast<double>(blocks)}};
  s.measure(m);
}

// ---- the co-residency limit ---------------------------------------------------

struct CoResidency {
  std::string variant;
  cudalabs::KernelResources resources;
  int sm_count = 0;
  std::int64_t blocks() const { return static_cast<std::int64_t>(resources.blocks_per_sm) * sm_count; }
};

// Throws UsageError when --blocks asks a cooperative kernel for more blocks
// than the GPU can hold at once.
void check_blocks_fit(std::int64_t asked, const CoResidency& c) {
  if (asked <= c.blocks()) return;
  const auto& k = c.resources;
  throw cudalabs::UsageError(
      "--blocks " + std::to_string(asked) + ": " + c.variant +
      " needs every block of its grid co-resident (grid.sync() waits for all of them), and this GPU holds at most " +
      std::to_string(c.blocks()) + ": cudaOccupancyMaxActiveBlocksPerMultiprocessor allows " +
      std::to_string(k.blocks_per_sm) + " blocks of " + std::to_string(k.block_threads) + " threads per SM (" +
      std::to_string(k.registers) + " registers per thread, " + std::to_string(k.static_smem) +
      " B of shared memory per block) x " + std::to_string(c.sm_count) +
      " SMs. A block that cannot start never reaches grid.sync(), so the others would wait for it forever; "
      "cudaLaunchCooperativeKernel refuses such a grid. Use --blocks " + std::to_string(c.blocks()) +
      " or fewer (0 picks the limit).");
}

void require_cooperative_launch(const cudalabs::DeviceInfo& dev) {
  int supported = 0;
  CUDALABS_CHECK(cudaDeviceGetAttribute(&supported, cudaDevAttrCooperativeLaunch, dev.id));
  if (!supported)
    throw cudalabs::NoDeviceError("grid_sync and persistent need cooperative launches (cudaDevAttrCooperativeLaunch), which " +
                                  dev.name + " does not support here. Run the other variants with --variant.");
}

// Blocks for a grid-stride kernel: `asked` when given, else as many as are
// resident at once, never more than the work has (one float4 per thread).
unsigned grid_blocks(std::int64_t asked, std::int64_t resident, std::int64_t useful) {
  if (asked > 0) return static_cast<unsigned>(asked);
  return static_cast<unsigned>(std::clamp<std::int64_t>(useful, 1, std::max<std::int64_t>(resident, 1)));
}

// One note per size: grid_sync's time against two_launch's (the launch it
// saves) and against CUB's.
void note_single_launch(cudalabs::Session& s) {
  for (const auto& point : s.points()) {
    auto ms = [&](const std::string& variant) {
      for (const auto& r : s.records())
        if (r.size == point && r.variant == variant && r.timed && r.passed) return r.timing.median_ms;
      return 0.0;
    };
    const double one = ms("grid_sync"), two = ms("two_launch"), cub = ms("cub");
    if (one <= 0 || two <= 0 || cub <= 0) continue;
    char line[256];
    std::snprintf(line, sizeof line,
                  "%s: grid_sync is %.2fx as fast as two_launch (one launch instead of two) and %.2fx CUB",
                  cudalabs::to_string(point).c_str(), two / one, cub / one);
    s.note(line);
  }
}

}  // namespace

// ---- main -------------------------------------------------------------------------

int main(int argc, char** argv) {
  const cudalabs::LabSpec spec{
      .name = "26_cooperative_groups",
      .title = "cooperative groups: tiles, coalesced groups, grid.sync() and persistent kernels",
      .about = "Sums n random floats with cooperative groups: cg::reduce over warp tiles in lab 07's two launches,\n"
               "then in ONE cooperative launch (blocks reduce, grid.sync(), block 0 finishes), and with a persistent\n"
               "grid that claims work items from a counter; copies the positive inputs out with warp-aggregated\n"
               "atomics over cg::coalesced_threads(). Against cub::DeviceReduce::Sum and lab 07's two-launch\n"
               "reduction in the same run. At 2^16 floats launches dominate (one launch saved shows); at 2^28\n"
               "(1 GiB) DRAM does. A cooperative grid must fit the GPU at once: --blocks above that limit is refused.",
      .sizes = {{.name = "n",
                 .help = "floats to sum",
                 .full = {std::int64_t{1} << 16, std::int64_t{1} << 20, std::int64_t{1} << 28},
                 .quick = {1, 7, 257, 65537, 1000003},
                 // CUB takes n as an int; the CPU reference holds the input on the host.
                 .max = std::numeric_limits<int>::max()}},
      .variants = {cub_variant(),
                   {"two_launch", "lab 07's warp_shuffle_float4: hand-written shuffles; blocks, then one block over the partials"},
                   {"tile_reduce", "the same two launches, warp step = cg::reduce over cg::tiled_partition<32>"},
                   {"grid_sync", "one cooperative launch: blocks reduce, grid.sync(), block 0 sums the partials"},
                   {"persistent", "one cooperative launch of a fixed grid claiming 16 KB work items from a counter"},
                   {"select_positive", "cg::coalesced_threads(): copy out the positive inputs, one atomicAdd per warp"}},
      .flags = {inputs_flag(),
                {.name = "blocks",
                 .help = "blocks of the student kernels' grid (0: as many as are resident at once, capped by the work); "
                         "grid_sync and persistent refuse more than can be co-resident",
                 .default_value = "0",
                 .min = 0,
                 .max = std::int64_t{1} << 24}},
  };
  return cudalabs::run_lab(argc, argv, spec, [](cudalabs::Session& s) {
    const cudalabs::DeviceInfo& dev = s.device();
    const std::int64_t asked = s.options().integer("blocks");
    const CoResidency grid_sync{"grid_sync", lab26::grid_sync_resources(), dev.sm_count};
    const CoResidency persistent{"persistent", lab26::persistent_resources(), dev.sm_count};
    if (s.selected("grid_sync") || s.selected("persistent")) {
      require_cooperative_launch(dev);
      if (s.selected("grid_sync")) check_blocks_fit(asked, grid_sync);
      if (s.selected("persistent")) check_blocks_fit(asked, persistent);
    }
    const auto tile = lab26::tile_reduce_resources(), select = lab26::select_positive_resources();

    for (const auto& point : s.points()) {
      const std::int64_t n = point.at("n");
      SumProblem problem(s, n);  // aligned (offset 0): the student kernels read float4s from in[0]
      measure_cub(s, point, problem);

      if (s.selected("two_launch")) {
        // Lab 07's course kernel, twice: the grid writes one partial per block,
        // then one block sums the partials.
        const unsigned blocks = warp_shuffle_float4_blocks(n);
        cudalabs::DeviceBuffer<float> partials(blocks, "per-block partial sums");
        measure_sum(
            s, point, problem, "two_launch",
            [&](cudaStream_t st) {
              reduce_warp_shuffle_float4(problem.input(), blocks > 1 ? partials.data() : problem.output(), n, blocks, st);
              if (blocks > 1) reduce_warp_shuffle_float4(partials.data(), problem.output(), blocks, 1, st);
            },
            [&](cudaStream_t st) { partials.poison(st); },
            cudalabs::resources_of(reduce_warp_shuffle_float4_kernel, float4_block),
            {{"launches", blocks > 1 ? 2.0 : 1.0}, {"blocks", static_cast<double>(blocks)}});
      }

      // One float4 per thread per pass: more blocks than this would idle.
      const std::int64_t useful = cudalabs::ceil_div<std::int64_t>(std::max<std::int64_t>(n / 4, 1), tile.block_threads);
      const auto resident = [&](const cudalabs::KernelResources& k) {
        return static_cast<std::int64_t>(k.blocks_per_sm) * dev.sm_count;
      };
      if (s.selected("tile_reduce")) {
        const unsigned blocks = grid_blocks(asked, resident(tile), useful);
        cudalabs::DeviceBuffer<float> partials(blocks, "per-block partial sums");
        measure_sum(
            s, point, problem, "tile_reduce",
            [&](cudaStream_t st) { lab26::tile_reduce_sum(problem.input(), partials.data(), problem.output(), n, blocks, st); },
            [&](cudaStream_t st) { partials.poison(st); }, tile,
            {{"launches", blocks > 1 ? 2.0 : 1.0}, {"blocks", static_cast<double>(blocks)}});
      }
      if (s.selected("grid_sync")) {
        const unsigned blocks = grid_blocks(asked, grid_sync.blocks(), useful);
        cudalabs::DeviceBuffer<float> partials(blocks, "per-block partial sums");
        measure_sum(
            s, point, problem, "grid_sync",
            [&](cudaStream_t st) { lab26::grid_sync_sum(problem.input(), partials.data(), problem.output(), n, blocks, st); },
            [&](cudaStream_t st) { partials.poison(st); }, grid_sync.resources,
            {{"launches", 1.0}, {"blocks", static_cast<double>(blocks)},
             {"co_resident_limit", static_cast<double>(grid_sync.blocks())}},
            {.max_kernels = 1, .cooperative = 1});  // the lesson: the grid waits for itself, in one launch
      }
      if (s.selected("persistent")) {
        const std::int64_t items = lab26::persistent_items(n);
        const unsigned blocks = grid_blocks(asked, persistent.blocks(), items);
        cudalabs::DeviceBuffer<float> partials(blocks, "per-block partial sums");
        cudalabs::DeviceBuffer<unsigned long long> next_item(1, "work-item counter");
        next_item.zero();  // once: the kernel leaves it at 0 for the next launch
        CUDALABS_CHECK(cudaDeviceSynchronize());
        measure_sum(
            s, point, problem, "persistent",
            [&](cudaStream_t st) {
              lab26::persistent_sum(problem.input(), partials.data(), problem.output(), next_item.data(), n, blocks, st);
            },
            [&](cudaStream_t st) { partials.poison(st); }, persistent.resources,
            {{"launches", 1.0}, {"blocks", static_cast<double>(blocks)}, {"work_items", static_cast<double>(items)},
             {"co_resident_limit", static_cast<double>(persistent.blocks())}},
            {.max_kernels = 1, .cooperative = 1});
      }
      if (s.selected("select_positive")) {
        const unsigned blocks =
            grid_blocks(asked, resident(select), cudalabs::ceil_div<std::int64_t>(n, select.block_threads));
        measure_select(s, point, problem, blocks, select);
      }
    }
    note_single_launch(s);
  });
}

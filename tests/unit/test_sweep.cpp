// The sweep engine's CPU logic: the sweep text, the points it makes, which
// launches the hardware refuses, grids and residency, and the best point.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cudalabs/error.hpp"
#include "cudalabs/sweep.hpp"

using namespace cudalabs;

namespace {

using Values = std::vector<std::int64_t>;

// A lab's declaration: one variant with block, blocks_per_sm and a compile-time items.
Tuning tuning() {
  return {{.variant = "float4",
           .params = {{.name = "block", .help = "threads per block", .value = 256, .min = 1, .max = 1 << 16},
                      {.name = "blocks_per_sm", .help = "grid = this x SMs", .value = 0, .min = 0, .max = 64},
                      {.name = "items", .help = "instantiated", .value = 4, .min = 1, .max = 8, .choices = {1, 2, 4, 8}}},
           .default_sweep = "block=64..1024 blocks_per_sm=0,1,2,4"},
          {.variant = "one_per_thread",
           .params = {{.name = "block", .help = "threads per block", .value = 256, .min = 1, .max = 1 << 16}},
           .default_sweep = "block=32..1024"}};
}

// What the message of a UsageError thrown by `f` contains ("" when none is thrown).
template <typename F>
std::string usage_error(F f) {
  try {
    f();
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

KernelResources resources(int registers, std::size_t static_smem, int blocks_per_sm) {
  KernelResources r;
  r.registers = registers;
  r.static_smem = static_smem;
  r.blocks_per_sm = blocks_per_sm;
  return r;
}

}  // namespace

TEST(SweepValues, DoublingRangesArePowersOfTwo) {
  EXPECT_EQ(parse_sweep_values("block", "64..1024"), (Values{64, 128, 256, 512, 1024}));
  EXPECT_EQ(parse_sweep_values("block", "64..1000"), (Values{64, 128, 256, 512}));  // b itself need not be reached
  EXPECT_EQ(parse_sweep_values("block", "96..768"), (Values{96, 192, 384, 768}));
  EXPECT_EQ(parse_sweep_values("block", "8..8"), (Values{8}));
}

TEST(SweepValues, StepsFactorsAndLists) {
  EXPECT_EQ(parse_sweep_values("block", "32..160:+32"), (Values{32, 64, 96, 128, 160}));
  EXPECT_EQ(parse_sweep_values("block", "32..170:+32"), (Values{32, 64, 96, 128, 160}));
  EXPECT_EQ(parse_sweep_values("n", "1..27:*3"), (Values{1, 3, 9, 27}));
  EXPECT_EQ(parse_sweep_values("items", "1,2,4"), (Values{1, 2, 4}));
  // Sorted, each value once; ranges and numbers mix; 0 in a list; sizes like 1K.
  EXPECT_EQ(parse_sweep_values("b", "4,1,2..8,2"), (Values{1, 2, 4, 8}));
  EXPECT_EQ(parse_sweep_values("b", "0,1..4"), (Values{0, 1, 2, 4}));
  EXPECT_EQ(parse_sweep_values("block", "1K"), (Values{1024}));
  EXPECT_EQ(parse_sweep_values("block", "0..2:+1"), (Values{0, 1, 2}));
}

TEST(SweepValues, BadValuesSayWhatAndHow) {
  EXPECT_NE(usage_error([] { parse_sweep_values("block", "1024..64"); }).find("backwards"), std::string::npos);
  EXPECT_NE(usage_error([] { parse_sweep_values("block", "0..64"); }).find("cannot start at 0"), std::string::npos);
  EXPECT_NE(usage_error([] { parse_sweep_values("block", "1..64:+0"); }).find("at least 1"), std::string::npos);
  EXPECT_NE(usage_error([] { parse_sweep_values("block", "1..64:*1"); }).find("at least 2"), std::string::npos);
  EXPECT_NE(usage_error([] { parse_sweep_values("block", "1..64:-2"); }).find("+STEP or *FACTOR"), std::string::npos);
  EXPECT_NE(usage_error([] { parse_sweep_values("block", "64.."); }).find("both ends"), std::string::npos);
  EXPECT_NE(usage_error([] { parse_sweep_values("block", "1,,2"); }).find("between commas"), std::string::npos);
  EXPECT_NE(usage_error([] { parse_sweep_values("block", ""); }).find("missing values"), std::string::npos);
  EXPECT_NE(usage_error([] { parse_sweep_values("block", "lots"); }).find("not a whole number"), std::string::npos);
  EXPECT_NE(usage_error([] { parse_sweep_values("block", "-32"); }).find("negative"), std::string::npos);
  EXPECT_NE(usage_error([] { parse_sweep_values("block", "1..100000:+1"); }).find("more than 1024"), std::string::npos);
}

TEST(SweepText, ParametersInTheOrderWritten) {
  const auto axes = parse_sweep("  items=1,2,4   block=64..256 ");
  ASSERT_EQ(axes.size(), 2u);
  EXPECT_EQ(axes[0].name, "items");
  EXPECT_EQ(axes[0].values, (Values{1, 2, 4}));
  EXPECT_EQ(axes[1].name, "block");
  EXPECT_EQ(axes[1].values, (Values{64, 128, 256}));
}

TEST(SweepText, Refused) {
  EXPECT_NE(usage_error([] { parse_sweep("block"); }).find("name=values"), std::string::npos);
  EXPECT_NE(usage_error([] { parse_sweep("block=64 block=128"); }).find("twice"), std::string::npos);
  EXPECT_NE(usage_error([] { parse_sweep("Block=64"); }).find("not a parameter name"), std::string::npos);
  EXPECT_NE(usage_error([] { parse_sweep("=64"); }).find("not a parameter name"), std::string::npos);
  EXPECT_NE(usage_error([] { parse_sweep("   "); }).find("nothing to sweep"), std::string::npos);
}

TEST(SweepPoints, CrossProductFirstParameterSlowest) {
  const auto v = tuning()[0];
  const auto pts = sweep_points(v, parse_sweep("items=1,2 block=64,128"));
  ASSERT_EQ(pts.size(), 4u);
  // Params in the variant's order, unswept ones at their hand-chosen value.
  EXPECT_EQ(pts[0].label(), "block=64,blocks_per_sm=0,items=1");
  EXPECT_EQ(pts[1].label(), "block=64,blocks_per_sm=0,items=2");
  EXPECT_EQ(pts[2].label(), "block=128,blocks_per_sm=0,items=1");
  EXPECT_EQ(pts[3].label(), "block=128,blocks_per_sm=0,items=2");
  EXPECT_EQ(pts[3].at("block"), 128);
  EXPECT_THROW(pts[0].at("tile"), std::logic_error);
  EXPECT_EQ(point_variant_name("float4", pts[1]), "float4[block=64,blocks_per_sm=0,items=2]");
  EXPECT_EQ(hand_chosen(v).label(), "block=256,blocks_per_sm=0,items=4");
}

TEST(SweepPoints, ValuesOutsideTheDeclarationAreRefused) {
  const auto v = tuning()[0];
  EXPECT_NE(usage_error([&] { sweep_points(v, parse_sweep("items=3")); }).find("compiled for items = 1, 2, 4, 8"),
            std::string::npos);
  EXPECT_NE(usage_error([&] { sweep_points(v, parse_sweep("blocks_per_sm=65")); }).find("between 0 and 64"),
            std::string::npos);
  EXPECT_NE(usage_error([&] { sweep_points(v, parse_sweep("tile=16")); }).find("no such parameter"), std::string::npos);
  // 2048 threads is a value the sweep may ask for: the launch check, not the parser, refuses it.
  EXPECT_EQ(sweep_points(v, parse_sweep("block=2048")).size(), 1u);
  EXPECT_NE(usage_error([&] { sweep_points(v, parse_sweep("block=1..1024:+1 items=1,2")); }).find("more than 1024 points"),
            std::string::npos);
}

TEST(SweepPlan, WhichVariantsAreSwept) {
  const Tuning t = tuning();
  EXPECT_FALSE(plan_sweep(t, "", {}).active());
  EXPECT_FALSE(plan_sweep(t, "  ", {}).active());
  // block: both variants have it.
  auto both = plan_sweep(t, "block=64,128", {});
  ASSERT_NE(both.of("float4"), nullptr);
  ASSERT_NE(both.of("one_per_thread"), nullptr);
  EXPECT_EQ(both.of("one_per_thread")->size(), 2u);
  // items: only float4; the other keeps its launch, and a note says so.
  auto one = plan_sweep(t, "items=1,2", {});
  EXPECT_NE(one.of("float4"), nullptr);
  EXPECT_EQ(one.of("one_per_thread"), nullptr);
  ASSERT_EQ(one.notes.size(), 1u);
  EXPECT_NE(one.notes[0].find("one_per_thread has no parameter items"), std::string::npos);
  // --variant narrows it.
  auto chosen = plan_sweep(t, "block=64", {"one_per_thread"});
  EXPECT_EQ(chosen.of("float4"), nullptr);
  EXPECT_NE(chosen.of("one_per_thread"), nullptr);
  // No selected variant has the parameter: exit 2, naming the tunable ones.
  const std::string none = usage_error([&] { plan_sweep(t, "items=1", {"one_per_thread"}); });
  EXPECT_NE(none.find("no selected variant"), std::string::npos);
  EXPECT_NE(none.find("float4 (block, blocks_per_sm, items)"), std::string::npos);
  EXPECT_NE(usage_error([&] { plan_sweep(t, "default", {"cpu"}); }).find("none of the selected variants"),
            std::string::npos);
}

TEST(SweepPlan, DefaultIsEachVariantsOwnSweep) {
  auto plan = plan_sweep(tuning(), " default ", {});
  ASSERT_NE(plan.of("float4"), nullptr);
  EXPECT_EQ(plan.of("float4")->size(), 5u * 4u);
  ASSERT_NE(plan.of("one_per_thread"), nullptr);
  EXPECT_EQ(plan.of("one_per_thread")->size(), 6u);
  Tuning broken = tuning();
  broken[0].default_sweep = "items=3";
  EXPECT_THROW(plan_sweep(broken, "default", {}), std::logic_error);  // the lab's own mistake, not the user's
}

TEST(Launchable, TheShapeAlone) {
  const LaunchLimits limits;
  EXPECT_EQ(launch_problem({.block_threads = 1024}, limits), "");
  EXPECT_EQ(launch_problem({.block_threads = 2048}, limits), "2048 threads per block > 1024");
  EXPECT_NE(launch_problem({.block_threads = 0}, limits).find("at least 1"), std::string::npos);
  EXPECT_NE(launch_problem({.block_threads = 256, .dynamic_smem = 64 * 1024}, limits)
                .find("64.0 KB of dynamic shared memory per block > 48.0 KB"),
            std::string::npos);
  EXPECT_NE(launch_problem({.block_threads = 256, .grid_blocks = 3000000000LL}, limits).find("grid of 3000000000"),
            std::string::npos);
}

TEST(Launchable, GivenTheKernelsResources) {
  LaunchLimits limits;
  const auto fits = resources(32, 4096, 8);
  EXPECT_EQ(launch_problem({.block_threads = 256}, limits, &fits), "");
  // Static + dynamic shared memory over the limit.
  EXPECT_NE(launch_problem({.block_threads = 256, .dynamic_smem = 46 * 1024}, limits, &fits).find("(4.0 KB static + 46.0 KB dynamic)"),
            std::string::npos);
  // With the opt-in (an H100: 227 KB) the same launch is fine.
  DeviceInfo h100;
  h100.smem_per_block_optin = 232448;
  EXPECT_EQ(launch_problem({.block_threads = 256, .dynamic_smem = 46 * 1024}, launch_limits(h100, true), &fits), "");
  EXPECT_EQ(launch_limits(h100, false).smem_per_block, 48u * 1024);
  // 128 registers x 1024 threads = 131072 > 65536.
  const auto heavy = resources(128, 0, 0);
  EXPECT_NE(launch_problem({.block_threads = 1024}, limits, &heavy).find("131072 registers per block > 65536"),
            std::string::npos);
  // The occupancy API fits none (e.g. the kernel's launch bounds).
  const auto none = resources(32, 0, 0);
  EXPECT_NE(launch_problem({.block_threads = 512}, limits, &none).find("fits no block of 512 threads"), std::string::npos);
}

TEST(Grid, BlocksPerSmOrAsManyAsAreResident) {
  // H100: 132 SMs, 8 resident blocks of 256.
  EXPECT_EQ(grid_for(0, 8, 132, 1 << 20), 1056);
  EXPECT_EQ(grid_for(2, 8, 132, 1 << 20), 264);
  EXPECT_EQ(grid_for(32, 8, 132, 1 << 20), 4224);  // more than are resident: several waves
  EXPECT_EQ(grid_for(0, 8, 132, 100), 100);       // never more blocks than the data fills
  EXPECT_EQ(grid_for(0, 8, 132, 0), 1);           // at least one
}

TEST(Residency, DynamicSharedMemoryThatLimitsBlocksPerSm) {
  const std::size_t sm = 233472;  // an H100 SM: 228 KB
  EXPECT_EQ(smem_for_residency(0, 8448, sm), 0u);
  for (int blocks = 1; blocks <= 8; ++blocks) {
    const std::size_t dyn = smem_for_residency(blocks, 8448, sm);
    const std::size_t per_block = dyn + 8448 + 1024;
    EXPECT_EQ(per_block % 128, 0u) << blocks;
    EXPECT_LE(blocks * per_block, sm) << blocks;        // `blocks` fit
    EXPECT_GT((blocks + 1) * per_block, sm) << blocks;  // one more does not
  }
  // Blocks that hold more than their share already: nothing to add.
  EXPECT_EQ(smem_for_residency(2, 200000, sm), 0u);
}

TEST(Best, FastestTimedPointThatPassed) {
  std::vector<PointOutcome> o = {{.launched = true, .passed = true, .timed = true, .median_ms = 1.2},
                                 {.launched = false},
                                 {.launched = true, .passed = false, .timed = true, .median_ms = 0.5},  // wrong: never best
                                 {.launched = true, .passed = true, .timed = true, .median_ms = 1.1},
                                 {.launched = true, .passed = true, .timed = true, .median_ms = 1.1}};
  EXPECT_EQ(best_point(o), 3u);  // the first of equals
  EXPECT_FALSE(best_point({{.launched = true, .passed = true, .timed = false}}).has_value());  // --check-only
  EXPECT_FALSE(best_point({}).has_value());
}

TEST(SweepFlag, HelpNamesEveryTunable) {
  const ExtraFlag f = sweep_flag(tuning());
  EXPECT_EQ(f.name, "sweep");
  EXPECT_EQ(f.kind, ExtraFlag::Kind::text);
  EXPECT_NE(f.help.find("float4:"), std::string::npos);
  EXPECT_NE(f.help.find("block = 256 (threads per block)"), std::string::npos);
  EXPECT_NE(f.help.find("items = 4 (instantiated)"), std::string::npos);
}

// The harness's trust checks that need no GPU: the plausibility gate, the
// device peaks it uses, what counts as GPU work, and the throttle rule.
#include <gtest/gtest.h>

#include <algorithm>

#include <cudalabs/lab.hpp>
#include <cudalabs/monitor.hpp>

using namespace cudalabs;

namespace {

// An H100 SXM as the runtime describes it: 132 SMs, 1980 MHz, HBM3 at
// 2619 MHz on a 5120-bit bus (3352 GB/s), 50 MB L2.
DeviceInfo h100() {
  DeviceInfo d;
  d.name = "NVIDIA H100 80GB HBM3";
  d.cc_major = 9;
  d.cc_minor = 0;
  d.sm_count = 132;
  d.sm_clock_khz = 1980000;
  d.mem_clock_khz = 2619000;
  d.mem_bus_bits = 5120;
  d.dram_peak_gbps = 2.0 * d.mem_clock_khz * 1e3 * (d.mem_bus_bits / 8.0) / 1e9;
  d.l2_bytes = 50u << 20;
  return d;
}

}  // namespace

TEST(Peaks, MatchTheDatasheet) {
  const DeviceInfo d = h100();
  // 132 x 1.98 GHz x 256 = 66.9 TFLOP/s FP32; x 4096 = 1070 TFLOP/s FP16 tensor.
  EXPECT_NEAR(d.peak_gflops(Peak::fp32), 66908, 1);
  EXPECT_NEAR(d.peak_gflops(Peak::fp16_tensor), 1070530, 1);
  EXPECT_NEAR(d.peak_gflops(Peak::tf32_tensor), d.peak_gflops(Peak::fp16_tensor) / 2, 1);
  DeviceInfo a100 = d;
  a100.cc_major = 8;
  a100.sm_count = 108;
  a100.sm_clock_khz = 1410000;
  EXPECT_NEAR(a100.peak_gflops(Peak::fp32), 19492, 1);         // 19.5 TFLOP/s
  EXPECT_NEAR(a100.peak_gflops(Peak::fp16_tensor), 311869, 1);  // 312 TFLOP/s
}

TEST(Plausibility, RealResultsPass) {
  const DeviceInfo d = h100();
  // Lab 02 float4 at 2^28: 3 GiB at 2867 GB/s. cuBLAS SGEMM 4096^3: 51 TFLOP/s.
  EXPECT_EQ(implausible_reason(2867, 0, 3.0 * 4 * (1 << 28), Peak::fp32, d), "");
  EXPECT_EQ(implausible_reason(200, 51000, 201326592, Peak::fp32, d), "");
  // Tensor-core FP16 at 700 TFLOP/s is fine against the FP16 peak...
  EXPECT_EQ(implausible_reason(0, 700000, 1e9, Peak::fp16_tensor, d), "");
  // ...and a small problem served from L2 may beat DRAM.
  EXPECT_EQ(implausible_reason(9000, 0, 8e6, Peak::fp32, d), "");
}

TEST(Plausibility, ImpossibleResultsAreNamed) {
  const DeviceInfo d = h100();
  // 878x the copy bandwidth on 3 GiB: an early-exiting kernel.
  const std::string bw = implausible_reason(878 * 2930.0, 0, 3.0 * 4 * (1 << 28), Peak::fp32, d);
  EXPECT_NE(bw.find("above what the memory can deliver"), std::string::npos) << bw;
  // FP32 work above the FP32 peak: tensor cores used behind the lab's back, or a wrong FLOP count.
  const std::string fl = implausible_reason(0, 90000, 1e8, Peak::fp32, d);
  EXPECT_NE(fl.find("fp32 peak"), std::string::npos) << fl;
  // Just above the DRAM bound for 1 GB with 50 MB of L2.
  const double bound = d.dram_peak_gbps * 1e9 / (1e9 - (50 << 20));
  EXPECT_EQ(implausible_reason(bound * 0.999, 0, 1e9, Peak::fp32, d), "");
  EXPECT_NE(implausible_reason(bound * 1.001, 0, 1e9, Peak::fp32, d), "");
}

TEST(GpuWorkRule, KernelsWithoutHostCopiesPass) {
  GpuWork w;
  w.traced = true;
  w.kernels = 2;
  EXPECT_EQ(w.problem(), "");
  w.kernels = 0;
  EXPECT_NE(w.problem().find("launched no kernel"), std::string::npos);
  w.kernels = 1;
  w.copies_to_host = 1;
  w.copies_to_device = 1;
  EXPECT_NE(w.problem().find("computed on the GPU"), std::string::npos);
  GpuWork synced;
  synced.traced = true;
  synced.kernels = 1;
  synced.host_syncs = 1;
  EXPECT_NE(synced.problem().find("waited for the GPU"), std::string::npos);
  GpuWork untraced;  // not traced: neither passes nor fails on that account
  EXPECT_EQ(untraced.problem(), "");
}

TEST(Throttle, ThermalSlowdownIsFlaggedPowerCapIsNot) {
  ClockSample a, b;
  a.valid = b.valid = true;
  std::string why;
  EXPECT_FALSE(throttled_between(a, b, &why));
  b.reasons = 0x4;  // SW power cap
  EXPECT_FALSE(throttled_between(a, b, &why));
  EXPECT_TRUE(power_capped_between(a, b));
  b.reasons = 0x20;  // SW thermal slowdown
  EXPECT_TRUE(throttled_between(a, b, &why));
  EXPECT_NE(why.find("thermal"), std::string::npos);
  ClockSample c = a;
  c.thermal_violation_ns = 5000000;
  EXPECT_TRUE(throttled_between(a, c, &why));
  ClockSample invalid;
  EXPECT_FALSE(throttled_between(invalid, b, &why));
}

// A variant whose launch is the lesson declares it (Measurement::launches).
TEST(GpuWorkRule, DeclaredLaunchesAreHeld) {
  GpuWork w;
  w.traced = true;
  w.kernels = 1;
  w.cooperative = 1;
  w.max_kernels = 1;
  w.expect_cooperative = 1;
  EXPECT_EQ(w.problem(), "");
  w.kernels = 2;  // the grid sync replaced by a second launch
  w.cooperative = 0;
  EXPECT_NE(w.problem().find("at most 1 launch"), std::string::npos) << w.problem();
  w.kernels = 1;  // one launch, but not a cooperative one
  EXPECT_NE(w.problem().find("0 cooperative launches"), std::string::npos) << w.problem();
  w.max_kernels = w.expect_cooperative = -1;  // nothing declared: any launches
  EXPECT_EQ(w.problem(), "");
}

// A copy variant timed by events on its stream: its work must wait for that
// stream (trace.cpp, judge_waited_for_given_stream). The harness's hold kernel
// on the stream ended at 2 ms; what the run issued is judged by its start.
TEST(GpuWorkRule, CopiesStartAfterTheStreamTheyWereGiven) {
  const TracedWork hold{"the hold", 1'000'000, 2'000'000, 0};
  GpuWork waited;
  waited.traced = true;
  waited.copies_only = true;
  // On the stream, or forked from it: from the hold's end on, within 10 us on
  // its GPU (two engines' stamps) or within 50 us between two GPUs' clocks.
  judge_waited_for_given_stream(waited, hold,
                                {{"a copy of 4096 bytes", 2'000'000, 2'400'000, 0},
                                 {"a copy of 4096 bytes", 1'995'000, 2'800'000, 0},
                                 {"a copy of 4096 bytes", 1'970'000, 2'300'000, 1}});
  EXPECT_TRUE(waited.given_stream_held);
  EXPECT_EQ(waited.early, 0);
  EXPECT_EQ(waited.problem(), "");

  // On stream 0 or a stream of the launcher's own: under way while the
  // stream's earlier work (the hold) still ran.
  GpuWork raced = waited;
  raced.early = 0;
  judge_waited_for_given_stream(raced, hold,
                                {{"a copy of 4096 bytes", 1'001'000, 1'400'000, 0},
                                 {"a memset of 4 bytes", 1'980'000, 2'000'100, 0},
                                 {"a copy of 4096 bytes", 2'000'000, 2'400'000, 0}});
  EXPECT_EQ(raced.early, 2);
  EXPECT_EQ(raced.early_what, "a copy of 4096 bytes, started 999 us before the stream's earlier work had finished");
  const std::string p = raced.problem();
  EXPECT_NE(p.find("did not wait for the stream it was given (a copy of 4096 bytes, started 999 us before the stream's "
                   "earlier work had finished and 1 more): fork from it with an event"),
            std::string::npos)
      << p;

  // Another GPU's work that started a millisecond early is no clock skew.
  GpuWork other = waited;
  judge_waited_for_given_stream(other, hold, {{"a copy of 4096 bytes", 1'000'000, 1'500'000, 3}});
  EXPECT_EQ(other.early, 1);
  EXPECT_NE(other.early_what.find("a copy of 4096 bytes on GPU 3, started 1000 us before"), std::string::npos)
      << other.early_what;
}

// The harness's hold is told from the run's kernels by its launch call, which
// started before GpuWorkTrace::holds_launched (trace.cpp, split_hold), not by
// its name: the hold's launch at 100 ns, holds_launched at 200 ns, the
// variant's launches after. Kernel records come in any order.
namespace {

const char* const hold_kernel_name = "_ZN8cudalabs12_GLOBAL__N_120cudalabs_hold_streamEPVKiy";
// A student's kernel whose mangled name holds the hold's: ns::cudalabs_hold_stream_copy(float*).
const char* const named_like_hold = "_ZN2ns25cudalabs_hold_stream_copyEPf";

TracedKernel kernel(const char* name, std::uint32_t correlation, std::uint64_t start, std::uint64_t end) {
  return {.name = name, .blocks = 4096, .block_threads = 256, .start = start, .end = end, .correlation = correlation};
}

}  // namespace

TEST(GpuWorkRule, AKernelNamedLikeTheHoldIsTheRunsWork) {
  GpuWork w;
  w.traced = true;
  w.copies_allowed = true;
  const std::vector<TracedLaunch> launches = {{100, 7}, {500, 9}};
  const RunKernels split = split_hold(
      w, {kernel(named_like_hold, 9, 1'001'000, 1'400'000), kernel(hold_kernel_name, 7, 1'000'000, 2'000'000)},
      launches, 50, 200);
  EXPECT_EQ(w.kernels, 1);
  ASSERT_EQ(w.launches.size(), 1u);
  EXPECT_EQ(w.launches[0].kernel, named_like_hold);
  EXPECT_EQ(w.launches[0].blocks, 4096);
  ASSERT_TRUE(split.hold_seen);
  EXPECT_EQ(split.hold.start, 1'000'000u);
  EXPECT_EQ(split.hold.end, 2'000'000u);
  ASSERT_EQ(split.run.size(), 1u);
  EXPECT_EQ(split.run[0].what, std::string("kernel ") + named_like_hold);
  // It started 999 us before the hold ended: it did not wait for the stream.
  judge_waited_for_given_stream(w, split.hold, split.run);
  EXPECT_EQ(w.early, 1);
  EXPECT_NE(w.problem().find("did not wait for the stream it was given (kernel " + std::string(named_like_hold) +
                             ", started 999 us before"),
            std::string::npos)
      << w.problem();
}

TEST(GpuWorkRule, TheHoldIsNotTheRunsWork) {
  GpuWork w;
  w.traced = true;
  TracedKernel cooperative = kernel("_Z9grid_syncPf", 9, 2'100'000, 2'500'000);
  cooperative.cooperative = true;
  const RunKernels split =
      split_hold(w, {cooperative, kernel(hold_kernel_name, 7, 1'000'000, 2'000'000)}, {{100, 7}, {500, 9}}, 50, 200);
  EXPECT_EQ(w.kernels, 1);
  EXPECT_EQ(w.cooperative, 1);
  ASSERT_EQ(w.launches.size(), 1u);
  EXPECT_EQ(w.launches[0].kernel, "_Z9grid_syncPf");
  ASSERT_TRUE(split.hold_seen);
  ASSERT_EQ(split.run.size(), 1u);
  judge_waited_for_given_stream(w, split.hold, split.run);
  EXPECT_EQ(w.early, 0);
  EXPECT_EQ(w.problem(), "");
}

// Two holds (at 100 and 150 ns): the stream's earlier work ends with the later
// of their kernels, whichever record came first.
TEST(GpuWorkRule, TheHoldEndsWithItsLastKernel) {
  GpuWork w;
  const RunKernels split = split_hold(
      w, {kernel(hold_kernel_name, 8, 1'000'000, 2'000'000), kernel(hold_kernel_name, 7, 900'000, 1'500'000)},
      {{100, 7}, {150, 8}}, 50, 200);
  EXPECT_EQ(w.kernels, 0);
  EXPECT_TRUE(w.launches.empty());
  ASSERT_TRUE(split.hold_seen);
  EXPECT_EQ(split.hold.end, 2'000'000u);
  EXPECT_TRUE(split.run.empty());
}

// No launch in the window (holds_launched never called: 0, or a launch record
// older than the trace): no hold, every kernel is the run's, as without one.
TEST(GpuWorkRule, WithoutAHoldLaunchEveryKernelIsTheRuns) {
  GpuWork w;
  const std::vector<TracedKernel> kernels = {kernel(hold_kernel_name, 7, 1'000'000, 2'000'000),
                                             kernel("_Z3addPKfS0_Pfi", 9, 2'100'000, 2'200'000)};
  const RunKernels none = split_hold(w, kernels, {{100, 7}, {500, 9}}, 50, 0);
  EXPECT_FALSE(none.hold_seen);
  EXPECT_EQ(w.kernels, 2);
  EXPECT_EQ(none.run.size(), 2u);
  GpuWork stale;
  EXPECT_FALSE(split_hold(stale, kernels, {{40, 7}, {500, 9}}, 50, 200).hold_seen);
  EXPECT_EQ(stale.kernels, 2);
  // A launch that started at holds_launched's own stamp was made after it.
  GpuWork at_mark;
  EXPECT_FALSE(split_hold(at_mark, kernels, {{200, 7}, {500, 9}}, 50, 200).hold_seen);
}

// Copies are the work of Expect::copies: no kernel is asked for, and copies
// both ways are its lesson. A round trip (Expect::kernels_and_copies) still
// needs its kernel, whatever its copies waited for.
TEST(GpuWorkRule, CopyVariantsAskForNoKernelARoundTripDoes) {
  GpuWork copies;
  copies.traced = true;
  copies.copies_only = true;
  copies.copies_to_device = 2;
  copies.copies_to_host = 1;
  copies.host_syncs = 1;
  EXPECT_EQ(copies.problem(), "");
  GpuWork round_trip;
  round_trip.traced = true;
  round_trip.copies_allowed = true;
  round_trip.copies_to_device = 2;
  round_trip.copies_to_host = 1;
  round_trip.early = 1;
  round_trip.early_what = "a copy of 4096 bytes";
  EXPECT_NE(round_trip.problem().find("launched no kernel"), std::string::npos) << round_trip.problem();
  round_trip.kernels = 1;
  EXPECT_NE(round_trip.problem().find("did not wait for the stream it was given"), std::string::npos)
      << round_trip.problem();
  round_trip.early = 0;
  EXPECT_EQ(round_trip.problem(), "");
}

namespace {

// A Recorder that says which stream its traced run held, and whether the hold
// was still on while the variant ran and off once it had returned.
class HoldingRecorder : public Recorder {
 public:
  explicit HoldingRecorder(const LabSpec& spec) : Recorder(spec, check_only(), DeviceInfo{}) {}
  std::vector<cudaStream_t> held;  // hold() calls, in order
  bool holding = false;
  std::vector<bool> holding_at_runs;  // per run of the variant: held while it ran

 private:
  static Options check_only() {
    Options o;
    o.check_only = true;
    return o;
  }
  cudaStream_t work_stream() const override { return reinterpret_cast<cudaStream_t>(0x5eed); }
  void time(const Measurement&, Record&) override {}
  void synchronize() override {}
  double copy_gbps() override { return 1; }
  void hold(cudaStream_t s) override {
    held.push_back(s);
    holding = true;
  }
  void release_hold() override { holding = false; }
};

std::vector<cudaStream_t> streams_held(Expect expect, Clock clock, std::vector<bool>* holding_at_runs = nullptr) {
  LabSpec spec;
  spec.name = "00_fake";
  spec.variants = {{.name = "copy"}};
  HoldingRecorder rec(spec);
  Measurement m;
  m.variant = "copy";
  m.size = {{"n", 1}};
  m.expect = expect;
  m.clock = clock;
  m.ceiling = CeilingKind::none;
  m.run = [&](cudaStream_t) { rec.holding_at_runs.push_back(rec.holding); };
  m.check = [] {
    CheckResult c;
    c.passed = true;
    c.count = 1;
    return c;
  };
  m.new_inputs = [](std::uint64_t) {};
  rec.measure(m);
  EXPECT_FALSE(rec.holding) << "the hold was never released";
  if (holding_at_runs) *holding_at_runs = rec.holding_at_runs;
  return rec.held;
}

}  // namespace

TEST(TracedRun, ACopyVariantOnTheEventsClockIsHeldOnTheStreamItIsGiven) {
  const auto given = reinterpret_cast<cudaStream_t>(0x5eed);
  for (Expect e : {Expect::copies, Expect::kernels_and_copies}) {
    // The first, traced run, while it runs; not the repeated or the fresh run.
    // Where a GPU is traced, the trace sees that this fake variant did no GPU
    // work and the measurement stops after its first run; elsewhere all three run.
    std::vector<bool> holding;
    EXPECT_EQ(streams_held(e, Clock::events, &holding), std::vector<cudaStream_t>{given});
    ASSERT_FALSE(holding.empty());
    EXPECT_TRUE(holding.front());
    EXPECT_EQ(std::count(holding.begin() + 1, holding.end(), true), 0);
    // The host clock's pageable copies may wait out a hold: never held.
    EXPECT_EQ(streams_held(e, Clock::host), std::vector<cudaStream_t>{});
  }
  // A kernel variant's stream contract holds the legacy default stream instead.
  EXPECT_EQ(streams_held(Expect::kernels, Clock::events), std::vector<cudaStream_t>{cudaStreamLegacy});
}

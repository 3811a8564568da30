#pragma once
// The lab harness: run_lab() parses the flags, selects the device, runs the
// lab's body and maps every outcome onto the exit codes of DESIGN.md.
// Session::measure() is the one place that poisons, runs, checks, times,
// re-checks and reports a variant. What it does to every variant, in order:
//   1. poison the output, run once (traced: which kernels and copies it issued), check;
//   2. poison, run again on the same inputs, check (a kernel that is right only
//      once, or that skips work when called again, fails here);
//   3. time it (unless --check-only);
//   4. new input values from a fresh seed (Measurement::new_inputs), poison, run,
//      check (an answer remembered from an earlier call fails here).
// A variant passes only when all of its checks pass and its run did its work on
// the GPU (at least one kernel; no copies to or from the host; see GpuWork).
#include <cuda_runtime_api.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "checker.hpp"
#include "cli.hpp"
#include "device.hpp"
#include "error.hpp"
#include "memory.hpp"
#include "report.hpp"
#include "timer.hpp"

namespace cudalabs {

struct Work {
  double bytes = 0;  // fewest bytes the operation must move through device memory
  double flops = 0;
};

enum class CeilingKind {
  copy_bandwidth,  // % of the measured device-to-device copy GB/s
  baseline,        // % of the library baseline's throughput measured at this size
  given,           // % of Measurement::given_ceiling (GB/s), e.g. the PCIe link rate
  none,
};

struct GivenCeiling {
  std::string name;  // "pcie_gen5_x16_gbps"
  double gbps = 0;
};

enum class Clock {
  events,  // CUDA events around the work on the session's stream
  host,    // steady_clock around work + stream synchronisation (CPU code, pageable copies)
};

// What a variant's run must issue onto the GPU, verified on its first checked
// run by tracing (CUPTI, where the toolkit has it).
enum class Expect {
  kernels,  // at least one kernel and no copy between host and device: the default
  copies,   // host<->device copies are the lesson (labs 03, 08, 23): not held to the rule
  host,     // CPU code (Clock::host): nothing to trace
};

struct Measurement {
  std::string variant;
  Point size;
  Work work;
  std::function<void(cudaStream_t)> run;    // enqueue the work; never synchronise
  std::function<CheckResult()> check;       // compare the output with the reference
  std::function<void(cudaStream_t)> poison; // before every checked run: fill outputs with NaN
  std::function<void(cudaStream_t)> reset;  // before every run, untimed (e.g. zero an accumulator)
  // Replace the input values (same shapes) with values drawn from `seed`, upload
  // them, and recompute what check() compares with. Called before the last
  // checked run. Every GPU variant has one; only Expect::host variants may omit it.
  std::function<void(std::uint64_t seed)> new_inputs;
  Expect expect = Expect::kernels;
  Peak peak = Peak::fp32;  // which compute peak bounds its FLOP/s (DeviceInfo::peak_gflops)
  std::optional<KernelResources> resources;
  CeilingKind ceiling = CeilingKind::copy_bandwidth;
  GivenCeiling given_ceiling;               // with CeilingKind::given
  Clock clock = Clock::events;
  std::map<std::string, double> extra;      // lab-specific numbers for the JSON record
};

class Session {
 public:
  Session(const LabSpec& spec, Options options, const DeviceInfo& device);
  ~Session();

  const Options& options() const { return options_; }
  const std::vector<Point>& points() const { return options_.points; }
  const DeviceInfo& device() const { return device_; }
  cudaStream_t stream() const { return stream_.get(); }
  const TimerConfig& timer() const { return options_.timer; }
  // Whether this run includes a variant (baselines are always included).
  bool selected(const std::string& variant) const;
  // The run's input seed (--seed). A lab draws buffer i of its inputs from
  // mix_seed(seed, i), so that new_inputs(fresh_seed) can draw new values the same way.
  std::uint64_t seed() const { return options_.seed; }
  // A distinct, reproducible seed for input buffer number `buffer`: mix_seed(seed(), buffer).
  std::uint64_t seed(std::uint64_t buffer) const;

  const Record& measure(const Measurement& m);
  // Adds a finished record made by the lab itself (rare: lab 08's timeline).
  const Record& add(Record r);
  void note(const std::string& line);  // printed under the table

  bool all_passed() const;
  const std::vector<Record>& records() const { return records_; }
  // The baseline record measured at this size, if any.
  const Record* baseline_at(const Point& p) const;
  void finish();  // prints resources, notes, summary

 private:
  const LabSpec& spec_;
  Options options_;
  DeviceInfo device_;
  Stream stream_;
  std::vector<Record> records_;
  std::vector<std::string> notes_;
  std::uint64_t fresh_inputs_drawn_ = 0;
  // Marks r implausible when its GB/s or GFLOP/s exceed what the device can do.
  void judge_plausibility(Record& r, Peak peak) const;
};

// Why a measured rate is physically impossible on `dev` ("" when it is not): FLOP/s
// above the peak for `peak`, or GB/s above what DRAM can deliver for `bytes`
// given the L2 size (dram_fallback_gbps where the device does not report its
// memory clock). The plausibility gate of every record; CPU only.
std::string implausible_reason(double gbps, double gflops, double bytes, Peak peak, const DeviceInfo& dev,
                               double dram_fallback_gbps = 0);

// Runs a lab: returns the process exit code (0, 1, 2, 3 or 77).
int run_lab(int argc, char** argv, const LabSpec& spec, const std::function<void(Session&)>& body);

// Throws NoDeviceError naming the feature when the device is older than cc major.minor.
void require_compute_capability(const DeviceInfo& dev, int major, int minor, const std::string& feature);

}  // namespace cudalabs

#pragma once
// The lab harness: run_lab() parses the flags, selects the device, runs the
// lab's body and maps every outcome onto the exit codes of DESIGN.md.
// Session::measure() is the one place that poisons, runs, checks, times,
// re-checks and reports a variant.
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

struct Measurement {
  std::string variant;
  Point size;
  Work work;
  std::function<void(cudaStream_t)> run;    // enqueue the work; never synchronise
  std::function<CheckResult()> check;       // compare the output with the reference
  std::function<void(cudaStream_t)> poison; // before the first run: fill outputs with NaN
  std::function<void(cudaStream_t)> reset;  // before every run, untimed (e.g. zero an accumulator)
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
  // A distinct, reproducible seed for input buffer number `buffer`.
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
  bool header_printed_ = false;
};

// Runs a lab: returns the process exit code (0, 1, 2, 3 or 77).
int run_lab(int argc, char** argv, const LabSpec& spec, const std::function<void(Session&)>& body);

// Throws NoDeviceError naming the feature when the device is older than cc major.minor.
void require_compute_capability(const DeviceInfo& dev, int major, int minor, const std::string& feature);

}  // namespace cudalabs

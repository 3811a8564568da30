#pragma once
// One record per (variant, size): the human table row and the JSON line.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "checker.hpp"
#include "cli.hpp"
#include "device.hpp"
#include "monitor.hpp"
#include "timer.hpp"

namespace cudalabs {

struct Record {
  std::string lab, variant;
  Point size;
  double bytes = 0, flops = 0;
  bool timed = false;
  TimingStats timing;
  double gbps = 0, gflops = 0;
  std::string ceiling;  // "d2d_copy_gbps", "cublas_sgemm_gflops", ...
  double ceiling_value = 0;
  double pct_of_ceiling = 0;
  bool suspect = false;  // above the measured copy bandwidth: cache-resident data, or a bug
  // Above what the hardware can do at all (the DRAM's theoretical bandwidth for
  // data larger than L2, or the compute peak for its Peak): the measurement is
  // wrong, and the grader gives it no performance points.
  bool implausible = false;
  std::string implausible_why;
  std::string peak;  // the Peak its FLOP/s were held against
  double peak_gflops = 0;
  std::string baseline;
  double baseline_ms = 0, vs_baseline = 0;
  CheckResult check;        // first run (poisoned output)
  CheckResult repeat;       // second run, same inputs, poisoned again
  CheckResult after_timing; // the output the timing left (its last run's, or the no-gap batch's)
  // Timed runs whose output was checked right after they ran (checks_timed_run),
  // and of those checks the first that failed, else the last; the run it was
  // (0-based; -1 in a judge, which knows only the order of the checks).
  int timed_runs_checked = 0;
  CheckResult timed_run;
  int timed_run_index = -1;
  CheckResult recheck;      // last: fresh input values, poisoned again
  bool fresh_inputs = false;   // recheck ran on new input values
  std::uint64_t fresh_seed = 0;
  bool fresh_buffers = false;      // recheck ran with every DeviceBuffer moved (memory.hpp)
  std::string fresh_buffers_why;   // why not, when it did not
  GpuWork gpu_work;         // what the first checked run issued
  // Runs traced between the timed runs (Recorder::after_timed_run), and the
  // first problem one of them showed (GpuWork::problem), if any.
  int timed_runs_traced = 0;
  std::string timed_work_problem;
  std::string failure;      // why it failed: "first run: ...", "GPU work: ...", ...
  ClockSample clocks_before, clocks_after;  // around the timed runs
  bool throttled = false;
  std::string throttle_why;
  bool power_capped = false;
  bool passed = false;
  bool judge = false;  // made by a judge (--judge): its checks compared a graded program's outputs
  bool library_baseline = false;  // the lab's vendor-library baseline (LabSpec), not a kernel of the lab's
  std::optional<KernelResources> resources;
  std::map<std::string, double> extra;  // lab-specific numbers
  // The lab's own flags and their values, defaults included ("causal": "1",
  // "dtype": "bf16"): records of one size and variant made under different flags
  // measure different problems, and must say so.
  std::map<std::string, std::string> flags;
  std::uint64_t seed = 0;
};

// One JSON object on one line (no trailing newline).
std::string to_json(const Record& r, const DeviceInfo& dev);
std::string json_escape(const std::string& s);

// Why a record failed, in one line ("" when it passed).
std::string failure_text(const Record& r);

std::string table_header();
std::string table_row(const Record& r);
std::string resources_table(const std::vector<Record>& records);

// The commit the program was built from, and whether that tree had local
// changes (read at build time, common/src/revision.cpp.in).
std::string git_revision();
bool git_dirty();
std::string utc_timestamp();

}  // namespace cudalabs

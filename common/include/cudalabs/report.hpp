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
  bool suspect = false;  // above a physical ceiling: cache-resident data, or a bug
  std::string baseline;
  double baseline_ms = 0, vs_baseline = 0;
  CheckResult check;        // first run
  CheckResult recheck;      // after timing
  bool passed = false;
  std::optional<KernelResources> resources;
  std::map<std::string, double> extra;  // lab-specific numbers
  std::uint64_t seed = 0;
};

// One JSON object on one line (no trailing newline).
std::string to_json(const Record& r, const DeviceInfo& dev);
std::string json_escape(const std::string& s);

std::string table_header();
std::string table_row(const Record& r);
std::string resources_table(const std::vector<Record>& records);

std::string git_revision();
std::string utc_timestamp();

}  // namespace cudalabs

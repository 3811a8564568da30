#include "cudalabs/report.hpp"

#include <cmath>
#include <cstdio>
#include <ctime>
#include <cstdlib>
#include <set>

#include <nlohmann/json.hpp>

#include "cudalabs/evidence.hpp"
#include "revision.hpp"

namespace cudalabs {

namespace {

using nlohmann::json;

// Whole numbers (bytes, flops, sizes) exactly; measured values to 6 significant
// digits; NaN and Inf as null (JSON has neither).
json num(double v) {
  if (!std::isfinite(v)) return nullptr;
  if (v == std::floor(v) && std::fabs(v) < 9007199254740992.0) return static_cast<std::int64_t>(v);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return std::strtod(buf, nullptr);
}

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

json clocks_json(const ClockSample& c) {
  if (!c.valid) return nullptr;
  return {{"sm_mhz", c.sm_mhz},
          {"mem_mhz", c.mem_mhz},
          {"temp_c", c.temp_c},
          {"power_w", num(c.power_w)},
          {"reasons", c.reasons},
          {"thermal_violation_ns", c.thermal_violation_ns},
          {"power_violation_ns", c.power_violation_ns}};
}

// The check whose numbers a record reports: the first that failed, else the last run.
const CheckResult& reported_check(const Record& r) {
  if (!r.check.passed) return r.check;
  if (r.repeat.count && !r.repeat.passed) return r.repeat;
  if (r.timed_runs_checked && !r.timed_run.passed) return r.timed_run;
  if (r.after_timing.count && !r.after_timing.passed) return r.after_timing;
  if (r.recheck.count) return r.recheck;
  return r.repeat.count ? r.repeat : r.check;
}

}  // namespace

std::string json_escape(const std::string& s) {
  const std::string quoted = json(s).dump();
  return quoted.substr(1, quoted.size() - 2);
}

std::string git_revision() { return revision_hash(); }
bool git_dirty() { return revision_dirty(); }

std::string utc_timestamp() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string failure_text(const Record& r) {
  if (r.passed) return "";
  if (!r.failure.empty()) return r.failure;
  if (!r.check.passed) return "first run: " + r.check.summary();
  if (r.repeat.count && !r.repeat.passed) return "repeated run: " + r.repeat.summary();
  if ((r.timed_runs_checked && !r.timed_run.passed) || (r.after_timing.count && !r.after_timing.passed))
    return "output of the timed runs: " + reported_check(r).summary();
  return "fresh inputs: " + r.recheck.summary();
}

std::string to_json(const Record& r, const DeviceInfo& dev) {
  json j;  // nlohmann::ordered_json would keep insertion order; field order carries no meaning here
  j["lab"] = r.lab;
  j["variant"] = r.variant;
  j["gpu"] = dev.name;
  j["cc"] = dev.cc();
  // The SMs a launch can spread over: with gpu_work.launches, how much of the
  // GPU a grid fills (tools/profiling/nocounters.py).
  if (dev.sm_count > 0) j["sms"] = dev.sm_count;
  json size = json::object();
  for (const auto& [k, v] : r.size) size[k] = v;
  j["size"] = size;
  j["bytes"] = num(r.bytes);
  j["flops"] = num(r.flops);
  j["timed"] = r.timed;
  j["runs"] = r.timing.runs;
  j["median_ms"] = num(r.timing.median_ms);
  j["min_ms"] = num(r.timing.min_ms);
  j["mean_ms"] = num(r.timing.mean_ms);
  j["stddev_ms"] = num(r.timing.stddev_ms);
  j["ci95_ms"] = num(r.timing.ci95_ms);
  j["stop"] = to_string(r.timing.stop);
  if (r.timing.unjoined_ms > 0) j["unjoined_ms"] = num(r.timing.unjoined_ms);
  if (r.timing.no_gap_ms > 0) {
    j["no_gap_ms"] = num(r.timing.no_gap_ms);
    j["no_gap_batch"] = r.timing.no_gap_batch;
  }
  j["gbps"] = num(r.gbps);
  j["gflops"] = num(r.gflops);
  j["ceiling"] = r.ceiling;
  j["ceiling_value"] = num(r.ceiling_value);
  j["pct_of_ceiling"] = num(r.pct_of_ceiling);
  j["suspect"] = r.suspect;
  j["implausible"] = r.implausible;
  if (r.implausible) j["implausible_why"] = r.implausible_why;
  if (!r.peak.empty()) {
    j["peak"] = r.peak;
    j["peak_gflops"] = num(r.peak_gflops);
  }
  j["baseline"] = r.baseline;
  j["baseline_ms"] = num(r.baseline_ms);
  j["vs_baseline"] = num(r.vs_baseline);
  const CheckResult& c = reported_check(r);
  j["max_abs_err"] = num(c.max_abs_err);
  j["rel_err"] = num(c.rel_l2_err);
  j["tolerance"] = num(c.tolerance.abs);
  j["tolerance_rel"] = num(c.tolerance.rel);
  j["checks"] = {{"first", r.check.passed},
                 {"repeat", r.repeat.count ? json(r.repeat.passed) : json(nullptr)},
                 {"timed_runs", r.timed_runs_checked ? json(r.timed_run.passed) : json(nullptr)},
                 {"after_timing", r.after_timing.count ? json(r.after_timing.passed) : json(nullptr)},
                 {"fresh_inputs", r.recheck.count ? json(r.recheck.passed) : json(nullptr)}};
  // How many timed runs had their output checked right after they ran (besides
  // the output the timing left: checks.after_timing).
  if (r.timed_runs_checked) j["timed_runs_checked"] = r.timed_runs_checked;
  // How many runs between the timed runs were traced for the stream contract.
  if (r.timed_runs_traced) j["timed_runs_traced"] = r.timed_runs_traced;
  if (r.fresh_inputs) j["fresh_seed"] = r.fresh_seed;
  if (r.recheck.count) j["fresh_buffers"] = r.fresh_buffers ? json(true) : json(r.fresh_buffers_why);
  j["passed"] = r.passed;
  if (r.judge) {
    j["judge"] = true;
    // The device's memory ceilings, for the grader's plausibility gate: the
    // graded program's own implausible flag is its memory's word
    // (tools/grader/judge.py rates its times against these).
    j["dram_peak_gbps"] = num(dev.dram_peak_gbps);
    j["l2_bytes"] = dev.l2_bytes;
  }
  if (r.library_baseline) j["library_baseline"] = true;
  if (!r.passed) j["failure"] = failure_text(r);
  json work = {{"traced", r.gpu_work.traced}};
  if (r.gpu_work.traced) {
    work["kernels"] = r.gpu_work.kernels;
    work["cooperative"] = r.gpu_work.cooperative;
    if (r.gpu_work.max_kernels >= 0) work["declared_max_kernels"] = r.gpu_work.max_kernels;
    if (r.gpu_work.expect_cooperative >= 0) work["declared_cooperative"] = r.gpu_work.expect_cooperative;
    work["copies_to_host"] = r.gpu_work.copies_to_host;
    work["copies_to_device"] = r.gpu_work.copies_to_device;
    work["host_syncs"] = r.gpu_work.host_syncs;
    work["end_marked"] = r.gpu_work.end_marked;  // the stream contract's marker was seen
    work["unjoined"] = r.gpu_work.unjoined;
    // A copy variant on the events clock: its hold on the given stream was seen,
    // and how much of the run started before the hold ended.
    work["given_stream_held"] = r.gpu_work.given_stream_held;
    work["early"] = r.gpu_work.early;
    // How big each kernel's launch was (the largest per kernel, at most 6 of
    // them): how many of the GPU's SMs a grid can keep busy.
    json launches = json::array();
    for (const Launch& l : r.gpu_work.largest_launches(6))
      launches.push_back({{"kernel", l.kernel}, {"blocks", l.blocks}, {"block_threads", l.block_threads}});
    if (!launches.empty()) work["launches"] = launches;
  } else {
    work["why_not"] = r.gpu_work.not_traced_why;
  }
  j["gpu_work"] = work;
  if (r.clocks_before.valid || r.clocks_after.valid) {
    j["clocks"] = {{"before", clocks_json(r.clocks_before)}, {"after", clocks_json(r.clocks_after)}};
    j["throttled"] = r.throttled;
    if (r.throttled) j["throttle_why"] = r.throttle_why;
    j["power_capped"] = r.power_capped;
  }
  if (r.resources) {
    const auto& k = *r.resources;
    j["resources"] = {{"registers", k.registers},         {"static_smem", k.static_smem},
                      {"dynamic_smem", k.dynamic_smem},   {"local_bytes", k.local_bytes},
                      {"block_threads", k.block_threads}, {"blocks_per_sm", k.blocks_per_sm},
                      {"occupancy", num(k.occupancy)}};
  }
  if (!r.extra.empty()) {
    json e = json::object();
    for (const auto& [k, v] : r.extra) e[k] = num(v);
    j["extra"] = e;
  }
  if (!r.flags.empty()) j["flags"] = r.flags;
  j["seed"] = r.seed;
  j["git"] = git_revision();
  j["git_dirty"] = git_dirty();
  j["toolkit"] = dev.toolkit();
  j["driver"] = dev.driver();
  j["timestamp"] = utc_timestamp();
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string table_header() {
  char buf[256];
  std::snprintf(buf, sizeof buf, "  %-26s %10s %6s %5s %9s %10s %7s %8s %9s  %s", "variant", "median ms", "±ci%", "runs",
                "GB/s", "GFLOP/s", "%ceil", "vs base", "max err", "check");
  return buf;
}

std::string table_row(const Record& r) {
  char buf[512];
  std::string ceil = r.pct_of_ceiling > 0 ? fmt("%.1f", r.pct_of_ceiling) + (r.suspect ? "!" : "") : "-";
  std::string vs = r.vs_baseline > 0 ? fmt("%.2fx", r.vs_baseline) : "-";
  std::string err = r.check.count ? fmt("%.2e", reported_check(r).max_abs_err) : "-";
  // A graded program (--evidence) compares nothing: the judge's verdict counts.
  const bool sent = evidence::mode() == evidence::Mode::record;
  std::string verdict = r.passed ? (sent ? "SENT" : "PASS") : "FAIL";
  if (r.implausible) verdict += " IMPLAUSIBLE";
  if (r.throttled) verdict += " (throttled)";
  if (r.timed && r.timing.stop != StopReason::precision) verdict += std::string(" (timer stopped at ") + to_string(r.timing.stop) + ")";
  if (!r.timed) {
    std::snprintf(buf, sizeof buf, "  %-26s %10s %6s %5s %9s %10s %7s %8s %9s  %s", r.variant.c_str(), "-", "-", "-", "-", "-",
                  "-", "-", err.c_str(), verdict.c_str());
  } else {
    std::snprintf(buf, sizeof buf, "  %-26s %10.4f %6.1f %5d %9s %10s %7s %8s %9s  %s", r.variant.c_str(), r.timing.median_ms,
                  100.0 * r.timing.ci95_ms / std::max(r.timing.mean_ms, 1e-12), r.timing.runs,
                  r.bytes > 0 ? fmt("%.1f", r.gbps).c_str() : "-", r.flops > 0 ? fmt("%.1f", r.gflops).c_str() : "-",
                  ceil.c_str(), vs.c_str(), err.c_str(), verdict.c_str());
  }
  std::string row = buf;
  if (!r.passed) row += "\n      " + failure_text(r);
  if (r.implausible) row += "\n      implausible: " + r.implausible_why;
  return row;
}

std::string resources_table(const std::vector<Record>& records) {
  std::string s;
  std::set<std::string> seen;
  char buf[256];
  for (const auto& r : records) {
    if (!r.resources || !seen.insert(r.variant).second) continue;
    if (s.empty()) {
      std::snprintf(buf, sizeof buf, "  %-26s %6s %8s %10s %8s %7s %8s %10s\n", "kernel resources", "regs", "smem B",
                    "dyn smem B", "local B", "block", "blk/SM", "occupancy");
      s += buf;
    }
    const auto& k = *r.resources;
    std::snprintf(buf, sizeof buf, "  %-26s %6d %8zu %10zu %8zu %7d %8d %9.0f%%%s\n", r.variant.c_str(), k.registers,
                  k.static_smem, k.dynamic_smem, k.local_bytes, k.block_threads, k.blocks_per_sm, 100.0 * k.occupancy,
                  k.local_bytes ? "  (local memory: spills or local arrays)" : "");
    s += buf;
  }
  return s;
}

}  // namespace cudalabs

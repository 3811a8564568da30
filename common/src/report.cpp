#include "cudalabs/report.hpp"

#include <cmath>
#include <cstdio>
#include <ctime>
#include <set>

#ifndef CUDALABS_GIT
#define CUDALABS_GIT "unknown"
#endif

namespace cudalabs {

namespace {

std::string num(double v) {
  if (!std::isfinite(v)) return "null";  // JSON has no NaN or Infinity
  char buf[32];
  // Whole numbers (bytes, flops, sizes) exactly; measured values to 6 digits.
  if (v == std::floor(v) && std::fabs(v) < 9007199254740992.0)
    std::snprintf(buf, sizeof buf, "%.0f", v);
  else
    std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string str(const std::string& s) { return "\"" + json_escape(s) + "\""; }

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

}  // namespace

std::string json_escape(const std::string& s) {
  std::string o;
  for (unsigned char c : s) {
    switch (c) {
      case '"': o += "\\\""; break;
      case '\\': o += "\\\\"; break;
      case '\n': o += "\\n"; break;
      case '\t': o += "\\t"; break;
      case '\r': o += "\\r"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          o += buf;
        } else {
          o += static_cast<char>(c);
        }
    }
  }
  return o;
}

std::string git_revision() { return CUDALABS_GIT; }

std::string utc_timestamp() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string to_json(const Record& r, const DeviceInfo& dev) {
  std::string s = "{";
  auto field = [&](const std::string& k, const std::string& v) { s += (s.size() > 1 ? "," : "") + str(k) + ":" + v; };
  field("lab", str(r.lab));
  field("variant", str(r.variant));
  field("gpu", str(dev.name));
  field("cc", str(dev.cc()));
  std::string size = "{";
  for (const auto& [k, v] : r.size) size += (size.size() > 1 ? "," : "") + str(k) + ":" + std::to_string(v);
  field("size", size + "}");
  field("bytes", num(r.bytes));
  field("flops", num(r.flops));
  field("timed", r.timed ? "true" : "false");
  field("runs", std::to_string(r.timing.runs));
  field("median_ms", num(r.timing.median_ms));
  field("min_ms", num(r.timing.min_ms));
  field("mean_ms", num(r.timing.mean_ms));
  field("stddev_ms", num(r.timing.stddev_ms));
  field("ci95_ms", num(r.timing.ci95_ms));
  field("stop", str(to_string(r.timing.stop)));
  field("gbps", num(r.gbps));
  field("gflops", num(r.gflops));
  field("ceiling", str(r.ceiling));
  field("ceiling_value", num(r.ceiling_value));
  field("pct_of_ceiling", num(r.pct_of_ceiling));
  field("suspect", r.suspect ? "true" : "false");
  field("baseline", str(r.baseline));
  field("baseline_ms", num(r.baseline_ms));
  field("vs_baseline", num(r.vs_baseline));
  const CheckResult& worst = r.check.passed && r.timed ? r.recheck : r.check;
  field("max_abs_err", num(worst.max_abs_err));
  field("rel_err", num(worst.rel_l2_err));
  field("tolerance", num(worst.tolerance.abs));
  field("tolerance_rel", num(worst.tolerance.rel));
  field("passed", r.passed ? "true" : "false");
  if (!r.passed) {
    std::string why = !r.check.passed ? "first run: " + r.check.summary() : "repeated run: " + r.recheck.summary();
    field("failure", str(why));
  }
  if (r.resources) {
    const auto& k = *r.resources;
    field("resources", "{\"registers\":" + std::to_string(k.registers) + ",\"static_smem\":" + std::to_string(k.static_smem) +
                           ",\"dynamic_smem\":" + std::to_string(k.dynamic_smem) + ",\"local_bytes\":" +
                           std::to_string(k.local_bytes) + ",\"block_threads\":" + std::to_string(k.block_threads) +
                           ",\"blocks_per_sm\":" + std::to_string(k.blocks_per_sm) + ",\"occupancy\":" + num(k.occupancy) + "}");
  }
  if (!r.extra.empty()) {
    std::string e = "{";
    for (const auto& [k, v] : r.extra) e += (e.size() > 1 ? "," : "") + str(k) + ":" + num(v);
    field("extra", e + "}");
  }
  field("seed", std::to_string(r.seed));
  field("git", str(git_revision()));
  field("toolkit", str(dev.toolkit()));
  field("driver", str(dev.driver()));
  field("timestamp", str(utc_timestamp()));
  return s + "}";
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
  std::string err = r.check.count ? fmt("%.2e", (r.check.passed && r.timed ? r.recheck : r.check).max_abs_err) : "-";
  std::string verdict = r.passed ? "PASS" : "FAIL";
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
  if (!r.passed) {
    const CheckResult& c = !r.check.passed ? r.check : r.recheck;
    row += std::string("\n      ") + (!r.check.passed ? "first run: " : "on a repeated run (only right the first time?): ") + c.summary();
  }
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

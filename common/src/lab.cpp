#include "cudalabs/lab.hpp"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <new>

#include "cudalabs/random.hpp"

namespace cudalabs {

Session::Session(const LabSpec& spec, Options options, const DeviceInfo& device)
    : spec_(spec), options_(std::move(options)), device_(device) {}

Session::~Session() = default;

bool Session::selected(const std::string& variant) const {
  for (const auto& v : spec_.variants)
    if (v.name == variant && v.baseline) return true;
  if (options_.variants.empty()) return true;
  for (const auto& v : options_.variants)
    if (v == variant) return true;
  return false;
}

std::uint64_t Session::seed(std::uint64_t buffer) const { return mix_seed(options_.seed, buffer); }

const Record* Session::baseline_at(const Point& p) const {
  for (const auto& r : records_)
    if (r.size == p && r.timed)
      for (const auto& v : spec_.variants)
        if (v.baseline && v.name == r.variant) return &r;
  return nullptr;
}

void Session::note(const std::string& line) { notes_.push_back(line); }

bool Session::all_passed() const {
  for (const auto& r : records_)
    if (!r.passed) return false;
  return !records_.empty();
}

const Record& Session::add(Record r) {
  const bool new_point = records_.empty() || !(records_.back().size == r.size);
  if (new_point) std::printf("\n  [%s]\n%s\n", to_string(r.size).c_str(), table_header().c_str());
  std::printf("%s\n", table_row(r).c_str());
  std::fflush(stdout);
  if (!options_.json_path.empty()) {
    std::ofstream f(options_.json_path, std::ios::app);
    if (!f) throw UsageError("--json " + options_.json_path + ": cannot open the file for appending. Check the folder exists and is writable.");
    f << to_json(r, device_) << "\n";
  }
  records_.push_back(std::move(r));
  return records_.back();
}

const Record& Session::measure(const Measurement& m) {
  Record r;
  r.lab = spec_.name;
  r.variant = m.variant;
  r.size = m.size;
  r.bytes = m.work.bytes;
  r.flops = m.work.flops;
  r.resources = m.resources;
  r.extra = m.extra;
  r.seed = options_.seed;
  cudaStream_t s = stream();

  // First run on poisoned outputs: catches unwritten elements and wrong results.
  if (m.poison) m.poison(s);
  if (m.reset) m.reset(s);
  m.run(s);
  CUDALABS_CHECK(cudaStreamSynchronize(s));
  r.check = m.check();

  if (r.check.passed && options_.check_only) {
    // A second run on the first run's output: catches kernels that are only
    // right once (accumulating into the output, reading what they wrote).
    if (m.reset) m.reset(s);
    m.run(s);
    CUDALABS_CHECK(cudaStreamSynchronize(s));
    r.recheck = m.check();
    r.passed = r.recheck.passed;
    return add(std::move(r));
  }
  if (r.check.passed) {
    if (m.clock == Clock::events) {
      r.timing = time_on_stream(s, m.run, options_.timer, m.reset);
    } else {
      auto one = [&] {
        if (m.reset) m.reset(s);
        CUDALABS_CHECK(cudaStreamSynchronize(s));
        auto t0 = std::chrono::steady_clock::now();
        m.run(s);
        CUDALABS_CHECK(cudaStreamSynchronize(s));
        return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      };
      for (int i = 0; i < options_.timer.warmup_runs; ++i) one();
      r.timing = repeat_until_stable(one, options_.timer);
    }
    CUDALABS_CHECK(cudaStreamSynchronize(s));
    r.timed = true;
    // The output now holds the last timed run's result: a kernel that is only
    // right on its first run (accumulates into its output, races) fails here.
    r.recheck = m.check();
  }
  r.passed = r.check.passed && (!r.timed || r.recheck.passed);

  if (r.timed && r.timing.median_ms > 0) {
    r.gbps = r.bytes / (r.timing.median_ms * 1e6);
    r.gflops = r.flops / (r.timing.median_ms * 1e6);
  }
  const Record* base = baseline_at(r.size);
  bool is_baseline = false;
  for (const auto& v : spec_.variants)
    if (v.name == r.variant && v.baseline) is_baseline = true;
  if (base && !is_baseline && r.timed) {
    r.baseline = base->variant;
    r.baseline_ms = base->timing.median_ms;
    r.vs_baseline = base->timing.median_ms / r.timing.median_ms;
  }
  if (r.timed) {
    if (m.ceiling == CeilingKind::copy_bandwidth && r.bytes > 0) {
      r.ceiling = "d2d_copy_gbps";
      r.ceiling_value = Ceilings::copy_gbps();
      r.pct_of_ceiling = 100.0 * r.gbps / r.ceiling_value;
      // 5% above the measured copy: the data sat in L2 (small sizes), or the
      // byte count is wrong. Either way, not a DRAM bandwidth.
      r.suspect = r.pct_of_ceiling > 105.0;
    } else if (m.ceiling == CeilingKind::given && m.given_ceiling.gbps > 0 && r.bytes > 0) {
      r.ceiling = m.given_ceiling.name;
      r.ceiling_value = m.given_ceiling.gbps;
      r.pct_of_ceiling = 100.0 * r.gbps / r.ceiling_value;
      r.suspect = r.pct_of_ceiling > 105.0;
    } else if (m.ceiling == CeilingKind::baseline) {
      if (is_baseline) {
        r.ceiling = r.variant;
        r.ceiling_value = r.flops > 0 ? r.gflops : r.gbps;
        r.pct_of_ceiling = 100.0;
      } else if (base) {
        r.ceiling = base->variant;
        r.ceiling_value = base->flops > 0 ? base->gflops : base->gbps;
        r.pct_of_ceiling = 100.0 * r.vs_baseline;
      }
    }
  }
  return add(std::move(r));
}

void Session::finish() {
  std::string res = resources_table(records_);
  if (!res.empty()) std::printf("\n%s", res.c_str());
  bool suspect = false;
  for (const auto& r : records_) suspect = suspect || (r.suspect && r.ceiling == "d2d_copy_gbps");
  if (suspect)
    notes_.push_back("! above the measured device-to-device copy bandwidth: the data fits in the " +
                     std::to_string(device_.l2_bytes >> 20) + " MB L2, so this is L2 bandwidth, not DRAM (try --flush-l2).");
  if (!notes_.empty()) std::printf("\n");
  for (const auto& n : notes_) std::printf("  %s\n", n.c_str());
  std::size_t failed = 0;
  for (const auto& r : records_) failed += r.passed ? 0 : 1;
  if (records_.empty())
    std::printf("\n  nothing was run\n");
  else if (failed == 0)
    std::printf("\n  all %zu results correct\n", records_.size());
  else
    std::printf("\n  FAILED: %zu of %zu results wrong\n", failed, records_.size());
  if (!options_.json_path.empty()) std::printf("  records appended to %s\n", options_.json_path.c_str());
}

void require_compute_capability(const DeviceInfo& dev, int major, int minor, const std::string& feature) {
  if (dev.cc_major < major || (dev.cc_major == major && dev.cc_minor < minor))
    throw NoDeviceError(feature + " needs compute capability " + std::to_string(major) + "." + std::to_string(minor) +
                        " or newer; " + dev.name + " is " + dev.cc() + ".");
}

int run_lab(int argc, char** argv, const LabSpec& spec, const std::function<void(Session&)>& body) {
  Parsed parsed;
  try {
    parsed = parse_args(spec, std::span<const char* const>(argv + 1, static_cast<std::size_t>(argc - 1)));
  } catch (const UsageError& e) {
    std::fprintf(stderr, "%s: error: %s\n", spec.name.c_str(), e.what());
    return 2;
  }
  if (parsed.action == Action::help) {
    std::printf("%s", help_text(spec).c_str());
    return 0;
  }
  if (parsed.action == Action::list) {
    std::printf("%s", list_text(spec).c_str());
    return 0;
  }
  if (!parsed.options.json_path.empty()) {
    std::ofstream probe(parsed.options.json_path, std::ios::app);
    if (!probe) {
      std::fprintf(stderr, "%s: error: --json %s: cannot open the file for appending. Check the folder exists and is writable.\n",
                   spec.name.c_str(), parsed.options.json_path.c_str());
      return 2;
    }
  }
  try {
    DeviceInfo dev = select_device(parsed.options.device);
    const Options& o = parsed.options;
    std::printf("== %s — %s\n", spec.name.c_str(), spec.title.c_str());
    std::printf("   device %d: %s (cc %s, %d SMs, %zu MB L2, %.1f GB), CUDA runtime %s, driver %s\n", dev.id,
                dev.name.c_str(), dev.cc().c_str(), dev.sm_count, dev.l2_bytes >> 20, dev.global_mem_bytes / 1e9,
                dev.toolkit().c_str(), dev.driver().c_str());
    std::printf("   seed %llu; timing: median of runs until the 95%% CI is within ±%.1f%% (at most %d runs, %.1f s)%s\n",
                static_cast<unsigned long long>(o.seed), 100 * o.timer.rel_precision, o.timer.max_runs, o.timer.max_seconds,
                o.timer.flush_l2 ? "; L2 flushed before each run" : "");
    std::fflush(stdout);
    Session session(spec, parsed.options, dev);
    body(session);
    bool uses_copy = false;
    for (const auto& r : session.records()) uses_copy = uses_copy || r.ceiling == "d2d_copy_gbps";
    if (uses_copy)
      session.note("%ceil = % of the device-to-device copy bandwidth measured in this run: " +
                   std::to_string(static_cast<long>(Ceilings::copy_gbps())) + " GB/s (bytes read + written)");
    session.finish();
    return session.all_passed() ? 0 : 1;
  } catch (const UsageError& e) {
    std::fprintf(stderr, "%s: error: %s\n", spec.name.c_str(), e.what());
    return 2;
  } catch (const NoDeviceError& e) {
    std::fprintf(stderr, "%s: skipped: %s\n", spec.name.c_str(), e.what());
    return 77;
  } catch (const CudaError& e) {
    std::fprintf(stderr, "%s: %s\n", spec.name.c_str(), e.what());
    return 3;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "%s: error: the host ran out of memory for these sizes. Use a smaller --size.\n", spec.name.c_str());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: internal error: %s\n", spec.name.c_str(), e.what());
    return 3;
  }
}

}  // namespace cudalabs

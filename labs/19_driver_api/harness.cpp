#include "harness.hpp"

#include <chrono>
#include <cstdio>
#include <fstream>
#include <new>
#include <stdexcept>

#include <cudalabs/monitor.hpp>
#include <cudalabs/random.hpp>
#include <cudalabs/timer.hpp>

namespace lab19 {

using cudalabs::CheckResult;
using cudalabs::Measurement;
using cudalabs::Record;

DriverSession::DriverSession(const cudalabs::LabSpec& spec, cudalabs::Options options, const cudalabs::DeviceInfo& device)
    : spec_(spec), options_(std::move(options)), device_(device) {}

bool DriverSession::is_baseline(const std::string& variant) const {
  for (const auto& v : spec_.variants)
    if (v.name == variant) return v.baseline;
  return false;
}

bool DriverSession::selected(const std::string& variant) const {
  if (is_baseline(variant) || options_.variants.empty()) return true;
  for (const auto& v : options_.variants)
    if (v == variant) return true;
  return false;
}

bool DriverSession::all_passed() const {
  for (const auto& r : records_)
    if (!r.passed) return false;
  return !records_.empty();
}

const Record* DriverSession::baseline_for(const Record& r) const {
  const auto kernel = [](const std::string& v) { return v.substr(v.find('_') + 1); };  // "driver_vector_add" -> "vector_add"
  for (const auto& b : records_)
    if (b.timed && b.size == r.size && is_baseline(b.variant) && kernel(b.variant) == kernel(r.variant)) return &b;
  return nullptr;
}

double DriverSession::copy_gbps() {
  if (copy_gbps_ > 0) return copy_gbps_;
  constexpr std::size_t bytes = std::size_t{256} << 20;  // 8x the H100's 50 MB L2: DRAM, not L2
  DeviceArray<unsigned char> src(bytes, "copy ceiling source"), dst(bytes, "copy ceiling destination");
  Event start, stop;
  float best = 0;
  for (int i = 0; i < 6; ++i) {  // the first copy warms up; the best of the others
    start.record(stream());
    LAB19_CHECK(cuMemcpyDtoDAsync(reinterpret_cast<CUdeviceptr>(dst.ptr().raw),
                                  reinterpret_cast<CUdeviceptr>(src.ptr().raw), bytes, stream()));
    stop.record(stream());
    stop.synchronize();
    const float ms = stop.ms_since(start);
    if (i > 0 && (best == 0 || ms < best)) best = ms;
  }
  copy_gbps_ = 2.0 * bytes / (best * 1e6);
  return copy_gbps_;
}

// Poison, reset, run (traced when `work` is given), wait for the whole context,
// check: lab.cpp's checked_run with the driver's synchronisation.
CheckResult DriverSession::checked_run(const Measurement& m, cudalabs::GpuWork* work) {
  if (m.poison) m.poison(stream());
  if (m.reset) m.reset(stream());
  cudalabs::GpuWorkTrace trace;
  if (work) {
    LAB19_CHECK(cuCtxSynchronize());
    trace.start();
  }
  m.run(stream());
  if (work) trace.stop_api();
  LAB19_CHECK(cuCtxSynchronize());
  if (work) *work = trace.stop();
  return m.check();
}

cudalabs::TimingStats DriverSession::time_events(const Measurement& m) {
  const cudalabs::TimerConfig& cfg = options_.timer;
  for (int i = 0; i < cfg.warmup_runs; ++i) {
    if (m.reset) m.reset(stream());
    m.run(stream());
  }
  stream_.synchronize();
  if (cfg.flush_l2 && l2_flush_.size() == 0)
    l2_flush_ = DeviceArray<unsigned char>(2 * std::max<std::size_t>(device_.l2_bytes, 1 << 20), "L2 flush buffer");
  Event start, stop;
  return cudalabs::repeat_until_stable(
      [&] {
        if (m.reset) m.reset(stream());
        if (cfg.flush_l2) l2_flush_.poison(stream());  // writes 2x the L2 size: nothing of the inputs stays cached
        start.record(stream());
        m.run(stream());
        stop.record(stream());
        stop.synchronize();
        return static_cast<double>(stop.ms_since(start));
      },
      cfg);
}

cudalabs::TimingStats DriverSession::time_host_clock(const Measurement& m) {
  auto one = [&] {
    if (m.reset) m.reset(stream());
    stream_.synchronize();
    const auto t0 = std::chrono::steady_clock::now();
    m.run(stream());
    stream_.synchronize();
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  };
  for (int i = 0; i < options_.timer.warmup_runs; ++i) one();
  return cudalabs::repeat_until_stable(one, options_.timer);
}

const Record& DriverSession::measure(const Measurement& m) {
  Record r;
  r.lab = spec_.name;
  r.variant = m.variant;
  r.size = m.size;
  r.bytes = m.work.bytes;
  r.flops = m.work.flops;
  r.resources = m.resources;
  r.extra = m.extra;
  r.seed = options_.seed;
  const bool host = m.clock == cudalabs::Clock::host || m.expect == cudalabs::Expect::host;
  if (!host && !m.new_inputs)
    throw std::logic_error("variant " + m.variant + " has no new_inputs: every GPU variant must be re-checked on fresh inputs");

  // 1. First run, traced: right, and computed by the GPU. (CUPTI sees kernels
  //    and copies whichever API issued them.)
  const bool traced = m.expect == cudalabs::Expect::kernels && !host;
  r.check = checked_run(m, traced ? &r.gpu_work : nullptr);
  if (!traced) r.gpu_work.not_traced_why = host ? "timed on the host clock" : "copies are this variant's lesson";
  bool ok = true;
  if (const std::string problem = r.gpu_work.problem(); !problem.empty()) {
    r.failure = "GPU work: the variant " + problem;
    ok = false;
  } else if (!r.check.passed) {
    r.failure = "first run: " + r.check.summary();
    ok = false;
  }
  // 2. The same inputs again, output poisoned again.
  if (ok) {
    r.repeat = checked_run(m, nullptr);
    if (!r.repeat.passed) {
      r.failure = "repeated run on the same inputs (output poisoned again): " + r.repeat.summary();
      ok = false;
    }
  }
  // 3. Timing, then the output the last timed run left.
  if (ok && !options_.check_only) {
    r.timing = m.clock == cudalabs::Clock::events ? time_events(m) : time_host_clock(m);
    LAB19_CHECK(cuCtxSynchronize());
    r.timed = true;
    r.after_timing = m.check();
    if (!r.after_timing.passed) {
      r.failure = "output of the timed runs: " + r.after_timing.summary();
      ok = false;
    }
  }
  // 4. Fresh input values, output poisoned.
  if (ok) {
    if (m.new_inputs) {
      r.fresh_seed = cudalabs::mix_seed(options_.seed ^ 0xF7E5C0FFEEull, ++fresh_inputs_drawn_);
      m.new_inputs(r.fresh_seed);
      LAB19_CHECK(cuCtxSynchronize());
      r.fresh_inputs = true;
    }
    r.recheck = checked_run(m, nullptr);
    if (!r.recheck.passed) {
      r.failure = "fresh inputs (seed " + std::to_string(r.fresh_seed) + "), output poisoned: " + r.recheck.summary();
      ok = false;
    }
  }
  r.passed = ok;

  if (r.timed && r.timing.median_ms > 0) {
    r.gbps = r.bytes / (r.timing.median_ms * 1e6);
    r.gflops = r.flops / (r.timing.median_ms * 1e6);
  }
  if (const Record* base = baseline_for(r); base && r.timed && !is_baseline(r.variant)) {
    r.baseline = base->variant;
    r.baseline_ms = base->timing.median_ms;
    r.vs_baseline = base->timing.median_ms / r.timing.median_ms;
  }
  if (r.timed) {
    if (m.ceiling == cudalabs::CeilingKind::copy_bandwidth && r.bytes > 0) {
      r.ceiling = "d2d_copy_gbps";
      r.ceiling_value = copy_gbps();
      r.pct_of_ceiling = 100.0 * r.gbps / r.ceiling_value;
      r.suspect = r.pct_of_ceiling > 105.0;  // the data sat in L2
    }
    r.peak = cudalabs::to_string(m.peak);
    r.peak_gflops = device_.peak_gflops(m.peak);
    r.implausible_why = cudalabs::implausible_reason(r.gbps, r.gflops, r.bytes, m.peak, device_,
                                                     device_.dram_peak_gbps > 0 ? 0 : 1.2 * copy_gbps());
    r.implausible = !r.implausible_why.empty();
  }
  return add(std::move(r));
}

const Record& DriverSession::add(Record r) {
  if (records_.empty() || !(records_.back().size == r.size))
    std::printf("\n  [%s]\n%s\n", cudalabs::to_string(r.size).c_str(), cudalabs::table_header().c_str());
  std::printf("%s\n", cudalabs::table_row(r).c_str());
  std::fflush(stdout);
  if (!options_.json_path.empty()) {
    std::ofstream f(options_.json_path, std::ios::app);
    if (!f) throw cudalabs::UsageError("--json " + options_.json_path + ": cannot open the file for appending.");
    f << cudalabs::to_json(r, device_) << "\n";
  }
  records_.push_back(std::move(r));
  return records_.back();
}

void DriverSession::finish() {
  const std::string resources = cudalabs::resources_table(records_);
  if (!resources.empty()) std::printf("\n%s", resources.c_str());
  int implausible = 0;
  for (const auto& r : records_) implausible += r.implausible;
  if (implausible)
    notes_.push_back("! " + std::to_string(implausible) +
                     " result(s) IMPLAUSIBLE: faster than the hardware can be; the byte/FLOP count or the timing is wrong");
  if (copy_gbps_ > 0)
    notes_.push_back("%ceil = % of the device-to-device copy bandwidth measured in this run: " +
                     std::to_string(static_cast<long>(copy_gbps_)) + " GB/s (bytes read + written)");
  if (!notes_.empty()) std::printf("\n");
  for (const auto& n : notes_) std::printf("  %s\n", n.c_str());
  std::size_t failed = 0;
  for (const auto& r : records_) failed += r.passed ? 0 : 1;
  if (records_.empty()) std::printf("\n  nothing was run\n");
  else if (failed == 0) std::printf("\n  all %zu results correct\n", records_.size());
  else std::printf("\n  FAILED: %zu of %zu results wrong\n", failed, records_.size());
  if (!options_.json_path.empty()) std::printf("  records appended to %s\n", options_.json_path.c_str());
}

int run_driver_lab(int argc, char** argv, const cudalabs::LabSpec& spec,
                   const std::function<void(const cudalabs::Options&)>& before_driver_init,
                   const std::function<void(DriverSession&)>& body) {
  const char* name = spec.name.c_str();
  try {
    const cudalabs::Parsed parsed =
        cudalabs::parse_args(spec, std::span<const char* const>(argv + 1, static_cast<std::size_t>(argc - 1)));
    if (parsed.action == cudalabs::Action::help) {
      std::printf("%s", cudalabs::help_text(spec).c_str());
      return 0;
    }
    if (parsed.action == cudalabs::Action::list) {
      std::printf("%s", cudalabs::list_text(spec).c_str());
      return 0;
    }
    const cudalabs::Options& o = parsed.options;
    if (!o.json_path.empty() && !std::ofstream(o.json_path, std::ios::app))
      throw cudalabs::UsageError("--json " + o.json_path +
                                 ": cannot open the file for appending. Check the folder exists and is writable.");
    if (before_driver_init) before_driver_init(o);
    PrimaryContext context(o.device);  // outlives the session: its stream and memory belong to the context
    const cudalabs::DeviceInfo dev = device_info(context.device(), o.device);
    std::printf("== %s — %s\n", name, spec.title.c_str());
    std::printf("   device %d: %s (cc %s, %d SMs, %zu MB L2, %.1f GB), driver API only: CUDA %s headers, driver %s\n",
                dev.id, dev.name.c_str(), dev.cc().c_str(), dev.sm_count, dev.l2_bytes >> 20, dev.global_mem_bytes / 1e9,
                dev.toolkit().c_str(), dev.driver().c_str());
    std::printf("   seed %llu; timing: median of runs until the 95%% CI is within ±%.1f%% (at most %d runs, %.1f s)%s\n",
                static_cast<unsigned long long>(o.seed), 100 * o.timer.rel_precision, o.timer.max_runs,
                o.timer.max_seconds, o.timer.flush_l2 ? "; L2 flushed before each run" : "");
    std::fflush(stdout);
    DriverSession session(spec, o, dev);
    body(session);
    session.finish();
    return session.all_passed() ? 0 : 1;
  } catch (const cudalabs::UsageError& e) {
    std::fprintf(stderr, "%s: error: %s\n", name, e.what());
    return 2;
  } catch (const cudalabs::NoDeviceError& e) {
    std::fprintf(stderr, "%s: skipped: %s\n", name, e.what());
    return 77;
  } catch (const cudalabs::CudaError& e) {
    std::fprintf(stderr, "%s: %s\n", name, e.what());
    return 3;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "%s: error: the host ran out of memory for these sizes. Use a smaller --size.\n", name);
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: internal error: %s\n", name, e.what());
    return 3;
  }
}

}  // namespace lab19

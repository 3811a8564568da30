#include "cudalabs/lab.hpp"

#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <fstream>
#include <new>
#include <stdexcept>
#include <thread>

#include "cudalabs/evidence.hpp"
#include "cudalabs/monitor.hpp"
#include "cudalabs/random.hpp"

namespace cudalabs {

Recorder::Recorder(const LabSpec& spec, Options options, const DeviceInfo& device)
    : spec_(spec), options_(std::move(options)), device_(device) {
  evidence::configure(!options_.judge_dir.empty()      ? evidence::Mode::judge
                      : !options_.evidence_dir.empty() ? evidence::Mode::record
                                                       : evidence::Mode::off,
                      !options_.judge_dir.empty() ? options_.judge_dir : options_.evidence_dir);
}

bool Recorder::judging() const { return !options_.judge_dir.empty(); }

Recorder::~Recorder() = default;

bool Recorder::is_baseline(const std::string& variant) const {
  for (const auto& v : spec_.variants)
    if (v.name == variant) return v.baseline;
  return false;
}

bool Recorder::selected(const std::string& variant) const {
  if (is_baseline(variant) || options_.variants.empty()) return true;
  for (const auto& v : options_.variants)
    if (v == variant) return true;
  return false;
}

std::uint64_t Recorder::seed(std::uint64_t buffer) const { return mix_seed(options_.seed, buffer); }

const Record* Recorder::baseline_at(const Point& p) const {
  for (const auto& r : records_)
    if (r.size == p && r.timed && is_baseline(r.variant)) return &r;
  return nullptr;
}

void Recorder::note(const std::string& line) { notes_.push_back(line); }

bool Recorder::all_passed() const {
  for (const auto& r : records_)
    if (!r.passed) return false;
  return !records_.empty();
}

const Record& Recorder::add(Record r) {
  if (r.flags.empty()) r.flags = options_.extra;
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

CheckResult Recorder::scoped_check(const Measurement& m, const char* step) { return scoped_check(m, step, m.check); }

CheckResult Recorder::scoped_check(const Measurement& m, const char* step, const std::function<CheckResult()>& check) {
  evidence::Scope scope(m.variant, to_string(m.size), step);
  CheckResult c = check();
  // A judge's verdict must rest on the graded program's outputs: a check that
  // compared none of them judged nothing, and passes nothing.
  if (judging() && scope.observations() == 0)
    return missing_output(c.count, "this check compared nothing the graded program wrote (a check without "
                                   "cudalabs::observe): judged as failed");
  return c;
}

CheckResult Recorder::checked_run(const Measurement& m, GpuWork* work, const char* step) {
  cudaStream_t s = work_stream();
  if (m.poison) m.poison(s);
  if (m.reset) m.reset(s);
  if (work)
    *work = traced_run(m);
  else
    m.run(s);
  synchronize();
  return scoped_check(m, step);
}

GpuWork Recorder::traced_run(const Measurement& m) {
  GpuWorkTrace trace;
  // The stream contract (stream_contract.cu) holds a kernel variant's traced
  // run on the legacy default stream: its work must end on the given stream.
  const bool contract = m.expect == Expect::kernels;
  // A copy variant timed by events is held on the stream it is given: the
  // events there time only the work that waited for it. (On the host clock a
  // pageable cudaMemcpyAsync may wait out the hold, and lab 08's pageable_sync
  // is on the legacy stream by design: not held.)
  const bool held = (m.expect == Expect::copies || m.expect == Expect::kernels_and_copies) && m.clock == Clock::events;
  synchronize();
  // The trace starts first: enabling CUPTI's activity kinds waits for the
  // device to be idle, and would wait out a hold launched before it. The
  // hold's own kernel is left out of the trace's counts by its launch: the
  // kernels launched before holds_launched() are the harness's, whatever a
  // kernel of the variant is called (no code of the variant runs before
  // m.run, and a kernel file starts no thread: the import audit).
  trace.start();
  if (contract) hold(cudaStreamLegacy);
  if (held) {
    trace.hold_on_given_stream();
    hold(work_stream());
  }
  trace.holds_launched();
  try {
    m.run(work_stream());
  } catch (const NotImplemented&) {
    // A starter kit's stub launcher: end the trace here, or CUPTI stays on and
    // the next variant's trace counts this variant's neighbours' work.
    trace.stop_api();
    if (contract || held) release_hold();
    synchronize();
    trace.stop();
    throw;
  }
  trace.stop_api();
  if (contract) {
    trace.mark_end();
    mark_end_of_run();
    release_hold();
  }
  if (held) {
    // Work that did not wait for the stream starts microseconds after the
    // launcher issued it; a millisecond more of hold after the launcher's
    // return puts it a millisecond before the hold's end, 20x the 50 us to
    // which CUPTI aligns two GPUs' clocks (trace.cpp).
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    release_hold();
  }
  synchronize();
  GpuWork work = trace.stop();
  work.copies_allowed = m.expect == Expect::kernels_and_copies;
  work.copies_only = m.expect == Expect::copies;
  work.max_kernels = m.launches.max_kernels;
  work.expect_cooperative = m.launches.cooperative;
  return work;
}

const Record& Recorder::measure(const Measurement& m) {
  Record r;
  r.lab = spec_.name;
  r.variant = m.variant;
  r.size = m.size;
  r.bytes = m.work.bytes;
  r.flops = m.work.flops;
  r.resources = m.resources;
  r.extra = m.extra;
  r.seed = options_.seed;
  const bool host = m.clock == Clock::host || m.expect == Expect::host;
  if (!host && !m.new_inputs)
    throw std::logic_error("variant " + m.variant + " has no new_inputs: every GPU variant must be re-checked on fresh inputs");
  if (m.clock == Clock::host && (m.timed_runs.at_least > 0 || m.timed_runs.inputs || m.timed_runs.after))
    throw std::logic_error("variant " + m.variant + " has timed_runs on the host clock: its timing has no runs to hook");

  r.judge = judging();
  r.library_baseline = is_baseline(m.variant);
  // Before the launcher's first call: what its calls keep allocated is told
  // from the room the buffers had (step 4).
  if (!host && !judging()) note_room();
  if (judging()) {
    // The compute peak the variant's FLOP/s are held against, from the course's
    // code: a judge rates nothing, and the graded program's word is its memory's.
    r.peak = to_string(m.peak);
    r.peak_gflops = device_.peak_gflops(m.peak);
  }
  // 1. First run, traced: right, and computed by the GPU. A judge runs the
  //    course's own kernels: only the graded program's trace says what its ran.
  //    A copy lesson's round trip is traced too, for its kernel (host clock or
  //    not); a copy variant on the events clock, for the stream its copies waited for.
  const bool traced = !judging() && (m.expect == Expect::kernels_and_copies ||
                                     ((m.expect == Expect::kernels || m.expect == Expect::copies) && !host));
  bool ok = true;
  try {
    r.check = checked_run(m, traced ? &r.gpu_work : nullptr, "first");
  } catch (const NotImplemented& e) {
    // A wrong result like any other (exit 1), never a crash; tools/grade.py
    // and tools/starter.py read the failure's first words.
    r.failure = "not implemented yet: " + e.launcher + " is a starter-kit stub (write the kernel and its launcher)";
    r.check.passed = false;
    ok = false;
  }
  if (judging())
    r.gpu_work.not_traced_why = "a judge: the graded program's own record holds its trace";
  else if (!traced)
    r.gpu_work.not_traced_why = m.expect == Expect::host ? "a CPU variant" : "timed on the host clock (Clock::host)";
  if (!ok) {
    // not implemented: nothing ran, nothing to judge
  } else if (const std::string problem = r.gpu_work.problem(); !problem.empty()) {
    r.failure = "GPU work: the variant " + problem;
    ok = false;
  } else if (!r.check.passed) {
    r.failure = "first run: " + r.check.summary();
    ok = false;
  }
  // 2. Again on the same inputs, output poisoned again: a kernel right only
  //    once, or one that skips its work when called again, fails here.
  if (ok) {
    r.repeat = checked_run(m, nullptr, "repeat");
    if (!r.repeat.passed) {
      r.failure = "repeated run on the same inputs (output poisoned again): " + r.repeat.summary() +
                  " — right only the first time, or skipped its work when called again";
      ok = false;
    }
  }
  // 3. Timing, checking the output of some timed runs right after they ran
  //    (after_timed_run), then the output the timing left (races that show
  //    only back to back).
  //    A judge times nothing: it judges every output the graded program's
  //    harness checked during its timing (as many as it left: evidence::recorded),
  //    then the one its timing left.
  if (ok && !options_.check_only) {
    // Named per variant and size, as the "timed" step's outputs are: a record
    // the graded program and its judge do not both time (a failed trace) puts
    // them out of step for that variant and size only.
    timed_run_step_ = "timed-run." + std::to_string(timings_[m.variant + "@" + to_string(m.size)]++);
    // A reservoir of two runs: a launcher that does less on a random half of
    // its calls passes a uniform sample of 2 with probability 1/4, and the
    // other runs checked make that less. A check downloads and compares the
    // whole output: where the variant moves more than 3 GiB (an output of a
    // GiB or more), a reservoir of one, which still checks about 1 + ln(runs).
    timed_run_sample_ = m.work.bytes > 3.0 * (1ull << 30) ? 1 : 2;
    if (!judging()) {
      time(m, r);
      r.timed = true;
    } else {
      const std::size_t left = evidence::recorded(m.variant, to_string(m.size), timed_run_step_);
      for (std::size_t i = 0; i < left; ++i) check_timed_run(m, r, -1);
    }
    r.after_timing = scoped_check(m, "timed");
    // The lab's check over every timed run: in a judge, over the graded
    // program's outputs of its timed runs, as many as it kept.
    CheckResult over_runs;
    over_runs.passed = true;
    if (m.timed_runs.check) over_runs = scoped_check(m, "timed-runs", m.timed_runs.check);
    if (!r.timed_work_problem.empty()) {
      r.failure = "GPU work of a run between the timed runs (traced, one of " + std::to_string(r.timed_runs_traced) +
                  "): the variant " + r.timed_work_problem + " — its timed runs were timed doing part of their work";
      ok = false;
    } else if (r.timed_runs_checked && !r.timed_run.passed) {
      const std::string checked = std::to_string(r.timed_runs_checked);
      r.failure = "output of the timed runs (" +
                  (r.timed_run_index >= 0 ? "timed run " + std::to_string(r.timed_run_index + 1) + " of " +
                                                std::to_string(r.timing.runs) + ", one of the " + checked
                                          : "one of the " + checked + " timed runs") +
                  " checked right after they ran): " + r.timed_run.summary() +
                  " — does the launcher do less on some calls?";
      ok = false;
    } else if (!r.after_timing.passed) {
      r.failure = "output of the timed runs: " + r.after_timing.summary();
      ok = false;
    } else if (!over_runs.passed) {
      r.after_timing = both(r.after_timing, over_runs);
      r.failure = "the timed runs' outputs together: " + over_runs.summary();
      ok = false;
    }
  }
  // 4. New input values in new places, output poisoned: an answer remembered
  //    from an earlier call, or anything kept by pointer or by shape (a TMA
  //    descriptor, a workspace aimed at the first call's inputs), fails here:
  //    every DeviceBuffer has moved, and its old place holds 0xFF (NaN).
  if (ok) {
    if (m.new_inputs) {
      r.fresh_seed = mix_seed(options_.seed ^ 0xF7E5C0FFEEull, ++fresh_inputs_drawn_);
      m.new_inputs(r.fresh_seed);
      synchronize();
      r.fresh_inputs = true;
    }
    // A judge runs the course's own kernels: nothing of theirs is kept by
    // pointer; a CPU variant has nothing on the GPU to keep.
    struct Moved {
      Recorder& recorder;
      buffers::NotMoved not_moved;
      Moved(Recorder& rec, std::string skip)
          : recorder(rec), not_moved(skip.empty() ? rec.move_buffers() : buffers::NotMoved{std::move(skip)}) {}
      ~Moved() {
        if (not_moved.why.empty()) recorder.restore_buffers();
      }
    } moved(*this, judging() ? "a judge" : host ? "a CPU variant" : m.keeps_pointers);
    // A judge's failure speaks of the graded program's run, which moved its
    // buffers unless the variant keeps pointers by design (or there was no
    // room to copy them: its own record says so).
    const std::string graded_why = host ? "a CPU variant" : m.keeps_pointers;
    r.fresh_buffers = judging() ? graded_why.empty() : moved.not_moved.why.empty();
    r.fresh_buffers_why = judging() ? graded_why : moved.not_moved.why;
    r.recheck = checked_run(m, nullptr, "fresh");
    // The inputs changed in place: a launcher that kept the room the copies
    // needed reads right with pointers kept from an earlier call.
    if (moved.not_moved.launcher_held && r.recheck.passed) {
      r.failure = "fresh inputs (seed " + std::to_string(r.fresh_seed) + "), not moved: " + moved.not_moved.why;
      ok = false;
    } else if (!r.recheck.passed) {
      r.failure = (r.fresh_inputs ? "fresh inputs (seed " + std::to_string(r.fresh_seed) + ")" +
                                        (r.fresh_buffers ? " in new allocations" : "") + ", output poisoned: "
                                  : "last check, output poisoned: ") +
                  r.recheck.summary() +
                  (r.fresh_inputs ? " — an answer kept from an earlier call, or a pointer kept from one?" : "");
      ok = false;
    }
  }
  r.passed = ok;
  if (r.timed) rate(r, m);
  return add(std::move(r));
}

void Recorder::after_timed_run(const Measurement& m, Record& r, int run) {
  // The lab's own reading of the run's output first, before a check or a
  // traced run can touch it.
  if (m.timed_runs.after) m.timed_runs.after(run);
  // The draw comes from the operating system once the run has finished: not
  // from --seed, which a launcher can read as well as the harness can, and not
  // before the run, so nothing in the process holds it while the launcher runs.
  if (checks_timed_run(seed_from_os(), timed_run_sample_, run)) check_timed_run(m, r, run);
  // The stream contract of the timed runs: a traced run between two timed
  // ones, which the launcher cannot tell from them (the same output, poisoned,
  // the same inputs, back to back). Always after the first timed run, then
  // after run i with probability 1/(i + 1): about 1 + ln(runs) traces. A
  // launcher that leaves work on a stream of its own in its timed runs (the
  // first traced run, step 1, was a proper one) has the events time part of
  // its work; here its work is seen to end after the stream it was given.
  if (!checks_timed_run(seed_from_os(), 1, run) || !GpuWorkTrace::available()) return;
  // A variant whose every run has inputs of its own (Measurement::timed_runs,
  // lab 27's seed per run) is traced on the next timed run's inputs: on run
  // `run`'s own, the traced run would be the one call that repeats the inputs
  // of the call before it, which a launcher that keeps the last seed it was
  // given tells from a timed run. The next timed run repeats them instead,
  // once the trace is over.
  if (m.timed_runs.inputs) m.timed_runs.inputs(run + 1);
  cudaStream_t s = work_stream();
  if (m.poison) m.poison(s);
  if (m.reset) m.reset(s);
  const GpuWork work = traced_run(m);
  ++r.timed_runs_traced;
  if (const std::string problem = work.problem(); !problem.empty() && r.timed_work_problem.empty())
    r.timed_work_problem = problem;
}

void Recorder::check_timed_run(const Measurement& m, Record& r, int run) {
  CheckResult c = scoped_check(m, timed_run_step_.c_str());
  ++r.timed_runs_checked;
  if (r.timed_runs_checked > 1 && !r.timed_run.passed) return;  // the first failure is the one reported
  r.timed_run = std::move(c);
  r.timed_run_index = run;
}

void Recorder::rate(Record& r, const Measurement& m) {
  if (r.timing.median_ms > 0) {
    r.gbps = r.bytes / (r.timing.median_ms * 1e6);
    r.gflops = r.flops / (r.timing.median_ms * 1e6);
  }
  const Record* base = baseline_for(r);
  const bool baseline = is_baseline(r.variant);
  if (base && !baseline) {
    r.baseline = base->variant;
    r.baseline_ms = base->timing.median_ms;
    r.vs_baseline = base->timing.median_ms / r.timing.median_ms;
  }
  if (m.ceiling == CeilingKind::copy_bandwidth && r.bytes > 0) {
    r.ceiling = "d2d_copy_gbps";
    r.ceiling_value = copy_gbps();
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
    if (baseline) {
      r.ceiling = r.variant;
      r.ceiling_value = r.flops > 0 ? r.gflops : r.gbps;
      r.pct_of_ceiling = 100.0;
    } else if (base) {
      r.ceiling = base->variant;
      r.ceiling_value = base->flops > 0 ? base->gflops : base->gbps;
      r.pct_of_ceiling = 100.0 * r.vs_baseline;
    }
  }
  // The plausibility gate: a rate the hardware cannot reach.
  r.peak = to_string(m.peak);
  r.peak_gflops = device_.peak_gflops(m.peak);
  const double fallback = device_.dram_peak_gbps > 0 ? 0 : 1.2 * copy_gbps();
  r.implausible_why = implausible_reason(r.gbps, r.gflops, r.bytes, m.peak, device_, fallback);
  if (r.implausible_why.empty()) r.implausible_why = unjoined_reason(r.timing.unjoined_ms, r.timing.median_ms);
  r.implausible = !r.implausible_why.empty();
}

std::string implausible_reason(double gbps, double gflops, double bytes, Peak peak, const DeviceInfo& dev,
                               double dram_fallback_gbps) {
  // Compute: nothing runs faster than every SM issuing its widest instruction
  // at the maximum clock.
  const double peak_gflops = dev.peak_gflops(peak);
  if (peak_gflops > 0 && gflops > peak_gflops)
    return std::to_string(static_cast<long long>(gflops)) + " GFLOP/s is above the device's " + to_string(peak) +
           " peak of " + std::to_string(static_cast<long long>(peak_gflops)) + " GFLOP/s";
  // Memory: at least bytes - L2 of the bytes must cross the DRAM interface
  // (the rest may be served or absorbed by L2), so the run cannot take less
  // than (bytes - L2) / DRAM peak. Data that fits twice in L2 gets a loose
  // bound of 8x the DRAM peak, more than any GPU's L2 delivers.
  const double dram = dev.dram_peak_gbps > 0 ? dev.dram_peak_gbps : dram_fallback_gbps;
  const double l2 = static_cast<double>(dev.l2_bytes);
  if (dram <= 0 || bytes <= 0) return "";
  const double bound = bytes > 2 * l2 ? dram * bytes / (bytes - l2) : 8 * dram;
  if (gbps > bound)
    return std::to_string(static_cast<long long>(gbps)) + " GB/s is above what the memory can deliver (" +
           std::to_string(static_cast<long long>(bound)) + " GB/s for " + std::to_string(static_cast<long long>(bytes / 1e6)) +
           " MB with a " + std::to_string(dev.l2_bytes >> 20) + " MB L2; DRAM peak " +
           std::to_string(static_cast<long long>(dram)) + " GB/s)";
  return "";
}

void Recorder::finish() {
  std::string res = resources_table(records_);
  if (!res.empty()) std::printf("\n%s", res.c_str());
  for (const auto& r : records_)
    if (r.ceiling == "d2d_copy_gbps") {
      notes_.push_back("%ceil = % of the device-to-device copy bandwidth measured in this run: " +
                       std::to_string(static_cast<long>(copy_gbps())) + " GB/s (bytes read + written)");
      break;
    }
  // Above the measured copy bandwidth: for data that fits in L2 that is L2's
  // bandwidth; for larger data, a pass that only reads (a reduction) can beat a
  // read+write copy by a few percent on HBM. Neither is a DRAM rate to compare.
  bool suspect_small = false, suspect_large = false;
  for (const auto& r : records_) {
    if (!r.suspect || r.ceiling != "d2d_copy_gbps") continue;
    (r.bytes <= 2.0 * static_cast<double>(device_.l2_bytes) ? suspect_small : suspect_large) = true;
  }
  if (suspect_small)
    notes_.push_back("! above the measured device-to-device copy bandwidth: the data fits in the " +
                     std::to_string(device_.l2_bytes >> 20) + " MB L2, so this is L2 bandwidth, not DRAM (try --flush-l2).");
  if (suspect_large)
    notes_.push_back("! above the measured device-to-device copy bandwidth on data larger than L2: a pass that mostly reads "
                     "can beat a read+write copy by a few percent; more than that means the byte count is too high.");
  int throttled = 0, implausible = 0, power_capped = 0;
  for (const auto& r : records_) {
    throttled += r.throttled;
    implausible += r.implausible;
    power_capped += r.power_capped;
  }
  if (throttled)
    notes_.push_back("! " + std::to_string(throttled) +
                     " measurement(s) ran while the GPU slowed its clocks (thermal or hardware slowdown): "
                     "their times are not the hardware's best; run again when the GPU is cool");
  if (power_capped)
    notes_.push_back(std::to_string(power_capped) + " measurement(s) ran at the board's power limit (normal under full load)");
  if (implausible)
    notes_.push_back("! " + std::to_string(implausible) +
                     " result(s) IMPLAUSIBLE: faster than the hardware can be, or timed without work left running on another "
                     "stream; the byte/FLOP count or the timing is wrong (each record's implausible_why says which)");
  if (!notes_.empty()) std::printf("\n");
  for (const auto& n : notes_) std::printf("  %s\n", n.c_str());
  std::size_t failed = 0;
  for (const auto& r : records_) failed += r.passed ? 0 : 1;
  if (records_.empty())
    std::printf("\n  nothing was run\n");
  else if (failed == 0 && evidence::mode() == evidence::Mode::record)
    std::printf("\n  all %zu outputs sent to the judge (--evidence): it compares them, this program does not\n",
                records_.size());
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

std::string seed_and_timing_line(const Options& o) {
  char line[256];
  std::snprintf(line, sizeof line, "   seed %llu; timing: median of runs until the 95%% CI is within ±%.1f%% (at most %d runs, %.1f s)%s",
                static_cast<unsigned long long>(o.seed), 100 * o.timer.rel_precision, o.timer.max_runs, o.timer.max_seconds,
                o.timer.flush_l2 ? "; L2 flushed before each run" : "");
  return line;
}

int exit_code_of_current_exception(const std::string& lab) {
  const char* name = lab.c_str();
  try {
    throw;
  } catch (const UsageError& e) {
    std::fprintf(stderr, "%s: error: %s\n", name, e.what());
    return 2;
  } catch (const NoDeviceError& e) {
    std::fprintf(stderr, "%s: skipped: %s\n", name, e.what());
    return 77;
  } catch (const CudaError& e) {
    std::fprintf(stderr, "%s: %s\n", name, e.what());
    return 3;
  } catch (const NotImplemented& e) {
    // A stub called outside Recorder::measure (a lab's own sweep or setup).
    std::fprintf(stderr, "%s: FAILED: %s (a starter-kit stub: write it in the lab's kernel file)\n", name, e.what());
    return 1;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "%s: error: the host ran out of memory for these sizes. Use a smaller --size.\n", name);
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: internal error: %s\n", name, e.what());
    return 3;
  }
}

int run_lab(int argc, char** argv, const LabSpec& spec, const std::function<void(Session&)>& body) {
  Parsed parsed;
  try {
    parsed = parse_args(spec, std::span<const char* const>(argv + 1, static_cast<std::size_t>(argc - 1)));
  } catch (...) {
    return exit_code_of_current_exception(spec.name);
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
  // Libraries of the course read it: a checking run skips what only timing needs
  // (the cuBLAS algorithm search).
  if (parsed.options.check_only || !parsed.options.judge_dir.empty()) setenv("CUDALABS_CHECK_ONLY", "1", 1);
  try {
    DeviceInfo dev = select_device(parsed.options.device);
    const Options& o = parsed.options;
    std::printf("== %s — %s\n", spec.name.c_str(), spec.title.c_str());
    std::printf("   device %d: %s (cc %s, %d SMs, %zu MB L2, %.1f GB), CUDA runtime %s, driver %s\n", dev.id,
                dev.name.c_str(), dev.cc().c_str(), dev.sm_count, dev.l2_bytes >> 20, dev.global_mem_bytes / 1e9,
                dev.toolkit().c_str(), dev.driver().c_str());
    std::printf("%s\n", seed_and_timing_line(o).c_str());
    std::fflush(stdout);
    Session session(spec, parsed.options, dev);
    body(session);
    session.finish();
    return session.all_passed() ? 0 : 1;
  } catch (...) {
    return exit_code_of_current_exception(spec.name);
  }
}

}  // namespace cudalabs

#include "harness.hpp"

#include <chrono>
#include <cstdio>
#include <fstream>

#include <cudalabs/monitor.hpp>
#include <cudalabs/timer.hpp>

namespace lab19 {

using cudalabs::CheckResult;
using cudalabs::Measurement;
using cudalabs::Record;

DriverSession::DriverSession(const cudalabs::LabSpec& spec, cudalabs::Options options, const cudalabs::DeviceInfo& device)
    : Recorder(spec, std::move(options), device) {}

const Record* DriverSession::baseline_for(const Record& r) const {
  const auto kernel = [](const std::string& v) { return v.substr(v.find('_') + 1); };  // "driver_vector_add" -> "vector_add"
  for (const auto& b : records())
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

void DriverSession::synchronize() { LAB19_CHECK(cuCtxSynchronize()); }

void DriverSession::time(const Measurement& m, Record& r) {
  r.timing = m.clock == cudalabs::Clock::events ? time_events(m) : time_host_clock(m);
  synchronize();
}

cudalabs::TimingStats DriverSession::time_events(const Measurement& m) {
  const cudalabs::TimerConfig& cfg = timer();
  for (int i = 0; i < cfg.warmup_runs; ++i) {
    if (m.reset) m.reset(stream());
    m.run(stream());
  }
  stream_.synchronize();
  if (cfg.flush_l2 && l2_flush_.size() == 0)
    l2_flush_ = DeviceArray<unsigned char>(2 * std::max<std::size_t>(device().l2_bytes, 1 << 20), "L2 flush buffer");
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
  for (int i = 0; i < timer().warmup_runs; ++i) one();
  return cudalabs::repeat_until_stable(one, timer());
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
    std::printf("%s\n", cudalabs::seed_and_timing_line(o).c_str());
    std::fflush(stdout);
    DriverSession session(spec, o, dev);
    body(session);
    session.finish();
    return session.all_passed() ? 0 : 1;
  } catch (...) {
    return cudalabs::exit_code_of_current_exception(spec.name);
  }
}

}  // namespace lab19

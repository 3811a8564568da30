#include "cudalabs/timer.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <vector>

#include "cudalabs/device.hpp"
#include "cudalabs/error.hpp"
#include "cudalabs/memory.hpp"
#include "cudalabs/random.hpp"

namespace cudalabs {

const char* to_string(StopReason r) {
  switch (r) {
    case StopReason::precision: return "precision";
    case StopReason::max_runs: return "max_runs";
    case StopReason::time_budget: return "time_budget";
  }
  return "?";
}

double student_t_975(int df) {
  // t(0.975, df) for df = 1..30, then interpolation in 1/df towards the normal 1.960.
  static constexpr double small[] = {12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
                                     2.201,  2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
                                     2.080,  2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042};
  if (df < 1) df = 1;
  if (df <= 30) return small[df - 1];
  struct Knot { double df, t; };
  static constexpr Knot knots[] = {{30, 2.042}, {40, 2.021}, {60, 2.000}, {120, 1.980}, {1e300, 1.960}};
  for (int i = 0; i + 1 < 5; ++i) {
    if (df <= knots[i + 1].df) {
      double x0 = 1.0 / knots[i].df, x1 = 1.0 / knots[i + 1].df, x = 1.0 / df;
      return knots[i].t + (knots[i + 1].t - knots[i].t) * (x - x0) / (x1 - x0);
    }
  }
  return 1.960;
}

TimingStats summarize(std::span<const double> samples) {
  TimingStats s;
  s.runs = static_cast<int>(samples.size());
  if (samples.empty()) return s;
  std::vector<double> sorted(samples.begin(), samples.end());
  std::sort(sorted.begin(), sorted.end());
  std::size_t n = sorted.size();
  s.min_ms = sorted.front();
  s.max_ms = sorted.back();
  s.median_ms = n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
  s.mean_ms = std::accumulate(sorted.begin(), sorted.end(), 0.0) / static_cast<double>(n);
  if (n >= 2) {
    double ss = 0;
    for (double x : sorted) ss += (x - s.mean_ms) * (x - s.mean_ms);
    s.stddev_ms = std::sqrt(ss / static_cast<double>(n - 1));
    s.ci95_ms = student_t_975(static_cast<int>(n) - 1) * s.stddev_ms / std::sqrt(static_cast<double>(n));
  }
  return s;
}

bool precise_enough(std::span<const double> samples, const TimerConfig& cfg) {
  if (static_cast<int>(samples.size()) < std::max(2, cfg.min_runs)) return false;
  TimingStats s = summarize(samples);
  return s.ci95_ms <= cfg.rel_precision * s.mean_ms;
}

TimingStats repeat_until_stable(const std::function<double()>& sample_ms, const TimerConfig& cfg) {
  std::vector<double> samples;
  double spent_ms = 0;
  StopReason stop = StopReason::max_runs;
  while (true) {
    double ms = sample_ms();
    samples.push_back(ms);
    spent_ms += ms;
    if (static_cast<int>(samples.size()) < cfg.required_runs) continue;
    if (precise_enough(samples, cfg)) { stop = StopReason::precision; break; }
    if (static_cast<int>(samples.size()) >= cfg.max_runs) { stop = StopReason::max_runs; break; }
    // The budget only cuts in once there are enough runs for a variance at all.
    if (spent_ms >= cfg.max_seconds * 1e3 && static_cast<int>(samples.size()) >= 3) {
      stop = StopReason::time_budget;
      break;
    }
  }
  TimingStats s = summarize(samples);
  s.stop = stop;
  return s;
}

std::string unjoined_reason(double unjoined_ms, double median_ms) {
  if (unjoined_ms <= 0.05 || unjoined_ms <= 0.1 * median_ms) return "";
  char why[256];
  std::snprintf(why, sizeof why,
                "the device was still busy %.3f ms (median over the timed runs) after the stream it was given had "
                "finished: the time leaves that work out (join every stream the launcher forks into the one it is given)",
                unjoined_ms);
  return why;
}

TimingStats time_on_stream(cudaStream_t stream, const std::function<void(cudaStream_t)>& work,
                           const TimerConfig& cfg, const std::function<void(cudaStream_t)>& between_runs,
                           const std::function<void(cudaStream_t)>& poison,
                           const std::function<void(int run)>& after_run,
                           const std::function<void(int run)>& inputs) {
  // Lines an earlier kernel marked persisting would stay in L2 across our runs.
  CUDALABS_CHECK(cudaCtxResetPersistingL2Cache());
  auto before_run = [&](int run) {
    if (inputs) inputs(run);
    if (poison) poison(stream);
    if (between_runs) between_runs(stream);
  };
  for (int i = 0; i < cfg.warmup_runs; ++i) {
    before_run(i - cfg.warmup_runs);
    work(stream);
  }
  CUDALABS_CHECK(cudaStreamSynchronize(stream));
  Event start, stop;
  int run = 0;
  std::vector<double> unjoined;  // per run: how long the device stayed busy after `stop`
  TimingStats stats = repeat_until_stable(
      [&] {
        before_run(run);
        if (cfg.flush_l2) flush_l2(stream);
        start.record(stream);
        work(stream);
        stop.record(stream);
        stop.synchronize();
        const double ms = stop.ms_since(start);
        // Nothing else runs now: a device still busy is running what the
        // launcher forked onto a stream of its own and never joined.
        const auto idle_from = std::chrono::steady_clock::now();
        CUDALABS_CHECK(cudaDeviceSynchronize());
        unjoined.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - idle_from).count());
        if (after_run) after_run(run);
        ++run;
        return ms;
      },
      cfg);
  stats.unjoined_ms = summarize(unjoined).median_ms;
  if (!between_runs && !cfg.flush_l2 && stats.median_ms < no_gap_threshold_ms) {
    // About 1 ms of back-to-back work per sample, 10 to 500 runs.
    const int count = std::clamp(static_cast<int>(1.0 / std::max(stats.median_ms, 1e-3)), 10, 500);
    TimerConfig batch_cfg = cfg;
    batch_cfg.max_seconds = std::min(cfg.max_seconds, 0.5);
    const TimingStats batch = time_batched(stream, work, count, batch_cfg);
    stats.no_gap_ms = batch.median_ms;
    stats.no_gap_batch = count;
  }
  return stats;
}

bool checks_timed_run(std::uint64_t seed, int k, int run) {
  if (run < k) return true;
  // 53 random bits of (seed, run) as a uniform double in [0, 1).
  const double u = static_cast<double>(mix_seed(seed, static_cast<std::uint64_t>(run)) >> 11) * 0x1p-53;
  return u * (run + 1) < k;
}

namespace {

// A graph of `count` runs of `work`, or nullptr when the work cannot be captured.
cudaGraphExec_t capture_runs(cudaStream_t stream, const std::function<void(cudaStream_t)>& work, int count) {
  if (cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal) != cudaSuccess) {
    cudaGetLastError();
    return nullptr;
  }
  bool ok = true;
  try {
    for (int i = 0; i < count; ++i) work(stream);
  } catch (const CudaError&) {
    ok = false;  // e.g. a synchronous copy, which a capture refuses
  }
  cudaGraph_t graph = nullptr;
  ok = cudaStreamEndCapture(stream, &graph) == cudaSuccess && ok;
  cudaGraphExec_t exec = nullptr;
  if (ok) ok = cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess;
  if (graph) cudaGraphDestroy(graph);
  cudaGetLastError();
  return ok ? exec : nullptr;
}

}  // namespace

TimingStats time_batched(cudaStream_t stream, const std::function<void(cudaStream_t)>& work, int count,
                         const TimerConfig& cfg) {
  cudaGraphExec_t exec = capture_runs(stream, work, count);
  auto batch = [&](cudaStream_t s) {
    if (exec) {
      CUDALABS_CHECK(cudaGraphLaunch(exec, s));
    } else {
      for (int i = 0; i < count; ++i) work(s);
    }
  };
  batch(stream);  // warm-up: the graph's first launch uploads it
  CUDALABS_CHECK(cudaStreamSynchronize(stream));
  Event start, stop;
  TimingStats stats = repeat_until_stable(
      [&] {
        start.record(stream);
        batch(stream);
        stop.record(stream);
        stop.synchronize();
        return static_cast<double>(stop.ms_since(start)) / count;
      },
      cfg);
  if (exec) cudaGraphExecDestroy(exec);
  return stats;
}

TimingStats time_host(const std::function<void()>& work, const TimerConfig& cfg) {
  for (int i = 0; i < cfg.warmup_runs; ++i) work();
  return repeat_until_stable(
      [&] {
        auto t0 = std::chrono::steady_clock::now();
        work();
        auto t1 = std::chrono::steady_clock::now();
        return std::chrono::duration<double, std::milli>(t1 - t0).count();
      },
      cfg);
}


}  // namespace cudalabs

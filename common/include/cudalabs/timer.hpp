#pragma once
// The adaptive timer.
//
// One sample = one timed run. After a warm-up, runs are repeated until the 95%
// confidence half-width of the mean (Student t, from the sample variance) is
// within `rel_precision` of the mean, or a bound is hit: `max_runs`, or
// `max_seconds` of accumulated samples. The result says which one stopped it.
// The median is the number we report: one slow run (an interrupt, a clock
// change) moves the mean but not the median.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

namespace cudalabs {

struct TimerConfig {
  int warmup_runs = 3;          // module load, first-touch, clock ramp-up stay out of the numbers
  int min_runs = 10;            // the variance of fewer samples is itself too uncertain
  int max_runs = 1000;
  double max_seconds = 2.0;     // per measurement, summed over timed runs
  double rel_precision = 0.02;  // stop when ci95 half-width <= 2% of the mean
  bool flush_l2 = false;        // overwrite L2 before every run (cold-cache timing)
  // Runs made before any stop is considered, precision, max_runs and budget
  // alike: a check over the timed runs' outputs needs that many (lab 27's
  // spread of 128 estimates). 0: the rule above alone.
  int required_runs = 0;
};

enum class StopReason { precision, max_runs, time_budget };
const char* to_string(StopReason r);

struct TimingStats {
  int runs = 0;
  double median_ms = 0, min_ms = 0, max_ms = 0, mean_ms = 0, stddev_ms = 0;
  double ci95_ms = 0;  // half-width of the 95% confidence interval of the mean
  StopReason stop = StopReason::precision;
  // Microsecond work: the time per run of a batch of back-to-back runs captured
  // in one CUDA graph (no launch gap between them); 0 when not measured.
  double no_gap_ms = 0;
  int no_gap_batch = 0;  // runs per batch
  // How long the device stayed busy after each timed run's stop event had
  // completed (the median over runs, host clock): work the launcher left
  // running on a stream it did not join into the one it was given, which the
  // events leave out of the time. A few microseconds (the call itself) when
  // the launcher finished its work on its stream; 0 when not measured.
  double unjoined_ms = 0;
  bool converged() const { return stop == StopReason::precision; }
};

// Why a time leaves work out (the device still busy `unjoined_ms` after the
// timed stream had finished, median over runs), "" when it does not: more
// than 50 µs (ten times what the wait costs on an idle device) and more than
// 10% of the median time. CPU only.
std::string unjoined_reason(double unjoined_ms, double median_ms);

// Two-sided 95% Student t quantile t(0.975, df), df >= 1.
double student_t_975(int df);

// Statistics of a set of samples (no stopping decision).
TimingStats summarize(std::span<const double> samples_ms);

// True when the samples already meet the precision target (and min_runs).
bool precise_enough(std::span<const double> samples_ms, const TimerConfig& cfg);

// The stopping rule, independent of any GPU: calls `sample_ms` until the rule
// says stop. Unit tests drive it with synthetic samples.
TimingStats repeat_until_stable(const std::function<double()>& sample_ms, const TimerConfig& cfg);

// Times `work` (which only enqueues onto `stream`) with a pair of CUDA events
// per run; warm-up runs first. `between_runs` (optional) is enqueued before
// each run outside the timed region (e.g. an L2 flush or re-zeroing an
// accumulator), after `poison` (optional: the outputs filled with NaN, so
// that every timed run must write them). Persisting L2 lines are reset first.
// When the median is below no_gap_threshold_ms and nothing but the poison
// runs between runs, also measures no_gap_ms (runs back to back, unpoisoned:
// a figure to read, never one that is graded).
// `after_run` (optional) is called with each timed run's index (0, 1, ...)
// once that run has finished (its stop event waited for), before the next
// run's poison: the harness checks the output of some of them there
// (checks_timed_run), outside the events. Never after a warm-up run or a batch.
// `inputs` (optional) is called before each run's poison, outside the events,
// with the run's index: -warmup_runs .. -1 for the warm-up runs, then 0, 1, ...
// for the timed ones; it gives a run inputs of its own (lab 27: a seed per run).
// Never before a batch of the no-gap figure, which repeats the last inputs.
TimingStats time_on_stream(cudaStream_t stream, const std::function<void(cudaStream_t)>& work,
                           const TimerConfig& cfg,
                           const std::function<void(cudaStream_t)>& between_runs = {},
                           const std::function<void(cudaStream_t)>& poison = {},
                           const std::function<void(int run)>& after_run = {},
                           const std::function<void(int run)>& inputs = {});

// Whether the output of timed run `run` (0, 1, ... in order) is checked right
// after it ran: every run that enters a reservoir sample of k runs (Vitter's
// algorithm R), that is runs 0 .. k-1, then run i with probability k / (i + 1),
// drawn from `seed` and i alone (the harness draws a new seed from the
// operating system for each run). However many runs the timer ends up making,
// the runs checked include a uniform sample of k of them all, first and last
// alike; about k·(1 + ln(runs / k)) are checked. The decision for a run is made
// after that run has finished, so the launcher cannot know it while it runs.
bool checks_timed_run(std::uint64_t seed, int k, int run);

// Times host code (std::chrono steady_clock), same rule. For CPU references and
// for end-to-end timings that include synchronous host work.
TimingStats time_host(const std::function<void()>& work, const TimerConfig& cfg);

inline constexpr double no_gap_threshold_ms = 0.1;

// Enqueues reads of a buffer twice the L2 size, evicting everything cached and
// leaving only clean lines (a write-based flush would leave dirty lines for the
// timed run to write back).
void flush_l2(cudaStream_t stream);

// Runs `work` `count` times back to back: captured into a CUDA graph and
// launched once per sample, or, where the work cannot be captured (a
// synchronous call, host code), enqueued in a plain loop. Per-run ms.
TimingStats time_batched(cudaStream_t stream, const std::function<void(cudaStream_t)>& work, int count,
                         const TimerConfig& cfg);

}  // namespace cudalabs

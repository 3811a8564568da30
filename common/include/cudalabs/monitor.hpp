#pragma once
// What the GPU did during a run, and in what state it ran.
//
// GpuWorkTrace records, through CUPTI's activity API (part of the CUDA
// Toolkit, loaded at run time), the kernels, host<->device copies and
// host synchronisations that one run issued. The harness traces each variant's
// first checked run: a variant that launches no kernel, or that copies its data
// to the host and back (computing the answer on the CPU), fails with a message
// that says so. Where CUPTI cannot be loaded (no toolkit library, a profiler or
// sanitizer already attached) the record says "not traced" and why; the
// variant is neither passed nor failed on that account.
//
// Clocks: the SM and memory clocks, temperature, power, and the driver's
// clock-event ("throttle") reasons and cumulative thermal/power violation time,
// through NVML (part of the driver, loaded at run time), before and after each
// timed measurement.
#include <cstdint>
#include <string>
#include <vector>

namespace cudalabs {

// How big one kernel's launch was: its grid in blocks and its threads per block.
struct Launch {
  std::string kernel;  // the mangled name, as the trace gives it
  long long blocks = 0;
  int block_threads = 0;
};

struct GpuWork {
  bool traced = false;
  std::string not_traced_why;  // when !traced
  int kernels = 0;
  int copies_to_host = 0, copies_to_device = 0;
  double bytes_to_host = 0, bytes_to_device = 0;
  int host_syncs = 0;  // cudaDeviceSynchronize, cudaStreamSynchronize, cudaEventSynchronize, synchronous cudaMemcpy ...
  // The stream contract (GpuWorkTrace::mark_end): kernels, copies and memsets of
  // the run still running when the work on the stream it was given had ended.
  bool end_marked = false;
  int unjoined = 0;
  std::string unjoined_what;  // the first of them, in words
  // A copy variant's run on the events clock (GpuWorkTrace::hold_on_given_stream):
  // the harness held the stream the run was given until the run had returned.
  // Kernels, copies and memsets of the run that started before that hold ended
  // did not wait for the stream: the events around it time none of them.
  bool given_stream_held = false;
  int early = 0;
  std::string early_what;  // the first of them, in words
  // Host<->device copies are the lesson (Expect::kernels_and_copies): they and
  // the synchronisations they make are not held against the run.
  bool copies_allowed = false;
  // Copies are the whole work (Expect::copies): no kernel is asked for.
  bool copies_only = false;
  // Kernels launched cooperatively (cudaLaunchCooperativeKernel, or the
  // cooperative launch attribute): the trace's launch type.
  int cooperative = 0;
  // What the variant declared it launches (Measurement::launches); -1: any.
  int max_kernels = -1, expect_cooperative = -1;
  // Per distinct kernel (by name), its largest launch (most blocks; then most
  // threads per block): whether a grid fills the GPU is a question the
  // occupancy API cannot answer, and tools/profiling/nocounters.py asks it.
  std::vector<Launch> launches;

  // Adds one launch to `launches`, keeping the largest per kernel name.
  void note_launch(const char* kernel, long long blocks, int block_threads);
  // The largest launches, at most `at_most` of them: most blocks first, then by
  // kernel name, so that a record says the same for the same work.
  std::vector<Launch> largest_launches(std::size_t at_most) const;

  // Why this run did not do its work on the GPU ("" when it did, or was not traced).
  std::string problem() const;
  std::string summary() const;  // "2 kernels, no host copies" / "not traced: ..."
};

// One kernel, copy or memset that a trace saw, on CUPTI's clock (ns).
struct TracedWork {
  std::string what;  // "kernel foo", "a copy of 4096 bytes", "a memset of 4 bytes"
  std::uint64_t start = 0, end = 0;
  std::uint32_t device = 0;
};

// The rule of a run whose given stream was held (GpuWork::given_stream_held):
// everything in `run` waited for that stream, so started after `hold` (the
// harness's kernel on it) ended. Counts the rest into w.early and w.early_what.
// Work on another GPU than the hold's is compared within the microseconds to
// which CUPTI maps the two GPUs' clocks onto one.
void judge_waited_for_given_stream(GpuWork& w, const TracedWork& hold, const std::vector<TracedWork>& run);

// One kernel that a trace saw (CUPTI's kernel record). Kept until the trace
// stops: the record of the launch call it came from may arrive later.
struct TracedKernel {
  std::string name;  // mangled, as the trace gives it
  long long blocks = 0;
  int block_threads = 0;
  bool cooperative = false;
  std::uint64_t start = 0, end = 0;
  std::uint32_t device = 0;
  std::uint32_t correlation = 0;  // the launch call's, in its runtime API record
};

// One kernel launch call (cudaLaunchKernel, or what <<<>>> calls) of a trace:
// when it started, on CUPTI's clock, and the id its kernel's record carries.
struct TracedLaunch {
  std::uint64_t start = 0;
  std::uint32_t correlation = 0;
};

// A trace's kernels, the harness's hold (stream_contract.cu) told from the run's.
struct RunKernels {
  bool hold_seen = false;
  TracedWork hold;              // when hold_seen: the hold kernel that ended last
  std::vector<TracedWork> run;  // every other kernel
};

// The hold is known by its launch, not its name: the harness launches it
// between the trace's start and `holds_launched` (GpuWorkTrace::holds_launched),
// before the variant runs, so a kernel whose launch call started in
// [traced_from, holds_launched) is the hold, and any other kernel is the run's,
// whatever it is called. Counts the run's into w.kernels, w.cooperative and
// w.launches.
RunKernels split_hold(GpuWork& w, const std::vector<TracedKernel>& kernels,
                      const std::vector<TracedLaunch>& launches, std::uint64_t traced_from,
                      std::uint64_t holds_launched);

// One trace at a time, per process. start() then stop() around a run that the
// caller has synchronised before stop(); sync calls made after stop_api() are
// not counted (the harness's own synchronisation).
class GpuWorkTrace {
 public:
  // Whether tracing works in this process (loads CUPTI on first use). Off when
  // the environment has CUDALABS_TRACE=0, as `make profile` sets for Nsight Compute.
  static bool available(std::string* why_not = nullptr);
  void start();
  void stop_api();  // end counting host synchronisations (before the harness's own)
  // After stop_api, the harness's marker on the stream the run was given (a
  // 4-byte memset, made by the caller right after this call): whatever the run
  // issued must have finished before the marker starts, or it ran on another
  // stream that was never joined back. (The caller holds the legacy default
  // stream meanwhile, so work put there, or on a blocking stream, shows.)
  void mark_end();
  // Before the run: the harness's hold kernel of this trace is on the stream the
  // run is given, released once the run has returned; stop() then judges that
  // the run's work waited for it (judge_waited_for_given_stream).
  void hold_on_given_stream();
  // Right after the harness has launched its holds, before the run: launches
  // that started before this are the holds (split_hold).
  void holds_launched();
  GpuWork stop();   // after the run's work completed: flush and count

 private:
  bool active_ = false;
};

struct ClockSample {
  bool valid = false;
  unsigned sm_mhz = 0, mem_mhz = 0, temp_c = 0;
  double power_w = 0;
  unsigned long long reasons = 0;             // NVML clocks-event reasons bitmask
  unsigned long long thermal_violation_ns = 0;  // cumulative time clocks were held down by temperature
  unsigned long long power_violation_ns = 0;    // ... by the power limit
};

// Reads the clocks of the current device; valid = false where NVML is missing.
ClockSample read_clocks();

// Whether a measurement between two samples ran throttled: a thermal or
// hardware slowdown (reasons bits, or thermal violation time grew). Running at
// the power limit is normal under full load and is reported, not flagged.
// `why` receives the reasons in words.
bool throttled_between(const ClockSample& before, const ClockSample& after, std::string* why);
bool power_capped_between(const ClockSample& before, const ClockSample& after);

}  // namespace cudalabs

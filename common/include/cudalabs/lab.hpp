#pragma once
// The lab harness: run_lab() parses the flags, selects the device, runs the
// lab's body and maps every outcome onto the exit codes of DESIGN.md.
// Session::measure() is the one place that poisons, runs, checks, times,
// re-checks and reports a variant. What it does to every variant, in order:
//   1. poison the output, run once (traced: which kernels and copies it issued), check;
//   2. poison, run again on the same inputs, check (a kernel that is right only
//      once, or that skips work when called again, fails here);
//   3. time it (unless --check-only), checking the output of some timed runs
//      right after they ran (a kernel variant's, whose timed runs start from a
//      poisoned output: checks_timed_run says which), then the output the
//      timing left (a launcher that does less on some calls fails here), and
//      tracing a run between some of them (one that leaves work running off
//      its stream in runs it takes for timed ones fails here); then the lab's
//      own check over every timed run, if it has one (Measurement::timed_runs);
//   4. new input values from a fresh seed (Measurement::new_inputs), every
//      DeviceBuffer moved to a new allocation (its old place poisoned), poison,
//      run, check (an answer remembered from an earlier call, or anything kept
//      by pointer or by shape from one, fails here).
// A variant passes only when all of its checks pass and its run did its work on
// the GPU (at least one kernel; no copies to or from the host; see GpuWork).
#include <cuda_runtime_api.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "checker.hpp"
#include "cli.hpp"
#include "device.hpp"
#include "error.hpp"
#include "memory.hpp"
#include "report.hpp"
#include "timer.hpp"

namespace cudalabs {

struct Work {
  double bytes = 0;  // fewest bytes the operation must move through device memory
  double flops = 0;
};

enum class CeilingKind {
  copy_bandwidth,  // % of the measured device-to-device copy GB/s
  baseline,        // % of the library baseline's throughput measured at this size
  given,           // % of Measurement::given_ceiling (GB/s), e.g. the PCIe link rate
  none,
};

struct GivenCeiling {
  std::string name;  // "pcie_gen5_x16_gbps"
  double gbps = 0;
};

enum class Clock {
  events,  // CUDA events around the work on the session's stream
  host,    // steady_clock around work + stream synchronisation (CPU code, pageable copies)
};

// What a variant's run must issue onto the GPU, verified on its first checked
// run by tracing (CUPTI, where the toolkit has it).
enum class Expect {
  kernels,             // at least one kernel, no copy between host and device, all of it
                       // on the stream it was given (or joined back to it): the default
  kernels_and_copies,  // a round trip of a copy lesson (labs 03, 05, 08, 23, 28): copies
                       // are the lesson, but the answer must come from a kernel; on the
                       // events clock all of it waits for the stream it was given
  copies,              // only copies are the work (an upload, a peer copy): no kernel asked for;
                       // on the events clock, all of it must wait for the stream it was given
  host,                // CPU code (Clock::host): nothing to trace
};

struct Measurement {
  std::string variant;
  Point size;
  Work work;
  std::function<void(cudaStream_t)> run;    // enqueue the work; never synchronise
  std::function<CheckResult()> check;       // compare the output with the reference
  std::function<void(cudaStream_t)> poison; // before every checked run, and every timed run of a kernel
                                            // variant (Expect::kernels, Clock::events): fill outputs with NaN
  std::function<void(cudaStream_t)> reset;  // before every run, untimed (e.g. zero an accumulator)
  // Replace the input values (same shapes) with values drawn from `seed`, upload
  // them, and recompute what check() compares with. Called before the last
  // checked run. Every GPU variant has one; only Expect::host variants may omit it.
  std::function<void(std::uint64_t seed)> new_inputs;
  // Why the last check must run with the buffers where they are, or "" (they
  // move, step 4). Only for a lesson that keeps pointers by design: a CUDA
  // graph replays the addresses it captured (lab 29's decode_graph).
  std::string keeps_pointers;
  // What the traced run may launch, where the launch itself is the lesson
  // (lab 26's grid_sync: one kernel, launched cooperatively; lab 25's single
  // pass: at most two, the pass and a reset); -1: any.
  struct Launches {
    int max_kernels = -1;
    int cooperative = -1;  // exactly this many cooperative launches
  } launches;
  // A check over every timed run's output, for an output one run cannot be
  // judged by (lab 27: an estimate's variance, seen only across many runs).
  // All optional; each runs outside the timed events, on the events clock only.
  struct TimedRuns {
    // Not an aggregate: GCC 12 warns that a Measurement built with designated
    // initializers that leave this out "may use uninitialized" its functions.
    TimedRuns() {}
    int at_least = 0;                     // the timer makes at least this many timed runs, whatever its budget
    std::function<void(int run)> inputs;  // before each run's poison: warm-up runs -warmup_runs .. -1, timed 0, 1, ...
                                          // (a traced run after timed run i: i + 1, as the next timed run)
    std::function<void(int run)> after;   // once timed run `run` has finished, before the harness checks its output
    // After timing, in a step of its own ("timed-runs"), in the graded program
    // and in a judge alike: compares what `after` kept, observed (a judge
    // times nothing: it takes the graded program's).
    std::function<CheckResult()> check;
  } timed_runs;
  Expect expect = Expect::kernels;
  Peak peak = Peak::fp32;  // which compute peak bounds its FLOP/s (DeviceInfo::peak_gflops)
  std::optional<KernelResources> resources;
  CeilingKind ceiling = CeilingKind::copy_bandwidth;
  GivenCeiling given_ceiling;               // with CeilingKind::given
  Clock clock = Clock::events;
  std::map<std::string, double> extra;      // lab-specific numbers for the JSON record
};

// What every session shares, whatever API it runs on: the run's options and
// records, the four steps of measure() (the header above), the comparison with
// the baseline and the ceiling, the table and the summary. The steps that touch
// the GPU are the virtual members below: Session gives the runtime API's,
// lab 19's DriverSession (labs/19_driver_api/harness.hpp) the driver API's.
// Nothing here calls the CUDA runtime itself, so lab 19 links it without cudart.
class Recorder {
 public:
  const Options& options() const { return options_; }
  const std::vector<Point>& points() const { return options_.points; }
  const DeviceInfo& device() const { return device_; }
  const TimerConfig& timer() const { return options_.timer; }
  // Whether this run includes a variant (baselines are always included).
  bool selected(const std::string& variant) const;
  // The run's input seed (--seed). A lab draws buffer i of its inputs from
  // mix_seed(seed, i), so that new_inputs(fresh_seed) can draw new values the same way.
  std::uint64_t seed() const { return options_.seed; }
  // A distinct, reproducible seed for input buffer number `buffer`: mix_seed(seed(), buffer).
  std::uint64_t seed(std::uint64_t buffer) const;

  const Record& measure(const Measurement& m);
  // Adds a finished record made by the lab itself (rare: lab 08's timeline).
  const Record& add(Record r);
  void note(const std::string& line);  // printed under the table

  bool all_passed() const;
  const std::vector<Record>& records() const { return records_; }
  // The baseline record measured at this size, if any.
  const Record* baseline_at(const Point& p) const;
  void finish();  // prints resources, notes, summary

 protected:
  Recorder(const LabSpec& spec, Options options, const DeviceInfo& device);
  virtual ~Recorder();
  // The stream the variants run on (a driver API CUstream is the same type).
  virtual cudaStream_t work_stream() const = 0;
  // Step 3: time the variant into r.timing (and read what the session reads
  // around it: the clocks), then wait for the device.
  virtual void time(const Measurement& m, Record& r) = 0;
  // For time(): called once timed run `run` (0, 1, ...) has finished, before
  // the next run's poison. Calls m.timed_runs.after first; checks the output of the runs checks_timed_run
  // chooses (into r.timed_run), and traces a run between some of them
  // (r.timed_runs_traced): only meaningful where every timed run starts from a
  // poisoned output, as a kernel variant's on the events clock does.
  void after_timed_run(const Measurement& m, Record& r, int run);
  virtual void synchronize() = 0;  // wait for the whole device
  // The stream contract around a traced run (stream_contract.cu): hold a stream
  // (Expect::kernels: the legacy default stream; a copy variant on the events
  // clock: the work stream); after a kernel variant's run, put the marker on the
  // work stream and wait for it alone; release. A session without them (lab
  // 19's driver API) traces without the contract.
  virtual void hold(cudaStream_t) {}
  virtual void mark_end_of_run() {}
  virtual void release_hold() {}
  // Step 4's moves (memory.hpp, cudalabs::buffers): every DeviceBuffer to a new
  // place, then back. move_buffers() returns "" or why nothing moved.
  virtual std::string move_buffers() { return "this harness's buffers are not DeviceBuffers"; }
  virtual void restore_buffers() {}
  // The device-to-device copy bandwidth (GB/s read + written), measured once:
  // the ceiling of CeilingKind::copy_bandwidth rows.
  virtual double copy_gbps() = 0;
  // The record r is compared with: by default the baseline variant's at r's size.
  virtual const Record* baseline_for(const Record& r) const { return baseline_at(r.size); }
  bool is_baseline(const std::string& variant) const;

 private:
  const LabSpec& spec_;
  Options options_;
  DeviceInfo device_;
  std::vector<Record> records_;
  std::vector<std::string> notes_;
  std::uint64_t fresh_inputs_drawn_ = 0;
  std::map<std::string, int> timings_;  // step 3s begun per "variant@size": names their timed-run checks
  std::string timed_run_step_;          // "timed-run.N": the evidence step of this timing's checks
  int timed_run_sample_ = 0;        // k of checks_timed_run
  // One check of a timed run's output, counted into r (run: -1 in a judge).
  void check_timed_run(const Measurement& m, Record& r, int run);
  // Poison the output, reset, run (traced into `work` when given), wait for
  // the whole device (work a launcher put on another stream included), check.
  // `step` names the check's outputs for a judge (evidence.hpp).
  CheckResult checked_run(const Measurement& m, GpuWork* work, const char* step);
  // One run of m under CUPTI's trace (monitor.hpp), a kernel variant's inside
  // the stream contract, waited for: what it launched, copied and left running.
  GpuWork traced_run(const Measurement& m);
  // m.check() with its outputs named by `step`; in a judge, a check that
  // compared none of the graded program's outputs fails.
  CheckResult scoped_check(const Measurement& m, const char* step);
  CheckResult scoped_check(const Measurement& m, const char* step, const std::function<CheckResult()>& check);
  // --judge: the outputs compared are a graded program's (evidence.hpp).
  bool judging() const;
  // Sets r's comparison with its baseline, its ceiling and its plausibility.
  void rate(Record& r, const Measurement& m);
};

// A lab's session on the CUDA runtime: its stream, the runtime's
// synchronisation and event timing, the clocks read around the timing.
class StreamContract;

class Session : public Recorder {
 public:
  Session(const LabSpec& spec, Options options, const DeviceInfo& device);
  ~Session() override;
  cudaStream_t stream() const { return stream_.get(); }

 private:
  Stream stream_;
  std::unique_ptr<StreamContract> contract_;  // made at the first traced run
  void hold(cudaStream_t stream) override;
  void mark_end_of_run() override;
  void release_hold() override;
  std::string move_buffers() override;
  void restore_buffers() override { buffers::restore_all(); }
  cudaStream_t work_stream() const override { return stream(); }
  void time(const Measurement& m, Record& r) override;
  void synchronize() override;
  double copy_gbps() override;
};

// Why a measured rate is physically impossible on `dev` ("" when it is not): FLOP/s
// above the peak for `peak`, or GB/s above what DRAM can deliver for `bytes`
// given the L2 size (dram_fallback_gbps where the device does not report its
// memory clock). The plausibility gate of every record; CPU only.
std::string implausible_reason(double gbps, double gflops, double bytes, Peak peak, const DeviceInfo& dev,
                               double dram_fallback_gbps = 0);

// The banner's line of the run's seed and timing rule ("   seed 42; timing: ...").
std::string seed_and_timing_line(const Options& o);

// Inside a lab main's catch (...): prints what went wrong and returns the exit
// code DESIGN.md gives it (2 bad usage, 77 no device, 3 CUDA failure, 1 a
// starter-kit stub). Shared by run_lab and lab 19's run_driver_lab.
int exit_code_of_current_exception(const std::string& lab);

// Runs a lab: returns the process exit code (0, 1, 2, 3 or 77).
int run_lab(int argc, char** argv, const LabSpec& spec, const std::function<void(Session&)>& body);

// Throws NoDeviceError naming the feature when the device is older than cc major.minor.
void require_compute_capability(const DeviceInfo& dev, int major, int minor, const std::string& feature);

}  // namespace cudalabs

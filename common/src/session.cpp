// Session: the lab harness's session on the CUDA runtime (lab.hpp). Apart from
// lab.cpp so that lab 19, which links lab.cpp's Recorder without cudart, never
// compiles a line of it (in one file the compiler may inline these members
// into Recorder's, and their cudart calls with them).
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string>

#include "cudalabs/lab.hpp"
#include "cudalabs/monitor.hpp"
#include "cudalabs/stream_contract.hpp"

namespace cudalabs {

Session::Session(const LabSpec& spec, Options options, const DeviceInfo& device)
    : Recorder(spec, std::move(options), device) {}

Session::~Session() = default;

// Events on the stream, or the host clock around the work and a stream
// synchronisation; the clocks read before and after.
void Session::time(const Measurement& m, Record& r) {
  cudaStream_t s = stream();
  r.clocks_before = read_clocks();
  if (m.clock == Clock::events) {
    // A kernel variant's timed runs start from a poisoned output, as its
    // checked runs do: a launcher that does less once its output already holds
    // an answer (a kernel that skips what is not NaN, a launch cut short after
    // the checks) leaves poison for the check of the timed runs' output, and
    // is never timed doing less. Copy lessons and host-clock rows, whose
    // poison is host memory and whose subject is where data lives, are timed
    // as they are.
    // The output of some of the poisoned runs is checked right after the run
    // (Recorder::after_timed_run): a launcher that does less on some calls
    // leaves poison in a run it cannot know is checked. The check runs outside
    // the events, before the next run's poison; it may leave its own traffic in
    // L2 (the output's lines the poison rewrites anyway), so the run after a
    // checked one can start a little colder, as the first timed run does.
    // Unpoisoned runs would show an earlier run's answer: not checked so.
    // A lab's check over every timed run (Measurement::timed_runs) needs its
    // runs whatever the precision or the time budget says: at 2^30 samples
    // lab 27's 128 runs of 1.9 ms are 0.25 s, within the 2 s budget anyway.
    const bool poisoned = m.expect == Expect::kernels && m.poison;
    TimerConfig cfg = timer();
    cfg.required_runs = std::max(cfg.required_runs, m.timed_runs.at_least);
    r.timing = poisoned ? time_on_stream(s, m.run, cfg, m.reset, m.poison,
                                         [&](int run) { after_timed_run(m, r, run); }, m.timed_runs.inputs)
                        : time_on_stream(s, m.run, cfg, m.reset, {}, m.timed_runs.after, m.timed_runs.inputs);
  } else {
    auto one = [&] {
      if (m.reset) m.reset(s);
      CUDALABS_CHECK(cudaStreamSynchronize(s));
      auto t0 = std::chrono::steady_clock::now();
      m.run(s);
      CUDALABS_CHECK(cudaStreamSynchronize(s));
      return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    };
    for (int i = 0; i < timer().warmup_runs; ++i) one();
    r.timing = repeat_until_stable(one, timer());
  }
  CUDALABS_CHECK(cudaDeviceSynchronize());
  r.clocks_after = read_clocks();
  r.throttled = throttled_between(r.clocks_before, r.clocks_after, &r.throttle_why);
  r.power_capped = power_capped_between(r.clocks_before, r.clocks_after);
}

void Session::synchronize() { CUDALABS_CHECK(cudaDeviceSynchronize()); }

namespace {
bool moves_off() {
  // Under compute-sanitizer (tests/sanitize.sh sets it): the copies read every
  // byte of every buffer, written or not, and initcheck would report them.
  // The sanitizer's runs judge memory errors; the moves are judged elsewhere.
  const char* v = std::getenv("CUDALABS_MOVES");
  return v && std::string(v) == "0";
}
}  // namespace

void Session::note_room() {
  if (moves_off()) return;
  for (const auto& [device, bytes] : buffers::room()) room_[device] = std::max(room_[device], bytes);
}

buffers::NotMoved Session::move_buffers() {
  if (moves_off()) return {"CUDALABS_MOVES=0 (compute-sanitizer's runs)"};
  return buffers::move_all(room_);
}

void Session::hold(cudaStream_t stream) {
  if (!contract_) contract_ = std::make_unique<StreamContract>();
  contract_->hold(stream);
}

void Session::mark_end_of_run() {
  if (contract_) contract_->mark_and_wait(stream());
}

void Session::release_hold() {
  if (contract_) contract_->release();
}

double Session::copy_gbps() { return Ceilings::copy_gbps(); }

}  // namespace cudalabs

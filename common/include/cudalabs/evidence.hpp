#pragma once
// Evidence for a judge: how grading keeps a verdict out of the graded code's hands.
//
// A graded program holds a student's code (kernels, launchers, and whatever a
// kernel file's host code does), so nothing it says about itself is trusted:
// not its exit code, not its records. Instead it leaves evidence, and a judge
// decides:
//   --evidence DIR  (record) every check the harness makes writes the output
//                   it compared (the "got" side, as the program saw it) into DIR,
//                   and compares nothing: a lab that asks keeps_references()
//                   computes no reference there, so none sits in the memory the
//                   student's code shares (labs that do not ask still hold one:
//                   docs/instructor-guide.md, "What remains, said plainly");
//   --judge DIR     (judge) the same lab, built from the course alone, run with
//                   the same arguments and seed: it regenerates the inputs,
//                   computes its own references, and wherever a check compares
//                   an output it compares the graded program's from DIR instead.
//                   Its records, tolerances and messages are the verdict.
// tools/grade.py runs both (docs/instructor-guide.md, "What is trusted").
//
// Every comparison in the course goes through observe(): check_close and
// check_exact call it, and a lab whose check compares in its own way calls it
// on what it compares, before comparing. In a judge, a checked run that
// observed nothing fails ("compared nothing the graded program wrote"), so a
// check that forgot observe() cannot pass a submission unjudged.
//
// Each observation is named by the check that made it: the record's variant
// and size, the step of Recorder::measure (first, repeat, timed, fresh), and
// its order within the check (timed-run.N: the timed runs the harness checked
// right after they ran, in the N-th timing of that variant and size). Both
// processes run the same course code on the same arguments, so they make the
// same checks in the same order; the judge makes the graded program's
// decisions (stop after a failed step) from the same data, so they stay in
// step after a failure too.
#include <cstddef>
#include <cstring>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

namespace cudalabs::evidence {

enum class Mode { off, record, judge };

// Set once per process, from --evidence / --judge (Recorder's constructor).
// Record mode creates DIR if needed; judge mode requires it to exist.
void configure(Mode mode, const std::string& dir);
Mode mode();

// Whether this process computes the references its checks compare with: not a
// graded program (record), whose checks compare nothing (they pass through to
// the judge) and whose student code runs in the same process. A reference in
// its host memory is an answer that code can read (a launcher that finds the
// harness's expected sum on the stack and writes it into the output with a
// one-thread kernel: tests/broken/reads_expected), so a lab leaves it
// uncomputed there: NaN, an empty vector. What else a lab derives from its
// inputs (a tolerance, a buffer's size, the work a record declares) it keeps.
// Off, judge: true.
inline bool keeps_references() { return mode() != Mode::record; }

// Names the observations made while it lives: record `variant` at `size`,
// step `step`. One at a time (the harness's checks are not nested).
class Scope {
 public:
  Scope(const std::string& variant, const std::string& size, const std::string& step);
  ~Scope();
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;
  // How many outputs the checks of this scope compared.
  std::size_t observations() const;

 private:
  std::size_t observed_at_start_;
};

// Judge: how many checks of step `step` of record `variant` at `size` the
// graded program left outputs for, from the next one this process would make
// on (its first output present, one after the other). For the checks whose
// number the graded program's harness decides while it runs (the timed runs
// it checked right after they ran: a judge times nothing). Only the harness
// writes evidence (a kernel file may not do file I/O: the import audit), and it
// leaves the output of the timed runs after these, so a program stopped
// during its timing leaves none of that and fails there. Off, record: 0.
std::size_t recorded(const std::string& variant, const std::string& size, const std::string& step);

// The untyped core of observe(): `count` elements of `elem_size` bytes at
// `data`, of element type `type` ("f32", "i64", ...). Record: writes them and
// returns "". Judge: points `judged` at the graded program's bytes and returns
// "", or returns why there are none (missing, another type or length); the
// bytes stay valid until the same check's next observation in that order, or
// a check of another record. Off: returns "" and does nothing. With
// `any_count` a judge takes however many elements the graded program wrote
// (observe_vector).
std::string observe_bytes(const void* data, std::size_t count, std::size_t elem_size, const char* type,
                          std::span<const std::byte>& judged, bool any_count = false);

// The element type's name in an evidence file (the judge refuses another type).
template <typename T>
constexpr const char* type_name() {
  if constexpr (std::is_same_v<T, float>) return "f32";
  else if constexpr (std::is_same_v<T, double>) return "f64";
  else if constexpr (std::is_integral_v<T> && std::is_signed_v<T>)
    return sizeof(T) == 1 ? "i8" : sizeof(T) == 2 ? "i16" : sizeof(T) == 4 ? "i32" : "i64";
  else if constexpr (std::is_integral_v<T>)
    return sizeof(T) == 1 ? "u8" : sizeof(T) == 2 ? "u16" : sizeof(T) == 4 ? "u32" : "u64";
  else
    return sizeof(T) == 2 ? "b16" : sizeof(T) == 4 ? "b32" : sizeof(T) == 8 ? "b64" : "bytes";
}

}  // namespace cudalabs::evidence

namespace cudalabs {

// What a check compares: `data` is `got` itself, except in a judge, where it is
// the graded program's output for this check (read from its evidence, valid
// for the check). `missing` says why a judge has none ("" otherwise): the
// check must then fail with it.
template <typename T>
struct Observed {
  std::span<const T> data;
  std::string missing;
};

template <typename T>
Observed<T> observe(std::span<const T> got) {
  static_assert(std::is_trivially_copyable_v<T>, "observe() writes outputs as raw bytes");
  std::span<const std::byte> judged;
  std::string missing = evidence::observe_bytes(got.data(), got.size(), sizeof(T), evidence::type_name<T>(), judged);
  if (!missing.empty()) return {{}, std::move(missing)};
  if (evidence::mode() != evidence::Mode::judge) return {got, ""};
  // The evidence was read into an array of bytes, which provides storage for
  // elements of any trivially copyable type.
  return {std::span<const T>(reinterpret_cast<const T*>(judged.data()), judged.size() / sizeof(T)), ""};
}

// For a check that compares in its own way (a count and a list, an estimate,
// compiled code): observes `got` before anything is computed from it and, in a
// judge, replaces its contents with the graded program's. Returns "" or why a
// judge has none (fail the check with missing_output).
template <typename T>
std::string observe_in_place(std::span<T> got) {
  static_assert(std::is_trivially_copyable_v<T>, "observe_in_place() writes outputs as raw bytes");
  std::span<const std::byte> judged;
  std::string missing = evidence::observe_bytes(got.data(), got.size(), sizeof(T), evidence::type_name<T>(), judged);
  if (missing.empty() && evidence::mode() == evidence::Mode::judge && !judged.empty())
    std::memcpy(got.data(), judged.data(), judged.size());
  return missing;
}

// observe_in_place for an output whose length is part of the answer (compiled
// code, a list): a judge takes the graded program's length as well.
template <typename T>
std::string observe_vector(std::vector<T>& got) {
  static_assert(std::is_trivially_copyable_v<T>, "observe_vector() writes outputs as raw bytes");
  std::span<const std::byte> judged;
  std::string missing =
      evidence::observe_bytes(got.data(), got.size(), sizeof(T), evidence::type_name<T>(), judged, /*any_count=*/true);
  if (missing.empty() && evidence::mode() == evidence::Mode::judge) {
    got.resize(judged.size() / sizeof(T));
    if (!judged.empty()) std::memcpy(got.data(), judged.data(), judged.size());
  }
  return missing;
}

}  // namespace cudalabs

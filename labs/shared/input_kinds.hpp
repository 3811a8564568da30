#pragma once
// The course's --inputs flag of labs 12-17, 29, 31: which generator makes the inputs.
// The default inputs measure a kernel's speed and accuracy; the others expose
// the numerical shortcuts a softmax can take (docs/lab-anatomy.md, "Inputs").
// Each lab's meson.build runs them as edge tests, which the grader runs too, so
// a kernel with a shortcut fails in grading:
//   random  the lab's usual uniform inputs
//   large   magnitudes at which exp overflows (e^88.7 is the largest float) or
//           underflows unless the row max is subtracted first
//   masked  rows with -inf entries (masked positions), each row with at least
//           one finite entry
// Each lab says which kinds it accepts and exactly what it draws for them.
// Course code: main.cu includes it, never a kernel file.
//
// It lives in labs/shared/, the home of host code that several labs share: not
// inside one lab's folder (a lab includes another lab's header only for its
// kernels), and not in common/ (the library every lab links holds no one
// family's harness). labs/meson.build puts the folder on every main.cu's
// include path and on no kernel file's, so it is included by its plain name.
#include <cstdint>
#include <cstdio>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include <cudalabs/cli.hpp>
#include <cudalabs/error.hpp>

enum class InputKind { random, large, masked };

inline cudalabs::ExtraFlag inputs_flag(std::string help) {
  return {.name = "inputs",
          .help = std::move(help),
          .kind = cudalabs::ExtraFlag::Kind::text,
          .default_value = "random"};
}

// The --inputs value; UsageError naming the kinds this lab accepts otherwise
// (and `hint`, where the lab has another way to a kind it does not draw).
inline InputKind input_kind(const cudalabs::Options& o, const std::vector<std::string>& accepted,
                            const std::string& hint = "") {
  const std::string value = o.text("inputs");
  std::string names;
  for (const auto& a : accepted) {
    if (a == value) return a == "large" ? InputKind::large : a == "masked" ? InputKind::masked : InputKind::random;
    names += (names.empty() ? "" : ", ") + a;
  }
  throw cudalabs::UsageError("--inputs " + value + ": this lab draws " + names + " inputs. Example: --inputs " +
                             accepted.back() + "." + (hint.empty() ? "" : " " + hint));
}

// run_lab() reaches a lab's body only on a machine with a GPU. A flag value no
// kernel can take is bad usage on any machine, so main() checks it first with
// this: returns 2 (after the message) or 0 (go on; flags that do not parse are
// left to run_lab, which reports them).
inline int precheck_usage(const cudalabs::LabSpec& spec, int argc, char** argv,
                          const std::function<void(const cudalabs::Options&)>& check) {
  cudalabs::Parsed parsed;
  try {
    parsed = cudalabs::parse_args(spec, std::span<const char* const>(argv + 1, static_cast<std::size_t>(argc - 1)));
  } catch (const cudalabs::UsageError&) {
    return 0;  // run_lab reports it the usual way
  }
  if (parsed.action != cudalabs::Action::run) return 0;
  try {
    check(parsed.options);
  } catch (const cudalabs::UsageError& e) {
    std::fprintf(stderr, "%s: error: %s\n", spec.name.c_str(), e.what());
    return 2;
  }
  return 0;
}

// Attention labs (17, 31): batch·heads·seq·dim of one tensor at most 2^28
// elements (1 GiB in FP32), checked before any allocation. `tensors` says how
// many such tensors the lab holds, for the message.
inline void check_attention_elements(const cudalabs::Options& o, const std::string& tensors) {
  for (const auto& p : o.points) {
    const double elements = static_cast<double>(p.at("batch")) * p.at("heads") * p.at("seq") * p.at("dim");
    if (elements > static_cast<double>(std::int64_t{1} << 28))
      throw cudalabs::UsageError("batch·heads·seq·dim = " + std::to_string(static_cast<long long>(elements)) +
                                 " elements per tensor: at most 2^28 (1 GiB per FP32 tensor" + tensors +
                                 "). Use smaller --batch, --heads or --seq.");
  }
}

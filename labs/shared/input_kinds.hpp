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
//   positive_v  attention (labs 16, 17, 31): V of one sign, so that rounding
//           errors in the sums of P·V add up instead of cancelling
// Each lab says which kinds it accepts and exactly what it draws for them.
// Course code: main.cu includes it, never a kernel file.
//
// It lives in labs/shared/, the home of host code that several labs share: not
// inside one lab's folder (a lab includes another lab's header only for its
// kernels), and not in common/ (the library every lab links holds no one
// family's harness). labs/meson.build puts the folder on every main.cu's
// include path and on no kernel file's, so it is included by its plain name.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include <cudalabs/cli.hpp>
#include <cudalabs/error.hpp>
#include <cudalabs/random.hpp>

enum class InputKind { random, large, masked, positive_v };

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
    if (a == value) {
      if (a == "large") return InputKind::large;
      if (a == "masked") return InputKind::masked;
      if (a == "positive_v") return InputKind::positive_v;
      return InputKind::random;
    }
    names += (names.empty() ? "" : ", ") + a;
  }
  throw cudalabs::UsageError("--inputs " + value + ": this lab draws " + names + " inputs. Example: --inputs " +
                             accepted.back() + "." + (hint.empty() ? "" : " " + hint));
}

// A softmax's inputs (labs 12 and 20), rows × cols, drawn from `seed` (buffer 1: values, buffer 2: row offsets or mask), by --inputs:
//   random  U[-10, 10) as the original: exp spans e^-20..1 within a row, so a
//           missing max subtraction or a wrong max shows.
//   large   row r is o_r + U[-100, 100), |o_r| in [1e4, 2e4) with a random sign.
//           Without the max subtraction exp overflows (e^1e4 = inf, inf/inf =
//           NaN) or, in a negative row, underflows (0/0 = NaN); subtracting some
//           other element, the row's first say, leaves x - x0 up to 200 > 88.7
//           in most rows: inf again. Every x - max is exact (Sterbenz: one sign,
//           within a factor 2), so the random inputs' tolerance holds.
//   masked  U[-10, 10) with -inf entries (masked positions) in four row patterns,
//           r % 4: 0 each entry masked with probability 1/2; 1 a prefix of
//           1 + (7r mod cols) entries kept (a causal mask's rows); 2 only the
//           last entry kept (every thread but one sees only -inf: a running max
//           started at -inf meets exp(-inf - -inf) = NaN); 3 one entry kept at a
//           random column (whole 4096-float chunks of -inf in long rows). Masked
//           outputs must be 0 and every row still sums to 1. Each row keeps at
//           least one finite entry: with none, softmax is 0/0, and the reference
//           (like PyTorch) gives NaN, which the checker never passes.
inline std::vector<float> softmax_inputs(InputKind kind, std::int64_t rows, std::int64_t cols, std::uint64_t seed) {
  const auto n = static_cast<std::size_t>(rows * cols);
  std::vector<float> x = cudalabs::random_floats(n, cudalabs::mix_seed(seed, 1), -10.0f, 10.0f);
  if (kind == InputKind::random) return x;
  const std::size_t draws = kind == InputKind::large ? static_cast<std::size_t>(rows) : n;
  const auto u = cudalabs::random_floats(draws, cudalabs::mix_seed(seed, 2), 0.0f, 1.0f);
  for (std::int64_t r = 0; r < rows; ++r) {
    float* row = &x[static_cast<std::size_t>(r * cols)];
    if (kind == InputKind::large) {
      const float raw = u[static_cast<std::size_t>(r)];  // sign from the first half, magnitude from the whole
      const float offset = (raw < 0.5f ? -1.0f : 1.0f) * (1e4f + 2e4f * std::fabs(raw - 0.5f));
      for (std::int64_t c = 0; c < cols; ++c) row[c] = offset + 10.0f * row[c];
      continue;
    }
    const float* mask = &u[static_cast<std::size_t>(r * cols)];
    std::int64_t keep_only = -1;  // patterns 2 and 3: the one column kept
    if (r % 4 == 2) keep_only = cols - 1;
    if (r % 4 == 3)
      keep_only = std::min<std::int64_t>(cols - 1, static_cast<std::int64_t>(mask[0] * static_cast<float>(cols)));
    for (std::int64_t c = 0; c < cols; ++c) {
      bool masked = false;
      if (r % 4 == 0) masked = mask[c] < 0.5f && c != r % cols;
      if (r % 4 == 1) masked = c > (7 * r) % cols;
      if (keep_only >= 0) masked = c != keep_only;
      if (masked) row[c] = -INFINITY;
    }
  }
  return x;
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

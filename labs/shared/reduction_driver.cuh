#pragma once
// The host side of the reduction labs (04, 06, 07, 26), written once: the sizes,
// the input and its CPU reference at one size, the library baseline
// (cub::DeviceReduce::Sum), and the driver that finishes a block-level
// reduction on the GPU by launching it again over its own partial sums.
// The course's file, never a student's: each lab's main.cu includes it, and it
// reaches a student's kernels only through the lab's kernels.hpp (a pass
// function and its elements per block).
//
// It lives in labs/shared/, the home of host code that several labs share: not
// inside one lab's folder (a lab includes another lab's header only for its
// kernels), and not in common/ (the library every lab links holds no one
// family's harness). labs/meson.build puts the folder on every main.cu's
// include path and on no kernel file's, so it is included by its plain name.
//
// Every variant leaves the whole sum as one float in device memory, so its time
// compares with CUB's: nothing is finished on the host.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <cub/device/device_reduce.cuh>

#include <cudalabs/evidence.hpp>
#include <cudalabs/lab.hpp>
#include <cudalabs/math.hpp>
#include <cudalabs/random.hpp>
#include <cudalabs/reference.hpp>

#include "value_kinds.hpp"

// The size flag of every reduction lab. 2^20 floats (4 MB) fits in an H100's
// 50 MB L2 and takes a few microseconds: launch-bound. 2^28 floats (1 GiB) is
// 20x the L2: DRAM-bound. The quick sizes are edges: one element, one short of
// a block, one past it, an odd prime.
inline cudalabs::SizeParam reduction_size() {
  return {.name = "n",
          .help = "floats to sum",
          .full = {std::int64_t{1} << 20, std::int64_t{1} << 28},
          .quick = {1, 255, 257, 1000003},
          // CUB is given n as an int (its num_items before CCCL 2.3), and the
          // CPU reference needs the input on the host: 8 GiB at this limit.
          .max = std::numeric_limits<int>::max()};
}

inline cudalabs::VariantInfo cub_variant() {
  return {"cub", "cub::DeviceReduce::Sum, the library baseline (CUB ships with the CUDA Toolkit)", true};
}

// --inputs: which values are summed (SumProblem says why each).
enum class SumInputs { uniform, cancel, inf, nan, nonpositive, positive };

inline const std::vector<std::string>& sum_input_names() {
  static const std::vector<std::string> names = {"uniform", "cancel", "inf", "nan", "nonpositive", "positive"};
  return names;
}

inline cudalabs::ExtraFlag inputs_flag() {
  return {.name = "inputs",
          .help = "uniform: floats in [-1, 1); cancel: 3/4 of them +v/-v pairs, v in [512, 1024), that cancel exactly, "
                  "the rest in [0, 1); inf: uniform, the last one +Inf (the sum is +Inf); nan: uniform, one NaN "
                  "(the sum is NaN); nonpositive: multiples of 1/8 in [-1, 0], some of them -0.0 and +0.0; "
                  "positive: multiples of 1/4 in (0, 1] (lab 26's select_positive keeps every one)",
          .kind = cudalabs::ExtraFlag::Kind::text,
          .default_value = "uniform",
          .choices = sum_input_names()};
}

inline SumInputs sum_inputs(const cudalabs::Session& s) {
  const std::string kind = s.options().text("inputs");
  const auto& names = sum_input_names();
  const auto at = std::find(names.begin(), names.end(), kind);
  if (at == names.end())
    throw cudalabs::UsageError("--inputs " + kind + ": no such input kind. Use one of uniform, cancel, inf, nan, "
                               "nonpositive, positive.");
  return static_cast<SumInputs>(at - names.begin());
}

inline constexpr float cancel_pair_min = 512.0f, cancel_pair_max = 1024.0f;

// n floats whose sum cancels: floor(3n / 8) pairs +v, -v with v uniform in
// [512, 1024), the rest (about n / 4) uniform in [0, 1), shuffled. The pairs add
// to exactly 0, so the sum is that of the small values alone, about n / 8: never
// near 0, so a kernel that writes 0 or loses the small values fails too.
inline std::vector<float> cancelling_floats(std::int64_t n, std::uint64_t seed) {
  std::vector<float> x = cudalabs::random_floats(n, cudalabs::mix_seed(seed, 1), 0.0f, 1.0f);
  const std::int64_t pairs = 3 * n / 8;
  if (pairs > 0) {
    const auto v = cudalabs::random_floats(pairs, cudalabs::mix_seed(seed, 2), cancel_pair_min, cancel_pair_max);
    for (std::int64_t i = 0; i < pairs; ++i) {
      x[2 * i] = v[i];
      x[2 * i + 1] = -v[i];
    }
  }
  // Fisher-Yates with draws from the counter-based generator: the same order on
  // every machine, and the pairs land anywhere in the tree of any kernel.
  const auto draw = cudalabs::random_floats(n, cudalabs::mix_seed(seed, 3), 0.0f, 1.0f);
  for (std::int64_t i = n - 1; i > 0; --i) {
    const auto j = std::min(i, static_cast<std::int64_t>(static_cast<double>(draw[i]) * static_cast<double>(i + 1)));
    std::swap(x[i], x[j]);
  }
  return x;
}

// One size: the input on the device, the double-precision CPU sum, the output.
//
// --inputs uniform (the default): floats uniform in [-1, 1), never all ones, so a
// dropped or doubled element moves the sum by up to 1 while the allowed error at
// 2^28 is 0.06 (cudalabs::sum_tolerance).
//
// --inputs cancel: cancelling_floats, a sum with cancellation (the sum of |x| is
// ~4600x the sum). The tolerance is sum_tolerance(n, 1024), the uniform one's
// model scaled to these values: each float addition rounds by at most 2^-24 of
// the partial sum it makes, and partial sums of values at random signs and places
// grow like a random walk, so a tree (or atomic, or grid-stride) float sum errs by
// ~2^-24 * rms * sqrt(n * depth). The rms here is 0.66 * 1024 (uniform: 0.58 * 1),
// so 64 * 2^-24 * sqrt(n) * 1024 keeps the uniform margin: 4.0 at n = 10^6 (plus
// 1e-6 of the ~125000 sum). A CPU replay of the tree, two_loads, warp_shuffle and
// float4 orders in float on these inputs (5 seeds) erred by at most 0.18 at 10^6
// and 1.1 at 2^26 (tolerance 40): 22x under it or better. The double reference
// errs by ~1e-10. What fails that the uniform input may let through: a dropped,
// doubled or sign-flipped pair value moves the sum by >= 512, over 100x the
// tolerance, and 3/4 of the elements are pair values (a dropped small value is
// the uniform run's to catch); a half or bf16 accumulator overflows or errs by
// far more than 4.
//
// --inputs inf: uniform, and x[n - 1] = +Inf: the sum is +Inf. The last element
// is every kernel's tail (a partial block, lab 07's scalar remainder after its
// float4s): a kernel that drops it gives a finite sum, and one that masks the
// elements past the end by multiplying (x[min(i, n - 1)] * (i < n)) makes
// Inf * 0 = NaN. --inputs nan: uniform and one NaN at an index drawn from the
// seed: the sum is NaN (any NaN but the poison's bits, check_close_ieee), so a
// kernel that loses or skips that element, or starts a block from its second
// element, fails. --inputs nonpositive (value_kinds::nonpositive_floats):
// multiples of 1/8 in [-1, 0], some ±0: exact in any order while the sum stays
// below 2^21, about n = 2^22 (the uniform tolerance holds beyond), and nothing for lab 26's select_positive to
// keep, where a test of x >= 0 or of the sign bit keeps the zeros. --inputs positive
// (value_kinds::positive_floats): multiples of 1/4 in (0, 1], exact in any order up to
// n = 2^22, and everything for select_positive to keep: every coalesced group a whole
// warp, the count n, where random inputs select about half of each warp.
//
// The input starts `offset` floats into its buffer (lab 07's --offset, to test
// loads that are not 16-byte aligned); the floats before it and the 4 after it
// are NaN: a kernel that reads an element too many, inside the allocation where
// compute-sanitizer cannot see it, gets NaN and fails.
class SumProblem {
 public:
  static constexpr std::int64_t guard = 4;  // one float4's worth of NaN past the end

  SumProblem(const cudalabs::Session& s, std::int64_t n, std::int64_t offset = 0)
      : n_(n), offset_(offset), inputs_(sum_inputs(s)), storage_(offset + n + guard, "input"), output_(1, "sum") {
    const bool pairs = inputs_ == SumInputs::cancel && 3 * n / 8 > 0;
    tolerance_ = cudalabs::sum_tolerance(n, pairs ? cancel_pair_max : 1.0);
    storage_.poison();
    new_inputs(s.seed());
  }

  // The input values drawn from `seed` (buffer 1: mix_seed(seed, 1)), uploaded
  // between the NaN guards, and their sum: NaN in a graded program, which keeps
  // no reference for a launcher to find (evidence::keeps_references). The
  // harness calls it with a fresh seed before its last check.
  void new_inputs(std::uint64_t seed) {
    const std::vector<float> host = values(seed);
    expected_ = cudalabs::evidence::keeps_references() ? cudalabs::ref::sum(host)
                                                       : std::numeric_limits<double>::quiet_NaN();
    CUDALABS_CHECK(cudaMemcpy(storage_.data() + offset_, host.data(), n_ * sizeof(float), cudaMemcpyHostToDevice));
    // A copy from pageable memory may return before its DMA lands, and the lab
    // runs on a stream that does not wait for the legacy stream: wait here.
    CUDALABS_CHECK(cudaDeviceSynchronize());
  }

  std::int64_t n() const { return n_; }
  const float* input() const { return storage_.data() + offset_; }
  float* output() { return output_.data(); }
  // The fewest bytes a sum must move: every input float read once.
  cudalabs::Work work() const { return {.bytes = 4.0 * n_, .flops = 1.0 * n_}; }
  void poison_output(cudaStream_t stream) { output_.poison(stream); }
  cudalabs::CheckResult check() const {
    return cudalabs::check_close_ieee(output_.download(), std::span<const double>(&expected_, 1), tolerance_);
  }

 private:
  std::vector<float> values(std::uint64_t seed) const {
    const std::uint64_t buffer = cudalabs::mix_seed(seed, 1);
    const auto size = static_cast<std::size_t>(n_);
    switch (inputs_) {
      case SumInputs::cancel: return cancelling_floats(n_, buffer);
      case SumInputs::inf:
        return value_kinds::uniform_with(size, buffer, -1.0f, 1.0f, size - 1, std::numeric_limits<float>::infinity());
      case SumInputs::nan:
        return value_kinds::uniform_with(size, buffer, -1.0f, 1.0f, value_kinds::drawn_index(size, buffer),
                                         std::numeric_limits<float>::quiet_NaN());
      case SumInputs::nonpositive: return value_kinds::nonpositive_floats(size, buffer);
      case SumInputs::positive: return value_kinds::positive_floats(size, buffer);
      case SumInputs::uniform: break;
    }
    return cudalabs::random_floats(n_, buffer, -1.0f, 1.0f);
  }

  std::int64_t n_, offset_;
  SumInputs inputs_;
  double expected_ = 0;
  cudalabs::Tolerance tolerance_;
  cudalabs::DeviceBuffer<float> storage_, output_;
};

// Measures one variant whose run(stream) leaves the whole sum in p.output().
// poison_scratch fills the variant's partial sums with NaN before its first run,
// so a pass that reads a partial no block wrote fails the check.
inline const cudalabs::Record& measure_sum(cudalabs::Session& s, const cudalabs::Point& point, SumProblem& p,
                                           const std::string& variant, std::function<void(cudaStream_t)> run,
                                           std::function<void(cudaStream_t)> poison_scratch,
                                           std::optional<cudalabs::KernelResources> resources,
                                           std::map<std::string, double> extra = {},
                                           cudalabs::Measurement::Launches launches = {}) {
  return s.measure({.variant = variant,
                    .size = point,
                    .work = p.work(),
                    .run = std::move(run),
                    .check = [&p] { return p.check(); },
                    .poison =
                        [&p, poison_scratch](cudaStream_t st) {
                          p.poison_output(st);
                          if (poison_scratch) poison_scratch(st);
                        },
                    .new_inputs = [&p](std::uint64_t seed) { p.new_inputs(seed); },
                    .launches = launches,
                    .resources = resources,
                    .extra = std::move(extra)});
}

// The library baseline. Its temporary storage is sized (a call with null
// pointers) and allocated once here, outside the timed runs. The input and
// output pointers are the caller's at each run, never kept: the harness's last
// check moves every buffer.
class CubSum {
 public:
  explicit CubSum(std::int64_t n) : n_(static_cast<int>(n)) {
    CUDALABS_CHECK(cub::DeviceReduce::Sum(nullptr, temp_bytes_, static_cast<const float*>(nullptr),
                                          static_cast<float*>(nullptr), n_));
    temp_ = cudalabs::DeviceBuffer<std::byte>(std::max<std::size_t>(temp_bytes_, 1), "CUB temporary storage");
  }
  void run(const float* in, float* out, cudaStream_t stream) {
    CUDALABS_CHECK(cub::DeviceReduce::Sum(temp_.data(), temp_bytes_, in, out, n_, stream));
  }
  std::size_t temp_bytes() const { return temp_bytes_; }

 private:
  int n_;
  std::size_t temp_bytes_ = 0;
  cudalabs::DeviceBuffer<std::byte> temp_;
};

inline void measure_cub(cudalabs::Session& s, const cudalabs::Point& point, SumProblem& p) {
  CubSum cub_sum(p.n());
  measure_sum(s, point, p, "cub", [&](cudaStream_t st) { cub_sum.run(p.input(), p.output(), st); }, {}, std::nullopt,
              {{"temp_bytes", static_cast<double>(cub_sum.temp_bytes())}});
}

// One launch of a block-level reduction: n values in, one partial sum per
// block out (ceil(n / per_block) of them).
using ReducePass = void (*)(const float* in, float* partials, std::int64_t n, cudaStream_t stream);

// Launches `pass` over its own partial sums until one value is left, in `out`.
// With 256 elements per block, 2^28 floats take four launches:
// 2^28 -> 2^20 -> 4096 -> 16 -> 1. Only the first reads DRAM; the others read at
// most 4 MB that the launch before them has just written (it sits in L2).
class MultiPassSum {
 public:
  MultiPassSum(ReducePass pass, std::int64_t per_block, std::int64_t n) : pass_(pass), per_block_(per_block), n_(n) {
    // Pass k writes to scratch[(k - 1) % 2]; every pass after the second writes
    // fewer partials than the first, so two buffers are enough.
    const std::int64_t first = cudalabs::ceil_div(n, per_block);
    const std::int64_t second = cudalabs::ceil_div(first, per_block);
    if (first > 1) scratch_[0] = cudalabs::DeviceBuffer<float>(first, "first-pass partial sums");
    if (second > 1) scratch_[1] = cudalabs::DeviceBuffer<float>(second, "second-pass partial sums");
  }

  void run(const float* in, float* out, cudaStream_t stream) {
    const float* src = in;
    std::int64_t count = n_;
    for (int k = 0;; ++k) {
      const std::int64_t blocks = cudalabs::ceil_div(count, per_block_);
      float* dst = blocks == 1 ? out : scratch_[k % 2].data();
      pass_(src, dst, count, stream);
      if (blocks == 1) return;
      src = dst;
      count = blocks;
    }
  }

  void poison(cudaStream_t stream) {
    for (auto& b : scratch_)
      if (b.size() > 0) b.poison(stream);
  }

  int passes() const {
    int k = 1;
    for (std::int64_t count = n_; count > per_block_; count = cudalabs::ceil_div(count, per_block_)) ++k;
    return k;
  }

 private:
  ReducePass pass_;
  std::int64_t per_block_, n_;
  cudalabs::DeviceBuffer<float> scratch_[2];
};

inline void measure_multi_pass(cudalabs::Session& s, const cudalabs::Point& point, SumProblem& p,
                               const std::string& variant, ReducePass pass, std::int64_t per_block,
                               const cudalabs::KernelResources& resources) {
  MultiPassSum sum(pass, per_block, p.n());
  measure_sum(
      s, point, p, variant, [&](cudaStream_t st) { sum.run(p.input(), p.output(), st); },
      [&](cudaStream_t st) { sum.poison(st); }, resources, {{"launches", static_cast<double>(sum.passes())}});
}

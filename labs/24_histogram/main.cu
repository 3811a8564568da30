// Lab 24 — histogram: privatise, then aggregate, against cub::DeviceHistogram.
//
// A histogram is a scatter of +1s: every sample adds one to a counter that the
// data picks, so threads collide on counters, and how badly depends on the data.
// The lab counts two problems (8-bit data into 256 bins; floats into 1024 equal
// bins of [-4, 4)) on two inputs each: uniform, where collisions are rare, and
// one bin, where every sample lands on the same counter and every atomic of a
// naive kernel waits for the one before it. Each step moves the collisions
// closer to the thread, where they are cheaper, then removes most of them:
//
// Variants:
//   cub               cub::DeviceHistogram::HistogramEven (the library baseline, measured first)
//   global_atomics    one thread per sample, one atomicAdd on the histogram in global memory
//   block_privatized  a histogram per block in shared memory, 16-byte loads in a grid-stride loop, one merge per block
//   warp_privatized   a histogram per warp in shared memory: one warp writes each counter
//   warp_aggregated   per-warp histograms; lanes holding the same bin (__match_any_sync) add once, together
//
// --inputs out_of_range (floats only: every byte is a bin) puts a quarter of the
// samples on the range's edges and outside it: 4.0 itself (the range is
// [-4, 4)), just past either end, ±Inf, NaN, ±1e30 (value_kinds::out_of_range_floats).
// The contract counts only samples inside the range; a kernel that clamps them
// into the end bins, wraps them, or writes past the histogram fails there.
//
// Every launcher zeroes the histogram itself (cudaMemsetAsync, in the timed run),
// as CUB does with its own init kernel; counts are checked exactly.
//
// Run: make run LAB=24   (n = 2^20, 2^28; --problem bytes|floats|both, --inputs uniform|one_bin|both)
#include <cub/device/device_histogram.cuh>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include <cudalabs/evidence.hpp>
#include <cudalabs/lab.hpp>
#include <cudalabs/random.hpp>
#include <cudalabs/reference.hpp>

#include "cub_call.hpp"
#include "kernels.hpp"
#include "value_kinds.hpp"

namespace {

// Both inputs are on a grid where the bin of every sample is exact by any
// formula: the uniform floats are lo + 8k/2^24, multiples of 2^-21 (x - lo
// exact, times 128 exact), and the one-bin floats are too (see float_samples).
static_assert(lab24::float_scale == 128.0f && lab24::float_hi - lab24::float_lo == 8.0f,
              "float_samples' exactness argument assumes 1024 bins over a range of 8");

enum class Spread { uniform, one_bin, out_of_range };

// ---- CPU reference -------------------------------------------------------------

int sample_bin(std::uint8_t v) { return v; }
// kernels.hpp's rule, in float arithmetic as on the GPU.
int sample_bin(float x) {
  if (!(x >= lab24::float_lo && x < lab24::float_hi)) return -1;
  return std::min(static_cast<int>((x - lab24::float_lo) * lab24::float_scale), lab24::float_bins - 1);
}

template <typename Sample>
std::vector<std::uint64_t> histogram_cpu(std::span<const Sample> in, int bins) {
  std::vector<std::uint64_t> counts(bins, 0);
  std::mutex merge;
  cudalabs::ref::parallel_for(in.size(), [&](std::size_t begin, std::size_t end) {
    std::vector<std::uint64_t> local(bins, 0);
    for (std::size_t i = begin; i < end; ++i)
      if (const int b = sample_bin(in[i]); b >= 0) ++local[b];
    const std::lock_guard lock(merge);
    for (int b = 0; b < bins; ++b) counts[b] += local[b];
  });
  return counts;
}

// ---- inputs --------------------------------------------------------------------

// The hot bin of the one-bin input, drawn from the seed like the data.
int hot_bin(std::uint64_t seed, int bins) { return static_cast<int>(cudalabs::mix_seed(seed, 0) % bins); }

// Uniform: each byte uniform in 0..255. One bin: every byte the same (the only
// way 8-bit data can all fall in one of 256 bins).
std::vector<std::uint8_t> byte_samples(std::int64_t n, std::uint64_t seed, Spread spread) {
  std::vector<std::uint8_t> out(n, static_cast<std::uint8_t>(hot_bin(seed, lab24::byte_bins)));
  if (spread == Spread::one_bin) return out;
  const std::vector<float> draws = cudalabs::random_small_ints(n, seed, 0, lab24::byte_bins - 1);
  cudalabs::ref::parallel_for(out.size(), [&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) out[i] = static_cast<std::uint8_t>(draws[i]);
  });
  return out;
}

// Uniform: random_floats over [lo, hi), lo + 8u with u = k/2^24, so multiples of
// 2^-21. One bin: hot + f with f the fraction of u * 1024 (14 bits), scaled by
// 1/128 and shifted by lo: every step exact (at most 24 significant bits, scale a
// power of two): 2^14 different values, all inside the hot bin.
// Out of range: value_kinds::out_of_range_floats, whose inside values are on the
// same grid as the uniform ones and whose edges and outside values are inside or
// outside [lo, hi) by any formula.
std::vector<float> float_samples(std::int64_t n, std::uint64_t seed, Spread spread) {
  if (spread == Spread::uniform) return cudalabs::random_floats(n, seed, lab24::float_lo, lab24::float_hi);
  if (spread == Spread::out_of_range)
    return value_kinds::out_of_range_floats(static_cast<std::size_t>(n), seed, lab24::float_lo, lab24::float_hi);
  std::vector<float> out = cudalabs::random_floats(n, seed, 0.0f, 1.0f);
  const auto hot = static_cast<float>(hot_bin(seed, lab24::float_bins));
  cudalabs::ref::parallel_for(out.size(), [&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) {
      const float t = out[i] * lab24::float_bins;
      out[i] = lab24::float_lo + (hot + (t - std::floor(t))) / lab24::float_scale;
    }
  });
  return out;
}

// ---- main ----------------------------------------------------------------------

template <typename Sample>
struct Variant {
  const char* name;
  void (*run)(const Sample*, std::int64_t, unsigned*, cudaStream_t);
  cudalabs::KernelResources (*resources)(lab24::Problem);
};

template <typename Sample>
const Variant<Sample> variants[] = {
    {"global_atomics", lab24::global_atomics, lab24::global_atomics_resources},
    {"block_privatized", lab24::block_privatized, lab24::block_privatized_resources},
    {"warp_privatized", lab24::warp_privatized, lab24::warp_privatized_resources},
    {"warp_aggregated", lab24::warp_aggregated, lab24::warp_aggregated_resources},
};

// One problem and one input at one n: CUB first, then every selected variant.
// The record's size names all three, so each has its own CUB baseline:
// bins = 256 (bytes) or 1024 (floats), spread = how many bins the input fills
// (all of them, or 1; bins + 1: all of them and outside the range).
template <typename Sample>
void measure_histograms(cudalabs::Session& s, std::int64_t n, Spread spread) {
  constexpr bool bytes = std::is_same_v<Sample, std::uint8_t>;
  constexpr int bins = bytes ? lab24::byte_bins : lab24::float_bins;
  constexpr lab24::Problem problem = bytes ? lab24::Problem::bytes : lab24::Problem::floats;
  const int filled = spread == Spread::uniform ? bins : spread == Spread::one_bin ? 1 : bins + 1;
  const cudalabs::Point point{{"n", n}, {"bins", bins}, {"spread", filled}};

  cudalabs::DeviceBuffer<Sample> d_in(n, "samples");
  cudalabs::DeviceBuffer<unsigned> d_hist(bins, "histogram");
  std::vector<std::uint64_t> expected;
  auto make_inputs = [&](std::uint64_t seed) {
    std::vector<Sample> host;
    if constexpr (bytes)
      host = byte_samples(n, cudalabs::mix_seed(seed, 1), spread);  // never out_of_range (main)
    else
      host = float_samples(n, cudalabs::mix_seed(seed, 1), spread);
    // None in a graded program: its launcher could read it (evidence::keeps_references).
    if (cudalabs::evidence::keeps_references()) expected = histogram_cpu<Sample>(host, bins);
    d_in.upload(host);
  };
  make_inputs(s.seed());

  auto measure = [&](const std::string& variant, std::function<void(cudaStream_t)> run,
                     std::optional<cudalabs::KernelResources> resources, std::map<std::string, double> extra) {
    s.measure({
        .variant = variant,
        .size = point,
        // The fewest bytes: every sample read once, the histogram written once.
        .work = {.bytes = static_cast<double>(sizeof(Sample)) * n + sizeof(unsigned) * bins},
        .run = std::move(run),
        .check = [&] { return cudalabs::check_exact<unsigned, std::uint64_t>(d_hist.download(), expected); },
        // 0xFFFFFFFF: a count no input of n < 2^32 samples can give.
        .poison = [&](cudaStream_t st) { d_hist.poison(st); },
        .new_inputs = make_inputs,
        .resources = resources,
        .extra = std::move(extra),
    });
  };

  // The library baseline: 257 levels 0..256 for bytes (bin = value), 1025 levels
  // over [lo, hi) for floats (its float rule is kernels.hpp's).
  CubCall library([&](void* temp, std::size_t& temp_bytes, cudaStream_t stream) {
    if constexpr (bytes)
      return cub::DeviceHistogram::HistogramEven(temp, temp_bytes, d_in.data(), d_hist.data(), bins + 1, 0, bins, n,
                                                 stream);
    else
      return cub::DeviceHistogram::HistogramEven(temp, temp_bytes, d_in.data(), d_hist.data(), bins + 1,
                                                 lab24::float_lo, lab24::float_hi, n, stream);
  });
  measure("cub", [&](cudaStream_t st) { library.run(st); }, std::nullopt,
          {{"temp_bytes", static_cast<double>(library.temp_bytes())}});
  for (const auto& v : variants<Sample>)
    if (s.selected(v.name))
      measure(v.name, [&](cudaStream_t st) { v.run(d_in.data(), n, d_hist.data(), st); }, v.resources(problem), {});
}

// Reads a choice flag: one of `names`, or "both".
std::vector<std::string> choice(const cudalabs::Session& s, const std::string& flag,
                                const std::vector<std::string>& names) {
  const std::string value = s.options().text(flag);
  if (value == "both") return names;
  if (std::find(names.begin(), names.end(), value) != names.end()) return {value};
  throw cudalabs::UsageError("--" + flag + " " + value + ": expected " + names[0] + ", " + names[1] +
                             " or both. Example: --" + flag + " " + names[0]);
}

}  // namespace

int main(int argc, char** argv) {
  const cudalabs::LabSpec spec{
      .name = "24_histogram",
      .title = "histogram: global atomics, privatised, warp-aggregated vs cub::DeviceHistogram::HistogramEven",
      .about = "Counts n samples into bins on the GPU: 8-bit data into 256 bins, and floats into 1024 equal bins\n"
               "of [-4, 4). Each on a uniform input and on an adversarial one where every sample falls in one\n"
               "bin (maximal contention). Global atomics, then a histogram per block in shared memory, per warp,\n"
               "then per warp with __match_any_sync aggregation, against cub::DeviceHistogram::HistogramEven in\n"
               "the same run. Counts are checked exactly against a CPU histogram. A record's size is\n"
               "n, bins (256 or 1024) and spread (bins the input fills: all, or 1).",
      .sizes = {{.name = "n",
                 .help = "samples",
                 .full = {std::int64_t{1} << 20, std::int64_t{1} << 28},
                 .quick = {1, 4099, 100003},
                 // 32-bit counts; the float input and its host copy take 16 GiB here.
                 .max = std::int64_t{1} << 31}},
      .variants = {{"cub", "cub::DeviceHistogram::HistogramEven (the library baseline, measured first)", true},
                   {"global_atomics", "one thread per sample, one atomicAdd on the histogram in global memory"},
                   {"block_privatized", "a histogram per block in shared memory, 16-byte loads, one merge per block"},
                   {"warp_privatized", "a histogram per warp in shared memory: one warp writes each counter"},
                   {"warp_aggregated", "per-warp histograms; lanes holding the same bin add once (__match_any_sync)"}},
      .flags = {{.name = "problem",
                 .help = "bytes (8-bit data, 256 bins), floats (1024 bins of [-4, 4)) or both",
                 .kind = cudalabs::ExtraFlag::Kind::text,
                 .default_value = "both",
                 .choices = {"bytes", "floats", "both"}},
                {.name = "inputs",
                 .help = "uniform, one_bin (every sample in one bin: maximal contention), both, or out_of_range "
                         "(floats only: a quarter of the samples on the edges of [-4, 4) and outside it, "
                         "±Inf and NaN among them, which no bin counts)",
                 .kind = cudalabs::ExtraFlag::Kind::text,
                 .default_value = "both",
                 .choices = {"uniform", "one_bin", "both", "out_of_range"}}},
  };
  return cudalabs::run_lab(argc, argv, spec, [](cudalabs::Session& s) {
    auto problems = choice(s, "problem", {"bytes", "floats"});
    const bool out_of_range = s.options().text("inputs") == "out_of_range";
    const auto inputs = out_of_range ? std::vector<std::string>{"out_of_range"}
                                     : choice(s, "inputs", {"uniform", "one_bin"});
    if (out_of_range) {
      if (problems == std::vector<std::string>{"bytes"})
        throw cudalabs::UsageError("--inputs out_of_range with --problem bytes: every byte value is a bin, so 8-bit "
                                   "data has no out-of-range samples. Use --problem floats (or both).");
      if (problems.size() > 1) s.note("--inputs out_of_range: the floats problem only (every byte value is a bin)");
      problems = {"floats"};
    }
    for (const auto& point : s.points())
      for (const auto& problem : problems)
        for (const auto& input : inputs) {
          const Spread spread = input == "uniform" ? Spread::uniform
                                : input == "one_bin" ? Spread::one_bin
                                                     : Spread::out_of_range;
          if (problem == "bytes")
            measure_histograms<std::uint8_t>(s, point.at("n"), spread);
          else
            measure_histograms<float>(s, point.at("n"), spread);
        }
  });
}

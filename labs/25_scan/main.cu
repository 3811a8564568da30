// Lab 25 — scan: from Hillis-Steele to a single pass with decoupled look-back.
//
// A prefix sum (scan) makes out[i] depend on every in[j], j <= i, yet a GPU
// scan runs at the speed of a copy. The lab climbs there: two classic block
// scans (each only a tile; scan-then-propagate's three kernels make any n out of
// them), a register-and-shuffle tile scan in the same three kernels, which then
// move every item through DRAM twice, and a single pass in which each tile gets
// the sum of the tiles before it from their published partial sums. Then a
// stream compaction built on that pass. All against cub::DeviceScan in the same
// run, for int or float (--type), inclusive or exclusive (--exclusive).
//
// Variants (what each runs end to end):
//   cub                  cub::DeviceScan::InclusiveSum / ExclusiveSum (the library baseline, measured first)
//   hillis_steele        3 kernels: scan tiles, scan tile sums, add; Hillis-Steele tiles of 512, 9 steps
//   blelloch             3 kernels, as above; Blelloch up-/down-sweep tiles of 1024, 2 items per thread
//   scan_then_propagate  3 kernels, as above; tiles of 4096 scanned in registers with warp shuffles
//   decoupled_lookback   1 kernel: register tiles, prefix from a look-back over predecessors' sums
//   wide_lookback        the same, the look-back reading 128 predecessors per round trip, not 32
//   compact              keep x > 0 in order: decoupled_lookback's pass over flags, then a scatter; 1 kernel
//
// Inputs (--inputs): random (the signs mixed, as below), positive (whole
// numbers 1..3: every prefix grows, the compaction keeps everything) or
// nonpositive (whole numbers -3..0, the float zeros half of them -0.0: the
// compaction keeps nothing, and a kernel that keeps x >= 0 or tests the sign
// bit keeps something). Their prefixes are below 3n: exact in int32 and, up to
// n = 2^24 / 3, in float, in any order of addition. And constant (every element
// +1, or every one -1, the sign drawn: prefixes ±(i + 1), exact in float up to
// n = 2^24): every full tile has the same sum, so a look-back that tells a
// predecessor's new status word from an old one by its value, not by its
// status, cannot tell them apart.
//
// Run: make run LAB=25   (n = 2^20, 2^28; --type int|float, --exclusive, --inputs)
#include <cub/device/device_scan.cuh>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <iterator>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include <cudalabs/lab.hpp>
#include <cudalabs/random.hpp>
#include <cudalabs/reference.hpp>

#include "cub_call.hpp"
#include "kernels.hpp"
#include "value_kinds.hpp"

namespace {

// Int results are checked exactly against int64 sums, float results against double sums.
template <typename T>
using ExactSum = std::conditional_t<std::is_floating_point_v<T>, double, std::int64_t>;

// ---- inputs --------------------------------------------------------------------

// Ints in [-3, 3]: every prefix of n <= 2^29 of them is within 3 * 2^29 < 2^31, so
// no int32 sum overflows, whatever order a scan adds in.
inline constexpr int int_magnitude = 3;
inline constexpr std::int64_t max_n = std::int64_t{1} << 29;

// Floats: multiples of 2^-7 in (-1, 1) (k/128, k in -127..127). See float_tolerance.
// Symmetric on purpose: with k in -128..127 the mean is -2^-8, and 2^28 prefixes
// drift to -2^20, past 2^17 where multiples of 2^-7 stop being exact in float
// (the first H100 run showed exactly that: every scan, CUB's too, off by 2^-7).
inline constexpr float float_grid = 1.0f / 128;

enum class ScanInputs { random, positive, nonpositive, constant };

// Whole numbers 1..3 or -3..0 (positive, nonpositive): prefixes up to 3n, exact
// in float while 3n < 2^24. All +1 or all -1 (constant): prefixes up to n in
// magnitude, exact while n <= 2^24 (every whole number up to 2^24 is a float;
// 2^24 + 1 is not).
inline constexpr std::int64_t max_signed_float_n = (std::int64_t{1} << 24) / 3;
inline constexpr std::int64_t max_constant_float_n = std::int64_t{1} << 24;

// The largest float n at which every prefix of `kind` is exact (random: max_n,
// multiples of 2^-7 whose prefixes stay far below 2^17, float_tolerance says why).
inline std::int64_t max_float_n(ScanInputs kind) {
  switch (kind) {
    case ScanInputs::positive:
    case ScanInputs::nonpositive: return max_signed_float_n;
    case ScanInputs::constant: return max_constant_float_n;
    case ScanInputs::random: break;
  }
  return max_n;
}

template <typename T>
std::vector<T> scan_input(std::int64_t n, std::uint64_t seed, ScanInputs kind) {
  if (kind == ScanInputs::constant)  // the sign from the seed: fresh inputs change every prefix
    return std::vector<T>(static_cast<std::size_t>(n), cudalabs::mix_seed(seed, 2) % 2 ? T(-1) : T(1));
  if (kind == ScanInputs::positive) {
    const std::vector<float> draws = cudalabs::random_small_ints(n, seed, 1, 3);
    return std::vector<T>(draws.begin(), draws.end());
  }
  if (kind == ScanInputs::nonpositive) {
    const std::vector<float> draws = value_kinds::nonpositive_floats(static_cast<std::size_t>(n), seed, 3, 1.0f);
    return std::vector<T>(draws.begin(), draws.end());  // -0.0 stays -0.0 in float, becomes 0 in int
  }
  if constexpr (std::is_same_v<T, int>) {
    const std::vector<float> draws = cudalabs::random_small_ints(n, seed, -int_magnitude, int_magnitude);
    return std::vector<int>(draws.begin(), draws.end());
  } else {
    std::vector<float> x = cudalabs::random_small_ints(n, seed, -127, 127);
    for (float& v : x) v *= float_grid;  // a power of two: exact
    return x;
  }
}

// ---- CPU reference -------------------------------------------------------------

// Sequential, in int64 or double: exact for these inputs (|prefix| < 2^31, and
// double holds every multiple of 2^-7 below 2^45).
template <typename T>
std::vector<ExactSum<T>> prefix_sums(std::span<const T> x, bool exclusive) {
  std::vector<ExactSum<T>> out(x.size());
  ExactSum<T> sum = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (exclusive) out[i] = sum;
    sum += x[i];
    if (!exclusive) out[i] = sum;
  }
  return out;
}

template <typename T>
std::vector<T> positives(std::span<const T> x) {
  std::vector<T> kept;
  std::copy_if(x.begin(), x.end(), std::back_inserter(kept), [](T v) { return v > T(0); });
  return kept;
}

// The float tolerance, derived.
//
// Prefix i is a sum of i + 1 inputs. The reduction labs allow a sum of n terms
// of magnitude <= 1 cudalabs::sum_tolerance(n) = 64 eps sqrt(n): rounding errors
// that add like a random walk over a tree of partial sums. Prefix i has at most
// n terms, so the bound for n would hold for every element.
//
// But a single-pass scan does not add in a tree: its tile prefixes form a chain,
// n/4096 additions one after another, each rounding by up to half an ulp of a
// running sum of ~0.58 sqrt(n). Simulated on the CPU with 24-bit random floats
// at n = 2^28, that chain alone ended 0.02 to 0.11 from the exact prefix (seeds
// 1-9, 2048- and 4096-item tiles), where sum_tolerance gives 0.0625: CUB's own
// scan would fail it on some seeds.
//
// So the inputs sit on a grid instead: multiples of 2^-7. Any sum of them is a
// multiple of 2^-7, exact in float while below 2^17 in magnitude (24 significant
// bits). The partial sums a scan forms (CUB's too) are sums of contiguous runs
// (a thread's items, a warp's, a tile's, the tiles before it), below
// 2 max|prefix|, or, in a look-back, sums of up to 32 tile sums (~0.58 sqrt(32 x
// 4096) = 210 typical). A random walk of 2^29 steps reaches 2^16 (4.9 standard
// deviations) with probability ~2e-6. So every scan, in every order, gives the
// exact prefix, and the tolerance can be strict: sum_tolerance(n), but never more
// than half the grid, so a lost, doubled or misplaced nonzero input (which moves
// a prefix by at least 2^-7) fails at every n.
cudalabs::Tolerance float_tolerance(std::int64_t n) {
  const cudalabs::Tolerance random_walk = cudalabs::sum_tolerance(n);
  return {.abs = std::min(random_walk.abs, 0.5 * float_grid), .rel = 0};
}

// ---- main ----------------------------------------------------------------------

template <typename T>
struct ScanVariant {
  const char* name;
  void (*run)(const T*, T*, std::int64_t, bool, void*, cudaStream_t);
  std::size_t (*scratch_bytes)(std::int64_t);
  cudalabs::KernelResources (*resources)(lab25::Element);
  int max_kernels = -1;  // the lesson's launches at most, held by the trace; -1: any
};

template <typename T>
const ScanVariant<T> scan_variants[] = {
    {"hillis_steele", lab25::hillis_steele, lab25::hillis_steele_scratch_bytes, lab25::hillis_steele_resources},
    {"blelloch", lab25::blelloch, lab25::blelloch_scratch_bytes, lab25::blelloch_resources},
    {"scan_then_propagate", lab25::scan_then_propagate, lab25::scan_then_propagate_scratch_bytes,
     lab25::scan_then_propagate_resources},
    // The single pass: one kernel over the data, whatever n, and perhaps one that
    // resets the tile states (the course's uses a memset).
    {"decoupled_lookback", lab25::decoupled_lookback, lab25::decoupled_lookback_scratch_bytes,
     lab25::decoupled_lookback_resources, 2},
    {"wide_lookback", lab25::wide_lookback, lab25::wide_lookback_scratch_bytes, lab25::wide_lookback_resources, 2},
};

// Poison for outputs: NaN for floats; for ints 0x7F7F7F7F = 2139062143, which no
// prefix of these inputs reaches (|prefix| <= 3 * 2^29), so an unwritten element
// always fails.
template <typename T>
void poison(cudalabs::DeviceBuffer<T>& buffer, cudaStream_t stream) {
  const int byte = std::is_same_v<T, float> ? 0xFF : 0x7F;
  CUDALABS_CHECK(cudaMemsetAsync(buffer.data(), byte, buffer.bytes(), stream));
}

template <typename T>
cudalabs::CheckResult check_equal(std::span<const T> got, std::span<const ExactSum<T>> expected, std::int64_t n) {
  if constexpr (std::is_same_v<T, int>)
    return cudalabs::check_exact<int, std::int64_t>(got, expected);
  else
    return cudalabs::check_close(got, expected, float_tolerance(n));
}

template <typename T>
void measure_scans(cudalabs::Session& s, const cudalabs::Point& point, bool exclusive, ScanInputs kind) {
  constexpr bool ints = std::is_same_v<T, int>;
  const std::int64_t n = point.at("n");
  if (!ints && n > max_float_n(kind))
    throw cudalabs::UsageError("--inputs " + s.options().text("inputs") + " --type float at n = " + std::to_string(n) +
                               ": prefixes of elements of magnitude up to " +
                               (kind == ScanInputs::constant ? "1" : "3") + " are exact in float only up to n = " +
                               std::to_string(max_float_n(kind)) + ". Use a smaller --size or --type int.");
  const lab25::Element element = ints ? lab25::Element::int32 : lab25::Element::float32;
  // The record's size is n; the type and the kind of scan go with it here.
  const std::map<std::string, double> extra = {{"int", ints ? 1 : 0}, {"exclusive", exclusive ? 1 : 0}};

  cudalabs::DeviceBuffer<T> d_in(n, "input"), d_out(n, "output");
  cudalabs::DeviceBuffer<std::int64_t> d_kept(1, "kept count");
  std::vector<ExactSum<T>> expected;
  std::vector<T> expected_kept;
  auto make_inputs = [&](std::uint64_t seed) {
    const std::vector<T> host = scan_input<T>(n, cudalabs::mix_seed(seed, 1), kind);
    expected = prefix_sums<T>(host, exclusive);
    expected_kept = positives<T>(host);
    d_in.upload(host);
  };
  make_inputs(s.seed());

  std::size_t scratch_bytes = lab25::compact_scratch_bytes(n);
  for (const auto& v : scan_variants<T>) scratch_bytes = std::max(scratch_bytes, v.scratch_bytes(n));
  cudalabs::DeviceBuffer<std::byte> scratch(std::max<std::size_t>(scratch_bytes, 1), "scan scratch");

  auto measure_scan = [&](const std::string& variant, std::function<void(cudaStream_t)> run,
                          std::optional<cudalabs::KernelResources> resources, std::map<std::string, double> more,
                          int max_kernels = -1) {
    more.insert(extra.begin(), extra.end());
    s.measure({
        .variant = variant,
        .size = point,
        // Every element read once and its prefix written once: what a copy moves.
        .work = {.bytes = 2.0 * sizeof(T) * n, .flops = static_cast<double>(n)},
        .run = std::move(run),
        .check = [&] { return check_equal<T>(d_out.download(), expected, n); },
        .poison =
            [&](cudaStream_t st) {
              poison(d_out, st);
              scratch.poison(st);  // a pass that reads a tile sum no block wrote gets NaN or -1
            },
        .new_inputs = make_inputs,
        .launches = {.max_kernels = max_kernels},
        .resources = resources,
        .extra = std::move(more),
    });
  };

  CubCall library([&](void* temp, std::size_t& temp_bytes, cudaStream_t stream) {
    return exclusive ? cub::DeviceScan::ExclusiveSum(temp, temp_bytes, d_in.data(), d_out.data(), n, stream)
                     : cub::DeviceScan::InclusiveSum(temp, temp_bytes, d_in.data(), d_out.data(), n, stream);
  });
  measure_scan("cub", [&](cudaStream_t st) { library.run(st); }, std::nullopt,
               {{"temp_bytes", static_cast<double>(library.temp_bytes())}});
  for (const auto& v : scan_variants<T>)
    if (s.selected(v.name))
      measure_scan(
          v.name, [&](cudaStream_t st) { v.run(d_in.data(), d_out.data(), n, exclusive, scratch.data(), st); },
          v.resources(element), {}, v.max_kernels);

  if (!s.selected("compact")) return;
  auto check_compacted = [&] {
    // The count is observed like any output (cudalabs/evidence.hpp): a judge decides from the graded program's.
    std::vector<std::int64_t> kept_count = d_kept.download();
    if (std::string missing = cudalabs::observe_in_place(std::span(kept_count)); !missing.empty())
      return cudalabs::missing_output(1, missing);
    const std::int64_t kept = kept_count[0];
    if (kept != static_cast<std::int64_t>(expected_kept.size())) {
      cudalabs::CheckResult r;
      r.count = r.bad = 1;
      r.max_abs_err = std::abs(static_cast<double>(kept) - static_cast<double>(expected_kept.size()));
      r.first_bad = {{0, static_cast<double>(kept), static_cast<double>(expected_kept.size())}};
      r.note = "kept count " + std::to_string(kept) + ", expected " + std::to_string(expected_kept.size());
      return r;
    }
    if (expected_kept.empty()) {  // nothing to keep and nothing kept: the count was the whole answer
      cudalabs::CheckResult r;
      r.count = 1;
      r.passed = true;
      return r;
    }
    const std::vector<T> out = d_out.download();
    const std::span<const T> got(out.data(), expected_kept.size());
    if constexpr (ints)
      return cudalabs::check_exact<int, int>(got, expected_kept);
    else
      return cudalabs::check_close(got, std::span<const float>(expected_kept), {.abs = 0, .rel = 0});
  };
  cudalabs::Measurement compact{
      .variant = "compact",
      .size = point,
      // Every element read once, every kept one written once.
      .work = {.bytes = static_cast<double>(sizeof(T)) * (n + static_cast<double>(expected_kept.size()))},
      .run =
          [&](cudaStream_t st) {
            lab25::compact_positive(d_in.data(), d_out.data(), d_kept.data(), n, scratch.data(), st);
          },
      .check = check_compacted,
      .poison =
          [&](cudaStream_t st) {
            poison(d_out, st);
            d_kept.poison(st);  // -1
          },
      .new_inputs = make_inputs,
      .resources = lab25::compact_resources(element),
  };
  compact.extra = extra;  // set apart: g++ 12 warns (maybe-uninitialized) on the designated form
  s.measure(compact);
}

}  // namespace

int main(int argc, char** argv) {
  const cudalabs::LabSpec spec{
      .name = "25_scan",
      .title = "scan: Hillis-Steele, Blelloch, scan-then-propagate, decoupled look-back vs cub::DeviceScan",
      .about = "Prefix sums of n ints or floats on the GPU: two classic block scans and a register tile scan,\n"
               "each inside scan-then-propagate (scan tiles, scan tile sums, add: three kernels, any n), then a\n"
               "single pass with decoupled look-back, and a stream compaction (keep x > 0) built on it, against\n"
               "cub::DeviceScan::InclusiveSum / ExclusiveSum in the same run. Ints in [-3, 3] are checked exactly;\n"
               "floats are multiples of 1/128 in [-1, 1), so every order of addition is exact and the tolerance\n"
               "stays below half a grid step (main.cu derives it). The compaction's output and its count,\n"
               "left on the GPU, are checked exactly.",
      .sizes = {{.name = "n",
                 .help = "elements",
                 .full = {std::int64_t{1} << 20, std::int64_t{1} << 28},
                 .quick = {1, 257, 4099, 100003},
                 .max = max_n}},
      .variants = {{"cub", "cub::DeviceScan::InclusiveSum / ExclusiveSum (the library baseline, measured first)", true},
                   {"hillis_steele", "3 kernels (scan tiles, scan tile sums, add); Hillis-Steele tiles of 512"},
                   {"blelloch", "3 kernels, as above; Blelloch up-/down-sweep tiles of 1024"},
                   {"scan_then_propagate", "3 kernels, as above; tiles of 4096 in registers, warp shuffles"},
                   {"decoupled_lookback", "1 kernel: register tiles, prefix by look-back over predecessors' sums"},
                   {"wide_lookback", "decoupled_lookback reading 128 predecessors' status words per round trip"},
                   {"compact", "keep x > 0 in order: the look-back pass over flags, then a scatter; 1 kernel"}},
      .flags = {{.name = "type",
                 .help = "element type: int or float",
                 .kind = cudalabs::ExtraFlag::Kind::text,
                 .default_value = "float",
                 .choices = {"int", "float"}},
                {.name = "exclusive",
                 .help = "exclusive scans (out[i] = sum of in[0..i-1]) instead of inclusive",
                 .kind = cudalabs::ExtraFlag::Kind::toggle},
                {.name = "inputs",
                 .help = "random: signs mixed (ints in [-3, 3], floats k/128); positive: whole numbers 1..3 (the "
                         "compaction keeps all); nonpositive: whole numbers -3..0, float zeros half -0.0 (it keeps "
                         "none); constant: every element +1 or every one -1 (the sign drawn), every full tile the "
                         "same sum (a look-back that tells new status words from old by their value fails). positive "
                         "and nonpositive floats: n at most 2^24 / 3; constant floats: n at most 2^24",
                 .kind = cudalabs::ExtraFlag::Kind::text,
                 .default_value = "random",
                 .choices = {"random", "positive", "nonpositive", "constant"}}},
  };
  return cudalabs::run_lab(argc, argv, spec, [](cudalabs::Session& s) {
    const std::string type = s.options().text("type");
    if (type != "int" && type != "float")
      throw cudalabs::UsageError("--type " + type + ": expected int or float. Example: --type int");
    const bool exclusive = s.options().toggle("exclusive");
    const std::string inputs = s.options().text("inputs");
    const ScanInputs kind = inputs == "positive"      ? ScanInputs::positive
                            : inputs == "nonpositive" ? ScanInputs::nonpositive
                            : inputs == "constant"    ? ScanInputs::constant
                                                      : ScanInputs::random;
    for (const auto& point : s.points()) {
      if (type == "int")
        measure_scans<int>(s, point, exclusive, kind);
      else
        measure_scans<float>(s, point, exclusive, kind);
    }
  });
}

// Lab 28 — tuning: sweeping launch parameters, and where occupancy matters.
//
// The experiments of the kernel auto-tuner this course grew from, measured the
// way every lab measures (poisoned, traced, checked, timed, re-checked on fresh
// inputs): a memory-bound kernel, z = a·x + y, and a compute-bound one, a
// degree-256 polynomial by Horner's rule (64 FLOP per byte), each launched one
// thread per element and as a grid-stride loop; the SAXPY also on managed
// memory. `--sweep` measures a grid of launch parameters (threads per block ×
// blocks per SM × items per thread) instead of the hand-chosen launch, one
// record per point; under the table: the best point of each size with its
// theoretical occupancy, and the ratio matrix between the strategies.
//
// Variants (tunable parameters in brackets):
//   saxpy_grid_stride             grid-stride loop, cudaMalloc'd buffers  [block, blocks_per_sm, items]
//   saxpy_one_per_thread          one thread per element                  [block]
//   saxpy_managed_grid_stride     grid-stride, cudaMallocManaged buffers prefetched to the GPU (untimed)
//                                                                         [block, blocks_per_sm, items]
//   saxpy_managed_one_per_thread  one per thread, managed, prefetched     [block]
//   saxpy_managed_faulting        grid-stride, managed pages moved to the host before every run:
//                                 the kernel's page faults bring them back (what the original
//                                 tuner timed as "managed")
//   horner_grid_stride            the polynomial, grid-stride, Items chains interleaved
//                                                                         [block, blocks_per_sm, items]
//   horner_one_per_thread         the polynomial, one thread per element  [block]
//
// Inputs (--inputs): uniform values in [-1, 1), or specials: a quarter of x
// and y ±Inf, NaNs, ±0, subnormals, ±FLT_MAX, ±1e30 (labs/shared/value_kinds.hpp).
// There z = fmaf(a, x, y) is defined by IEEE 754, one rounding: the reference is
// the CPU's own fmaf, NaN stays NaN, an overflow is the same infinity. Horner's
// p(x) is too: NaN in, NaN out, p(±0) = c_0, and every huge |x| (1e30 and up)
// overflows to +Inf (positive coefficients, even degree). A kernel that clamps,
// tests, rescales or narrows its operands fails there.
//
// Run: make run LAB=28     (n = 2^20, 2^26; every strategy at its hand-chosen launch)
//      make tune LAB=28    (block × blocks_per_sm of every tunable variant at n = 2^26; heat maps)
//      make tune LAB=28 VARIANT=horner_grid_stride SWEEP="blocks_per_sm=1,2,4,8,16 items=1,2,4,8"
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <cudalabs/lab.hpp>
#include <cudalabs/math.hpp>
#include <cudalabs/random.hpp>
#include <cudalabs/reference.hpp>
#include <cudalabs/sweep.hpp>

#include "../23_unified_memory/managed_memory.hpp"  // the course's managed buffers and prefetch (lab 23)
#include "kernels.hpp"
#include "polynomial.hpp"
#include "value_kinds.hpp"

namespace {

constexpr float saxpy_a = 1.5f;  // exactly representable: a·x + y in double is exact

// ---- CPU references ----------------------------------------------------------

std::vector<double> saxpy_reference(const std::vector<float>& x, const std::vector<float>& y) {
  std::vector<double> z(x.size());
  cudalabs::ref::parallel_for(x.size(), [&](std::size_t lo, std::size_t hi) {
    for (std::size_t i = lo; i < hi; ++i) z[i] = static_cast<double>(saxpy_a) * x[i] + y[i];
  });
  return z;
}

// Horner in double with the float coefficients, 1024 elements at a time with the
// degree loop outside: the inner loop is independent per element and vectorises.
std::vector<double> horner_reference(const std::vector<float>& x) {
  std::vector<double> p(x.size());
  cudalabs::ref::parallel_for(x.size(), [&](std::size_t lo, std::size_t hi) {
    constexpr std::size_t chunk = 1024;
    for (std::size_t first = lo; first < hi; first += chunk) {
      const std::size_t last = std::min(hi, first + chunk);
      for (std::size_t i = first; i < last; ++i) p[i] = polynomial_coefficient(polynomial_degree);
      for (int d = polynomial_degree - 1; d >= 0; --d) {
        const double c = polynomial_coefficient(d);
        for (std::size_t i = first; i < last; ++i) p[i] = p[i] * x[i] + c;
      }
    }
  }, 4096);
  return p;
}

// Horner with one rounding per FMA is within degree · 2^-24 · sum |c_k| of the
// exact value for |x| <= 1 (polynomial.hpp); twice that. An element taken from
// the wrong x is off by ~0.1 to 1.
cudalabs::Tolerance horner_tolerance() {
  double bound = 0;
  for (int k = 0; k <= polynomial_degree; ++k) bound += polynomial_coefficient(k);
  return {.abs = 2.0 * polynomial_degree * std::ldexp(1.0, -24) * bound, .rel = 0};
}

// The float fmaf the kernels compute, one rounding, as the CPU's fmaf: for
// specials, where a double reference would round twice near an overflow.
std::vector<double> saxpy_fma_reference(const std::vector<float>& x, const std::vector<float>& y) {
  std::vector<double> z(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) z[i] = std::fma(saxpy_a, x[i], y[i]);
  return z;
}


// ---- what is tunable -----------------------------------------------------------

constexpr int hand_chosen_block = 256;

cudalabs::TunableVariant grid_stride_variant(const std::string& name) {
  return {.variant = name,
          .params = {cudalabs::block_tunable(hand_chosen_block),
                     cudalabs::blocks_per_sm_tunable(),
                     {.name = "items",
                      .help = "elements per thread per pass, one kernel instantiation each",
                      .value = 1,
                      .min = 1,
                      .max = 8,
                      .choices = lab28::compiled_items()}},
          .default_sweep = "block=64..1024 blocks_per_sm=0,1,2,4,8,16"};
}

cudalabs::TunableVariant one_per_thread_variant(const std::string& name) {
  return {.variant = name, .params = {cudalabs::block_tunable(hand_chosen_block)}, .default_sweep = "block=32..1024"};
}

cudalabs::Tuning lab_tuning() {
  return {grid_stride_variant("saxpy_grid_stride"),         one_per_thread_variant("saxpy_one_per_thread"),
          grid_stride_variant("saxpy_managed_grid_stride"), one_per_thread_variant("saxpy_managed_one_per_thread"),
          grid_stride_variant("horner_grid_stride"),        one_per_thread_variant("horner_one_per_thread")};
}

// A launch of one point: the block, and for grid-stride variants the grid and
// items per thread (one_per_thread: grid 0, the launcher sizes it from n).
struct Launch {
  int block = 0;
  int items = 1;
  unsigned grid = 0;
};

Launch launch_of(const cudalabs::TunePoint& t, const cudalabs::KernelResources& r, std::int64_t n, int sm_count,
                 bool grid_stride) {
  Launch l{.block = static_cast<int>(t.at("block"))};
  if (!grid_stride) return l;
  l.items = static_cast<int>(t.at("items"));
  l.grid = static_cast<unsigned>(
      cudalabs::grid_for(t.at("blocks_per_sm"), r.blocks_per_sm, sm_count, cudalabs::ceil_div<std::int64_t>(n, l.block * l.items)));
  return l;
}

void saxpy(const Launch& l, const float* x, const float* y, float* z, std::int64_t n, cudaStream_t stream) {
  if (l.grid > 0) lab28::saxpy_grid_stride(saxpy_a, x, y, z, n, l.grid, l.block, l.items, stream);
  else lab28::saxpy_one_per_thread(saxpy_a, x, y, z, n, l.block, stream);
}

void horner(const Launch& l, const float* x, float* p, std::int64_t n, cudaStream_t stream) {
  if (l.grid > 0) lab28::horner_grid_stride(x, p, n, l.grid, l.block, l.items, stream);
  else lab28::horner_one_per_thread(x, p, n, l.block, stream);
}

// One variant through the tuner: each point's block and items, its resources
// from the occupancy API, its grid from blocks_per_sm (grid-stride variants),
// then `measure` with that launch. Returns the best point's record.
std::optional<cudalabs::Record> tune_variant(
    cudalabs::Session& s, cudalabs::Tuner& tuner, const std::string& variant, const cudalabs::Point& point,
    bool grid_stride, const std::function<cudalabs::KernelResources(int block, int items)>& resources,
    const std::function<const cudalabs::Record&(cudalabs::TuneRun how, const Launch& launch)>& measure) {
  const std::int64_t n = point.at("n");
  return tuner.run(variant, point, [&](const cudalabs::TunePoint& t) {
    const int block = static_cast<int>(t.at("block"));
    const int items = grid_stride ? static_cast<int>(t.at("items")) : 1;
    return cudalabs::TuneCase{.shape = {.block_threads = block},
                              .resources = [&, block, items] { return resources(block, items); },
                              .measure = [&, t](cudalabs::TuneRun how) -> const cudalabs::Record& {
                                const Launch l = launch_of(t, how.resources, n, s.device().sm_count, grid_stride);
                                if (grid_stride) how.extra["grid"] = l.grid;
                                return measure(std::move(how), l);
                              }};
  });
}

// ---- memory ------------------------------------------------------------------

// x, y and z of one strategy, in cudaMalloc'd or cudaMallocManaged memory. The
// host never touches them: copies in and out go through cudaMemcpy, the poison
// through cudaMemsetAsync, so managed pages move only when a prefetch (or a
// page fault) moves them.
template <typename Buffer>
struct Operands {
  Buffer x, y, z;

  void upload(const std::vector<float>& hx, const std::vector<float>& hy) {
    CUDALABS_CHECK(cudaMemcpy(x.data(), hx.data(), x.bytes(), cudaMemcpyDefault));
    CUDALABS_CHECK(cudaMemcpy(y.data(), hy.data(), y.bytes(), cudaMemcpyDefault));
    CUDALABS_CHECK(cudaDeviceSynchronize());  // from pageable memory the copy may return before it lands
  }
  // Managed only: all three buffers' pages to `where`, enqueued on `stream`.
  void prefetch(um::Location where, cudaStream_t stream) {
    for (Buffer* b : {&x, &y, &z}) um::prefetch(b->data(), b->bytes(), where, stream);
  }
  void poison(cudaStream_t stream) { CUDALABS_CHECK(cudaMemsetAsync(z.data(), 0xFF, z.bytes(), stream)); }
  std::vector<float> download() {
    std::vector<float> host(z.bytes() / sizeof(float));
    CUDALABS_CHECK(cudaMemcpy(host.data(), z.data(), z.bytes(), cudaMemcpyDefault));
    return host;
  }
};

using DeviceOperands = Operands<cudalabs::DeviceBuffer<float>>;
using ManagedOperands = Operands<um::ManagedBuffer<float>>;

bool any_selected(const cudalabs::Session& s, std::initializer_list<const char*> variants) {
  return std::any_of(variants.begin(), variants.end(), [&](const char* v) { return s.selected(v); });
}

bool managed_memory_usable(int device) {
  int managed = 0, concurrent = 0;
  CUDALABS_CHECK(cudaDeviceGetAttribute(&managed, cudaDevAttrManagedMemory, device));
  CUDALABS_CHECK(cudaDeviceGetAttribute(&concurrent, cudaDevAttrConcurrentManagedAccess, device));
  return managed && concurrent;  // prefetching to a GPU needs concurrent managed access
}

// ---- the ratio matrix ------------------------------------------------------------

using Fastest = std::vector<std::pair<std::string, cudalabs::Record>>;

// Under the table: throughput of each strategy (row) over each other (column),
// each at its fastest measured launch; and the same numbers as one record,
// `<family>_ratios`, whose extra holds "row/column" for every pair.
void add_ratio_matrix(cudalabs::Session& s, const std::string& lab, const cudalabs::Point& point,
                      const std::string& family, const Fastest& fastest) {
  if (fastest.size() < 2) return;
  auto label = [&](const std::string& variant) { return variant.substr(family.size() + 1); };
  std::size_t width = 8;
  for (const auto& [variant, r] : fastest) width = std::max(width, label(variant).size() + 2);
  auto cell = [&](const std::string& text) { return std::string(width - std::min(width, text.size()), ' ') + text; };
  s.note(cudalabs::to_string(point) + ": " + family + " throughput, row / column, each at its fastest measured launch:");
  std::string head = "  " + std::string(width, ' ');
  for (const auto& [variant, r] : fastest) head += cell(label(variant));
  s.note(head);
  cudalabs::Record ratios;
  ratios.lab = lab;
  ratios.variant = family + "_ratios";
  ratios.size = point;
  ratios.seed = s.seed();
  ratios.passed = true;
  for (const auto& [row, rr] : fastest) {
    std::string line = "  " + cell(label(row));
    for (const auto& [column, rc] : fastest) {
      const double ratio = rc.timing.median_ms / rr.timing.median_ms;  // same work: time ratio = throughput ratio
      char text[32];
      std::snprintf(text, sizeof text, "%.2f", ratio);
      line += cell(text);
      if (row != column) ratios.extra[label(row) + "/" + label(column)] = ratio;
    }
    s.note(line);
  }
  s.add(std::move(ratios));
}

// ---- the SAXPY strategies ------------------------------------------------------

// managed_ok: the device can prefetch managed memory (else the managed variants are left out).
void measure_saxpy(cudalabs::Session& s, cudalabs::Tuner& tuner, const std::string& lab, const cudalabs::Point& point,
                   bool managed_ok, bool specials) {
  const std::int64_t n = point.at("n");
  const auto count = static_cast<std::size_t>(n);
  const int device = s.device().id, sms = s.device().sm_count;

  DeviceOperands dev{cudalabs::DeviceBuffer<float>(count, "x"), cudalabs::DeviceBuffer<float>(count, "y"),
                     cudalabs::DeviceBuffer<float>(count, "z")};
  std::optional<ManagedOperands> managed, faulting;  // faulting: pages of their own, moved to the host every run
  if (managed_ok && any_selected(s, {"saxpy_managed_grid_stride", "saxpy_managed_one_per_thread"}))
    managed.emplace(ManagedOperands{um::ManagedBuffer<float>(count), um::ManagedBuffer<float>(count),
                                    um::ManagedBuffer<float>(count)});
  if (managed_ok && s.selected("saxpy_managed_faulting"))
    faulting.emplace(ManagedOperands{um::ManagedBuffer<float>(count), um::ManagedBuffer<float>(count),
                                     um::ManagedBuffer<float>(count)});

  // Inputs from a seed and their reference, uploaded to every strategy's buffers
  // (all of them: each variant's fresh inputs must reach the others too).
  std::vector<float> x, y;
  std::vector<double> expected;
  auto make_inputs = [&](std::uint64_t seed) {
    x = value_kinds::uniform_or_specials(specials, count, cudalabs::mix_seed(seed, 1), -1.0f, 1.0f);
    y = value_kinds::uniform_or_specials(specials, count, cudalabs::mix_seed(seed, 2), -1.0f, 1.0f);
    expected = specials ? saxpy_fma_reference(x, y) : saxpy_reference(x, y);
    dev.upload(x, y);
    if (managed) {
      managed->upload(x, y);
      managed->prefetch(um::gpu(device), s.stream());  // untimed: the prefetched variants start on the GPU
      CUDALABS_CHECK(cudaStreamSynchronize(s.stream()));
    }
    if (faulting) faulting->upload(x, y);
  };
  make_inputs(s.seed());
  // fmaf rounds once: within half an ulp (2^-24 relative) of the exact a·x + y.
  const cudalabs::Tolerance tol{.abs = 0, .rel = 6e-8};
  const cudalabs::Work work{.bytes = 12.0 * static_cast<double>(n), .flops = 2.0 * static_cast<double>(n)};
  Fastest fastest;

  auto tune = [&](const std::string& variant, auto& ops, bool grid_stride) {
    if (!s.selected(variant)) return;
    const auto best = tune_variant(
        s, tuner, variant, point, grid_stride,
        [grid_stride](int block, int items) {
          return grid_stride ? lab28::saxpy_grid_stride_resources(block, items) : lab28::saxpy_one_per_thread_resources(block);
        },
        [&](cudalabs::TuneRun how, const Launch& l) -> const cudalabs::Record& {
          return s.measure({.variant = how.variant,
                            .size = point,
                            .work = work,
                            .run = [&, l](cudaStream_t st) { saxpy(l, ops.x.data(), ops.y.data(), ops.z.data(), n, st); },
                            .check = [&] { return cudalabs::check_close_ieee(ops.download(), expected, tol); },
                            .poison = [&](cudaStream_t st) { ops.poison(st); },
                            .new_inputs = make_inputs,
                            .resources = how.resources,
                            .extra = std::move(how.extra)});
        });
    if (best) fastest.emplace_back(variant, *best);
  };
  tune("saxpy_grid_stride", dev, true);
  tune("saxpy_one_per_thread", dev, false);
  if (managed) {
    tune("saxpy_managed_grid_stride", *managed, true);
    tune("saxpy_managed_one_per_thread", *managed, false);
  }

  // saxpy_grid_stride's hand-chosen launch, on pages that start on the host every
  // run: the prefetch to the host is untimed, the page faults are the kernel's.
  if (faulting) {
    ManagedOperands& ops = *faulting;
    const cudalabs::TunePoint t = tuner.hand_chosen("saxpy_grid_stride");
    const auto resources = lab28::saxpy_grid_stride_resources(static_cast<int>(t.at("block")), static_cast<int>(t.at("items")));
    const Launch l = launch_of(t, resources, n, sms, true);
    const double link = s.device().pcie_gbps();
    const auto& r = s.measure(
        {.variant = "saxpy_managed_faulting",
         .size = point,
         .work = work,
         .run = [&, l](cudaStream_t st) { saxpy(l, ops.x.data(), ops.y.data(), ops.z.data(), n, st); },
         .check = [&] { return cudalabs::check_close_ieee(ops.download(), expected, tol); },
         .poison = [&](cudaStream_t st) { ops.poison(st); },
         .reset = [&](cudaStream_t st) { ops.prefetch(um::host(), st); },
         .new_inputs = make_inputs,
         .expect = cudalabs::Expect::kernels_and_copies,  // the pages cross PCIe inside the run: that is the lesson
         .resources = resources,
         .ceiling = link > 0 ? cudalabs::CeilingKind::given : cudalabs::CeilingKind::none,
         .given_ceiling = {.name = "pcie_link_gbps", .gbps = link},
         .extra = {{"grid", static_cast<double>(l.grid)}}});
    if (r.passed && r.timed) fastest.emplace_back("saxpy_managed_faulting", r);
  }
  add_ratio_matrix(s, lab, point, "saxpy", fastest);
}

// ---- the polynomial ------------------------------------------------------------

void measure_horner(cudalabs::Session& s, cudalabs::Tuner& tuner, const std::string& lab, const cudalabs::Point& point,
                    bool specials) {
  const std::int64_t n = point.at("n");
  const auto count = static_cast<std::size_t>(n);
  cudalabs::DeviceBuffer<float> d_x(count, "x"), d_p(count, "p(x)");
  std::vector<double> expected;
  auto make_inputs = [&](std::uint64_t seed) {
    const auto x = value_kinds::uniform_or_specials(specials, count, cudalabs::mix_seed(seed, 3), -1.0f, 1.0f);
    expected = horner_reference(x);
    d_x.upload(x);
  };
  make_inputs(s.seed());
  const cudalabs::Tolerance tol = horner_tolerance();
  const cudalabs::Work work{.bytes = 8.0 * static_cast<double>(n),
                            .flops = 2.0 * polynomial_degree * static_cast<double>(n)};
  Fastest fastest;
  for (const bool grid_stride : {true, false}) {
    const std::string variant = grid_stride ? "horner_grid_stride" : "horner_one_per_thread";
    if (!s.selected(variant)) continue;
    const auto best = tune_variant(
        s, tuner, variant, point, grid_stride,
        [grid_stride](int block, int items) {
          return grid_stride ? lab28::horner_grid_stride_resources(block, items) : lab28::horner_one_per_thread_resources(block);
        },
        [&](cudalabs::TuneRun how, const Launch& l) -> const cudalabs::Record& {
          return s.measure({.variant = how.variant,
                            .size = point,
                            .work = work,
                            .run = [&, l](cudaStream_t st) { horner(l, d_x.data(), d_p.data(), n, st); },
                            .check = [&] { return cudalabs::check_close_ieee(d_p.download(), expected, tol); },
                            .poison = [&](cudaStream_t st) { d_p.poison(st); },
                            .new_inputs = make_inputs,
                            .peak = cudalabs::Peak::fp32,
                            .resources = how.resources,
                            // FLOP-bound: % of the FP32 peak is in the record (peak_gflops), not of a copy.
                            .ceiling = cudalabs::CeilingKind::none,
                            .extra = std::move(how.extra)});
        });
    if (best) {
      fastest.emplace_back(variant, *best);
      char line[160];
      std::snprintf(line, sizeof line, "%s, %s: %.0f GFLOP/s, %.1f%% of the FP32 peak (%.0f GFLOP/s)",
                    cudalabs::to_string(point).c_str(), best->variant.c_str(), best->gflops,
                    100.0 * best->gflops / best->peak_gflops, best->peak_gflops);
      s.note(line);
    }
  }
  add_ratio_matrix(s, lab, point, "horner", fastest);
}

}  // namespace

int main(int argc, char** argv) {
  const cudalabs::Tuning tuning = lab_tuning();
  const cudalabs::LabSpec spec{
      .name = "28_tuning",
      .title = "tuning: sweeping launch parameters, and where occupancy matters",
      .about = "A memory-bound SAXPY (z = a*x + y) and a compute-bound degree-256 polynomial (Horner, 64 FLOP per\n"
               "byte), each one thread per element and as a grid-stride loop, the SAXPY also on managed memory\n"
               "(prefetched, or faulted over every run). --sweep measures every point of a grid of launch\n"
               "parameters, each checked and timed like any variant, and names the best point per size and its\n"
               "occupancy; under the table, each family's strategies as a matrix of throughput ratios.",
      .sizes = {{.name = "n",
                 .help = "elements",
                 .full = {std::int64_t{1} << 20, std::int64_t{1} << 26},
                 .quick = {1, 255, 257, 1000003},
                 .max = std::int64_t{1} << 30}},  // 3 strategies x 3 buffers x 4 GiB on the device at most
      .variants = {{"saxpy_grid_stride", "z = a*x + y, grid-stride loop, Items elements per thread per pass"},
                   {"saxpy_one_per_thread", "z = a*x + y, one thread per element"},
                   {"saxpy_managed_grid_stride", "grid-stride on cudaMallocManaged memory, prefetched to the GPU"},
                   {"saxpy_managed_one_per_thread", "one per thread on managed memory, prefetched to the GPU"},
                   {"saxpy_managed_faulting", "grid-stride on managed pages that start on the host every run"},
                   {"horner_grid_stride", "degree-256 polynomial, grid-stride, Items Horner chains interleaved"},
                   {"horner_one_per_thread", "degree-256 polynomial, one thread per element"}},
      .flags = {cudalabs::sweep_flag(tuning),
                value_kinds::inputs_flag_of("uniform: x, y in [-1, 1); specials: a quarter of them ±Inf, NaN, ±0, "
                                            "subnormals, ±FLT_MAX, ±1e30, the rest uniform (both families)",
                                            {"uniform", "specials"})},
  };
  return cudalabs::run_tuned_lab(argc, argv, spec, tuning, [&](cudalabs::Session& s, cudalabs::Tuner& tuner) {
    const bool managed_ok = managed_memory_usable(s.device().id);
    const bool specials = s.options().text("inputs") == "specials";
    const bool saxpy = any_selected(s, {"saxpy_grid_stride", "saxpy_one_per_thread", "saxpy_managed_grid_stride",
                                        "saxpy_managed_one_per_thread", "saxpy_managed_faulting"});
    const bool horner = any_selected(s, {"horner_grid_stride", "horner_one_per_thread"});
    if (!managed_ok &&
        any_selected(s, {"saxpy_managed_grid_stride", "saxpy_managed_one_per_thread", "saxpy_managed_faulting"}))
      s.note("managed variants left out: this device has no concurrent managed access (no prefetch to the GPU)");
    for (const auto& point : s.points()) {
      if (saxpy) measure_saxpy(s, tuner, spec.name, point, managed_ok, specials);
      if (horner) measure_horner(s, tuner, spec.name, point, specials);
    }
  });
}

// Lab 23 — unified memory: page faults, prefetch, advice and zero-copy, end to end.
//
// The same two computations, each with its inputs on the host at the start and
// its result needed on the host at the end, five ways of getting the bytes
// there and back (strategies.cuh). Times are end to end on the host clock, so
// they include the driver's work on the host (fault handling, page-table
// updates), not only what the GPU's stream shows. GB/s = the bytes that must
// cross PCIe (inputs in, result out) per second.
//
// Before the table: the rates of one transfer each way, copied and migrated
// (migration_rates), which the end-to-end times are sums of.
//
//   vector add (*_add)        c = a + b: every byte is used once
//   heat equation (*_stencil) `steps` 5-point Jacobi steps (lab 22) on an
//                             nx × ny grid: every byte is used 5 × steps times
//
// Variants, each for both computations:
//   explicit_*          pinned host buffers, cudaMemcpyAsync in and out: the reference
//   managed_faults_*    cudaMallocManaged, pages start on the host; GPU page faults move them
//   managed_prefetch_*  the inputs' pages moved by cudaMemPrefetchAsync before the kernels,
//                       the output's dead pages discarded onto the GPU, the result prefetched back
//   managed_advised_*   prefetch + cudaMemAdvise: the output kept on the host and mapped
//                       for the GPU (its way home costs nothing); inputs prefetched
//   zero_copy_*         mapped pinned host memory, read and written in place over PCIe
//
// Inputs (--inputs) of the vector add: uniform values in [-100, 100), or
// specials: a quarter of them ±Inf, NaNs, ±0, subnormals, ±FLT_MAX, every one
// of them at the tail (labs/shared/value_kinds.hpp), where c = a + b is still
// one IEEE float addition (NaN in, NaN out; FLT_MAX + FLT_MAX = +Inf). Moved
// by copies, migration or in place, every value must reach the kernel as it
// was: a strategy that stages the data through arithmetic, or leaves the last
// page behind, fails there. The stencil's grid stays uniform (lab 22 draws its
// other kinds).
//
// Run: make run LAB=23     (n = 2^26: three 256 MB vectors; an 8192² grid, 10 steps)
//      build/labs/23_unified_memory/23_unified_memory --n 1M --nx 1000 --ny 1000 --variant zero_copy_add
#include <unistd.h>  // sysconf: the host's physical memory

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <initializer_list>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include <cudalabs/lab.hpp>
#include <cudalabs/random.hpp>
#include <cudalabs/reference.hpp>

#include "jacobi_reference.hpp"
#include "kernels.hpp"
#include "managed_memory.hpp"
#include "value_kinds.hpp"

namespace {

// ---- CPU references: cudalabs::ref::vector_add, and lab 22's jacobi::cpu_steps

constexpr float nan_value = std::numeric_limits<float>::quiet_NaN();

// ---- what the device and the system support ----------------------------------
struct UnifiedSupport {
  bool managed = false;             // cudaMallocManaged works at all
  bool concurrent_managed = false;  // GPU page faults; host and GPU may touch managed memory at once;
                                    // prefetch and advice to a GPU (Pascal+ on Linux)
  bool pageable_access = false;     // the GPU can read plain malloc memory (HMM or ATS)
  bool pageable_uses_host_tables = false;  // ...through the host's page tables (ATS, e.g. Grace Hopper)
  bool map_host = false;            // pinned host memory can be mapped for the GPU (zero-copy)
  bool direct_host_access = false;  // the host reads managed memory on the GPU without migrating it
};

UnifiedSupport query_support(int device) {
  auto attribute = [&](cudaDeviceAttr what) {
    int value = 0;
    CUDALABS_CHECK(cudaDeviceGetAttribute(&value, what, device));
    return value != 0;
  };
  return {attribute(cudaDevAttrManagedMemory),
          attribute(cudaDevAttrConcurrentManagedAccess),
          attribute(cudaDevAttrPageableMemoryAccess),
          attribute(cudaDevAttrPageableMemoryAccessUsesHostPageTables),
          attribute(cudaDevAttrCanMapHostMemory),
          attribute(cudaDevAttrDirectManagedMemAccessFromHost)};
}

std::string yes_no(bool b) { return b ? "yes" : "no"; }

std::string describe(const UnifiedSupport& u) {
  return "unified memory on this device: managed memory " + yes_no(u.managed) + "; concurrent managed access " +
         yes_no(u.concurrent_managed) + " (GPU page faults, prefetch and advice)" + "; pageable memory access " +
         yes_no(u.pageable_access) + (u.pageable_access ? (u.pageable_uses_host_tables ? " (ATS)" : " (HMM)") : "") +
         " (kernels reading plain malloc memory); mapped pinned memory " + yes_no(u.map_host) +
         " (zero-copy); host reads managed memory in place " + yes_no(u.direct_host_access);
}

// ---- sizes that fit ------------------------------------------------------------
// Managed memory beyond what the GPU has free is oversubscription: the driver
// evicts pages to make room and faults them back, over and over, and on some
// systems the GPU stops responding. This lab refuses before allocating: the
// largest set of managed buffers alive at once (3 vectors, or 4 grids) must fit
// in 90% of the free device memory, and what the host holds at once (inputs,
// the double reference, one variant's host buffers: under 28 bytes per
// element) in 75% of its RAM.
void check_fits(std::int64_t n, std::int64_t points) {
  const double gib = 1024.0 * 1024.0 * 1024.0;
  const double usable_device = 0.9 * static_cast<double>(cudalabs::device_free_bytes());
  const double add_bytes = 12.0 * static_cast<double>(n), grid_bytes = 16.0 * static_cast<double>(points);
  char message[512];
  if (add_bytes > usable_device) {
    std::snprintf(message, sizeof message,
                  "--n %lld: the vector add would allocate 3 managed vectors, %.1f GiB, and the GPU has %.1f GiB free. "
                  "Managed memory beyond free device memory is oversubscription (pages evicted and re-faulted; some "
                  "systems hang). The largest --n that fits with 10%% headroom is %.0f.",
                  static_cast<long long>(n), add_bytes / gib, usable_device / 0.9 / gib, std::floor(usable_device / 12.0));
    throw cudalabs::UsageError(message);
  }
  if (grid_bytes > usable_device) {
    const double side = std::floor(std::sqrt(usable_device / 16.0));
    std::snprintf(message, sizeof message,
                  "--nx × --ny = %lld points: the stencil would allocate 4 managed grids, %.1f GiB, and the GPU has "
                  "%.1f GiB free. Managed memory beyond free device memory is oversubscription (pages evicted and "
                  "re-faulted; some systems hang). The largest grid that fits with 10%% headroom is %.0f points, "
                  "e.g. --nx %.0f --ny %.0f.",
                  static_cast<long long>(points), grid_bytes / gib, usable_device / 0.9 / gib, side * side, side, side);
    throw cudalabs::UsageError(message);
  }
  const double host_ram = static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGE_SIZE));
  const double host_bytes = 28.0 * static_cast<double>(std::max(n, points));
  if (host_ram > 0 && host_bytes > 0.75 * host_ram) {
    std::snprintf(message, sizeof message,
                  "--n %lld / %lld grid points need about %.1f GiB of host memory at once, more than 75%% of the "
                  "host's %.1f GiB. The largest size that fits is %.0f elements (--n, or --nx × --ny).",
                  static_cast<long long>(n), static_cast<long long>(points), host_bytes / gib, host_ram / gib,
                  std::floor(0.75 * host_ram / 28.0));
    throw cudalabs::UsageError(message);
  }
}

// The median of a variant measured at this point; 0 when it was not timed.
double median_ms(const cudalabs::Session& s, const cudalabs::Point& p, const std::string& variant) {
  for (const auto& r : s.records())
    if (r.size == p && r.variant == variant && r.timed) return r.timing.median_ms;
  return 0;
}

const char* const strategies[] = {"explicit", "managed_faults", "managed_prefetch", "managed_advised", "zero_copy"};

// One line per computation: every strategy's time and its ratio to explicit
// copies; one more for what page faults cost over prefetching the same pages.
// `dead_bytes`: the output's old contents, which the faulting run carries to
// the GPU and the prefetching run discards (0 where the driver cannot discard).
void summarize(cudalabs::Session& s, const cudalabs::Point& p, const std::string& computation, double pcie_bytes,
               double dead_bytes) {
  const double explicit_ms = median_ms(s, p, "explicit_" + computation);
  std::string line = computation + ", " + cudalabs::to_string(p) + " (" + std::to_string(static_cast<long long>(pcie_bytes / 1e6)) +
                     " MB across PCIe):";
  char part[96];
  for (const char* strategy : strategies) {
    const double ms = median_ms(s, p, std::string(strategy) + "_" + computation);
    if (ms <= 0) continue;
    if (explicit_ms > 0 && std::string(strategy) != "explicit")
      std::snprintf(part, sizeof part, " %s %.2f ms (%.2fx explicit);", strategy, ms, ms / explicit_ms);
    else
      std::snprintf(part, sizeof part, " %s %.2f ms;", strategy, ms);
    line += part;
  }
  s.note(line);
  const double faults = median_ms(s, p, "managed_faults_" + computation);
  const double prefetched = median_ms(s, p, "managed_prefetch_" + computation);
  if (faults > 0 && prefetched > 0) {
    // The faults bring in the inputs and the output's old contents: as many
    // bytes as cross PCIe in all (12n for the add, 8 per point for the stencil).
    const double faulted_bytes = pcie_bytes;
    std::snprintf(part, sizeof part, "%.1f ms per GB", (faults - prefetched) / (faulted_bytes / 1e9));
    s.note(computation + ": page faults cost " + part + " over prefetching ((faults − prefetch) / " +
           std::to_string(static_cast<long long>(faulted_bytes / 1e6)) + " MB moved in by faults" +
           (dead_bytes > 0 ? ", " + std::to_string(static_cast<long long>(dead_bytes / 1e6)) +
                                  " MB of them the output's dead contents, which the prefetching run discards)"
                            : ")"));
  }
}

// ---- the rates underneath: one vector, each way, copied or migrated ----------------
// The end-to-end times above are sums of transfers. This times the transfers
// alone, on the host clock like the variants (a prefetch's driver work on the
// host counts): one 4n-byte buffer host -> GPU and GPU -> host, as a pinned
// cudaMemcpyAsync (what explicit_* do) and as a cudaMemPrefetchAsync of managed
// pages populated on the host (what managed_prefetch_* do), and the discard
// that maps an output on the GPU without moving it. The values moved are not
// checked here, only timed.
void migration_rates(cudalabs::Session& s, std::int64_t n, int device) {
  const auto count = static_cast<std::size_t>(n);
  const double bytes = 4.0 * static_cast<double>(n);
  cudalabs::PinnedBuffer<float> pinned(count, "pinned");
  cudalabs::DeviceBuffer<float> on_device(count, "device");
  um::ManagedBuffer<float> managed(count);
  std::fill(pinned.span().begin(), pinned.span().end(), 0.5f);
  std::fill(managed.span().begin(), managed.span().end(), 0.5f);  // first touch: the pages exist on the host
  cudaStream_t st = s.stream();
  cudalabs::TimerConfig cfg = s.timer();
  cfg.min_runs = 5;
  cfg.max_runs = 20;
  cfg.max_seconds = 0.5;
  // Median host-clock ms of `work` (enqueue + wait), `before` run untimed ahead of each.
  auto time_ms = [&](auto before, auto work) {
    auto one = [&] {
      before();
      CUDALABS_CHECK(cudaStreamSynchronize(st));
      const auto t0 = std::chrono::steady_clock::now();
      work();
      CUDALABS_CHECK(cudaStreamSynchronize(st));
      return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    };
    one();  // warm-up
    return cudalabs::repeat_until_stable(one, cfg).median_ms;
  };
  auto nothing = [] {};
  const double copy_in = time_ms(nothing, [&] {
    CUDALABS_CHECK(cudaMemcpyAsync(on_device.data(), pinned.data(), managed.bytes(), cudaMemcpyHostToDevice, st));
  });
  const double copy_out = time_ms(nothing, [&] {
    CUDALABS_CHECK(cudaMemcpyAsync(pinned.data(), on_device.data(), managed.bytes(), cudaMemcpyDeviceToHost, st));
  });
  auto pages_home = [&] { um::prefetch(managed.data(), managed.bytes(), um::host(), st); };
  auto pages_on_gpu = [&] { um::prefetch(managed.data(), managed.bytes(), um::gpu(device), st); };
  const double prefetch_in = time_ms(pages_home, pages_on_gpu);
  const double prefetch_out = time_ms(pages_on_gpu, pages_home);
  auto gbps = [&](double ms) { return bytes / (ms * 1e6); };
  char line[400];
  std::snprintf(line, sizeof line,
                "transfer rates, one %.0f MB buffer, host clock: pinned cudaMemcpyAsync in %.1f GB/s (%.2f ms), out "
                "%.1f GB/s (%.2f ms); managed cudaMemPrefetchAsync in %.1f GB/s (%.2f ms), out %.1f GB/s (%.2f ms)",
                bytes / 1e6, gbps(copy_in), copy_in, gbps(copy_out), copy_out, gbps(prefetch_in), prefetch_in,
                gbps(prefetch_out), prefetch_out);
  std::string note = line;
  if (um::can_discard()) {
    const double discard = time_ms(pages_home, [&] {
      um::discard_and_prefetch(managed.data(), managed.bytes(), um::gpu(device), st);
    });
    std::snprintf(line, sizeof line, "; discard + prefetch to the GPU (no bytes move) %.2f ms", discard);
    note += line;
  }
  s.note(note);
}

// What every variant of this lab shares: it moves data between host and device
// on purpose (not held to the no-copies rule), is timed on the host clock end
// to end, and has no device ceiling (PCIe and the driver set the pace).
cudalabs::Measurement end_to_end(const std::string& variant, const cudalabs::Point& point, double pcie_bytes,
                                 double flops, cudalabs::KernelResources resources, const UnifiedSupport& support) {
  cudalabs::Measurement m{.variant = variant,
                          .size = point,
                          .work = {.bytes = pcie_bytes, .flops = flops},
                          .expect = cudalabs::Expect::kernels_and_copies,
                          .resources = resources,
                          .ceiling = cudalabs::CeilingKind::none,
                          .clock = cudalabs::Clock::host};
  m.extra["concurrent_managed_access"] = support.concurrent_managed;
  m.extra["pageable_memory_access"] = support.pageable_access;
  return m;
}

// The host's writes, spread over its cores: a managed row rewrites its inputs
// before every one of its ~50 runs (512 MB for the add at n = 2^26), and one
// thread's few GB/s would make that seconds per row.
void fill(std::span<float> to, const std::vector<float>& from) {
  cudalabs::ref::parallel_for(to.size(), [&](std::size_t lo, std::size_t hi) {
    std::copy(from.data() + lo, from.data() + hi, to.data() + lo);
  });
}
void fill_nan(std::span<float> to) {
  cudalabs::ref::parallel_for(to.size(), [&](std::size_t lo, std::size_t hi) {
    std::fill(to.data() + lo, to.data() + hi, nan_value);
  });
}

// ---- every managed run starts from the same state -------------------------------
// Where a program is once its host code has produced the inputs: every page of
// the inputs and of the output on the host, the inputs just written there by
// the host. Untimed, but done before every run of a managed row (about 50: the
// timer stops at its 2 s budget), so its cost is most of the row's wall time.
// The default run at git 501d9d3 passed its 150 s limit on it (README):
//   - read-mostly inputs (managed_advised_* as at 501d9d3, exercise 2 of the
//     README). A timed run leaves a read-only
//     copy of each input on the GPU, and a prefetch to the host keeps it (the
//     host's copy is valid too). The host's writes then invalidated the GPU's
//     copy page by page: one CPU fault per 4 KB page, 65 536 per 256 MB input.
//     managed_advised_add took 79 s of wall time for 1.8 s of timed runs,
//     ~1.6 s per reset (derived: 131 072 faults, ~12 µs each). So the advice
//     is lifted first (cudaMemAdviseUnsetReadMostly collapses the copies in
//     one call) and the lab's own advice (advise_*) applied again once the
//     host has written: the run finds what a program would, the memory advised,
//     the inputs on the host and no copy of them on the GPU.
//   - the inputs' old contents are dead (the host overwrites every element), so
//     they are discarded onto the host rather than carried home: a prefetch
//     home ran at 16.3 GB/s on the H100 (16.42 ms per 268 MB, git 20c1eb4), ~33 ms
//     per reset of the add's a and b.
//   - the host's writes use all its cores (fill).
// RowClock's note says what a row's resets cost now.
struct RowClock {
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
  int resets = 0;
  double home_s = 0, write_s = 0, advice_s = 0;  // the resets' three parts
};

// Seconds since `t`, which moves on to now.
double lap(std::chrono::steady_clock::time_point& t) {
  const auto now = std::chrono::steady_clock::now();
  const double seconds = std::chrono::duration<double>(now - t).count();
  t = now;
  return seconds;
}

struct ManagedInput {
  std::span<float> pages;
  const std::vector<float>& values;
};

// `advise`: the variant's advice (lab23::advise_*), empty when it has none.
void reset_to_host(std::initializer_list<ManagedInput> inputs, std::span<float> output,
                   const std::function<void()>& advise, RowClock& clock, cudaStream_t st) {
  auto t = std::chrono::steady_clock::now();
  for (const auto& in : inputs) {
    if (advise) um::advise(in.pages.data(), in.pages.size_bytes(), cudaMemAdviseUnsetReadMostly, um::host());
    um::discard_and_prefetch(in.pages.data(), in.pages.size_bytes(), um::host(), st);
  }
  um::prefetch(output.data(), output.size_bytes(), um::host(), st);
  CUDALABS_CHECK(cudaStreamSynchronize(st));
  clock.home_s += lap(t);
  for (const auto& in : inputs) fill(in.pages, in.values);
  clock.write_s += lap(t);
  if (advise) {
    advise();
    clock.advice_s += lap(t);
  }
  ++clock.resets;
}

// Where a managed row's wall time went, on the host clock: its timed runs, its
// untimed resets, and the rest (allocation, warm-up and checked runs,
// poisoning, checks, fresh inputs and their reference).
void note_row_time(cudalabs::Session& s, const cudalabs::Record& r, const RowClock& clock) {
  auto t = clock.start;
  const double wall = lap(t);
  const double timed = r.timed ? r.timing.runs * r.timing.mean_ms / 1e3 : 0.0;
  const double resets = clock.home_s + clock.write_s + clock.advice_s;
  char line[512];
  std::snprintf(line, sizeof line,
                "%s: %.1f s of wall time: %d timed runs %.2f s; %d untimed resets %.2f s, %.0f ms each (pages to the "
                "host %.2f s, host writes %.2f s, advice %.2f s); the rest %.1f s (allocation, warm-up and checked "
                "runs, poisoning, checks, fresh inputs)",
                r.variant.c_str(), wall, r.timed ? r.timing.runs : 0, timed, clock.resets, resets,
                clock.resets > 0 ? 1e3 * resets / clock.resets : 0.0, clock.home_s, clock.write_s, clock.advice_s,
                wall - timed - resets);
  s.note(line);
}

// ---- the vector add --------------------------------------------------------------
void measure_add(cudalabs::Session& s, const cudalabs::Point& point, std::int64_t n, const UnifiedSupport& support) {
  const int device = s.device().id;
  const auto count = static_cast<std::size_t>(n);
  const bool specials = s.options().text("inputs") == "specials";
  std::vector<float> a, b;
  std::vector<double> expected;
  // With specials the reference is the double sum rounded to float: exactly
  // what one float addition gives, overflow to ±Inf and NaN included.
  auto make_inputs = [&](std::uint64_t seed) {
    a = value_kinds::uniform_or_specials(specials, count, cudalabs::mix_seed(seed, 1), -100.0f, 100.0f);
    b = value_kinds::uniform_or_specials(specials, count, cudalabs::mix_seed(seed, 2), -100.0f, 100.0f);
    expected = value_kinds::vector_add_reference(a, b, specials);
  };
  make_inputs(s.seed());
  // One float addition rounds once: ≤ 2^-24 relative; where the sum is ±Inf or NaN, the same.
  const cudalabs::Tolerance tol{.abs = 0, .rel = 6e-8};
  auto check_sum = [&](std::span<const float> c) { return cudalabs::check_close_ieee(c, expected, tol); };
  const double pcie_bytes = 12.0 * static_cast<double>(n);  // a and b in, c out
  auto base = [&](const std::string& variant) {
    return end_to_end(variant, point, pcie_bytes, static_cast<double>(n), lab23::add_resources(), support);
  };

  if (s.selected("explicit_add")) {
    cudalabs::PinnedBuffer<float> host_a(count, "pinned a"), host_b(count, "pinned b"), host_c(count, "pinned c");
    cudalabs::DeviceBuffer<float> dev_a(count, "a"), dev_b(count, "b"), dev_c(count, "c");
    auto upload_inputs = [&] {
      fill(host_a.span(), a);
      fill(host_b.span(), b);
    };
    upload_inputs();
    auto m = base("explicit_add");
    m.run = [&](cudaStream_t st) {
      lab23::add_explicit(host_a.data(), host_b.data(), host_c.data(), dev_a.data(), dev_b.data(), dev_c.data(), n, st);
    };
    m.check = [&] { return check_sum(host_c.span()); };
    m.poison = [&](cudaStream_t st) {
      fill_nan(host_c.span());
      dev_a.poison(st);
      dev_b.poison(st);
      dev_c.poison(st);
    };
    m.new_inputs = [&](std::uint64_t seed) {
      make_inputs(seed);
      upload_inputs();
    };
    s.measure(m);
  }

  // Each managed variant gets buffers of its own: advice sticks to the memory.
  auto measure_managed = [&](const std::string& variant, bool advised, auto run) {
    if (!s.selected(variant)) return;
    RowClock clock;
    um::ManagedBuffer<float> ma(count), mb(count), mc(count);
    std::function<void()> advise;
    if (advised) advise = [&] { lab23::advise_add(ma.data(), mb.data(), mc.data(), n, device); };
    if (advise) advise();
    // Untimed, before every run: a and b written by the host, all pages on the host (reset_to_host).
    auto inputs_on_host = [&](cudaStream_t st) {
      reset_to_host({{ma.span(), a}, {mb.span(), b}}, mc.span(), advise, clock, st);
    };
    auto m = base(variant);
    m.run = [&](cudaStream_t st) { run(ma.data(), mb.data(), mc.data(), st); };
    m.check = [&] { return check_sum(mc.span()); };
    m.poison = [&](cudaStream_t) { fill_nan(mc.span()); };
    m.reset = inputs_on_host;
    m.new_inputs = [&](std::uint64_t seed) {
      make_inputs(seed);
      inputs_on_host(s.stream());
    };
    note_row_time(s, s.measure(m), clock);
  };
  measure_managed("managed_faults_add", false, [&](const float* x, const float* y, float* z, cudaStream_t st) {
    lab23::add_managed_faults(x, y, z, n, st);
  });
  if (support.concurrent_managed) {
    measure_managed("managed_prefetch_add", false, [&](const float* x, const float* y, float* z, cudaStream_t st) {
      lab23::add_managed_prefetch(x, y, z, n, device, st);
    });
    measure_managed("managed_advised_add", true, [&](const float* x, const float* y, float* z, cudaStream_t st) {
      lab23::add_managed_advised(x, y, z, n, device, st);
    });
  }

  if (s.selected("zero_copy_add") && support.map_host) {
    um::MappedHostBuffer<float> za(count), zb(count), zc(count);
    auto write_inputs = [&] {
      fill(za.span(), a);
      fill(zb.span(), b);
    };
    write_inputs();
    auto m = base("zero_copy_add");
    m.run = [&](cudaStream_t st) { lab23::add_zero_copy(za.device(), zb.device(), zc.device(), n, st); };
    m.check = [&] { return check_sum(zc.span()); };
    m.poison = [&](cudaStream_t) { fill_nan(zc.span()); };
    m.new_inputs = [&](std::uint64_t seed) {
      make_inputs(seed);
      write_inputs();
    };
    s.measure(m);
  }
  // Faults migrate a, b and c in and c out (16n bytes); prefetch a and b in and
  // c out (12n), or c in too where the driver cannot discard: 4n dead bytes.
  summarize(s, point, "add", pcie_bytes, (um::can_discard() ? 4.0 : 0.0) * static_cast<double>(n));
}

// ---- the heat equation -------------------------------------------------------------
void measure_stencil(cudalabs::Session& s, const cudalabs::Point& point, std::int64_t nx, std::int64_t ny, int steps,
                     const UnifiedSupport& support) {
  const int device = s.device().id;
  const float r = jacobi::diffusion_number;
  const auto count = static_cast<std::size_t>(nx * ny);
  std::vector<float> in;
  std::vector<double> expected;
  auto make_inputs = [&](std::uint64_t seed) {
    in = cudalabs::random_floats(count, cudalabs::mix_seed(seed, 3));
    expected = jacobi::cpu_steps(in, nx, ny, 1, r, steps);
  };
  make_inputs(s.seed());
  const cudalabs::Tolerance tol = jacobi::tolerance(steps);
  const double pcie_bytes = 8.0 * static_cast<double>(count);  // the grid in, the result out
  auto base = [&](const std::string& variant) {
    auto m = end_to_end(variant, point, pcie_bytes, 6.0 * static_cast<double>(count) * steps, lab23::stencil_resources(),
                        support);
    m.extra["steps"] = steps;
    return m;
  };

  if (s.selected("explicit_stencil")) {
    cudalabs::PinnedBuffer<float> host_in(count, "pinned in"), host_out(count, "pinned out");
    cudalabs::DeviceBuffer<float> dev_in(count, "in"), dev_scratch0(count, "scratch0"), dev_scratch1(count, "scratch1"),
        dev_out(count, "out");
    fill(host_in.span(), in);
    auto m = base("explicit_stencil");
    m.run = [&](cudaStream_t st) {
      lab23::stencil_explicit(host_in.data(), host_out.data(), dev_in.data(), dev_scratch0.data(), dev_scratch1.data(),
                              dev_out.data(), nx, ny, r, steps, st);
    };
    m.check = [&] { return cudalabs::check_close(host_out.span(), expected, tol); };
    m.poison = [&](cudaStream_t st) {
      fill_nan(host_out.span());
      dev_in.poison(st);
      dev_scratch0.poison(st);
      dev_scratch1.poison(st);
      dev_out.poison(st);
    };
    m.new_inputs = [&](std::uint64_t seed) {
      make_inputs(seed);
      fill(host_in.span(), in);
    };
    s.measure(m);
  }

  auto measure_managed = [&](const std::string& variant, bool advised, auto run) {
    if (!s.selected(variant)) return;
    RowClock clock;
    um::ManagedBuffer<float> m_in(count), m_scratch0(count), m_scratch1(count), m_out(count);
    std::function<void()> advise;
    if (advised)
      advise = [&] {
        lab23::advise_stencil(m_in.data(), m_scratch0.data(), m_scratch1.data(), m_out.data(), nx, ny, device);
      };
    if (advise) advise();
    // The input and the result start on the host (reset_to_host); the scratch
    // grids are the GPU's own and stay there (after the first run) in every variant.
    auto input_on_host = [&](cudaStream_t st) { reset_to_host({{m_in.span(), in}}, m_out.span(), advise, clock, st); };
    auto m = base(variant);
    m.run = [&](cudaStream_t st) { run(m_in.data(), m_scratch0.data(), m_scratch1.data(), m_out.data(), st); };
    m.check = [&] { return cudalabs::check_close(m_out.span(), expected, tol); };
    // The output on the host; the scratch grids with a device memset, which
    // leaves their pages on the GPU.
    m.poison = [&](cudaStream_t st) {
      fill_nan(m_out.span());
      CUDALABS_CHECK(cudaMemsetAsync(m_scratch0.data(), 0xFF, m_scratch0.bytes(), st));
      CUDALABS_CHECK(cudaMemsetAsync(m_scratch1.data(), 0xFF, m_scratch1.bytes(), st));
    };
    m.reset = input_on_host;
    m.new_inputs = [&](std::uint64_t seed) {
      make_inputs(seed);
      input_on_host(s.stream());
    };
    note_row_time(s, s.measure(m), clock);
  };
  measure_managed("managed_faults_stencil", false,
                  [&](const float* i, float* s0, float* s1, float* o, cudaStream_t st) {
                    lab23::stencil_managed_faults(i, s0, s1, o, nx, ny, r, steps, st);
                  });
  if (support.concurrent_managed) {
    measure_managed("managed_prefetch_stencil", false,
                    [&](const float* i, float* s0, float* s1, float* o, cudaStream_t st) {
                      lab23::stencil_managed_prefetch(i, s0, s1, o, nx, ny, r, steps, device, st);
                    });
    measure_managed("managed_advised_stencil", true,
                    [&](const float* i, float* s0, float* s1, float* o, cudaStream_t st) {
                      lab23::stencil_managed_advised(i, s0, s1, o, nx, ny, r, steps, device, st);
                    });
  }

  if (s.selected("zero_copy_stencil") && support.map_host) {
    um::MappedHostBuffer<float> z_in(count), z_scratch0(count), z_scratch1(count), z_out(count);
    fill(z_in.span(), in);
    auto m = base("zero_copy_stencil");
    m.run = [&](cudaStream_t st) {
      lab23::stencil_zero_copy(z_in.device(), z_scratch0.device(), z_scratch1.device(), z_out.device(), nx, ny, r, steps,
                               st);
    };
    m.check = [&] { return cudalabs::check_close(z_out.span(), expected, tol); };
    m.poison = [&](cudaStream_t) {
      fill_nan(z_out.span());
      fill_nan(z_scratch0.span());
      fill_nan(z_scratch1.span());
    };
    m.new_inputs = [&](std::uint64_t seed) {
      make_inputs(seed);
      fill(z_in.span(), in);
    };
    s.measure(m);
  }
  summarize(s, point, "stencil", pcie_bytes, (um::can_discard() ? 4.0 : 0.0) * static_cast<double>(count));
}

}  // namespace

// ---- main ------------------------------------------------------------------------
int main(int argc, char** argv) {
  std::vector<cudalabs::VariantInfo> variants;
  const std::pair<const char*, const char*> computations[] = {
      {"add", "vector add"}, {"stencil", "heat equation"}};
  const char* const how[] = {"pinned buffers, cudaMemcpyAsync in and out",
                             "cudaMallocManaged; GPU page faults move the pages",
                             "cudaMallocManaged; cudaMemPrefetchAsync moves the inputs in bulk, the output discarded onto the GPU",
                             "prefetch + advice: the output kept on the host and mapped for the GPU",
                             "mapped pinned host memory, read and written in place over PCIe"};
  for (const auto& [suffix, name] : computations)
    for (std::size_t i = 0; i < std::size(strategies); ++i)
      variants.push_back({std::string(strategies[i]) + "_" + suffix, std::string(name) + ": " + how[i]});

  const cudalabs::LabSpec spec{
      .name = "23_unified_memory",
      .title = "unified memory: page faults, prefetch, advice and zero-copy, end to end",
      .about = "A vector add (each byte used once) and 2D heat-equation steps (each byte reused), from inputs on\n"
               "the host to the result on the host: explicit copies, managed memory moved by page faults, by\n"
               "prefetch, with advice, and zero-copy mapped memory. Host-clock times, end to end. --size sets --n;\n"
               "the stencil's grid is --nx × --ny. Refuses sizes whose managed memory would not fit the GPU.",
      .sizes = {{.name = "n",
                 .help = "floats per vector of the add",
                 .full = {std::int64_t{1} << 26},
                 .quick = {1, 1000, 65537},
                 .max = std::int64_t{1} << 34},
                {.name = "nx", .help = "stencil grid points along x", .full = {8192}, .quick = {1, 3, 129}, .max = std::int64_t{1} << 30},
                {.name = "ny",
                 .help = "stencil grid points along y",
                 .full = {8192},
                 .quick = {1, 5, 67},
                 .max = 65535}},  // lab 22's naive kernel: ceil(ny / 8) blocks along the grid's y (at most 65535)
      .size_alias = {"n"},
      .variants = variants,
      .flags = {{.name = "steps", .help = "Jacobi steps of the stencil", .default_value = "10", .min = 1, .max = 100000},
                value_kinds::vector_add_inputs_flag()},
  };
  return cudalabs::run_lab(argc, argv, spec, [](cudalabs::Session& s) {
    const UnifiedSupport support = query_support(s.device().id);
    if (!support.managed)
      throw cudalabs::NoDeviceError(s.device().name + " cannot allocate managed memory on this system "
                                    "(cudaDevAttrManagedMemory = 0).");
    s.note(describe(support));
    if (!support.concurrent_managed)
      s.note("no concurrent managed access: managed_prefetch_* and managed_advised_* skipped (prefetch to a GPU "
             "needs it); managed memory migrates whole allocations at each launch here.");
    if (!support.map_host) s.note("this device cannot map host memory: zero_copy_* skipped.");
    s.note("oversubscription (more managed memory than the GPU has free) is refused, never run: see README.");
    const int steps = static_cast<int>(s.options().integer("steps"));

    if (support.concurrent_managed)
      s.note(um::can_discard()
                 ? "outputs' dead pages: discarded onto the GPU (cudaMemDiscardAndPrefetchBatchAsync), no bytes moved"
                 : "outputs' dead pages: this driver cannot discard managed memory; managed_prefetch_* carry them to "
                   "the GPU (a third more bytes than explicit for the add, twice the inbound bytes for the stencil)");
    s.note(std::string("before each managed run, untimed: the inputs' old pages ") +
           (um::can_discard_to_host() ? "discarded onto the host (no bytes moved)"
                                      : "prefetched home (this driver cannot discard them onto the host)") +
           ", then rewritten by the host; read-mostly copies (exercise 2) collapsed first "
           "(cudaMemAdviseUnsetReadMostly) and the advice applied again after");

    for (const auto& point : s.points()) {
      const std::int64_t n = point.at("n"), nx = point.at("nx"), ny = point.at("ny");
      check_fits(n, nx * ny);
      if (support.concurrent_managed) migration_rates(s, n, s.device().id);
      measure_add(s, point, n, support);
      measure_stencil(s, point, nx, ny, steps, support);
    }
  });
}

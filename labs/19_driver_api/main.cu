// Lab 19 — the driver API: what the runtime API does for you, done by hand.
//
// The course's vector add (lab 01) and tiled matmul (lab 05), compiled by nvcc
// into PTX, cubin and fatbin, embedded in this program, and launched through
// the CUDA driver API alone: cuInit, the device's primary context,
// cuModuleLoadData from memory, cuModuleGetFunction, cuLaunchKernel, driver
// streams and events. The program links libcuda.so.1 and not cudart (a test
// reads its dynamic section and symbols). Every launch is checked at compile
// time: Kernel<void(const float*, const float*, float*, std::int64_t)> knows
// its parameters (kernel.hpp), as the original's Function(Args) did.
//
// For comparison, the same kernels run through the runtime API, which this
// program loads with dlopen at run time (runtime_api.hpp): one process, one
// context, the same memory and stream; only the launch call differs.
//
// Variants:
//   runtime_vector_add       lab 01's kernel through cudaLaunchKernel    (baseline)
//   driver_vector_add        the same kernel through cuLaunchKernel
//   runtime_tiled_matmul     lab 05's kernel through cudaLaunchKernel    (baseline)
//   driver_tiled_matmul      the same kernel through cuLaunchKernel
//   runtime_launches         --launches back-to-back 1-element vector adds,
//                            cudaLaunchKernel, host clock                (baseline)
//   driver_launches          the same through cuLaunchKernel
//   load_ptx                 cuModuleLoadData of the PTX: the driver compiles it
//   load_cubin               ... of the cubin for this GPU's architecture
//   load_fatbin              ... of the fatbin: the driver picks this GPU's SASS
//
// Inputs (--inputs) of the vector add, in every row that runs it: uniform
// values in [-100, 100), or specials: a quarter of them ±Inf, NaNs, ±0,
// subnormals, ±FLT_MAX (labs/shared/value_kinds.hpp), where c = a + b is still
// defined by IEEE 754 (NaN in, NaN out; Inf + -Inf = NaN; FLT_MAX + FLT_MAX =
// +Inf). A kernel that does anything but one float addition per element fails
// there. The matmul's inputs stay uniform: lab 05 draws its other kinds.
//
// Run: make run LAB=19    (or: build/labs/19_driver_api/19_driver_api --quick)
//
// main.cu holds no device code and is compiled as plain C++ (meson.build:
// nvcc -x c++): a .cu compiled as CUDA gets a constructor that registers its
// device code with cudart (__cudaRegisterFatBinary), which would need cudart.
#include <cuda.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include <cudalabs/checker.hpp>
#include <cudalabs/random.hpp>
#include <cudalabs/reference.hpp>
#include <cudalabs/timer.hpp>

#include "driver.hpp"
#include "embedded.hpp"
#include "harness.hpp"
#include "kernel.hpp"
#include "lab_kernels.hpp"
#include "runtime_api.hpp"
#include "value_kinds.hpp"

namespace {

using namespace lab19;
using cudalabs::Measurement;
using cudalabs::Point;

constexpr int default_launches = 1000;
constexpr int quick_launches = 100;

// ---- CPU reference: inputs and what they should give (common/'s ref::, in double) ----

// Vector add inputs (buffers 1, 2 of the seed) of the --inputs kind, their sum
// in double, on the device. With specials the sum is rounded to float: exactly
// what one float addition gives, overflow to ±Inf and NaN included.
struct VectorAddProblem {
  std::int64_t n;
  bool specials;
  DeviceArray<float> a, b, c;
  std::vector<double> expected;

  VectorAddProblem(std::int64_t n_, const cudalabs::Options& o)
      : n(n_), specials(o.text("inputs") == "specials"), a(static_cast<std::size_t>(n), "a"),
        b(static_cast<std::size_t>(n), "b"), c(static_cast<std::size_t>(n), "c") {}
  void make_inputs(std::uint64_t seed) {
    const auto count = static_cast<std::size_t>(n);
    const auto ha = value_kinds::uniform_or_specials(specials, count, cudalabs::mix_seed(seed, 1), -100.0f, 100.0f);
    const auto hb = value_kinds::uniform_or_specials(specials, count, cudalabs::mix_seed(seed, 2), -100.0f, 100.0f);
    expected = value_kinds::vector_add_reference(ha, hb, specials);
    a.upload(ha);
    b.upload(hb);
  }
  // One float addition rounds once: within half an ulp of the exact sum; where
  // the sum is ±Inf or NaN (specials), the same.
  cudalabs::CheckResult check() const {
    return cudalabs::check_close_ieee(c.download(), expected, {.abs = 0, .rel = 6e-8});
  }
};

struct MatmulProblem {
  int dim;
  DeviceArray<float> a, b, c;
  std::vector<double> expected;

  explicit MatmulProblem(int d)
      : dim(d), a(std::size_t(d) * d, "A"), b(std::size_t(d) * d, "B"), c(std::size_t(d) * d, "C") {}
  void make_inputs(std::uint64_t seed) {
    const std::size_t count = std::size_t(dim) * dim;
    const auto ha = cudalabs::random_floats(count, cudalabs::mix_seed(seed, 3));
    const auto hb = cudalabs::random_floats(count, cudalabs::mix_seed(seed, 4));
    expected = cudalabs::ref::matmul(ha, hb, dim, dim, dim);
    a.upload(ha);
    b.upload(hb);
  }
  cudalabs::CheckResult check() const { return cudalabs::check_close(c.download(), expected, cudalabs::dot_tolerance(dim)); }
};

// ---- device code: the embedded images --------------------------------------------

const embedded::File& image(std::string_view name) {
  const embedded::File* f = embedded::find(name);
  if (!f) throw cudalabs::CudaError("no embedded device code named " + std::string(name) + " (a build problem)");
  return *f;
}

// The cubin this GPU can run: SASS runs on its own architecture and on later
// minor versions of the same major one (sm_80 code runs on sm_86), never across
// majors. nullptr when the build made none that fits.
const embedded::File* cubin_for(const cudalabs::DeviceInfo& dev) {
  for (int minor = dev.cc_minor; minor >= 0; --minor)
    if (const embedded::File* f = embedded::find("cubin_sm_" + std::to_string(dev.cc_major) + std::to_string(minor)))
      return f;
  return nullptr;
}

// Both of the lab's kernels from one module: the work that makes a module
// usable. With lazy loading (CUDA_MODULE_LOADING=LAZY, the default since 12.2)
// cuModuleLoadData defers part of it to cuModuleGetFunction, so a load time
// without the lookups would flatter.
struct LabKernels {
  Kernel<VectorAddSignature> vector_add;
  Kernel<TiledMatmulSignature> tiled_matmul;
  explicit LabKernels(const Module& m) : vector_add(m, vector_add_name), tiled_matmul(m, tiled_matmul_name) {}
};

// A module and the lab's kernels from it, and how long that took (host clock).
struct LoadedModule {
  std::optional<Module> module;
  std::optional<LabKernels> kernels;
  double ms = 0;
  void unload() {
    kernels.reset();
    module.reset();
  }
  void load(const embedded::File& f, const std::string& what) {
    unload();
    const auto t0 = std::chrono::steady_clock::now();
    module.emplace(f.data, what.c_str());
    kernels.emplace(*module);
    ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  }
};

// ---- launchers: the same arguments through either API -----------------------------

Dim3 vector_add_grid(std::int64_t n) {
  return {static_cast<unsigned>(std::max<std::int64_t>(1, (n + vector_add_block - 1) / vector_add_block))};
}

template <typename VectorAdd>  // Kernel<VectorAddSignature> or RuntimeKernel<VectorAddSignature>
void launch_vector_add(const VectorAdd& k, const DeviceArray<float>& a, const DeviceArray<float>& b,
                       DeviceArray<float>& c, std::int64_t n, CUstream s) {
  k.launch(vector_add_grid(n), {vector_add_block}, 0, s, a.ptr(), b.ptr(), c.ptr(), n);
}

template <typename TiledMatmul>
void launch_tiled_matmul(const TiledMatmul& k, const DeviceArray<float>& a, const DeviceArray<float>& b,
                         DeviceArray<float>& c, int m, int n, int kk, CUstream s) {
  const unsigned tile = tiled_matmul_tile;
  k.launch({(static_cast<unsigned>(n) + tile - 1) / tile, (static_cast<unsigned>(m) + tile - 1) / tile}, {tile, tile}, 0,
           s, a.ptr(), b.ptr(), c.ptr(), m, n, kk);
}

// ---- the rows: one Measurement per variant and size --------------------------------

// Everything the runtime rows need, or nothing (and why) when no runtime library loads.
struct RuntimeSide {
  std::optional<RuntimeLibrary> library;
  std::optional<RuntimeKernel<VectorAddSignature>> vector_add;
  std::optional<RuntimeKernel<TiledMatmulSignature>> tiled_matmul;
  std::string why_not;
  std::string loaded_from;
};

// The runtime rows are the comparison, not the lesson: when the runtime cannot
// be loaded or cannot load the fatbin, the driver rows still run, and a note
// under the table says why the baseline is missing.
RuntimeSide load_runtime_side(DriverSession& s, const embedded::File& fatbin) {
  RuntimeSide rt;
  try {
    const RuntimeApi* api = RuntimeApi::load(s.device().id, &rt.why_not);
    if (!api) return rt;
    rt.library.emplace(*api, fatbin.data, "fatbin");
    rt.vector_add.emplace(*rt.library, vector_add_name);
    rt.tiled_matmul.emplace(*rt.library, tiled_matmul_name);
    rt.loaded_from = api->path + " (CUDA runtime " + std::to_string(api->version / 1000) + "." +
                     std::to_string(api->version % 1000 / 10) + ")";
  } catch (const cudalabs::CudaError& e) {
    rt.tiled_matmul.reset();
    rt.vector_add.reset();
    rt.library.reset();
    rt.why_not = e.what();
  }
  return rt;
}

void vector_add_rows(DriverSession& s, const LabKernels& k, const RuntimeSide& rt, std::int64_t n) {
  VectorAddProblem p(n, s.options());
  p.make_inputs(s.seed());
  auto row = [&](const std::string& variant, std::function<void(CUstream)> run) {
    if (!s.selected(variant)) return;
    s.measure({.variant = variant,
               .size = {{"n", n}},
               .work = {.bytes = 3.0 * 4 * n, .flops = 1.0 * n},
               .run = std::move(run),
               .check = [&] { return p.check(); },
               .poison = [&](CUstream st) { p.c.poison(st); },
               .new_inputs = [&](std::uint64_t seed) { p.make_inputs(seed); },
               .resources = k.vector_add.resources(vector_add_block)});
  };
  if (rt.vector_add)
    row("runtime_vector_add", [&](CUstream st) { launch_vector_add(*rt.vector_add, p.a, p.b, p.c, n, st); });
  row("driver_vector_add", [&](CUstream st) { launch_vector_add(k.vector_add, p.a, p.b, p.c, n, st); });
}

void tiled_matmul_rows(DriverSession& s, const LabKernels& k, const RuntimeSide& rt, std::int64_t dim64) {
  // Kernel<> takes int for int parameters and refuses an int64 (a narrowing
  // conversion): the cast is written once, here, where the size is known to fit.
  const int dim = static_cast<int>(dim64);
  MatmulProblem p(dim);
  p.make_inputs(s.seed());
  const double d = dim;
  auto row = [&](const std::string& variant, std::function<void(CUstream)> run) {
    if (!s.selected(variant)) return;
    s.measure({.variant = variant,
               .size = {{"m", dim}, {"n", dim}, {"k", dim}},
               .work = {.bytes = 3 * 4 * d * d, .flops = 2 * d * d * d},
               .run = std::move(run),
               .check = [&] { return p.check(); },
               .poison = [&](CUstream st) { p.c.poison(st); },
               .new_inputs = [&](std::uint64_t seed) { p.make_inputs(seed); },
               .resources = k.tiled_matmul.resources(tiled_matmul_tile * tiled_matmul_tile),
               .ceiling = cudalabs::CeilingKind::none});
  };
  if (rt.tiled_matmul)
    row("runtime_tiled_matmul", [&](CUstream st) { launch_tiled_matmul(*rt.tiled_matmul, p.a, p.b, p.c, dim, dim, dim, st); });
  row("driver_tiled_matmul", [&](CUstream st) { launch_tiled_matmul(k.tiled_matmul, p.a, p.b, p.c, dim, dim, dim, st); });
}

// The host time of the launch calls of one run, median over samples; the
// stream drains after each sample, outside the clock.
double enqueue_ms(DriverSession& s, const std::function<void(CUstream)>& run) {
  auto sample = [&] {
    const auto t0 = std::chrono::steady_clock::now();
    run(s.stream());
    const auto t1 = std::chrono::steady_clock::now();
    LAB19_CHECK(cuStreamSynchronize(s.stream()));
    return std::chrono::duration<double, std::milli>(t1 - t0).count();
  };
  for (int i = 0; i < s.options().timer.warmup_runs; ++i) sample();
  return cudalabs::repeat_until_stable(sample, s.options().timer).median_ms;
}

// Launch overhead: `launches` one-element vector adds back to back, host clock
// from the first call until the stream has drained, so the record's time per
// run / launches is the cost of one launch in a stream of them. A 1-block
// kernel does almost no work, so both sides of a launch are in the number:
// the CPU's (the call, the enqueue) and the GPU's (fetch, dispatch, retire).
// extra.enqueue_us_per_launch is the CPU side alone: the time the launch calls
// themselves take, the stream drained outside the clock.
void launch_overhead_rows(DriverSession& s, const LabKernels& k, const RuntimeSide& rt, int launches) {
  VectorAddProblem p(1, s.options());
  p.make_inputs(s.seed());
  auto row = [&](const std::string& variant, std::function<void(CUstream)> launch_one) {
    if (!s.selected(variant)) return;
    auto run = [&, launch_one](CUstream st) {
      for (int i = 0; i < launches; ++i) launch_one(st);
    };
    Measurement m{.variant = variant,
                  .size = {{"launches", launches}},
                  .run = run,
                  .check = [&] { return p.check(); },
                  .poison = [&](CUstream st) { p.c.poison(st); },
                  .new_inputs = [&](std::uint64_t seed) { p.make_inputs(seed); },
                  .ceiling = cudalabs::CeilingKind::none,
                  .clock = cudalabs::Clock::host};
    // (Set apart: GCC 12 warns falsely of an uninitialised member when .extra is a designated initializer here.)
    if (!s.options().check_only) m.extra["enqueue_us_per_launch"] = 1e3 * enqueue_ms(s, run) / launches;
    s.measure(m);
  };
  if (rt.vector_add)
    row("runtime_launches", [&](CUstream st) { launch_vector_add(*rt.vector_add, p.a, p.b, p.c, 1, st); });
  row("driver_launches", [&](CUstream st) { launch_vector_add(k.vector_add, p.a, p.b, p.c, 1, st); });
}

// Module load time of one form: cuModuleLoadData + both kernel lookups (what it
// takes until the kernels can be launched), host clock; the unload happens
// before each run, outside the clock. extra.first_load_ms is the first load
// of this image in the process (`first_ms` when it happened earlier: the
// fatbin is the program's first module, and pays one-time costs too). The
// check launches the loaded vector add: a module that loads but holds no code
// for this GPU fails there. The row is named by that check's vector, not by
// the image's size: a submission's build and the course's embed images of
// different sizes (paths and build flags are in them), and a graded program and
// its judge must name the same checks. The size is in extra.image_bytes.
void load_row(DriverSession& s, const std::string& variant, const embedded::File& f, bool jit_cache,
              double first_ms = 0) {
  if (!s.selected(variant)) return;
  VectorAddProblem p(4097, s.options());
  p.make_inputs(s.seed());
  LoadedModule loaded;
  loaded.load(f, variant);
  if (first_ms == 0) first_ms = loaded.ms;
  CUmoduleLoadingMode mode = CU_MODULE_EAGER_LOADING;
  LAB19_CHECK(cuModuleGetLoadingMode(&mode));
  Measurement m{.variant = variant,
             .size = {{"check_n", p.n}},
             .run = [&](CUstream) { loaded.load(f, variant); },
             .check =
                 [&] {
                   launch_vector_add(loaded.kernels->vector_add, p.a, p.b, p.c, p.n, s.stream());
                   LAB19_CHECK(cuStreamSynchronize(s.stream()));
                   return p.check();
                 },
             .poison = [&](CUstream st) { p.c.poison(st); },
             .reset = [&](CUstream) { loaded.unload(); },
             .new_inputs = [&](std::uint64_t seed) { p.make_inputs(seed); },
             .expect = cudalabs::Expect::host,
             .ceiling = cudalabs::CeilingKind::none,
             .clock = cudalabs::Clock::host};
  m.extra = {{"image_bytes", static_cast<double>(f.size)},
             {"first_load_ms", first_ms},
             {"driver_jit_cache", jit_cache ? 1.0 : 0.0},
             {"lazy_loading", mode == CU_MODULE_LAZY_LOADING ? 1.0 : 0.0}};
  s.measure(m);
}

const cudalabs::Record* find_record(const DriverSession& s, const std::string& variant, const Point& size) {
  for (const auto& r : s.records())
    if (r.variant == variant && r.size == size && r.timed) return &r;
  return nullptr;
}

void overhead_note(DriverSession& s, int launches) {
  const Point size{{"launches", launches}};
  const auto* rt = find_record(s, "runtime_launches", size);
  const auto* drv = find_record(s, "driver_launches", size);
  if (!rt || !drv) return;
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "launch overhead, %d launches back to back: runtime %.2f µs, driver %.2f µs per launch "
                "(driver/runtime %.2f); enqueue alone: runtime %.2f µs, driver %.2f µs",
                launches, 1e3 * rt->timing.median_ms / launches, 1e3 * drv->timing.median_ms / launches,
                drv->timing.median_ms / rt->timing.median_ms, rt->extra.at("enqueue_us_per_launch"),
                drv->extra.at("enqueue_us_per_launch"));
  s.note(buf);
}

}  // namespace

int main(int argc, char** argv) {
  const cudalabs::LabSpec spec{
      .name = "19_driver_api",
      .title = "the CUDA driver API: modules, typed launches, no runtime",
      .about = "Lab 01's vector add and lab 05's tiled matmul, compiled to PTX, cubin and fatbin, embedded, and "
               "launched with the driver API alone (the program links libcuda, not cudart); each compared with the "
               "same kernel launched through the runtime API (loaded at run time with dlopen), plus launch overhead "
               "and module load times. PTX loads are JIT-compiled every time: the lab sets CUDA_CACHE_DISABLE=1 "
               "unless --jit-cache is given or the variable is set.",
      .sizes = {{.name = "n", .help = "vector add: elements", .full = {1 << 20, 1 << 26}, .quick = {1, 4097, 1000003},
                 .max = std::int64_t{1} << 31},
                {.name = "dim", .help = "tiled matmul: m = n = k", .full = {512, 2048}, .quick = {1, 33, 129},
                 .max = 16384}},
      .size_alias = {"n"},
      .variants = {{"runtime_vector_add", "lab 01's vector add through cudaLaunchKernel (runtime API, dlopen)", true},
                   {"driver_vector_add", "the same kernel through cuLaunchKernel"},
                   {"runtime_tiled_matmul", "lab 05's tiled matmul through cudaLaunchKernel", true},
                   {"driver_tiled_matmul", "the same kernel through cuLaunchKernel"},
                   {"runtime_launches", "--launches 1-element vector adds back to back, cudaLaunchKernel", true},
                   {"driver_launches", "the same through cuLaunchKernel"},
                   {"load_ptx", "cuModuleLoadData of the PTX (the driver compiles it)"},
                   {"load_cubin", "cuModuleLoadData of this GPU's cubin"},
                   {"load_fatbin", "cuModuleLoadData of the fatbin (SASS for each built arch + PTX)"}},
      .flags = {{.name = "launches", .help = "launches per launch-overhead sample (--quick: 100)",
                 .default_value = std::to_string(default_launches), .min = 1, .max = 1000000},
                {.name = "jit-cache", .help = "let the driver cache JIT-compiled PTX on disk (~/.nv/ComputeCache): "
                                              "load_ptx then measures cache hits, not compiles",
                 .kind = cudalabs::ExtraFlag::Kind::toggle},
                value_kinds::vector_add_inputs_flag()},
  };
  bool jit_cache = false;
  return run_driver_lab(
      argc, argv, spec,
      [&](const cudalabs::Options& o) {
        // Read by the driver at cuInit. With the cache on, every PTX load after
        // the first (in this run or an earlier one) is a cache hit, not a compile.
        if (!o.toggle("jit-cache") && !std::getenv("CUDA_CACHE_DISABLE")) setenv("CUDA_CACHE_DISABLE", "1", 1);
        const char* disabled = std::getenv("CUDA_CACHE_DISABLE");
        jit_cache = !(disabled && std::string(disabled) == "1");
      },
      [&](DriverSession& s) {
        const embedded::File& fatbin = image("fatbin");
        LoadedModule main_module;
        main_module.load(fatbin, "fatbin");
        const LabKernels& kernels = *main_module.kernels;
        RuntimeSide rt = load_runtime_side(s, fatbin);
        if (rt.why_not.empty()) s.note("runtime rows: " + rt.loaded_from + ", loaded with dlopen");
        else s.note("runtime rows skipped: " + rt.why_not);

        for (const Point& point : s.points()) {
          vector_add_rows(s, kernels, rt, point.at("n"));
          tiled_matmul_rows(s, kernels, rt, point.at("dim"));
        }
        const std::int64_t launches_flag = s.options().integer("launches");
        const int launches = static_cast<int>(s.options().quick && launches_flag == default_launches ? quick_launches
                                                                                                      : launches_flag);
        launch_overhead_rows(s, kernels, rt, launches);
        overhead_note(s, launches);

        load_row(s, "load_ptx", image("ptx"), jit_cache);
        if (const embedded::File* cubin = cubin_for(s.device()))
          load_row(s, "load_cubin", *cubin, jit_cache);
        else if (s.selected("load_cubin"))
          s.note("load_cubin skipped: this build has no cubin for sm_" + std::to_string(s.device().cc_major) +
                 std::to_string(s.device().cc_minor) + " (configure with -Dgpu_arch=" + s.device().cc() + ")");
        load_row(s, "load_fatbin", fatbin, jit_cache, main_module.ms);
      });
}

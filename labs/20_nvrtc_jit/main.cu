// Lab 20 — NVRTC: kernels compiled at run time, for the GPU in hand, with the
// problem's sizes as compile-time constants.
//
// Lab 09 chose template parameters when the course was built; here they are
// chosen when the program runs. softmax_jit.cuh's softmax_kernel<Cols,
// Threads> is compiled by NVRTC for the row length this run meets
// (nvrtcAddNameExpression instantiates the template, nvrtcGetLoweredName names
// the result), as SASS for this GPU's architecture when NVRTC knows it, else
// as PTX the driver finishes. Compiling costs a fraction of a second per
// kernel, so each compiled kernel is kept in a disk cache (jit_cache.hpp),
// keyed by the source, options, architecture and NVRTC and driver versions;
// the next start loads it in milliseconds. The kernels run through the
// runtime API (cudaLibraryLoadData, cudaLibraryGetKernel, cudaLaunchKernel).
//
// Variants:
//   aot_generic          softmax_kernel<0, 256> compiled by nvcc with the
//                        program: row length at run time, 3 passes     (baseline)
//   jit_generic          the same instantiation compiled by NVRTC now: should
//                        match aot_generic (the same compiler underneath)
//   jit_specialised      softmax_kernel<cols, T> compiled by NVRTC for this row
//                        length: the row in registers, 1 read + 1 write
//   aot_lab12_registers  lab 12's register kernel, nvcc, its ladder of 6 shapes
//                        rounded up (cols <= 16384)
//   jit_compile          NVRTC compile time of every kernel this run uses, no
//                        cache (host clock)
//   jit_cached_start     the same kernels read from the disk cache and loaded
//                        (host clock): a warm start
//
// Inputs (--inputs), lab 12's (softmax_inputs, labs/shared/input_kinds.hpp):
// random U[-10, 10); large, rows offset by ±1e4..2e4, where exp overflows or
// underflows unless the row max is subtracted first; masked, -inf entries with
// at least one finite entry per row, where a running max started at -inf meets
// exp(-inf - -inf) = NaN. Softmax is defined for both, and the same tolerance
// holds (softmax_check.hpp): a kernel specialised for one row length must
// still be a stable softmax.
//
// Run: make run LAB=20    (or: build/labs/20_nvrtc_jit/20_nvrtc_jit --quick)
//      20_nvrtc_jit --compile-only --arch sm_90 [--kernel-source FILE]   (no GPU needed)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <cudalabs/lab.hpp>
#include <cudalabs/random.hpp>
#include <cudalabs/reference.hpp>

#include "input_kinds.hpp"
#include "softmax_check.hpp"
#include "value_kinds.hpp"
#include "embedded.hpp"
#include "jit.hpp"
#include "jit_cache.hpp"
#include "kernels.hpp"

namespace {

using namespace lab20;

// ---- CPU reference ----------------------------------------------------------------

// x[rows × cols] of the --inputs kind (lab 12's softmax_inputs: random is
// U[-10, 10) from buffer 1 of the seed), its softmax in double, checked like
// lab 12 (softmax_check.hpp): each output within a relative tolerance that
// grows with sqrt(cols) past 16384.
struct SoftmaxProblem {
  std::int64_t rows;
  int cols;
  InputKind kind;
  cudalabs::DeviceBuffer<float> x, y;
  std::vector<double> expected;

  SoftmaxProblem(std::int64_t r, int c, InputKind k)
      : rows(r), cols(c), kind(k), x(static_cast<std::size_t>(r * c), "x"), y(static_cast<std::size_t>(r * c), "y") {}
  void make_inputs(std::uint64_t seed) {
    const auto host = softmax_inputs(kind, rows, cols, seed);
    expected = cudalabs::ref::softmax_rows(host, rows, cols);
    x.upload(host);
  }
  cudalabs::CheckResult check() const {
    return cudalabs::check_close(y.download(), expected, {.abs = softmax_abs_tolerance, .rel = softmax_rel_tolerance(cols)});
  }
};

// ---- kernels: what this run compiles -------------------------------------------------

// The specialised kernel's block: the fewest threads (at least 128, 4 warps)
// that leave each at most 8 floats of the row, so ~30 registers hold it and 16
// blocks' worth of loads are in flight per SM; at 16384 floats, 1024 threads
// with 16 each. Longer rows are not held in registers (softmax_jit.cuh).
int specialised_threads(int cols) {
  int threads = 128;
  while (threads < 1024 && (cols + threads - 1) / threads > 8) threads *= 2;
  return threads;
}

struct Instance {
  std::string expression;  // "softmax_kernel<1024, 128>"
  int threads;
};

Instance generic_instance() {
  return {"softmax_kernel<0, " + std::to_string(generic_threads) + ">", generic_threads};
}
Instance specialised_instance(int cols) {
  const int threads = specialised_threads(cols);
  return {"softmax_kernel<" + std::to_string(cols) + ", " + std::to_string(threads) + ">", threads};
}

// Every kernel a run with these sizes launches: the generic one, and one per row length.
std::vector<Instance> run_instances(const std::vector<cudalabs::Point>& points) {
  std::vector<Instance> all = {generic_instance()};
  std::set<std::int64_t> seen;
  for (const auto& p : points)
    if (seen.insert(p.at("cols")).second) all.push_back(specialised_instance(static_cast<int>(p.at("cols"))));
  return all;
}

// The kernel source: softmax_jit.cuh as built into the program, or --kernel-source FILE.
KernelSource kernel_source(const cudalabs::Options& o) {
  const std::string path = o.text("kernel-source");
  if (path.empty()) {
    const embedded::File* f = embedded::find("softmax_jit.cuh");
    return {"softmax_jit.cuh", std::string(reinterpret_cast<const char*>(f->data), f->size)};
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw cudalabs::UsageError("--kernel-source " + path + ": cannot read the file.");
  std::ostringstream text;
  text << in.rdbuf();
  return {std::filesystem::path(path).filename().string(), text.str()};
}

struct JitKernel {
  Instance instance;
  JitResult how;  // from the cache or compiled, and how long that took
  LoadedKernel loaded;
};

// ---- launchers ------------------------------------------------------------------------

// Every instantiation has the parameters (const float* x, float* y, int cols);
// cudaLaunchKernel copies each from the pointer in args.
void launch_jit(const JitKernel& k, const float* x, float* y, std::int64_t rows, int cols, cudaStream_t stream) {
  void* args[] = {&x, &y, &cols};
  CUDALABS_CHECK(cudaLaunchKernel(k.loaded.function(), dim3(static_cast<unsigned>(rows)), dim3(k.instance.threads), args,
                                  0, stream));
}

// ---- the run ----------------------------------------------------------------------------

// Everything the JIT rows share: where the code is compiled for, with what, the cache.
struct Jit {
  Target target;
  Toolchain toolchain;
  JitCache cache;
  KernelSource source;
  std::vector<Instance> instances;
  std::map<std::string, JitKernel> kernels;  // by name expression
  double start_ms = 0;                       // all of them, from the cache or compiled, loaded
  std::size_t start_hits = 0;                // how many of them the cache had

  const JitKernel& operator[](const Instance& i) const { return kernels.at(i.expression); }
};

Target target_of_run(const cudalabs::Options& o, const cudalabs::DeviceInfo& dev) {
  const int cc = dev.cc_major * 10 + dev.cc_minor;
  if (o.text("arch").empty()) return target_for(cc);
  const Target t = parse_arch(o.text("arch"));
  if (!runs_on(t, cc))
    throw cudalabs::UsageError("--arch " + o.text("arch") + ": code for " + t.arch + " cannot run on this GPU (compute " +
                               dev.cc() + "). Leave --arch out to compile for it, or add --compile-only to compile "
                               "without running.");
  return t;
}

// What a program that compiles its kernels at run time pays before its first
// launch: every kernel of this run, from the cache where it holds them,
// compiled (and stored) where not, loaded.
Jit start_jit(cudalabs::Session& s) {
  const cudalabs::Options& o = s.options();
  int driver = 0;
  CUDALABS_CHECK(cudaDriverGetVersion(&driver));
  Jit jit{.target = target_of_run(o, s.device()),
          .toolchain = nvrtc_toolchain(driver),
          .cache = JitCache(o.text("cache-dir").empty() ? JitCache::default_dir() : std::filesystem::path(o.text("cache-dir"))),
          .source = kernel_source(o),
          .instances = run_instances(s.points())};
  const auto t0 = std::chrono::steady_clock::now();
  std::set<std::string> misses;
  for (const Instance& i : jit.instances) {
    JitResult how = get_or_compile(jit.cache, jit.source, i.expression, jit.target, jit.toolchain);
    jit.start_hits += how.from_cache ? 1 : 0;
    if (!how.from_cache && how.cache_note != "absent") misses.insert(how.cache_note);
    LoadedKernel loaded(how.code, i.expression);
    jit.kernels.emplace(i.expression, JitKernel{i, std::move(how), std::move(loaded)});
  }
  jit.start_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  char buf[512];
  std::snprintf(buf, sizeof buf, "JIT: %zu kernels for %s (%s), NVRTC %d.%d; %zu from the cache, %zu compiled; ready in %.1f ms",
                jit.instances.size(), jit.target.arch.c_str(), jit.target.cubin ? "SASS" : "PTX, the driver compiles it",
                jit.toolchain.nvrtc_major, jit.toolchain.nvrtc_minor, jit.start_hits,
                jit.instances.size() - jit.start_hits, jit.start_ms);
  s.note(buf);
  s.note("JIT cache: " + (jit.cache.enabled() ? jit.cache.dir().string() : std::string("none (no HOME, no --cache-dir)")));
  for (const auto& m : misses) s.note("JIT cache entry not used: " + m + " (compiled again)");
  return jit;
}

// The host rows' check: the code they produced or loaded is the code the
// kernel rows launched (same kernels, same mangled names), and each image is
// whole. Their GPU behaviour is what the kernel rows checked.
// What same_kernels compares of a compiled kernel, as bytes: its kind, its
// name expressions and mangled names, and whether it has an image.
std::vector<char> code_bytes(const CompiledCode& c) {
  std::string b(1, static_cast<char>(c.kind));
  for (const auto& [expression, mangled] : c.lowered) b += expression + '\0' + mangled + '\0';
  b += c.image.empty() ? "no image" : "image";
  return {b.begin(), b.end()};
}

cudalabs::CheckResult same_kernels(const Jit& jit, const std::vector<CompiledCode>& got) {
  cudalabs::CheckResult r;
  r.count = jit.instances.size();
  for (std::size_t i = 0; i < jit.instances.size(); ++i) {
    // Both sides are the graded program's (its kernel file is compiled at run
    // time): observed whole for a judge (cudalabs/evidence.hpp), which repeats
    // the comparison on them.
    std::vector<char> produced = i < got.size() ? code_bytes(got[i]) : std::vector<char>{};
    std::vector<char> launched = code_bytes(jit[jit.instances[i]].how.code);
    for (const std::string& missing : {cudalabs::observe_vector(produced), cudalabs::observe_vector(launched)})
      if (!missing.empty()) return cudalabs::missing_output(r.count, missing);
    const std::string has_image = "image";
    const bool same = produced == launched && produced.size() >= has_image.size() &&
                      std::equal(has_image.rbegin(), has_image.rend(), produced.rbegin());
    if (!same) {
      ++r.bad;
      r.note = "kernel " + jit.instances[i].expression + " differs from the one the kernel rows ran";
    }
  }
  r.passed = r.bad == 0 && r.count > 0;
  return r;
}

const std::vector<std::string> softmax_kinds = {"random", "large", "masked"};

void kernel_rows(cudalabs::Session& s, const Jit& jit, const cudalabs::Point& point) {
  const std::int64_t rows = point.at("rows");
  const int cols = static_cast<int>(point.at("cols"));
  if (rows * cols > (std::int64_t{1} << 30))
    throw cudalabs::UsageError("rows × cols = " + std::to_string(rows * cols) +
                               " elements; at most 2^30 (4 GiB per matrix). Use fewer --rows or --cols.");
  SoftmaxProblem p(rows, cols, input_kind(s.options(), softmax_kinds));
  p.make_inputs(s.seed());
  auto row = [&](const std::string& variant, std::function<void(cudaStream_t)> run, cudalabs::KernelResources res,
                 std::map<std::string, double> extra) {
    if (!s.selected(variant)) return;
    cudalabs::Measurement m{.variant = variant,
                            .size = point,
                            .work = {.bytes = 2.0 * 4.0 * static_cast<double>(rows * cols)},  // 1 read + 1 write: the minimum
                            .run = std::move(run),
                            .check = [&] { return p.check(); },
                            .poison = [&](cudaStream_t st) { p.y.poison(st); },
                            .new_inputs = [&](std::uint64_t seed) { p.make_inputs(seed); },
                            .resources = res};
    m.extra = std::move(extra);
    s.measure(m);
  };
  auto jit_row = [&](const std::string& variant, const Instance& i) {
    const JitKernel& k = jit[i];
    row(variant, [&](cudaStream_t st) { launch_jit(k, p.x.data(), p.y.data(), rows, cols, st); },
        cudalabs::kernel_resources(k.loaded.function(), i.threads),
        {{"from_cache", k.how.from_cache ? 1.0 : 0.0}, {k.how.from_cache ? "cache_read_ms" : "compile_ms", k.how.ms}});
  };
  row("aot_generic", [&](cudaStream_t st) { softmax_aot_generic(p.x.data(), p.y.data(), rows, cols, st); },
      softmax_aot_generic_resources(), {});
  jit_row("jit_generic", generic_instance());
  jit_row("jit_specialised", specialised_instance(cols));
  if (cols <= lab12_registers_max_cols())
    row("aot_lab12_registers", [&](cudaStream_t st) { softmax_lab12_registers(p.x.data(), p.y.data(), rows, cols, st); },
        softmax_lab12_registers_resources(cols), {});
}

// The compile and cached-start rows time host work, once per run: size = the
// number of kernels the run uses.
void start_rows(cudalabs::Session& s, const Jit& jit) {
  const cudalabs::Point size{{"kernels", static_cast<std::int64_t>(jit.instances.size())}};
  std::vector<CompiledCode> produced;
  auto host_row = [&](const std::string& variant, std::function<void()> work, std::function<void()> reset,
                      std::map<std::string, double> extra) {
    if (!s.selected(variant)) return;
    cudalabs::Measurement m{.variant = variant,
                            .size = size,
                            .run = [work](cudaStream_t) { work(); },
                            .check = [&] { return same_kernels(jit, produced); },
                            .poison = [&](cudaStream_t) { produced.clear(); },
                            .reset = [reset](cudaStream_t) { reset(); },
                            .expect = cudalabs::Expect::host,
                            .ceiling = cudalabs::CeilingKind::none,
                            .clock = cudalabs::Clock::host};
    m.extra = std::move(extra);
    s.measure(m);
  };
  // Cold: NVRTC from source for every kernel, the cache untouched.
  host_row(
      "jit_compile",
      [&] {
        for (const Instance& i : jit.instances) produced.push_back(compile(jit.source, i.expression, jit.target));
      },
      [&] { produced.clear(); }, {});
  if (!s.selected("jit_cached_start")) return;
  for (const Instance& i : jit.instances)
    if (const auto hit = jit.cache.load(cache_key(jit.source, i.expression, jit.target, jit.toolchain)); !hit.code) {
      s.note("jit_cached_start skipped: the cache does not hold " + i.expression + " (" + hit.miss + ")");
      return;
    }
  // Warm: read and check every entry, load every image; the unload of the
  // previous run's kernels happens before the clock starts.
  std::vector<LoadedKernel> loaded;
  host_row(
      "jit_cached_start",
      [&] {
        for (const Instance& i : jit.instances) {
          JitCache::Lookup hit = jit.cache.load(cache_key(jit.source, i.expression, jit.target, jit.toolchain));
          if (!hit.code) throw cudalabs::CudaError("jit_cached_start: the cache lost " + i.expression + ": " + hit.miss);
          loaded.emplace_back(*hit.code, i.expression);
          produced.push_back(std::move(*hit.code));
        }
      },
      [&] {
        loaded.clear();
        produced.clear();
      },
      // The first start of this process, at the top of the run: a fresh
      // process's warm start when the cache had every kernel (process_start_cached = 1).
      {{"process_start_ms", jit.start_ms},
       {"process_start_cached", jit.start_hits == jit.instances.size() ? 1.0 : 0.0}});
}

// --compile-only: compile this run's kernels for --arch and report; no GPU.
// Returns the exit code, or -1 when the flags ask for a normal run (or do not
// parse: run_lab reports that the usual way).
int compile_only(const cudalabs::LabSpec& spec, int argc, char** argv) {
  cudalabs::Parsed parsed;
  try {
    parsed = cudalabs::parse_args(spec, std::span<const char* const>(argv + 1, static_cast<std::size_t>(argc - 1)));
  } catch (const cudalabs::UsageError&) {
    return -1;
  }
  const cudalabs::Options& o = parsed.options;
  if (parsed.action != cudalabs::Action::run || !o.toggle("compile-only")) return -1;
  try {
    if (o.text("arch").empty())
      throw cudalabs::UsageError("--compile-only needs --arch, e.g. --arch sm_90: it compiles without asking a GPU.");
    const Target target = parse_arch(o.text("arch"));
    const KernelSource source = kernel_source(o);
    std::printf("== %s --compile-only: %s for %s\n", spec.name.c_str(), source.file_name.c_str(), target.arch.c_str());
    for (const Instance& i : run_instances(o.points)) {
      std::string log;
      const auto t0 = std::chrono::steady_clock::now();
      const CompiledCode code = compile(source, i.expression, target, &log);
      std::printf("  %-28s -> %s  (%s, %zu bytes, %.0f ms)\n", i.expression.c_str(), code.lowered.at(0).second.c_str(),
                  code.kind == CompiledCode::Kind::cubin ? "cubin" : "PTX", code.image.size(),
                  std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
      if (!log.empty()) std::printf("%s\n", log.c_str());
    }
    return 0;
  } catch (const cudalabs::UsageError& e) {
    std::fprintf(stderr, "%s: error: %s\n", spec.name.c_str(), e.what());
    return 2;
  } catch (const cudalabs::CudaError& e) {
    std::fprintf(stderr, "%s: %s\n", spec.name.c_str(), e.what());
    return 3;
  }
}

}  // namespace

int main(int argc, char** argv) {
  using Flag = cudalabs::ExtraFlag;
  const cudalabs::LabSpec spec{
      .name = "20_nvrtc_jit",
      .title = "NVRTC: kernels compiled at run time, sizes as constants, a disk cache",
      .about = "A row softmax compiled at run time by NVRTC for this GPU, once generic (row length at run time) and "
               "once per row length as a compile-time constant (the row then lives in registers), against the same "
               "source compiled ahead of time by nvcc and lab 12's register kernel. Compiled kernels are cached on "
               "disk ($XDG_CACHE_HOME/cudalabs or ~/.cache/cudalabs); the compile and cached-start rows time both.",
      .sizes = {{.name = "rows", .help = "rows of the matrix", .full = {16384, 4096, 8192}, .quick = {7, 33, 5}},
                {.name = "cols", .help = "row length", .full = {1024, 4096, 1000}, .quick = {1, 1000, 4097},
                 .max = std::int64_t{1} << 30}},
      .size_alias = {"cols"},
      .variants = {{"aot_generic", "softmax_kernel<0, 256> compiled by nvcc: row length at run time, 3 passes", true},
                   {"jit_generic", "the same instantiation compiled by NVRTC at run time"},
                   {"jit_specialised", "softmax_kernel<cols, T> compiled by NVRTC for this row length: row in registers"},
                   {"aot_lab12_registers", "lab 12's register kernel, nvcc, a ladder of 6 shapes (cols <= 16384)"},
                   {"jit_compile", "NVRTC compile time of every kernel of the run, no cache (host clock)"},
                   {"jit_cached_start", "every kernel of the run from the disk cache, loaded (host clock)"}},
      .flags = {{.name = "cache-dir", .help = "the JIT cache folder (default $XDG_CACHE_HOME/cudalabs or ~/.cache/cudalabs)",
                 .kind = Flag::Kind::text},
                {.name = "kernel-source", .help = "compile this file instead of the built-in softmax_jit.cuh",
                 .kind = Flag::Kind::text},
                {.name = "arch", .help = "compile for this architecture (sm_90, compute_90, 9.0) instead of the GPU's",
                 .kind = Flag::Kind::text},
                {.name = "compile-only", .help = "compile the run's kernels for --arch, print them, exit: no GPU needed",
                 .kind = Flag::Kind::toggle},
                value_kinds::inputs_flag_of("random U[-10, 10); large: rows offset by ±1e4..2e4 (exp overflows unless "
                                            "the row max is subtracted); masked: -inf entries, one finite entry at "
                                            "least per row",
                                            softmax_kinds)},
  };
  if (const int code = compile_only(spec, argc, argv); code >= 0) return code;
  return cudalabs::run_lab(argc, argv, spec, [&](cudalabs::Session& s) {
    const Jit jit = start_jit(s);
    for (const cudalabs::Point& point : s.points()) kernel_rows(s, jit, point);
    start_rows(s, jit);
  });
}

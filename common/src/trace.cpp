// GpuWorkTrace: CUPTI's activity API, loaded with dlopen so that the build needs
// only the header and a machine without the library still runs every lab.
#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "cudalabs/monitor.hpp"

#if __has_include(<cupti_activity.h>)
#include <cupti_activity.h>
#include <cupti_runtime_cbid.h>
#define CUDALABS_HAVE_CUPTI 1
#else
#define CUDALABS_HAVE_CUPTI 0
#endif

#ifndef CUDALABS_CUPTI_DIRS
#define CUDALABS_CUPTI_DIRS ""
#endif

namespace cudalabs {

std::string GpuWork::problem() const {
  if (!traced) return "";
  if (copies_allowed && kernels == 0) return "launched no kernel: the result was not computed on the GPU";
  if (early > 0)
    return "did not wait for the stream it was given (" + early_what +
           (early > 1 ? " and " + std::to_string(early - 1) + " more" : "") +
           "): fork from it with an event (cudaEventRecord on the given stream, cudaStreamWaitEvent on yours), or "
           "use cudaMemcpyAsync on it";
  if (copies_allowed || copies_only) return "";
  if (copies_to_host > 0 && copies_to_device > 0)
    return "copied data to the host (" + std::to_string(copies_to_host) + " copies) and back (" +
           std::to_string(copies_to_device) + ") during its run: the answer must be computed on the GPU";
  if (copies_to_host > 0)
    return "copied data to the host during its run (" + std::to_string(copies_to_host) +
           " copies): a launcher enqueues GPU work only";
  if (host_syncs > 0)
    return "waited for the GPU inside its launcher (" + std::to_string(host_syncs) +
           " host synchronisations): a launcher only enqueues work";
  if (kernels == 0) return "launched no kernel: the result was not computed by this run";
  if (max_kernels >= 0 && kernels > max_kernels)
    return "launched " + std::to_string(kernels) + " kernels where the variant's lesson is the work in at most " +
           std::to_string(max_kernels) + (max_kernels == 1 ? " launch" : " launches");
  if (expect_cooperative >= 0 && cooperative != expect_cooperative)
    return "made " + std::to_string(cooperative) + " cooperative launches where the variant is " +
           std::to_string(expect_cooperative) + " (cudaLaunchCooperativeKernel: the lesson is the grid-wide sync)";
  if (unjoined > 0)
    return "left work running after the stream it was given had finished (" + unjoined_what + (unjoined > 1 ? " and " + std::to_string(unjoined - 1) + " more" : "") +
           "): it was put on another stream (the default stream, or one of the launcher's own) and never joined "
           "back. Launch on the stream you are given, or make it wait for the side stream (cudaEventRecord, "
           "cudaStreamWaitEvent) before returning";
  return "";
}

void GpuWork::note_launch(const char* kernel, long long blocks, int block_threads) {
  const std::string name = kernel ? kernel : "?";
  for (Launch& l : launches)
    if (l.kernel == name) {
      if (blocks > l.blocks || (blocks == l.blocks && block_threads > l.block_threads)) {
        l.blocks = blocks;
        l.block_threads = block_threads;
      }
      return;
    }
  launches.push_back({name, blocks, block_threads});
}

std::vector<Launch> GpuWork::largest_launches(std::size_t at_most) const {
  std::vector<Launch> sorted = launches;
  std::sort(sorted.begin(), sorted.end(), [](const Launch& a, const Launch& b) {
    return a.blocks != b.blocks ? a.blocks > b.blocks : a.kernel < b.kernel;
  });
  if (sorted.size() > at_most) sorted.resize(at_most);
  return sorted;
}

std::string GpuWork::summary() const {
  if (!traced) return "not traced: " + not_traced_why;
  std::string s = std::to_string(kernels) + (kernels == 1 ? " kernel" : " kernels");
  if (cooperative > 0) s += " (" + std::to_string(cooperative) + " cooperative)";
  if (copies_to_device + copies_to_host == 0) return s + ", no host copies";
  return s + ", " + std::to_string(copies_to_device) + " copies to the device, " + std::to_string(copies_to_host) +
         " to the host";
}

// Work on another GPU than the one it is compared with is timed by that GPU's
// clock, which CUPTI maps onto one timeline only to within microseconds: work
// ordered properly after the other GPU's can seem to overlap it a little.
// Work not ordered at all overlaps it by a whole kernel or copy, or by the
// hold's millisecond (Recorder::traced_run), far longer.
constexpr std::uint64_t other_gpu_clock_slack_ns = 50'000;
// On one GPU, a kernel's end and the next copy's start are stamped by
// different engines (SMs, copy engines): work properly ordered after the hold
// may seem to start a few microseconds before it ended. 10 us is 1% of the
// hold's millisecond, by which work that did not wait starts early.
constexpr std::uint64_t same_gpu_clock_slack_ns = 10'000;

void judge_waited_for_given_stream(GpuWork& w, const TracedWork& hold, const std::vector<TracedWork>& run) {
  w.given_stream_held = true;
  for (const TracedWork& a : run) {
    const std::uint64_t slack = a.device == hold.device ? same_gpu_clock_slack_ns : other_gpu_clock_slack_ns;
    if (a.start + slack >= hold.end) continue;
    if (w.early++ == 0)
      w.early_what = a.what + (a.device == hold.device ? "" : " on GPU " + std::to_string(a.device)) + ", started " +
                     std::to_string((hold.end - a.start) / 1000) + " us before the stream's earlier work had finished";
  }
}

RunKernels split_hold(GpuWork& w, const std::vector<TracedKernel>& kernels, const std::vector<TracedLaunch>& launches,
                      std::uint64_t traced_from, std::uint64_t holds_launched) {
  std::vector<std::uint32_t> hold_launches;
  for (const TracedLaunch& l : launches)
    if (l.start >= traced_from && l.start < holds_launched) hold_launches.push_back(l.correlation);
  RunKernels split;
  for (const TracedKernel& k : kernels) {
    if (std::find(hold_launches.begin(), hold_launches.end(), k.correlation) != hold_launches.end()) {
      if (!split.hold_seen || k.end > split.hold.end) split.hold = {"the hold", k.start, k.end, k.device};
      split.hold_seen = true;
      continue;
    }
    ++w.kernels;
    w.note_launch(k.name.c_str(), k.blocks, k.block_threads);
    if (k.cooperative) ++w.cooperative;
    split.run.push_back({"kernel " + k.name, k.start, k.end, k.device});
  }
  return split;
}

#if CUDALABS_HAVE_CUPTI
namespace {

struct Cupti {
  decltype(&cuptiActivityRegisterCallbacks) register_callbacks = nullptr;
  decltype(&cuptiActivityEnable) enable = nullptr;
  decltype(&cuptiActivityDisable) disable = nullptr;
  decltype(&cuptiActivityFlushAll) flush_all = nullptr;
  decltype(&cuptiGetTimestamp) timestamp = nullptr;
  decltype(&cuptiActivityGetNextRecord) next_record = nullptr;
  decltype(&cuptiGetResultString) result_string = nullptr;
  bool ok = false;
  std::string why_not;
};

// Counts of the current trace; CUPTI delivers buffers on its own thread.
std::mutex g_mutex;
GpuWork g_work;
// CUPTI timestamps (the clock of its API records): API calls that start after
// g_api_until are the harness's own, not the run's; the first cudaMemsetAsync
// that starts after g_marker_after is the stream contract's marker. Times, not
// flushes: a forced flush may wait for the device, and so for the hold.
std::uint64_t g_api_until = ~0ull, g_marker_after = ~0ull;

// The fields every version of CUpti_ActivityMemcpy (5 in CUDA 12, 6 in 13) starts with.
struct MemcpyPrefix {
  CUpti_ActivityKind kind;
  std::uint8_t copy_kind, src_kind, dst_kind, flags;
  std::uint64_t bytes;
  std::uint64_t start, end;
  std::uint32_t device, context, stream, correlation;
};

// ... every CUpti_ActivityMemset (4 in CUDA 12 and 13).
struct MemsetPrefix {
  CUpti_ActivityKind kind;
  std::uint32_t value;
  std::uint64_t bytes;
  std::uint64_t start, end;
  std::uint32_t device, context, stream, correlation;
};

// ... every CUpti_ActivityKernel from 4 (CUDA 9) to 10 (CUDA 13).
struct KernelPrefix {
  CUpti_ActivityKind kind;
  std::uint8_t cache_config, shared_memory_config;
  std::uint16_t registers_per_thread;
  std::int32_t partitioned_requested, partitioned_executed;
  std::uint64_t start, end, completed;
  std::uint32_t device, context, stream;
  std::int32_t grid[3], block[3], static_shared, dynamic_shared;
  std::uint32_t local_per_thread, local_total, correlation;
  std::int64_t grid_id;
  const char* name;
  void* reserved0;
  std::uint64_t queued, submitted;
  std::uint8_t launch_type;  // CUPTI_ACTIVITY_LAUNCH_TYPE_*: regular, cooperative ...
};

// What ran on the GPU during a trace, for the stream contract.
struct Activity {
  std::string what;  // "kernel foo", "a copy to the host", "a memset"
  std::uint64_t start = 0, end = 0;
  std::uint32_t correlation = 0;
  bool memset_async_marker_candidate = false;
  std::uint32_t device = 0;
};
std::vector<Activity> g_activities;
// Kernels and kernel launch calls, matched at stop(): a kernel's record and its
// launch's come in buffers of their own, in either order. The launches that
// started in [g_traced_from, g_holds_launched) are the harness's holds.
std::vector<TracedKernel> g_kernels;
std::vector<TracedLaunch> g_launches;
std::uint64_t g_traced_from = 0, g_holds_launched = 0;
// Whether the hold was on the stream the run was given (not on stream 0).
bool g_hold_on_given_stream = false;
bool g_marker_armed = false;
std::uint32_t g_marker_correlation = 0;

void CUPTIAPI buffer_requested(std::uint8_t** buffer, std::size_t* size, std::size_t* max_records) {
  constexpr std::size_t bytes = 1 << 20;
  *buffer = static_cast<std::uint8_t*>(std::aligned_alloc(8, bytes));
  *size = bytes;
  *max_records = 0;
}

bool is_host_sync(CUpti_CallbackId id) {
  switch (id) {
    case CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaThreadSynchronize_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaEventSynchronize_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2D_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyToSymbol_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyFromSymbol_v3020:
      return true;
    default:
      return false;
  }
}

// The runtime calls that launch a kernel: <<<>>> (the hold's launch) calls
// cudaLaunchKernel when built by nvcc 12 and __cudaLaunchKernel by nvcc 13 (the
// stub that nvcc -cuda writes); cudaLaunchKernelEx calls cudaLaunchKernelExC;
// each has a _ptsz twin under --default-stream per-thread.
bool is_kernel_launch(CUpti_CallbackId id) {
  switch (id) {
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060:
#if CUPTI_API_VERSION >= 130000
    case CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000:
    case CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000:
#endif
      return true;
    default:
      return false;
  }
}

const Cupti& cupti();

void CUPTIAPI buffer_completed(CUcontext, std::uint32_t, std::uint8_t* buffer, std::size_t, std::size_t valid) {
  CUpti_Activity* record = nullptr;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    while (cupti().next_record(buffer, valid, &record) == CUPTI_SUCCESS) {
      switch (record->kind) {
        case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
        case CUPTI_ACTIVITY_KIND_KERNEL: {
          const auto* k = reinterpret_cast<const KernelPrefix*>(record);
          g_kernels.push_back({k->name ? k->name : "?", static_cast<long long>(k->grid[0]) * k->grid[1] * k->grid[2],
                               k->block[0] * k->block[1] * k->block[2],
                               k->launch_type == CUPTI_ACTIVITY_LAUNCH_TYPE_COOPERATIVE_SINGLE_DEVICE ||
                                   k->launch_type == CUPTI_ACTIVITY_LAUNCH_TYPE_COOPERATIVE_MULTI_DEVICE,
                               k->start, k->end, k->device, k->correlation});
          break;
        }
        case CUPTI_ACTIVITY_KIND_MEMSET: {
          const auto* m = reinterpret_cast<const MemsetPrefix*>(record);
          g_activities.push_back({"a memset of " + std::to_string(m->bytes) + " bytes", m->start, m->end, m->correlation, true,
                                  m->device});
          break;
        }
        case CUPTI_ACTIVITY_KIND_MEMCPY: {
          const auto* m = reinterpret_cast<const MemcpyPrefix*>(record);
          if (m->copy_kind == CUPTI_ACTIVITY_MEMCPY_KIND_DTOH || m->copy_kind == CUPTI_ACTIVITY_MEMCPY_KIND_ATOH) {
            ++g_work.copies_to_host;
            g_work.bytes_to_host += static_cast<double>(m->bytes);
          } else if (m->copy_kind == CUPTI_ACTIVITY_MEMCPY_KIND_HTOD || m->copy_kind == CUPTI_ACTIVITY_MEMCPY_KIND_HTOA) {
            ++g_work.copies_to_device;
            g_work.bytes_to_device += static_cast<double>(m->bytes);
          }
          g_activities.push_back({"a copy of " + std::to_string(m->bytes) + " bytes", m->start, m->end, m->correlation, false,
                                  m->device});
          break;
        }
        case CUPTI_ACTIVITY_KIND_RUNTIME: {
          const auto* api = reinterpret_cast<const CUpti_ActivityAPI*>(record);
          if (api->start < g_api_until && is_host_sync(api->cbid)) ++g_work.host_syncs;
          if (is_kernel_launch(api->cbid)) g_launches.push_back({api->start, api->correlationId});
          // The first cudaMemsetAsync after mark_end() is the harness's marker.
          if (g_marker_armed && g_marker_correlation == 0 && api->start >= g_marker_after &&
              (api->cbid == CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020 ||
               api->cbid == CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_ptsz_v7000))
            g_marker_correlation = api->correlationId;
          break;
        }
        default:
          break;
      }
    }
  }
  std::free(buffer);
}

Cupti load_cupti() {
  Cupti c;
  if (const char* env = std::getenv("CUDALABS_TRACE"); env && std::strcmp(env, "0") == 0) {
    c.why_not = "CUDALABS_TRACE=0";
    return c;
  }
  void* lib = nullptr;
  std::vector<std::string> names = {"libcupti.so", "libcupti.so.13", "libcupti.so.12"};
  std::string dirs = CUDALABS_CUPTI_DIRS;  // from the build: the toolkit's library folders
  for (std::size_t at = 0; at < dirs.size();) {
    std::size_t end = dirs.find(':', at);
    if (end == std::string::npos) end = dirs.size();
    if (end > at) names.push_back(dirs.substr(at, end - at) + "/libcupti.so");
    at = end + 1;
  }
  for (const auto& n : names)
    if ((lib = dlopen(n.c_str(), RTLD_NOW | RTLD_LOCAL)) != nullptr) break;
  if (!lib) {
    c.why_not = "CUPTI library not found (libcupti.so, from the CUDA Toolkit)";
    return c;
  }
  auto sym = [&](auto& fn, const char* name) { fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, name)); return fn != nullptr; };
  if (!(sym(c.register_callbacks, "cuptiActivityRegisterCallbacks") && sym(c.enable, "cuptiActivityEnable") &&
        sym(c.disable, "cuptiActivityDisable") && sym(c.flush_all, "cuptiActivityFlushAll") && sym(c.timestamp, "cuptiGetTimestamp") &&
        sym(c.next_record, "cuptiActivityGetNextRecord") && sym(c.result_string, "cuptiGetResultString"))) {
    c.why_not = "CUPTI library lacks the activity API";
    return c;
  }
  CUptiResult r = c.register_callbacks(buffer_requested, buffer_completed);
  if (r != CUPTI_SUCCESS) {
    const char* text = nullptr;
    c.result_string(r, &text);
    c.why_not = std::string("CUPTI refused (") + (text ? text : "?") + "): a profiler or sanitizer may hold it";
    return c;
  }
  c.ok = true;
  return c;
}

const Cupti& cupti() {
  static const Cupti c = load_cupti();
  return c;
}

constexpr CUpti_ActivityKind traced_kinds[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
                                               CUPTI_ACTIVITY_KIND_MEMSET, CUPTI_ACTIVITY_KIND_RUNTIME};

// The stream contract: everything the run issued ended before the marker on
// its stream started. Called with g_mutex held, after the last flush.
void judge_stream_contract(GpuWork& w) {
  const Activity* marker = nullptr;
  for (const auto& a : g_activities)
    if (a.memset_async_marker_candidate && g_marker_correlation != 0 && a.correlation == g_marker_correlation) marker = &a;
  if (!marker) return;
  w.end_marked = true;
  for (const auto& a : g_activities) {
    const std::uint64_t slack = a.device == marker->device ? 0 : other_gpu_clock_slack_ns;
    if (&a == marker || a.end <= marker->start + slack) continue;
    if (w.unjoined++ == 0)
      w.unjoined_what = a.what + (a.device == marker->device ? "" : " on GPU " + std::to_string(a.device)) + ", ending " +
                        std::to_string((a.end - marker->start) / 1000) + " us after the stream's end";
  }
}

// Sets one of the trace's times (g_api_until ...) to CUPTI's clock now.
void stamp_now(std::uint64_t& at) {
  std::uint64_t now = 0;
  cupti().timestamp(&now);
  std::lock_guard<std::mutex> lock(g_mutex);
  at = now;
}

}  // namespace

bool GpuWorkTrace::available(std::string* why_not) {
  const Cupti& c = cupti();
  if (!c.ok && why_not) *why_not = c.why_not;
  return c.ok;
}

void GpuWorkTrace::start() {
  if (!available()) return;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_work = GpuWork{};
    g_api_until = g_marker_after = ~0ull;
    g_activities.clear();
    g_kernels.clear();
    g_launches.clear();
    cupti().timestamp(&g_traced_from);
    g_holds_launched = 0;  // until holds_launched(): no launch is a hold
    g_hold_on_given_stream = false;
    g_marker_armed = false;
    g_marker_correlation = 0;
  }
  active_ = true;
  for (auto kind : traced_kinds) {
    if (cupti().enable(kind) != CUPTI_SUCCESS) {
      for (auto k : traced_kinds) cupti().disable(k);
      active_ = false;
      return;
    }
  }
}

void GpuWorkTrace::stop_api() {
  if (active_) stamp_now(g_api_until);
}

void GpuWorkTrace::mark_end() {
  if (!active_) return;
  stamp_now(g_marker_after);
  std::lock_guard<std::mutex> lock(g_mutex);
  g_marker_armed = true;
}

void GpuWorkTrace::hold_on_given_stream() {
  if (!active_) return;
  std::lock_guard<std::mutex> lock(g_mutex);
  g_hold_on_given_stream = true;
}

void GpuWorkTrace::holds_launched() {
  if (active_) stamp_now(g_holds_launched);
}

GpuWork GpuWorkTrace::stop() {
  std::string why;
  if (!active_) {
    GpuWork w;
    w.not_traced_why = available(&why) ? "CUPTI could not enable activity tracing" : why;
    return w;
  }
  cupti().flush_all(1);  // CUPTI_ACTIVITY_FLAG_FLUSH_FORCED: also records still in flight
  for (auto kind : traced_kinds) cupti().disable(kind);
  active_ = false;
  std::lock_guard<std::mutex> lock(g_mutex);
  GpuWork w = g_work;
  w.traced = true;
  const RunKernels kernels = split_hold(w, g_kernels, g_launches, g_traced_from, g_holds_launched);
  for (const TracedWork& k : kernels.run) g_activities.push_back({k.what, k.start, k.end, 0, false, k.device});
  judge_stream_contract(w);
  if (g_hold_on_given_stream && kernels.hold_seen) {
    std::vector<TracedWork> run;
    run.reserve(g_activities.size());
    for (const auto& a : g_activities) run.push_back({a.what, a.start, a.end, a.device});
    judge_waited_for_given_stream(w, kernels.hold, run);
  }
  g_activities.clear();
  g_kernels.clear();
  g_launches.clear();
  g_marker_armed = false;
  return w;
}

#else  // no CUPTI header at build time

bool GpuWorkTrace::available(std::string* why_not) {
  if (why_not) *why_not = "built without CUPTI (cupti_activity.h was not found)";
  return false;
}
void GpuWorkTrace::start() {}
void GpuWorkTrace::stop_api() {}
void GpuWorkTrace::mark_end() {}
void GpuWorkTrace::hold_on_given_stream() {}
void GpuWorkTrace::holds_launched() {}
GpuWork GpuWorkTrace::stop() {
  GpuWork w;
  available(&w.not_traced_why);
  return w;
}

#endif

}  // namespace cudalabs

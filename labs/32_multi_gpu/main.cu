// Lab 32 — several GPUs: peer access, copies between GPUs, a split SGEMM and
// an all-reduce of your own against NCCL's.
//
// One process drives every visible GPU (or --gpus N of them, the --device one
// first). Each GPU gets its own stream and events; every multi-GPU run forks
// from the session's stream to those streams and joins back, so the session's
// two CUDA events bracket the work of all the GPUs (the clock is the session
// GPU's; nothing needs a host clock). Host threads: one thread switching
// devices (cudaSetDevice; the driver's cuCtxSetCurrent on each primary context
// for the split SGEMM, as the original did), and one thread per GPU.
//
// Variants (bytes = one GPU's buffer; pairs are ordered: from GPU src to GPU dst):
//   peer_copy            cudaMemcpyPeerAsync, one direction, every ordered pair: the copy engines  [baseline]
//   peer_copy_bidir      both directions of a pair at once
//   staged_copy          through pinned host memory: D2H on src, H2D on dst, 32 chunks pipelined on two streams
//   peer_read_kernel     peer_kernels.cuh on dst, loading src's memory through UVA (pull)
//   peer_write_kernel    the same kernel on src, storing into dst's memory (push)
//   nccl_allreduce       ncclAllReduce, float sum, one stream per GPU  [baseline; when built with NCCL]
//   allreduce_ring       allreduce.cuh: reduce-scatter (peer-reading kernels), all-gather (copy engines)
//   allreduce_oneshot    allreduce.cuh: every GPU reads every other GPU's input and sums
//   cublas_1gpu          C = A·B with cuBLAS on one GPU (the --device one)  [baseline]
//   sgemm_split_switch   split_sgemm.cuh: rows of C split across the GPUs, one thread switching contexts
//   sgemm_split_threads  split_sgemm.cuh: the same split, one host thread per GPU
//
// All-reduce rows report NCCL's two rates (nccl-tests): algbw = bytes / time,
// the GB/s column; busbw = algbw · 2(G−1)/G, under the table.
//
// With one GPU only cublas_1gpu runs; the rest say once that they need two.
// NVLink SHARP multicast (NVLS) stays off: NCCL_NVLS_ENABLE=0 is set before
// NCCL starts, and nothing here creates a multicast object.
//
// Run: make run LAB=32    (or: build/labs/32_multi_gpu/32_multi_gpu --quick)
#include <cuda.h>  // the driver API's types; its functions come through the runtime's entry points
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <cudalabs/blas.hpp>
#include <cudalabs/lab.hpp>
#include <cudalabs/random.hpp>
#include <cudalabs/reference.hpp>

#include "matmul_lab.cuh"  // the course's rows_to_check / reference_rows: cuBLAS checked on CPU rows
#include "kernels.hpp"

#if CUDALABS_HAVE_NCCL
#include <nccl.h>
#endif

namespace {

using cudalabs::DeviceBuffer;
using cudalabs::Point;

constexpr std::int64_t MiB = std::int64_t{1} << 20;
constexpr std::int64_t GiB = std::int64_t{1} << 30;
// The staged copy's pipeline: up to 32 chunks of at least 64 KiB. A chunk's
// H2D overlaps the next one's D2H, so the pipeline costs one chunk (1/32 of
// the time) beyond the slower direction.
constexpr int staged_chunks = 32;
constexpr std::int64_t staged_min_chunk = 64 * 1024;
// SGEMM inputs are integers in [-4, 4] stored as floats: every product and
// partial sum is an integer below 16·k <= 2^19 < 2^24, exact in float in any
// order, so one GPU's C and a split C must agree bit for bit.
constexpr int gemm_max_dim = 32768;
// Transfer inputs: integers in [-1024, 1024], so a sum over up to 8 GPUs is
// exact in float (|sum| <= 8192 < 2^24) and every all-reduce must give the
// exact answer, whatever order it adds in.
constexpr int transfer_value_range = 1024;

template <typename... Args>
std::string format_line(const char* format, Args... args) {
  const int length = std::snprintf(nullptr, 0, format, args...);
  std::string out(static_cast<std::size_t>(std::max(length, 0)), '\0');
  std::snprintf(out.data(), out.size() + 1, format, args...);
  return out;
}

// ---- devices and contexts -----------------------------------------------------

int current_device() {
  int device = 0;
  CUDALABS_CHECK(cudaGetDevice(&device));
  return device;
}

// Makes a device current and puts the previous one back when it goes out of
// scope. Never throws on the way out: it may run while an error unwinds.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device) { enter(device); }
  ~DeviceGuard() { leave(); }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;
  void enter(int device) {
    const int previous = current_device();
    CUDALABS_CHECK(cudaSetDevice(device));
    saved_ = previous;
  }
  // For a destructor's body: no error may escape from there.
  void enter_quietly(int device) noexcept {
    if (cudaGetDevice(&saved_) != cudaSuccess) saved_ = -1;
    else cudaSetDevice(device);
  }
  void leave() noexcept {
    if (saved_ >= 0) cudaSetDevice(saved_);
    saved_ = -1;
  }

 private:
  int saved_ = -1;
};

// The driver API through the runtime's entry point: the runtime has loaded the
// driver library already, so the program needs no libcuda at link time.
template <typename Function>
Function driver_function(const char* name) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
#if CUDART_VERSION >= 12050
  CUDALABS_CHECK(cudaGetDriverEntryPointByVersion(name, &fn, 12000, cudaEnableDefault, &found));
#else
  CUDALABS_CHECK(cudaGetDriverEntryPoint(name, &fn, cudaEnableDefault, &found));
#endif
  if (found != cudaDriverEntryPointSuccess || fn == nullptr)
    throw cudalabs::CudaError(std::string("the driver has no ") + name + " (cudaGetDriverEntryPoint)");
  return reinterpret_cast<Function>(fn);
}

// The few driver functions the lab calls, looked up once.
struct DriverApi {
  decltype(&cuGetErrorName) error_name = driver_function<decltype(&cuGetErrorName)>("cuGetErrorName");
  decltype(&cuDeviceGet) device_get = driver_function<decltype(&cuDeviceGet)>("cuDeviceGet");
  decltype(&cuDevicePrimaryCtxRetain) retain = driver_function<decltype(&cuDevicePrimaryCtxRetain)>("cuDevicePrimaryCtxRetain");
  decltype(&cuDevicePrimaryCtxRelease) release = driver_function<decltype(&cuDevicePrimaryCtxRelease)>("cuDevicePrimaryCtxRelease");
  decltype(&cuCtxSetCurrent) set_current = driver_function<decltype(&cuCtxSetCurrent)>("cuCtxSetCurrent");
};

const DriverApi& driver() {
  static const DriverApi api;
  return api;
}

void check_driver(CUresult result, const char* call) {
  if (result == CUDA_SUCCESS) return;
  const char* name = nullptr;
  if (driver().error_name(result, &name) != CUDA_SUCCESS) name = "unknown CUresult";
  throw cudalabs::CudaError(std::string(call) + " failed: " + name + " (" + std::to_string(static_cast<int>(result)) + ")");
}

// A device's primary context, the one the runtime uses for it, retained for as
// long as this object lives (the runtime holds its own reference too).
class PrimaryContext {
 public:
  explicit PrimaryContext(int ordinal) {
    check_driver(driver().device_get(&device_, ordinal), "cuDeviceGet");
    check_driver(driver().retain(&context_, device_), "cuDevicePrimaryCtxRetain");
  }
  ~PrimaryContext() {
    if (context_) driver().release(device_);  // the table exists: the constructor made it
  }
  PrimaryContext(const PrimaryContext&) = delete;
  PrimaryContext& operator=(const PrimaryContext&) = delete;
  CUcontext get() const { return context_; }

 private:
  CUdevice device_ = 0;
  CUcontext context_ = nullptr;
};

// Everything one GPU owns. A stream, an event or a buffer belongs to the device
// that was current when it was made: all are made with this GPU current, and
// destroyed with it current.
class Gpu {
  DeviceGuard current_;  // first member: current while the others are made, and again while they are destroyed

 public:
  Gpu(int device, int step_events) : current_(device), id(device), context(device), steps(step_events) {
    CUDALABS_CHECK(cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, device));
    current_.leave();
  }
  ~Gpu() { current_.enter_quietly(id); }
  Gpu(const Gpu&) = delete;
  Gpu& operator=(const Gpu&) = delete;

  const int id;
  int sm_count = 0;
  PrimaryContext context;
  cudalabs::Stream stream;
  cudalabs::Event joined;                 // this GPU's last work of a fan-out
  std::vector<cudalabs::Event> steps;     // the ring's steps between GPUs, the staged copy's chunks
  DeviceBuffer<float> in, out;            // copies and all-reduces: this GPU's input and output
  DeviceBuffer<float> a, b, c;            // split SGEMM: its rows of A, a replica of B, its rows of C

  // Replaces `buffer` with one of `count` floats on this GPU (0: frees it).
  void reallocate(DeviceBuffer<float>& buffer, std::size_t count, const char* what) {
    DeviceGuard on(id);
    buffer = DeviceBuffer<float>();
    buffer = DeviceBuffer<float>(count, what);
  }
  const cudalabs::Cublas& blas() {
    if (!blas_) {
      DeviceGuard on(id);
      blas_.emplace();
    }
    return *blas_;
  }
  // Fills `buffer` with 0xFF bytes (NaN) and waits: the next run starts with
  // every element of that output wrong.
  void poison(DeviceBuffer<float>& buffer) {
    DeviceGuard on(id);
    buffer.poison(stream);
    stream.synchronize();
  }

 private:
  std::optional<cudalabs::Cublas> blas_;  // a handle per GPU, made with it current, on first use
};

// The GPUs of this run: the session's first, then the other visible ones in
// ordinal order. peer[i][j]: GPU i may load and store GPU j's memory.
struct Team {
  std::vector<std::unique_ptr<Gpu>> gpus;
  std::vector<std::vector<bool>> peer;
  cudalabs::Event fork;  // on the session's device: where every fan-out starts

  int size() const { return static_cast<int>(gpus.size()); }
  Gpu& operator[](int i) { return *gpus[static_cast<std::size_t>(i)]; }
  std::vector<int> ids() const {
    std::vector<int> v;
    for (const auto& g : gpus) v.push_back(g->id);
    return v;
  }
  std::vector<Gpu*> all() {
    std::vector<Gpu*> v;
    for (auto& g : gpus) v.push_back(g.get());
    return v;
  }
  bool all_pairs_peer() const {
    for (std::size_t i = 0; i < peer.size(); ++i)
      for (std::size_t j = 0; j < peer.size(); ++j)
        if (i != j && !peer[i][j]) return false;
    return true;
  }
};

// Lets each GPU of the team read and write each other one's memory directly,
// where the hardware can (NVLink, or PCIe peer-to-peer): after
// cudaDeviceEnablePeerAccess(j) on device i, a kernel on i may dereference a
// pointer into j's memory, and copies between them skip the host.
std::vector<std::vector<bool>> enable_peer_access(const std::vector<int>& ids) {
  const std::size_t g = ids.size();
  std::vector<std::vector<bool>> peer(g, std::vector<bool>(g, true));
  for (std::size_t i = 0; i < g; ++i)
    for (std::size_t j = 0; j < g; ++j) {
      if (i == j) continue;
      int can = 0;
      CUDALABS_CHECK(cudaDeviceCanAccessPeer(&can, ids[i], ids[j]));
      peer[i][j] = can != 0;
      if (!can) continue;
      DeviceGuard on(ids[i]);
      const cudaError_t err = cudaDeviceEnablePeerAccess(ids[j], 0);
      if (err == cudaErrorPeerAccessAlreadyEnabled)
        cudaGetLastError();  // enabled earlier in this process: fine, and not an error to keep
      else
        CUDALABS_CHECK(err);
    }
  return peer;
}

Team make_team(int session_device, std::int64_t wanted) {
  int visible = 0;
  CUDALABS_CHECK(cudaGetDeviceCount(&visible));
  if (wanted > visible)
    throw cudalabs::NoDeviceError("--gpus " + std::to_string(wanted) + " asks for more GPUs than the " +
                                  std::to_string(visible) + " visible ones");
  const int count = std::min(wanted > 0 ? static_cast<int>(wanted) : visible, lab32::max_gpus);
  std::vector<int> ids{session_device};
  for (int d = 0; d < visible && static_cast<int>(ids.size()) < count; ++d)
    if (d != session_device) ids.push_back(d);
  Team team;
  const int step_events = std::max(staged_chunks, lab32::ring_events(count));
  for (int id : ids) team.gpus.push_back(std::make_unique<Gpu>(id, step_events));
  team.peer = enable_peer_access(ids);
  return team;
}

// Runs `enqueue` between a fork from the session's stream to each GPU's stream
// and a join of each back into it: the session's timing events then bracket
// the work of every GPU in `gpus`. The current device is the same afterwards.
void fan_out(cudaStream_t session, Team& team, std::span<Gpu* const> gpus, const std::function<void()>& enqueue) {
  const int home = current_device();
  team.fork.record(session);
  for (Gpu* g : gpus) CUDALABS_CHECK(cudaStreamWaitEvent(g->stream, team.fork, 0));
  {
    DeviceGuard keep(home);
    enqueue();
  }
  for (Gpu* g : gpus) {
    DeviceGuard on(g->id);
    g->joined.record(g->stream);
  }
  for (Gpu* g : gpus) CUDALABS_CHECK(cudaStreamWaitEvent(session, g->joined, 0));
}

// Every multi-GPU variant's `reset`: nothing to reset, but its presence keeps
// the timer from batching runs under 0.1 ms into one CUDA graph. A graph of
// this lab's runs would span several devices' streams; each run is timed on
// its own instead, launch gap included (it shows at the smallest sizes).
void no_graph_batch(cudaStream_t) {}

// ---- CPU reference and checks -------------------------------------------------

// Small integers stored as floats: every sum is exact, so every element must
// match exactly (check_close compares large outputs on every core).
cudalabs::CheckResult check_exact(std::span<const float> got, std::span<const float> expected) {
  return cudalabs::check_close(got, expected, {.abs = 0, .rel = 0});
}

// Page-locked host memory, grown to the largest size asked: the checks'
// downloads (a pageable download of 1 GiB costs several times more) and the
// staged copy's way through the host.
class HostScratch {
 public:
  explicit HostScratch(const char* what) : what_(what) {}
  float* get(std::size_t count) {
    if (buffer_.size() < count) {
      buffer_ = cudalabs::PinnedBuffer<float>();
      buffer_ = cudalabs::PinnedBuffer<float>(count, what_);
    }
    return buffer_.data();
  }

 private:
  const char* what_;
  cudalabs::PinnedBuffer<float> buffer_;
};

// `count` floats of a GPU buffer, downloaded on that GPU's stream.
std::span<const float> download(Gpu& gpu, const float* data, std::size_t count, HostScratch& scratch) {
  float* host = scratch.get(count);
  DeviceGuard on(gpu.id);
  CUDALABS_CHECK(cudaMemcpyAsync(host, data, count * sizeof(float), cudaMemcpyDeviceToHost, gpu.stream));
  gpu.stream.synchronize();
  return {host, count};
}

cudalabs::CheckResult check_on(Gpu& gpu, const float* data, std::span<const float> expected, HostScratch& scratch,
                               const std::string& what) {
  auto result = check_exact(download(gpu, data, expected.size(), scratch), expected);
  if (!result.passed) result.note = what + " on GPU " + std::to_string(gpu.id);
  return result;
}

// Every GPU's input at one size: the host copies are the reference of every
// copy, and their element-wise sum the reference of every all-reduce.
class TransferInputs {
 public:
  TransferInputs(Team& team, std::int64_t n) : team_(team), n_(n), host_(static_cast<std::size_t>(team.size())) {}

  // New values for GPU g's input from `seed`, uploaded.
  void draw(int g, std::uint64_t seed) {
    auto& values = host_[static_cast<std::size_t>(g)];
    values = cudalabs::random_small_ints(static_cast<std::size_t>(n_), cudalabs::mix_seed(seed, static_cast<std::uint64_t>(g) + 1),
                                         -transfer_value_range, transfer_value_range);
    DeviceGuard on(team_[g].id);
    team_[g].in.upload(values);
    sum_current_ = false;
  }
  void draw_all(std::uint64_t seed) {
    for (int g = 0; g < team_.size(); ++g) draw(g, seed);
  }
  std::span<const float> of(int g) const { return host_[static_cast<std::size_t>(g)]; }
  // The exact element-wise sum of every GPU's input (integers: any order gives it).
  std::span<const float> sum() {
    if (!sum_current_) {
      sum_.assign(static_cast<std::size_t>(n_), 0.0f);
      cudalabs::ref::parallel_for(sum_.size(), [&](std::size_t begin, std::size_t end) {
        for (const auto& values : host_)
          for (std::size_t i = begin; i < end; ++i) sum_[i] += values[i];
      });
      sum_current_ = true;
    }
    return sum_;
  }

 private:
  Team& team_;
  std::int64_t n_;
  std::vector<std::vector<float>> host_;
  std::vector<float> sum_;
  bool sum_current_ = false;
};

// ---- NCCL, the all-reduce baseline ---------------------------------------------

#if CUDALABS_HAVE_NCCL
void check_nccl(ncclResult_t result, const char* call) {
  if (result != ncclSuccess)
    throw cudalabs::CudaError(std::string(call) + " failed: " + ncclGetErrorString(result));
}
#define LAB32_CHECK_NCCL(call) check_nccl((call), #call)

// One communicator per GPU of the team, all in this process (ncclCommInitAll).
class NcclComms {
 public:
  // NCCL switches devices inside; the caller's is put back.
  explicit NcclComms(std::span<const int> devices) : comms_(devices.size(), nullptr) {
    DeviceGuard keep(current_device());
    LAB32_CHECK_NCCL(ncclCommInitAll(comms_.data(), static_cast<int>(devices.size()), devices.data()));
  }
  ~NcclComms() {
    int caller = -1;
    if (cudaGetDevice(&caller) != cudaSuccess) caller = -1;
    for (ncclComm_t c : comms_)
      if (c) ncclCommDestroy(c);
    if (caller >= 0) cudaSetDevice(caller);
  }
  NcclComms(const NcclComms&) = delete;
  NcclComms& operator=(const NcclComms&) = delete;

  // One all-reduce: every GPU's out = the sum of every GPU's in. One thread
  // drives every GPU, so the calls form one group: NCCL launches them together
  // at ncclGroupEnd instead of waiting in the first call for the others.
  void all_reduce(Team& team, std::int64_t n) {
    LAB32_CHECK_NCCL(ncclGroupStart());
    for (int g = 0; g < team.size(); ++g)
      LAB32_CHECK_NCCL(ncclAllReduce(team[g].in.data(), team[g].out.data(), static_cast<std::size_t>(n), ncclFloat,
                                     ncclSum, comms_[static_cast<std::size_t>(g)], team[g].stream));
    LAB32_CHECK_NCCL(ncclGroupEnd());
  }

  static std::string version() {
    int v = 0;
    ncclGetVersion(&v);
    return format_line("%d.%d.%d", v / 10000, v / 100 % 100, v % 100);
  }

 private:
  std::vector<ncclComm_t> comms_;
};
#else
// Built without NCCL: the type exists so that the code reads the same.
class NcclComms {
 public:
  void all_reduce(Team&, std::int64_t) {}
};
#endif

// ---- the lab's spec and its families of variants ---------------------------------

const std::vector<std::string> transfer_variants = {"peer_copy", "peer_copy_bidir", "staged_copy", "peer_read_kernel",
                                                    "peer_write_kernel"};
const std::vector<std::string> allreduce_variants = {"nccl_allreduce", "allreduce_ring", "allreduce_oneshot"};
const std::vector<std::string> gemm_variants = {"cublas_1gpu", "sgemm_split_switch", "sgemm_split_threads"};

const std::string full_gemm = "8192x8192x8192,16384x16384x8192";
const std::string quick_gemm = "1x1x1,67x33x100,255x129x65";

cudalabs::LabSpec lab_spec() {
  return {
      .name = "32_multi_gpu",
      .title = "several GPUs: peer copies, peer access, a split SGEMM, all-reduce against NCCL",
      .about =
          "Uses every visible GPU (--gpus N: the --device one and the next ones). Copies between every ordered pair of\n"
          "GPUs with the copy engines, both directions at once, through pinned host memory, and by a kernel that loads\n"
          "(or stores) the other GPU's memory directly; an all-reduce of float buffers written by hand (a ring, a\n"
          "one-shot) against NCCL's, in algorithm and bus bandwidth (nccl-tests: busbw = algbw * 2(G-1)/G); and C = A*B\n"
          "split by rows of C across the GPUs, from one thread switching contexts and from one thread per GPU, against\n"
          "one GPU. Needs 2 GPUs for all but cublas_1gpu. Sets NCCL_NVLS_ENABLE=0 (NVLink multicast stays off).",
      .sizes = {{.name = "bytes",
                 .help = "bytes of one GPU's buffer for the copies and all-reduces (a multiple of 4: floats)",
                 .full = {MiB, 8 * MiB, 64 * MiB, 256 * MiB, GiB},
                 .quick = {4, 4100, MiB + 4},
                 .min = 4,
                 .max = 4 * GiB}},
      .size_alias = {"bytes"},
      .variants = {{"peer_copy", "cudaMemcpyPeerAsync, one direction, every ordered pair of GPUs (copy engines)", true},
                   {"peer_copy_bidir", "both directions of each pair at once (two copies, one on each GPU's stream)"},
                   {"staged_copy", "through pinned host memory: D2H on src, H2D on dst, chunks pipelined on two streams"},
                   {"peer_read_kernel", "the reduce-copy kernel on dst, loading src's memory through UVA (pull)"},
                   {"peer_write_kernel", "the reduce-copy kernel on src, storing into dst's memory (push)"},
                   {"nccl_allreduce", "ncclAllReduce, float sum, one stream per GPU (when built with NCCL)", true},
                   {"allreduce_ring", "reduce-scatter with peer-reading kernels, all-gather with copy engines, a ring"},
                   {"allreduce_oneshot", "every GPU reads every other GPU's input and sums: one kernel per GPU"},
                   {"cublas_1gpu", "C = A*B with cuBLAS on the --device GPU (FP32)", true},
                   {"sgemm_split_switch", "rows of C split across the GPUs; one thread, cuCtxSetCurrent per GPU"},
                   {"sgemm_split_threads", "the same split; one host thread per GPU, its device current for life"}},
      .flags = {{.name = "gemm",
                 .help = "SGEMM shapes MxNxK, comma-separated (--quick: " + quick_gemm + ")",
                 .kind = cudalabs::ExtraFlag::Kind::text,
                 .default_value = full_gemm},
                {.name = "gpus",
                 .help = "GPUs to use: the --device one first, then the others in order; 0: all visible (at most 8)",
                 .default_value = "0",
                 .min = 0,
                 .max = 64},
                {.name = "no-nccl",
                 .help = "leave out the NCCL baseline (under compute-sanitizer, which would check NCCL's own kernels)",
                 .kind = cudalabs::ExtraFlag::Kind::toggle}},
  };
}

struct GemmShape {
  int m = 0, n = 0, k = 0;
};

// "8192x8192x8192,16384x16384x8192" -> shapes; UsageError naming the bad part.
std::vector<GemmShape> parse_gemm(const std::string& text) {
  std::vector<GemmShape> shapes;
  std::size_t at = 0;
  while (at <= text.size()) {
    std::size_t end = text.find(',', at);
    if (end == std::string::npos) end = text.size();
    const std::string part = text.substr(at, end - at);
    int dims[3] = {0, 0, 0};
    char tail = 0;
    if (std::sscanf(part.c_str(), "%dx%dx%d%c", &dims[0], &dims[1], &dims[2], &tail) != 3 ||
        std::any_of(std::begin(dims), std::end(dims), [](int d) { return d < 1 || d > gemm_max_dim; }))
      throw cudalabs::UsageError("--gemm '" + part + "': write each shape as MxNxK with every dimension from 1 to " +
                                 std::to_string(gemm_max_dim) + ", shapes separated by commas, e.g. --gemm " + full_gemm);
    shapes.push_back({dims[0], dims[1], dims[2]});
    at = end + 1;
  }
  return shapes;
}

std::vector<GemmShape> gemm_shapes(const cudalabs::Options& o) {
  const std::string text = o.text("gemm");
  return parse_gemm(o.quick && text == full_gemm ? quick_gemm : text);
}

// The flags main checks before any device is looked for, so that they are
// exit 2 on a machine without a GPU too.
void check_flags(const cudalabs::Options& o) {
  for (const auto& p : o.points)
    if (p.at("bytes") % 4 != 0)
      throw cudalabs::UsageError("--bytes " + std::to_string(p.at("bytes")) +
                                 ": the buffers hold floats, so bytes must be a multiple of 4 (e.g. " +
                                 std::to_string(p.at("bytes") / 4 * 4 + 4) + ")");
  gemm_shapes(o);
}

// Runs a family when no --variant was named or one of its variants was.
bool family_selected(const cudalabs::Options& o, const std::vector<std::string>& family) {
  if (o.variants.empty()) return true;
  return std::any_of(o.variants.begin(), o.variants.end(),
                     [&](const std::string& v) { return std::find(family.begin(), family.end(), v) != family.end(); });
}

// ---- copies between GPUs -------------------------------------------------------

// GB/s of every transfer row at one size, by (from, to) team index, for the matrices under the table.
struct TransferRates {
  std::int64_t bytes = 0;
  std::map<std::string, std::map<std::pair<int, int>, double>> gbps;
};

// Through the host: src's copy engine writes chunk c into pinned memory, then
// dst's stream waits for that chunk's event and its copy engine reads it out,
// while chunk c + 1 leaves src.
void staged_copy(Gpu& src, Gpu& dst, float* to, const float* from, float* pinned, std::int64_t n) {
  const std::int64_t chunk_floats = std::max(cudalabs::ceil_div<std::int64_t>(n, staged_chunks), staged_min_chunk / 4);
  int chunk = 0;
  for (std::int64_t begin = 0; begin < n; begin += chunk_floats, ++chunk) {
    const std::size_t count_bytes = static_cast<std::size_t>(std::min(chunk_floats, n - begin)) * sizeof(float);
    const cudalabs::Event& landed = src.steps[static_cast<std::size_t>(chunk)];
    {
      DeviceGuard on(src.id);
      CUDALABS_CHECK(cudaMemcpyAsync(pinned + begin, from + begin, count_bytes, cudaMemcpyDeviceToHost, src.stream));
      landed.record(src.stream);
    }
    DeviceGuard on(dst.id);
    CUDALABS_CHECK(cudaStreamWaitEvent(dst.stream, landed, 0));
    CUDALABS_CHECK(cudaMemcpyAsync(to + begin, pinned + begin, count_bytes, cudaMemcpyHostToDevice, dst.stream));
  }
}

void peer_copy(Gpu& src, Gpu& dst, std::int64_t n) {
  DeviceGuard on(src.id);
  CUDALABS_CHECK(cudaMemcpyPeerAsync(dst.out.data(), dst.id, src.in.data(), src.id,
                                     static_cast<std::size_t>(n) * sizeof(float), src.stream));
}

TransferRates transfer_rows(cudalabs::Session& s, Team& team, std::int64_t bytes, TransferInputs& inputs,
                            HostScratch& scratch, HostScratch& staging) {
  const std::int64_t n = bytes / 4;
  TransferRates rates{.bytes = bytes};
  const auto resources = lab32::reduce_copy_resources();
  const auto gpus = static_cast<double>(team.size());
  auto pair_size = [&](int i, int j) { return Point{{"bytes", bytes}, {"src", team[i].id}, {"dst", team[j].id}}; };
  auto base = [&](const char* variant, Point size, double moved) {
    return cudalabs::Measurement{.variant = variant, .size = std::move(size), .work = {.bytes = moved}, .reset = no_graph_batch};
  };
  auto record = [&](const cudalabs::Measurement& m, int i, int j) {
    const double gbps = s.measure(m).gbps;
    rates.gbps[m.variant][{i, j}] = gbps;
    return gbps;
  };

  for (int i = 0; i < team.size(); ++i)
    for (int j = 0; j < team.size(); ++j) {
      if (i == j) continue;
      Gpu& src = team[i];
      Gpu& dst = team[j];
      Gpu* on_src[] = {&src};
      Gpu* on_both[] = {&src, &dst};
      auto check = [&, i] { return check_on(dst, dst.out.data(), inputs.of(i), scratch, "dst's buffer after the copy"); };
      auto poison = [&](cudaStream_t) { dst.poison(dst.out); };
      auto redraw = [&, i](std::uint64_t seed) { inputs.draw(i, seed); };

      // The copy engines, driven from src's stream (a push, as NVIDIA's
      // p2pBandwidthLatencyTest does): no SM takes part.
      auto m = base("peer_copy", pair_size(i, j), static_cast<double>(bytes));
      m.run = [&](cudaStream_t st) { fan_out(st, team, on_src, [&] { peer_copy(src, dst, n); }); };
      m.check = check;
      m.poison = poison;
      m.new_inputs = redraw;
      m.expect = cudalabs::Expect::copies;  // no kernel: a copy between GPUs is the work (CUPTI: PtoP, not host copies)
      m.ceiling = cudalabs::CeilingKind::baseline;
      m.extra = {{"gpus", gpus}, {"peer_access", team.peer[i][j] ? 1.0 : 0.0}};
      record(m, i, j);

      if (s.selected("staged_copy")) {
        float* pinned = staging.get(static_cast<std::size_t>(n));
        auto st_m = base("staged_copy", pair_size(i, j), static_cast<double>(bytes));
        st_m.run = [&, pinned](cudaStream_t st) {
          fan_out(st, team, on_both, [&] { staged_copy(src, dst, dst.out.data(), src.in.data(), pinned, n); });
        };
        st_m.check = check;
        st_m.poison = poison;
        st_m.new_inputs = redraw;
        st_m.expect = cudalabs::Expect::copies;  // host copies are the lesson here
        st_m.ceiling = cudalabs::CeilingKind::baseline;
        st_m.extra = {{"gpus", gpus}, {"chunks", static_cast<double>(std::min<std::int64_t>(
                                                           staged_chunks, cudalabs::ceil_div(bytes, staged_min_chunk)))}};
        record(st_m, i, j);
      }

      // SMs moving the data: dst's kernel loads src's memory (pull), or src's
      // kernel stores into dst's memory (push). The GPU that runs the kernel
      // needs peer access to the other one.
      auto kernel_row = [&](const char* variant, Gpu& runner, Gpu& other, bool reachable) {
        if (!s.selected(variant)) return;
        if (!reachable) {
          s.note(format_line("%s %d -> %d skipped: GPU %d has no peer access to GPU %d", variant, src.id, dst.id,
                             runner.id, other.id));
          return;
        }
        Gpu* on_runner[] = {&runner};
        auto k = base(variant, pair_size(i, j), static_cast<double>(bytes));
        k.run = [&](cudaStream_t st) {
          fan_out(st, team, on_runner, [&] {
            DeviceGuard on(runner.id);
            lab32::peer_copy_kernel(dst.out.data(), src.in.data(), n, runner.stream);
          });
        };
        k.check = check;
        k.poison = poison;
        k.new_inputs = redraw;
        k.resources = resources;
        k.ceiling = cudalabs::CeilingKind::baseline;
        k.extra = {{"gpus", gpus}};
        record(k, i, j);
      };
      kernel_row("peer_read_kernel", dst, src, team.peer[static_cast<std::size_t>(j)][static_cast<std::size_t>(i)]);
      kernel_row("peer_write_kernel", src, dst, team.peer[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)]);
    }

  // Both directions of each pair at once: a -> b on a's stream, b -> a on b's.
  // Its ceiling is the sum of the two one-way copies just measured: 100% means
  // the two directions do not slow each other at all.
  if (s.selected("peer_copy_bidir"))
    for (int i = 0; i < team.size(); ++i)
      for (int j = i + 1; j < team.size(); ++j) {
        Gpu& x = team[i];
        Gpu& y = team[j];
        Gpu* on_both[] = {&x, &y};
        auto m = base("peer_copy_bidir", Point{{"bytes", bytes}, {"gpu_a", x.id}, {"gpu_b", y.id}}, 2.0 * bytes);
        m.run = [&](cudaStream_t st) {
          fan_out(st, team, on_both, [&] {
            peer_copy(x, y, n);
            peer_copy(y, x, n);
          });
        };
        m.check = [&, i, j] {
          return cudalabs::both(check_on(y, y.out.data(), inputs.of(i), scratch, "the copy from GPU " + std::to_string(x.id)),
                                check_on(x, x.out.data(), inputs.of(j), scratch, "the copy from GPU " + std::to_string(y.id)));
        };
        m.poison = [&](cudaStream_t) {
          x.poison(x.out);
          y.poison(y.out);
        };
        m.new_inputs = [&, i, j](std::uint64_t seed) {
          inputs.draw(i, seed);
          inputs.draw(j, seed);
        };
        m.expect = cudalabs::Expect::copies;
        const double one_way = rates.gbps["peer_copy"][{i, j}] + rates.gbps["peer_copy"][{j, i}];
        m.ceiling = one_way > 0 ? cudalabs::CeilingKind::given : cudalabs::CeilingKind::none;
        m.given_ceiling = {"sum_of_one_way_copies_gbps", one_way};
        m.extra = {{"gpus", gpus}};
        record(m, i, j);
      }
  return rates;
}

// The matrices of one size, side by side: row = from GPU, column = to GPU
// (both ways: the pair's two directions summed, in both of its cells).
void transfer_notes(cudalabs::Session& s, const Team& team, const TransferRates& rates) {
  const std::vector<std::pair<std::string, std::string>> shown = {{"peer_copy", "copy engines"},
                                                                  {"peer_copy_bidir", "both ways at once"},
                                                                  {"staged_copy", "staged via host"},
                                                                  {"peer_read_kernel", "SM read (pull)"},
                                                                  {"peer_write_kernel", "SM write (push)"}};
  const int g = team.size();
  const auto width = static_cast<std::size_t>(10 + 8 * g);
  auto pad = [&](std::string text) {
    text.resize(width, ' ');
    return text;
  };
  std::string title = "  ", head = "  ";
  std::vector<std::string> rows(static_cast<std::size_t>(g), "  ");
  for (const auto& [variant, label] : shown) {
    const auto found = rates.gbps.find(variant);
    if (found == rates.gbps.end()) continue;
    const auto& cells = found->second;
    title += pad(label);
    std::string h = "from\\to";
    for (const auto& gpu : team.gpus) h += format_line("%8d", gpu->id);
    head += pad(h);
    for (int i = 0; i < g; ++i) {
      std::string r = format_line("%7d", team.gpus[static_cast<std::size_t>(i)]->id);
      for (int j = 0; j < g; ++j) {
        const auto key = variant == "peer_copy_bidir" ? std::pair{std::min(i, j), std::max(i, j)} : std::pair{i, j};
        const auto cell = cells.find(key);
        const bool known = i != j && cell != cells.end() && cell->second > 0;
        r += known ? format_line("%8.1f", cell->second) : format_line("%8s", "-");
      }
      rows[static_cast<std::size_t>(i)] += pad(r);
    }
  }
  s.note(format_line("transfers of %lld bytes per GPU buffer, GB/s:", static_cast<long long>(rates.bytes)));
  s.note(title);
  s.note(head);
  for (const auto& r : rows) s.note(r);
}

// ---- all-reduce ---------------------------------------------------------------

struct AllReduceTimes {
  std::int64_t bytes = 0;
  std::map<std::string, double> ms;  // variant -> median ms (0: not run or not timed)
};

AllReduceTimes allreduce_rows(cudalabs::Session& s, Team& team, std::int64_t bytes, TransferInputs& inputs,
                              HostScratch& scratch, NcclComms* nccl) {
  const std::int64_t n = bytes / 4;
  const int g = team.size();
  AllReduceTimes times{.bytes = bytes};
  std::vector<Gpu*> all = team.all();
  auto base = [&](const char* variant) {
    return cudalabs::Measurement{
        .variant = variant,
        .size = Point{{"bytes", bytes}},
        .work = {.bytes = static_cast<double>(bytes)},  // GB/s = algbw: bytes / time (nccl-tests)
        .check =
            [&] {
              cudalabs::CheckResult r = check_on(team[0], team[0].out.data(), inputs.sum(), scratch, "the sum");
              for (int i = 1; i < g; ++i) r = cudalabs::both(r, check_on(team[i], team[i].out.data(), inputs.sum(), scratch, "the sum"));
              return r;
            },
        .poison =
            [&](cudaStream_t) {
              for (Gpu* gpu : all) gpu->poison(gpu->out);
            },
        .reset = no_graph_batch,
        .new_inputs = [&](std::uint64_t seed) { inputs.draw_all(seed); },
        .ceiling = cudalabs::CeilingKind::baseline,
        .extra = {{"gpus", static_cast<double>(g)}, {"busbw_factor", 2.0 * (g - 1) / g}}};
  };

  if (nccl) {
    // One untimed all-reduce of this size first: NCCL connects the channels an
    // algorithm needs on its first use (its own allocations and copies, which
    // the traced first run would count against it).
    {
      DeviceGuard keep(current_device());
      nccl->all_reduce(team, n);
      for (Gpu* gpu : all) gpu->stream.synchronize();
    }
    auto m = base("nccl_allreduce");
    m.run = [&](cudaStream_t st) { fan_out(st, team, all, [&] { nccl->all_reduce(team, n); }); };
    times.ms["nccl_allreduce"] = s.measure(m).timing.median_ms;
  }

  // The events each GPU lends the ring, and the ranks.
  std::vector<std::vector<cudaEvent_t>> events(static_cast<std::size_t>(g));
  std::vector<lab32::AllReduceRank> ranks;
  for (int i = 0; i < g; ++i) {
    for (int e = 0; e < lab32::ring_events(g); ++e) events[static_cast<std::size_t>(i)].push_back(team[i].steps[static_cast<std::size_t>(e)]);
    ranks.push_back({team[i].id, team[i].stream, team[i].in.data(), team[i].out.data(), events[static_cast<std::size_t>(i)]});
  }
  const auto resources = lab32::reduce_copy_resources();
  bool ring_links = true;  // the ring's kernels load from the left neighbour
  for (int i = 0; i < g; ++i) ring_links = ring_links && team.peer[static_cast<std::size_t>(i)][static_cast<std::size_t>((i + g - 1) % g)];

  auto hand_written = [&](const char* variant, bool reachable, const char* why_not, std::function<void()> enqueue) {
    if (!s.selected(variant)) return;
    if (!reachable) {
      s.note(std::string(variant) + " skipped: " + why_not);
      return;
    }
    auto m = base(variant);
    m.run = [&, enqueue](cudaStream_t st) { fan_out(st, team, all, enqueue); };
    m.resources = resources;
    times.ms[variant] = s.measure(m).timing.median_ms;
  };
  hand_written("allreduce_ring", ring_links, "a GPU has no peer access to its left neighbour in the ring",
               [&] { lab32::allreduce_ring(ranks, n); });
  hand_written("allreduce_oneshot", team.all_pairs_peer(), "not every pair of GPUs has peer access",
               [&] { lab32::allreduce_oneshot(ranks, n); });
  return times;
}

// nccl-tests' table: per size and variant, time, algbw and busbw side by side.
void allreduce_notes(cudalabs::Session& s, int g, const std::vector<AllReduceTimes>& all_sizes) {
  const double factor = 2.0 * (g - 1) / g;
  s.note(format_line("all-reduce over %d GPUs, float sum: algbw = bytes / time, busbw = algbw * 2(G-1)/G = algbw * "
                     "%.3f (nccl-tests); x nccl = NCCL's time / this time",
                     g, factor));
  std::string names = format_line("  %12s", ""), head = format_line("  %12s", "bytes");
  for (const auto& v : allreduce_variants) {
    names += format_line("  | %-32s", v.c_str());
    head += format_line("  | %9s %7s %7s %6s", "ms", "algbw", "busbw", "x nccl");
  }
  s.note(names);
  s.note(head);
  for (const auto& t : all_sizes) {
    std::string line = format_line("  %12lld", static_cast<long long>(t.bytes));
    const auto nccl = t.ms.find("nccl_allreduce");
    const double nccl_ms = nccl != t.ms.end() ? nccl->second : 0;
    for (const auto& v : allreduce_variants) {
      const auto it = t.ms.find(v);
      if (it == t.ms.end() || it->second <= 0) {
        line += format_line("  | %9s %7s %7s %6s", "-", "-", "-", "-");
        continue;
      }
      const double algbw = static_cast<double>(t.bytes) / (it->second * 1e6);
      const std::string vs = nccl_ms > 0 ? format_line("%.2f", nccl_ms / it->second) : "-";
      line += format_line("  | %9.4f %7.1f %7.1f %6s", it->second, algbw, algbw * factor, vs.c_str());
    }
    s.note(line);
  }
}

// ---- split SGEMM ----------------------------------------------------------------

// Rows of C for each of g GPUs: m / g, the first m mod g one more.
std::vector<int> split_rows(int m, int g) {
  std::vector<int> rows(static_cast<std::size_t>(g), m / g);
  for (int i = 0; i < m % g; ++i) ++rows[static_cast<std::size_t>(i)];
  return rows;
}

void gemm_rows(cudalabs::Session& s, Team& team, GemmShape shape, lab32::SplitSgemmThreads* threads, bool split,
               HostScratch& scratch) {
  const int m = shape.m, n = shape.n, k = shape.k, g = team.size();
  const Point size{{"m", m}, {"n", n}, {"k", k}};
  const std::size_t a_count = static_cast<std::size_t>(m) * k, b_count = static_cast<std::size_t>(k) * n,
                    c_count = static_cast<std::size_t>(m) * n;
  Gpu& home = team[0];  // the session's device
  DeviceBuffer<float> d_a(a_count, "A"), d_b(b_count, "B"), d_c(c_count, "C (one GPU)"), d_ref(c_count, "C (reference)");
  // GPU i computes rows [first_row[i], first_row[i] + rows[i]) of C.
  const std::vector<int> rows = split_rows(m, g);
  std::vector<std::size_t> first_row(static_cast<std::size_t>(g), 0);
  for (std::size_t i = 1; i < first_row.size(); ++i) first_row[i] = first_row[i - 1] + static_cast<std::size_t>(rows[i - 1]);
  if (split)
    for (int i = 0; i < g; ++i) {
      const auto r = static_cast<std::size_t>(rows[static_cast<std::size_t>(i)]);
      team[i].reallocate(team[i].a, r * static_cast<std::size_t>(k), "A rows of one GPU");
      team[i].reallocate(team[i].b, b_count, "B replica");
      team[i].reallocate(team[i].c, r * static_cast<std::size_t>(n), "C rows of one GPU");
    }

  // Inputs from a seed (buffer 1: A, 2: B, 3: the rows checked on the CPU),
  // uploaded everywhere, and the reference: C from cuBLAS on one GPU, whose
  // rows are checked against the double CPU reference here (exact: the inputs
  // are small integers). Every row's check carries that verdict, so a wrong
  // library result cannot pass as the reference. The first sgemm of a shape
  // is where the course's Cublas chooses its algorithm (it synchronises).
  std::vector<float> reference;
  cudalabs::CheckResult reference_vs_cpu;
  auto make_inputs = [&](std::uint64_t seed) {
    const auto a = cudalabs::random_small_ints(a_count, cudalabs::mix_seed(seed, 1), -4, 4);
    const auto b = cudalabs::random_small_ints(b_count, cudalabs::mix_seed(seed, 2), -4, 4);
    d_a.upload(a);
    d_b.upload(b);
    home.blas().sgemm(d_a.data(), d_b.data(), d_ref.data(), m, n, k, s.stream());
    CUDALABS_CHECK(cudaStreamSynchronize(s.stream()));
    const auto ref = download(home, d_ref.data(), c_count, scratch);
    reference.assign(ref.begin(), ref.end());
    const auto cpu_rows = matmul_detail::rows_to_check(m, n, k, cudalabs::mix_seed(seed, 3));
    reference_vs_cpu = cudalabs::check_close(matmul_detail::gather_rows(reference, n, cpu_rows),
                                             matmul_detail::reference_rows(a, b, n, k, cpu_rows), {.abs = 0, .rel = 0});
    if (!reference_vs_cpu.passed)
      reference_vs_cpu.note = "cuBLAS's C on one GPU against the double CPU reference (" +
                              std::to_string(cpu_rows.size()) + " rows)";
    if (split)
      for (int i = 0; i < g; ++i) {
        if (team[i].a.size() == 0) continue;
        DeviceGuard on(team[i].id);
        team[i].a.upload(std::span<const float>(a).subspan(first_row[static_cast<std::size_t>(i)] * k, team[i].a.size()));
        team[i].b.upload(b);
      }
  };
  make_inputs(s.seed());

  cudalabs::Measurement one{
      .variant = "cublas_1gpu",
      .size = size,
      .work = {.bytes = 4.0 * static_cast<double>(a_count + b_count + c_count), .flops = 2.0 * m * n * k},
      .run = [&](cudaStream_t st) { home.blas().sgemm(d_a.data(), d_b.data(), d_c.data(), m, n, k, st); },
      .check = [&] { return cudalabs::both(check_on(home, d_c.data(), reference, scratch, "C"), reference_vs_cpu); },
      .poison = [&](cudaStream_t st) { d_c.poison(st); },
      .new_inputs = make_inputs,
      .ceiling = cudalabs::CeilingKind::baseline};
  one.extra = {{"gpus", 1.0}};
  s.measure(one);
  std::string algorithms =
      format_line("m=%d n=%d k=%d: cuBLAS on one GPU runs ", m, n, k) + home.blas().algorithm_of(m, n, k);
  if (!split) {
    s.note(algorithms);
    return;
  }

  std::vector<lab32::GemmShard> shards;
  for (int i = 0; i < g; ++i) {
    Gpu& gpu = team[i];
    const int r = rows[static_cast<std::size_t>(i)];
    shards.push_back({gpu.id, gpu.context.get(), &gpu.blas(), gpu.stream, gpu.a.data(), gpu.b.data(), gpu.c.data(), r});
    if (r > 0) {  // each GPU's handle chooses its algorithm for its shape now, not in a traced or timed run
      DeviceGuard on(gpu.id);
      gpu.blas().prepare_sgemm(gpu.a.data(), gpu.b.data(), gpu.c.data(), r, n, k, gpu.stream);
    }
  }
  const std::vector<Gpu*> all = team.all();
  // Rates per GPU: the work of the largest shard (its GPU finishes last), so
  // GFLOP/s compares with one GPU's rate and is held against one GPU's peak.
  const double most = rows[0];
  const cudalabs::Work per_gpu{.bytes = 4.0 * (most * k + static_cast<double>(b_count) + most * n),
                               .flops = 2.0 * most * n * k};
  auto split_row = [&](const char* variant, std::function<void()> enqueue) {
    cudalabs::Measurement m{.variant = variant,
                            .size = size,
                            .work = per_gpu,
                            .run = [&, enqueue](cudaStream_t st) { fan_out(st, team, all, enqueue); },
                            .check =
                                [&] {
                                  cudalabs::CheckResult r = reference_vs_cpu;
                                  for (int i = 0; i < g; ++i) {
                                    if (team[i].c.size() == 0) continue;
                                    const auto from = first_row[static_cast<std::size_t>(i)] * static_cast<std::size_t>(n);
                                    const auto expected = std::span<const float>(reference).subspan(from, team[i].c.size());
                                    r = cudalabs::both(std::move(r), check_on(team[i], team[i].c.data(), expected, scratch,
                                                                              "its rows of C against one GPU's C"));
                                  }
                                  return r;
                                },
                            .poison =
                                [&](cudaStream_t) {
                                  for (Gpu* gpu : all)
                                    if (gpu->c.size() > 0) gpu->poison(gpu->c);
                                },
                            .reset = no_graph_batch,
                            .new_inputs = make_inputs,
                            .ceiling = cudalabs::CeilingKind::none};
    m.extra = {{"gpus", static_cast<double>(g)}, {"rates_per_gpu", 1.0}};
    return s.measure(m).timing.median_ms;
  };
  double switch_ms = 0, threads_ms = 0;
  if (s.selected("sgemm_split_switch"))
    switch_ms = split_row("sgemm_split_switch", [&] { lab32::split_sgemm_one_thread(shards, n, k); });
  if (s.selected("sgemm_split_threads") && threads)
    threads_ms = split_row("sgemm_split_threads", [&] { threads->enqueue(shards, n, k); });

  double one_ms = 0;
  for (const auto& r : s.records())
    if (r.variant == "cublas_1gpu" && r.size == size) one_ms = r.timing.median_ms;
  if (one_ms > 0) {
    std::string line = format_line("m=%d n=%d k=%d on %d GPUs: one GPU %.3f ms", m, n, k, g, one_ms);
    for (const auto& [how, ms] : {std::pair{"one thread switching", switch_ms}, std::pair{"a thread per GPU", threads_ms}})
      if (ms > 0)
        line += format_line("; %s %.3f ms: %.2fx, scaling efficiency time_1 / (G * time_G) %.1f%%", how, ms,
                            one_ms / ms, 100.0 * one_ms / (g * ms));
    s.note(line);
  }
  s.note(algorithms + format_line("; each GPU's %d-row share runs ", rows[0]) + home.blas().algorithm_of(rows[0], n, k));
}

}  // namespace

// The course's half of kernels.hpp: the driver's cuCtxSetCurrent, checked.
void lab32::set_current_context(CUcontext context) { check_driver(driver().set_current(context), "cuCtxSetCurrent"); }

int main(int argc, char** argv) {
  // NVLink SHARP (NVLS): NCCL's all-reduce through multicast objects in the
  // NVSwitches. It stays off: on a shared machine a program that uses it can
  // put every GPU of the host out of service. Set before NCCL's first call
  // reads its environment, over any value inherited; nothing in this lab
  // creates a multicast object (cuMulticastCreate) either.
  setenv("NCCL_NVLS_ENABLE", "0", 1);

  const cudalabs::LabSpec spec = lab_spec();
  // Flags whose values only this lab can judge: exit 2 before any device is
  // looked for. Anything else wrong on the line is left to run_lab.
  std::optional<cudalabs::Parsed> parsed;
  try {
    parsed = cudalabs::parse_args(spec, std::span<const char* const>(argv + 1, static_cast<std::size_t>(argc - 1)));
  } catch (const cudalabs::UsageError&) {
  }
  if (parsed && parsed->action == cudalabs::Action::run) try {
      check_flags(parsed->options);
    } catch (const cudalabs::UsageError& e) {
      std::fprintf(stderr, "%s: error: %s\n", spec.name.c_str(), e.what());
      return 2;
    }

  return cudalabs::run_lab(argc, argv, spec, [](cudalabs::Session& s) {
    const cudalabs::Options& o = s.options();
    Team team = make_team(s.device().id, o.integer("gpus"));
    const int g = team.size();
    {
      std::string line = "   GPUs:";
      for (int i = 0; i < g; ++i) {
        cudaDeviceProp prop{};
        CUDALABS_CHECK(cudaGetDeviceProperties(&prop, team[i].id));
        line += format_line(" %d (%s, %d SMs)%s", team[i].id, prop.name, team[i].sm_count, i + 1 < g ? "," : "");
      }
      if (g >= 2) line += team.all_pairs_peer() ? "; peer access between every pair" : "; NOT every pair has peer access";
      std::printf("%s\n", line.c_str());
    }
    const bool transfers = family_selected(o, transfer_variants), allreduce = family_selected(o, allreduce_variants),
               gemm = family_selected(o, gemm_variants);
    std::vector<std::string> need_two;  // what one GPU could not run
    HostScratch scratch("pinned buffer for the checks' downloads");

    // ---- copies and all-reduces, one buffer size at a time ----
    if ((transfers || allreduce) && g < 2) {
      if (transfers) need_two.insert(need_two.end(), transfer_variants.begin(), transfer_variants.end());
      if (allreduce) need_two.insert(need_two.end(), allreduce_variants.begin(), allreduce_variants.end());
    } else if (transfers || allreduce) {
      std::optional<NcclComms> nccl;
      // CUDALABS_TRACE=0: a tool owns CUDA's callbacks (tests/sanitize.sh, make
      // profile). NCCL's kernels on the GPUs wait for each other, so a profiler
      // that replays one kernel at a time would hang them, and a sanitizer
      // would check NCCL's own code: the baseline stays out.
      const char* trace = std::getenv("CUDALABS_TRACE");
      const bool tool_attached = trace && std::string(trace) == "0";
      const bool want_nccl = allreduce && !o.toggle("no-nccl") && !tool_attached;
      if (allreduce && o.toggle("no-nccl")) s.note("nccl_allreduce left out (--no-nccl)");
      if (allreduce && tool_attached && !o.toggle("no-nccl"))
        s.note("nccl_allreduce left out: CUDALABS_TRACE=0, a sanitizer or profiler is attached");
#if CUDALABS_HAVE_NCCL
      if (want_nccl) {
        try {
          nccl.emplace(team.ids());
          s.note("NCCL " + NcclComms::version() + ", NCCL_NVLS_ENABLE=" + std::getenv("NCCL_NVLS_ENABLE") +
                 " (NVLink multicast off)");
        } catch (const cudalabs::CudaError& e) {
          s.note(std::string("nccl_allreduce skipped: NCCL did not start: ") + e.what());
        }
      }
#else
      if (want_nccl)
        s.note("nccl_allreduce skipped: built without NCCL (nccl.h and libnccl were not found at configure time). "
               "Debian/Ubuntu: sudo apt-get install libnccl-dev (from NVIDIA's CUDA repository), then reconfigure");
#endif
      HostScratch staging("pinned staging buffer of staged_copy");
      std::vector<TransferRates> rates;
      std::vector<AllReduceTimes> times;
      // Pinned memory at the largest size once, not again at every size.
      std::int64_t largest = 0;
      for (const Point& point : s.points()) largest = std::max(largest, point.at("bytes") / 4);
      scratch.get(static_cast<std::size_t>(largest));
      if (transfers && s.selected("staged_copy")) staging.get(static_cast<std::size_t>(largest));
      for (const Point& point : s.points()) {
        const std::int64_t bytes = point.at("bytes"), n = bytes / 4;
        for (auto& gpu : team.gpus) {
          gpu->reallocate(gpu->in, static_cast<std::size_t>(n), "input");
          gpu->reallocate(gpu->out, static_cast<std::size_t>(n), "output");
        }
        TransferInputs inputs(team, n);
        inputs.draw_all(s.seed());
        if (transfers) rates.push_back(transfer_rows(s, team, bytes, inputs, scratch, staging));
        if (allreduce) times.push_back(allreduce_rows(s, team, bytes, inputs, scratch, nccl ? &*nccl : nullptr));
      }
      for (auto& gpu : team.gpus) {
        gpu->reallocate(gpu->in, 0, "input");
        gpu->reallocate(gpu->out, 0, "output");
      }
      if (!o.check_only) {
        for (const auto& r : rates) transfer_notes(s, team, r);
        if (allreduce) allreduce_notes(s, g, times);
      }
    }

    // ---- SGEMM: one GPU, then split by rows of C ----
    if (gemm) {
      const bool split = g >= 2 && (s.selected("sgemm_split_switch") || s.selected("sgemm_split_threads"));
      if (g < 2 && (s.selected("sgemm_split_switch") || s.selected("sgemm_split_threads")))
        need_two.insert(need_two.end(), {"sgemm_split_switch", "sgemm_split_threads"});
      std::optional<lab32::SplitSgemmThreads> threads;
      const auto ids = team.ids();
      if (split && s.selected("sgemm_split_threads")) threads.emplace(ids);
      for (const GemmShape& shape : gemm_shapes(o)) gemm_rows(s, team, shape, threads ? &*threads : nullptr, split, scratch);
    }

    if (!need_two.empty()) {
      std::string names;
      for (const auto& v : need_two)
        if (s.selected(v)) names += (names.empty() ? "" : ", ") + v;
      const std::string why = "needs at least 2 GPUs; " + std::to_string(g) + " in use (" +
                              (o.integer("gpus") > 0 ? "--gpus" : "visible") + "): skipped " + names;
      if (s.records().empty()) throw cudalabs::NoDeviceError("this lab " + why);
      s.note(why);
    }
    if (g >= 2)
      s.note("each multi-GPU run is forked from the session's stream to every GPU's stream and joined back: its time "
             "is the session GPU's events around all of it; no CUDA-graph batching, so the smallest sizes include the "
             "launch gap");
  });
}

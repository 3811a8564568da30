#pragma once
// Lab 32's host code that its parts share: the driver API reached through the
// runtime, one RAII Gpu per device and the Team of them, the fork from the
// session's stream to every GPU's stream and the join back (fan_out), the
// inputs and checks, and the declarations of the parts.
// The parts, one file per topic, all course code:
//   devices.cpp        devices, primary contexts (the driver API through the runtime),
//                      peer access, the team, and the fork and join that time every multi-GPU run
//   checks.cpp         exact inputs (small integers stored as floats), pinned downloads, the checks
//   transfers.cpp      copies between GPUs: copy engines one way and both ways, through the host,
//                      and SMs pulling or pushing over the link; which pairs (--pairs); the G x G matrices of GB/s
//   nccl.hpp           NCCL, the baselines: a communicator per GPU, one grouped call per collective
//   collectives.cpp    the hand-written all-reduces, reduce-scatters and all-gathers against NCCL's:
//                      algbw and busbw (nccl-tests)
//   sgemm_scaling.cu   C = A·B on one GPU against the same product split by rows over the GPUs,
//                      and over 2, 4, ... of them (--scaling)
// main.cu declares the lab (its flags and variants), says which parts run, and reports.
#include <cuda.h>  // the driver API's types; its functions come through the runtime's entry points
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <cudalabs/blas.hpp>
#include <cudalabs/lab.hpp>

#include "kernels.hpp"

namespace lab32host {

using cudalabs::DeviceBuffer;
using cudalabs::Point;

// The staged copy's pipeline: up to 32 chunks of at least 64 KiB. A chunk's
// H2D overlaps the next one's D2H, so the pipeline costs one chunk (1/32 of
// the time) beyond the slower direction.
constexpr int staged_chunks = 32;
constexpr std::int64_t staged_min_chunk = 64 * 1024;

template <typename... Args>
std::string format_line(const char* format, Args... args) {
  const int length = std::snprintf(nullptr, 0, format, args...);
  std::string out(static_cast<std::size_t>(std::max(length, 0)), '\0');
  std::snprintf(out.data(), out.size() + 1, format, args...);
  return out;
}

// ---- devices and contexts (devices.cpp) ------------------------------------------

int current_device();

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

inline const DriverApi& driver() {
  static const DriverApi api;
  return api;
}

inline void check_driver(CUresult result, const char* call) {
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
  Gpu(int device, int step_events)
      : current_(device), id(device), context(device), steps(step_events),
        flags(static_cast<std::size_t>(lab32::max_ring_channels), "ring flags") {
    CUDALABS_CHECK(cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, device));
    CUDALABS_CHECK(cudaMemset(flags.data(), 0, flags.size() * sizeof(std::uint32_t)));  // below every epoch
    CUDALABS_CHECK(cudaDeviceSynchronize());
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
  DeviceBuffer<std::uint32_t> flags;      // ring_flags.cuh: where the left neighbour posts its steps

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
  std::uint32_t epoch = 0;  // calls of ring_flags.cuh so far: each call gets the next

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

// The team of this run: `wanted` GPUs (0: every visible one, at most
// lab32::max_gpus), the session's first, with peer access enabled between
// every pair that has it.
Team make_team(int session_device, std::int64_t wanted);

// Runs `enqueue` between a fork from the session's stream to each GPU's stream
// and a join of each back into it: the session's timing events then bracket
// the work of every GPU in `gpus`. The current device is the same afterwards.
void fan_out(cudaStream_t session, Team& team, std::span<Gpu* const> gpus, const std::function<void()>& enqueue);

// Every multi-GPU variant's `reset`: nothing to reset, but its presence keeps
// the timer from batching runs under 0.1 ms into one CUDA graph. A graph of
// this lab's runs would span several devices' streams; each run is timed on
// its own instead, launch gap included (it shows at the smallest sizes).
inline void no_graph_batch(cudaStream_t) {}

// ---- inputs and checks (checks.cpp) ----------------------------------------------

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
std::span<const float> download(Gpu& gpu, const float* data, std::size_t count, HostScratch& scratch);

// `expected`, exactly, against `data` on `gpu`; a failure names `what` and the GPU.
cudalabs::CheckResult check_on(Gpu& gpu, const float* data, std::span<const float> expected, HostScratch& scratch,
                               const std::string& what);

// Every GPU's input at one size: the host copies are the reference of every
// copy, and their element-wise sum the reference of every all-reduce.
class TransferInputs {
 public:
  TransferInputs(Team& team, std::int64_t n) : team_(team), n_(n), host_(static_cast<std::size_t>(team.size())) {}

  // New values for GPU g's input from `seed`, uploaded.
  void draw(int g, std::uint64_t seed);
  void draw_all(std::uint64_t seed) {
    for (int g = 0; g < team_.size(); ++g) draw(g, seed);
  }
  std::span<const float> of(int g) const { return host_[static_cast<std::size_t>(g)]; }
  // The exact element-wise sum of every GPU's input (integers: any order gives it).
  std::span<const float> sum();

 private:
  Team& team_;
  std::int64_t n_;
  std::vector<std::vector<float>> host_;
  std::vector<float> sum_;
  bool sum_current_ = false;
};

class NcclComms;  // nccl.hpp: NCCL's all-reduce, the baseline

// ---- the lab's families of variants (main.cu runs a family when one of its variants is asked for) ----

inline const std::vector<std::string> transfer_variants = {"peer_copy", "peer_copy_bidir", "staged_copy",
                                                           "peer_read_kernel", "peer_write_kernel"};
inline const std::vector<std::string> allreduce_variants = {"nccl_allreduce", "allreduce_ring", "allreduce_oneshot",
                                                            "allreduce_ring_flags", "allreduce_twoshot"};
inline const std::vector<std::string> reduce_scatter_variants = {"nccl_reduce_scatter", "reduce_scatter_ring",
                                                                 "reduce_scatter_direct"};
inline const std::vector<std::string> all_gather_variants = {"nccl_all_gather", "all_gather_ring", "all_gather_direct"};
// The variants whose GPUs wait for each other inside a kernel (flags): not run
// under a tool that runs one kernel at a time (they would wait for ever).
inline const std::vector<std::string> concurrent_kernel_variants = {"allreduce_ring_flags", "reduce_scatter_ring",
                                                                    "all_gather_ring"};
inline const std::vector<std::string> gemm_variants = {"cublas_1gpu", "sgemm_split_switch", "sgemm_split_threads"};

struct GemmShape {
  int m = 0, n = 0, k = 0;
};

// ---- copies between GPUs (transfers.cpp) ----------------------------------------

// --pairs: "auto", "all", or pairs of GPU ids SRC-DST (main.cu parses it).
struct PairChoice {
  enum class Kind { automatic, all, listed } kind = Kind::automatic;
  std::vector<std::pair<int, int>> listed;  // GPU ids
};

// pairs[i][j]: the ordered pair of team indices i -> j is timed at this size.
using PairMask = std::vector<std::vector<bool>>;

// Which ordered pairs a size times. The full matrix costs G(G-1) pairs per size
// (12 on 4 GPUs, 56 on 8), so `auto` times it at one size only (`matrix_size`)
// and sweeps the sizes on the first GPU's pairs with its neighbour and with the
// last GPU, both ways: a bounded run whatever G is. Listed ids not in the team:
// UsageError.
PairMask pairs_timed(const PairChoice& choice, const Team& team, bool matrix_size);

// The size of `auto`'s full matrix: the largest of the run's sizes up to
// 256 MiB (large enough for the links' full rate), or the smallest if all are larger.
std::int64_t matrix_bytes(const std::vector<Point>& points);

// GB/s of every transfer row at one size, by (from, to) team index, for the matrices under the table.
struct TransferRates {
  std::int64_t bytes = 0;
  std::map<std::string, std::map<std::pair<int, int>, double>> gbps;
};

// Every transfer row at one size, for every ordered pair of `timed`: peer_copy,
// staged_copy, peer_read_kernel, peer_write_kernel, then peer_copy_bidir for
// each pair with either direction timed.
TransferRates transfer_rows(cudalabs::Session& s, Team& team, std::int64_t bytes, TransferInputs& inputs,
                            HostScratch& scratch, HostScratch& staging, const PairMask& timed);

// The matrices of one size, side by side: row = from GPU, column = to GPU
// (both ways: the pair's two directions summed, in both of its cells).
void transfer_notes(cudalabs::Session& s, const Team& team, const TransferRates& rates);

// ---- all-reduce, reduce-scatter, all-gather (collectives.cpp) -------------------------

enum class Op { all_reduce, reduce_scatter, all_gather };

// The family of variants of one collective, NCCL's first.
const std::vector<std::string>& variants_of(Op op);

struct CollectiveTimes {
  std::int64_t bytes = 0;
  std::map<std::string, double> ms;  // variant -> median ms (0: not run or not timed)
};

// One collective's rows at one size: NCCL's (when `nccl` is given), then the
// hand-written ones. `tool_attached`: the variants that wait inside a kernel
// for another GPU's are left out (a tool runs one kernel at a time).
CollectiveTimes collective_rows(cudalabs::Session& s, Op op, Team& team, std::int64_t bytes, TransferInputs& inputs,
                                HostScratch& scratch, NcclComms* nccl, bool tool_attached);

// nccl-tests' table: per size and variant, time, algbw and busbw side by side.
void collective_notes(cudalabs::Session& s, Op op, int g, const std::vector<CollectiveTimes>& all_sizes);

// ---- split SGEMM (sgemm_scaling.cu) -------------------------------------------------

// One shape: cublas_1gpu, then (`split`) the split rows, from one thread
// switching contexts and from `threads` (one host thread per GPU). `use`: split
// over the first `use` GPUs of the team only (0: all of them); such a run
// (--scaling) has the GPU count in its size and times no one-GPU baseline again.
void gemm_rows(cudalabs::Session& s, Team& team, GemmShape shape, lab32::SplitSgemmThreads* threads, bool split,
               HostScratch& scratch, int use = 0);

// --scaling: the split (a thread per GPU) on the first 2, 4, 8 ... GPUs below the
// team's size (gemm_rows timed the whole team already), then one line: the
// speed-up over one GPU's cuBLAS at each count.
void gemm_scaling(cudalabs::Session& s, Team& team, GemmShape shape, HostScratch& scratch);

}  // namespace lab32host

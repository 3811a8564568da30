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
//                      and SMs pulling or pushing over the link; the G x G matrices of GB/s
//   nccl.hpp           NCCL, the all-reduce baseline: a communicator per GPU, one grouped call
//   collectives.cpp    the hand-written all-reduces against NCCL's: algbw and busbw (nccl-tests)
//   sgemm_scaling.cu   C = A·B on one GPU against the same product split by rows over the GPUs
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
inline const std::vector<std::string> allreduce_variants = {"nccl_allreduce", "allreduce_ring", "allreduce_oneshot"};
inline const std::vector<std::string> gemm_variants = {"cublas_1gpu", "sgemm_split_switch", "sgemm_split_threads"};

struct GemmShape {
  int m = 0, n = 0, k = 0;
};

// ---- copies between GPUs (transfers.cpp) ----------------------------------------

// GB/s of every transfer row at one size, by (from, to) team index, for the matrices under the table.
struct TransferRates {
  std::int64_t bytes = 0;
  std::map<std::string, std::map<std::pair<int, int>, double>> gbps;
};

// Every transfer row at one size, for every ordered pair of the team: peer_copy,
// staged_copy, peer_read_kernel, peer_write_kernel, then peer_copy_bidir per pair.
TransferRates transfer_rows(cudalabs::Session& s, Team& team, std::int64_t bytes, TransferInputs& inputs,
                            HostScratch& scratch, HostScratch& staging);

// The matrices of one size, side by side: row = from GPU, column = to GPU
// (both ways: the pair's two directions summed, in both of its cells).
void transfer_notes(cudalabs::Session& s, const Team& team, const TransferRates& rates);

// ---- all-reduce (collectives.cpp) ---------------------------------------------------

struct AllReduceTimes {
  std::int64_t bytes = 0;
  std::map<std::string, double> ms;  // variant -> median ms (0: not run or not timed)
};

// The all-reduce rows at one size: NCCL's (when `nccl` is given), the ring's and
// the one-shot's.
AllReduceTimes allreduce_rows(cudalabs::Session& s, Team& team, std::int64_t bytes, TransferInputs& inputs,
                              HostScratch& scratch, NcclComms* nccl);

// nccl-tests' table: per size and variant, time, algbw and busbw side by side.
void allreduce_notes(cudalabs::Session& s, int g, const std::vector<AllReduceTimes>& all_sizes);

// ---- split SGEMM (sgemm_scaling.cu) -------------------------------------------------

// One shape: cublas_1gpu, then (`split`) the split rows, from one thread
// switching contexts and from `threads` (one host thread per GPU).
void gemm_rows(cudalabs::Session& s, Team& team, GemmShape shape, lab32::SplitSgemmThreads* threads, bool split,
               HostScratch& scratch);

}  // namespace lab32host

#pragma once
// Lab 32's fixed interface: what the course's host program (main.cu and its
// files by topic) may call of the student's files. kernels.cu defines it by
// including them, in a translation unit of its own, so nothing in them reaches
// the host program.
//
//   peer_kernels.cuh  the reduce-copy kernel: dst = src_0 + src_1 + ... (a copy
//                     with one source), any operand possibly on another GPU
//   allreduce.cuh     two hand-written all-reduces over those kernels and the
//                     copy engines: a ring, and a one-shot read of every peer
//   ring_flags.cuh    the ring in one kernel per GPU, GPUs waiting on flags in
//                     each other's memory: reduce-scatter, all-gather, all-reduce
//   two_shot.cuh      direct reduce-scatter and all-gather (every peer at once),
//                     and the two-shot all-reduce made of them
//   split_sgemm.cuh   C = A·B split by rows of C across the GPUs, enqueued from
//                     one thread switching contexts, or from one thread per GPU
//
// The course keeps the devices, streams, events, buffers and cuBLAS handles
// (host_common.hpp: one RAII struct per GPU), the fork from the session's
// stream to every GPU's stream and the join back, the checks and the NCCL
// baselines. Every function here only enqueues: it never waits for a GPU.
#include <cuda.h>  // CUcontext
#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <span>

#include <cudalabs/blas.hpp>
#include <cudalabs/device.hpp>

namespace lab32 {

// The most GPUs one all-reduce or split may span (one node of 8 GPUs).
inline constexpr int max_gpus = 8;
// The most channels (blocks, each one slice of every chunk) of ring_flags.cuh's
// kernel: the flag words each GPU lends its left neighbour.
inline constexpr int max_ring_channels = 64;

// ---- peer_kernels.cuh ---------------------------------------------------------

// dst[i] = src[i] for i < n, by the current GPU's SMs, on `stream` (a stream of
// the current GPU). dst or src may be another GPU's memory once peer access to
// it is enabled: a pull when src is remote, a push when dst is. Pointers must
// be 16-byte aligned (cudaMalloc's are 256-byte aligned).
void peer_copy_kernel(float* dst, const float* src, std::int64_t n, cudaStream_t stream);
cudalabs::KernelResources reduce_copy_resources();

// ---- allreduce.cuh ------------------------------------------------------------

// One GPU's part in an all-reduce of n floats: afterwards every recv holds the
// element-wise sum of all the sends, the same bits on every GPU.
struct AllReduceRank {
  int device;                           // CUDA device ordinal
  cudaStream_t stream;                  // this GPU's stream (already waits for the caller's fork)
  const float* send;                    // n floats on `device`; never written
  float* recv;                          // n floats on `device`
  std::span<const cudaEvent_t> events;  // made on `device`, for the algorithm's own steps between GPUs
  std::uint32_t* flags;                 // max_ring_channels words on `device`, zero before the first call of
                                        // ring_flags.cuh; the left neighbour's kernel posts its progress here
};

// Events each rank must bring for allreduce_ring over `gpus` GPUs: one per
// step, 2·(gpus − 1) (reduce-scatter, then all-gather).
constexpr int ring_events(int gpus) { return 2 * (gpus - 1); }

// Reduce-scatter then all-gather around the ring 0 → 1 → … → G−1 → 0: each GPU
// moves 2·(G−1)/G of the buffer over its links, the least any all-reduce can.
// Needs peer access from every GPU to its left neighbour.
void allreduce_ring(std::span<const AllReduceRank> ranks, std::int64_t n);
// Every GPU reads every other GPU's whole send buffer and sums: one kernel per
// GPU, no step between GPUs. Moves (G−1) buffers per GPU: the ring's traffic at
// G = 2, more beyond. Needs peer access between every pair.
void allreduce_oneshot(std::span<const AllReduceRank> ranks, std::int64_t n);

// The chunks of the reduce-scatters and all-gathers below: chunk r of G holds
// ceil(n / G) floats rounded up to 32 (allreduce.cuh's ring_chunk), the last
// ones shorter, or empty when n is small.

// ---- ring_flags.cuh -------------------------------------------------------------

// The ring as one kernel per GPU, the steps ordered by flags (ranks[i].flags).
// `epoch`: a number the caller makes larger at every call of any of the three
// (never 0): the flags are compared with it, never reset. Needs peer access from
// every GPU to its left neighbour, and every GPU's kernel running at once.
// reduce_scatter_ring: GPU r's recv, chunk r = the sum of chunk r of every send.
void reduce_scatter_ring(std::span<const AllReduceRank> ranks, std::int64_t n, std::uint32_t epoch);
// all_gather_ring: every recv, chunk g = chunk g of GPU g's send, for every g.
void all_gather_ring(std::span<const AllReduceRank> ranks, std::int64_t n, std::uint32_t epoch);
// allreduce_ring_flags: the two in one kernel; every recv = the sum of the sends.
void allreduce_ring_flags(std::span<const AllReduceRank> ranks, std::int64_t n, std::uint32_t epoch);

// ---- two_shot.cuh ---------------------------------------------------------------

// The same three results, every GPU reading every peer at once. Need peer access
// between every pair. allreduce_twoshot uses events[0] of each rank.
void reduce_scatter_direct(std::span<const AllReduceRank> ranks, std::int64_t n);
void all_gather_direct(std::span<const AllReduceRank> ranks, std::int64_t n);
void allreduce_twoshot(std::span<const AllReduceRank> ranks, std::int64_t n);

// ---- split_sgemm.cuh ----------------------------------------------------------

// One GPU's rows of C = A·B (row-major): C[rows×n] = A[rows×k] · B[k×n].
struct GemmShard {
  int device;                   // CUDA device ordinal
  CUcontext context;            // the device's primary context (what cudaSetDevice makes current)
  const cudalabs::Cublas* blas; // a handle made with `device` current; call it only with `device` current
  cudaStream_t stream;          // this GPU's stream (already waits for the caller's fork)
  const float* a;               // this GPU's rows of A, on `device`
  const float* b;               // a replica of the whole of B, on `device`
  float* c;                     // this GPU's rows of C, on `device`
  int rows;                     // may be 0 (fewer rows than GPUs): then nothing to do
};

// The course's: makes `context` current on the calling thread (the driver API's
// cuCtxSetCurrent, reached through the runtime's driver entry point, checked).
// Defined in devices.cpp.
void set_current_context(CUcontext context);

// Enqueues every shard's product from the calling thread, making each GPU's
// primary context current in turn (cuCtxSetCurrent), as the original did.
void split_sgemm_one_thread(std::span<const GemmShard> shards, int n, int k);

// One host thread per GPU, started once: thread i makes devices[i] current for
// its whole life. enqueue() hands shard i to thread i and returns when every
// thread has enqueued its product (a host wait for the enqueues, bounded; not
// a wait for the GPUs).
class SplitSgemmThreads {
 public:
  explicit SplitSgemmThreads(std::span<const int> devices);
  ~SplitSgemmThreads();
  SplitSgemmThreads(const SplitSgemmThreads&) = delete;
  SplitSgemmThreads& operator=(const SplitSgemmThreads&) = delete;
  void enqueue(std::span<const GemmShard> shards, int n, int k);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace lab32

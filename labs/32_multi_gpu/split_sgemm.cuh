#pragma once
// Lab 32's split SGEMM: C = A·B with the rows of C (and of A) split across the
// GPUs and B replicated on each, so the GPUs never need each other's data:
// each computes its rows with cuBLAS on its own handle and stream. The course
// gives each GPU its shard (kernels.hpp, GemmShard) and times the whole.
//
// Two ways to drive several GPUs from the host:
//   - one thread, switching: before each GPU's call, make that GPU's context
//     current. A CUDA context is a GPU's address space, modules and streams;
//     the runtime uses one per device, its "primary context", and cudaSetDevice
//     makes it current. Here it is the driver API's cuCtxSetCurrent on that
//     same primary context, as the original course did: the runtime (and
//     cuBLAS) then work on that device. Enqueueing is fast (microseconds per
//     call), so one thread keeps many GPUs busy when each call is long.
//   - one thread per GPU, each with its device current for its whole life: no
//     switching, and the enqueues of different GPUs overlap — what programs
//     with host work per GPU (data loading, MPI ranks, NCCL's one process per
//     GPU) do. The threads start once: starting a thread costs ~50 us, in
//     every timed run if done there.
#include <chrono>
#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <span>
#include <stdexcept>
#include <thread>
#include <vector>

#include <cudalabs/blas.hpp>
#include <cudalabs/error.hpp>

#include "kernels.hpp"

using lab32::GemmShard;

inline void enqueue_shard(const GemmShard& s, int n, int k) {
  if (s.rows > 0) s.blas->sgemm(s.a, s.b, s.c, s.rows, n, k, s.stream);
}

inline void split_sgemm_switching(std::span<const GemmShard> shards, int n, int k) {
  // BEGIN SOLUTION sgemm_split_switch
  for (const GemmShard& s : shards) {
    lab32::set_current_context(s.context);
    enqueue_shard(s, n, k);
  }
  // END SOLUTION
  // STUB: // TODO: for each shard, make its GPU's context current (lab32::set_current_context), then enqueue_shard.
  // STUB: cudalabs::not_implemented("split_sgemm_switching", shards, n, k);
}

// A thread per GPU that runs one job at a time for the caller.
class GpuThreads {
 public:
  explicit GpuThreads(std::span<const int> devices) {
    for (std::size_t i = 0; i < devices.size(); ++i)
      threads_.emplace_back([this, i, device = devices[i]] { serve(i, device); });
  }
  ~GpuThreads() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    for (auto& t : threads_) t.join();
  }
  GpuThreads(const GpuThreads&) = delete;
  GpuThreads& operator=(const GpuThreads&) = delete;

  // Runs job(i) on thread i for every i, and returns when all have returned;
  // rethrows the first exception a job threw. The wait is bounded: enqueueing
  // takes microseconds, so a minute means something is stuck.
  void run_on_each(const std::function<void(std::size_t)>& job) {
    std::unique_lock<std::mutex> lock(mutex_);
    job_ = &job;
    pending_ = threads_.size();
    error_ = nullptr;
    ++generation_;
    wake_.notify_all();
    if (!done_.wait_for(lock, std::chrono::seconds(60), [&] { return pending_ == 0; }))
      throw cudalabs::CudaError("split_sgemm_threads: a GPU thread did not finish enqueueing within 60 s");
    job_ = nullptr;
    if (error_) std::rethrow_exception(error_);
  }

 private:
  void serve(std::size_t index, int device) {
    std::exception_ptr start_error;
    try {
      CUDALABS_CHECK(cudaSetDevice(device));  // once: this thread's device for its whole life
    } catch (...) {
      start_error = std::current_exception();
    }
    std::uint64_t seen = 0;
    std::unique_lock<std::mutex> lock(mutex_);
    while (true) {
      wake_.wait(lock, [&] { return stopping_ || generation_ != seen; });
      if (stopping_) return;
      seen = generation_;
      const auto* job = job_;
      lock.unlock();
      std::exception_ptr error = start_error;
      if (!error) try {
          (*job)(index);
        } catch (...) {
          error = std::current_exception();
        }
      lock.lock();
      if (error && !error_) error_ = error;
      if (--pending_ == 0) done_.notify_one();
    }
  }

  std::vector<std::thread> threads_;
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  const std::function<void(std::size_t)>* job_ = nullptr;
  std::size_t pending_ = 0;
  std::uint64_t generation_ = 0;
  std::exception_ptr error_;
  bool stopping_ = false;
};

// One GPU thread per shard: thread i enqueues shard i on the device it keeps current.
class SplitSgemmOnThreads {
 public:
  explicit SplitSgemmOnThreads(std::span<const int> devices) : devices_(devices.begin(), devices.end()), threads_(devices) {}

  void enqueue(std::span<const GemmShard> shards, int n, int k) {
    // BEGIN SOLUTION sgemm_split_threads
    if (shards.size() != devices_.size())
      throw std::invalid_argument("split_sgemm_threads: one shard per GPU thread");
    for (std::size_t i = 0; i < shards.size(); ++i)
      if (shards[i].device != devices_[i])
        throw std::invalid_argument("split_sgemm_threads: shard i must be on the device of thread i");
    threads_.run_on_each([&](std::size_t i) { enqueue_shard(shards[i], n, k); });
    // END SOLUTION
    // STUB: // TODO: check one shard per thread, on its device; threads_.run_on_each: thread i enqueues shard i.
    // STUB: cudalabs::not_implemented("split_sgemm_threads", shards, n, k);
  }

 private:
  std::vector<int> devices_;
  GpuThreads threads_;
};

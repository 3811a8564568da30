#pragma once
// Lab 08's fixed interface between main.cu (the course's host program) and the
// student's pipeline file, streams.cuh. kernels.cu defines StreamPipeline by
// wrapping the student's class, in a translation unit of its own.
//
// Everything the overlap ceiling is made of stays the course's: the stages timed
// alone, the one-stream baseline, the chunking (split_into_chunks) and the
// kernel itself, lab 01's, which main.cu defines below as lab08::vector_add for
// the pipeline to launch. Nothing a student writes moves the ceiling that their
// pipeline is reported against.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include <cudalabs/memory.hpp>

namespace lab08 {

// Elements [begin, begin + count) of the vectors.
struct Chunk {
  std::int64_t begin = 0;
  std::int64_t count = 0;
};

// Host side in pinned memory (pageable memory would make every copy synchronous:
// see the README), device side in ordinary device buffers. Plain pointers so one
// type serves every variant.
struct HostVectors {
  const float* a;
  const float* b;
  float* c;
};
struct DeviceVectors {
  float* a;
  float* b;
  float* c;
};

// Per-chunk events of one instrumented run, for the timeline. Stage s of chunk
// i ran between marks[4i + s] and marks[4i + s + 1] (s = 0 H2D, 1 kernel,
// 2 D2H); all times are read relative to `zero`, recorded on the origin stream
// before the fork.
struct TimelineMarks {
  cudalabs::Event zero;
  std::vector<cudalabs::Event> marks;
};

// The course's: lab 01's kernel, c[i] = a[i] + b[i] for i < n, enqueued on
// `stream`. Defined in main.cu; the student's pipeline launches it per chunk.
void vector_add(const float* a, const float* b, float* c, std::int64_t n, cudaStream_t stream);

// The student's: the round trip of every chunk (upload a and b, add, download c)
// on up to `max_streams` worker streams of its own.
class StreamPipeline {
 public:
  explicit StreamPipeline(int max_streams);
  ~StreamPipeline();
  StreamPipeline(const StreamPipeline&) = delete;
  StreamPipeline& operator=(const StreamPipeline&) = delete;

  // Enqueues every chunk's round trip, chunk i on worker i % streams, forked from
  // and joined back to `origin`, so that two events on `origin` bracket all of it.
  // With `timeline`, records timeline->marks[4i + s] before each stage s of chunk
  // i and after its last. Never synchronises. Returns the workers used.
  int enqueue(const HostVectors& host, const DeviceVectors& dev, std::span<const Chunk> chunks, int streams,
              cudaStream_t origin, TimelineMarks* timeline = nullptr);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace lab08

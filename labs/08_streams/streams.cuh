#pragma once
// Lab 08's pipeline: the vector add of lab 01 cut into chunks, each chunk's
// H2D copies, kernel and D2H copy issued on one of S worker streams, so that
// while chunk i computes, chunk i+1 uploads and chunk i-1 downloads.
//
// The pipeline hangs off one "origin" stream (the session's timed stream): the
// workers wait on an event recorded there before any chunk starts (fork), and
// the origin waits on each worker's last event (join). Two CUDA events on the
// origin stream therefore bracket all of the multi-stream work, which is what
// the harness's event timer needs.
#include <algorithm>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include <cudalabs/error.hpp>
#include <cudalabs/math.hpp>
#include <cudalabs/memory.hpp>

#include "../01_vector_add/vector_add.cuh"

struct Chunk {
  std::int64_t begin = 0;
  std::int64_t count = 0;
};

// Splits [0, n) into at most `chunks` pieces of ceil(n / chunks) elements; the
// last one is shorter when `chunks` does not divide n. Empty pieces are left
// out: n = 3 in 4 chunks gives 3 chunks of one element.
inline std::vector<Chunk> split_into_chunks(std::int64_t n, std::int64_t chunks) {
  const std::int64_t per_chunk = cudalabs::ceil_div(n, chunks);
  std::vector<Chunk> out;
  for (std::int64_t begin = 0; begin < n; begin += per_chunk) out.push_back({begin, std::min(per_chunk, n - begin)});
  return out;
}

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

// One chunk of the round trip on one stream: upload a and b, add, download c.
// Enqueue only; nothing here waits.
inline void upload_chunk(const HostVectors& host, const DeviceVectors& dev, Chunk k, cudaStream_t stream) {
  const std::size_t bytes = static_cast<std::size_t>(k.count) * sizeof(float);
  CUDALABS_CHECK(cudaMemcpyAsync(dev.a + k.begin, host.a + k.begin, bytes, cudaMemcpyHostToDevice, stream));
  CUDALABS_CHECK(cudaMemcpyAsync(dev.b + k.begin, host.b + k.begin, bytes, cudaMemcpyHostToDevice, stream));
}
inline void add_chunk(const DeviceVectors& dev, Chunk k, cudaStream_t stream) {
  vector_add(dev.a + k.begin, dev.b + k.begin, dev.c + k.begin, k.count, stream);
}
inline void download_chunk(const HostVectors& host, const DeviceVectors& dev, Chunk k, cudaStream_t stream) {
  const std::size_t bytes = static_cast<std::size_t>(k.count) * sizeof(float);
  CUDALABS_CHECK(cudaMemcpyAsync(host.c + k.begin, dev.c + k.begin, bytes, cudaMemcpyDeviceToHost, stream));
}

// Per-chunk events of one instrumented run, for the timeline. Stage s of chunk
// i ran between marks[4i + s] and marks[4i + s + 1] (s = 0 H2D, 1 kernel,
// 2 D2H); all times are read relative to `zero`, recorded on the origin stream
// before the fork.
struct TimelineMarks {
  cudalabs::Event zero;
  std::vector<cudalabs::Event> marks;
};

inline constexpr const char* stage_names[3] = {"h2d", "kernel", "d2h"};

class StreamPipeline {
 public:
  explicit StreamPipeline(int max_streams) : workers_(max_streams), joins_(max_streams) {}

  // Enqueues the round trip of every chunk, chunk i on worker i % streams, in
  // chunk order (depth first: a chunk's four operations, then the next chunk).
  // Workers beyond the number of chunks are not used; returns how many were.
  int enqueue(const HostVectors& host, const DeviceVectors& dev, std::span<const Chunk> chunks, int streams,
               cudaStream_t origin, TimelineMarks* timeline = nullptr) {
    const std::size_t used = std::min<std::size_t>(std::min<std::size_t>(streams, workers_.size()), chunks.size());
    if (used == 0) return 0;  // no chunks (n = 0 never reaches here: sizes start at 1)
    fork_.record(origin);
    for (std::size_t w = 0; w < used; ++w) CUDALABS_CHECK(cudaStreamWaitEvent(workers_[w], fork_, 0));
    for (std::size_t i = 0; i < chunks.size(); ++i) {
      const cudaStream_t stream = workers_[i % used];
      auto mark = [&](int stage) {
        if (timeline) timeline->marks[4 * i + stage].record(stream);
      };
      mark(0);
      upload_chunk(host, dev, chunks[i], stream);
      mark(1);
      add_chunk(dev, chunks[i], stream);
      mark(2);
      download_chunk(host, dev, chunks[i], stream);
      mark(3);
    }
    for (std::size_t w = 0; w < used; ++w) {
      joins_[w].record(workers_[w]);
      CUDALABS_CHECK(cudaStreamWaitEvent(origin, joins_[w], 0));
    }
    return static_cast<int>(used);
  }

 private:
  std::vector<cudalabs::Stream> workers_;  // non-blocking: no implicit sync with the legacy default stream
  cudalabs::Event fork_;
  std::vector<cudalabs::Event> joins_;
};

// ---- the timeline ------------------------------------------------------------

struct TimelineRow {
  int stream = 0;
  std::int64_t chunk = 0;
  int stage = 0;  // index into stage_names
  double start_ms = 0, end_ms = 0;
};

// One instrumented run of the pipeline: an event before and after every stage
// of every chunk, read relative to an event on the origin stream before the
// fork. An event completes when its stream reaches it, so a stage's bar starts
// when its stream was ready for it, which can be before its engine was free.
inline std::vector<TimelineRow> record_timeline(StreamPipeline& pipeline, const HostVectors& host,
                                                const DeviceVectors& dev, std::span<const Chunk> chunks,
                                                int streams, cudaStream_t origin) {
  TimelineMarks t{.zero = {}, .marks = std::vector<cudalabs::Event>(4 * chunks.size())};
  t.zero.record(origin);
  const int used = pipeline.enqueue(host, dev, chunks, streams, origin, &t);
  CUDALABS_CHECK(cudaStreamSynchronize(origin));
  std::vector<TimelineRow> rows;
  for (std::size_t i = 0; i < chunks.size(); ++i)
    for (int stage = 0; stage < 3; ++stage)
      rows.push_back({.stream = static_cast<int>(i % used),
                      .chunk = static_cast<std::int64_t>(i),
                      .stage = stage,
                      .start_ms = t.marks[4 * i + stage].ms_since(t.zero),
                      .end_ms = t.marks[4 * i + stage + 1].ms_since(t.zero)});
  return rows;
}

using Intervals = std::vector<std::pair<double, double>>;

// The union of the intervals of one stage over all streams, as disjoint sorted intervals.
inline Intervals busy_intervals(const std::vector<TimelineRow>& rows, int stage) {
  Intervals in;
  for (const auto& r : rows)
    if (r.stage == stage) in.emplace_back(r.start_ms, r.end_ms);
  std::sort(in.begin(), in.end());
  Intervals merged;
  for (const auto& iv : in) {
    if (!merged.empty() && iv.first <= merged.back().second)
      merged.back().second = std::max(merged.back().second, iv.second);
    else
      merged.push_back(iv);
  }
  return merged;
}

inline double total_ms(const Intervals& in) {
  double t = 0;
  for (const auto& [start, end] : in) t += end - start;
  return t;
}

// Time during which both sets are busy (both inputs disjoint and sorted).
inline double overlap_ms(const Intervals& x, const Intervals& y) {
  double t = 0;
  for (std::size_t i = 0, j = 0; i < x.size() && j < y.size();) {
    t += std::max(0.0, std::min(x[i].second, y[j].second) - std::max(x[i].first, y[j].first));
    if (x[i].second < y[j].second) ++i; else ++j;
  }
  return t;
}

// ---- the overlap ceiling -----------------------------------------------------

// Whole-vector times of the three stages, measured one at a time on one stream.
struct StageTimes {
  double h2d_ms = 0, kernel_ms = 0, d2h_ms = 0;
  bool known() const { return h2d_ms > 0 && kernel_ms > 0 && d2h_ms > 0; }
};

// The fastest `chunks` equal chunks can go through the three stages, if every
// stage that has its own hardware runs at the speed measured alone.
//
// Each stage of one chunk takes t/C. With a copy engine per direction (2 or more
// async engines: H100, A100, every recent GPU) all three stages run at once, the
// slowest runs back to back for C·max/C = max, and the other two add one chunk
// each: the first chunk's earlier stages before it starts (fill) and the last
// chunk's later stages after it ends (drain):
//     T = max(h2d, kernel, d2h) + (h2d + kernel + d2h - max) / C.
// With one copy engine H2D and D2H take turns on it, so the copy stage is
// h2d + d2h; with none, copies do not overlap kernels at all and T is the sum.
// C = 1 gives the sum in every case: one chunk cannot overlap with anything.
inline double overlap_ceiling_ms(const StageTimes& t, std::int64_t chunks, int copy_engines) {
  const double sum = t.h2d_ms + t.kernel_ms + t.d2h_ms;
  if (copy_engines <= 0) return sum;
  const double slowest = copy_engines == 1 ? std::max(t.h2d_ms + t.d2h_ms, t.kernel_ms)
                                           : std::max({t.h2d_ms, t.kernel_ms, t.d2h_ms});
  return slowest + (sum - slowest) / static_cast<double>(chunks);
}

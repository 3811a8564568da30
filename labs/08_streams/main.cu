// Lab 08 — streams: pinned memory, and copies overlapped with compute.
//
// Lab 03 showed that a GPU vector add spends almost all of its end-to-end time
// on PCIe. Two things shorten it, and this lab measures them apart:
//   1. pinned host memory: the copy engines read and write it directly, at the
//      link rate, instead of going through the driver's staging buffer;
//   2. overlap: cut the vectors into chunks and give them to several streams, so
//      the H2D engine, the SMs and the D2H engine all work at the same time.
// The three stages are also timed alone; from them the lab computes the overlap
// ceiling, the time perfect overlap would give (overlap_ceiling_ms), and reports every
// end-to-end variant as % of it. One instrumented run records per-chunk events
// for the timeline plot (--timeline FILE, plots/streams_timeline.gp).
//
// Variants (c = a + b over n floats, lab 01's kernel; 12n bytes cross PCIe):
//   pinned_h2d      a, b to the GPU from pinned memory, one stream   (a stage of the ceiling)
//   kernel          the kernel alone, data already on the GPU         (a stage of the ceiling)
//   pinned_d2h      c back to pinned memory                          (a stage of the ceiling)
//   pinned_sync     pinned memory, one stream: upload, add, download in turn  [baseline]
//   pageable_sync   the original's baseline: cudaMemcpy from pageable memory, legacy default stream
//   pinned_streams  pinned memory, S streams x C chunks, copies and kernels overlapped
//   sweep           pinned_streams for S in {1,2,4} x C in {1,2,4,8,16,32} (not under --quick)
//
// Inputs (--inputs): uniform values in [-100, 100), or specials: a quarter of
// them ±Inf, NaNs with payloads, ±0, subnormals, ±FLT_MAX, every one of them in
// the last chunk (labs/shared/value_kinds.hpp). The copies must then move every
// bit and the add stay one IEEE float addition (labs/shared/round_trip_inputs.hpp):
// a pipeline that copies a chunk through float arithmetic, or drops the last
// chunk's tail, fails.
//
// Run: make run LAB=08                      (n = 2^24, 2^26; --streams 2 --chunks 4)
//      make run LAB=08 ARGS="--size 2^24 --streams 4 --chunks 8 --timeline build/08_timeline.csv"
//
// The student's part is the pipeline (streams.cuh, behind kernels.hpp). The
// stages, the baselines, the chunking and the ceiling are the course's, here.
#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <fstream>
#include <map>

#include <cudalabs/lab.hpp>

#include "../01_vector_add/vector_add.cuh"  // the course's lab 01 kernel: the kernel stage, the baselines, the pipeline's
#include "round_trip_inputs.hpp"
#include "kernels.hpp"
#include "value_kinds.hpp"

using lab08::Chunk;
using lab08::DeviceVectors;
using lab08::HostVectors;

// The kernel the student's pipeline launches: the course's, so that the kernel
// stage of the ceiling and the pipeline run the same code.
void lab08::vector_add(const float* a, const float* b, float* c, std::int64_t n, cudaStream_t stream) {
  ::vector_add(a, b, c, n, stream);
}

namespace {

// The whole vectors across PCIe on one stream: the copy stages and the
// one-stream baseline. Enqueue only.
void upload(const HostVectors& host, const DeviceVectors& dev, std::int64_t n, cudaStream_t stream) {
  CUDALABS_CHECK(cudaMemcpyAsync(dev.a, host.a, n * sizeof(float), cudaMemcpyHostToDevice, stream));
  CUDALABS_CHECK(cudaMemcpyAsync(dev.b, host.b, n * sizeof(float), cudaMemcpyHostToDevice, stream));
}
void download(const HostVectors& host, const DeviceVectors& dev, std::int64_t n, cudaStream_t stream) {
  CUDALABS_CHECK(cudaMemcpyAsync(host.c, dev.c, n * sizeof(float), cudaMemcpyDeviceToHost, stream));
}

// Splits [0, n) into at most `chunks` pieces of ceil(n / chunks) elements; the
// last one is shorter when `chunks` does not divide n. Empty pieces are left
// out: n = 3 in 4 chunks gives 3 chunks of one element.
std::vector<Chunk> split_into_chunks(std::int64_t n, std::int64_t chunks) {
  const std::int64_t per_chunk = cudalabs::ceil_div(n, chunks);
  std::vector<Chunk> out;
  for (std::int64_t begin = 0; begin < n; begin += per_chunk) out.push_back({begin, std::min(per_chunk, n - begin)});
  return out;
}

constexpr const char* stage_names[3] = {"h2d", "kernel", "d2h"};

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
std::vector<TimelineRow> record_timeline(lab08::StreamPipeline& pipeline, const HostVectors& host, const DeviceVectors& dev,
                                         std::span<const Chunk> chunks, int streams, cudaStream_t origin) {
  lab08::TimelineMarks t{.zero = {}, .marks = std::vector<cudalabs::Event>(4 * chunks.size())};
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
Intervals busy_intervals(const std::vector<TimelineRow>& rows, int stage) {
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

double total_ms(const Intervals& in) {
  double t = 0;
  for (const auto& [start, end] : in) t += end - start;
  return t;
}

// Time during which both sets are busy (both inputs disjoint and sorted).
double overlap_ms(const Intervals& x, const Intervals& y) {
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
double overlap_ceiling_ms(const StageTimes& t, std::int64_t chunks, int copy_engines) {
  const double sum = t.h2d_ms + t.kernel_ms + t.d2h_ms;
  if (copy_engines <= 0) return sum;
  const double slowest = copy_engines == 1 ? std::max(t.h2d_ms + t.d2h_ms, t.kernel_ms)
                                           : std::max({t.h2d_ms, t.kernel_ms, t.d2h_ms});
  return slowest + (sum - slowest) / static_cast<double>(chunks);
}

// ---- the sweep and the notes ------------------------------------------------

constexpr int sweep_streams[] = {1, 2, 4};
constexpr int sweep_chunks[] = {1, 2, 4, 8, 16, 32};

std::string strprintf(const char* format, ...) {
  char buf[512];
  va_list args;
  va_start(args, format);
  std::vsnprintf(buf, sizeof buf, format, args);
  va_end(args);
  return buf;
}

// Async engines the device has: 2 or more means an H2D copy, a D2H copy and a
// kernel can all run at once (one engine per direction).
int copy_engine_count(int device) {
  int engines = 0;
  CUDALABS_CHECK(cudaDeviceGetAttribute(&engines, cudaDevAttrAsyncEngineCount, device));
  return engines;
}

}  // namespace

int main(int argc, char** argv) {
  const cudalabs::LabSpec spec{
      .name = "08_streams",
      .title = "pinned memory and copies overlapped with compute, on S streams x C chunks",
      .about = "Times c = a + b end to end (upload a and b, add, download c) three ways: from pageable memory\n"
               "with synchronous copies, from pinned memory on one stream, and from pinned memory cut into C\n"
               "chunks on S streams so that H2D copies, kernels and D2H copies overlap. The H2D, kernel and D2H\n"
               "stages are also timed alone; the overlap ceiling max(stage) + (sum - max) / C made from them is\n"
               "what perfect overlap would give, and each end-to-end time is reported as % of it (%ceil).\n"
               "GB/s of end-to-end variants = 12 n bytes / time.",
      .sizes = {{.name = "n",
                 .help = "elements per vector",
                 .full = {1 << 24, 1 << 26},
                 .quick = {1, 257, 1000003},
                 .max = std::int64_t{1} << 30}},
      .variants = {{"pinned_h2d", "a, b to the GPU from pinned memory, one stream (always runs: a stage of the ceiling)"},
                   {"kernel", "the kernel alone, data on the GPU (always runs: a stage of the ceiling)"},
                   {"pinned_d2h", "c back to pinned memory, one stream (always runs: a stage of the ceiling)"},
                   {"pinned_sync", "pinned memory, one stream: upload, add, download in turn", true},
                   {"pageable_sync", "cudaMemcpy from/to pageable memory on the legacy default stream (host clock)"},
                   {"pinned_streams", "pinned memory, --streams S x --chunks C, copies and kernels overlapped"},
                   {"sweep", "pinned_streams for S in {1,2,4} x C in {1,2,4,8,16,32}; skipped by --quick unless named"}},
      .flags = {{.name = "streams", .help = "worker streams of pinned_streams", .default_value = "2", .min = 1, .max = 16},
                {.name = "chunks", .help = "chunks of pinned_streams; chunk i goes on stream i % S", .default_value = "4",
                 .min = 1, .max = 256},
                {.name = "timeline",
                 .help = "write the per-chunk event timeline of pinned_streams to this CSV (plots/streams_timeline.gp)",
                 .kind = cudalabs::ExtraFlag::Kind::text},
                value_kinds::vector_add_inputs_flag()},
  };
  return cudalabs::run_lab(argc, argv, spec, [&spec](cudalabs::Session& s) {
    const auto& options = s.options();
    const int streams = static_cast<int>(options.integer("streams"));
    const std::int64_t chunk_count = options.integer("chunks");
    const auto& named = options.variants;
    const bool sweep_named = std::find(named.begin(), named.end(), "sweep") != named.end();
    const bool run_sweep = s.selected("sweep") && (!options.quick || sweep_named);
    const int engines = copy_engine_count(s.device().id);
    const cudalabs::GivenCeiling link{"pcie_link_gbps", s.device().pcie_gbps()};
    const bool specials = options.text("inputs") == "specials";

    std::ofstream timeline_csv;
    if (const std::string path = options.text("timeline"); !path.empty() && s.selected("pinned_streams")) {
      timeline_csv.open(path, std::ios::trunc);
      if (!timeline_csv)
        throw cudalabs::UsageError("--timeline " + path +
                                   ": cannot open the file for writing. Check the folder exists and is writable.");
      timeline_csv << "n,stream,chunk,op,start_ms,end_ms\n";
    }

    lab08::StreamPipeline pipeline(std::max(streams, 4));

    for (const auto& point : s.points()) {
      const std::int64_t n = point.at("n");
      const double vec_bytes = 4.0 * n;
      const double round_trip_bytes = 3 * vec_bytes;  // a and b up, c down: the 12n of the original's GB/s

      // Pageable a, b for pageable_sync; pinned ones for the rest. And the checks:
      // a sum rounds once (half an ulp, 2^-24), a copy is exact.
      RoundTripInputs in(n, specials);
      const auto& a = in.a;
      const auto& b = in.b;
      std::vector<float> pageable_c(n);
      cudalabs::PinnedBuffer<float> pinned_c(n, "pinned c");
      cudalabs::DeviceBuffer<float> d_a(n, "a"), d_b(n, "b"), d_c(n, "c");
      const HostVectors pinned{in.pinned_a.data(), in.pinned_b.data(), pinned_c.data()};
      // Read at each use, never kept: the harness's last check moves every buffer.
      auto dev = [&] { return DeviceVectors{d_a.data(), d_b.data(), d_c.data()}; };

      auto make_inputs = [&](std::uint64_t seed) { in.draw(seed, s.stream()); };
      make_inputs(s.seed());
      // For the stages that start from data already on the GPU: a and b there,
      // and for the download c = a + b too.
      auto inputs_on_device = [&](std::uint64_t seed) {
        make_inputs(seed);
        upload(pinned, dev(), n, s.stream());
      };
      auto sums_on_device = [&](std::uint64_t seed) {
        inputs_on_device(seed);
        vector_add(dev().a, dev().b, dev().c, n, s.stream());
      };

      auto check_pinned_c = [&] { return in.check_round_trip(pinned_c.span(), d_a, d_b); };
      auto poison_pinned_c = [&] { std::fill(pinned_c.data(), pinned_c.data() + n, NAN); };
      auto poison_device = [&](cudaStream_t st) { d_a.poison(st); d_b.poison(st); d_c.poison(st); };
      auto poison_pinned_round_trip = [&](cudaStream_t st) { poison_pinned_c(); poison_device(st); };
      auto link_or_none = link.gbps > 0 ? cudalabs::CeilingKind::given : cudalabs::CeilingKind::none;

      // ---- the three stages alone: the inputs of the overlap ceiling ----------
      StageTimes stages;
      stages.h2d_ms = s.measure({.variant = "pinned_h2d",
                                 .size = point,
                                 .work = {.bytes = 2 * vec_bytes},
                                 .run = [&](cudaStream_t st) { upload(pinned, dev(), n, st); },
                                 .check =
                                     [&] { return in.check_uploaded(d_a.download(), d_b.download()); },
                                 .poison = [&](cudaStream_t st) { d_a.poison(st); d_b.poison(st); },
                                 .new_inputs = make_inputs,
                                 .expect = cudalabs::Expect::copies,
                                 .ceiling = link_or_none,
                                 .given_ceiling = link})
                          .timing.median_ms;

      upload(pinned, dev(), n, s.stream());
      stages.kernel_ms = s.measure({.variant = "kernel",
                                    .size = point,
                                    .work = {.bytes = round_trip_bytes, .flops = 1.0 * n},
                                    .run = [&](cudaStream_t st) { vector_add(dev().a, dev().b, dev().c, n, st); },
                                    .check = [&] { return in.check_sum(d_c.download()); },
                                    .poison = [&](cudaStream_t st) { d_c.poison(st); },
                                    .new_inputs = inputs_on_device,
                                    .resources = cudalabs::resources_of(vector_add_kernel, vector_add_block)})
                             .timing.median_ms;

      upload(pinned, dev(), n, s.stream());
      vector_add(dev().a, dev().b, dev().c, n, s.stream());
      stages.d2h_ms = s.measure({.variant = "pinned_d2h",
                                 .size = point,
                                 .work = {.bytes = vec_bytes},
                                 .run = [&](cudaStream_t st) { download(pinned, dev(), n, st); },
                                 .check = [&] { return in.check_downloaded(pinned_c.span(), d_c); },
                                 .poison = [&](cudaStream_t) { poison_pinned_c(); },
                                 .new_inputs = sums_on_device,
                                 .expect = cudalabs::Expect::copies,
                                 .ceiling = link_or_none,
                                 .given_ceiling = link})
                          .timing.median_ms;

      // The end-to-end variants are reported as % of what perfect overlap of
      // these stages would give with `chunks` chunks (overlap_ceiling_ms).
      // Unknown under --check-only, which times nothing. Each is a round trip
      // from the host: copies are its lesson, and it starts from new host inputs.
      auto with_ceiling = [&](cudalabs::Measurement m, std::int64_t pieces, int workers) {
        m.size = point;
        m.work = {.bytes = round_trip_bytes};
        m.new_inputs = make_inputs;
        m.expect = cudalabs::Expect::kernels_and_copies;
        m.extra = {{"streams", static_cast<double>(workers)},
                   {"chunks", static_cast<double>(pieces)},
                   {"copy_engines", static_cast<double>(engines)}};
        m.ceiling = cudalabs::CeilingKind::none;
        if (stages.known()) {
          const double ceiling_ms = overlap_ceiling_ms(stages, pieces, engines);
          m.ceiling = cudalabs::CeilingKind::given;
          m.given_ceiling = {"overlap_ceiling_gbps", round_trip_bytes / (ceiling_ms * 1e6)};
          m.extra["overlap_ceiling_ms"] = ceiling_ms;
          m.extra["h2d_ms"] = stages.h2d_ms;
          m.extra["kernel_ms"] = stages.kernel_ms;
          m.extra["d2h_ms"] = stages.d2h_ms;
        }
        return s.measure(m).timing.median_ms;
      };

      const auto chunks = split_into_chunks(n, chunk_count);
      const int streams_used = std::min<int>(streams, static_cast<int>(chunks.size()));

      // ---- end to end ---------------------------------------------------------
      // One stream, in turn: 2 uploads, the kernel, 1 download. The baseline of
      // the streamed variant; against pageable_sync it is the gain from pinning alone.
      const double pinned_sync_ms = with_ceiling({.variant = "pinned_sync",
                                                  .run =
                                                      [&](cudaStream_t st) {
                                                        upload(pinned, dev(), n, st);
                                                        vector_add(dev().a, dev().b, dev().c, n, st);
                                                        download(pinned, dev(), n, st);
                                                      },
                                                  .check = check_pinned_c,
                                                  .poison = poison_pinned_round_trip},
                                                 static_cast<std::int64_t>(chunks.size()), 1);

      double pageable_sync_ms = 0;
      if (s.selected("pageable_sync")) {
        // The original's baseline, as a student first writes it: cudaMemcpy and a
        // launch on the legacy default stream (the session stream is non-blocking,
        // so poison and work must both go on the legacy stream to stay ordered).
        // cudaMemcpy from pageable memory stages through a pinned driver buffer
        // and returns when the host buffer may be reused; the D2H one returns when
        // c is on the host. Host clock: the CPU is busy for the whole copy.
        const std::size_t vec_size = n * sizeof(float);
        pageable_sync_ms = with_ceiling(
            {.variant = "pageable_sync",
             .run =
                 [&](cudaStream_t) {
                   CUDALABS_CHECK(cudaMemcpy(d_a.data(), a.data(), vec_size, cudaMemcpyHostToDevice));
                   CUDALABS_CHECK(cudaMemcpy(d_b.data(), b.data(), vec_size, cudaMemcpyHostToDevice));
                   vector_add(d_a.data(), d_b.data(), d_c.data(), n, cudaStreamLegacy);
                   CUDALABS_CHECK(cudaMemcpy(pageable_c.data(), d_c.data(), vec_size, cudaMemcpyDeviceToHost));
                 },
             .check = [&] { return in.check_round_trip(pageable_c, d_a, d_b); },
             .poison =
                 [&](cudaStream_t) {
                   std::fill(pageable_c.begin(), pageable_c.end(), NAN);
                   poison_device(cudaStreamLegacy);
                 },
             .clock = cudalabs::Clock::host},
            static_cast<std::int64_t>(chunks.size()), 1);
      }

      double streamed_ms = 0;
      if (s.selected("pinned_streams")) {
        streamed_ms = with_ceiling(
            {.variant = "pinned_streams",
             .run = [&](cudaStream_t st) { pipeline.enqueue(pinned, dev(), chunks, streams, st); },
             .check = check_pinned_c,
             .poison = poison_pinned_round_trip},
            static_cast<std::int64_t>(chunks.size()), streams_used);
      }
      // One more run, instrumented, for the timeline. Checked like every run.
      // Only after a correct pinned_streams: a wrong one (or a starter kit's
      // stub) has nothing to draw, and must not stop the other variants.
      if (s.selected("pinned_streams") && s.records().back().variant == "pinned_streams" && s.records().back().passed) {
        poison_pinned_round_trip(s.stream());
        const auto rows = record_timeline(pipeline, pinned, dev(), chunks, streams, s.stream());
        cudalabs::Record r;
        r.lab = spec.name;
        r.variant = "pinned_streams_timeline";
        r.size = point;
        r.bytes = round_trip_bytes;
        r.check = check_pinned_c();
        r.passed = r.check.passed;
        r.seed = options.seed;
        const Intervals h2d = busy_intervals(rows, 0), kernels = busy_intervals(rows, 1), d2h = busy_intervals(rows, 2);
        double span = 0;
        for (const auto& row : rows) span = std::max(span, row.end_ms);
        r.extra = {{"streams", static_cast<double>(streams_used)},
                   {"chunks", static_cast<double>(chunks.size())},
                   {"span_ms", span},
                   {"h2d_busy_ms", total_ms(h2d)},
                   {"kernel_busy_ms", total_ms(kernels)},
                   {"d2h_busy_ms", total_ms(d2h)},
                   {"h2d_and_d2h_ms", overlap_ms(h2d, d2h)}};
        s.add(std::move(r));
        s.note(strprintf("%s, timeline of one run of pinned_streams (%d streams x %zu chunks): %.3f ms; H2D in flight "
                         "%.3f ms, kernels %.3f ms, D2H %.3f ms; H2D and D2H both in flight %.3f ms",
                         cudalabs::to_string(point).c_str(), streams_used, chunks.size(), span, total_ms(h2d),
                         total_ms(kernels), total_ms(d2h), overlap_ms(h2d, d2h)));
        if (timeline_csv.is_open()) {
          for (const auto& row : rows)
            timeline_csv << strprintf("%lld,%d,%lld,%s,%.4f,%.4f\n", static_cast<long long>(n), row.stream,
                                      static_cast<long long>(row.chunk), stage_names[row.stage], row.start_ms,
                                      row.end_ms);
          timeline_csv.flush();
        }
      }

      // ---- the sweep: where do more chunks stop helping? ----------------------
      if (run_sweep) {
        for (const int sweep_s : sweep_streams) {
          std::map<int, double> ms_by_chunks;
          for (const int sweep_c : sweep_chunks) {
            const auto sweep_split = split_into_chunks(n, sweep_c);
            ms_by_chunks[sweep_c] = with_ceiling(
                {.variant = strprintf("pinned_streams_s%d_c%d", sweep_s, sweep_c),
                 .run = [&](cudaStream_t st) { pipeline.enqueue(pinned, dev(), sweep_split, sweep_s, st); },
                 .check = check_pinned_c,
                 .poison = poison_pinned_round_trip},
                static_cast<std::int64_t>(sweep_split.size()),
                std::min<int>(sweep_s, static_cast<int>(sweep_split.size())));
          }
          double best = 0;
          int best_c = 0;
          for (const auto& [c, ms] : ms_by_chunks)
            if (ms > 0 && (best == 0 || ms < best)) {
              best = ms;
              best_c = c;
            }
          int enough_c = 0;  // the fewest chunks within 3% of the best: more stop paying
          for (const auto& [c, ms] : ms_by_chunks)
            if (ms > 0 && ms <= 1.03 * best) { enough_c = c; break; }
          if (best > 0)
            s.note(strprintf("%s, sweep with %d stream%s: fastest %.3f ms at %d chunks; %d chunks already within 3%% "
                             "of it",
                             cudalabs::to_string(point).c_str(), sweep_s, sweep_s == 1 ? "" : "s", best, best_c,
                             enough_c));
        }
      }

      // ---- the lesson in numbers measured above -------------------------------
      const std::string at = cudalabs::to_string(point);
      if (pageable_sync_ms > 0 && pinned_sync_ms > 0)
        s.note(strprintf("%s: pinning alone is %.2fx (pageable_sync %.3f ms -> pinned_sync %.3f ms)", at.c_str(),
                         pageable_sync_ms / pinned_sync_ms, pageable_sync_ms, pinned_sync_ms));
      if (streamed_ms > 0 && pinned_sync_ms > 0) {
        const std::string in_all =
            pageable_sync_ms > 0 ? strprintf("; %.2fx over pageable_sync in all", pageable_sync_ms / streamed_ms) : "";
        s.note(strprintf("%s: overlap adds %.2fx (pinned_sync -> pinned_streams, %d streams x %zu chunks)%s", at.c_str(),
                         pinned_sync_ms / streamed_ms, streams_used, chunks.size(), in_all.c_str()));
      }
      if (streamed_ms > 0 && stages.known()) {
        const double ceiling_ms = overlap_ceiling_ms(stages, static_cast<std::int64_t>(chunks.size()), engines);
        s.note(strprintf("%s: overlap ceiling for %zu chunks %.3f ms (H2D %.3f, kernel %.3f, D2H %.3f ms alone); "
                         "pinned_streams reached %.1f%% of it",
                         at.c_str(), chunks.size(), ceiling_ms, stages.h2d_ms, stages.kernel_ms, stages.d2h_ms,
                         100.0 * ceiling_ms / streamed_ms));
      }
    }

    const char* engine_rule = engines >= 2   ? "max(h2d, kernel, d2h) + (sum - max) / C: H2D and D2H overlap each other"
                              : engines == 1 ? "max(h2d + d2h, kernel) + (sum - max) / C: H2D and D2H take turns"
                                             : "h2d + kernel + d2h: copies cannot overlap kernels";
    s.note(strprintf("%%ceil of end-to-end rows = overlap ceiling time / measured time; %d async copy engine%s, so the "
                     "ceiling is %s",
                     engines, engines == 1 ? "" : "s", engine_rule));
    if (link.gbps > 0)
      s.note(strprintf("%%ceil of pinned_h2d/pinned_d2h = %% of the PCIe Gen%d x%d link rate per direction, "
                       "%.1f GB/s (NVML)",
                       s.device().pcie_gen, s.device().pcie_width, link.gbps));
    if (streams > 1 && chunk_count < streams)
      s.note(strprintf("--streams %d with --chunks %lld: only %lld streams get a chunk", streams,
                       static_cast<long long>(chunk_count), static_cast<long long>(chunk_count)));
  });
}

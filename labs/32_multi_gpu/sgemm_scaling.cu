// Lab 32's split SGEMM: C = A·B on one GPU against the same product with the
// rows of C split over the GPUs.
//
// Teaches: a split that needs no traffic between GPUs while it runs (each GPU
// holds its rows of A and C and a replica of B), a cuBLAS handle per GPU made
// with that GPU current, and the two ways one host program drives several
// GPUs (split_sgemm.cuh): one thread switching contexts (cuCtxSetCurrent), or
// one host thread per GPU.
// Measures: cublas_1gpu (the baseline, its rows checked against the double
// CPU reference), sgemm_split_switch and sgemm_split_threads (every GPU's rows
// against one GPU's C, bit for bit) at per-GPU rates; under the table, the
// speed-up time_1 / time_G and the scaling efficiency time_1 / (G * time_G);
// with --scaling, sgemm_split_threads on the first 2, 4, ... GPUs as well and
// one line of speed-ups over one GPU.
//
// The one host file besides main.cu that nvcc compiles: matmul_lab.cuh, whose
// row checks it calls, holds a kernel too.
#include <functional>
#include <map>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <cudalabs/random.hpp>

#include "matmul_lab.cuh"  // the course's rows_to_check / reference_rows: cuBLAS checked on CPU rows
#include "host_common.hpp"

namespace lab32host {
namespace {

// Rows of C for each of g GPUs: m / g, the first m mod g one more.
std::vector<int> split_rows(int m, int g) {
  std::vector<int> rows(static_cast<std::size_t>(g), m / g);
  for (int i = 0; i < m % g; ++i) ++rows[static_cast<std::size_t>(i)];
  return rows;
}

}  // namespace

void gemm_rows(cudalabs::Session& s, Team& team, GemmShape shape, lab32::SplitSgemmThreads* threads, bool split,
               HostScratch& scratch, int use) {
  const int m = shape.m, n = shape.n, k = shape.k, g = use > 0 ? use : team.size();
  const bool part = g < team.size();
  const Point one_gpu_size{{"m", m}, {"n", n}, {"k", k}};
  Point size = one_gpu_size;
  if (part) size["gpus"] = g;
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
  if (!part) s.measure(one);
  std::string algorithms =
      format_line("m=%d n=%d k=%d: cuBLAS on one GPU runs ", m, n, k) + home.blas().algorithm_of(m, n, k);
  if (!split) {
    s.note(algorithms);
    return;
  }

  // The shards are made at every run, from where the buffers are then: the
  // harness's last check moves every buffer to a new allocation (a shard kept
  // from an earlier run would point at the old, poisoned place).
  auto shards = [&] {
    std::vector<lab32::GemmShard> now;
    for (int i = 0; i < g; ++i) {
      Gpu& gpu = team[i];
      now.push_back({gpu.id, gpu.context.get(), &gpu.blas(), gpu.stream, gpu.a.data(), gpu.b.data(), gpu.c.data(),
                     rows[static_cast<std::size_t>(i)]});
    }
    return now;
  };
  for (int i = 0; i < g; ++i) {
    Gpu& gpu = team[i];
    const int r = rows[static_cast<std::size_t>(i)];
    // Every GPU's cuBLAS handle exists before the first traced run, even one
    // with no rows (m < GPUs): the shards name it, and making a handle waits
    // for the GPU, which the trace would count against the launcher.
    gpu.blas();
    if (r > 0) {  // each GPU's handle chooses its algorithm for its shape now, not in a traced or timed run
      DeviceGuard on(gpu.id);
      gpu.blas().prepare_sgemm(gpu.a.data(), gpu.b.data(), gpu.c.data(), r, n, k, gpu.stream);
    }
  }
  std::vector<Gpu*> all = team.all();
  all.resize(static_cast<std::size_t>(g));
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
    switch_ms = split_row("sgemm_split_switch", [&] { lab32::split_sgemm_one_thread(shards(), n, k); });
  if (s.selected("sgemm_split_threads") && threads)
    threads_ms = split_row("sgemm_split_threads", [&] { threads->enqueue(shards(), n, k); });

  double one_ms = 0;
  for (const auto& r : s.records())
    if (r.variant == "cublas_1gpu" && r.size == one_gpu_size) one_ms = r.timing.median_ms;
  if (one_ms > 0) {
    std::string line = format_line("m=%d n=%d k=%d on %d GPUs: one GPU %.3f ms", m, n, k, g, one_ms);
    for (const auto& [how, ms] : {std::pair{"one thread switching", switch_ms}, std::pair{"a thread per GPU", threads_ms}})
      if (ms > 0)
        line += format_line("; %s %.3f ms: %.2fx, scaling efficiency time_1 / (G * time_G) %.1f%%", how, ms,
                            one_ms / ms, 100.0 * one_ms / (g * ms));
    s.note(line);
  }
  if (!part)
    s.note(algorithms + format_line("; each GPU's %d-row share runs ", rows[0]) + home.blas().algorithm_of(rows[0], n, k));
}

void gemm_scaling(cudalabs::Session& s, Team& team, GemmShape shape, HostScratch& scratch) {
  if (!s.selected("sgemm_split_threads")) return;
  for (int use = 2; use < team.size(); use *= 2) {
    std::vector<int> ids = team.ids();
    ids.resize(static_cast<std::size_t>(use));
    lab32::SplitSgemmThreads threads(ids);
    gemm_rows(s, team, shape, &threads, true, scratch, use);
  }
  double one_ms = 0;
  std::map<int, double> split_ms;  // GPUs -> median ms
  for (const auto& r : s.records()) {
    if (!r.timed || r.size.count("m") == 0 || r.size.at("m") != shape.m || r.size.at("n") != shape.n ||
        r.size.at("k") != shape.k)
      continue;
    if (r.variant == "cublas_1gpu") one_ms = r.timing.median_ms;
    if (r.variant == "sgemm_split_threads")
      split_ms[r.size.count("gpus") ? static_cast<int>(r.size.at("gpus")) : team.size()] = r.timing.median_ms;
  }
  if (one_ms <= 0) return;
  std::string line = format_line("scaling, m=%d n=%d k=%d, a thread per GPU: 1 GPU %.3f ms", shape.m, shape.n, shape.k, one_ms);
  for (const auto& [gpus, ms] : split_ms)
    line += format_line("; %d GPUs %.3f ms, %.2fx (efficiency %.1f%%)", gpus, ms, one_ms / ms, 100.0 * one_ms / (gpus * ms));
  s.note(line);
}

}  // namespace lab32host

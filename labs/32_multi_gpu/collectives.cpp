// Lab 32's all-reduce: afterwards every GPU holds the sum of every GPU's buffer.
//
// Teaches: the two hand-written all-reduces of allreduce.cuh, driven from one
// thread (a ring: reduce-scatter with peer-reading kernels, then all-gather
// with the copy engines; and a one-shot exchange: every GPU reads every other
// one's input), what each needs of peer access, and NCCL's all-reduce as the
// baseline (nccl.hpp).
// Measures: time and algbw (bytes / time) of nccl_allreduce, allreduce_ring
// and allreduce_oneshot at every size, each checked against the exact sum on
// every GPU; under the table, nccl-tests' busbw = algbw * 2(G-1)/G and each
// time against NCCL's.
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "host_common.hpp"
#include "nccl.hpp"

namespace lab32host {

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

}  // namespace lab32host

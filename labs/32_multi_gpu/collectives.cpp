// Lab 32's collectives: afterwards every GPU holds the sum of every GPU's buffer
// (all-reduce), its own chunk of that sum (reduce-scatter), or every GPU's own
// chunk (all-gather).
//
// Teaches: the hand-written collectives, driven from one thread: allreduce.cuh's
// ring (reduce-scatter with peer-reading kernels, all-gather with the copy
// engines, a launch and an event per step) and one-shot (every GPU reads every
// other one's input); ring_flags.cuh's ring in one kernel per GPU (the steps
// ordered by flags in GPU memory); two_shot.cuh's direct reduce-scatter and
// all-gather (every GPU reads every peer at once) and the two-shot all-reduce
// made of them; what each needs of peer access; NCCL's calls as the baselines
// (nccl.hpp).
// Measures: time and algbw (bytes / time) of every variant at every size, each
// checked exactly on every GPU; under the table, nccl-tests' busbw = algbw *
// 2(G-1)/G (all-reduce) or (G-1)/G (reduce-scatter, all-gather), and each time
// against NCCL's.
#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <cudalabs/math.hpp>

#include "host_common.hpp"
#include "nccl.hpp"

namespace lab32host {
namespace {

// nccl-tests' bus bandwidth: algbw times the share of the buffer each GPU's links
// must carry, so that a perfect implementation shows the link's rate at any G:
// an all-reduce sends and receives 2(G-1)/G of the buffer per GPU, a
// reduce-scatter or an all-gather (G-1)/G.
double busbw_factor(Op op, int g) { return (op == Op::all_reduce ? 2.0 : 1.0) * (g - 1) / g; }

const char* name_of(Op op) {
  return op == Op::all_reduce ? "all-reduce" : op == Op::reduce_scatter ? "reduce-scatter" : "all-gather";
}

// Floats [begin, begin + count) of a buffer.
struct Range {
  std::int64_t begin = 0, count = 0;
};

// Chunk r of G: NCCL's are n / G floats each (the n mod G floats past them take
// no part); the hand-written ones ring_chunk's (allreduce.cuh: ceil(n / G)
// rounded up to 32 floats, the last ones shorter or empty).
Range chunk_of(bool nccl, int r, int g, std::int64_t n) {
  if (nccl) return {r * (n / g), n / g};
  const std::int64_t per = cudalabs::ceil_div<std::int64_t>(cudalabs::ceil_div<std::int64_t>(n, g), 32) * 32;
  const std::int64_t begin = std::min(n, per * r);
  return {begin, std::min(per, n - begin)};
}

}  // namespace

const std::vector<std::string>& variants_of(Op op) {
  return op == Op::all_reduce ? allreduce_variants : op == Op::reduce_scatter ? reduce_scatter_variants : all_gather_variants;
}

CollectiveTimes collective_rows(cudalabs::Session& s, Op op, Team& team, std::int64_t bytes, TransferInputs& inputs,
                                HostScratch& scratch, NcclComms* nccl, bool tool_attached) {
  const std::int64_t n = bytes / 4;
  const int g = team.size();
  CollectiveTimes times{.bytes = bytes};
  std::vector<Gpu*> all = team.all();
  const std::vector<std::string>& family = variants_of(op);
  // Each collective's records have sizes of their own, so that each variant is
  // compared with its own NCCL call: the all-reduce's {bytes}, the
  // reduce-scatter's and the all-gather's with one GPU's share of NCCL's, n / G
  // floats, beside it (what one GPU receives, or sends).
  const Point size = op == Op::all_reduce       ? Point{{"bytes", bytes}}
                     : op == Op::reduce_scatter ? Point{{"bytes", bytes}, {"recv_bytes", 4 * (n / g)}}
                                                : Point{{"bytes", bytes}, {"send_bytes", 4 * (n / g)}};
  // The all-gather's answer: chunk c of every output is GPU c's input there.
  // The all-reduce's and the reduce-scatter's: the exact sum (inputs.sum()).
  std::vector<float> gathered;
  auto expected = [&](bool is_nccl) -> std::span<const float> {
    if (op != Op::all_gather) return inputs.sum();
    gathered.assign(static_cast<std::size_t>(n), 0.0f);
    for (int c = 0; c < g; ++c) {
      const Range r = chunk_of(is_nccl, c, g, n);
      const auto from = inputs.of(c).subspan(static_cast<std::size_t>(r.begin), static_cast<std::size_t>(r.count));
      std::copy(from.begin(), from.end(), gathered.begin() + r.begin);
    }
    return gathered;
  };
  auto base = [&](const std::string& variant) {
    const bool is_nccl = variant.rfind("nccl_", 0) == 0;
    return cudalabs::Measurement{
        .variant = variant,
        .size = size,
        .work = {.bytes = static_cast<double>(bytes)},  // GB/s = algbw: bytes / time (nccl-tests)
        .check =
            [&, is_nccl] {
              const auto want = expected(is_nccl);
              std::optional<cudalabs::CheckResult> result;
              for (int i = 0; i < g; ++i) {
                // What GPU i must hold: its chunk (reduce-scatter), or the whole
                // buffer, of which NCCL's all-gather fills G chunks of n / G.
                Range r{0, op == Op::all_gather && is_nccl ? g * (n / g) : n};
                if (op == Op::reduce_scatter) r = chunk_of(is_nccl, i, g, n);
                if (r.count == 0) continue;  // fewer floats than GPUs: GPU i owns none
                auto one = check_on(team[i], team[i].out.data() + r.begin,
                                    want.subspan(static_cast<std::size_t>(r.begin), static_cast<std::size_t>(r.count)),
                                    scratch, op == Op::all_gather ? "the gathered chunks" : "the sum");
                result = result ? cudalabs::both(std::move(*result), std::move(one)) : std::move(one);
              }
              return *result;  // GPU 0's chunk is never empty (n >= 1)
            },
        .poison =
            [&](cudaStream_t) {
              for (Gpu* gpu : all) gpu->poison(gpu->out);
            },
        .reset = no_graph_batch,
        .new_inputs = [&](std::uint64_t seed) { inputs.draw_all(seed); },
        .ceiling = cudalabs::CeilingKind::baseline,
        .extra = {{"gpus", static_cast<double>(g)}, {"busbw_factor", busbw_factor(op, g)}}};
  };

  // NCCL's chunks are n / G floats: with fewer floats than GPUs there is nothing to call it on.
  if (nccl && n / g > 0) {
    auto call = [&, op] {
      if (op == Op::all_reduce) nccl->all_reduce(team, n);
      else if (op == Op::reduce_scatter) nccl->reduce_scatter(team, n);
      else nccl->all_gather(team, n);
    };
    // One untimed call of this size first: NCCL connects the channels an
    // algorithm needs on its first use (its own allocations and copies, which
    // the traced first run would count against it).
    {
      DeviceGuard keep(current_device());
      call();
      for (Gpu* gpu : all) gpu->stream.synchronize();
    }
    auto m = base(family[0]);
    m.run = [&, call](cudaStream_t st) { fan_out(st, team, all, call); };
    times.ms[family[0]] = s.measure(m).timing.median_ms;
  }

  // The events each GPU lends the hand-written collectives. The ranks are made
  // at every run, from where the buffers are then: the harness's last check
  // moves every buffer to a new allocation (a rank kept from an earlier run
  // would point at the old, poisoned place).
  std::vector<std::vector<cudaEvent_t>> events(static_cast<std::size_t>(g));
  for (int i = 0; i < g; ++i)
    for (int e = 0; e < lab32::ring_events(g); ++e)
      events[static_cast<std::size_t>(i)].push_back(team[i].steps[static_cast<std::size_t>(e)]);
  auto ranks = [&] {
    std::vector<lab32::AllReduceRank> r;
    for (int i = 0; i < g; ++i)
      r.push_back({team[i].id, team[i].stream, team[i].in.data(), team[i].out.data(), events[static_cast<std::size_t>(i)],
                   team[i].flags.data()});
    return r;
  };
  const auto resources = lab32::reduce_copy_resources();
  bool ring_links = true;  // the rings' kernels load from the left neighbour
  for (int i = 0; i < g; ++i) ring_links = ring_links && team.peer[static_cast<std::size_t>(i)][static_cast<std::size_t>((i + g - 1) % g)];
  const char* no_ring = "a GPU has no peer access to its left neighbour in the ring";
  const char* no_mesh = "not every pair of GPUs has peer access";

  auto hand_written = [&](const char* variant, bool reachable, const char* why_not, std::function<void()> enqueue) {
    if (!s.selected(variant)) return;
    const bool waits_in_kernel = std::find(concurrent_kernel_variants.begin(), concurrent_kernel_variants.end(),
                                           variant) != concurrent_kernel_variants.end();
    if (waits_in_kernel && tool_attached) {
      s.note(std::string(variant) + " skipped: its GPUs wait for each other inside the kernel, and a tool that runs "
                                    "one kernel at a time (CUDALABS_TRACE=0) would leave them waiting");
      return;
    }
    if (!reachable) {
      s.note(std::string(variant) + " skipped: " + why_not);
      return;
    }
    auto m = base(variant);
    m.run = [&, enqueue](cudaStream_t st) { fan_out(st, team, all, enqueue); };
    if (!waits_in_kernel) m.resources = resources;
    times.ms[variant] = s.measure(m).timing.median_ms;
  };
  auto next_epoch = [&team] { return ++team.epoch; };
  switch (op) {
    case Op::all_reduce:
      hand_written("allreduce_ring", ring_links, no_ring, [&] { lab32::allreduce_ring(ranks(), n); });
      hand_written("allreduce_oneshot", team.all_pairs_peer(), no_mesh, [&] { lab32::allreduce_oneshot(ranks(), n); });
      hand_written("allreduce_ring_flags", ring_links, no_ring,
                   [&] { lab32::allreduce_ring_flags(ranks(), n, next_epoch()); });
      hand_written("allreduce_twoshot", team.all_pairs_peer(), no_mesh, [&] { lab32::allreduce_twoshot(ranks(), n); });
      break;
    case Op::reduce_scatter:
      hand_written("reduce_scatter_ring", ring_links, no_ring,
                   [&] { lab32::reduce_scatter_ring(ranks(), n, next_epoch()); });
      hand_written("reduce_scatter_direct", team.all_pairs_peer(), no_mesh,
                   [&] { lab32::reduce_scatter_direct(ranks(), n); });
      break;
    case Op::all_gather:
      hand_written("all_gather_ring", ring_links, no_ring, [&] { lab32::all_gather_ring(ranks(), n, next_epoch()); });
      hand_written("all_gather_direct", team.all_pairs_peer(), no_mesh, [&] { lab32::all_gather_direct(ranks(), n); });
      break;
  }
  return times;
}

// nccl-tests' table: per size and variant, time, algbw and busbw side by side.
void collective_notes(cudalabs::Session& s, Op op, int g, const std::vector<CollectiveTimes>& all_sizes) {
  const std::vector<std::string>& family = variants_of(op);
  const double factor = busbw_factor(op, g);
  s.note(format_line("%s over %d GPUs, floats: algbw = bytes / time, busbw = algbw * %s = algbw * %.3f (nccl-tests); "
                     "x nccl = NCCL's time / this time",
                     name_of(op), g, op == Op::all_reduce ? "2(G-1)/G" : "(G-1)/G", factor));
  std::string names = format_line("  %12s", ""), head = format_line("  %12s", "bytes");
  for (const auto& v : family) {
    names += format_line("  | %-32s", v.c_str());
    head += format_line("  | %9s %7s %7s %6s", "ms", "algbw", "busbw", "x nccl");
  }
  s.note(names);
  s.note(head);
  for (const auto& t : all_sizes) {
    std::string line = format_line("  %12lld", static_cast<long long>(t.bytes));
    const auto nccl = t.ms.find(family[0]);
    const double nccl_ms = nccl != t.ms.end() ? nccl->second : 0;
    for (const auto& v : family) {
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

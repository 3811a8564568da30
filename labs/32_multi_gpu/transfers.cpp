// Lab 32's copies between GPUs: the ordered pairs of the team that --pairs
// names (auto: every pair at one size, a few at every size).
//
// Teaches: the copy engines (cudaMemcpyPeerAsync on src's stream: no SM takes
// part), both directions of a link at once, the way through pinned host
// memory (chunks pipelined on the two GPUs' streams, ordered by events), and
// SMs moving the data instead: a kernel on dst loading src's memory through
// UVA (a pull), or the same kernel on src storing into dst's (a push).
// Measures: one-way GB/s of peer_copy (the baseline), staged_copy,
// peer_read_kernel and peer_write_kernel for every ordered pair timed;
// peer_copy_bidir for every pair with a direction timed, both ways, against
// the sum of its two one-way copies; under the table, per size, G x G
// matrices of those GB/s ("-": a pair not timed at that size).
#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <cudalabs/math.hpp>

#include "host_common.hpp"

namespace lab32host {
namespace {

// Through the host: src's copy engine writes chunk c into pinned memory, then
// dst's stream waits for that chunk's event and its copy engine reads it out,
// while chunk c + 1 leaves src.
void staged_copy(Gpu& src, Gpu& dst, float* to, const float* from, float* pinned, std::int64_t n) {
  const std::int64_t chunk_floats = std::max(cudalabs::ceil_div<std::int64_t>(n, staged_chunks), staged_min_chunk / 4);
  int chunk = 0;
  for (std::int64_t begin = 0; begin < n; begin += chunk_floats, ++chunk) {
    const std::size_t count_bytes = static_cast<std::size_t>(std::min(chunk_floats, n - begin)) * sizeof(float);
    const cudalabs::Event& landed = src.steps[static_cast<std::size_t>(chunk)];
    {
      DeviceGuard on(src.id);
      CUDALABS_CHECK(cudaMemcpyAsync(pinned + begin, from + begin, count_bytes, cudaMemcpyDeviceToHost, src.stream));
      landed.record(src.stream);
    }
    DeviceGuard on(dst.id);
    CUDALABS_CHECK(cudaStreamWaitEvent(dst.stream, landed, 0));
    CUDALABS_CHECK(cudaMemcpyAsync(to + begin, pinned + begin, count_bytes, cudaMemcpyHostToDevice, dst.stream));
  }
}

void peer_copy(Gpu& src, Gpu& dst, std::int64_t n) {
  DeviceGuard on(src.id);
  CUDALABS_CHECK(cudaMemcpyPeerAsync(dst.out.data(), dst.id, src.in.data(), src.id,
                                     static_cast<std::size_t>(n) * sizeof(float), src.stream));
}

}  // namespace

PairMask pairs_timed(const PairChoice& choice, const Team& team, bool matrix_size) {
  const int g = team.size();
  PairMask timed(static_cast<std::size_t>(g), std::vector<bool>(static_cast<std::size_t>(g), false));
  auto set = [&](int i, int j) {
    if (i != j) timed[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)] = true;
  };
  if (choice.kind == PairChoice::Kind::listed) {
    const auto ids = team.ids();
    auto index_of = [&](int id) {
      const auto it = std::find(ids.begin(), ids.end(), id);
      if (it == ids.end()) {
        std::string in_use;
        for (int d : ids) in_use += (in_use.empty() ? "" : ", ") + std::to_string(d);
        throw cudalabs::UsageError("--pairs: GPU " + std::to_string(id) + " is not one of the GPUs in use (" + in_use +
                                   "); name pairs of those, or use more with --gpus");
      }
      return static_cast<int>(it - ids.begin());
    };
    for (const auto& [src, dst] : choice.listed) set(index_of(src), index_of(dst));
  } else if (choice.kind == PairChoice::Kind::all || matrix_size) {
    for (int i = 0; i < g; ++i)
      for (int j = 0; j < g; ++j) set(i, j);
  } else {
    // The first GPU with its neighbour and with the last one (on an NVSwitch
    // machine all pairs are alike; on a ring or mesh of links the last is the
    // farthest), both ways: 4 pairs whatever G is (2 on two GPUs).
    for (int other : {1, g - 1}) {
      set(0, other);
      set(other, 0);
    }
  }
  return timed;
}

std::int64_t matrix_bytes(const std::vector<Point>& points) {
  constexpr std::int64_t largest_matrix = std::int64_t{256} << 20;
  std::int64_t best = 0, smallest = 0;
  for (const Point& p : points) {
    const std::int64_t b = p.at("bytes");
    if (b <= largest_matrix) best = std::max(best, b);
    smallest = smallest == 0 ? b : std::min(smallest, b);
  }
  return best > 0 ? best : smallest;
}

TransferRates transfer_rows(cudalabs::Session& s, Team& team, std::int64_t bytes, TransferInputs& inputs,
                            HostScratch& scratch, HostScratch& staging, const PairMask& timed) {
  const std::int64_t n = bytes / 4;
  TransferRates rates{.bytes = bytes};
  const auto resources = lab32::reduce_copy_resources();
  const auto gpus = static_cast<double>(team.size());
  auto pair_size = [&](int i, int j) { return Point{{"bytes", bytes}, {"src", team[i].id}, {"dst", team[j].id}}; };
  auto base = [&](const char* variant, Point size, double moved) {
    return cudalabs::Measurement{.variant = variant, .size = std::move(size), .work = {.bytes = moved}, .reset = no_graph_batch};
  };
  auto record = [&](const cudalabs::Measurement& m, int i, int j) {
    const double gbps = s.measure(m).gbps;
    rates.gbps[m.variant][{i, j}] = gbps;
    return gbps;
  };

  for (int i = 0; i < team.size(); ++i)
    for (int j = 0; j < team.size(); ++j) {
      if (i == j || !timed[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)]) continue;
      Gpu& src = team[i];
      Gpu& dst = team[j];
      Gpu* on_src[] = {&src};
      Gpu* on_both[] = {&src, &dst};
      auto check = [&, i] { return check_on(dst, dst.out.data(), inputs.of(i), scratch, "dst's buffer after the copy"); };
      auto poison = [&](cudaStream_t) { dst.poison(dst.out); };
      auto redraw = [&, i](std::uint64_t seed) { inputs.draw(i, seed); };

      // The copy engines, driven from src's stream (a push, as NVIDIA's
      // p2pBandwidthLatencyTest does): no SM takes part.
      auto m = base("peer_copy", pair_size(i, j), static_cast<double>(bytes));
      m.run = [&](cudaStream_t st) { fan_out(st, team, on_src, [&] { peer_copy(src, dst, n); }); };
      m.check = check;
      m.poison = poison;
      m.new_inputs = redraw;
      m.expect = cudalabs::Expect::copies;  // no kernel: a copy between GPUs is the work (CUPTI: PtoP, not host copies)
      m.ceiling = cudalabs::CeilingKind::baseline;
      m.extra = {{"gpus", gpus}, {"peer_access", team.peer[i][j] ? 1.0 : 0.0}};
      record(m, i, j);

      if (s.selected("staged_copy")) {
        float* pinned = staging.get(static_cast<std::size_t>(n));
        auto st_m = base("staged_copy", pair_size(i, j), static_cast<double>(bytes));
        st_m.run = [&, pinned](cudaStream_t st) {
          fan_out(st, team, on_both, [&] { staged_copy(src, dst, dst.out.data(), src.in.data(), pinned, n); });
        };
        st_m.check = check;
        st_m.poison = poison;
        st_m.new_inputs = redraw;
        st_m.expect = cudalabs::Expect::copies;  // host copies are the lesson here
        st_m.ceiling = cudalabs::CeilingKind::baseline;
        st_m.extra = {{"gpus", gpus}, {"chunks", static_cast<double>(std::min<std::int64_t>(
                                                           staged_chunks, cudalabs::ceil_div(bytes, staged_min_chunk)))}};
        record(st_m, i, j);
      }

      // SMs moving the data: dst's kernel loads src's memory (pull), or src's
      // kernel stores into dst's memory (push). The GPU that runs the kernel
      // needs peer access to the other one.
      auto kernel_row = [&](const char* variant, Gpu& runner, Gpu& other, bool reachable) {
        if (!s.selected(variant)) return;
        if (!reachable) {
          s.note(format_line("%s %d -> %d skipped: GPU %d has no peer access to GPU %d", variant, src.id, dst.id,
                             runner.id, other.id));
          return;
        }
        Gpu* on_runner[] = {&runner};
        auto k = base(variant, pair_size(i, j), static_cast<double>(bytes));
        k.run = [&](cudaStream_t st) {
          fan_out(st, team, on_runner, [&] {
            DeviceGuard on(runner.id);
            lab32::peer_copy_kernel(dst.out.data(), src.in.data(), n, runner.stream);
          });
        };
        k.check = check;
        k.poison = poison;
        k.new_inputs = redraw;
        k.resources = resources;
        k.ceiling = cudalabs::CeilingKind::baseline;
        k.extra = {{"gpus", gpus}};
        record(k, i, j);
      };
      kernel_row("peer_read_kernel", dst, src, team.peer[static_cast<std::size_t>(j)][static_cast<std::size_t>(i)]);
      kernel_row("peer_write_kernel", src, dst, team.peer[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)]);
    }

  // Both directions of each pair at once: a -> b on a's stream, b -> a on b's.
  // Its ceiling is the sum of the two one-way copies just measured: 100% means
  // the two directions do not slow each other at all.
  if (s.selected("peer_copy_bidir"))
    for (int i = 0; i < team.size(); ++i)
      for (int j = i + 1; j < team.size(); ++j) {
        if (!timed[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)] &&
            !timed[static_cast<std::size_t>(j)][static_cast<std::size_t>(i)])
          continue;
        Gpu& x = team[i];
        Gpu& y = team[j];
        Gpu* on_both[] = {&x, &y};
        auto m = base("peer_copy_bidir", Point{{"bytes", bytes}, {"gpu_a", x.id}, {"gpu_b", y.id}}, 2.0 * bytes);
        m.run = [&](cudaStream_t st) {
          fan_out(st, team, on_both, [&] {
            peer_copy(x, y, n);
            peer_copy(y, x, n);
          });
        };
        m.check = [&, i, j] {
          return cudalabs::both(check_on(y, y.out.data(), inputs.of(i), scratch, "the copy from GPU " + std::to_string(x.id)),
                                check_on(x, x.out.data(), inputs.of(j), scratch, "the copy from GPU " + std::to_string(y.id)));
        };
        m.poison = [&](cudaStream_t) {
          x.poison(x.out);
          y.poison(y.out);
        };
        m.new_inputs = [&, i, j](std::uint64_t seed) {
          inputs.draw(i, seed);
          inputs.draw(j, seed);
        };
        m.expect = cudalabs::Expect::copies;
        // Both one-way copies timed (--pairs may name one direction only): their sum.
        const auto& copies = rates.gbps["peer_copy"];
        const auto there = copies.find({i, j}), back = copies.find({j, i});
        const bool both_ways = there != copies.end() && back != copies.end() && there->second > 0 && back->second > 0;
        const double one_way = both_ways ? there->second + back->second : 0.0;
        m.ceiling = both_ways ? cudalabs::CeilingKind::given : cudalabs::CeilingKind::none;
        m.given_ceiling = {"sum_of_one_way_copies_gbps", one_way};
        m.extra = {{"gpus", gpus}};
        record(m, i, j);
      }
  return rates;
}

// The matrices of one size, side by side: row = from GPU, column = to GPU
// (both ways: the pair's two directions summed, in both of its cells).
void transfer_notes(cudalabs::Session& s, const Team& team, const TransferRates& rates) {
  const std::vector<std::pair<std::string, std::string>> shown = {{"peer_copy", "copy engines"},
                                                                  {"peer_copy_bidir", "both ways at once"},
                                                                  {"staged_copy", "staged via host"},
                                                                  {"peer_read_kernel", "SM read (pull)"},
                                                                  {"peer_write_kernel", "SM write (push)"}};
  const int g = team.size();
  const auto width = static_cast<std::size_t>(10 + 8 * g);
  auto pad = [&](std::string text) {
    text.resize(width, ' ');
    return text;
  };
  std::string title = "  ", head = "  ";
  std::vector<std::string> rows(static_cast<std::size_t>(g), "  ");
  for (const auto& [variant, label] : shown) {
    const auto found = rates.gbps.find(variant);
    if (found == rates.gbps.end()) continue;
    const auto& cells = found->second;
    title += pad(label);
    std::string h = "from\\to";
    for (const auto& gpu : team.gpus) h += format_line("%8d", gpu->id);
    head += pad(h);
    for (int i = 0; i < g; ++i) {
      std::string r = format_line("%7d", team.gpus[static_cast<std::size_t>(i)]->id);
      for (int j = 0; j < g; ++j) {
        const auto key = variant == "peer_copy_bidir" ? std::pair{std::min(i, j), std::max(i, j)} : std::pair{i, j};
        const auto cell = cells.find(key);
        const bool known = i != j && cell != cells.end() && cell->second > 0;
        r += known ? format_line("%8.1f", cell->second) : format_line("%8s", "-");
      }
      rows[static_cast<std::size_t>(i)] += pad(r);
    }
  }
  s.note(format_line("transfers of %lld bytes per GPU buffer, GB/s:", static_cast<long long>(rates.bytes)));
  s.note(title);
  s.note(head);
  for (const auto& r : rows) s.note(r);
}

}  // namespace lab32host

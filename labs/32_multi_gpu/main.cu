// Lab 32 — several GPUs: peer access, copies between GPUs, a split SGEMM and
// an all-reduce of your own against NCCL's.
//
// One process drives every visible GPU (or --gpus N of them, the --device one
// first). Each GPU gets its own stream and events; every multi-GPU run forks
// from the session's stream to those streams and joins back, so the session's
// two CUDA events bracket the work of all the GPUs (the clock is the session
// GPU's; nothing needs a host clock). Host threads: one thread switching
// devices (cudaSetDevice; the driver's cuCtxSetCurrent on each primary context
// for the split SGEMM, as the original did), and one thread per GPU.
//
// Variants (bytes = one GPU's buffer; pairs are ordered: from GPU src to GPU dst):
//   peer_copy            cudaMemcpyPeerAsync, one direction, every ordered pair: the copy engines  [baseline]
//   peer_copy_bidir      both directions of a pair at once
//   staged_copy          through pinned host memory: D2H on src, H2D on dst, 32 chunks pipelined on two streams
//   peer_read_kernel     peer_kernels.cuh on dst, loading src's memory through UVA (pull)
//   peer_write_kernel    the same kernel on src, storing into dst's memory (push)
//   nccl_allreduce       ncclAllReduce, float sum, one stream per GPU  [baseline; when built with NCCL]
//   allreduce_ring       allreduce.cuh: reduce-scatter (peer-reading kernels), all-gather (copy engines)
//   allreduce_oneshot    allreduce.cuh: every GPU reads every other GPU's input and sums
//   allreduce_ring_flags ring_flags.cuh: the ring in one kernel per GPU, channels and flags between GPUs
//   allreduce_twoshot    two_shot.cuh: direct reduce-scatter, one barrier, direct all-gather
//   nccl_reduce_scatter  ncclReduceScatter  [baseline]; reduce_scatter_ring, reduce_scatter_direct
//   nccl_all_gather      ncclAllGather  [baseline]; all_gather_ring, all_gather_direct
//   cublas_1gpu          C = A·B with cuBLAS on one GPU (the --device one)  [baseline]
//   sgemm_split_switch   split_sgemm.cuh: rows of C split across the GPUs, one thread switching contexts
//   sgemm_split_threads  split_sgemm.cuh: the same split, one host thread per GPU
//
// Collective rows report NCCL's two rates (nccl-tests): algbw = bytes / time,
// the GB/s column; busbw = algbw · 2(G−1)/G (all-reduce) or · (G−1)/G
// (reduce-scatter, all-gather), under the table.
//
// The copies' cost grows as G² (G(G−1) ordered pairs): --pairs auto (default)
// times the full matrix at one size and the size sweep on a few pairs; --pairs
// all for every pair at every size. --scaling: the split SGEMM on 1, 2, 4 ... GPUs.
//
// With one GPU only cublas_1gpu runs; the rest say once that they need two.
// NVLink SHARP multicast (NVLS) stays off: NCCL_NVLS_ENABLE=0 is set before
// NCCL starts, and nothing here creates a multicast object.
//
// Run: make run LAB=32    (or: build/labs/32_multi_gpu/32_multi_gpu --quick)
//
// The host program, by topic (as labs 19, 20 and 29 are): host_common.hpp (one
// RAII Gpu per device, the team, what the parts share), devices.cpp (contexts,
// peer access, the fork and join), checks.cpp, transfers.cpp, nccl.hpp,
// collectives.cpp (all-reduce, reduce-scatter, all-gather) and sgemm_scaling.cu. This file declares
// the lab (its flags and variants), says which parts run, and reports.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <cudalabs/lab.hpp>

#include "host_common.hpp"
#include "nccl.hpp"

namespace lab32host {
namespace {

constexpr std::int64_t MiB = std::int64_t{1} << 20;
constexpr std::int64_t GiB = std::int64_t{1} << 30;
// SGEMM inputs are integers in [-4, 4] stored as floats: every product and
// partial sum is an integer below 16·k <= 2^19 < 2^24, exact in float in any
// order, so one GPU's C and a split C must agree bit for bit.
constexpr int gemm_max_dim = 32768;

const std::string full_gemm = "8192x8192x8192,16384x16384x8192";
const std::string quick_gemm = "1x1x1,67x33x100,255x129x65";

cudalabs::LabSpec lab_spec() {
  return {
      .name = "32_multi_gpu",
      .title = "several GPUs: peer copies, peer access, a split SGEMM, all-reduce against NCCL",
      .about =
          "Uses every visible GPU (--gpus N: the --device one and the next ones). Copies between every ordered pair of\n"
          "GPUs with the copy engines, both directions at once, through pinned host memory, and by a kernel that loads\n"
          "(or stores) the other GPU's memory directly; an all-reduce of float buffers written by hand (a ring, a\n"
          "one-shot, a ring in one kernel with flags, a two-shot) against NCCL's, and reduce-scatter and all-gather\n"
          "against NCCL's, in algorithm and bus bandwidth (nccl-tests: busbw = algbw * 2(G-1)/G for all-reduce,\n"
          "(G-1)/G for the other two); and C = A*B split by rows of C across the GPUs, from one thread switching\n"
          "contexts and from one thread per GPU, against one GPU (--scaling: on 1, 2, 4 ... GPUs). --pairs bounds the\n"
          "copies' G(G-1) pairs. Needs 2 GPUs for all but cublas_1gpu. Sets NCCL_NVLS_ENABLE=0 (NVLink multicast off).",
      .sizes = {{.name = "bytes",
                 .help = "bytes of one GPU's buffer for the copies and all-reduces (a multiple of 4: floats)",
                 .full = {MiB, 8 * MiB, 64 * MiB, 256 * MiB, GiB},
                 .quick = {4, 4100, MiB + 4},
                 .min = 4,
                 .max = 4 * GiB}},
      .size_alias = {"bytes"},
      .variants = {{"peer_copy", "cudaMemcpyPeerAsync, one direction, every ordered pair of GPUs (copy engines)", true},
                   {"peer_copy_bidir", "both directions of each pair at once (two copies, one on each GPU's stream)"},
                   {"staged_copy", "through pinned host memory: D2H on src, H2D on dst, chunks pipelined on two streams"},
                   {"peer_read_kernel", "the reduce-copy kernel on dst, loading src's memory through UVA (pull)"},
                   {"peer_write_kernel", "the reduce-copy kernel on src, storing into dst's memory (push)"},
                   {"nccl_allreduce", "ncclAllReduce, float sum, one stream per GPU (when built with NCCL)", true},
                   {"allreduce_ring", "reduce-scatter with peer-reading kernels, all-gather with copy engines, a ring"},
                   {"allreduce_oneshot", "every GPU reads every other GPU's input and sums: one kernel per GPU"},
                   {"allreduce_ring_flags", "the ring in one kernel per GPU: channels, flags between GPUs, no host step"},
                   {"allreduce_twoshot", "direct reduce-scatter, one barrier (events), direct all-gather"},
                   {"nccl_reduce_scatter", "ncclReduceScatter: GPU r gets the sum of chunk r (when built with NCCL)", true},
                   {"reduce_scatter_ring", "the ring kernel's reduce-scatter alone (G-1 steps, flags)"},
                   {"reduce_scatter_direct", "GPU r reads chunk r of every GPU and sums: one kernel per GPU"},
                   {"nccl_all_gather", "ncclAllGather: every GPU gets every GPU's chunk (when built with NCCL)", true},
                   {"all_gather_ring", "the ring kernel's all-gather alone (G-1 steps, flags)"},
                   {"all_gather_direct", "GPU r reads chunk g of every GPU g at once: one kernel per GPU"},
                   {"cublas_1gpu", "C = A*B with cuBLAS on the --device GPU (FP32)", true},
                   {"sgemm_split_switch", "rows of C split across the GPUs; one thread, cuCtxSetCurrent per GPU"},
                   {"sgemm_split_threads", "the same split; one host thread per GPU, its device current for life"}},
      .flags = {{.name = "gemm",
                 .help = "SGEMM shapes MxNxK, comma-separated (--quick: " + quick_gemm + ")",
                 .kind = cudalabs::ExtraFlag::Kind::text,
                 .default_value = full_gemm},
                {.name = "gpus",
                 .help = "GPUs to use: the --device one first, then the others in order; 0: all visible (at most 8)",
                 .default_value = "0",
                 .min = 0,
                 .max = lab32::max_gpus},
                {.name = "pairs",
                 .help = "which ordered pairs of GPUs the copies time at every size: 'auto' (the full matrix at one "
                         "size, the size sweep on the first GPU's pairs with its neighbour and with the last GPU), "
                         "'all', or GPU ids SRC-DST, comma-separated, e.g. 0-1,2-3",
                 .kind = cudalabs::ExtraFlag::Kind::text,
                 .default_value = "auto"},
                {.name = "scaling",
                 .help = "also time sgemm_split_threads on the first 2, 4, ... GPUs and print the speed-up over one GPU",
                 .kind = cudalabs::ExtraFlag::Kind::toggle},
                {.name = "no-nccl",
                 .help = "leave out the NCCL baselines (under compute-sanitizer, which would check NCCL's own kernels)",
                 .kind = cudalabs::ExtraFlag::Kind::toggle}},
  };
}

// "8192x8192x8192,16384x16384x8192" -> shapes; UsageError naming the bad part.
std::vector<GemmShape> parse_gemm(const std::string& text) {
  std::vector<GemmShape> shapes;
  std::size_t at = 0;
  while (at <= text.size()) {
    std::size_t end = text.find(',', at);
    if (end == std::string::npos) end = text.size();
    const std::string part = text.substr(at, end - at);
    int dims[3] = {0, 0, 0};
    char tail = 0;
    if (std::sscanf(part.c_str(), "%dx%dx%d%c", &dims[0], &dims[1], &dims[2], &tail) != 3 ||
        std::any_of(std::begin(dims), std::end(dims), [](int d) { return d < 1 || d > gemm_max_dim; }))
      throw cudalabs::UsageError("--gemm '" + part + "': write each shape as MxNxK with every dimension from 1 to " +
                                 std::to_string(gemm_max_dim) + ", shapes separated by commas, e.g. --gemm " + full_gemm);
    shapes.push_back({dims[0], dims[1], dims[2]});
    at = end + 1;
  }
  return shapes;
}

std::vector<GemmShape> gemm_shapes(const cudalabs::Options& o) {
  const std::string text = o.text("gemm");
  return parse_gemm(o.quick && text == full_gemm ? quick_gemm : text);
}

// --pairs: "auto", "all" or SRC-DST,... of GPU ids. UsageError naming the bad
// part. Whether the ids are in use is known only with the GPUs (pairs_timed);
// here, an id that no team of --gpus (at most 8) GPUs from --device can hold.
PairChoice parse_pairs(const std::string& text, const cudalabs::Options& o) {
  if (text == "auto") return {};
  if (text == "all") return {PairChoice::Kind::all, {}};
  const int most = o.integer("gpus") > 0 ? static_cast<int>(o.integer("gpus")) : lab32::max_gpus;
  // The team: the --device GPU, then the lowest other ids: [0, most) when the
  // device is among them, else [0, most - 1) and the device.
  auto possible = [&](int id) { return id == o.device || id < (o.device < most ? most : most - 1); };
  PairChoice choice{PairChoice::Kind::listed, {}};
  std::size_t at = 0;
  while (at <= text.size()) {
    std::size_t end = text.find(',', at);
    if (end == std::string::npos) end = text.size();
    const std::string part = text.substr(at, end - at);
    int src = -1, dst = -1;
    char tail = 0;
    if (std::sscanf(part.c_str(), "%d-%d%c", &src, &dst, &tail) != 2 || src < 0 || dst < 0 || src == dst)
      throw cudalabs::UsageError("--pairs '" + part + "': write 'auto', 'all' or pairs SRC-DST of two different GPU ids, "
                                 "comma-separated, e.g. --pairs 0-1,1-0,0-3");
    for (int id : {src, dst})
      if (!possible(id))
        throw cudalabs::UsageError("--pairs '" + part + "': GPU " + std::to_string(id) + " cannot be in use: the run " +
                                   "uses at most " + std::to_string(most) + " GPUs, --device " +
                                   std::to_string(o.device) + " and the lowest other ids; name those, or raise --gpus");
    choice.listed.emplace_back(src, dst);
    at = end + 1;
  }
  return choice;
}

// The flags main checks before any device is looked for, so that they are
// exit 2 on a machine without a GPU too.
void check_flags(const cudalabs::Options& o) {
  for (const auto& p : o.points)
    if (p.at("bytes") % 4 != 0)
      throw cudalabs::UsageError("--bytes " + std::to_string(p.at("bytes")) +
                                 ": the buffers hold floats, so bytes must be a multiple of 4 (e.g. " +
                                 std::to_string(p.at("bytes") / 4 * 4 + 4) + ")");
  gemm_shapes(o);
  parse_pairs(o.text("pairs"), o);
}

// Runs a family when no --variant was named or one of its variants was.
bool family_selected(const cudalabs::Options& o, const std::vector<std::string>& family) {
  if (o.variants.empty()) return true;
  return std::any_of(o.variants.begin(), o.variants.end(),
                     [&](const std::string& v) { return std::find(family.begin(), family.end(), v) != family.end(); });
}

}  // namespace
}  // namespace lab32host

using namespace lab32host;

int main(int argc, char** argv) {
  // NVLink SHARP (NVLS): NCCL's all-reduce through multicast objects in the
  // NVSwitches. It stays off: on a shared machine a program that uses it can
  // put every GPU of the host out of service. Set before NCCL's first call
  // reads its environment, over any value inherited; nothing in this lab
  // creates a multicast object (cuMulticastCreate) either.
  setenv("NCCL_NVLS_ENABLE", "0", 1);

  const cudalabs::LabSpec spec = lab_spec();
  // Flags whose values only this lab can judge: exit 2 before any device is
  // looked for. Anything else wrong on the line is left to run_lab.
  std::optional<cudalabs::Parsed> parsed;
  try {
    parsed = cudalabs::parse_args(spec, std::span<const char* const>(argv + 1, static_cast<std::size_t>(argc - 1)));
  } catch (const cudalabs::UsageError&) {
  }
  if (parsed && parsed->action == cudalabs::Action::run) try {
      check_flags(parsed->options);
    } catch (const cudalabs::UsageError& e) {
      std::fprintf(stderr, "%s: error: %s\n", spec.name.c_str(), e.what());
      return 2;
    }

  return cudalabs::run_lab(argc, argv, spec, [](cudalabs::Session& s) {
    const cudalabs::Options& o = s.options();
    Team team = make_team(s.device().id, o.integer("gpus"));
    const int g = team.size();
    {
      std::string line = "   GPUs:";
      for (int i = 0; i < g; ++i) {
        cudaDeviceProp prop{};
        CUDALABS_CHECK(cudaGetDeviceProperties(&prop, team[i].id));
        line += format_line(" %d (%s, %d SMs)%s", team[i].id, prop.name, team[i].sm_count, i + 1 < g ? "," : "");
      }
      if (g >= 2) line += team.all_pairs_peer() ? "; peer access between every pair" : "; NOT every pair has peer access";
      std::printf("%s\n", line.c_str());
    }
    const bool transfers = family_selected(o, transfer_variants), gemm = family_selected(o, gemm_variants);
    std::vector<Op> ops;  // the collectives this run times
    for (Op op : {Op::all_reduce, Op::reduce_scatter, Op::all_gather})
      if (family_selected(o, variants_of(op))) ops.push_back(op);
    const bool allreduce = !ops.empty();
    std::vector<std::string> need_two;  // what one GPU could not run
    HostScratch scratch("pinned buffer for the checks' downloads");

    // ---- copies and all-reduces, one buffer size at a time ----
    if ((transfers || allreduce) && g < 2) {
      if (transfers) need_two.insert(need_two.end(), transfer_variants.begin(), transfer_variants.end());
      for (Op op : ops) need_two.insert(need_two.end(), variants_of(op).begin(), variants_of(op).end());
    } else if (transfers || allreduce) {
      std::optional<NcclComms> nccl;
      // CUDALABS_TRACE=0: a tool owns CUDA's callbacks (tests/sanitize.sh, make
      // profile). NCCL's kernels on the GPUs wait for each other, so a profiler
      // that replays one kernel at a time would hang them, and a sanitizer
      // would check NCCL's own code: the baseline stays out.
      const char* trace = std::getenv("CUDALABS_TRACE");
      const bool tool_attached = trace && std::string(trace) == "0";
      const bool want_nccl = allreduce && !o.toggle("no-nccl") && !tool_attached;
      if (allreduce && o.toggle("no-nccl")) s.note("the NCCL baselines left out (--no-nccl)");
      if (allreduce && tool_attached && !o.toggle("no-nccl"))
        s.note("the NCCL baselines left out: CUDALABS_TRACE=0, a sanitizer or profiler is attached");
#if CUDALABS_HAVE_NCCL
      if (want_nccl) {
        try {
          nccl.emplace(team.ids());
          s.note("NCCL " + NcclComms::version() + ", NCCL_NVLS_ENABLE=" + std::getenv("NCCL_NVLS_ENABLE") +
                 " (NVLink multicast off)");
        } catch (const cudalabs::CudaError& e) {
          s.note(std::string("the NCCL baselines skipped: NCCL did not start: ") + e.what());
        }
      }
#else
      if (want_nccl)
        s.note("the NCCL baselines skipped: built without NCCL (nccl.h and libnccl were not found at configure time). "
               "Debian/Ubuntu: sudo apt-get install libnccl-dev (from NVIDIA's CUDA repository), then reconfigure");
#endif
      HostScratch staging("pinned staging buffer of staged_copy");
      std::vector<TransferRates> rates;
      std::map<Op, std::vector<CollectiveTimes>> times;
      const PairChoice pairs = parse_pairs(o.text("pairs"), o);
      const std::int64_t matrix_at = matrix_bytes(s.points());
      // Pinned memory at the largest size once, not again at every size.
      std::int64_t largest = 0;
      for (const Point& point : s.points()) largest = std::max(largest, point.at("bytes") / 4);
      scratch.get(static_cast<std::size_t>(largest));
      if (transfers && s.selected("staged_copy")) staging.get(static_cast<std::size_t>(largest));
      for (const Point& point : s.points()) {
        const std::int64_t bytes = point.at("bytes"), n = bytes / 4;
        for (auto& gpu : team.gpus) {
          gpu->reallocate(gpu->in, static_cast<std::size_t>(n), "input");
          gpu->reallocate(gpu->out, static_cast<std::size_t>(n), "output");
        }
        TransferInputs inputs(team, n);
        inputs.draw_all(s.seed());
        if (transfers)
          rates.push_back(transfer_rows(s, team, bytes, inputs, scratch, staging,
                                        pairs_timed(pairs, team, bytes == matrix_at)));
        for (Op op : ops)
          times[op].push_back(collective_rows(s, op, team, bytes, inputs, scratch, nccl ? &*nccl : nullptr, tool_attached));
      }
      for (auto& gpu : team.gpus) {
        gpu->reallocate(gpu->in, 0, "input");
        gpu->reallocate(gpu->out, 0, "output");
      }
      if (!o.check_only) {
        for (const auto& r : rates) transfer_notes(s, team, r);
        for (const auto& [op, per_size] : times) collective_notes(s, op, g, per_size);
      }
    }

    // ---- SGEMM: one GPU, then split by rows of C ----
    if (gemm) {
      const bool split = g >= 2 && (s.selected("sgemm_split_switch") || s.selected("sgemm_split_threads"));
      if (g < 2 && (s.selected("sgemm_split_switch") || s.selected("sgemm_split_threads")))
        need_two.insert(need_two.end(), {"sgemm_split_switch", "sgemm_split_threads"});
      std::optional<lab32::SplitSgemmThreads> threads;
      const auto ids = team.ids();
      if (split && s.selected("sgemm_split_threads")) threads.emplace(ids);
      for (const GemmShape& shape : gemm_shapes(o)) {
        gemm_rows(s, team, shape, threads ? &*threads : nullptr, split, scratch);
        if (o.toggle("scaling") && split) gemm_scaling(s, team, shape, scratch);
      }
    }

    if (!need_two.empty()) {
      std::string names;
      for (const auto& v : need_two)
        if (s.selected(v)) names += (names.empty() ? "" : ", ") + v;
      const std::string why = "needs at least 2 GPUs; " + std::to_string(g) + " in use (" +
                              (o.integer("gpus") > 0 ? "--gpus" : "visible") + "): skipped " + names;
      if (s.records().empty()) throw cudalabs::NoDeviceError("this lab " + why);
      s.note(why);
    }
    if (g >= 2)
      s.note("each multi-GPU run is forked from the session's stream to every GPU's stream and joined back: its time "
             "is the session GPU's events around all of it; no CUDA-graph batching, so the smallest sizes include the "
             "launch gap");
  });
}

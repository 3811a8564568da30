// Lab 17 — multi-head attention: lab 16's kernels over batch × heads.
//
// A transformer layer does not run one attention: it runs one per head, for
// every sequence of the batch, on tensors laid out [batch][heads][seq][dim].
// Each (batch, head) pair is an independent problem of lab 16's size. This lab
// runs lab 16's kernels (#included, not copied) two ways — a host loop with one
// launch per head, and one launch whose grid covers (query tiles, heads, batch)
// — and compares their rate per FLOP with lab 16's kernel on ONE head doing the
// same total work (seq' = seq·sqrt(batch·heads)).
//
// Variants (Q, K, V, O [batch][heads][seq][dim]):
//   unfused_per_head    lab 15's unfused pipeline, one head at a time (N×N scratch reused)  [baseline]
//   fp32_single_head    lab 16's flash_fp32 on one head of seq' = seq·sqrt(batch·heads): same FLOPs
//   fp32_per_head_loop  flash_fp32, one launch per head: batch·heads launches
//   fp32_batched_grid   flash_fp32, one launch, grid (query tiles, heads, batch)
//   fp16_single_head    lab 16's flash_fp16 (tensor cores) on one head of seq', same FLOPs
//   fp16_per_head_loop  flash_fp16, one launch per head
//   fp16_batched_grid   flash_fp16, one launch over every head
//   bf16_batched_grid   flash_bf16, one launch over every head
//   fp16_fa2_grid       lab 16's flash2_fp16 (FlashAttention-2's techniques), one launch
//   bf16_fa2_grid       the same with BF16 inputs
//
// --inputs large: Q and K 8 times larger; --inputs positive_v: V in [0, 1); as
// lab 16's (flash_check.cuh).
//
// The per-head loop and batched grid launchers are the student's (multi_head.cuh,
// called through kernels.hpp); the baseline, the *_single_head rows and the
// references are the course's copies of labs 15 and 16, compiled here.
//
// Run: make run LAB=17    (batch 4, heads 16, seq 4096, dim 64 and 128)
//      make run LAB=17 ARGS="--batch 8 --heads 12 --seq 1024 --dim 64 --causal"
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include <cudalabs/blas.hpp>
#include <cudalabs/checker.hpp>
#include <cudalabs/cli.hpp>
#include <cudalabs/device.hpp>
#include <cudalabs/error.hpp>
#include <cudalabs/lab.hpp>
#include <cudalabs/math.hpp>
#include <cudalabs/memory.hpp>
#include <cudalabs/mma.cuh>
#include <cudalabs/random.hpp>
#include <cudalabs/reference.hpp>

#include "input_kinds.hpp"
#include "../13_attention_scores/attention_sizes.hpp"
#include "../16_flash_attention/attention_shape.hpp"
#include "kernels.hpp"

// The course's labs 15 and 16 (baseline, single-head rows) and the checks
// labs 16, 17 and 31 share (labs/shared/). This program's kernel library
// compiles lab 16's kernel files too (multi_head.cuh includes them): those
// files give their kernels and functions internal linkage, so the linker never
// merges the two copies (the course's flash_fp32_prepare<64> setting the
// shared-memory limit of the student's copy of the kernel only, say) nor
// refuses them (lab 15's main.cu says more).
#include "../15_attention_forward/attention_forward.cuh"
#include "flash_check.cuh"
#include "../16_flash_attention/flash_fp32.cuh"
#include "../16_flash_attention/flash_mma.cuh"

namespace {

const std::vector<std::string> fp32_variants = {"fp32_single_head", "fp32_per_head_loop", "fp32_batched_grid"};
const std::vector<std::string> mma_variants = {"fp16_single_head", "fp16_per_head_loop", "fp16_batched_grid",
                                               "bf16_batched_grid", "fp16_fa2_grid",      "bf16_fa2_grid"};

// Q, K, V of one shape: on the host (for the CPU reference) and on the device,
// drawn from buffers first_seed .. first_seed + 2 of a seed.
struct Problem {
  AttentionShape shape;
  std::uint64_t first_seed;
  InputKind kind;
  std::vector<float> q, k, v;
  cudalabs::DeviceBuffer<float> dq, dk, dv, out;

  Problem(std::uint64_t seed, const AttentionShape& sh, std::uint64_t first, InputKind input_kind)
      : shape(sh), first_seed(first), kind(input_kind) {
    const auto n = static_cast<std::size_t>(shape.elements());
    dq = cudalabs::DeviceBuffer<float>(n, "q");
    dk = cudalabs::DeviceBuffer<float>(n, "k");
    dv = cudalabs::DeviceBuffer<float>(n, "v");
    out = cudalabs::DeviceBuffer<float>(n, "out");
    draw(seed);
  }
  // New values from `seed`, uploaded.
  void draw(std::uint64_t seed) {
    HostInputs in = draw_inputs(static_cast<std::size_t>(shape.elements()), seed, kind, first_seed);
    q = std::move(in.q), k = std::move(in.k), v = std::move(in.v);
    dq.upload(q);
    dk.upload(k);
    dv.upload(v);
  }
};

// The *_single_head rows: one head of seq' = seq·sqrt(batch·heads), the same
// FLOPs as the whole batch, with the N×N scratch of its cuBLAS reference.
struct SingleHead {
  Problem problem;
  cudalabs::DeviceBuffer<float> scores, weights;
  GpuPipeline pipeline;

  SingleHead(std::uint64_t seed, const AttentionShape& one, InputKind kind, const cudalabs::Cublas& blas,
             cudaStream_t stream)
      : problem(seed, one, 10, kind),
        scores(static_cast<std::size_t>(one.seq) * one.seq, "reference scores"),
        weights(static_cast<std::size_t>(one.seq) * one.seq, "reference weights"),
        pipeline{blas, scores.data(), weights.data(), stream} {}
};

// One head of seq' with batch·heads·seq² ≈ seq'² (exact when batch·heads is a
// square: 4 × 16 heads of 4096 = one head of 32768), causal as the problem.
AttentionShape same_work_single_head(const AttentionShape& s) {
  const double seq = std::round(s.seq * std::sqrt(static_cast<double>(s.heads_total())));
  return {.seq = static_cast<int>(std::min(seq, 1e9)), .dim = s.dim, .causal = s.causal};
}

// Limits of the same-work head: lab 15's pipeline is its reference and needs
// 8·seq'² bytes of scratch (8 GiB at 32768).
std::string single_head_blocker(const AttentionShape& one) {
  if (one.causal) return "the per-FLOP comparison is made without --causal";
  if (one.seq > 32768)
    return "seq' = " + std::to_string(one.seq) + " is above 32768 (lab 15's pipeline, the reference)";
  if (nxn_scratch_bytes(one.seq) > 0.8 * static_cast<double>(cudalabs::device_free_bytes()))
    return "the reference's N×N scratch at seq' = " + std::to_string(one.seq) + " does not fit in device memory";
  return "";
}

// The multi-head gate: the one-launch grid's GFLOP/s as % of one head doing
// the same FLOPs (0 when either was not timed).
void note_rate(cudalabs::Session& s, const cudalabs::Point& point, const std::string& precision, double multi_gflops,
               double single_gflops) {
  if (multi_gflops <= 0 || single_gflops <= 0) return;
  s.note("[" + cudalabs::to_string(point) + "] " + precision +
         "_batched_grid: " + std::to_string(std::lround(100 * multi_gflops / single_gflops)) + "% of " + precision +
         "_single_head's GFLOP/s at the same FLOPs.");
}

// Bad usage on any machine (main() checks it before run_lab too); the input kind.
InputKind check_usage(const cudalabs::Options& o) {
  check_dims(o, fp32_variants, mma_variants);
  check_attention_elements(o, ", 7 tensors");
  return attention_input_kind(o);
}

}  // namespace

int main(int argc, char** argv) {
  const cudalabs::LabSpec spec{
      .name = "17_multi_head_attention",
      .title = "multi-head attention: lab 16's kernels over batch × heads, per-head launches vs one grid",
      .about =
          "O = softmax(Q·Kᵀ/sqrt(d))·V for every (batch, head), Q, K, V, O [batch][heads][seq][dim] row-major.\n"
          "Lab 16's fused kernels run once per head (a host loop) and once over a grid of (query tiles, heads,\n"
          "batch), against lab 15's unfused pipeline per head (the baseline, measured first), and against lab\n"
          "16's kernel on one head with the same total FLOPs (seq' = seq·sqrt(batch·heads)). GFLOP/s counts\n"
          "4·seq²·dim per head. Head dimensions: FP32 variants any multiple of 4 up to 128, tensor-core\n"
          "variants 64 or 128 (compute capability 8.0+, skipped below). Small problems are checked against\n"
          "the CPU, large ones against lab 15's cuBLAS pipeline run head by head.",
      .sizes = {{.name = "batch", .help = "sequences in the batch", .full = {4}, .quick = {2, 1, 2}, .max = 1024},
                {.name = "heads", .help = "attention heads", .full = {16}, .quick = {3, 2, 2}, .max = 1024},
                {.name = "seq", .help = "sequence length N", .full = {4096, 4096}, .quick = {37, 1, 130}, .max = 32768},
                {.name = "dim", .help = "head dimension d", .full = {64, 128}, .quick = {64, 128, 128}, .max = 128}},
      .size_alias = {"seq"},
      .variants = {{"unfused_per_head", "the course's lab 15 unfused pipeline, one head at a time", true},
                   {"fp32_single_head", "the course's flash_fp32 (lab 16) on ONE head of seq·sqrt(batch·heads)"},
                   {"fp32_per_head_loop", "flash_fp32, one launch per head"},
                   {"fp32_batched_grid", "flash_fp32, one launch, grid (query tiles, heads, batch)"},
                   {"fp16_single_head", "the course's flash_fp16 (lab 16) on ONE head of seq·sqrt(batch·heads)"},
                   {"fp16_per_head_loop", "flash_fp16 (mma.sync tensor cores), one launch per head (sm_80+)"},
                   {"fp16_batched_grid", "flash_fp16, one launch over every head (sm_80+)"},
                   {"bf16_batched_grid", "flash_bf16, one launch over every head (sm_80+)"},
                   {"fp16_fa2_grid", "lab 16's flash2_fp16 (FlashAttention-2's techniques), one launch (sm_80+)"},
                   {"bf16_fa2_grid", "lab 16's flash2_bf16, one launch over every head (sm_80+)"}},
      .flags = {{.name = "causal",
                 .help = "mask keys after the query; no baseline and no single-head comparison then",
                 .kind = cudalabs::ExtraFlag::Kind::toggle},
                attention_inputs_flag()},
  };
  if (const int rc = precheck_usage(spec, argc, argv, check_usage); rc != 0) return rc;

  return cudalabs::run_lab(argc, argv, spec, [&](cudalabs::Session& s) {
    const InputKind kind = check_usage(s.options());
    const bool large = kind == InputKind::large;
    const bool causal = s.options().toggle("causal");
    const cudalabs::Cublas blas;
    std::set<std::string> notes;
    const cudalabs::Tolerance fp32_tol = for_inputs(fp32_tolerance, large);
    const cudalabs::Tolerance fp16_tol = for_inputs(tensor_core_tolerance(false), large);
    const cudalabs::Tolerance bf16_tol = for_inputs(tensor_core_tolerance(true), large);

    for (const auto& point : s.points()) {
      const AttentionShape shape = shape_at(point, causal);
      const std::int64_t heads = shape.heads_total(), per_head = shape.head_elements();
      Problem p(s.seed(), shape, 1, kind);

      // lab 15's N×N scratch: the baseline's, and the large-problem reference's.
      const bool need_scratch = !causal || !cpu_reference_affordable(shape);
      const std::size_t nxn = need_scratch ? static_cast<std::size_t>(shape.seq) * shape.seq : 0;
      cudalabs::DeviceBuffer<float> scores(nxn, "lab 15 scores (N×N)"), weights(nxn, "lab 15 weights (N×N)");
      const GpuPipeline pipeline{blas, scores.data(), weights.data(), s.stream()};
      // The FP32 variants' reference, and new inputs with theirs before each
      // variant's last check. The 16-bit variants convert the inputs they find
      // (Narrow), after their own new draws.
      Expected expected = attention_reference(shape, p.q, p.k, p.v, pipeline);
      auto new_inputs = [&](std::uint64_t seed) {
        p.draw(seed);
        expected = attention_reference(shape, p.q, p.k, p.v, pipeline);
      };

      const cudalabs::Work fp32_work{.bytes = attention_bytes(shape, 4), .flops = attention_flops(shape)};
      const cudalabs::Work mma_work{.bytes = attention_bytes(shape, 2), .flops = attention_flops(shape)};
      auto check = [&] { return expected.check(p.out.download(), fp32_tol); };
      auto poison = [&](cudaStream_t st) { p.out.poison(st); };
      auto extra = [&](const std::string& how) {
        auto e = flash_extra(shape);
        e["launches"] = how == "loop" ? static_cast<double>(heads) : 1.0;
        return e;
      };

      if (!causal)
        s.measure(with_extra({.variant = "unfused_per_head",
                              .size = point,
                              .work = fp32_work,
                              .run =
                                  [&](cudaStream_t st) {
                                    for (std::int64_t h = 0; h < heads; ++h)
                                      attention_forward_unfused(
                                          p.dq.data() + h * per_head, p.dk.data() + h * per_head,
                                          p.dv.data() + h * per_head, scores.data(), weights.data(),
                                          p.out.data() + h * per_head, shape.seq, shape.dim, st);
                                  },
                              .check = check,
                              .poison = poison,
                              .new_inputs = new_inputs,
                              .ceiling = cudalabs::CeilingKind::baseline},
                             {{"scratch_bytes", nxn_scratch_bytes(shape.seq)}, {"launches", 3.0 * heads}}));

      // ---- FP32, CUDA cores --------------------------------------------------------
      const std::string fp32_blocker = cannot_run(s.device(), false, lab17::fp32_smem_bytes(shape.dim));
      if (!fp32_blocker.empty())
        notes.insert("FP32 variants at dim " + std::to_string(shape.dim) + " skipped: " + fp32_blocker + ".");
      double fp32_single_gflops = 0;  // a copy: records move when later ones are added

      // The same-work head runs the course's lab 16 kernel: the yardstick of the
      // batched grid, as the baseline is of every row.
      if (fp32_blocker.empty() && s.selected("fp32_single_head")) {
        const AttentionShape one = same_work_single_head(shape);
        if (const std::string why = single_head_blocker(one); !why.empty()) {
          notes.insert("fp32_single_head, fp16_single_head skipped: " + why + ".");
        } else {
          SingleHead single(s.seed(), one, kind, blas, s.stream());
          Problem& big = single.problem;
          Expected big_expected = attention_reference(one, big.q, big.k, big.v, single.pipeline);
          Fp32Plan plan = flash_fp32_plan(one, s.stream());
          const KernelChoice kc = flash_fp32_choice(one.dim);
          auto e = flash_extra(one);
          e["single_head_seq"] = one.seq;
          e["launches"] = 1;
          e["kv_splits"] = plan.splits;
          e["scratch_bytes"] = plan.workspace_bytes();
          fp32_single_gflops =
              s.measure(with_extra({.variant = "fp32_single_head",
                                    .size = point,
                                    .work = {.bytes = attention_bytes(one, 4), .flops = attention_flops(one)},
                                    .run =
                                        [&](cudaStream_t st) {
                                          flash_fp32(big.dq.data(), big.dk.data(), big.dv.data(),
                                                             big.out.data(), one, plan, st);
                                        },
                                    .check = [&] { return big_expected.check(big.out.download(), fp32_tol); },
                                    .poison = [&](cudaStream_t st) { big.out.poison(st); },
                                    .new_inputs =
                                        [&](std::uint64_t seed) {
                                          big.draw(seed);
                                          big_expected = attention_reference(one, big.q, big.k, big.v, single.pipeline);
                                        },
                                    .resources = cudalabs::kernel_resources(kc.kernel, kc.threads, kc.smem_bytes),
                                    .ceiling = cudalabs::CeilingKind::baseline},
                                   e))
                  .gflops;
        }
      }

      // The student's two FP32 launchers, each with the plan made for it.
      auto measure_fp32 = [&](const std::string& name, const lab17::Fp32Plan& plan, auto launch,
                              const std::string& how) {
        auto e = extra(how);
        e["kv_splits"] = lab17::fp32_splits(plan);
        e["scratch_bytes"] = lab17::fp32_workspace_bytes(plan);
        return s
            .measure(with_extra(
                {.variant = name,
                 .size = point,
                 .work = fp32_work,
                 .run =
                     [&](cudaStream_t st) {
                       launch(p.dq.data(), p.dk.data(), p.dv.data(), p.out.data(), shape, plan, st);
                     },
                 .check = check,
                 .poison = poison,
                 .new_inputs = new_inputs,
                 .resources = lab17::fp32_resources(shape.dim),
                 .ceiling = cudalabs::CeilingKind::baseline},
                e))
            .gflops;
      };
      if (fp32_blocker.empty() && s.selected("fp32_per_head_loop"))
        measure_fp32("fp32_per_head_loop", lab17::fp32_per_head_loop_plan(shape, s.stream()), lab17::fp32_per_head_loop,
                     "loop");
      if (fp32_blocker.empty() && s.selected("fp32_batched_grid"))
        note_rate(s, point, "fp32",
                  measure_fp32("fp32_batched_grid", lab17::fp32_batched_grid_plan(shape, s.stream()),
                               lab17::fp32_batched_grid, "grid"),
                  fp32_single_gflops);

      // ---- FP16 / BF16, tensor cores -----------------------------------------------
      const std::string mma_blocker =
          cannot_run(s.device(), true, std::max(lab17::mma_smem_bytes(shape.dim), lab17::fa2_smem_bytes(shape.dim)));
      const bool any_mma =
          std::any_of(mma_variants.begin(), mma_variants.end(), [&](const std::string& v) { return s.selected(v); });
      if (any_mma && !mma_blocker.empty())
        notes.insert("tensor-core variants at dim " + std::to_string(shape.dim) + " skipped: " + mma_blocker + ".");
      if (!any_mma || !mma_blocker.empty()) continue;

      double fp16_single_gflops = 0;
      if (s.selected("fp16_single_head")) {
        const AttentionShape one = same_work_single_head(shape);
        if (const std::string why = single_head_blocker(one); !why.empty()) {
          notes.insert("fp32_single_head, fp16_single_head skipped: " + why + ".");
        } else {
          SingleHead single(s.seed(), one, kind, blas, s.stream());
          Problem& big = single.problem;
          Narrow<__half> big16(static_cast<std::size_t>(one.elements()));
          auto refresh = [&] { big16.refresh(one, big.dq.data(), big.dk.data(), big.dv.data(), single.pipeline); };
          refresh();
          const KernelChoice kc = flash_mma_choice<__half>(one.dim);
          auto e = flash_extra(one);
          e["single_head_seq"] = one.seq;
          e["launches"] = 1;
          fp16_single_gflops =
              s.measure(with_extra({.variant = "fp16_single_head",
                                    .size = point,
                                    .work = {.bytes = attention_bytes(one, 2), .flops = attention_flops(one)},
                                    .run =
                                        [&](cudaStream_t st) {
                                          flash_mma<__half>(big16.q.data(), big16.k.data(), big16.v.data(),
                                                                    big.out.data(), one, st);
                                        },
                                    .check = [&] { return big16.expected.check(big.out.download(), fp16_tol); },
                                    .poison = [&](cudaStream_t st) { big.out.poison(st); },
                                    .new_inputs =
                                        [&](std::uint64_t seed) {
                                          big.draw(seed);
                                          refresh();
                                        },
                                    .peak = cudalabs::Peak::fp16_tensor,
                                    .resources = cudalabs::kernel_resources(kc.kernel, kc.threads, kc.smem_bytes),
                                    .ceiling = cudalabs::CeilingKind::baseline},
                                   e))
                  .gflops;
        }
      }

      // The student's tensor-core launchers, on the inputs `in` rounded to 16 bits.
      // `resources` and `more` (extras): of the kernel launched, when not flash_mma.cuh's.
      auto measure_mma = [&](const std::string& name, auto& in, auto launch, const cudalabs::Tolerance& tol,
                             const std::string& how, std::optional<cudalabs::KernelResources> resources = {},
                             const std::map<std::string, double>& more = {}) {
        constexpr bool bf16 = std::is_same_v<std::remove_cvref_t<decltype(in.q.data()[0])>, __nv_bfloat16>;
        auto e = extra(how);
        for (const auto& [key, value] : more) e[key] = value;
        return s
            .measure(with_extra(
                {.variant = name,
                 .size = point,
                 .work = mma_work,
                 .run =
                     [&](cudaStream_t st) {
                       launch(in.q.data(), in.k.data(), in.v.data(), p.out.data(), shape, st);
                     },
                 .check = [&] { return in.expected.check(p.out.download(), tol); },
                 .poison = poison,
                 .new_inputs =
                     [&](std::uint64_t seed) {
                       p.draw(seed);
                       in.refresh(shape, p.dq.data(), p.dk.data(), p.dv.data(), pipeline);
                     },
                 .peak = bf16 ? cudalabs::Peak::bf16_tensor : cudalabs::Peak::fp16_tensor,
                 .resources = resources ? *resources
                                        : bf16 ? lab17::bf16_resources(shape.dim)
                                               : lab17::fp16_resources(shape.dim),
                 .ceiling = cudalabs::CeilingKind::baseline},
                e))
            .gflops;
      };
      // Lab 16's FlashAttention-2 kernel over the same heads, with its plan.
      auto measure_fa2 = [&](const std::string& name, auto& in, auto launch, const cudalabs::Tolerance& tol,
                             const cudalabs::KernelResources& resources) {
        const lab17::Fa2Plan plan = lab17::fa2_batched_grid_plan(shape);
        // flash_fa2 replaces flash_extra's scratch_bytes: its split workspace (0 unsplit).
        const std::map<std::string, double> more = {{"kv_splits", lab17::fa2_splits(plan)},
                                                    {"scratch_bytes", lab17::fa2_workspace_bytes(plan)}};
        return measure_mma(
            name, in,
            [&](auto q, auto k, auto v, float* out, const AttentionShape& sh, cudaStream_t st) {
              launch(q, k, v, out, sh, plan, st);
            },
            tol, "grid", resources, more);
      };
      if (s.selected("fp16_per_head_loop") || s.selected("fp16_batched_grid") || s.selected("fp16_fa2_grid")) {
        Narrow<__half> in16(static_cast<std::size_t>(shape.elements()));
        in16.refresh(shape, p.dq.data(), p.dk.data(), p.dv.data(), pipeline);
        if (s.selected("fp16_per_head_loop"))
          measure_mma("fp16_per_head_loop", in16, lab17::fp16_per_head_loop, fp16_tol, "loop");
        if (s.selected("fp16_batched_grid"))
          note_rate(s, point, "fp16",
                    measure_mma("fp16_batched_grid", in16, lab17::fp16_batched_grid, fp16_tol, "grid"),
                    fp16_single_gflops);
        if (s.selected("fp16_fa2_grid"))
          measure_fa2("fp16_fa2_grid", in16, lab17::fp16_fa2_grid, fp16_tol, lab17::fa2_fp16_resources(shape.dim));
      }
      if (s.selected("bf16_batched_grid") || s.selected("bf16_fa2_grid")) {
        Narrow<__nv_bfloat16> in_bf16(static_cast<std::size_t>(shape.elements()));
        in_bf16.refresh(shape, p.dq.data(), p.dk.data(), p.dv.data(), pipeline);
        if (s.selected("bf16_batched_grid"))
          measure_mma("bf16_batched_grid", in_bf16, lab17::bf16_batched_grid, bf16_tol, "grid");
        if (s.selected("bf16_fa2_grid"))
          measure_fa2("bf16_fa2_grid", in_bf16, lab17::bf16_fa2_grid, bf16_tol, lab17::fa2_bf16_resources(shape.dim));
      }
    }

    if (causal)
      s.note(
          "--causal: lab 15's pipeline has no mask, so no baseline; FLOPs count the N(N+1)/2 pairs j <= i per head.");
    for (const auto& line : notes) s.note(line);
    s.note(
        "GFLOP/s counts 4·seq²·dim per head (/1000 = TFLOPS). vs = speed-up over unfused_per_head. *_single_head rows");
    s.note("  run ONE head of seq' = seq·sqrt(batch·heads) (same FLOPs; seq' in the JSON as single_head_seq): the");
    s.note("  multi-head rows should match their per-FLOP rate.");
    note_attention_inputs(s, kind);
  });
}

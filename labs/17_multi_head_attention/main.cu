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
//
// Run: make run LAB=17    (batch 4, heads 16, seq 4096, dim 64 and 128)
//      make run LAB=17 ARGS="--batch 8 --heads 12 --seq 1024 --dim 64 --causal"
#include <algorithm>
#include <cmath>
#include <set>
#include <string>

#include <cudalabs/blas.hpp>
#include <cudalabs/lab.hpp>
#include <cudalabs/random.hpp>

#include "../15_attention_forward/attention_forward.cuh"
#include "../16_flash_attention/flash_check.cuh"
#include "../16_flash_attention/flash_common.cuh"
#include "../16_flash_attention/flash_fp32.cuh"
#include "../16_flash_attention/flash_mma.cuh"

namespace {

const std::vector<std::string> fp32_variants = {"fp32_single_head", "fp32_per_head_loop", "fp32_batched_grid"};
const std::vector<std::string> mma_variants = {"fp16_single_head", "fp16_per_head_loop", "fp16_batched_grid",
                                               "bf16_batched_grid"};

// Q, K, V of one shape: on the host (for the CPU reference) and on the device.
struct Problem {
  AttentionShape shape;
  std::vector<float> q, k, v;
  cudalabs::DeviceBuffer<float> dq, dk, dv, out;

  Problem(const cudalabs::Session& s, const AttentionShape& sh, std::uint64_t first_seed) : shape(sh) {
    const auto n = static_cast<std::size_t>(shape.elements());
    q = cudalabs::random_floats(n, s.seed(first_seed), -qk_range, qk_range);
    k = cudalabs::random_floats(n, s.seed(first_seed + 1), -qk_range, qk_range);
    v = cudalabs::random_floats(n, s.seed(first_seed + 2), -v_range, v_range);
    dq = cudalabs::DeviceBuffer<float>(q, "q");
    dk = cudalabs::DeviceBuffer<float>(k, "k");
    dv = cudalabs::DeviceBuffer<float>(v, "v");
    out = cudalabs::DeviceBuffer<float>(n, "out");
  }
};

// The *_single_head rows: one head of seq' = seq·sqrt(batch·heads), the same
// FLOPs as the whole batch, with the N×N scratch of its cuBLAS reference.
struct SingleHead {
  Problem problem;
  cudalabs::DeviceBuffer<float> scores, weights;
  GpuPipeline pipeline;

  SingleHead(const cudalabs::Session& s, const AttentionShape& one, const cudalabs::Cublas& blas)
      : problem(s, one, 10),
        scores(static_cast<std::size_t>(one.seq) * one.seq, "reference scores"),
        weights(static_cast<std::size_t>(one.seq) * one.seq, "reference weights"),
        pipeline{blas, scores.data(), weights.data(), s.stream()} {}
};

// The same inputs rounded to FP16 or BF16 on the device, and the reference
// computed from the rounded values (flash_check.cuh says why).
template <typename T>
struct Narrow {
  cudalabs::DeviceBuffer<T> q, k, v;
  Expected expected;

  Narrow(const Problem& p, const GpuPipeline& pipeline) {
    const std::int64_t n = p.shape.elements();
    q = cudalabs::DeviceBuffer<T>(static_cast<std::size_t>(n), "q (16-bit)");
    k = cudalabs::DeviceBuffer<T>(static_cast<std::size_t>(n), "k (16-bit)");
    v = cudalabs::DeviceBuffer<T>(static_cast<std::size_t>(n), "v (16-bit)");
    convert_from_float(p.dq.data(), q.data(), n, pipeline.stream);
    convert_from_float(p.dk.data(), k.data(), n, pipeline.stream);
    convert_from_float(p.dv.data(), v.data(), n, pipeline.stream);
    CUDALABS_CHECK(cudaStreamSynchronize(pipeline.stream));
    expected = attention_reference(p.shape, widen(q), widen(k), widen(v), pipeline);
  }
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

void check_usage(const cudalabs::Options& o) {
  check_dims(o, fp32_variants, mma_variants);
  for (const auto& p : o.points) {
    const double elements = static_cast<double>(p.at("batch")) * p.at("heads") * p.at("seq") * p.at("dim");
    if (elements > static_cast<double>(std::int64_t{1} << 28))
      throw cudalabs::UsageError("batch·heads·seq·dim = " + std::to_string(static_cast<long long>(elements)) +
                                 " elements per tensor: at most 2^28 (1 GiB per FP32 tensor, 7 tensors). Use smaller "
                                 "--batch, --heads or --seq.");
  }
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
      .variants = {{"unfused_per_head", "lab 15's unfused pipeline, one head at a time", true},
                   {"fp32_single_head", "lab 16 flash_fp32 on ONE head of seq·sqrt(batch·heads): same FLOPs"},
                   {"fp32_per_head_loop", "flash_fp32, one launch per head"},
                   {"fp32_batched_grid", "flash_fp32, one launch, grid (query tiles, heads, batch)"},
                   {"fp16_single_head", "lab 16 flash_fp16 on ONE head of seq·sqrt(batch·heads) (sm_80+)"},
                   {"fp16_per_head_loop", "flash_fp16 (mma.sync tensor cores), one launch per head (sm_80+)"},
                   {"fp16_batched_grid", "flash_fp16, one launch over every head (sm_80+)"},
                   {"bf16_batched_grid", "flash_bf16, one launch over every head (sm_80+)"}},
      .flags = {{.name = "causal",
                 .help = "mask keys after the query; no baseline and no single-head comparison then",
                 .kind = cudalabs::ExtraFlag::Kind::toggle}},
  };
  if (const int rc = precheck_usage(spec, argc, argv, check_usage); rc != 0) return rc;

  return cudalabs::run_lab(argc, argv, spec, [&](cudalabs::Session& s) {
    check_usage(s.options());
    const bool causal = s.options().toggle("causal");
    const cudalabs::Cublas blas;
    std::set<std::string> notes;

    for (const auto& point : s.points()) {
      const AttentionShape shape{.batch = static_cast<int>(point.at("batch")),
                                 .heads = static_cast<int>(point.at("heads")),
                                 .seq = static_cast<int>(point.at("seq")),
                                 .dim = static_cast<int>(point.at("dim")),
                                 .causal = causal};
      const AttentionShape one_head{.seq = shape.seq, .dim = shape.dim, .causal = causal};
      const std::int64_t heads = shape.heads_total(), per_head = shape.head_elements();
      Problem p(s, shape, 1);

      // lab 15's N×N scratch: the baseline's, and the large-problem reference's.
      const bool need_scratch = !causal || !cpu_reference_affordable(shape);
      const std::size_t nxn = need_scratch ? static_cast<std::size_t>(shape.seq) * shape.seq : 0;
      cudalabs::DeviceBuffer<float> scores(nxn, "lab 15 scores (N×N)"), weights(nxn, "lab 15 weights (N×N)");
      const GpuPipeline pipeline{blas, scores.data(), weights.data(), s.stream()};
      const Expected expected = attention_reference(shape, p.q, p.k, p.v, pipeline);

      const cudalabs::Work fp32_work{.bytes = attention_bytes(shape, 4), .flops = attention_flops(shape)};
      auto check = [&] { return expected.check(p.out.download(), fp32_tolerance); };
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
                                      attention_forward_unfused(p.dq.data() + h * per_head, p.dk.data() + h * per_head,
                                                                p.dv.data() + h * per_head, scores.data(),
                                                                weights.data(), p.out.data() + h * per_head, shape.seq,
                                                                shape.dim, st);
                                  },
                              .check = check,
                              .poison = poison,
                              .ceiling = cudalabs::CeilingKind::baseline},
                             {{"scratch_bytes", nxn_scratch_bytes(shape.seq)}, {"launches", 3.0 * heads}}));

      // ---- FP32, CUDA cores --------------------------------------------------------
      const std::string fp32_blocker = cannot_run(s.device(), false, flash_fp32_smem_bytes(shape.dim));
      if (!fp32_blocker.empty())
        notes.insert("FP32 variants at dim " + std::to_string(shape.dim) + " skipped: " + fp32_blocker + ".");
      const KernelChoice fp32_kernel = fp32_blocker.empty() ? flash_fp32_choice(shape.dim) : KernelChoice{};
      double fp32_single_gflops = 0;  // a copy: records move when later ones are added

      if (fp32_blocker.empty() && s.selected("fp32_single_head")) {
        const AttentionShape one = same_work_single_head(shape);
        if (const std::string why = single_head_blocker(one); !why.empty()) {
          notes.insert("fp32_single_head, fp16_single_head skipped: " + why + ".");
        } else {
          SingleHead single(s, one, blas);
          Problem& big = single.problem;
          const Expected big_expected = attention_reference(one, big.q, big.k, big.v, single.pipeline);
          Fp32Plan plan = flash_fp32_plan(one, s.stream());
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
                                          flash_fp32(big.dq.data(), big.dk.data(), big.dv.data(), big.out.data(), one,
                                                     plan, st);
                                        },
                                    .check = [&] { return big_expected.check(big.out.download(), fp32_tolerance); },
                                    .poison = [&](cudaStream_t st) { big.out.poison(st); },
                                    .resources = cudalabs::kernel_resources(fp32_kernel.kernel, fp32_kernel.threads,
                                                                            fp32_kernel.smem_bytes),
                                    .ceiling = cudalabs::CeilingKind::baseline},
                                   e))
                  .gflops;
        }
      }

      if (fp32_blocker.empty() && s.selected("fp32_per_head_loop")) {
        Fp32Plan plan = flash_fp32_plan(one_head, s.stream());  // one workspace, reused head after head on one stream
        auto e = extra("loop");
        e["kv_splits"] = plan.splits;
        e["scratch_bytes"] = plan.workspace_bytes();
        s.measure(with_extra(
            {.variant = "fp32_per_head_loop",
             .size = point,
             .work = fp32_work,
             .run =
                 [&](cudaStream_t st) {
                   for (std::int64_t h = 0; h < heads; ++h)
                     flash_fp32(p.dq.data() + h * per_head, p.dk.data() + h * per_head, p.dv.data() + h * per_head,
                                p.out.data() + h * per_head, one_head, plan, st);
                 },
             .check = check,
             .poison = poison,
             .resources = cudalabs::kernel_resources(fp32_kernel.kernel, fp32_kernel.threads, fp32_kernel.smem_bytes),
             .ceiling = cudalabs::CeilingKind::baseline},
            e));
      }

      if (fp32_blocker.empty() && s.selected("fp32_batched_grid")) {
        Fp32Plan plan = flash_fp32_plan(shape, s.stream());
        auto e = extra("grid");
        e["kv_splits"] = plan.splits;
        e["scratch_bytes"] = plan.workspace_bytes();
        const double gflops =
            s.measure(with_extra({.variant = "fp32_batched_grid",
                                  .size = point,
                                  .work = fp32_work,
                                  .run =
                                      [&](cudaStream_t st) {
                                        flash_fp32(p.dq.data(), p.dk.data(), p.dv.data(), p.out.data(), shape, plan,
                                                   st);
                                      },
                                  .check = check,
                                  .poison = poison,
                                  .resources = cudalabs::kernel_resources(fp32_kernel.kernel, fp32_kernel.threads,
                                                                          fp32_kernel.smem_bytes),
                                  .ceiling = cudalabs::CeilingKind::baseline},
                                 e))
                .gflops;
        note_rate(s, point, "fp32", gflops, fp32_single_gflops);
      }

      // ---- FP16 / BF16, tensor cores -----------------------------------------------
      const std::string mma_blocker = cannot_run(s.device(), true, flash_mma_smem_bytes<__half>(shape.dim));
      const bool any_mma =
          std::any_of(mma_variants.begin(), mma_variants.end(), [&](const std::string& v) { return s.selected(v); });
      if (any_mma && !mma_blocker.empty())
        notes.insert("tensor-core variants at dim " + std::to_string(shape.dim) + " skipped: " + mma_blocker + ".");
      if (!any_mma || !mma_blocker.empty()) continue;

      const cudalabs::Tolerance fp16_tol = tensor_core_tolerance(false);
      double fp16_single_gflops = 0;
      if (s.selected("fp16_single_head")) {
        const AttentionShape one = same_work_single_head(shape);
        if (const std::string why = single_head_blocker(one); !why.empty()) {
          notes.insert("fp32_single_head, fp16_single_head skipped: " + why + ".");
        } else {
          SingleHead single(s, one, blas);
          Problem& big = single.problem;
          const Narrow<__half> big16(big, single.pipeline);
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
                                    .resources = cudalabs::kernel_resources(kc.kernel, kc.threads, kc.smem_bytes),
                                    .ceiling = cudalabs::CeilingKind::baseline},
                                   e))
                  .gflops;
        }
      }

      if (s.selected("fp16_per_head_loop") || s.selected("fp16_batched_grid")) {
        const Narrow<__half> in16(p, pipeline);
        const KernelChoice kc = flash_mma_choice<__half>(shape.dim);
        const auto resources = cudalabs::kernel_resources(kc.kernel, kc.threads, kc.smem_bytes);
        if (s.selected("fp16_per_head_loop"))
          s.measure(with_extra({.variant = "fp16_per_head_loop",
                                .size = point,
                                .work = {.bytes = attention_bytes(shape, 2), .flops = attention_flops(shape)},
                                .run =
                                    [&](cudaStream_t st) {
                                      for (std::int64_t h = 0; h < heads; ++h)
                                        flash_mma<__half>(in16.q.data() + h * per_head, in16.k.data() + h * per_head,
                                                          in16.v.data() + h * per_head, p.out.data() + h * per_head,
                                                          one_head, st);
                                    },
                                .check = [&] { return in16.expected.check(p.out.download(), fp16_tol); },
                                .poison = poison,
                                .resources = resources,
                                .ceiling = cudalabs::CeilingKind::baseline},
                               extra("loop")));
        if (s.selected("fp16_batched_grid")) {
          const double gflops =
              s.measure(with_extra({.variant = "fp16_batched_grid",
                                    .size = point,
                                    .work = {.bytes = attention_bytes(shape, 2), .flops = attention_flops(shape)},
                                    .run =
                                        [&](cudaStream_t st) {
                                          flash_mma<__half>(in16.q.data(), in16.k.data(), in16.v.data(), p.out.data(),
                                                            shape, st);
                                        },
                                    .check = [&] { return in16.expected.check(p.out.download(), fp16_tol); },
                                    .poison = poison,
                                    .resources = resources,
                                    .ceiling = cudalabs::CeilingKind::baseline},
                                   extra("grid")))
                  .gflops;
          note_rate(s, point, "fp16", gflops, fp16_single_gflops);
        }
      }

      if (s.selected("bf16_batched_grid")) {
        const Narrow<__nv_bfloat16> in_bf16(p, pipeline);
        const KernelChoice kc = flash_mma_choice<__nv_bfloat16>(shape.dim);
        s.measure(
            with_extra({.variant = "bf16_batched_grid",
                        .size = point,
                        .work = {.bytes = attention_bytes(shape, 2), .flops = attention_flops(shape)},
                        .run =
                            [&](cudaStream_t st) {
                              flash_mma<__nv_bfloat16>(in_bf16.q.data(), in_bf16.k.data(), in_bf16.v.data(),
                                                       p.out.data(), shape, st);
                            },
                        .check = [&] { return in_bf16.expected.check(p.out.download(), tensor_core_tolerance(true)); },
                        .poison = poison,
                        .resources = cudalabs::kernel_resources(kc.kernel, kc.threads, kc.smem_bytes),
                        .ceiling = cudalabs::CeilingKind::baseline},
                       extra("grid")));
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
  });
}

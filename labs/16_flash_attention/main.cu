// Lab 16 — FlashAttention: the whole attention forward pass in one kernel.
//
// Lab 15 computed O = softmax(Q·Kᵀ/sqrt(d))·V in three kernels, writing the
// N×N scores S and weights P to global memory and reading them back: 16·N²
// bytes per head (4 GiB at N = 16384) and 8·N² bytes of scratch. Here one
// kernel streams tiles of K and V through shared memory, keeps its tile of S in
// registers, and does the softmax online — a running row max m and row sum l,
// the output accumulator rescaled by 2^(m_old - m_new) whenever the max grows —
// so S and P never exist outside the chip. Memory: Q, K, V, O only, O(N·d).
//
// Variants (one head, Q, K, V, O [seq × dim]):
//   unfused_lab15  lab 15's three kernels, S and P through global memory  [baseline]
//   cublas_lab15   lab 15's pipeline with cuBLAS SGEMM for the two products (FP32, no TF32)
//   flash_fp32     fused, FP32 on the CUDA cores: 32 queries per block, 64-key tiles; with
//                  few query tiles the keys are split over several blocks (split-KV)
//   flash_fp16     fused, tensor cores (mma.sync m16n8k16): FP16 Q, K, V, FP32 accumulate, FP32 O
//   flash_bf16     flash_fp16 with BF16 inputs (same kernel template)
// --causal masks keys after the query (lab 15 has no mask: the baseline is
// then not run, and FLOPs count only the N(N+1)/2 pairs computed).
//
// Run: make run LAB=16    (seq = 512 ... 16384, dim = 64)
//      make run LAB=16 ARGS="--seq 4096 --dim 128 --causal --variant flash_fp16"
#include <set>
#include <string>

#include <cudalabs/blas.hpp>
#include <cudalabs/lab.hpp>
#include <cudalabs/random.hpp>
#include <cudalabs/reference.hpp>

#include "../15_attention_forward/attention_forward.cuh"
#include "flash_check.cuh"
#include "flash_common.cuh"
#include "flash_fp32.cuh"
#include "flash_mma.cuh"

namespace {

const std::vector<std::string> fp32_variants = {"flash_fp32"};
const std::vector<std::string> mma_variants = {"flash_fp16", "flash_bf16"};

// One tensor-core variant: convert the inputs once (untimed), compute the
// reference from the rounded values, measure.
template <typename T>
void measure_mma(cudalabs::Session& s, const std::string& name, const cudalabs::Point& point,
                 const AttentionShape& shape, const cudalabs::DeviceBuffer<float> (&inputs)[3],
                 cudalabs::DeviceBuffer<float>& out, const GpuPipeline& pipeline, std::set<std::string>& skipped) {
  if (const std::string why = cannot_run(s.device(), true, flash_mma_smem_bytes<T>(shape.dim)); !why.empty()) {
    skipped.insert(name + " at dim " + std::to_string(shape.dim) + " skipped: " + why + ".");
    return;
  }
  const auto n = static_cast<std::size_t>(shape.elements());
  cudalabs::DeviceBuffer<T> q(n, "q (16-bit)"), k(n, "k (16-bit)"), v(n, "v (16-bit)");
  convert_from_float(inputs[0].data(), q.data(), shape.elements(), s.stream());
  convert_from_float(inputs[1].data(), k.data(), shape.elements(), s.stream());
  convert_from_float(inputs[2].data(), v.data(), shape.elements(), s.stream());
  CUDALABS_CHECK(cudaStreamSynchronize(s.stream()));
  const Expected expected = attention_reference(shape, widen(q), widen(k), widen(v), pipeline);
  const bool bf16 = std::is_same_v<T, __nv_bfloat16>;
  const KernelChoice kc = flash_mma_choice<T>(shape.dim);
  s.measure(
      with_extra({.variant = name,
                  .size = point,
                  .work = {.bytes = attention_bytes(shape, sizeof(T)), .flops = attention_flops(shape)},
                  .run = [&](cudaStream_t st) { flash_mma<T>(q.data(), k.data(), v.data(), out.data(), shape, st); },
                  .check = [&] { return expected.check(out.download(), tensor_core_tolerance(bf16)); },
                  .poison = [&](cudaStream_t st) { out.poison(st); },
                  .resources = cudalabs::kernel_resources(kc.kernel, kc.threads, kc.smem_bytes),
                  .ceiling = cudalabs::CeilingKind::baseline},
                 flash_extra(shape)));
}

}  // namespace

int main(int argc, char** argv) {
  const cudalabs::LabSpec spec{
      .name = "16_flash_attention",
      .title = "FlashAttention: attention in one kernel, the N×N matrices never written",
      .about =
          "O = softmax(Q·Kᵀ/sqrt(d))·V for one head, Q, K, V, O [seq × dim] row-major, fused into one kernel\n"
          "that streams K and V tiles through shared memory with an online softmax, against lab 15's unfused\n"
          "pipeline (S and P through global memory), measured first as the baseline. GFLOP/s counts\n"
          "4·seq²·dim (Q·Kᵀ and P·V; /1000 = TFLOPS). Head dimensions: flash_fp32 any multiple of 4 up to\n"
          "128; flash_fp16 and flash_bf16 64 or 128 (they need compute capability 8.0 and are skipped\n"
          "below it). Lab 15 needs 8·seq² bytes of scratch (8 GiB at the maximum seq, 32768).",
      .sizes =
          {{.name = "seq",
            .help = "sequence length N (queries = keys)",
            .full = {512, 1024, 2048, 4096, 8192, 16384},
            .quick = {1, 17, 100, 257},
            .max = 32768},
           {.name = "dim", .help = "head dimension d", .full = {64}, .quick = {64, 128, 64, 128}, .max = fp32_max_dim}},
      .size_alias = {"seq"},
      .variants = {{"unfused_lab15", "lab 15: scores, softmax, output kernels; S and P in global memory", true},
                   {"cublas_lab15", "lab 15 with cuBLAS SGEMM (FP32, no TF32) for Q·Kᵀ and P·V"},
                   {"flash_fp32", "fused, FP32 CUDA cores, 32 queries/block, 64-key tiles, online softmax, split-KV"},
                   {"flash_fp16", "fused, tensor cores: mma.sync m16n8k16, FP16 in, FP32 accumulate (sm_80+)"},
                   {"flash_bf16", "flash_fp16 with BF16 inputs (sm_80+)"}},
      .flags = {{.name = "causal",
                 .help = "mask keys after the query (decoder attention); no baseline then: lab 15 has no mask",
                 .kind = cudalabs::ExtraFlag::Kind::toggle}},
  };
  const auto dims_ok = [](const cudalabs::Options& o) { check_dims(o, fp32_variants, mma_variants); };
  if (const int rc = precheck_usage(spec, argc, argv, dims_ok); rc != 0) return rc;

  return cudalabs::run_lab(argc, argv, spec, [&](cudalabs::Session& s) {
    dims_ok(s.options());
    const bool causal = s.options().toggle("causal");
    std::set<std::string> skipped;  // variants this GPU cannot run, one note each
    const cudalabs::Cublas blas;
    std::int64_t largest_seq = 0;

    for (const auto& point : s.points()) {
      const AttentionShape shape{
          .seq = static_cast<int>(point.at("seq")), .dim = static_cast<int>(point.at("dim")), .causal = causal};
      largest_seq = std::max<std::int64_t>(largest_seq, shape.seq);
      const auto n = static_cast<std::size_t>(shape.elements());
      const auto q = cudalabs::random_floats(n, s.seed(1), -qk_range, qk_range);
      const auto k = cudalabs::random_floats(n, s.seed(2), -qk_range, qk_range);
      const auto v = cudalabs::random_floats(n, s.seed(3), -v_range, v_range);
      const cudalabs::DeviceBuffer<float> inputs[3] = {cudalabs::DeviceBuffer<float>(q, "q"),
                                                       cudalabs::DeviceBuffer<float>(k, "k"),
                                                       cudalabs::DeviceBuffer<float>(v, "v")};
      cudalabs::DeviceBuffer<float> out(n, "out");
      const bool need_scratch = !causal || !cpu_reference_affordable(shape);
      const std::size_t nxn = need_scratch ? static_cast<std::size_t>(shape.seq) * shape.seq : 0;
      cudalabs::DeviceBuffer<float> scores(nxn, "lab 15 scores (N×N)"), weights(nxn, "lab 15 weights (N×N)");
      const GpuPipeline pipeline{blas, scores.data(), weights.data(), s.stream()};

      const Expected expected = attention_reference(shape, q, k, v, pipeline);
      const cudalabs::Work fp32_work{.bytes = attention_bytes(shape, 4), .flops = attention_flops(shape)};
      auto check = [&] { return expected.check(out.download(), fp32_tolerance); };
      auto poison = [&](cudaStream_t st) { out.poison(st); };
      const std::map<std::string, double> lab15_extra = {{"scratch_bytes", nxn_scratch_bytes(shape.seq)}};

      if (!causal) {
        s.measure(with_extra({.variant = "unfused_lab15",
                              .size = point,
                              .work = fp32_work,
                              .run =
                                  [&](cudaStream_t st) {
                                    attention_forward_unfused(inputs[0].data(), inputs[1].data(), inputs[2].data(),
                                                              scores.data(), weights.data(), out.data(), shape.seq,
                                                              shape.dim, st);
                                  },
                              .check = check,
                              .poison = poison,
                              .ceiling = cudalabs::CeilingKind::baseline},
                             lab15_extra));
        if (s.selected("cublas_lab15"))
          s.measure(with_extra({.variant = "cublas_lab15",
                                .size = point,
                                .work = fp32_work,
                                .run =
                                    [&](cudaStream_t st) {
                                      attention_forward_cublas(blas, inputs[0].data(), inputs[1].data(),
                                                               inputs[2].data(), scores.data(), weights.data(),
                                                               out.data(), shape.seq, shape.dim, st);
                                    },
                                .check = check,
                                .poison = poison,
                                .ceiling = cudalabs::CeilingKind::baseline},
                               lab15_extra));
      }

      const std::string fp32_blocker = cannot_run(s.device(), false, flash_fp32_smem_bytes(shape.dim));
      if (s.selected("flash_fp32") && !fp32_blocker.empty())
        skipped.insert("flash_fp32 at dim " + std::to_string(shape.dim) + " skipped: " + fp32_blocker + ".");
      if (s.selected("flash_fp32") && fp32_blocker.empty()) {
        const KernelChoice kc = flash_fp32_choice(shape.dim);
        Fp32Plan plan = flash_fp32_plan(shape, s.stream());
        auto extra = flash_extra(shape);
        extra["kv_splits"] = plan.splits;
        extra["scratch_bytes"] = plan.workspace_bytes();
        s.measure(with_extra({.variant = "flash_fp32",
                              .size = point,
                              .work = fp32_work,
                              .run =
                                  [&](cudaStream_t st) {
                                    flash_fp32(inputs[0].data(), inputs[1].data(), inputs[2].data(), out.data(), shape,
                                               plan, st);
                                  },
                              .check = check,
                              .poison = poison,
                              .resources = cudalabs::kernel_resources(kc.kernel, kc.threads, kc.smem_bytes),
                              .ceiling = cudalabs::CeilingKind::baseline},
                             extra));
      }

      if (s.selected("flash_fp16")) measure_mma<__half>(s, "flash_fp16", point, shape, inputs, out, pipeline, skipped);
      if (s.selected("flash_bf16"))
        measure_mma<__nv_bfloat16>(s, "flash_bf16", point, shape, inputs, out, pipeline, skipped);
    }

    if (causal)
      s.note(
          "--causal: lab 15's pipeline has no mask, so there is no baseline; FLOPs count the N(N+1)/2 pairs j <= i.");
    for (const auto& line : skipped) s.note(line);
    s.note("GFLOP/s counts 4·N²·d (Q·Kᵀ and P·V; the softmax is not counted): /1000 = TFLOPS. vs = speed-up over");
    s.note("  unfused_lab15 at the same size. The fused kernels skip the 16·N² bytes of S and P traffic");
    const auto avoided_mib = static_cast<long long>(nxn_bytes_avoided({.seq = static_cast<int>(largest_seq)})) >> 20;
    s.note("  (nxn_bytes_avoided in the JSON: " + std::to_string(avoided_mib) +
           " MiB at N = " + std::to_string(largest_seq) + ") and need no N×N scratch (lab 15: 8·N² bytes).");
    s.note("Tensor-core rows: check against the rounded inputs, |err| <= 2u·max|V| (u = 2^-11 FP16, 2^-8 BF16).");
  });
}

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
//   flash2_fp16    FlashAttention-2's techniques (flash_fa2.cuh): 128 queries per block, 32 per
//                  warp, swizzled shared memory, split-KV with a combine kernel for one head
//   flash2_bf16    flash2_fp16 with BF16 inputs
// --causal masks keys after the query (lab 15 has no mask: the baseline is
// then not run, and FLOPs count only the N(N+1)/2 pairs computed).
// --kv-splits N: flash2_*'s split count (0: its own choice), for measuring the choice.
// --inputs large: Q and K 8 times larger, scores at which exp overflows unless
// the running max is subtracted; --inputs positive_v: V in [0, 1), at which an
// FP16 accumulator of P·V errs beyond the tolerance (flash_check.cuh).
//
// Kernels in flash_fp32.cuh, flash_mma.cuh, flash_fa2.cuh, mma_fragments.cuh and
// flash_common.cuh, called through
// kernels.hpp; the baselines and references are the course's copies of lab 15
// and of flash_check.cuh, compiled here.
//
// Run: make run LAB=16    (seq = 512 ... 16384, dim = 64)
//      make run LAB=16 ARGS="--seq 4096 --dim 128 --causal --variant flash_fp16,flash2_fp16"
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include <cudalabs/blas.hpp>
#include <cudalabs/checker.hpp>
#include <cudalabs/cli.hpp>
#include <cudalabs/error.hpp>
#include <cudalabs/lab.hpp>
#include <cudalabs/math.hpp>
#include <cudalabs/memory.hpp>
#include <cudalabs/random.hpp>
#include <cudalabs/reference.hpp>

#include "input_kinds.hpp"
#include "../13_attention_scores/attention_sizes.hpp"
#include "attention_shape.hpp"
#include "kernels.hpp"

// The course's lab 15 (the baseline; the kernels of labs 12-14 have internal
// linkage, so nothing of the same name in the kernel library reaches them) and
// the checks labs 16, 17 and 31 share (labs/shared/).
#include "../15_attention_forward/attention_forward.cuh"
#include "flash_check.cuh"

namespace {

const std::vector<std::string> fp32_variants = {"flash_fp32"};
const std::vector<std::string> mma_variants = {"flash_fp16", "flash_bf16", "flash2_fp16", "flash2_bf16"};

// The FP32 inputs of every variant, on the device, and one seed's draw of them.
struct Inputs {
  cudalabs::DeviceBuffer<float> q, k, v;
  InputKind kind;

  Inputs(std::size_t n, InputKind input_kind) : q(n, "q"), k(n, "k"), v(n, "v"), kind(input_kind) {}
  HostInputs upload(std::uint64_t seed) {
    HostInputs in = draw_inputs(q.size(), seed, kind);
    q.upload(in.q);
    k.upload(in.k);
    v.upload(in.v);
    return in;
  }
};

// What differs between the tensor-core variants: the launcher (its plan bound
// in), the kernel's resources, the record's extras.
template <typename T>
struct MmaKernel {
  std::function<void(const T*, const T*, const T*, float*, cudaStream_t)> launch;
  cudalabs::KernelResources resources;
  std::map<std::string, double> extra;
};

// One tensor-core variant: its inputs converted once per draw (untimed) by the
// course's kernel, its reference computed from the rounded values, measured.
template <typename T>
void measure_mma(cudalabs::Session& s, const std::string& name, const cudalabs::Point& point,
                 const AttentionShape& shape, Inputs& inputs, cudalabs::DeviceBuffer<float>& out,
                 const GpuPipeline& pipeline, bool large, std::set<std::string>& skipped,
                 const std::function<MmaKernel<T>()>& make_kernel, std::size_t smem) {
  constexpr bool bf16 = std::is_same_v<T, __nv_bfloat16>;
  if (const std::string why = cannot_run(s.device(), true, smem); !why.empty()) {
    skipped.insert(name + " at dim " + std::to_string(shape.dim) + " skipped: " + why + ".");
    return;
  }
  const MmaKernel<T> kernel = make_kernel();
  Narrow<T> in16(static_cast<std::size_t>(shape.elements()));
  auto refresh = [&] { in16.refresh(shape, inputs.q.data(), inputs.k.data(), inputs.v.data(), pipeline); };
  refresh();
  const cudalabs::Tolerance tol = for_inputs(tensor_core_tolerance(bf16), large);
  s.measure(with_extra({.variant = name,
                        .size = point,
                        .work = {.bytes = attention_bytes(shape, sizeof(T)), .flops = attention_flops(shape)},
                        .run =
                            [&](cudaStream_t st) {
                              kernel.launch(in16.q.data(), in16.k.data(), in16.v.data(), out.data(), st);
                            },
                        .check = [&] { return in16.expected.check(out.download(), tol); },
                        .poison = [&](cudaStream_t st) { out.poison(st); },
                        .new_inputs =
                            [&](std::uint64_t seed) {
                              inputs.upload(seed);
                              refresh();
                            },
                        .peak = bf16 ? cudalabs::Peak::bf16_tensor : cudalabs::Peak::fp16_tensor,
                        .resources = kernel.resources,
                        .ceiling = cudalabs::CeilingKind::baseline},
                       kernel.extra));
}

// flash_fp16 / flash_bf16: flash_mma.cuh, no plan.
template <typename T>
MmaKernel<T> mma_kernel(const AttentionShape& shape) {
  constexpr bool bf16 = std::is_same_v<T, __nv_bfloat16>;
  return {[shape](const T* q, const T* k, const T* v, float* out, cudaStream_t st) {
            lab16::flash_mma(q, k, v, out, shape, st);
          },
          bf16 ? lab16::flash_bf16_resources(shape.dim) : lab16::flash_fp16_resources(shape.dim), flash_extra(shape)};
}

// flash2_fp16 / flash2_bf16: flash_fa2.cuh, with its split plan (`splits` 0: its choice).
template <typename T>
MmaKernel<T> fa2_kernel(const AttentionShape& shape, int splits) {
  constexpr bool bf16 = std::is_same_v<T, __nv_bfloat16>;
  const lab16::Fa2Plan plan = lab16::flash_fa2_plan(shape, splits);
  auto extra = flash_extra(shape);
  extra["kv_splits"] = lab16::flash_fa2_splits(plan);
  extra["scratch_bytes"] = lab16::flash_fa2_workspace_bytes(plan);
  return {[shape, plan](const T* q, const T* k, const T* v, float* out, cudaStream_t st) {
            lab16::flash_fa2(q, k, v, out, shape, plan, st);
          },
          bf16 ? lab16::flash_fa2_bf16_resources(shape.dim) : lab16::flash_fa2_fp16_resources(shape.dim), extra};
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
                   {"flash_bf16", "flash_fp16 with BF16 inputs (sm_80+)"},
                   {"flash2_fp16", "FlashAttention-2's techniques: 128 queries/block, swizzled smem, split-KV (sm_80+)"},
                   {"flash2_bf16", "flash2_fp16 with BF16 inputs (sm_80+)"}},
      .flags = {{.name = "causal",
                 .help = "mask keys after the query (decoder attention); no baseline then: lab 15 has no mask",
                 .kind = cudalabs::ExtraFlag::Kind::toggle},
                {.name = "kv-splits",
                 .help = "flash2_*: blocks sharing the keys of a query tile; 0 = the kernel file's choice",
                 .default_value = "0",
                 .min = 0,
                 .max = 16},
                attention_inputs_flag()},
  };
  const auto usage = [](const cudalabs::Options& o) {
    check_dims(o, fp32_variants, mma_variants);
    return attention_input_kind(o);
  };
  if (const int rc = precheck_usage(spec, argc, argv, usage); rc != 0) return rc;

  return cudalabs::run_lab(argc, argv, spec, [&](cudalabs::Session& s) {
    const InputKind kind = usage(s.options());
    const bool large = kind == InputKind::large;
    const bool causal = s.options().toggle("causal");
    const int kv_splits = static_cast<int>(s.options().integer("kv-splits"));
    std::set<std::string> skipped;  // variants this GPU cannot run, one note each
    const cudalabs::Cublas blas;
    std::int64_t largest_seq = 0;

    for (const auto& point : s.points()) {
      const AttentionShape shape = shape_at(point, causal);
      largest_seq = std::max<std::int64_t>(largest_seq, shape.seq);
      const auto n = static_cast<std::size_t>(shape.elements());
      Inputs inputs(n, kind);
      cudalabs::DeviceBuffer<float> out(n, "out");
      const bool need_scratch = !causal || !cpu_reference_affordable(shape);
      const std::size_t nxn = need_scratch ? static_cast<std::size_t>(shape.seq) * shape.seq : 0;
      cudalabs::DeviceBuffer<float> scores(nxn, "lab 15 scores (N×N)"), weights(nxn, "lab 15 weights (N×N)");
      const GpuPipeline pipeline{blas, scores.data(), weights.data(), s.stream()};

      // The FP32 variants' inputs from a seed, and their reference: once now,
      // and again with a fresh seed before each variant's last check.
      Expected expected;
      auto new_inputs = [&](std::uint64_t seed) {
        const HostInputs in = inputs.upload(seed);
        expected = attention_reference(shape, in.q, in.k, in.v, pipeline);
      };
      new_inputs(s.seed());
      const cudalabs::Tolerance tol = for_inputs(fp32_tolerance, large);
      const cudalabs::Work fp32_work{.bytes = attention_bytes(shape, 4), .flops = attention_flops(shape)};
      auto check = [&] { return expected.check(out.download(), tol); };
      auto poison = [&](cudaStream_t st) { out.poison(st); };
      const std::map<std::string, double> lab15_extra = {{"scratch_bytes", nxn_scratch_bytes(shape.seq)}};

      if (!causal) {
        s.measure(with_extra({.variant = "unfused_lab15",
                              .size = point,
                              .work = fp32_work,
                              .run =
                                  [&](cudaStream_t st) {
                                    attention_forward_unfused(inputs.q.data(), inputs.k.data(), inputs.v.data(),
                                                                      scores.data(), weights.data(), out.data(),
                                                                      shape.seq, shape.dim, st);
                                  },
                              .check = check,
                              .poison = poison,
                              .new_inputs = new_inputs,
                              .ceiling = cudalabs::CeilingKind::baseline},
                             lab15_extra));
        if (s.selected("cublas_lab15")) {
          prepare_attention_forward_cublas(blas, inputs.q.data(), inputs.k.data(), inputs.v.data(),
                                                   scores.data(), weights.data(), out.data(), shape.seq, shape.dim,
                                                   s.stream());
          s.measure(with_extra({.variant = "cublas_lab15",
                                .size = point,
                                .work = fp32_work,
                                .run =
                                    [&](cudaStream_t st) {
                                      attention_forward_cublas(blas, inputs.q.data(), inputs.k.data(),
                                                                       inputs.v.data(), scores.data(), weights.data(),
                                                                       out.data(), shape.seq, shape.dim, st);
                                    },
                                .check = check,
                                .poison = poison,
                                .new_inputs = new_inputs,
                                .ceiling = cudalabs::CeilingKind::baseline},
                               lab15_extra));
        }
      }

      const std::string fp32_blocker = cannot_run(s.device(), false, lab16::flash_fp32_smem_bytes(shape.dim));
      if (s.selected("flash_fp32") && !fp32_blocker.empty())
        skipped.insert("flash_fp32 at dim " + std::to_string(shape.dim) + " skipped: " + fp32_blocker + ".");
      if (s.selected("flash_fp32") && fp32_blocker.empty()) {
        const lab16::Fp32Plan plan = lab16::flash_fp32_plan(shape, s.stream());
        auto extra = flash_extra(shape);
        extra["kv_splits"] = lab16::flash_fp32_splits(plan);
        extra["scratch_bytes"] = lab16::flash_fp32_workspace_bytes(plan);
        s.measure(with_extra({.variant = "flash_fp32",
                              .size = point,
                              .work = fp32_work,
                              .run =
                                  [&](cudaStream_t st) {
                                    lab16::flash_fp32(inputs.q.data(), inputs.k.data(), inputs.v.data(), out.data(),
                                                      shape, plan, st);
                                  },
                              .check = check,
                              .poison = poison,
                              .new_inputs = new_inputs,
                              .resources = lab16::flash_fp32_resources(shape.dim),
                              .ceiling = cudalabs::CeilingKind::baseline},
                             extra));
      }

      // The kernels are made (plans allocated) only when they can run here.
      const std::size_t mma_smem = lab16::flash_fp16_smem_bytes(shape.dim);
      const std::size_t fa2_smem = lab16::flash_fa2_smem_bytes(shape.dim);
      if (s.selected("flash_fp16"))
        measure_mma<__half>(s, "flash_fp16", point, shape, inputs, out, pipeline, large, skipped,
                            [&] { return mma_kernel<__half>(shape); }, mma_smem);
      if (s.selected("flash_bf16"))
        measure_mma<__nv_bfloat16>(s, "flash_bf16", point, shape, inputs, out, pipeline, large, skipped,
                                   [&] { return mma_kernel<__nv_bfloat16>(shape); }, mma_smem);
      if (s.selected("flash2_fp16"))
        measure_mma<__half>(s, "flash2_fp16", point, shape, inputs, out, pipeline, large, skipped,
                            [&] { return fa2_kernel<__half>(shape, kv_splits); }, fa2_smem);
      if (s.selected("flash2_bf16"))
        measure_mma<__nv_bfloat16>(s, "flash2_bf16", point, shape, inputs, out, pipeline, large, skipped,
                                   [&] { return fa2_kernel<__nv_bfloat16>(shape, kv_splits); }, fa2_smem);
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
    note_attention_inputs(s, kind);
  });
}

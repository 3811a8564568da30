// Lab 31 — FlashAttention on Hopper: TMA, wgmma, warp specialisation, ping-pong.
//
// Lab 16's tensor-core kernel is FlashAttention-2 on mma.sync: every warp loads,
// multiplies and exponentiates in turn. The H100's tensor cores are fed better
// by its own machinery: TMA copies whole tiles into shared memory (one thread
// asks, an mbarrier counts the bytes in), wgmma multiplies a 64-row tile by a
// warpgroup of 128 threads straight from shared memory, and warpgroups can
// specialise — one loads, two compute. The ladder, one idea per step:
//
//   fa2_fp16 / fa2_bf16                      lab 16's flash2_* kernel (flash_fa2.cuh): FlashAttention-2
//                                            on mma.sync + ldmatrix + cp.async, the baseline
//   wgmma_sync_fp16 / _bf16                  TMA loads + wgmma for S = Q·Kᵀ and O += P·V, P in registers
//   warp_specialized_fp16 / _bf16            a producer warpgroup (TMA, a ring of mbarrier-guarded
//                                            slots) and two consumer warpgroups (setmaxnreg)
//   pingpong_fp16 / _bf16                    FlashAttention-3: the consumers take turns at the tensor
//                                            cores (one's softmax under the other's products), and
//                                            S_j is issued with P_{j-1}·V_{j-1}
// PyTorch's cuDNN and FlashAttention-2 kernels on the same shapes come from
// tools/torch_attention.py (lab "torch_attention", shape_of_lab 31).
//
// Q, K, V [batch][heads][seq][dim] FP16 or BF16 (the course rounds its FP32
// draw), O FP32. dim 64 or 128; any seq (tail tiles masked); --causal.
// --inputs large, positive_v: as lab 16's (flash_check.cuh).
// GFLOP/s counts 4·N²·d per head (2·N²·d for Q·Kᵀ and for P·V; N(N+1)/2
// pairs instead of N² under the causal mask), as labs 16 and 17 do.
//
// Kernels in wgmma_sync.cuh, warp_specialized.cuh, pingpong.cuh (hopper_common.cuh,
// cudalabs/hopper.cuh), called through kernels.hpp and built for sm_90a only; the
// baseline and the references are the course's copies of labs 15 and 16.
//
// Run: make run LAB=31    (batch 4, heads 16, seq 1024 ... 8192, dim 64 and 128)
//      make run LAB=31 ARGS="--seq 4096 --dim 128 --causal --variant pingpong_fp16"
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
#include <cudalabs/device.hpp>
#include <cudalabs/error.hpp>
#include <cudalabs/lab.hpp>
#include <cudalabs/math.hpp>
#include <cudalabs/memory.hpp>
#include <cudalabs/mma.cuh>  // lab 16's flash_fa2.cuh uses it
#include <cudalabs/random.hpp>
#include <cudalabs/reference.hpp>

#include "input_kinds.hpp"
#include "../13_attention_scores/attention_sizes.hpp"
#include "../16_flash_attention/attention_shape.hpp"
#include "kernels.hpp"

// The course's labs 15 and 16 (references, the FA2 baseline), whose kernel
// files have internal linkage, as in lab 17 (its main.cu says why), and the
// checks labs 16, 17 and 31 share (labs/shared/).
#include "../15_attention_forward/attention_forward.cuh"
#include "flash_check.cuh"
#include "../16_flash_attention/flash_fa2.cuh"

namespace {

const std::vector<std::string> hopper_steps = {"wgmma_sync", "warp_specialized", "pingpong"};

std::vector<std::string> all_variants() {
  std::vector<std::string> names;
  for (const char* type : {"fp16", "bf16"}) {
    names.push_back(std::string("fa2_") + type);
    for (const auto& step : hopper_steps) names.push_back(step + "_" + type);
  }
  return names;
}

// The launcher of one Hopper step for T.
template <typename T>
void launch_step(const std::string& step, const T* q, const T* k, const T* v, float* out, const AttentionShape& shape,
                 cudaStream_t stream) {
  if (step == "wgmma_sync")
    lab31::wgmma_sync(q, k, v, out, shape, stream);
  else if (step == "warp_specialized")
    lab31::warp_specialized(q, k, v, out, shape, stream);
  else
    lab31::pingpong(q, k, v, out, shape, stream);
}

// Bad usage on any machine (main() checks it before run_lab too); the input kind.
InputKind check_usage(const cudalabs::Options& o) {
  for (const auto& p : o.points) {
    if (!flash_mma_supports(static_cast<int>(p.at("dim"))))
      throw cudalabs::UsageError("--dim " + std::to_string(p.at("dim")) +
                                 ": every variant of this lab is compiled for head dimensions 64 and 128 only "
                                 "(wgmma tiles of 64 columns, lab 16's FA2 kernel likewise). Use --dim 64 or --dim 128.");
  }
  check_attention_elements(o, "");
  return attention_input_kind(o);
}

// One precision's rows at one size: the inputs rounded to T once per draw
// (untimed, the course's kernel), their reference, then every selected variant.
template <typename T>
void measure_type(cudalabs::Session& s, const cudalabs::Point& point, const AttentionShape& shape,
                  const GpuPipeline& pipeline, InputKind kind, const std::string& hopper_why,
                  std::set<std::string>& notes) {
  constexpr bool bf16 = std::is_same_v<T, __nv_bfloat16>;
  const std::string type = bf16 ? "bf16" : "fp16";
  const auto n = static_cast<std::size_t>(shape.elements());
  cudalabs::DeviceBuffer<float> q(n, "q"), k(n, "k"), v(n, "v"), out(n, "out");
  Narrow<T> in16(n);
  auto draw = [&](std::uint64_t seed) {  // buffers 1..3 of the seed, as labs 16 and 17
    const HostInputs in = draw_inputs(n, seed, kind);
    q.upload(in.q), k.upload(in.k), v.upload(in.v);
    in16.refresh(shape, q.data(), k.data(), v.data(), pipeline);
  };
  draw(s.seed());
  const cudalabs::Tolerance tol = for_inputs(tensor_core_tolerance(bf16), kind == InputKind::large);
  const cudalabs::Peak peak = bf16 ? cudalabs::Peak::bf16_tensor : cudalabs::Peak::fp16_tensor;
  const cudalabs::Work work{.bytes = attention_bytes(shape, sizeof(T)), .flops = attention_flops(shape)};

  auto measure = [&](const std::string& name, std::function<void(cudaStream_t)> run, cudalabs::KernelResources res,
                     std::map<std::string, double> extra) {
    s.measure(with_extra({.variant = name,
                          .size = point,
                          .work = work,
                          .run = std::move(run),
                          .check = [&] { return in16.expected.check(out.download(), tol); },
                          .poison = [&](cudaStream_t st) { out.poison(st); },
                          .new_inputs = draw,
                          .peak = peak,
                          .resources = res,
                          .ceiling = cudalabs::CeilingKind::baseline},
                         std::move(extra)));
  };

  const std::string fa2 = "fa2_" + type;
  if (s.selected(fa2)) {
    if (const std::string why = cannot_run(s.device(), true, flash_fa2_smem_bytes<T>(shape.dim)); !why.empty()) {
      notes.insert(fa2 + " skipped: " + why + ".");
    } else {
      // Lab 16's own split plan: one head or a few split the keys over more
      // blocks (a workspace allocated here, outside the timed runs).
      Fa2Plan plan = flash_fa2_plan(shape, 0);
      auto extra = flash_extra(shape);
      extra["kv_splits"] = plan.splits;
      extra["scratch_bytes"] = plan.workspace_bytes();
      const KernelChoice kc = flash_fa2_choice<T>(shape.dim);
      measure(
          fa2,
          [&](cudaStream_t st) { flash_fa2<T>(in16.q.data(), in16.k.data(), in16.v.data(), out.data(), shape, plan, st); },
          cudalabs::kernel_resources(kc.kernel, kc.threads, kc.smem_bytes), std::move(extra));
    }
  }
  for (const auto& step : hopper_steps) {
    const std::string name = step + "_" + type;
    if (!s.selected(name)) continue;
    if (!hopper_why.empty()) {
      notes.insert(step + "_* skipped: " + hopper_why + ".");
      continue;
    }
    measure(name,
            [&, step](cudaStream_t st) { launch_step<T>(step, in16.q.data(), in16.k.data(), in16.v.data(), out.data(), shape, st); },
            lab31::resources(step, shape.dim, bf16), flash_extra(shape));
  }
}

}  // namespace

int main(int argc, char** argv) {
  const auto variants = all_variants();
  std::vector<cudalabs::VariantInfo> infos;
  for (const auto& name : variants) {
    const bool bf16 = name.ends_with("bf16");
    const std::string step = name.substr(0, name.size() - 5);
    const std::string what =
        step == "fa2" ? "lab 16's flash2: FlashAttention-2 on mma.sync, ldmatrix, cp.async (sm_80+)"
        : step == "wgmma_sync" ? "TMA loads, wgmma for Q·Kᵀ and P·V (P in registers), one warpgroup (sm_90a)"
        : step == "warp_specialized" ? "producer warpgroup (TMA, mbarrier ring) + two consumer warpgroups (sm_90a)"
                                     : "FA3: consumers take turns at the tensor cores, softmax overlapped (sm_90a)";
    infos.push_back({name, what + (bf16 ? ", BF16" : ", FP16"), name == "fa2_fp16"});
  }
  const cudalabs::LabSpec spec{
      .name = "31_flash_attention_hopper",
      .title = "FlashAttention on Hopper: TMA, wgmma, warp-specialised producer/consumers, ping-pong softmax",
      .about =
          "O = softmax(Q·Kᵀ/sqrt(d))·V for every (batch, head), Q, K, V [batch][heads][seq][dim] FP16 or BF16,\n"
          "O FP32. Lab 16's FlashAttention-2 kernel (mma.sync) is the baseline, measured first; the Hopper\n"
          "variants need compute capability 9.0 and a build with 9.0 in gpu_arch (sm_90a code) and are\n"
          "skipped elsewhere. GFLOP/s counts 4·seq²·dim per head (causal: seq(seq+1)/2 pairs); /1000 =\n"
          "TFLOPS. Head dimensions 64 and 128; any seq. PyTorch's kernels on these shapes:\n"
          "tools/torch_attention.py --labs 31.",
      .sizes = {{.name = "batch", .help = "sequences in the batch", .full = {4}, .quick = {1, 2, 1, 2}, .max = 1024},
                {.name = "heads", .help = "attention heads", .full = {16}, .quick = {1, 3, 2, 1}, .max = 1024},
                {.name = "seq",
                 .help = "sequence length N",
                 .full = {1024, 1024, 4096, 4096, 8192, 8192},
                 .quick = {1, 133, 257, 1000},
                 .max = 32768},
                {.name = "dim",
                 .help = "head dimension d (64 or 128)",
                 .full = {64, 128, 64, 128, 64, 128},
                 .quick = {64, 128, 64, 128},
                 .max = 128}},
      .variants = infos,
      .flags = {{.name = "causal",
                 .help = "mask keys after the query (decoder attention); FLOPs count the N(N+1)/2 pairs",
                 .kind = cudalabs::ExtraFlag::Kind::toggle},
                attention_inputs_flag()},
  };
  if (const int rc = precheck_usage(spec, argc, argv, [](const cudalabs::Options& o) { check_usage(o); }); rc != 0)
    return rc;

  return cudalabs::run_lab(argc, argv, spec, [&](cudalabs::Session& s) {
    const InputKind kind = check_usage(s.options());
    const bool causal = s.options().toggle("causal");
    const std::string hopper_why = lab31::hopper_blocker(s.device());
    std::set<std::string> notes;
    const cudalabs::Cublas blas;

    for (const auto& point : s.points()) {
      const AttentionShape shape = shape_at(point, causal);
      // Lab 15's cuBLAS pipeline is the reference where the CPU's would take seconds
      // (flash_check.cuh): it needs the N×N scratch, one head at a time.
      const std::size_t nxn = cpu_reference_affordable(shape) ? 0 : static_cast<std::size_t>(shape.seq) * shape.seq;
      cudalabs::DeviceBuffer<float> scores(nxn, "reference scores (N×N)"), weights(nxn, "reference weights (N×N)");
      const GpuPipeline pipeline{blas, scores.data(), weights.data(), s.stream()};
      measure_type<__half>(s, point, shape, pipeline, kind, hopper_why, notes);
      measure_type<__nv_bfloat16>(s, point, shape, pipeline, kind, hopper_why, notes);
    }

    for (const auto& line : notes) s.note(line);
    if (causal) s.note("--causal: FLOPs count the N(N+1)/2 pairs j <= i.");
    s.note("GFLOP/s counts 4·N²·d per head (Q·Kᵀ and P·V; the softmax is not counted): /1000 = TFLOPS. vs =");
    s.note("  speed-up over fa2_fp16 (lab 16's flash2_fp16 kernel, FlashAttention-2 on mma.sync) at the same size.");
    s.note("Check against the rounded inputs in double, |err| <= 2u·max|V| (u = 2^-11 FP16, 2^-8 BF16).");
    note_attention_inputs(s, kind);
  });
}

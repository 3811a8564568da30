// Lab 15 — the attention forward pass, unfused: labs 13 → 12 → 14 on the device.
//
// O = softmax(Q·Kᵀ / sqrt(d)) · V for one head, Q, K, V [seq×d]. Three kernels
// run back to back on one stream with no host round trip; the seq×seq scores S
// and weights P each go to DRAM and back. The lab times the whole pass, each
// kernel alone, and the same pass with cuBLAS for the two products (the
// baseline, in the same run), and reports the N×N traffic that lab 16 removes.
//
// Variants (attention_forward.cuh, called through kernels.hpp; kernels from labs 12-14):
//   cublas_pipeline  cuBLAS S = Q·Kᵀ, the course's softmax, cuBLAS O = P·V  [baseline]
//   unfused          our best of each lab: register-tiled scores, softmax
//                    with the row in registers, split-K output
//   scores           the unfused pass's first kernel alone
//   softmax          its second kernel alone
//   output           its third kernel alone
// --inputs large: Q and K 16 times larger, scores at which exp overflows unless
// the row max is subtracted (input_range).
//
// Run: make run LAB=15    (defaults: seq = 512, 1024, 2048, 4096; d = 64)
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>

#include <cudalabs/blas.hpp>
#include <cudalabs/error.hpp>
#include <cudalabs/lab.hpp>
#include <cudalabs/math.hpp>
#include <cudalabs/random.hpp>
#include <cudalabs/reference.hpp>

#include "input_kinds.hpp"
#include "../13_attention_scores/attention_sizes.hpp"
// The baseline, with the course's lab 12 softmax in it. This program's kernel
// library compiles lab 12's softmax.cuh too (the student's attention_forward.cuh
// chains it): softmax.cuh gives its kernels and functions internal linkage, so
// each translation unit keeps its own copy (a __global__ function is otherwise
// a strong symbol that would not link twice, and an inline function of one
// would silently replace the other's).
#include "attention_baseline.cuh"
#include "attention_check.hpp"
#include "kernels.hpp"

namespace {

// How far Q and K reach, by --inputs: random [-1, 1); large the same values
// times 16 (a power of two: every product, partial sum and rounding error in a
// score is exactly 256 times the random inputs'). Scores then spread with a
// standard deviation of 16²/3 ≈ 85: a row's max is ~200 and more, and exp(200)
// overflows float (e^88.7 is its largest), so a pass that exponentiates without
// subtracting the row max gets inf/inf = NaN. V stays in [-1, 1).
float input_range(InputKind kind) { return kind == InputKind::large ? 16.0f : 1.0f; }

}  // namespace

int main(int argc, char** argv) {
  const cudalabs::LabSpec spec{
      .name = "15_attention_forward",
      .title = "attention forward, unfused: scores → softmax → output on the device, vs cuBLAS",
      .about = "Chains the kernels of labs 13, 12 and 14 on one stream. The pipeline rows count 4·seq²·d flops and\n"
               "%ceil is % of the cuBLAS pipeline; the per-kernel rows show where the time goes (their\n"
               "vs_baseline is the cuBLAS pipeline's total over the kernel's time). extra.nxn_bytes is the\n"
               "DRAM traffic of the seq×seq matrices S and P. --size sets --seq.",
      .sizes = attention_sizes("sequence length N", {512, 1024, 2048, 4096}),
      .size_alias = {"seq"},
      .variants = {{"cublas_pipeline", "cuBLAS S = Q·Kᵀ, the course's softmax, cuBLAS O = P·V", true},
                   {"unfused", "register-tiled scores → softmax in registers → split-K output"},
                   {"scores", "the unfused pass's scores stage alone (the course's: lab 13 register_tiled)"},
                   {"softmax", "its softmax stage alone (the course's: lab 12 row_in_registers)"},
                   {"output", "its output stage alone (the course's: lab 14 split_k)"}},
      .flags = {inputs_flag("random: Q, K, V in [-1, 1); large: Q, K times 16, scores at which exp overflows\n"
                            "                      unless the row max is subtracted")},
  };
  const auto inputs = [](const cudalabs::Options& o) {
    return input_kind(o, {"random", "large"}, "Lab 15 has no mask: masked softmax rows are lab 12's --inputs masked.");
  };
  if (const int rc = precheck_usage(spec, argc, argv, inputs); rc != 0) return rc;

  return cudalabs::run_lab(argc, argv, spec, [&](cudalabs::Session& s) {
    const InputKind kind = inputs(s.options());
    const float range = input_range(kind);
    const cudalabs::Cublas blas;
    for (const auto& point : s.points()) {
      const std::int64_t seq = point.at("seq"), dim = point.at("dim");
      const int n = static_cast<int>(seq), d = static_cast<int>(dim);
      const std::size_t nd = static_cast<std::size_t>(seq * dim), nn = static_cast<std::size_t>(seq * seq);
      cudalabs::DeviceBuffer<float> d_q(nd, "Q"), d_k(nd, "K"), d_v(nd, "V");
      cudalabs::DeviceBuffer<float> d_s(nn, "S (scores)"), d_p(nn, "P (weights)"), d_o(nd, "O");
      cudalabs::ref::Attention ref;
      cudalabs::Tolerance out_tol;
      // Inputs from a seed, uploaded, and their reference: once now, and again
      // with a fresh seed before each variant's last check. The whole chain in
      // double on every core, S and P kept for the per-kernel checks (2 × 8·seq²
      // bytes: 268 MB at seq = 4096).
      auto new_inputs = [&](std::uint64_t seed) {
        auto q = cudalabs::random_floats(nd, cudalabs::mix_seed(seed, 1));
        auto k = cudalabs::random_floats(nd, cudalabs::mix_seed(seed, 2));
        const auto v = cudalabs::random_floats(nd, cudalabs::mix_seed(seed, 3));
        for (float& x : q) x *= range;
        for (float& x : k) x *= range;
        ref = cudalabs::ref::attention(q, k, v, seq, dim, /*causal=*/false, /*keep_intermediates=*/true);
        const double max_p = *std::max_element(ref.weights.begin(), ref.weights.end());
        out_tol = attention_out_tolerance(seq, dim, max_p, range);
        d_q.upload(q);
        d_k.upload(k);
        d_v.upload(v);
      };
      new_inputs(s.seed());
      const cudalabs::Tolerance weights_tol = attention_weights_tolerance(seq, dim, range);

      auto check_out = [&] { return cudalabs::check_close(d_o.download(), ref.out, out_tol); };
      auto poison_all = [&](cudaStream_t st) {
        d_s.poison(st);
        d_p.poison(st);
        d_o.poison(st);
      };
      const double flops_gemm = 2.0 * static_cast<double>(seq) * seq * dim;
      const cudalabs::Work pass_work{.bytes = attention_unfused_bytes(seq, dim), .flops = 2.0 * flops_gemm};
      const std::map<std::string, double> pass_extra{{"nxn_bytes", attention_nxn_bytes(seq)}};

      // Both whole passes start from poisoned scratch: an unwritten element of S
      // or P would reach O as NaN.
      prepare_attention_forward_cublas(blas, d_q.data(), d_k.data(), d_v.data(), d_s.data(), d_p.data(),
                                               d_o.data(), n, d, s.stream());
      cudalabs::Measurement baseline{
          .variant = "cublas_pipeline",
          .size = point,
          .work = pass_work,
          .run = [&](cudaStream_t st) {
            attention_forward_cublas(blas, d_q.data(), d_k.data(), d_v.data(), d_s.data(), d_p.data(),
                                             d_o.data(), n, d, st);
          },
          .check = check_out,
          .poison = poison_all,
          .new_inputs = new_inputs,
          .ceiling = cudalabs::CeilingKind::baseline};
      baseline.extra = pass_extra;
      s.measure(baseline);

      if (s.selected("unfused")) {
        cudalabs::Measurement m{
            .variant = "unfused",
            .size = point,
            .work = pass_work,
            .run = [&](cudaStream_t st) {
              lab15::attention_forward_unfused(d_q.data(), d_k.data(), d_v.data(), d_s.data(), d_p.data(), d_o.data(),
                                               n, d, st);
            },
            .check = check_out,
            .poison = poison_all,
            .new_inputs = new_inputs,
            .ceiling = cudalabs::CeilingKind::baseline};  // resources: see the per-kernel rows
        m.extra = pass_extra;
        s.measure(m);
      }

      // Each kernel alone. The softmax and output stages read the reference's S
      // and P (rounded to float) as their input, so each row judges its own
      // kernel only, whatever the stages before it do, and any one of these
      // rows can run by itself.
      if (s.selected("scores"))
        s.measure({.variant = "scores",
                   .size = point,
                   .work = {.bytes = 4.0 * (2.0 * seq * dim + static_cast<double>(seq) * seq), .flops = flops_gemm},
                   .run = [&](cudaStream_t st) { lab15::unfused_scores(d_q.data(), d_k.data(), d_s.data(), n, d, st); },
                   .check =
                       [&] {
                         return cudalabs::check_close(d_s.download(), ref.scores, cudalabs::dot_tolerance(dim, range));
                       },
                   .poison = [&](cudaStream_t st) { d_s.poison(st); },
                   .new_inputs = new_inputs,
                   .resources = lab15::unfused_scores_resources(),
                   .ceiling = cudalabs::CeilingKind::none});

      auto upload_rounded = [](cudalabs::DeviceBuffer<float>& to, const std::vector<double>& values) {
        to.upload(std::vector<float>(values.begin(), values.end()));
      };
      if (s.selected("softmax")) {
        auto stage_inputs = [&](std::uint64_t seed) {
          new_inputs(seed);
          upload_rounded(d_s, ref.scores);
        };
        upload_rounded(d_s, ref.scores);
        s.measure({.variant = "softmax",
                   .size = point,
                   .work = {.bytes = 2.0 * 4.0 * static_cast<double>(seq) * seq},
                   .run = [&](cudaStream_t st) { lab15::unfused_softmax(d_s.data(), d_p.data(), n, st); },
                   .check = [&] { return cudalabs::check_close(d_p.download(), ref.weights, weights_tol); },
                   .poison = [&](cudaStream_t st) { d_p.poison(st); },
                   .new_inputs = stage_inputs,
                   .resources = lab15::unfused_softmax_resources(n)});
      }

      if (s.selected("output")) {
        auto stage_inputs = [&](std::uint64_t seed) {
          new_inputs(seed);
          upload_rounded(d_p, ref.weights);
        };
        upload_rounded(d_p, ref.weights);
        cudalabs::Measurement m{
            .variant = "output",
            .size = point,
            .work = {.bytes = 4.0 * (static_cast<double>(seq) * seq + 2.0 * seq * dim), .flops = flops_gemm},
            .run = [&](cudaStream_t st) { lab15::unfused_output(d_p.data(), d_v.data(), d_o.data(), n, d, st); },
            .check = check_out,
            .poison = [&](cudaStream_t st) { d_o.poison(st); },
            .new_inputs = stage_inputs,
            .resources = lab15::unfused_output_resources(),
            .ceiling = cudalabs::CeilingKind::none};
        m.extra["slices"] = lab15::unfused_output_slices(n, d);
        s.measure(m);
      }
    }
    s.note("per-kernel rows (scores, softmax, output): vs_baseline = the cuBLAS pipeline's whole time / this kernel's time.");
  });
}

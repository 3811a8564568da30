// Lab 15 — the attention forward pass, unfused: labs 13 → 12 → 14 on the device.
//
// O = softmax(Q·Kᵀ / sqrt(d)) · V for one head, Q, K, V [seq×d]. Three kernels
// run back to back on one stream with no host round trip; the seq×seq scores S
// and weights P each go to DRAM and back. The lab times the whole pass, each
// kernel alone, and the same pass with cuBLAS for the two products (the
// baseline, in the same run), and reports the N×N traffic that lab 16 removes.
//
// Variants (attention_forward.cuh; kernels from labs 12-14):
//   cublas_pipeline  cuBLAS S = Q·Kᵀ, our softmax, cuBLAS O = P·V  [baseline]
//   unfused          our best of each lab: register-tiled scores, softmax
//                    with the row in registers, split-K output
//   scores           the unfused pass's first kernel alone
//   softmax          its second kernel alone
//   output           its third kernel alone
//
// Run: make run LAB=15    (defaults: seq = 512, 1024, 2048, 4096; d = 64)
#include <algorithm>

#include <cudalabs/blas.hpp>
#include <cudalabs/lab.hpp>
#include <cudalabs/random.hpp>
#include <cudalabs/reference.hpp>

#include "attention_forward.cuh"

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
      .variants = {{"cublas_pipeline", "cuBLAS S = Q·Kᵀ, our softmax, cuBLAS O = P·V", true},
                   {"unfused", "register-tiled scores → softmax in registers → split-K output"},
                   {"scores", "the unfused pass's scores kernel alone (lab 13 register_tiled)"},
                   {"softmax", "its softmax kernel alone (lab 12 row_in_registers; online past 16384)"},
                   {"output", "its output kernel alone (lab 14 split_k)"}},
  };
  return cudalabs::run_lab(argc, argv, spec, [](cudalabs::Session& s) {
    const cudalabs::Cublas blas;
    for (const auto& point : s.points()) {
      const std::int64_t seq = point.at("seq"), dim = point.at("dim");
      const int n = static_cast<int>(seq), d = static_cast<int>(dim);
      const std::size_t nd = static_cast<std::size_t>(seq * dim), nn = static_cast<std::size_t>(seq * seq);
      const auto q = cudalabs::random_floats(nd, s.seed(1));
      const auto k = cudalabs::random_floats(nd, s.seed(2));
      const auto v = cudalabs::random_floats(nd, s.seed(3));
      // The whole chain in double on every core, S and P kept for the
      // per-kernel checks (2 × 8·seq² bytes: 268 MB at seq = 4096).
      const auto ref = cudalabs::ref::attention(q, k, v, seq, dim, /*causal=*/false, /*keep_intermediates=*/true);
      const double max_p = *std::max_element(ref.weights.begin(), ref.weights.end());
      const cudalabs::Tolerance out_tol = attention_out_tolerance(seq, dim, max_p);
      const cudalabs::Tolerance weights_tol{.abs = 0, .rel = attention_weights_rel_tolerance(seq, dim)};

      cudalabs::DeviceBuffer<float> d_q(q, "Q"), d_k(k, "K"), d_v(v, "V");
      cudalabs::DeviceBuffer<float> d_s(nn, "S (scores)"), d_p(nn, "P (weights)"), d_o(nd, "O");
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
      cudalabs::Measurement baseline{
          .variant = "cublas_pipeline",
          .size = point,
          .work = pass_work,
          .run = [&](cudaStream_t st) {
            attention_forward_cublas(blas, d_q.data(), d_k.data(), d_v.data(), d_s.data(), d_p.data(), d_o.data(), n, d, st);
          },
          .check = check_out,
          .poison = poison_all,
          .ceiling = cudalabs::CeilingKind::baseline};
      baseline.extra = pass_extra;
      s.measure(baseline);

      if (s.selected("unfused")) {
        cudalabs::Measurement m{
            .variant = "unfused",
            .size = point,
            .work = pass_work,
            .run = [&](cudaStream_t st) {
              attention_forward_unfused(d_q.data(), d_k.data(), d_v.data(), d_s.data(), d_p.data(), d_o.data(), n, d, st);
            },
            .check = check_out,
            .poison = poison_all,
            .ceiling = cudalabs::CeilingKind::baseline};  // resources: see the per-kernel rows
        m.extra = pass_extra;
        s.measure(m);
      }

      // Each kernel alone, its input made first by the kernels before it (so
      // any one of these rows can run by itself).
      if (s.selected("scores"))
        s.measure({.variant = "scores",
                   .size = point,
                   .work = {.bytes = 4.0 * (2.0 * seq * dim + static_cast<double>(seq) * seq), .flops = flops_gemm},
                   .run = [&](cudaStream_t st) { scores_register_tiled(d_q.data(), d_k.data(), d_s.data(), n, d, st); },
                   .check = [&] { return cudalabs::check_close(d_s.download(), ref.scores, cudalabs::dot_tolerance(dim)); },
                   .poison = [&](cudaStream_t st) { d_s.poison(st); },
                   .resources = cudalabs::resources_of(scores_register_tiled_kernel, rt_threads),
                   .ceiling = cudalabs::CeilingKind::none});

      if (s.selected("softmax")) {
        scores_register_tiled(d_q.data(), d_k.data(), d_s.data(), n, d, s.stream());
        const SoftmaxLaunch launch = n <= softmax_registers_max_cols ? softmax_registers_shape(n)
                                                                     : SoftmaxLaunch{softmax_online_kernel, softmax_block};
        s.measure({.variant = "softmax",
                   .size = point,
                   .work = {.bytes = 2.0 * 4.0 * static_cast<double>(seq) * seq},
                   .run = [&](cudaStream_t st) { softmax_rows_best(d_s.data(), d_p.data(), n, n, st); },
                   .check = [&] { return cudalabs::check_close(d_p.download(), ref.weights, weights_tol); },
                   .poison = [&](cudaStream_t st) { d_p.poison(st); },
                   .resources = cudalabs::resources_of(launch.kernel, launch.threads)});
      }

      if (s.selected("output")) {
        scores_register_tiled(d_q.data(), d_k.data(), d_s.data(), n, d, s.stream());
        softmax_rows_best(d_s.data(), d_p.data(), n, n, s.stream());
        cudalabs::Measurement m{
            .variant = "output",
            .size = point,
            .work = {.bytes = 4.0 * (static_cast<double>(seq) * seq + 2.0 * seq * dim), .flops = flops_gemm},
            .run = [&](cudaStream_t st) { output_split_k(d_p.data(), d_v.data(), d_o.data(), n, d, st); },
            .check = check_out,
            .poison = [&](cudaStream_t st) { d_o.poison(st); },
            .resources = cudalabs::resources_of(output_split_k_kernel, ort_threads),
            .ceiling = cudalabs::CeilingKind::none};
        m.extra["slices"] = output_split_k_slices(n, d);
        s.measure(m);
      }
    }
    s.note("per-kernel rows (scores, softmax, output): vs_baseline = the cuBLAS pipeline's whole time / this kernel's time.");
  });
}

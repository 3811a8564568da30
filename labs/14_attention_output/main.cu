// Lab 14 — attention output: O = P·V, the second GEMM of attention.
//
// P [seq×seq] holds softmax weights (each row sums to 1), V is [seq×d]. The
// contraction is long (seq) and the output narrow (seq×d): once each thread
// computes an 8×8 block of outputs from registers, there are too few blocks to
// fill the GPU, and the fix is to split the contraction across blocks.
// cuBLAS (FP32, no TF32) runs first at each size as the baseline and ceiling.
//
// Variants (kernels in attention_output.cuh):
//   cublas           cublasSgemm P·V                                [baseline]
//   tiled            the original: 16×16 tiles over the contraction
//   register_tiled   128×64 outputs per block, 8×8 per thread in registers
//   split_k          register_tiled with the contraction split over blocks,
//                    partial sums added with atomicAdd
//
// Run: make run LAB=14    (defaults: seq = 512, 4096; d = 64)
#include <algorithm>
#include <cmath>

#include <cudalabs/blas.hpp>
#include <cudalabs/lab.hpp>
#include <cudalabs/random.hpp>
#include <cudalabs/reference.hpp>

#include "../13_attention_scores/attention_scores.cuh"
#include "attention_output.cuh"

int main(int argc, char** argv) {
  const cudalabs::LabSpec spec{
      .name = "14_attention_output",
      .title = "attention output O = P·V: tiles over the contraction, registers, split-K",
      .about = "P is [seq×seq] softmax weights (rows sum to 1), V and O are [seq×d] (d <= 128). GFLOP/s counts\n"
               "2·seq²·d; %ceil is % of cuBLAS (FP32, no TF32) at the same size. GB/s counts reading P and V\n"
               "once and writing O once. --size sets --seq.",
      .sizes = attention_sizes("sequence length N (rows and columns of P, rows of V)", {512, 4096}),
      .size_alias = {"seq"},
      .variants = {{"cublas", "cublasSgemm P·V, FP32", true},
                   {"tiled", "the original: 16×16 tiles over the contraction, one output per thread"},
                   {"register_tiled", "128×64 tile per block, 8×8 outputs per thread in registers"},
                   {"split_k", "register_tiled with the contraction split over blocks, atomicAdd"}},
  };
  return cudalabs::run_lab(argc, argv, spec, [](cudalabs::Session& s) {
    const cudalabs::Cublas blas;
    for (const auto& point : s.points()) {
      const std::int64_t seq = point.at("seq"), dim = point.at("dim");
      const int n = static_cast<int>(seq), d = static_cast<int>(dim);
      // Real softmax weights: the softmax of random scores in [-4, 4), so a row's
      // largest weight is ~e^8 ≈ 3000 times its smallest (uniform weights would
      // hide a kernel that reads the wrong column of P).
      const auto scores = cudalabs::random_floats(static_cast<std::size_t>(seq * seq), s.seed(1), -4.0f, 4.0f);
      const auto weights = cudalabs::ref::softmax_rows(scores, seq, seq);
      const std::vector<float> p(weights.begin(), weights.end());
      const auto v = cudalabs::random_floats(static_cast<std::size_t>(seq * dim), s.seed(2));
      const auto expected = cudalabs::ref::matmul(p, v, seq, dim, seq);

      // Each output is sum_j P[i][j]·V[j][c]: seq terms of size at most
      // max_p·1, so dot_tolerance with magnitude² = max_p: abs = 2·eps·seq·max_p
      // (≈ 1e-6 at seq = 4096 here). The library's magnitude-1 tolerance (5e-4)
      // would pass a kernel that drops a term (~1/seq = 2.4e-4).
      const double max_p = *std::max_element(p.begin(), p.end());
      const cudalabs::Tolerance tol = cudalabs::dot_tolerance(seq, std::sqrt(max_p));

      cudalabs::DeviceBuffer<float> d_p(p, "P"), d_v(v, "V"), d_o(static_cast<std::size_t>(seq * dim), "O");
      auto check = [&] { return cudalabs::check_close(d_o.download(), expected, tol); };
      auto poison = [&](cudaStream_t st) { d_o.poison(st); };
      const cudalabs::Work work{.bytes = 4.0 * (static_cast<double>(seq) * seq + 2.0 * seq * dim),
                                .flops = 2.0 * static_cast<double>(seq) * seq * dim};

      s.measure({.variant = "cublas",
                 .size = point,
                 .work = work,
                 .run = [&](cudaStream_t st) { blas.sgemm(d_p.data(), d_v.data(), d_o.data(), n, d, n, st); },
                 .check = check,
                 .poison = poison,
                 .ceiling = cudalabs::CeilingKind::baseline});

      if (s.selected("tiled"))
        s.measure({.variant = "tiled",
                   .size = point,
                   .work = work,
                   .run = [&](cudaStream_t st) { output_tiled(d_p.data(), d_v.data(), d_o.data(), n, d, st); },
                   .check = check,
                   .poison = poison,
                   .resources = cudalabs::resources_of(output_tiled_kernel, output_tile * output_tile),
                   .ceiling = cudalabs::CeilingKind::baseline});

      if (s.selected("register_tiled"))
        s.measure({.variant = "register_tiled",
                   .size = point,
                   .work = work,
                   .run = [&](cudaStream_t st) { output_register_tiled(d_p.data(), d_v.data(), d_o.data(), n, d, st); },
                   .check = check,
                   .poison = poison,
                   .resources = cudalabs::resources_of(output_register_tiled_kernel, ort_threads),
                   .ceiling = cudalabs::CeilingKind::baseline});

      if (s.selected("split_k")) {
        cudalabs::Measurement m{
            .variant = "split_k",
            .size = point,
            .work = work,
            .run = [&](cudaStream_t st) { output_split_k(d_p.data(), d_v.data(), d_o.data(), n, d, st); },
            .check = check,
            .poison = poison,
            .resources = cudalabs::resources_of(output_split_k_kernel, ort_threads),
            .ceiling = cudalabs::CeilingKind::baseline};
        m.extra["slices"] = output_split_k_slices(n, d);
        s.measure(m);
      }
    }
  });
}

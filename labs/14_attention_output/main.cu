// Lab 14 — attention output: O = P·V, the second GEMM of attention.
//
// P [seq×seq] holds softmax weights (each row sums to 1), V is [seq×d]. The
// contraction is long (seq) and the output narrow (seq×d): once each thread
// computes an 8×8 block of outputs from registers, there are too few blocks to
// fill the GPU, and the fix is to split the contraction across blocks.
// cuBLAS (FP32, no TF32) runs first at each size as the baseline and ceiling.
//
// Variants (kernels in attention_output.cuh, called through kernels.hpp):
//   cublas           cublasSgemm P·V                                [baseline]
//   tiled            the original: 16×16 tiles over the contraction
//   register_tiled   128×64 outputs per block, 8×8 per thread in registers
//   split_k          register_tiled with the contraction split over blocks,
//                    partial sums added with atomicAdd
// --inputs large|masked: nearly one-hot weights and values past FP16's range,
// or causally masked weights (make_inputs).
//
// Run: make run LAB=14    (defaults: seq = 512, 4096; d = 64)
#include <algorithm>
#include <cmath>

#include <cudalabs/blas.hpp>
#include <cudalabs/lab.hpp>
#include <cudalabs/random.hpp>
#include <cudalabs/reference.hpp>

#include "input_kinds.hpp"
#include "../13_attention_scores/attention_sizes.hpp"
#include "kernels.hpp"

namespace {

struct Inputs {
  std::vector<float> p, v;
  float v_range;
};

// P and V drawn from `seed`, by --inputs:
//   random  P the softmax of scores in [-4, 4): a row's largest weight is ~e^8 ≈
//           3000 times its smallest (uniform weights would hide a kernel that
//           reads the wrong column of P); V in [-1, 1).
//   large   the scores times 32, [-128, 128): rows of P nearly one-hot, most
//           weights 0 or subnormal; V times 2^16: outputs up to 65536, past
//           FP16's largest value (65504), so a kernel that keeps V or O in FP16
//           overflows.
//   masked  the random scores with -inf after the diagonal (a causal mask): P
//           lower-triangular with exact zeros, row 0 a single weight of 1.
Inputs make_inputs(InputKind kind, std::int64_t seq, std::int64_t dim, std::uint64_t seed) {
  auto scores = cudalabs::random_floats(static_cast<std::size_t>(seq * seq), cudalabs::mix_seed(seed, 1), -4.0f, 4.0f);
  Inputs in{.v = cudalabs::random_floats(static_cast<std::size_t>(seq * dim), cudalabs::mix_seed(seed, 2)),
            .v_range = kind == InputKind::large ? 65536.0f : 1.0f};
  for (std::int64_t i = 0; i < seq; ++i)
    for (std::int64_t j = 0; j < seq; ++j) {
      float& x = scores[static_cast<std::size_t>(i * seq + j)];
      if (kind == InputKind::large) x *= 32.0f;
      if (kind == InputKind::masked && j > i) x = -INFINITY;
    }
  for (float& x : in.v) x *= in.v_range;
  const auto weights = cudalabs::ref::softmax_rows(scores, seq, seq);
  in.p.assign(weights.begin(), weights.end());
  return in;
}

}  // namespace

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
      .flags = {inputs_flag("random: P = softmax of scores in [-4, 4), V in [-1, 1); large: nearly one-hot\n"
                            "                      P, V up to 2^16; masked: P causally masked (zeros after the\n"
                            "                      diagonal)")},
  };
  const auto inputs = [](const cudalabs::Options& o) { return input_kind(o, {"random", "large", "masked"}); };
  if (const int rc = precheck_usage(spec, argc, argv, inputs); rc != 0) return rc;

  return cudalabs::run_lab(argc, argv, spec, [&](cudalabs::Session& s) {
    const InputKind kind = inputs(s.options());
    const cudalabs::Cublas blas;
    for (const auto& point : s.points()) {
      const std::int64_t seq = point.at("seq"), dim = point.at("dim");
      const int n = static_cast<int>(seq), d = static_cast<int>(dim);
      cudalabs::DeviceBuffer<float> d_p(static_cast<std::size_t>(seq * seq), "P"),
          d_v(static_cast<std::size_t>(seq * dim), "V"), d_o(static_cast<std::size_t>(seq * dim), "O");
      std::vector<double> expected;
      cudalabs::Tolerance tol;
      // Inputs from a seed, uploaded, their reference and tolerance: once now,
      // and again with a fresh seed before each variant's last check.
      auto new_inputs = [&](std::uint64_t seed) {
        const Inputs in = make_inputs(kind, seq, dim, seed);
        expected = cudalabs::ref::matmul(in.p, in.v, seq, dim, seq);
        // Each output is sum_j P[i][j]·V[j][c]: seq terms of size at most
        // max_p·v_range, so dot_tolerance with magnitude² = max_p·v_range:
        // abs = 2·eps·seq·max_p·v_range: ≈ 1e-6 at seq = 4096 for random
        // inputs, where the library's magnitude-1 tolerance (5e-4) would pass a
        // kernel that drops a term (~1/seq = 2.4e-4); for large inputs (max_p ≈
        // 1) 5e-4 of the values' 2^16 at seq = 4096, where reading a wrong row
        // of V moves an output by ~2^15.
        const double max_p = *std::max_element(in.p.begin(), in.p.end());
        tol = cudalabs::dot_tolerance(seq, std::sqrt(max_p * in.v_range));
        d_p.upload(in.p);
        d_v.upload(in.v);
      };
      new_inputs(s.seed());

      auto check = [&] { return cudalabs::check_close(d_o.download(), expected, tol); };
      auto poison = [&](cudaStream_t st) { d_o.poison(st); };
      const cudalabs::Work work{.bytes = 4.0 * (static_cast<double>(seq) * seq + 2.0 * seq * dim),
                                .flops = 2.0 * static_cast<double>(seq) * seq * dim};

      blas.prepare_sgemm(d_p.data(), d_v.data(), d_o.data(), n, d, n, s.stream());
      s.measure({.variant = "cublas",
                 .size = point,
                 .work = work,
                 .run = [&](cudaStream_t st) { blas.sgemm(d_p.data(), d_v.data(), d_o.data(), n, d, n, st); },
                 .check = check,
                 .poison = poison,
                 .new_inputs = new_inputs,
                 .ceiling = cudalabs::CeilingKind::baseline});

      if (s.selected("tiled"))
        s.measure({.variant = "tiled",
                   .size = point,
                   .work = work,
                   .run = [&](cudaStream_t st) { lab14::output_tiled(d_p.data(), d_v.data(), d_o.data(), n, d, st); },
                   .check = check,
                   .poison = poison,
                   .new_inputs = new_inputs,
                   .resources = lab14::output_tiled_resources(),
                   .ceiling = cudalabs::CeilingKind::baseline});

      if (s.selected("register_tiled"))
        s.measure({.variant = "register_tiled",
                   .size = point,
                   .work = work,
                   .run =
                       [&](cudaStream_t st) {
                         lab14::output_register_tiled(d_p.data(), d_v.data(), d_o.data(), n, d, st);
                       },
                   .check = check,
                   .poison = poison,
                   .new_inputs = new_inputs,
                   .resources = lab14::output_register_tiled_resources(),
                   .ceiling = cudalabs::CeilingKind::baseline});

      if (s.selected("split_k")) {
        cudalabs::Measurement m{
            .variant = "split_k",
            .size = point,
            .work = work,
            .run = [&](cudaStream_t st) { lab14::output_split_k(d_p.data(), d_v.data(), d_o.data(), n, d, st); },
            .check = check,
            .poison = poison,
            .new_inputs = new_inputs,
            .resources = lab14::output_split_k_resources(),
            .ceiling = cudalabs::CeilingKind::baseline};
        m.extra["slices"] = lab14::output_split_k_slices(n, d);
        s.measure(m);
      }
    }
  });
}

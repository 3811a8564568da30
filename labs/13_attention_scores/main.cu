// Lab 13 — attention scores: S = Q·Kᵀ / sqrt(d), the first GEMM of attention.
//
// Q and K are [seq×d]; every score is a dot product of a row of Q with a row of
// K. The lab's lesson is staging K TRANSPOSED in shared memory, so that the
// threads of a warp read consecutive addresses (no bank conflicts), and then
// that one output per thread leaves the kernel bound by shared-memory loads
// until each thread computes a block of outputs from registers. cuBLAS (FP32,
// no TF32) runs first at each size as the baseline and the ceiling.
//
// Variants (kernels in attention_scores.cuh, called through kernels.hpp):
//   cublas           cublasSgemm with Kᵀ and alpha = 1/sqrt(d)   [baseline]
//   tiled_kt         the original: 16×16 outputs per block, Q and Kᵀ tiles
//                    (the whole d-slice) in shared memory, +1 padding
//   register_tiled   128×128 outputs per block, 8×8 per thread in registers
// --inputs large: Q and K 128 times larger, scores around ±1e4 (make_inputs).
//
// Run: make run LAB=13    (defaults: seq = 512, 4096; d = 64)
#include <cmath>

#include <cudalabs/blas.hpp>
#include <cudalabs/lab.hpp>
#include <cudalabs/random.hpp>
#include <cudalabs/reference.hpp>

#include "input_kinds.hpp"
#include "attention_sizes.hpp"
#include "kernels.hpp"

namespace {

// Kᵀ [dim×seq], for the CPU reference's plain A·B.
std::vector<float> transposed(const std::vector<float>& m, std::int64_t rows, std::int64_t cols) {
  std::vector<float> t(m.size());
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c) t[static_cast<std::size_t>(c * rows + r)] = m[static_cast<std::size_t>(r * cols + c)];
  return t;
}

// How far the inputs reach, by --inputs: random Q, K in [-1, 1); large the same
// values times 128 (a power of two: every product, partial sum and rounding
// error is exactly 16384 times the random inputs'). Scores q·k/sqrt(d) then
// spread with a standard deviation of 128²/3 ≈ 5500, up to ~2e4, and the dot
// products before the scale reach 2^16 and more: a kernel that computes or
// stores them in FP16 (largest value 65504) overflows.
float input_range(InputKind kind) { return kind == InputKind::large ? 128.0f : 1.0f; }

}  // namespace

int main(int argc, char** argv) {
  const cudalabs::LabSpec spec{
      .name = "13_attention_scores",
      .title = "attention scores S = Q·Kᵀ/sqrt(d): K transposed in shared memory, then register tiling",
      .about = "Q, K are [seq×d] (d <= 128), S is [seq×seq]. GFLOP/s counts 2·seq²·d; %ceil is % of cuBLAS\n"
               "(FP32, no TF32) at the same size. GB/s counts reading Q and K once and writing S once: at\n"
               "d = 64 the seq² writes of S are as costly as the arithmetic. --size sets --seq.",
      .sizes = attention_sizes("sequence length N (rows of Q and K)", {512, 4096}),
      .size_alias = {"seq"},
      .variants = {{"cublas", "cublasSgemm, Q·Kᵀ with alpha = 1/sqrt(d), FP32", true},
                   {"tiled_kt", "the original: 16×16 tiles, Kᵀ staged in shared memory (+1 padding)"},
                   {"register_tiled", "128×128 tile per block, 8×8 outputs per thread in registers"}},
      .flags = {inputs_flag("random: Q, K in [-1, 1); large: the same times 128, scores around ±1e4")},
  };
  const auto inputs = [](const cudalabs::Options& o) {
    return input_kind(o, {"random", "large"}, "Lab 13 has no softmax: masked rows are lab 12's --inputs masked.");
  };
  if (const int rc = precheck_usage(spec, argc, argv, inputs); rc != 0) return rc;

  return cudalabs::run_lab(argc, argv, spec, [&](cudalabs::Session& s) {
    const InputKind kind = inputs(s.options());
    const float range = input_range(kind);
    const cudalabs::Cublas blas;
    for (const auto& point : s.points()) {
      const std::int64_t seq = point.at("seq"), dim = point.at("dim");
      const int n = static_cast<int>(seq), d = static_cast<int>(dim);
      const auto nd = static_cast<std::size_t>(seq * dim);
      cudalabs::DeviceBuffer<float> d_q(nd, "Q"), d_k(nd, "K"), d_s(static_cast<std::size_t>(seq * seq), "S");
      std::vector<double> expected;
      // Inputs from a seed, uploaded, and their reference: once now, and again
      // with a fresh seed before each variant's last check. The CPU reference
      // runs in double on every core: 2·seq²·d flops (2 GFLOP at seq = 4096,
      // d = 64; about a second on 16 cores).
      auto new_inputs = [&](std::uint64_t seed) {
        auto q = cudalabs::random_floats(nd, cudalabs::mix_seed(seed, 1));
        auto k = cudalabs::random_floats(nd, cudalabs::mix_seed(seed, 2));
        for (float& x : q) x *= range;
        for (float& x : k) x *= range;
        expected = cudalabs::ref::matmul(q, transposed(k, seq, dim), seq, seq, dim);
        const double scale = 1.0 / std::sqrt(static_cast<double>(dim));
        for (double& e : expected) e *= scale;
        d_q.upload(q);
        d_k.upload(k);
      };
      new_inputs(s.seed());
      // Each score is a float dot product of length d of values in [-range,
      // range), scaled by 1/sqrt(d) <= 1, which shrinks its error too: abs =
      // 2·eps·d·range² (0.13 at d = 64 for large inputs, against scores of ~5500).
      const cudalabs::Tolerance tol = cudalabs::dot_tolerance(dim, range);

      auto check = [&] { return cudalabs::check_close(d_s.download(), expected, tol); };
      auto poison = [&](cudaStream_t st) { d_s.poison(st); };
      const cudalabs::Work work{.bytes = 4.0 * (2.0 * seq * dim + static_cast<double>(seq) * seq),
                                .flops = 2.0 * static_cast<double>(seq) * seq * dim};

      blas.prepare_sgemm(d_q.data(), d_k.data(), d_s.data(), n, n, d, s.stream(), attention_scale(d), 0.0f, true);
      s.measure({.variant = "cublas",
                 .size = point,
                 .work = work,
                 .run = [&](cudaStream_t st) {
                   blas.sgemm(d_q.data(), d_k.data(), d_s.data(), n, n, d, st, attention_scale(d), 0.0f, true);
                 },
                 .check = check,
                 .poison = poison,
                 .new_inputs = new_inputs,
                 .ceiling = cudalabs::CeilingKind::baseline});

      if (s.selected("tiled_kt"))
        s.measure({.variant = "tiled_kt",
                   .size = point,
                   .work = work,
                   .run =
                       [&](cudaStream_t st) { lab13::scores_tiled_kt(d_q.data(), d_k.data(), d_s.data(), n, d, st); },
                   .check = check,
                   .poison = poison,
                   .new_inputs = new_inputs,
                   .resources = lab13::scores_tiled_kt_resources(),
                   .ceiling = cudalabs::CeilingKind::baseline});

      if (s.selected("register_tiled"))
        s.measure({.variant = "register_tiled",
                   .size = point,
                   .work = work,
                   .run =
                       [&](cudaStream_t st) {
                         lab13::scores_register_tiled(d_q.data(), d_k.data(), d_s.data(), n, d, st);
                       },
                   .check = check,
                   .poison = poison,
                   .new_inputs = new_inputs,
                   .resources = lab13::scores_register_tiled_resources(),
                   .ceiling = cudalabs::CeilingKind::baseline});
    }
  });
}

// Lab 13 — attention scores: S = Q·Kᵀ / sqrt(d), the first GEMM of attention.
//
// Q and K are [seq×d]; every score is a dot product of a row of Q with a row of
// K. The lab's lesson is staging K TRANSPOSED in shared memory, so that the
// threads of a warp read consecutive addresses (no bank conflicts), and then
// that one output per thread leaves the kernel bound by shared-memory loads
// until each thread computes a block of outputs from registers. cuBLAS (FP32,
// no TF32) runs first at each size as the baseline and the ceiling.
//
// Variants (kernels in attention_scores.cuh):
//   cublas           cublasSgemm with Kᵀ and alpha = 1/sqrt(d)   [baseline]
//   tiled_kt         the original: 16×16 outputs per block, Q and Kᵀ tiles
//                    (the whole d-slice) in shared memory, +1 padding
//   register_tiled   128×128 outputs per block, 8×8 per thread in registers
//
// Run: make run LAB=13    (defaults: seq = 512, 4096; d = 64)
#include <cmath>

#include <cudalabs/blas.hpp>
#include <cudalabs/lab.hpp>
#include <cudalabs/random.hpp>
#include <cudalabs/reference.hpp>

#include "attention_scores.cuh"

namespace {

// Kᵀ [dim×seq], for the CPU reference's plain A·B.
std::vector<float> transposed(const std::vector<float>& m, std::int64_t rows, std::int64_t cols) {
  std::vector<float> t(m.size());
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c) t[static_cast<std::size_t>(c * rows + r)] = m[static_cast<std::size_t>(r * cols + c)];
  return t;
}

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
  };
  return cudalabs::run_lab(argc, argv, spec, [](cudalabs::Session& s) {
    const cudalabs::Cublas blas;
    for (const auto& point : s.points()) {
      const std::int64_t seq = point.at("seq"), dim = point.at("dim");
      const int n = static_cast<int>(seq), d = static_cast<int>(dim);
      const auto q = cudalabs::random_floats(static_cast<std::size_t>(seq * dim), s.seed(1));
      const auto k = cudalabs::random_floats(static_cast<std::size_t>(seq * dim), s.seed(2));
      // CPU reference in double on every core: 2·seq²·d flops (2 GFLOP at
      // seq = 4096, d = 64; about a second on 16 cores).
      auto expected = cudalabs::ref::matmul(q, transposed(k, seq, dim), seq, seq, dim);
      const double scale = 1.0 / std::sqrt(static_cast<double>(dim));
      for (double& e : expected) e *= scale;
      // Each score is a float dot product of length d of values in [-1, 1),
      // scaled by 1/sqrt(d) <= 1, which shrinks its error too.
      const cudalabs::Tolerance tol = cudalabs::dot_tolerance(dim);

      cudalabs::DeviceBuffer<float> d_q(q, "Q"), d_k(k, "K"), d_s(static_cast<std::size_t>(seq * seq), "S");
      auto check = [&] { return cudalabs::check_close(d_s.download(), expected, tol); };
      auto poison = [&](cudaStream_t st) { d_s.poison(st); };
      const cudalabs::Work work{.bytes = 4.0 * (2.0 * seq * dim + static_cast<double>(seq) * seq),
                                .flops = 2.0 * static_cast<double>(seq) * seq * dim};

      s.measure({.variant = "cublas",
                 .size = point,
                 .work = work,
                 .run = [&](cudaStream_t st) {
                   blas.sgemm(d_q.data(), d_k.data(), d_s.data(), n, n, d, st, attention_scale(d), 0.0f, true);
                 },
                 .check = check,
                 .poison = poison,
                 .ceiling = cudalabs::CeilingKind::baseline});

      if (s.selected("tiled_kt"))
        s.measure({.variant = "tiled_kt",
                   .size = point,
                   .work = work,
                   .run = [&](cudaStream_t st) { scores_tiled_kt(d_q.data(), d_k.data(), d_s.data(), n, d, st); },
                   .check = check,
                   .poison = poison,
                   .resources = cudalabs::resources_of(scores_tiled_kt_kernel, scores_tile * scores_tile),
                   .ceiling = cudalabs::CeilingKind::baseline});

      if (s.selected("register_tiled"))
        s.measure({.variant = "register_tiled",
                   .size = point,
                   .work = work,
                   .run = [&](cudaStream_t st) { scores_register_tiled(d_q.data(), d_k.data(), d_s.data(), n, d, st); },
                   .check = check,
                   .poison = poison,
                   .resources = cudalabs::resources_of(scores_register_tiled_kernel, rt_threads),
                   .ceiling = cudalabs::CeilingKind::baseline});
    }
  });
}

// Lab 05 — matrix multiply with shared-memory tiles: where a GPU wins by a lot.
//
// C[m×n] = A[m×k] · B[k×n] in FP32, random inputs, any m, n, k. A 16×16 block
// of threads computes a 16×16 tile of C, staging 16×16 tiles of A and B in
// shared memory so each element read from global memory is used 16 times.
// cuBLAS (FP32, no TF32; the fastest of cublasSgemm and the cuBLASLt heuristic's
// algorithms for the shape) runs first at every size: the other rows are
// reported as % of it. Unlike vector add (lab 03), a matmul does 2k flops per
// element it moves, so the PCIe copies stop dominating: the end-to-end row
// shows by how much.
//
// Variants:
//   cublas              cuBLAS FP32 GEMM, the baseline (always runs)
//   tiled16             16×16 shared tiles, one output per thread   tiled_matmul.cuh
//   tiled16_end_to_end  copy A and B from pinned memory, tiled16, copy C back
//   cpu_reference       the checker's CPU matmul: double, blocked, all cores
//                       (host clock; only up to 2^31 multiply-adds)
//
// The student's file is tiled_matmul.cuh (the kernel and its launcher), reached
// only through kernels.hpp; labs/shared/matmul_lab.cuh is the course's harness.
//
// Run: make run LAB=05    (defaults: 1024³, the original's size, and 4096³)
#include <algorithm>
#include <cmath>
#include <string>

#include "kernels.hpp"
#include "matmul_lab.cuh"

namespace {

// The CPU row is timed only up to 2^31 multiply-adds (1024³ and the test
// shapes): beyond, each of the several timed runs would take seconds (the
// harness stops checking every row there too).
constexpr double cpu_max_multiply_adds = 2147483648.0;

double median_ms(const cudalabs::Session& s, const cudalabs::Point& p, const std::string& variant) {
  for (const auto& r : s.records())
    if (r.size == p && r.variant == variant && r.timed) return r.timing.median_ms;
  return 0;
}

void cpu_row(cudalabs::Session& s, const MatmulProblem& p) {
  if (static_cast<double>(p.m) * p.n * p.k > cpu_max_multiply_adds) {
    s.note(cudalabs::to_string(p.point) + ": cpu_reference not timed (it runs only up to 2^31 multiply-adds)");
    return;
  }
  std::vector<float> c(static_cast<std::size_t>(p.m) * p.n);
  s.measure({.variant = "cpu_reference",
             .size = p.point,
             .work = p.work,
             .run =
                 [&](cudaStream_t) {
                   const auto exact = cudalabs::ref::matmul(p.a, p.b, p.m, p.n, p.k);
                   std::transform(exact.begin(), exact.end(), c.begin(),
                                  [](double x) { return static_cast<float>(x); });
                 },
             .check = [&] { return p.check(c); },
             .poison = [&](cudaStream_t) { std::fill(c.begin(), c.end(), NAN); },
             .new_inputs = p.new_inputs,  // the run reads p.a and p.b, which this replaces
             .expect = cudalabs::Expect::host,
             .ceiling = cudalabs::CeilingKind::none,
             .clock = cudalabs::Clock::host});
}

// The original's end-to-end number: upload A and B, multiply, download C, all
// timed. Pinned host memory, so the copies run at the link's rate (lab 03).
void end_to_end_row(cudalabs::Session& s, const MatmulProblem& p) {
  cudalabs::PinnedBuffer<float> h_a(p.a.size(), "A (pinned)"), h_b(p.b.size(), "B (pinned)");
  cudalabs::PinnedBuffer<float> h_c(static_cast<std::size_t>(p.m) * p.n, "C (pinned)");
  std::copy(p.a.begin(), p.a.end(), h_a.data());
  std::copy(p.b.begin(), p.b.end(), h_b.data());
  cudalabs::DeviceBuffer<float> d_a(h_a.size(), "A"), d_b(h_b.size(), "B"), d_c(h_c.size(), "C");
  s.measure({.variant = "tiled16_end_to_end",
             .size = p.point,
             .work = p.work,
             .run =
                 [&](cudaStream_t st) {
                   CUDALABS_CHECK(cudaMemcpyAsync(d_a.data(), h_a.data(), h_a.bytes(), cudaMemcpyHostToDevice, st));
                   CUDALABS_CHECK(cudaMemcpyAsync(d_b.data(), h_b.data(), h_b.bytes(), cudaMemcpyHostToDevice, st));
                   lab05::tiled16(d_a.data(), d_b.data(), d_c.data(), p.m, p.n, p.k, st);
                   CUDALABS_CHECK(cudaMemcpyAsync(h_c.data(), d_c.data(), h_c.bytes(), cudaMemcpyDeviceToHost, st));
                 },
             .check = [&] { return p.check(std::vector<float>(h_c.data(), h_c.data() + h_c.size())); },
             .poison =
                 [&](cudaStream_t st) {
                   std::fill(h_c.data(), h_c.data() + h_c.size(), NAN);
                   d_c.poison(st);
                 },
             .new_inputs =
                 [&](std::uint64_t seed) {
                   p.new_inputs(seed);
                   std::copy(p.a.begin(), p.a.end(), h_a.data());
                   std::copy(p.b.begin(), p.b.end(), h_b.data());
                 },
             .expect = cudalabs::Expect::kernels_and_copies,  // the copies are the point of this row
             .resources = lab05::tiled16_resources(),
             .ceiling = cudalabs::CeilingKind::none});

  const double kernel = median_ms(s, p.point, "tiled16"), total = median_ms(s, p.point, "tiled16_end_to_end");
  if (kernel > 0 && total > 0)
    s.note(cudalabs::to_string(p.point) + ": the tiled16 kernel is " +
           std::to_string(std::lround(100 * kernel / total)) +
           "% of its end-to-end time; the PCIe copies of A, B and C are the rest");
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<MatmulVariant> variants{
      {"tiled16", "16×16 shared tiles, one output per thread",
       [](const MatmulOperands& o, float* c, cudaStream_t st) { lab05::tiled16(o.a, o.b, c, o.m, o.n, o.k, st); },
       lab05::tiled16_resources},
  };
  auto spec = matmul_spec("05_matmul", "matrix multiply with 16×16 shared-memory tiles, against cuBLAS",
                          "C = A·B in FP32 with 16×16 shared-memory tiles, one output per thread, against cuBLAS\n"
                          "(FP32, no TF32) measured in the same run. Also: the same kernel end to end (PCIe\n"
                          "copies included) and the CPU reference on all cores, as in the original course.",
                          variants);
  spec.flags.push_back(matmul_inputs_flag());  // large and tiny magnitudes (matmul_lab.cuh)
  spec.variants.push_back({"tiled16_end_to_end", "copy A, B from pinned memory; tiled16; copy C back (CUDA events)"});
  spec.variants.push_back({"cpu_reference",
                           "the checker's CPU matmul: double, blocked, all cores (host clock; up to 2^31 multiply-adds)"});

  return cudalabs::run_lab(argc, argv, spec, [&](cudalabs::Session& s) {
    run_matmul_lab(s, variants, [](cudalabs::Session& s, const MatmulProblem& p) {
      if (s.selected("tiled16_end_to_end")) end_to_end_row(s, p);
      if (s.selected("cpu_reference")) cpu_row(s, p);
    });
  });
}

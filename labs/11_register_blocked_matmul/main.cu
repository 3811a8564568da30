// Lab 11 — register blocking: the one technique of the progression that pays.
//
// Each thread computes a 4×4 block of C in registers, a block of 256 threads a
// 64×64 tile, stepping along k 16 at a time through shared memory. Every float
// read from shared memory now feeds 4 FMAs instead of one, and every float read
// from global memory 64 outputs instead of 16. cuBLAS (FP32, no TF32) runs
// first at each size; the default sizes are a sweep for the plot.
//
// Variants:
//   cublas         cuBLAS FP32 GEMM, the baseline (always runs)
//   tiled16        lab 05's kernel: 16×16 tiles, one output per thread
//   register_4x4   64×64 block tile, 4×4 outputs per thread, FMA
//
// The student's file is register_blocked_matmul.cuh, reached through
// kernels.hpp. The tiled16 row is the course's lab 05 kernel, compiled here in
// main.cu from the course tree, so it is the same reference row whatever a
// submission holds.
//
// Run: make run LAB=11    (defaults: m = n = k = 256, 512, 1024, 2048, 4096)
#include "matmul_lab.cuh"
#include "../05_matmul/tiled_matmul.cuh"
#include "kernels.hpp"

int main(int argc, char** argv) {
  const std::vector<MatmulVariant> variants{
      {"tiled16", "lab 05's kernel: 16×16 shared tiles, one output per thread",
       [](const MatmulOperands& o, float* c, cudaStream_t st) { tiled_matmul(o.a, o.b, c, o.m, o.n, o.k, st); },
       [] { return cudalabs::resources_of(tiled_matmul_kernel, tiled_matmul_threads); }},
      {"register_4x4", "64×64 block tile, k-step 16, 256 threads, 4×4 outputs per thread in registers, FMA",
       [](const MatmulOperands& o, float* c, cudaStream_t st) { lab11::register_4x4(o.a, o.b, c, o.m, o.n, o.k, st); },
       lab11::register_4x4_resources},
  };
  auto spec = matmul_spec(
      "11_register_blocked_matmul", "register blocking: 4×4 outputs per thread, against cuBLAS",
      "Each thread computes a 4×4 block of C in registers (64×64 per block of 256 threads, k-step 16),\n"
      "against lab 05's one-output-per-thread kernel and cuBLAS (FP32, no TF32) in the same run.\n"
      "The default sizes are a sweep (256³ .. 4096³) for the plot; 1024³ is the original's size.",
      variants);
  spec.flags.push_back(matmul_inputs_flag());  // large and tiny magnitudes (matmul_lab.cuh)
  // A size sweep for plots/: five square sizes, zipped.
  for (auto& size : spec.sizes) size.full = {256, 512, 1024, 2048, 4096};
  return cudalabs::run_lab(argc, argv, spec, [&](cudalabs::Session& s) { run_matmul_lab(s, variants); });
}

// Lab 10 — wide loads: does moving 16 bytes per load instruction help matmul?
//
// Lab 05's tiled kernel loads its shared tiles 4 bytes per thread. Here the
// same kernel loads them 16 bytes (a float4) per thread, so a quarter of the
// threads issue a quarter of the load instructions; tiles, inner loop and
// launch are unchanged. The float4 path needs rows that start 16-byte aligned
// (k and n multiples of 4); other shapes take a scalar path that loads the same
// float4 four bytes at a time, so every size is correct.
//
// Variants:
//   cublas        cuBLAS FP32 GEMM, the baseline (always runs)
//   tiled16       lab 05's kernel: 4-byte loads into the 16×16 tiles
//   float4_loads  the same kernel, 16-byte loads into the tiles
//
// The student's file is vectorized_matmul.cuh, reached through kernels.hpp. The
// tiled16 row is the course's lab 05 kernel, compiled here in main.cu from the
// course tree, so it is the same reference row whatever a submission holds.
//
// Run: make run LAB=10    (defaults: 1024³, the original's size, and 4096³)
#include "matmul_lab.cuh"
#include "../05_matmul/tiled_matmul.cuh"
#include "kernels.hpp"

int main(int argc, char** argv) {
  const std::vector<MatmulVariant> variants{
      {"tiled16", "lab 05's kernel: 4-byte loads into 16×16 shared tiles",
       [](const MatmulOperands& o, float* c, cudaStream_t st) { tiled_matmul(o.a, o.b, c, o.m, o.n, o.k, st); },
       [] { return cudalabs::resources_of(tiled_matmul_kernel, tiled_matmul_threads); }},
      {"float4_loads", "the same kernel, 16-byte loads into the tiles (scalar path unless k, n % 4 == 0)",
       [](const MatmulOperands& o, float* c, cudaStream_t st) { lab10::float4_loads(o.a, o.b, c, o.m, o.n, o.k, st); },
       lab10::float4_loads_resources},
  };
  auto spec = matmul_spec(
      "10_vectorized_matmul", "16-byte loads into the shared tiles of lab 05's matmul, against cuBLAS",
      "Lab 05's 16×16 tiled matmul with its tiles loaded as float4 (16 bytes per load instruction), against\n"
      "lab 05's 4-byte loads and cuBLAS (FP32, no TF32) in the same run. Sizes whose k or n is not a\n"
      "multiple of 4 take the kernel's scalar path (same tiles, four 4-byte loads).",
      variants);
  spec.flags.push_back(matmul_inputs_flag());  // large and tiny magnitudes (matmul_lab.cuh)
  return cudalabs::run_lab(argc, argv, spec, [&](cudalabs::Session& s) { run_matmul_lab(s, variants); });
}

// Lab 09 — one kernel template, many kernels: compile-time specialisation.
//
// The original course's "comptime" lesson in C++. template_matmul_kernel<Input,
// Accumulator, Tile> is lab 05's tiled matmul written once; the compiler makes a
// separate, fully specialised kernel for each instantiation (kernels.cu: its own
// register count, shared memory size, unrolled inner loop). Combinations that
// would be wrong — an FP16 accumulator, a block of more than 1024 threads, a
// block that is not whole warps — do not compile, with a message that says what
// to change: see compile_fail_examples.cu and the lab's CPU tests.
//
// Variants:
//   cublas      cuBLAS FP32 GEMM, the baseline (always runs)
//   tiled16     lab 05's hand-written kernel, for comparison with f32_tile16
//   f32_tile8   <float, float, 8>:   64-thread blocks, 8×8 tiles
//   f32_tile16  <float, float, 16>:  the same kernel as tiled16, from the template
//   f32_tile32  <float, float, 32>:  1024-thread blocks, 32×32 tiles
//   f16_tile16  <__half, float, 16>: FP16 inputs (half the bytes read), FP32 sums
//
// The student's file is template_matmul.cuh; kernels.cu instantiates it for the
// four template rows (kernels.hpp). The tiled16 row is the course's lab 05
// kernel, compiled here in main.cu from the course tree, so it is the same
// reference row whatever a submission's lab 05 holds.
//
// Run: make run LAB=09    (defaults: 1024³, the original's size, and 4096³)
#include "matmul_lab.cuh"
#include "../05_matmul/tiled_matmul.cuh"
#include "kernels.hpp"

int main(int argc, char** argv) {
  const std::vector<MatmulVariant> variants{
      {"tiled16", "lab 05's hand-written 16×16 tiled kernel, for comparison with f32_tile16",
       [](const MatmulOperands& o, float* c, cudaStream_t st) { tiled_matmul(o.a, o.b, c, o.m, o.n, o.k, st); },
       [] { return cudalabs::resources_of(tiled_matmul_kernel, tiled_matmul_threads); }},
      {"f32_tile8", "template <float, float, 8>: 8×8 tiles, 64-thread blocks",
       [](const MatmulOperands& o, float* c, cudaStream_t st) { lab09::f32_tile8(o.a, o.b, c, o.m, o.n, o.k, st); },
       lab09::f32_tile8_resources},
      {"f32_tile16", "template <float, float, 16>: what tiled16 is, from the template",
       [](const MatmulOperands& o, float* c, cudaStream_t st) { lab09::f32_tile16(o.a, o.b, c, o.m, o.n, o.k, st); },
       lab09::f32_tile16_resources},
      {"f32_tile32", "template <float, float, 32>: 32×32 tiles, 1024-thread blocks",
       [](const MatmulOperands& o, float* c, cudaStream_t st) { lab09::f32_tile32(o.a, o.b, c, o.m, o.n, o.k, st); },
       lab09::f32_tile32_resources},
      {"f16_tile16", "template <__half, float, 16>: FP16 inputs (half the bytes), FP32 accumulation",
       [](const MatmulOperands& o, float* c, cudaStream_t st) { lab09::f16_tile16(o.a16, o.b16, c, o.m, o.n, o.k, st); },
       lab09::f16_tile16_resources,
       /*fp16_inputs=*/true},
  };
  auto spec = matmul_spec(
      "09_template_matmul", "one kernel template, specialised at compile time (C++ for Zig's comptime)",
      "Lab 05's tiled matmul written once as template_matmul_kernel<Input, Accumulator, Tile> and instantiated\n"
      "for FP32 tiles of 8, 16 and 32 and for FP16 inputs with FP32 accumulation, each against cuBLAS\n"
      "(FP32, no TF32) in the same run. The FP16 variant is checked against the references of the FP16-rounded\n"
      "inputs, so its error is its own. Invalid combinations fail to compile: see compile_fail_examples.cu.",
      variants);
  spec.flags.push_back(matmul_inputs_flag());  // large and tiny magnitudes, FP16's own for f16_tile16 (matmul_lab.cuh)
  return cudalabs::run_lab(argc, argv, spec, [&](cudalabs::Session& s) { run_matmul_lab(s, variants); });
}

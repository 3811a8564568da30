// Lab 09 — one kernel template, many kernels: compile-time specialisation.
//
// The original course's "comptime" lesson in C++. template_matmul_kernel<Input,
// Accumulator, Tile> is lab 05's tiled matmul written once; the compiler makes a
// separate, fully specialised kernel for each instantiation below (its own
// register count, shared memory size, unrolled inner loop). Combinations that
// would be wrong — an FP16 accumulator, a block of more than 1024 threads, a
// block that is not whole warps — do not compile, with a message that says what
// to change: see compile_fail_examples.cu and the lab's CPU tests.
//
// Variants:
//   cublas      cuBLAS SGEMM, the baseline (always runs)
//   tiled16     lab 05's hand-written kernel, for comparison with f32_tile16
//   f32_tile8   <float, float, 8>:   64-thread blocks, 8×8 tiles
//   f32_tile16  <float, float, 16>:  the same kernel as tiled16, from the template
//   f32_tile32  <float, float, 32>:  1024-thread blocks, 32×32 tiles
//   f16_tile16  <__half, float, 16>: FP16 inputs (half the bytes read), FP32 sums
//
// Run: make run LAB=09    (defaults: 1024³, the original's size, and 4096³)
#include "../05_matmul/matmul_lab.cuh"
#include "../05_matmul/tiled_matmul.cuh"
#include "template_matmul.cuh"

namespace {

// The table row of one FP32 instantiation.
template <int Tile>
MatmulVariant f32_variant(std::string name, std::string description) {
  return {std::move(name), std::move(description),
          [](const MatmulOperands& o, float* c, cudaStream_t st) {
            template_matmul<float, float, Tile>(o.a, o.b, c, o.m, o.n, o.k, st);
          },
          [] { return cudalabs::resources_of(template_matmul_kernel<float, float, Tile>, Tile * Tile); }};
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<MatmulVariant> variants{
      {"tiled16", "lab 05's hand-written 16×16 tiled kernel, for comparison with f32_tile16",
       [](const MatmulOperands& o, float* c, cudaStream_t st) { tiled_matmul(o.a, o.b, c, o.m, o.n, o.k, st); },
       [] { return cudalabs::resources_of(tiled_matmul_kernel, tiled_matmul_threads); }},
      f32_variant<8>("f32_tile8", "template <float, float, 8>: 8×8 tiles, 64-thread blocks"),
      f32_variant<16>("f32_tile16", "template <float, float, 16>: what tiled16 is, from the template"),
      f32_variant<32>("f32_tile32", "template <float, float, 32>: 32×32 tiles, 1024-thread blocks"),
      {"f16_tile16", "template <__half, float, 16>: FP16 inputs (half the bytes), FP32 accumulation",
       [](const MatmulOperands& o, float* c, cudaStream_t st) {
         template_matmul<__half, float, 16>(o.a16, o.b16, c, o.m, o.n, o.k, st);
       },
       [] { return cudalabs::resources_of(template_matmul_kernel<__half, float, 16>, 16 * 16); },
       /*fp16_inputs=*/true},
  };
  const auto spec = matmul_spec(
      "09_template_matmul", "one kernel template, specialised at compile time (C++ for Zig's comptime)",
      "Lab 05's tiled matmul written once as template_matmul_kernel<Input, Accumulator, Tile> and instantiated\n"
      "for FP32 tiles of 8, 16 and 32 and for FP16 inputs with FP32 accumulation, each against cuBLAS SGEMM\n"
      "(FP32, no TF32) in the same run. The FP16 variant is checked against the reference of the FP16-rounded\n"
      "inputs, so its error is its own. Invalid combinations fail to compile: see compile_fail_examples.cu.",
      variants);
  return cudalabs::run_lab(argc, argv, spec, [&](cudalabs::Session& s) { run_matmul_lab(s, variants); });
}

// Lab 18 — closing the gap to cuBLAS: FP32 matrix multiply, one idea per step.
//
// C[m×n] = A[m×k] · B[k×n], row-major FP32, any m, n, k. Lab 11 stopped at 4×4
// outputs per thread on a 64×64 tile; these are the steps the original course
// planned next, each its own kernel (kernels are added, never edited), all
// measured against cuBLAS (FP32, no TF32; the fastest of its algorithms for
// each shape) in the same run:
//
//   cublas            the baseline and the ceiling: % of cuBLAS is the score
//   thread_tile_8x8   128×128 block tile, 8×8 outputs per thread (outer products
//                     from register fragments), scalar loads   thread_tile_8x8.cuh
//   float4_smem       + 16-byte global and shared accesses, A transposed in
//                     shared memory so both fragments are contiguous   float4_smem.cuh
//   conflict_free     + no bank conflicts: padded transposed A, each thread's
//                     fragment split into two 4-wide halves 64 apart   conflict_free.cuh
//   double_buffered   + two shared-memory stages: the next tile's loads overlap
//                     this tile's FMAs, one barrier per tile   double_buffered.cuh
//   warp_tiling       + 64×32 warp tiles, lanes 8×4 inside them   warp_tiling.cuh
//   warp_tiling_bk16  warp_tiling with a K tile 16 deep instead of 8   warp_tiling.cuh
//   unguarded_loop    + no edge tests in the main loop: rows and columns past
//                     the edge clamped, the k remainder in a last guarded tile
//                                                                unguarded_loop.cuh
//
// Every kernel handles any shape in one code path: out-of-range tile elements
// load as 0, stores are guarded, and 16-byte accesses fall back to scalar ones
// where a row is not 16-byte aligned (tile_io.cuh).
//
// The student's files are the step files named above and tile_io.cuh; main.cu
// reaches them only through kernels.hpp (one launcher per variant).
//
// Run: make run LAB=18    (sweep m = n = k = 256 … 8192; the benchmark is 4096³)
//      build/labs/18_matmul_cublas_gap/18_matmul_cublas_gap --size 4096 --variant warp_tiling
#include <cstdint>
#include <vector>

#include "matmul_lab.cuh"
#include "kernels.hpp"

namespace {

// Adapts a launcher of kernels.hpp to the table.
template <auto Launcher>
void launch(const MatmulOperands& o, float* c, cudaStream_t stream) {
  Launcher(o.a, o.b, c, o.m, o.n, o.k, stream);
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<MatmulVariant> variants{
      {"thread_tile_8x8", "128×128 block tile, 8×8 outputs per thread from register fragments, scalar loads",
       launch<lab18::thread_tile_8x8>, lab18::thread_tile_8x8_resources},
      {"float4_smem", "+ float4 global and shared-memory accesses, A transposed in shared memory",
       launch<lab18::float4_smem>, lab18::float4_smem_resources},
      {"conflict_free", "+ no shared-memory bank conflicts (padded A, split 4-wide fragments)",
       launch<lab18::conflict_free>, lab18::conflict_free_resources},
      {"double_buffered", "+ two shared-memory stages: next tile's loads overlap this tile's FMAs",
       launch<lab18::double_buffered>, lab18::double_buffered_resources},
      {"warp_tiling", "+ 64×32 warp tiles, 8×4 lanes per warp tile, conflict-free fragments",
       launch<lab18::warp_tiling>, lab18::warp_tiling_resources},
      {"warp_tiling_bk16", "warp_tiling with a K tile 16 deep: half the barriers per FMA",
       launch<lab18::warp_tiling_bk16>, lab18::warp_tiling_bk16_resources},
      {"unguarded_loop", "warp_tiling_bk16 with no edge tests in the main loop: clamped rows/columns, k remainder last",
       launch<lab18::unguarded_loop>, lab18::unguarded_loop_resources},
  };

  auto spec = matmul_spec(
      "18_matmul_cublas_gap", "closing the gap to cuBLAS: FP32 SGEMM one optimisation at a time",
      "From lab 11's register blocking to within reach of cuBLAS: 8×8 thread tiles, float4 accesses,\n"
      "conflict-free shared memory, double buffering and warp tiles, each step its own kernel, each reported\n"
      "as GFLOP/s and % of cuBLAS (FP32, no TF32) measured in the same run. Any m, n, k.\n"
      "The default sizes are a sweep for the plot; the benchmark is --size 4096.",
      variants);
  spec.flags.push_back(matmul_inputs_flag());  // large and tiny magnitudes (matmul_lab.cuh)
  // A sweep for the plot (m = n = k), 1024³ and 4096³ included. 8192³ is 1.1
  // TFLOP per run, tens of milliseconds per kernel: the whole sweep stays
  // within a few minutes, most of it the CPU reference and the host copies.
  const std::vector<std::int64_t> sweep{256, 512, 1024, 2048, 3072, 4096, 6144, 8192};
  for (auto& size : spec.sizes) size.full = sweep;

  return cudalabs::run_lab(argc, argv, spec, [&](cudalabs::Session& s) { run_matmul_lab(s, variants); });
}

#pragma once
// Step 3 — cp.async, a three-stage pipeline, XOR-swizzled shared memory.
//
// Step 2's block (128×256, 8 warps of 64×64), its 128-byte slices and its
// warp loop, with the global -> shared copy replaced:
//   1. cp.async copies global -> shared without the registers and without
//      waiting: a thread issues its slice's copies and goes on to its mma.
//      Step 2 held 48 registers per thread of staged chunks and, to fit
//      them, single-buffered its fragments; here the 48 registers are free,
//      and the fragments are double-buffered: the ldmatrix of k-step t+1 are
//      issued before the mma of k-step t, so a warp does not wait on its own
//      shared-memory loads (after the barrier, the first fragments of the next
//      slice load while the last k-step of this one multiplies).
//   2. Three stages instead of two buffers: slices s+1 and s+2 are in flight
//      while slice s is multiplied. One slice is 2·128·256·64 = 4.2 MFLOP,
//      ~0.9 µs on one SM at mma.sync's rate (about 2/3 of wgmma's 4096 FLOP
//      per clock, at ~1.7 GHz): two in flight cover ~1.8 µs, about twice a
//      loaded DRAM round trip.
//   3. Rows unpadded (128 bytes = 8 chunks of 16 bytes), XOR-swizzled: chunk
//      c of row r is stored at chunk c XOR (r mod 8). Unswizzled, the 8 rows
//      of one ldmatrix matrix (rows r..r+7, same chunk) would all sit in the
//      same 16-byte bank group, an 8-way conflict; swizzled, they sit at
//      chunks c^0 .. c^7: all 8 bank groups. This is exactly the 128-byte
//      swizzle that step 4's TMA writes in hardware (CU_TENSOR_MAP_SWIZZLE_128B).
//      A padded row would also avoid the conflict but cannot take whole
//      128-byte rows of cp.async at 128-byte-aligned addresses, and wastes
//      1/9 of the shared memory.
//   4. A slice's copies in two halves: each thread's 12 cp.async of slice
//      s+2 go out 6 at k-step 0 and 6 at k-step 2, between the mma, not 12
//      in one burst (~131 instructions per warp, 14% of Nsight Compute's
//      stall samples sat there: Nsight Compute, 2026-11-23, git c23f0bd).
//      Measured in one process beside cuBLAS (2026-11-23, kept in git
//      eaddd1f): one burst 0.624×, 0.633×, 0.508× cuBLAS
//      at 8192³, 4096³, 4104³; two halves 0.634×, 0.643×, 0.544×; four
//      quarters 0.573×, 0.569×, 0.489× (255 registers and 24 bytes spilled).
//
// Budgets: shared memory 3 stages × 384 rows × 128 bytes = 144 KB (dynamic,
// opted in), one block of 256 threads per SM; registers: 128 accumulators +
// 2 × 32 fragment registers + addresses, no staged chunks: 251 registers (ptxas,
// sm_90; 234 with the copies in one burst; the resources table in
// results/h100/transcripts/30_tensor_core_gemm.txt).
//
// Where rows are not 16-byte aligned (k not a multiple of 8) a chunk cannot
// be one cp.async: those shapes store chunks synchronously (gemm_tile.cuh),
// and the barrier that publishes a stage publishes them too.
#include <cstdint>
#include <utility>

#include <cudalabs/error.hpp>
#include <cudalabs/mma.cuh>

#include "gemm_tile.cuh"

namespace cp_async_step {
inline constexpr int row_bytes = 128;  // of k per row per slice: 64 FP16/BF16 elements, 4 k-steps of 32 bytes
inline constexpr int k_steps = row_bytes / 32;
inline constexpr int chunks_per_row = row_bytes / 16;
static_assert(chunks_per_row == 8, "the XOR below spreads 8 rows of 8 chunks over the 8 bank groups");
static_assert(k_steps >= 2 && k_steps % 2 == 0,
              "a slice's last k-step uses fragment buffer 1 while the next slice's first loads into buffer 0");

// The block's warps (gemm_tile.cuh's WarpGrid), the stages, the parts a
// slice's copies are issued in (item 4), and what follows.
template <typename Grid, int Stages, int CopyParts = 2>
struct Config : Grid {
  static constexpr int stages = Stages;
  static constexpr int copy_parts = CopyParts;
  static constexpr int stage_bytes = (Grid::tile_m + Grid::tile_n) * row_bytes;
  static constexpr int smem_bytes = stages * stage_bytes;
  static constexpr int a_loads = Grid::tile_m * chunks_per_row / Grid::threads;  // 16-byte chunks per thread per slice
  static constexpr int loads = (Grid::tile_m + Grid::tile_n) * chunks_per_row / Grid::threads;
  static_assert(Grid::tile_m * chunks_per_row % Grid::threads == 0 &&
                    loads * Grid::threads == (Grid::tile_m + Grid::tile_n) * chunks_per_row,
                "every thread copies the same number of 16-byte chunks of A and of B");
  static_assert(loads % copy_parts == 0 && k_steps % copy_parts == 0, "the copies split evenly over the k-steps");
  static_assert(Grid::threads % chunks_per_row == 0, "a thread copies the same chunk of every row it copies");
};
// 8 warps (2×4) of 64×64, a 128×256 tile, 3 stages, copies in 2 parts.
using Default = Config<WarpGrid<2, 4, 4, 4>, 3>;

template <int V>
using constant = std::integral_constant<int, V>;  // a compile-time int passed as an argument

// f(constant<0>{}) ... f(constant<N - 1>{}), in order: a loop whose index is
// a compile-time constant in the body.
template <typename F, int... I>
__device__ __forceinline__ void static_for_impl(F&& f, std::integer_sequence<int, I...>) {
  (f(constant<I>{}), ...);
}
template <int N, typename F>
__device__ __forceinline__ void static_for(F&& f) {
  static_for_impl(f, std::make_integer_sequence<int, N>{});
}

// Byte offset of chunk `unit` of row `row` in a stage: chunk unit XOR (row mod 8).
struct SwizzledRows {
  __device__ int operator()(int row, int unit) const { return row * row_bytes + 16 * (unit ^ (row & 7)); }
};
}  // namespace cp_async_step

template <typename T, typename S = cp_async_step::Default>
__global__ void __launch_bounds__(S::threads, 1)
    gemm_cp_async_kernel(const T* __restrict__ a, const T* __restrict__ b, float* __restrict__ c, int m, int n, int k,
                         bool a_aligned, bool b_aligned) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  // BEGIN SOLUTION cp_async_pipeline
  using namespace cp_async_step;
  constexpr int stages = S::stages, tile_m = S::tile_m, tile_n = S::tile_n;
  constexpr int slice_k = row_bytes / static_cast<int>(sizeof(T));
  extern __shared__ uint4 smem_u4[];  // uint4: 16-byte alignment for cp.async and ldmatrix
  unsigned char* smem = reinterpret_cast<unsigned char*>(smem_u4);

  const int tid = static_cast<int>(threadIdx.x), warp = tid / 32;
  const int warp_row = S::row_of(warp), warp_col = S::col_of(warp);
  const TileCoord tile = tile_of_block(static_cast<int>(blockIdx.x), cudalabs::ceil_div(m, tile_m),
                                       cudalabs::ceil_div(n, tile_n), tile_m, tile_n);
  const int slices = cudalabs::ceil_div(k, slice_k);
  // This thread copies chunk `part` of stage rows first_row + row_step·i (A's
  // tile_m rows, then B's): gemm_tile.cuh's SliceCopies. row_step is a
  // multiple of 8, so all those rows share one swizzle: in a stage they lie
  // row_step·128 bytes apart from the first one's chunk.
  const int part = tid % chunks_per_row, first_row = tid / chunks_per_row;
  constexpr int row_step = S::threads / chunks_per_row;
  static_assert(row_step % 8 == 0, "the rows a thread copies share one swizzle");
  const SliceCopies<T, S::loads, S::a_loads, row_step> copies(a, b, m, n, k, tile, first_row, part);
  const int chunk0 = SwizzledRows{}(first_row, part);

  // Stage i of the ring. Which stage a slice uses is counted along (next),
  // not computed as slice % stages: a division by 3 is a multiply-high and a
  // multiply-subtract, in every slice of every warp.
  auto stage = [&](int i) { return smem + i * S::stage_bytes; };
  auto next = [](int i) { return i + 1 == stages ? 0 : i + 1; };
  // Issues this thread's copies First .. First + Count - 1 of slice s (two
  // compile-time constants) into stage `into`; no wait.
  auto issue_copies = [&](auto first, auto count, int s, int into) {
    constexpr int First = decltype(first)::value, Count = decltype(count)::value;
    unsigned char* dst = stage(into) + chunk0;
    if (a_aligned && b_aligned) {
      copies.template for_each_aligned_part<First, Count>(s * slice_k, k, [&](int i, const T* src, bool inside) {
        cudalabs::ptx::cp_async_16(dst + i * row_step * row_bytes, inside ? src : a, inside ? 16 : 0);  // 0: zeros
      });
    } else {  // k % 8 != 0: element by element, stored synchronously
#pragma unroll
      for (int i = First; i < First + Count; ++i)
        *reinterpret_cast<uint4*>(dst + i * row_step * row_bytes) =
            copies.load_unaligned(i, s * slice_k, a, b, m, n, k);
    }
  };
  constexpr int per_part = S::loads / S::copy_parts, steps_per_part = k_steps / S::copy_parts;
  using Fragments = typename S::Fragments;
  const LaneOffsets<k_steps> lane_at(warp_row, warp_col, SwizzledRows{});
  auto load = [&](Fragments& f, int from, int step) {
    const unsigned char* as = stage(from);
    load_fragments<T>(f, as, as + tile_m * row_bytes, lane_at, step, row_bytes);
  };

  // Prologue: stages - 1 slices in flight. Every slice commits one group,
  // empty or not, so that "slice s has landed" is always "at most stages - 2
  // groups pending" once s + stages - 1 groups are committed.
#pragma unroll
  for (int s = 0; s < stages - 1; ++s) {
    if (s < slices) issue_copies(constant<0>{}, constant<S::loads>{}, s, s);  // the whole slice
    cudalabs::ptx::cp_async_commit();
  }
  cudalabs::ptx::cp_async_wait<stages - 2>();  // slice 0 has landed (this thread's copies)
  __syncthreads();                             // ... everyone's

  typename S::Accumulators acc = {};
  Fragments frag[2];
  int read = 0, write = stages - 1;  // the stages of slice s and of slice s + stages - 1
  load(frag[0], read, 0);
  for (int s = 0; s < slices; ++s) {
    const bool refill = s + stages - 1 < slices;
    static_for<k_steps>([&](auto step_tag) {
      constexpr int step = decltype(step_tag)::value;
      // Refill the stage slice s-1 used, one share every steps_per_part k-steps:
      // all its fragments were loaded before the barrier at the end of slice s-1.
      if constexpr (step % steps_per_part == 0)
        if (refill) issue_copies(constant<step / steps_per_part * per_part>{}, constant<per_part>{}, s + stages - 1, write);
      if (step == (S::copy_parts - 1) * steps_per_part) {  // the slice's last share is out
        cudalabs::ptx::cp_async_commit();  // one group per slice, empty or not
        write = next(write);
      }
      if (step + 1 < k_steps) {
        load(frag[(step + 1) % 2], read, step + 1);
      } else {
        cudalabs::ptx::cp_async_wait<stages - 2>();  // slice s+1 has landed (this thread's copies) ...
        __syncthreads();  // ... and everyone's; and every warp is done loading from slice s's stage
        read = next(read);
        if (s + 1 < slices) load(frag[(step + 1) % 2], read, 0);
      }
      mma_fragments<T>(acc, frag[step % 2]);
    });
  }
  cudalabs::ptx::cp_async_wait<0>();  // no copy may outlive the block (they are all empty by now)
  store_warp_tile(c, m, n, tile.row0 + warp_row, tile.col0 + warp_col, acc);
  // END SOLUTION
  // STUB: // TODO: mma_ldmatrix's warp tiling with a 3-stage cp.async pipeline of 128-byte k slices in XOR-swizzled rows:
  // STUB: // keep two slices in flight (cp.async.commit_group / wait_group) while the warps compute on the third,
  // STUB: // each slice's copies issued in two shares between the mma of its k-steps.
#else
  (void)a, (void)b, (void)c, (void)m, (void)n, (void)k, (void)a_aligned, (void)b_aligned;
  __trap();  // never launched: the host checks for compute capability 8.0 first
#endif
}

template <typename T, typename S = cp_async_step::Default>
void gemm_cp_async_prepare() {
  opt_in_shared_memory_once<gemm_cp_async_kernel<T, S>, S::smem_bytes>();
}

template <typename T, typename S = cp_async_step::Default>
void gemm_cp_async_pipeline(const T* a, const T* b, float* c, int m, int n, int k, cudaStream_t stream) {
  // BEGIN SOLUTION cp_async_pipeline
  gemm_cp_async_prepare<T, S>();
  gemm_cp_async_kernel<T, S><<<tile_grid(m, n, S::tile_m, S::tile_n), S::threads, S::smem_bytes, stream>>>(
      a, b, c, m, n, k, rows_are_16_byte_aligned(a, k), rows_are_16_byte_aligned(b, k));
  CUDALABS_CHECK_LAUNCH("gemm_cp_async_kernel");
  // END SOLUTION
  // STUB: cudalabs::not_implemented("gemm_cp_async_pipeline", a, b, c, m, n, k, stream);
}

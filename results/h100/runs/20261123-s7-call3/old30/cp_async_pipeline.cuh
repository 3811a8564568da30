#pragma once
// Step 3 — cp.async, a three-stage pipeline, XOR-swizzled shared memory.
//
// Step 2's block (128×256, 8 warps of 64×64) and warp loop (double-buffered
// fragments), with the global -> shared copy replaced:
//   1. cp.async copies global -> shared without the registers and without
//      waiting: a thread issues its slice's copies and goes on to its mma.
//      Step 2 held 24 registers per thread of staged chunks per 64 bytes of
//      k; here a slice can be twice as deep (64 elements, 128 bytes per row,
//      4 k-steps) at no register cost, and half the barriers: one per 128
//      mma per warp instead of one per 64.
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
//
// Budgets: shared memory 3 stages × 384 rows × 128 bytes = 144 KB (dynamic,
// opted in), one block of 256 threads per SM; registers: 128 accumulators +
// 2 × 32 fragment registers + addresses, no staged chunks: 252 registers on the
// H100 (the resources table in results/h100/transcripts/30_tensor_core_gemm.txt).
//
// Where rows are not 16-byte aligned (k not a multiple of 8) a chunk cannot
// be one cp.async: those shapes store chunks synchronously (gemm_tile.cuh),
// and the barrier that publishes a stage publishes them too.
#include <cstdint>

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

// The block's warps (gemm_tile.cuh's WarpGrid), the stages, and what follows.
template <typename Grid, int Stages>
struct Config : Grid {
  static constexpr int stages = Stages;
  static constexpr int stage_bytes = (Grid::tile_m + Grid::tile_n) * row_bytes;
  static constexpr int smem_bytes = stages * stage_bytes;
  static constexpr int a_loads = Grid::tile_m * chunks_per_row / Grid::threads;  // 16-byte chunks per thread per slice
  static constexpr int loads = (Grid::tile_m + Grid::tile_n) * chunks_per_row / Grid::threads;
  static_assert(Grid::tile_m * chunks_per_row % Grid::threads == 0 &&
                    loads * Grid::threads == (Grid::tile_m + Grid::tile_n) * chunks_per_row,
                "every thread copies the same number of 16-byte chunks of A and of B");
  static_assert(Grid::threads % chunks_per_row == 0, "a thread copies the same chunk of every row it copies");
};
// 8 warps (2×4) of 64×64, a 128×256 tile, 3 stages.
using Default = Config<WarpGrid<2, 4, 4, 4>, 3>;

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

  auto stage = [&](int slice) { return smem + (slice % stages) * S::stage_bytes; };
  // Issues the copies of slice s into its stage; no wait.
  auto load_slice = [&](int s) {
    unsigned char* dst = stage(s) + chunk0;
    if (a_aligned && b_aligned) {
      copies.for_each_aligned(s * slice_k, k, [&](int i, const T* src, bool inside) {
        cudalabs::ptx::cp_async_16(dst + i * row_step * row_bytes, inside ? src : a, inside ? 16 : 0);  // 0: zeros
      });
    } else {  // k % 8 != 0: element by element, stored synchronously
#pragma unroll
      for (int i = 0; i < S::loads; ++i)
        *reinterpret_cast<uint4*>(dst + i * row_step * row_bytes) =
            copies.load_unaligned(i, s * slice_k, a, b, m, n, k);
    }
  };
  using Fragments = typename S::Fragments;
  const LaneOffsets<k_steps> lane_at(warp_row, warp_col, SwizzledRows{});
  auto load = [&](Fragments& f, int slice, int step) {
    const unsigned char* as = stage(slice);
    load_fragments<T>(f, as, as + tile_m * row_bytes, lane_at, step, row_bytes);
  };

  // Prologue: stages - 1 slices in flight. Every slice commits one group,
  // empty or not, so that "slice s has landed" is always "at most stages - 2
  // groups pending" once s + stages - 1 groups are committed.
#pragma unroll
  for (int s = 0; s < stages - 1; ++s) {
    if (s < slices) load_slice(s);
    cudalabs::ptx::cp_async_commit();
  }
  cudalabs::ptx::cp_async_wait<stages - 2>();  // slice 0 has landed (this thread's copies)
  __syncthreads();                             // ... everyone's

  typename S::Accumulators acc = {};
  Fragments frag[2];
  load(frag[0], 0, 0);
  for (int s = 0; s < slices; ++s) {
#pragma unroll
    for (int step = 0; step < k_steps; ++step) {
      if (step == 0) {
        // Refill the stage slice s-1 used: all its fragments were loaded
        // before the barrier at the end of slice s-1.
        if (s + stages - 1 < slices) load_slice(s + stages - 1);
        cudalabs::ptx::cp_async_commit();
      }
      if (step + 1 < k_steps) {
        load(frag[(step + 1) % 2], s, step + 1);
      } else {
        cudalabs::ptx::cp_async_wait<stages - 2>();  // slice s+1 has landed (this thread's copies) ...
        __syncthreads();  // ... and everyone's; and every warp is done loading from slice s's stage
        if (s + 1 < slices) load(frag[(step + 1) % 2], s + 1, 0);
      }
      mma_fragments<T>(acc, frag[step % 2]);
    }
  }
  cudalabs::ptx::cp_async_wait<0>();  // no copy may outlive the block (they are all empty by now)
  store_warp_tile(c, m, n, tile.row0 + warp_row, tile.col0 + warp_col, acc);
  // END SOLUTION
  // STUB: // TODO: mma_ldmatrix's warp tiling with a 3-stage cp.async pipeline of 128-byte k slices in XOR-swizzled rows:
  // STUB: // keep two slices in flight (cp.async.commit_group / wait_group) while the warps compute on the third.
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

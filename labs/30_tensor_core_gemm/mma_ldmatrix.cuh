#pragma once
// Step 2 — mma.sync.m16n8k16 with ldmatrix: the instruction WMMA compiles to,
// with the fragments in the open.
//
// Knowing the fragment layouts (cudalabs/mma.cuh) allows what WMMA hides: a
// warp owns 64×64 of C (4×8 accumulators of 16×8, 128 floats per thread), and
// per 16-wide k-step loads A's fragments with 4 ldmatrix.x4 and B's with 4
// more, then issues 32 mma.sync — 8 shared-memory instructions per 32
// tensor-core instructions, where step 1's 32×32 warp tile needed one
// fragment load per mma (gemm_tile.cuh: WarpFragments, load_fragments,
// mma_fragments). The accumulators go straight to C, guarded.
//
// The block: 8 warps (2×4), a 128×256 tile of C. Per slice of k it reads
// 384 operand rows for 32768 outputs: 85 outputs per row read, against 64
// for a 128×128 tile (L2 → SM traffic is what a bigger tile saves).
//
// The pipeline is lab 18's double buffering, in registers — no cp.async yet
// (step 3): two shared-memory buffers; the global loads of slice s+2 are
// issued right after slice s+1 is stored to shared memory, so one whole
// slice of mma covers their latency; one barrier per slice. How deep a slice
// is decides how much latency that is: 64 bytes of k (2 k-steps, 64 mma per
// warp) was too little — the stores to shared memory waited on their loads
// (STS stalled on the long scoreboard: 23% of Nsight Compute's samples at
// git c23f0bd) and the step ran at 0.41× cuBLAS; 128 bytes (4 k-steps, 128
// mma per warp) covers twice the latency with half the barriers: 0.54× (both
// builds beside cuBLAS in one process, 2026-11-23, git 104780b;
// results/h100/notes/30_tensor_core_gemm.md).
//
// The price is registers: a 128-byte slice stages 12 chunks of 16 bytes per
// thread (48 registers). To fit, the fragments are single-buffered: a warp
// loads k-step t's fragments, then multiplies them, and the scheduler's other
// warp multiplies while it waits on its ldmatrix (2 warps per scheduler).
// Double-buffered fragments (32 more registers) were no faster in the bare
// fragment loop (2026-11-23, git 4b464ee), and with a 128-byte
// slice they would spill.
//
// Budgets (ptxas, sm_90): registers — 128 accumulators + 32 fragment
// registers + 48 of staged chunks + addresses: 252 registers, no spill (the
// resources table in results/h100/transcripts/30_tensor_core_gemm.txt);
// shared memory — 2 buffers × 384 rows × 144 bytes = 108 KB (dynamic, opted
// in above 48 KB). One block of 256 threads per SM: 8 warps, 2 per scheduler.
//
// Shared-memory layout of one buffer: A rows 0-127 then B rows 0-255, each row
// 128 bytes of k (64 FP16/BF16 elements, 32 TF32) padded to 144 bytes: the
// 8 row addresses of one ldmatrix matrix are 144 bytes apart, 8 distinct
// 16-byte bank groups (144 = 9 × 16, 9 odd): no bank conflict.
//
// The kernel is written in bytes of k, not elements, so that tf32_mma.cuh
// runs the same kernel on floats: 32 bytes of k is one m16n8k16 step on
// 16-bit inputs and one m16n8k8 step on TF32 — the fragments are the same
// bytes in the same registers.
#include <cstdint>

#include <cudalabs/error.hpp>
#include <cudalabs/mma.cuh>

#include "gemm_tile.cuh"

namespace mma_ldmatrix_step {
inline constexpr int slice_bytes = 128;             // of k per row per slice: four 32-byte k-steps
inline constexpr int k_steps = slice_bytes / 32;
inline constexpr int row_bytes = slice_bytes + 16;  // padded: 9 bank groups of 16 bytes
inline constexpr int chunks_per_row = slice_bytes / 16;
static_assert((row_bytes / 16) % 2 == 1, "an odd number of 16-byte units per row keeps ldmatrix conflict-free");

// The block's warps (gemm_tile.cuh's WarpGrid) and what follows from them.
template <typename Grid>
struct Config : Grid {
  static constexpr int buffer_bytes = (Grid::tile_m + Grid::tile_n) * row_bytes;  // 54 KB
  static constexpr int smem_bytes = 2 * buffer_bytes;                             // 108 KB
  static constexpr int a_loads = Grid::tile_m * chunks_per_row / Grid::threads;  // 16-byte chunks per thread per slice
  static constexpr int loads = (Grid::tile_m + Grid::tile_n) * chunks_per_row / Grid::threads;
  static_assert(Grid::tile_m * chunks_per_row % Grid::threads == 0 &&
                    loads * Grid::threads == (Grid::tile_m + Grid::tile_n) * chunks_per_row,
                "every thread loads the same number of 16-byte chunks of A and of B");
};
// 8 warps (2×4) of 64×64: a 128×256 tile.
using Default = Config<WarpGrid<2, 4, 4, 4>>;

// Byte offset of 16-byte unit `unit` of row `row` in a buffer.
struct PaddedRows {
  __device__ int operator()(int row, int unit) const { return row * row_bytes + 16 * unit; }
};
}  // namespace mma_ldmatrix_step

template <typename T, typename S = mma_ldmatrix_step::Default>
__global__ void __launch_bounds__(S::threads, 1)
    gemm_mma_ldmatrix_kernel(const T* __restrict__ a, const T* __restrict__ b, float* __restrict__ c, int m, int n,
                             int k, bool a_aligned, bool b_aligned) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  // BEGIN SOLUTION mma_ldmatrix tf32_mma
  using namespace mma_ldmatrix_step;
  constexpr int tile_m = S::tile_m, tile_n = S::tile_n, threads = S::threads, loads = S::loads;
  constexpr int slice_k = slice_bytes / static_cast<int>(sizeof(T));  // elements of k per slice
  extern __shared__ uint4 smem_u4[];  // uint4: 16-byte alignment for the chunks and ldmatrix
  unsigned char* smem = reinterpret_cast<unsigned char*>(smem_u4);

  const int tid = static_cast<int>(threadIdx.x), warp = tid / 32;
  const int warp_row = S::row_of(warp), warp_col = S::col_of(warp);
  const TileCoord tile = tile_of_block(static_cast<int>(blockIdx.x), cudalabs::ceil_div(m, tile_m),
                                       cudalabs::ceil_div(n, tile_n), tile_m, tile_n);

  // Slice s of A's and B's tiles, from global memory into registers, zeros
  // outside the matrices; then from the registers into a buffer. This thread
  // moves chunk `part` of rows first_row + row_step·i (gemm_tile.cuh's
  // SliceCopies); padded rows are row_bytes apart, so in a buffer its chunks
  // lie row_step·row_bytes apart from the first one.
  const int part = tid % chunks_per_row, first_row = tid / chunks_per_row;
  constexpr int row_step = threads / chunks_per_row;
  const SliceCopies<T, loads, S::a_loads, row_step> copies(a, b, m, n, k, tile, first_row, part);
  const int chunk0 = PaddedRows{}(first_row, part);
  uint4 staged[loads];
  auto fetch = [&](int slice) {
    if (a_aligned && b_aligned) {
      copies.for_each_aligned(slice * slice_k, k, [&](int i, const T* src, bool inside) {
        staged[i] = inside ? __ldg(reinterpret_cast<const uint4*>(src)) : make_uint4(0, 0, 0, 0);
      });
    } else {
#pragma unroll
      for (int i = 0; i < loads; ++i) staged[i] = copies.load_unaligned(i, slice * slice_k, a, b, m, n, k);
    }
  };
  auto stash = [&](unsigned char* buffer) {
#pragma unroll
    for (int i = 0; i < loads; ++i)
      *reinterpret_cast<uint4*>(buffer + chunk0 + i * row_step * row_bytes) = staged[i];
  };
  auto buffer = [&](int slice) { return smem + (slice & 1) * S::buffer_bytes; };
  using Fragments = typename S::Fragments;
  const LaneOffsets<k_steps> lane_at(warp_row, warp_col, PaddedRows{});
  auto load = [&](Fragments& f, int slice, int step) {
    const unsigned char* as = buffer(slice);
    load_fragments<T>(f, as, as + tile_m * row_bytes, lane_at, step, row_bytes);
  };

  typename S::Accumulators acc = {};
  Fragments frag;
  const int slices = cudalabs::ceil_div(k, slice_k);
  fetch(0);
  stash(buffer(0));
  if (slices > 1) fetch(1);  // in flight during slice 0
  __syncthreads();
  for (int s = 0; s < slices; ++s) {
#pragma unroll
    for (int step = 0; step < k_steps; ++step) {
      load(frag, s, step);
      if (step + 1 == k_steps) {
        // Slice s's last fragments are in registers: publish slice s+1 and
        // put slice s+2 in flight. The other buffer was last read (slice
        // s-1's fragments) before the previous barrier.
        if (s + 1 < slices) stash(buffer(s + 1));
        if (s + 2 < slices) fetch(s + 2);
        __syncthreads();
      }
      mma_fragments<T>(acc, frag);
    }
  }
  store_warp_tile(c, m, n, tile.row0 + warp_row, tile.col0 + warp_col, acc);
  // END SOLUTION
  // STUB: // TODO: 128×256 tile, 8 warps of 64×64 (WarpFragments); slices of 128 bytes of k in padded rows, two buffers: the next
  // STUB: // slice's loads into registers while mma.sync runs on this one (load_fragments, mma_32_bytes_of_k); store C.
#else
  (void)a, (void)b, (void)c, (void)m, (void)n, (void)k, (void)a_aligned, (void)b_aligned;
  __trap();  // never launched: the host checks for compute capability 8.0 first
#endif
}

template <typename T, typename S = mma_ldmatrix_step::Default>
void gemm_mma_ldmatrix_prepare() {
  opt_in_shared_memory_once<gemm_mma_ldmatrix_kernel<T, S>, S::smem_bytes>();
}

template <typename T, typename S = mma_ldmatrix_step::Default>
void gemm_mma_ldmatrix(const T* a, const T* b, float* c, int m, int n, int k, cudaStream_t stream) {
  // BEGIN SOLUTION mma_ldmatrix tf32_mma
  gemm_mma_ldmatrix_prepare<T, S>();
  gemm_mma_ldmatrix_kernel<T, S><<<tile_grid(m, n, S::tile_m, S::tile_n), S::threads, S::smem_bytes, stream>>>(
      a, b, c, m, n, k, rows_are_16_byte_aligned(a, k), rows_are_16_byte_aligned(b, k));
  CUDALABS_CHECK_LAUNCH("gemm_mma_ldmatrix_kernel");
  // END SOLUTION
  // STUB: cudalabs::not_implemented("gemm_mma_ldmatrix", a, b, c, m, n, k, stream);
}

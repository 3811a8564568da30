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
// The block: 8 warps (2×4), a 128×256 tile of C. Per 32-element slice of k it
// reads 384 operand rows for 32768 outputs: 85 outputs per row read, against
// 64 for a 128×128 tile (L2 → SM traffic is what a bigger tile saves).
//
// The pipeline is lab 18's double buffering, in registers — no cp.async yet
// (step 3): two shared-memory buffers; the global loads of slice s+2 are
// issued right after slice s+1 is stored to shared memory, so a whole slice
// of mma (2 k-steps × 32 mma × 8 warps) covers their latency; one barrier
// per slice. And the fragments are double-buffered too: the ldmatrix of
// k-step t+1 are issued before the mma of k-step t, so a warp never waits on
// its own shared-memory loads (after the barrier, the first fragments of the
// next slice load while the last k-step of this one multiplies).
//
// Budgets (ptxas, sm_90): registers — 128 accumulators + 2 × 32 fragment
// registers + 6 × 4 of staged 16-byte chunks + addresses: 255 registers and
// 32 bytes spilled (results/h100/transcripts/30_tensor_core_gemm.txt); shared memory — 2 buffers × 384 rows × 80 bytes = 60 KB
// (dynamic, opted in above 48 KB). One block of 256 threads per SM: 8 warps,
// 2 per scheduler.
//
// Shared-memory layout of one buffer: A rows 0-127 then B rows 0-255, each row
// 64 bytes of k (32 FP16/BF16 elements, 16 TF32) padded to 80 bytes: the
// 8 row addresses of one ldmatrix matrix are 80 bytes apart, 8 distinct
// 16-byte bank groups (80 = 5 × 16, 5 odd): no bank conflict.
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
inline constexpr int slice_bytes = 64;              // of k per row per slice: two 32-byte k-steps
inline constexpr int k_steps = slice_bytes / 32;
inline constexpr int row_bytes = slice_bytes + 16;  // padded: 5 bank groups of 16 bytes
inline constexpr int chunks_per_row = slice_bytes / 16;
static_assert((row_bytes / 16) % 2 == 1, "an odd number of 16-byte units per row keeps ldmatrix conflict-free");
static_assert(k_steps % 2 == 0, "the last k-step of a slice uses fragment buffer 1, the next slice's first buffer 0");

// The block's warps (gemm_tile.cuh's WarpGrid) and what follows from them.
template <typename Grid>
struct Config : Grid {
  static constexpr int buffer_bytes = (Grid::tile_m + Grid::tile_n) * row_bytes;  // 30 KB
  static constexpr int smem_bytes = 2 * buffer_bytes;                             // 60 KB
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
  Fragments frag[2];
  const int slices = cudalabs::ceil_div(k, slice_k);
  fetch(0);
  stash(buffer(0));
  if (slices > 1) fetch(1);  // in flight during slice 0
  __syncthreads();
  load(frag[0], 0, 0);
  for (int s = 0; s < slices; ++s) {
#pragma unroll
    for (int step = 0; step < k_steps; ++step) {
      if (step + 1 < k_steps) {
        load(frag[(step + 1) % 2], s, step + 1);
      } else {
        // Publish slice s+1 and put slice s+2 in flight. The other buffer was
        // last read (slice s-1's fragments) before the previous barrier.
        if (s + 1 < slices) stash(buffer(s + 1));
        if (s + 2 < slices) fetch(s + 2);
        __syncthreads();
        if (s + 1 < slices) load(frag[0], s + 1, 0);
      }
      mma_fragments<T>(acc, frag[step % 2]);
    }
  }
  store_warp_tile(c, m, n, tile.row0 + warp_row, tile.col0 + warp_col, acc);
  // END SOLUTION
  // STUB: // TODO: 128×256 tile, 8 warps of 64×64 (WarpFragments); slices of 64 bytes of k in padded rows, two buffers: the next
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

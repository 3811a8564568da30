#pragma once
// Step 4 — Hopper: TMA loads, wgmma, warp-specialised producer and consumers.
//
// A block of 3 warpgroups (384 threads) computes 128×256 tiles of C (for
// m <= 128, 128 × N or 64 × N tiles of Cᵀ: "Skinny tiles", below), one after another
// (one block per SM: "persistent", below):
//   - warpgroup 0, the producer: one thread issues, per 64-wide slice of k,
//     two TMA loads (A[128×64], B[256×64]: 48 KB) into a free stage of a
//     4-stage ring, announcing the bytes on that stage's "full" mbarrier. It
//     computes no address and moves no byte: the TMA unit does, from a tensor
//     map (the matrix's shape, strides and the tile's box, encoded on the host).
//   - warpgroups 1 and 2, the consumers: each owns 64 rows of the tile, and per
//     slice waits for "full", issues 4 wgmma.m64n256k16 (the whole 64-wide
//     slice) reading A and B straight from shared memory through descriptors —
//     no ldmatrix, no fragments in registers but the accumulators — then
//     arrives on the stage's "empty" mbarrier to hand it back.
// No __syncthreads in the loop: the mbarriers are the only synchronisation,
// each stage's pair of them a one-slot queue between the producer and the
// consumers.
//
// What each piece removes (README.md has the numbers):
//   TMA      the address arithmetic, bounds checks and 16-byte copies of
//            steps 2-3 (6 cp.async per thread per slice), and the zero
//            padding of edge tiles (TMA fills outside the matrix with zeros);
//   wgmma    the ldmatrix traffic (steps 2-3: 8 per 32 mma per warp) and half
//            the issue slots: one instruction is 64×256×16, 64 mma.sync's work,
//            and runs at Hopper's full tensor rate (mma.sync does not);
//   warp specialisation: the consumers never wait on their own loads, and
//            setmaxnreg moves registers from the producer (40) to the
//            consumers (232) for their 128 accumulators.
//
// Persistent blocks: the grid is one block per SM, each walking its share of
// the tiles, the ring running on from one tile to the next — the producer
// loads the next tile's first slices while the consumers store this one. One
// block per tile paid, per tile, a block launch, an empty ring and a store
// with nothing to overlap it: measured on the H100 (2026-11-23, git d814a42
// against it + persistent blocks, alternated), 1.505 -> 1.500 ms at 8192³,
// 0.206 -> 0.197-0.202 ms at 4096³ (FP16).
//
// Split-K, for shapes with fewer tiles than SMs (decode-like m = 16 .. 128:
// n = 4096 is 16 tiles for 132 SMs): a work unit is a tile and one range of
// its k slices, the units' partial sums added into C with atomics (8-byte
// float2 atomics where n is even: half as many as one float each) after the
// launcher zeroes C. m = 16, n = k = 4096 went from 0.047 to 0.027-0.029 ms;
// m = 128, n = k = 4096 from 0.047-0.049 to 0.030-0.031 ms (2026-11-23, git
// c51973b and b6d65e6). The sums' order then depends on timing: C may
// differ from run to run in the last bits (the check's tolerance is for any
// order).
//
// Skinny tiles, for m <= 128 (decode: a few rows of activations times a
// weight matrix): a 128×256 tile of C has at most m of its 128 rows in the
// matrix — TMA fills the rest with zeros, which the tensor cores multiply
// (7/8 of the work at m = 16) — and a 48 KB stage holds 16 KB of A, mostly
// zeros. So the block computes Cᵀ = B·Aᵀ instead, in 128 × N tiles, N = 16,
// 32, 64 or 128, the first at or above m: 128 rows of B are wgmma's M, the
// m rows of A its N (m64nNk16), nothing multiplied twice, and the stages
// shrink to 18-32 KB, so 6 to 12 of them fit (TileShape). Only the store
// differs: element (r, c) of Cᵀ goes to C[c][r]. Measured on the H100, CUDA-
// graph times (2026-11-24, git 6367398 against dec8889's tiles, alternated
// three times): m = 16, n = k = 4096: 17.2-17.3 -> 9.9-10.2 µs
// (cuBLAS 8.3-8.6); m = 64: 16.7-17.5 -> 12.5; m = 128: 20.4-20.9 ->
// 16.0-16.3 (cuBLAS 11.2-11.7); n = k = 8192, m = 16: 54.5-55.3 -> 49.5-50.4
// (cuBLAS 48.3-49.0); m = 128: 65.2-65.9 -> 59.0-59.1 (cuBLAS 51.3-52.8).
// It stops at N = 128: SkinnyTile<128, 256> would be the wide tile turned
// round. Where 128-row tiles are too few to fill the SMs and would be split,
// 64-row tiles (the two consumers side by side, N / 2 columns each), twice as
// many, need a smaller split or none: skinny_tile_for says when, with the
// numbers.
//
// Pairs of CTAs (a cluster of two) where the tile rows pair up and there is
// no split: the two blocks compute tiles one above the other and need the
// same 256 rows of B per slice, so each loads its own A and half of B and
// multicasts that half into both (TMA multicast: L2 sends each block 32 KB
// per slice instead of 48). A stage is refilled only when the consumers of
// both blocks have released it: the "empty" barriers count both blocks'
// warps. Measured on the H100 (2026-11-23, git 2728c0c against 7cc5a25): 8192³
// FP16 1.4788 -> 1.4772 ms (medians of three), BF16 1.4276 -> 1.4088 ms; L2
// throughput 69% -> 65%. A small gain: the kernel was not waiting on L2.
//
// Shared memory: 4 stages × 48 KB + 1 KB for alignment = 193 KB (skinny
// tiles: 192 to 216 KB of stages), one block per SM. The layout is TMA's 128-byte swizzle (cudalabs/hopper.cuh), which the
// wgmma descriptors name: rows of 64 elements = 128 bytes, 16-byte chunk c of
// row r stored at c XOR (r mod 8) — step 3's idea, done by the hardware.
//
// TMA needs the row pitch (k elements) to be a multiple of 16 bytes: for k not
// a multiple of 8 the launcher first copies A and B into buffers with k
// rounded up, zero-padded (cudalabs::stream_alloc: stream-ordered, from a
// pool that keeps its memory between calls; freed after the product) — an
// extra pass over the inputs on such shapes only.
//
// Compiled only for sm_90a (kernels_hopper.cu); elsewhere the kernel body is
// empty and the host never launches it (lab30::wgmma_tma_unavailable).
#include <algorithm>
#include <cstdint>

#include <cuda/atomic>

#include <cudalabs/device.hpp>
#include <cudalabs/error.hpp>
#include <cudalabs/hopper.cuh>
#include <cudalabs/memory.hpp>

#include "gemm_tile.cuh"

namespace wgmma_step {
inline constexpr int tile_k = 64;  // 128 bytes, one swizzle row
inline constexpr int min_split_slices = 4;  // split-K: at least 256 of k per unit, 4 slices to fill the ring
inline constexpr int consumers = 2;  // warpgroups, 64 rows of the tile each
inline constexpr int threads = 128 * (1 + consumers);
inline constexpr int ring_bytes = 216 * 1024;  // of the 227 KB a block may have: the stages, as many as fit

// The tile a block computes, Rows × Cols of the product, and the ring that
// feeds it. Each consumer warpgroup computes 64 rows (wgmma's M) by
// consumer_cols (wgmma's N) of it: Rows = 128, the two one above the other;
// Rows = 64, side by side, Cols / 2 columns each.
//   WideTile: 128 × 256 tiles of C, 4 stages of 48 KB.
//   SkinnyTile<Rows, N> (m <= 128, decode-like): Rows × N tiles of Cᵀ =
//     B·Aᵀ — the product's short side is wgmma's N, not its M of 128 rows
//     that TMA would fill with zeros past m and the tensor cores multiply;
//     stages of 12 to 32 KB, 18 to 6 of them, where the wide tile has 4 of
//     48 KB. Rows = 64 halves the tile where 128-row tiles would leave SMs
//     idle (skinny_tile_for).
// Since A and B are both stored K-major, Cᵀ = B·Aᵀ is the same product with
// the matrices swapped: only the store of C differs (store_transposed_16x8).
template <int Rows, int Cols, bool Transposed>
struct TileShape {
  static_assert(Rows == 64 * consumers || Rows == 64, "consumers one above the other, or side by side");
  static constexpr int rows = Rows, cols = Cols;
  static constexpr bool transposed = Transposed, side_by_side = Rows == 64;
  static constexpr int consumer_cols = side_by_side ? Cols / consumers : Cols;  // wgmma's N
  static constexpr int row_stage_bytes = rows * tile_k * 2;  // 16 KB for 128 rows
  static constexpr int col_stage_bytes = cols * tile_k * 2;  // 32 KB for 256 columns, 2 KB for 16
  static constexpr int stage_bytes = row_stage_bytes + col_stage_bytes;
  static constexpr int stages = ring_bytes / stage_bytes;
  // + 1024: the dynamic shared memory is only 16-byte aligned, the tiles need 1024.
  static constexpr int smem_bytes = stages * stage_bytes + 1024 + 2 * stages * 8;
  static_assert(row_stage_bytes % 1024 == 0 && col_stage_bytes % 1024 == 0 && (64 * tile_k * 2) % 1024 == 0 &&
                    (consumer_cols * tile_k * 2) % 1024 == 0,
                "every tile and each consumer's share of it start on a 1024-byte swizzle atom");
  // Where consumer warpgroup c's 64 × consumer_cols begin in the tile.
  __host__ __device__ static constexpr int row_offset(int c) { return side_by_side ? 0 : 64 * c; }
  __host__ __device__ static constexpr int col_offset(int c) { return side_by_side ? consumer_cols * c : 0; }
};
using WideTile = TileShape<64 * consumers, 256, false>;
template <int Rows, int N>
using SkinnyTile = TileShape<Rows, N, true>;

// The rows of the column matrix's box (B's, or A's for tiles of Cᵀ): the
// tile's width, except where the matrix is narrower than one tile — tiles of
// Cᵀ, whose m is rounded up to 16 .. 128 — there its rows rounded up to 8
// (the swizzle atom: 8 rows of 128 bytes). The stage's rows after the box are
// never written: they only reach columns of the product past m, which are
// never stored. A box of the full width cost TMA its zero-filled rows:
// measured on the H100 (2026-11-24, git c5aefa9 with and without the cut,
// alternated three times, CUDA-graph times, n = k = 4096), m = 80
// 17.7-18.3 -> 13.9-14.4 µs, m = 96 17.2-17.4 -> 15.1-15.4, m = 48 13.0-13.1
// -> 12.2-12.5; 96 × 8192 × 8192 55.4-55.5 -> 52.6-53.2; m = 16, 64 and 128
// unchanged (their box is the same).
template <class Shape>
__host__ __device__ inline int column_box(int cols) {
  if (!Shape::transposed || cols >= Shape::cols) return Shape::cols;
  return (cols + 7) / 8 * 8;
}

// Split-K, where the tiles leave SMs idle (decode-like shapes: m = 16 .. 128
// with n = 4096 is 16 tiles for 132 SMs): each tile's `slices` k slices are
// cut into `splits` ranges of `split_slices` (the last may be shorter) —
// up to SMs / tiles ranges, each at least min_split_slices long; one range
// when the tiles alone fill the SMs. Range r is slices r·split_slices ..
// min(slices, (r + 1)·split_slices) - 1 (the kernel's unit_of): every range
// is non-empty and together they hold every slice once (schedule_test.cu
// checks both on the CPU).
struct SplitK {
  int splits, split_slices;
};

// Scales of the product, applied to C as it is stored: C = (*a)·(*b)·(A·Bᵀ),
// device pointers (lab 33's per-tensor FP8 scales, computed on the GPU);
// null (lab 30): C = A·Bᵀ.
struct OutputScale {
  const float* a = nullptr;
  const float* b = nullptr;
};
inline SplitK split_k_plan(int tiles, int slices, int sms) {
  const int wanted = std::max(1, std::min(sms / tiles, slices / min_split_slices));
  const int split_slices = cudalabs::ceil_div(slices, wanted);
  return {cudalabs::ceil_div(slices, split_slices), split_slices};  // ceil again: no empty last range
}

// The skinny tile for an m × n product (m <= 128) whose rows of A and B are
// padded_k long: 128 × N, N the first of 16, 32, 64, 128 at or above m —
// unless those tiles are too few to fill the SMs (split-K); then 64 × N
// tiles (N >= 32), twice as many, so cut into fewer k ranges (fewer atomic
// adds per element of C) — but only where padded_k is a multiple of 64: rows of
// 128-byte multiples, so every row of a TMA box starts on a 128-byte line.
// The 64-row tiles read all of A twice as often (twice the tiles); where a
// row's 128 bytes straddle two lines those reads cost more, and the 128-row
// tiles win (an inference from the times, not a counter).
//
// Measured on the H100 (CUDA-graph times, µs, each tile forced, alternated
// three times; 2026-11-24, git ae927e7, 44 shapes, 16 of them drawn at
// random; results/h100/notes/30_tensor_core_gemm.md): k a multiple of 64,
// 128 × 4096 × 4096 15.6-16.7 (128 rows) against 15.2-15.7 (64 rows), 128 × 2048 × 2048 11.1-11.5 against
// 8.8-9.1, 114 × 7248 × 3648 28.9-29.3 against 24.6-24.8; k eight more
// (not a multiple of 64), 128 × 4096 × 4104 22.1-22.4 against 25.9-26.3,
// 114 × 7248 × 3656 34.2-35.0 against 39.4-39.7 (cuBLAS too is 1.5x slower
// at k = 4104 than at 4096: 15.6-16.3 against 10.4-10.6). Over the 44
// shapes this rule's tile is on average 1.1% slower than the faster of the
// two (at worst 13%: 64 × 1500 × 6000); git 33419e3's rule (64 rows only
// where they remove the split) 6%, 64 rows wherever split 5%. Consumers
// side by side need N >= 32 (wgmma N = 16 each).
struct SkinnyChoice {
  int rows, cols;
};
inline SkinnyChoice skinny_tile_for(int m, int n, int padded_k, int sms) {
  int cols = 16;
  while (cols < m) cols *= 2;
  const int slices = cudalabs::ceil_div(padded_k, tile_k);
  const bool split = split_k_plan(cudalabs::ceil_div(n, 128), slices, sms).splits > 1;
  if (split && cols >= 32 && padded_k % tile_k == 0) return {64, cols};
  return {128, cols};
}

// Stream-K for the last round. Persistent workers (blocks, or pairs of
// blocks) take whole tiles round-robin; when the tiles do not divide evenly,
// the last round leaves workers idle: at 8192³, 1024 bands of two tiles on 66
// pairs are 15.5 rounds, and the 16th keeps half the SMs busy — 3% of the
// run. So only the `whole` tiles of full rounds go round-robin; the slices of
// the rest (the tail) are cut into `tail_workers` equal, contiguous ranges,
// one per worker, which may cross from one tile into the next. A range
// shorter than a tile touches at most two tiles (tail_workers > tail tiles).
//
// A worker takes the tiles of its range last one first: its share of the
// later tile (from slice 0 of k), then its share of the earlier one (up to
// that tile's last slice). So at any moment every worker is at one of two
// positions along k, and blocks computing neighbouring tiles read the same
// slices of A and B while they are in L2 — taken first tile first, each
// range starts at its own k and they share nothing: the kernel ran 7% slower
// at 4096³ and 1.3x slower at 1280 × 2560 × 8192 than with no stream-K
// (2026-11-23, git e399457 against 7576ca9; its kernel time under Nsight
// Compute, and a build without the finisher's wait as slow).
// The worker holding a tile's last slice finishes that tile (it reaches it
// last: the end of its range); the others (lower indices) write their partial
// sums to a workspace and count themselves in on the tile's flag as soon as
// their share is done — the first item of their range; the finisher waits for
// the count, adds the partials and stores C. A worker waits only on lower
// workers' first items, which never wait: no cycle.
//
// The hand-over costs the finisher a wait, a read of the partial sums and
// their adds at the very end: measured (2026-11-23, git cf24f12 against
// 7576ca9, Nsight Compute's kernel times at its fixed clocks), stream-K made
// 8192³ 1.9% faster, 4104³ 6% and 1280 × 2560 × 8192 9%, but 4096³ 2.5% slower
// (58 bands on 66 pairs: 8 slices of each worker's round idle) and 2000 ×
// 4400 × 1000 3% slower (16-slice tiles) — there the hand-over took longer
// than the idle time it recovered. So the tail is shared out only where the
// last round would leave at least min_idle_slices slices' time of every
// worker idle on average (8192³: 62; 4104³: 57; 1280 × 2560 × 8192: 31;
// 4096³: 8; 2000 × 4400 × 1000: 13).
inline constexpr int min_tail_share = 8;    // slices per tail range at least: twice the ring
inline constexpr int min_idle_slices = 24;  // the idle time a tail must have to be shared out

enum class Finish {
  store,       // the whole of k: store C
  atomic_add,  // a split-K range: add into C (zeroed by the launcher)
  hand_over,   // a tail range without the tile's last slice: write the partial sum, signal
  collect,     // a tail range with the tile's last slice: wait, add the others' partials, store C
};
struct Work {
  int unit;         // the tile (pairs: band of tiles) in tile_of_block's order
  int first, last;  // its k slices first .. last - 1
  Finish finish;
  int helpers;      // collect: the partials to add, from workers worker - helpers .. worker - 1
};

struct Schedule {
  int tiles, slices;          // tiles (pairs: bands) and k slices per tile
  int splits, split_slices;   // split-K: unit u is range u % splits of tile u / splits
  int workers;                // persistent blocks (pairs), the grid
  int whole;                  // units handed out whole, round-robin
  int tail_workers;           // workers sharing the slices of tiles whole .. tiles - 1 (0: no tail)

  __host__ __device__ std::int64_t tail_slices() const { return static_cast<std::int64_t>(tiles - whole) * slices; }
  // Worker w's tail range begins at slice tail_start(w), counted over the tail's tiles one after the other.
  __host__ __device__ std::int64_t tail_start(int w) const { return w * tail_slices() / tail_workers; }
  // The worker whose tail range holds slice x: the largest w with tail_start(w) <= x.
  __host__ __device__ int tail_worker_of(std::int64_t x) const {
    return static_cast<int>(((x + 1) * tail_workers - 1) / tail_slices());
  }
  __host__ __device__ int whole_items(int w) const { return w < whole ? (whole - w + workers - 1) / workers : 0; }
  __host__ __device__ int items(int w) const {
    if (w >= tail_workers) return whole_items(w);
    const std::int64_t begin = tail_start(w), end = tail_start(w + 1);
    return whole_items(w) + static_cast<int>((end - 1) / slices - begin / slices) + 1;
  }
  // Worker w's item i, for i < items(w): its whole units first, then its tail range tile by tile, the last first.
  __host__ __device__ Work item(int w, int i) const {
    const int whole_count = whole_items(w);
    if (i < whole_count) {
      const int u = w + i * workers, first = (u % splits) * split_slices;
      return {u / splits, first, first + split_slices < slices ? first + split_slices : slices,
              splits > 1 ? Finish::atomic_add : Finish::store, 0};
    }
    const std::int64_t begin = tail_start(w), end = tail_start(w + 1);
    const int tail_tile = static_cast<int>((end - 1) / slices) - (i - whole_count);
    const std::int64_t tile_begin = static_cast<std::int64_t>(tail_tile) * slices;
    const int first = static_cast<int>((begin > tile_begin ? begin : tile_begin) - tile_begin);
    const int last = static_cast<int>((end < tile_begin + slices ? end : tile_begin + slices) - tile_begin);
    if (last < slices) return {whole + tail_tile, first, last, Finish::hand_over, 0};
    const int helpers = w - tail_worker_of(tile_begin);
    return {whole + tail_tile, first, last, helpers > 0 ? Finish::collect : Finish::store, helpers};
  }
};

// The schedule of `tiles` tiles (pairs: bands) of `slices` slices on at most
// `workers` persistent workers: split-K where the tiles leave SMs idle
// (split_k_plan), else whole tiles round-robin and stream-K for a last
// round that would leave workers idle.
inline Schedule plan_schedule(int tiles, int slices, SplitK split, int workers) {
  Schedule plan{tiles, slices, split.splits, split.split_slices, std::min(tiles * split.splits, workers),
                tiles * split.splits, 0};
  const int rest = tiles % workers;
  const bool worth_it = static_cast<std::int64_t>(workers - rest) * slices >= static_cast<std::int64_t>(min_idle_slices) * workers;
  if (split.splits == 1 && rest != 0 && worth_it) {
    const int sharing = static_cast<int>(std::min<std::int64_t>(workers, static_cast<std::int64_t>(rest) * slices / min_tail_share));
    if (sharing > rest) {  // else each share would be a whole tile: nothing gained
      plan.whole = tiles - rest;
      plan.tail_workers = sharing;
      plan.workers = plan.whole > 0 ? workers : sharing;
    }
  }
  return plan;
}
}  // namespace wgmma_step

// The m16n8 fragment at (row0, col0) of Cᵀ (n × m), as store_accumulator_16x8
// lays it out, written into C (m × n) — or added (split-K): element (r, c) of
// Cᵀ is C[c][r]. Lanes with the same t write 8 consecutive floats of a row of
// C; no pair of a thread's values is adjacent in C, so one float each.
template <bool Add>
__device__ inline void store_transposed_16x8(float* __restrict__ c, int m, int n, int row0, int col0,
                                             const float (&acc)[4]) {
  const int lane = static_cast<int>(threadIdx.x) % 32, g = lane / 4, t = lane % 4;
#pragma unroll
  for (int e = 0; e < 4; ++e) {
    const int r = row0 + g + 8 * (e / 2), col = col0 + 2 * t + e % 2;  // r: a column of C, col: a row
    if (r >= n || col >= m) continue;
    float* p = c + static_cast<std::int64_t>(col) * n + r;
    if constexpr (Add)
      atomicAdd(p, acc[e]);
    else
      *p = acc[e];
  }
}

// rows_map, cols_map: the tensor maps of the matrix whose rows are the tiles'
// rows (wgmma's A: the matrix A, or B for a transposed Shape) and of the one
// whose rows are their columns (wgmma's B: B, or A).
template <typename T, int Cluster, class Shape>
__global__ void __launch_bounds__(wgmma_step::threads, 1)
    gemm_wgmma_tma_kernel(const __grid_constant__ CUtensorMap rows_map, const __grid_constant__ CUtensorMap cols_map,
                          float* __restrict__ c, int m, int n, int k, const wgmma_step::Schedule plan,
                          float* __restrict__ partials, int* __restrict__ flags, const wgmma_step::OutputScale scale) {
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  // BEGIN SOLUTION wgmma_tma
  using namespace wgmma_step;
  namespace hw = cudalabs::hopper;
  constexpr int tile_m = Shape::rows, tile_n = Shape::cols, stages = Shape::stages;
  constexpr int wg_n = Shape::consumer_cols;  // a consumer's 64 × wg_n: wgmma's N
  constexpr int stage_bytes = Shape::stage_bytes, fragments = wg_n / 8;  // m16n8 fragments per consumer warp
  extern __shared__ unsigned char smem_raw[];
  unsigned char* smem = reinterpret_cast<unsigned char*>(
      (reinterpret_cast<std::uintptr_t>(smem_raw) + 1023) & ~std::uintptr_t{1023});
  T* a_tiles = reinterpret_cast<T*>(smem);                                    // [stage][tile_m rows][64]
  T* b_tiles = reinterpret_cast<T*>(smem + stages * Shape::row_stage_bytes);  // [stage][tile_n rows][64]
  auto* full = reinterpret_cast<std::uint64_t*>(smem + stages * stage_bytes);
  std::uint64_t* empty = full + stages;

  const int warpgroup = static_cast<int>(threadIdx.x) / 128, in_group = static_cast<int>(threadIdx.x) % 128;
  // Cluster > 1: the CTAs of a cluster compute tiles one above the other (the
  // same columns of C), so they need the same slices of B: CTA r loads rows
  // r·tile_n/Cluster .. of each B slice and multicasts them to all, its own A
  // as before. A band is Cluster tiles stacked; the cluster walks bands.
  const unsigned rank = Cluster > 1 ? hw::cluster_cta_rank() : 0u;
  const int worker = static_cast<int>(blockIdx.x) / Cluster, items = plan.items(worker);
  // The product computed: C (m × n), or Cᵀ (n × m) for a transposed Shape.
  const int rows = Shape::transposed ? n : m, cols = Shape::transposed ? m : n;
  const int bands_m = cudalabs::ceil_div(rows, tile_m * Cluster), tiles_n = cudalabs::ceil_div(cols, tile_n);

  if (threadIdx.x == 0) {
    for (int s = 0; s < stages; ++s) {
      hw::mbarrier_init(&full[s], 1);                         // the producer's arrive_expect_tx (+ the bytes)
      hw::mbarrier_init(&empty[s], 4 * consumers * Cluster);  // one arrival per consumer warp of the cluster
    }
    hw::fence_barrier_init();
  }
  if constexpr (Cluster > 1)
    hw::cluster_sync();  // no peer's multicast may signal a barrier not yet initialised
  else
    __syncthreads();

  // Persistent: one block per SM, a worker, takes its items of the
  // schedule one after another (a pair of blocks is one worker, an item then
  // a band of two tiles, one each). An item is a tile (in tile_of_block's
  // order) and a range of its k slices: all of them; with split-K (decode-
  // like shapes with fewer tiles than SMs) one of `splits` ranges, added into
  // C, which the launcher zeroed; or a worker's share of the last round
  // (stream-K, Schedule above). The ring runs on across items: `g` counts
  // this block's slices over all its items, so slice g uses stage g mod stages
  // in round g / stages. The producer starts loading the next item while the
  // consumers store this one, and no block pays a launch and an empty ring
  // per tile.
  auto tile_of = [&](const Work& work) {
    TileCoord tile = tile_of_block(work.unit, bands_m, tiles_n, tile_m * Cluster, tile_n);
    tile.row0 += static_cast<int>(rank) * tile_m;
    return tile;
  };
  // Tiles of Cᵀ: A's box is its m rows rounded up to 8, not the tile's width
  // (column_box); TMA writes, and the barrier counts, only those bytes.
  const int expected_bytes = stage_bytes - (tile_n - column_box<Shape>(cols)) * tile_k * 2;
  if (warpgroup == 0) {
    hw::setmaxnreg_dec<40>();
    if (in_group == 0) {
      int g = 0;
      for (int i = 0; i < items; ++i) {
        const Work work = plan.item(worker, i);
        const TileCoord tile = tile_of(work);
        for (int s = work.first; s < work.last; ++s, ++g) {
          const int stage = g % stages;
          // Round r of a stage waits for the consumers' release of round r - 1
          // (parity (r - 1) & 1); round 0 passes at once (hopper.cuh).
          hw::mbarrier_wait(&empty[stage], ((g / stages) & 1) ^ 1);
          hw::mbarrier_arrive_expect_tx(&full[stage], expected_bytes);  // TMA writes the whole box, zeros included
          hw::tma_load_2d(a_tiles + stage * tile_m * tile_k, &rows_map, s * tile_k, tile.row0, &full[stage]);
          if constexpr (Cluster == 1) {
            hw::tma_load_2d(b_tiles + stage * tile_n * tile_k, &cols_map, s * tile_k, tile.col0, &full[stage]);
          } else {
            constexpr int part = tile_n / Cluster;  // rows of B this CTA loads for the cluster
            hw::tma_load_2d_multicast(b_tiles + stage * tile_n * tile_k + rank * part * tile_k, &cols_map, s * tile_k,
                                      tile.col0 + static_cast<int>(rank) * part, &full[stage], (1u << Cluster) - 1);
          }
        }
      }
    }
  } else {
    hw::setmaxnreg_inc<232>();
    const int consumer = warpgroup - 1;
    int g = 0;
    for (int i = 0; i < items; ++i) {
      const Work work = plan.item(worker, i);
      const TileCoord tile = tile_of(work);
      float acc[wg_n / 2];  // the consumer's 64 × wg_n, 128 threads
#pragma unroll
      for (int r = 0; r < wg_n / 2; ++r) acc[r] = 0.0f;

      for (int s = work.first; s < work.last; ++s, ++g) {
        const int stage = g % stages;
        hw::mbarrier_wait(&full[stage], (g / stages) & 1);
        // This warpgroup's 64 rows and wg_n columns of the tile.
        const T* a_rows = a_tiles + stage * tile_m * tile_k + Shape::row_offset(consumer) * tile_k;
        const T* b_rows = b_tiles + stage * tile_n * tile_k + Shape::col_offset(consumer) * tile_k;
        hw::fence_operands(acc);
        hw::wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < tile_k; kk += 16)
          hw::wgmma_ss<wg_n, T>(acc, hw::smem_descriptor_128b(a_rows + kk), hw::smem_descriptor_128b(b_rows + kk),
                                  true);
        hw::wgmma_commit_group();
        // Wait for this slice's products before handing the stage back. The
        // other consumer warpgroup's wgmma keep the tensor cores busy meanwhile.
        // Keeping one group of this warpgroup in flight too (wait_group<1>,
        // releasing the previous slice's stage) was measured on the H100 and
        // did not pay: within 1% at 8192³ and 4096³, FP16 and BF16, either way
        // (2026-11-23, git 6f16d65; again on 2026-11-24 at git 33419e3).
        hw::wgmma_wait_group<0>();
        hw::fence_operands(acc);
        if constexpr (Cluster == 1) {
          if (in_group % 32 == 0) hw::mbarrier_arrive(&empty[stage]);
        } else if (in_group % 32 < Cluster) {
          // Lane r releases the stage to CTA r's producer: its next multicast
          // writes into this CTA's copy too.
          hw::mbarrier_arrive_cluster(&empty[stage], static_cast<unsigned>(in_group % 32));
        }
      }

      // Stream-K's hand-over, per consumer warpgroup (its own share of the tile): a
      // workspace slot of wg_n / 2 accumulators per thread for each worker,
      // stored as float4 [fragments][128 threads] so that a warp's stores are contiguous, and
      // one flag per tail tile counting the slots written for it. .cg: through
      // L2 only, never a stale line of this SM's L1.
      const int per_worker = Cluster * consumers, me = static_cast<int>(rank) * consumers + consumer;
      auto slot = [&](int w) { return reinterpret_cast<float4*>(partials) + (w * per_worker + me) * (fragments * 128) + in_group; };
      if (work.finish == Finish::hand_over || work.finish == Finish::collect) {
        cuda::atomic_ref<int, cuda::thread_scope_device> flag(flags[(work.unit - plan.whole) * per_worker + me]);
        if (work.finish == Finish::hand_over) {
          float4* mine = slot(worker);
#pragma unroll
          for (int j = 0; j < fragments; ++j) __stcg(mine + 128 * j, make_float4(acc[4 * j], acc[4 * j + 1], acc[4 * j + 2], acc[4 * j + 3]));
          hw::named_barrier_sync(1 + consumer, 128);  // the warpgroup's stores are done ...
          if (in_group == 0) flag.fetch_add(1, cuda::std::memory_order_release);  // ... and published
          continue;
        }
        if (in_group == 0)
          while (flag.load(cuda::std::memory_order_acquire) != work.helpers) {
          }
        hw::named_barrier_sync(1 + consumer, 128);  // every helper's partial sum is in L2
        for (int h = 1; h <= work.helpers; ++h) {
          const float4* theirs = slot(worker - h);
#pragma unroll
          for (int j = 0; j < fragments; ++j) {
            const float4 p = __ldcg(theirs + 128 * j);
            acc[4 * j] += p.x, acc[4 * j + 1] += p.y, acc[4 * j + 2] += p.z, acc[4 * j + 3] += p.w;
          }
        }
      }
      // Warp w of this warpgroup holds rows 16w .. 16w+15 of its 64; acc[4j ..]
      // is the m16n8 fragment of its columns 8j .. 8j+7 (hopper.cuh).
      const int row0 = tile.row0 + Shape::row_offset(consumer) + 16 * (in_group / 32);
      const int col0 = tile.col0 + Shape::col_offset(consumer);
      const bool add = work.finish == Finish::atomic_add;
      const float alpha = scale.a != nullptr ? *scale.a * *scale.b : 1.0f;  // x·1 = x exactly: lab 30's C unchanged
#pragma unroll
      for (int j = 0; j < fragments; ++j) {
        const float fragment[4] = {alpha * acc[4 * j], alpha * acc[4 * j + 1], alpha * acc[4 * j + 2], alpha * acc[4 * j + 3]};
        if constexpr (Shape::transposed)
          add ? store_transposed_16x8<true>(c, m, n, row0, col0 + 8 * j, fragment)
              : store_transposed_16x8<false>(c, m, n, row0, col0 + 8 * j, fragment);
        else
          add ? store_accumulator_16x8<true>(c, m, n, row0, col0 + 8 * j, fragment)
              : store_accumulator_16x8(c, m, n, row0, col0 + 8 * j, fragment);
      }
    }
  }
  if constexpr (Cluster > 1) hw::cluster_sync();  // a peer may still arrive on this CTA's barriers
  // END SOLUTION
  // STUB: // TODO: a producer warpgroup issues TMA loads of A and B slices into a ring of Shape::stages (full/empty
  // STUB: // mbarriers); two consumer warpgroups (setmaxnreg) each run wgmma m64nNk16 (N = Shape::consumer_cols) on their share of the
  // STUB: // tile (Shape::row_offset, col_offset) and release the stage; store C (Shape::transposed: the tile is of Cᵀ = B·Aᵀ, rows_map is B's — store_transposed_16x8).
  // STUB: // Persistent: worker blockIdx.x / Cluster takes its items plan.item(worker, i), i < plan.items(worker) — a
  // STUB: // tile and a range of its k slices; finish it as work.finish says: store C, add into C (split-K), or
  // STUB: // (stream-K) hand the partial sum over through `partials` and the tile's flag, or collect the helpers' sums.
  // STUB: // Cluster == 2: the two blocks of a pair share B — each loads half of it with a TMA multicast to both; the
  // STUB: // empty barriers count both blocks' consumer warps (lane r arrives on block r's); cluster_sync after barrier
  // STUB: // init and before exit.
#else
  (void)rows_map, (void)cols_map, (void)c, (void)m, (void)n, (void)k, (void)plan, (void)partials, (void)flags, (void)scale;
#endif
}

// Copies a row-major [rows × k] matrix of elements' bits (element_bits) into
// [rows × padded_k], zero bits (0.0 in FP16, BF16 and FP8) in the added
// columns: a row pitch TMA accepts.
template <typename T>
__global__ void pad_columns_kernel(const T* __restrict__ in, T* __restrict__ out, int rows, int k, int padded_k) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= static_cast<std::int64_t>(rows) * padded_k) return;
  const int col = static_cast<int>(i % padded_k);
  const std::int64_t row = i / padded_k;
  out[i] = col < k ? in[row * k + col] : T{0};
}

// The tensor map of a row-major [rows × k] matrix of T read in boxes of
// box_rows × 64 elements, 128-byte swizzled in shared memory, zeros outside
// (cudalabs/hopper.cuh encodes it, through the runtime: no libcuda at link time).
template <typename T>
CUtensorMap tensor_map_of(const T* matrix, int rows, int k, int box_rows) {
  return cudalabs::hopper::tensor_map_128b<2>(matrix, {k, rows}, {k}, {wgmma_step::tile_k, box_rows});
}

// Before the first launch (and before the occupancy API is asked): the wide
// tile's kernels opt in to their dynamic shared memory (193 KB), and the
// driver's encoder is looked up (once each: they keep what they found). A
// skinny tile's kernel opts in where it is launched (gemm_wgmma_tiles).
template <typename T>
void gemm_wgmma_tma_prepare() {
  using namespace wgmma_step;
  opt_in_shared_memory_once<gemm_wgmma_tma_kernel<T, 1, WideTile>, WideTile::smem_bytes>();
  opt_in_shared_memory_once<gemm_wgmma_tma_kernel<T, 2, WideTile>, WideTile::smem_bytes>();
  cudalabs::hopper::tensor_map_encoder();
}

// A launch in clusters of two CTAs (cudaLaunchKernelEx: the <<< >>> syntax
// has no cluster size). How many such pairs fit on the GPU at once is asked of
// the GPU: an SM whose GPC has no free partner cannot hold half a cluster, so
// the persistent grid may be a little under one block per SM.
inline cudaLaunchConfig_t pair_launch(unsigned clusters, cudaStream_t stream, cudaLaunchAttribute& attribute) {
  attribute.id = cudaLaunchAttributeClusterDimension;
  attribute.val.clusterDim.x = 2, attribute.val.clusterDim.y = 1, attribute.val.clusterDim.z = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(2 * clusters), config.blockDim = dim3(wgmma_step::threads);
  config.dynamicSmemBytes = wgmma_step::WideTile::smem_bytes, config.stream = stream;
  config.attrs = &attribute, config.numAttrs = 1;
  return config;
}
template <typename T>
int resident_pairs() {
  static const int pairs = [] {
    cudaLaunchAttribute attribute;
    const cudaLaunchConfig_t config =
        pair_launch(static_cast<unsigned>(cudalabs::current_device().sm_count / 2), nullptr, attribute);
    int count = 0;
    CUDALABS_CHECK(cudaOccupancyMaxActiveClusters(&count, gemm_wgmma_tma_kernel<T, 2, wgmma_step::WideTile>, &config));
    return count;
  }();
  return pairs;
}

// C = A·Bᵀ in tiles of Shape (A, B with padded_k columns, a pitch TMA takes):
// the schedule of its tiles on the SMs, and the launch.
template <typename T, class Shape>
void gemm_wgmma_tiles(const T* a, const T* b, float* c, int m, int n, int padded_k, cudaStream_t stream,
                      wgmma_step::OutputScale scale) {
  // BEGIN SOLUTION wgmma_tma
  using namespace wgmma_step;
  opt_in_shared_memory_once<gemm_wgmma_tma_kernel<T, 1, Shape>, Shape::smem_bytes>();  // 193 to 217 KB
  // The product computed: C, or Cᵀ = B·Aᵀ (n × m) for a transposed Shape.
  const T* row_matrix = Shape::transposed ? b : a;
  const T* col_matrix = Shape::transposed ? a : b;
  const int rows = Shape::transposed ? n : m, cols = Shape::transposed ? m : n;
  // Split-K where the tiles leave SMs idle (split_k_plan): each k range of a
  // tile is a unit of its own, the units' partial sums added into C, zeroed
  // here first.
  const int sms = cudalabs::current_device().sm_count;
  const int tiles = static_cast<int>(tile_grid(rows, cols, Shape::rows, Shape::cols)),
            slices = cudalabs::ceil_div(padded_k, tile_k);
  const SplitK split = split_k_plan(tiles, slices, sms);
  if (split.splits > 1)
    CUDALABS_CHECK(cudaMemsetAsync(c, 0, static_cast<std::size_t>(m) * static_cast<std::size_t>(n) * sizeof(float), stream));
  // Pairs of CTAs sharing B where every tile has a partner below it (an even
  // number of tile rows, no split-K): each loads half of B's box and
  // multicasts it. One block per SM (193 KB of shared memory each), or per SM
  // that can hold one of a pair. Wide tiles only: skinny tiles are split-K
  // shapes, and pairs sharing A there were slower (README, "Decode-like shapes").
  bool pairs = false;
  if constexpr (!Shape::transposed)
    pairs = split.splits == 1 && cudalabs::ceil_div(rows, Shape::rows) % 2 == 0 && resident_pairs<T>() > 0;
  const int cluster = pairs ? 2 : 1;
  const Schedule plan = plan_schedule(tiles / cluster, slices, split, pairs ? resident_pairs<T>() : sms);
  // Stream-K's workspace: a slot of partial sums (a tile in FP32) per block
  // of each tail worker, and a flag per tail tile, zeroed.
  float* partials = nullptr;
  int* flags = nullptr;
  if (plan.tail_workers > 0) {
    const std::size_t slot_floats =
        std::size_t{Shape::rows} * Shape::cols * static_cast<std::size_t>(plan.tail_workers * cluster);
    const std::size_t flag_count = static_cast<std::size_t>((plan.tiles - plan.whole) * cluster * consumers);
    partials = static_cast<float*>(cudalabs::stream_alloc(slot_floats * sizeof(float) + flag_count * sizeof(int),
                                                          "wgmma_tma's stream-K partial sums", stream));
    flags = reinterpret_cast<int*>(partials + slot_floats);
    CUDALABS_CHECK(cudaMemsetAsync(flags, 0, flag_count * sizeof(int), stream));
  }
  const CUtensorMap rows_map = tensor_map_of(row_matrix, rows, padded_k, Shape::rows);
  const CUtensorMap cols_map = tensor_map_of(col_matrix, cols, padded_k, column_box<Shape>(cols) / cluster);
  if constexpr (!Shape::transposed) {
    if (pairs) {
      cudaLaunchAttribute attribute;
      const cudaLaunchConfig_t config = pair_launch(static_cast<unsigned>(plan.workers), stream, attribute);
      CUDALABS_CHECK(cudaLaunchKernelEx(&config, gemm_wgmma_tma_kernel<T, 2, Shape>, rows_map, cols_map, c, m, n,
                                        padded_k, plan, partials, flags, scale));
    }
  }
  if (!pairs)
    gemm_wgmma_tma_kernel<T, 1, Shape><<<static_cast<unsigned>(plan.workers), threads, Shape::smem_bytes, stream>>>(
        rows_map, cols_map, c, m, n, padded_k, plan, partials, flags, scale);
  CUDALABS_CHECK_LAUNCH("gemm_wgmma_tma_kernel");
  cudalabs::stream_free(partials, stream);
  // END SOLUTION
  // STUB: cudalabs::not_implemented("gemm_wgmma_tiles", a, b, c, m, n, padded_k, stream, scale);
}

template <typename T>
void gemm_wgmma_tma(const T* a, const T* b, float* c, int m, int n, int k, cudaStream_t stream,
                    wgmma_step::OutputScale scale = {}) {
  // BEGIN SOLUTION wgmma_tma
  using namespace wgmma_step;
  gemm_wgmma_tma_prepare<T>();
  const int pitch_elements = 16 / static_cast<int>(sizeof(T));
  T* padded = nullptr;
  int padded_k = k;
  if (k % pitch_elements != 0) {
    padded_k = cudalabs::ceil_div(k, pitch_elements) * pitch_elements;
    const std::int64_t a_count = static_cast<std::int64_t>(m) * padded_k, b_count = static_cast<std::int64_t>(n) * padded_k;
    padded = static_cast<T*>(cudalabs::stream_alloc((a_count + b_count) * sizeof(T), "wgmma_tma's padded A and B", stream));
    using Bits = element_bits<T>;  // moved as bits: zero bits are zero in every input type
    pad_columns_kernel<Bits><<<static_cast<unsigned>(cudalabs::ceil_div<std::int64_t>(a_count, 256)), 256, 0, stream>>>(
        reinterpret_cast<const Bits*>(a), reinterpret_cast<Bits*>(padded), m, k, padded_k);
    CUDALABS_CHECK_LAUNCH("pad_columns_kernel (A)");
    pad_columns_kernel<Bits><<<static_cast<unsigned>(cudalabs::ceil_div<std::int64_t>(b_count, 256)), 256, 0, stream>>>(
        reinterpret_cast<const Bits*>(b), reinterpret_cast<Bits*>(padded + a_count), n, k, padded_k);
    CUDALABS_CHECK_LAUNCH("pad_columns_kernel (B)");
    a = padded;
    b = padded + a_count;
  }
  // The tile's shape for the shape of C: skinny (m <= 128: Cᵀ) or wide.
  if (m > 128) {
    gemm_wgmma_tiles<T, WideTile>(a, b, c, m, n, padded_k, stream, scale);
  } else {
    const SkinnyChoice tile = skinny_tile_for(m, n, padded_k, cudalabs::current_device().sm_count);
    if (tile.rows == 64) {
      if (tile.cols == 32) gemm_wgmma_tiles<T, SkinnyTile<64, 32>>(a, b, c, m, n, padded_k, stream, scale);
      else if (tile.cols == 64) gemm_wgmma_tiles<T, SkinnyTile<64, 64>>(a, b, c, m, n, padded_k, stream, scale);
      else gemm_wgmma_tiles<T, SkinnyTile<64, 128>>(a, b, c, m, n, padded_k, stream, scale);
    } else {
      if (tile.cols == 16) gemm_wgmma_tiles<T, SkinnyTile<128, 16>>(a, b, c, m, n, padded_k, stream, scale);
      else if (tile.cols == 32) gemm_wgmma_tiles<T, SkinnyTile<128, 32>>(a, b, c, m, n, padded_k, stream, scale);
      else if (tile.cols == 64) gemm_wgmma_tiles<T, SkinnyTile<128, 64>>(a, b, c, m, n, padded_k, stream, scale);
      else gemm_wgmma_tiles<T, SkinnyTile<128, 128>>(a, b, c, m, n, padded_k, stream, scale);
    }
  }
  cudalabs::stream_free(padded, stream);
  // END SOLUTION
  // STUB: cudalabs::not_implemented("gemm_wgmma_tma", a, b, c, m, n, k, stream, scale);
}

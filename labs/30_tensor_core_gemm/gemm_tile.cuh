#pragma once
// What every step of lab 30 shares: the order in which blocks take their
// output tiles, the guarded 16-byte loads of the edge tiles, and the guarded
// store of an mma accumulator; for steps 2 and 3, a warp's tile on mma.sync
// (fragments, their loads, their mma). One copy here, included by each
// step's file.
//
// The product: C[m×n] = A[m×k] · Bᵀ, with A stored [m×k] and B stored [n×k],
// both row-major — both operands K-major, the layout of a linear layer
// (y = x·Wᵀ, W [out × in]) and the one every tensor-core instruction reads
// without a transpose. C is FP32, row-major [m×n]. Any m, n, k >= 1.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

#include <cudalabs/device.hpp>
#include <cudalabs/error.hpp>
#include <cudalabs/math.hpp>
#include <cudalabs/mma.cuh>

// The output tile of block `block` of a 1D grid of tiles_m × tiles_n tiles,
// taken in groups of 8 tile rows: inside a group, consecutive blocks walk DOWN
// a column of tiles, so the ~132 blocks resident at once share 8 panels of A
// and ~16 panels of B. Row-by-row order would share 1 panel of A and stream
// all of B through L2 for every tile row: at 8192³ with 128×128 tiles, 64
// passes over B's 128 MB against L2's 50 MB. For step 4 at 8192³, groups of
// 4 and 16 tile rows measured 1.7% and 0.5% slower than 8 (2026-11-23, git
// bed3a34; results/h100/notes/30_tensor_core_gemm.md).
struct TileCoord {
  int row0, col0;  // the tile's first row and column of C
};
__device__ inline TileCoord tile_of_block(int block, int tiles_m, int tiles_n, int tile_rows, int tile_cols) {
  constexpr int group_rows = 8;
  const int per_group = group_rows * tiles_n;
  const int group = block / per_group, first_row = group * group_rows;
  const int rows_in_group = min(tiles_m - first_row, group_rows);
  const int in_group = block % per_group;
  return {(first_row + in_group % rows_in_group) * tile_rows, (in_group / rows_in_group) * tile_cols};
}

// The raw bits of one element: loads and stores of 16 bytes move elements of
// any input type as bits, never converting.
template <typename T>
using element_bits = std::conditional_t<sizeof(T) == 2, std::uint16_t, std::uint32_t>;

// Elements of T in one 16-byte chunk, the unit of every load here (uint4,
// cp.async, ldmatrix rows, TMA's 128-byte swizzle): 8 halves or 4 floats.
template <typename T>
inline constexpr int chunk_elements = 16 / static_cast<int>(sizeof(T));

// Whether the rows of a row-major matrix with `cols` columns at `base` start
// on 16-byte boundaries, so that a chunk may be read as one uint4. cudaMalloc
// gives 256-byte alignment; `cols` decides (k % 8 for FP16/BF16).
template <typename T>
__host__ __device__ inline bool rows_are_16_byte_aligned(const T* base, int cols) {
  return reinterpret_cast<std::uintptr_t>(base) % 16 == 0 && cols % chunk_elements<T> == 0;
}

// The 16-byte chunk at (row, col .. col + chunk_elements) of a row-major
// [rows × cols] matrix, zeros where it lies outside: the padding that lets
// every tile of every shape run the same tensor-core loop (a zero in A or B
// adds nothing to any sum). `aligned`: rows_are_16_byte_aligned, one uint4
// load; otherwise element by element (a k that is not a multiple of 8).
template <typename T>
__device__ inline uint4 load_chunk_or_zeros(const T* __restrict__ matrix, int rows, int cols, int row, int col,
                                            bool aligned) {
  using Bits = element_bits<T>;
  constexpr int per_chunk = chunk_elements<T>;
  if (row >= rows || col >= cols) return make_uint4(0, 0, 0, 0);
  const T* p = matrix + static_cast<std::int64_t>(row) * cols + col;
  if (aligned) return __ldg(reinterpret_cast<const uint4*>(p));  // col + per_chunk <= cols: cols % per_chunk == 0
  Bits e[per_chunk];
  const Bits* q = reinterpret_cast<const Bits*>(p);
#pragma unroll
  for (int i = 0; i < per_chunk; ++i) e[i] = col + i < cols ? q[i] : Bits{0};
  uint4 v;
  std::memcpy(&v, e, sizeof v);
  return v;
}

// The 16-byte chunks one thread moves per k-slice, global -> shared, in
// steps 2 and 3: chunk `part` of rows first_row + RowStep·i of the block's
// stacked tile (A's tile_m rows, then B's), for i < Loads, A's for i <
// ALoads. The rows do not change from slice to slice, so what depends on them
// is computed once: where each row starts, and whether it lies inside its
// matrix (one bit per copy). A slice then costs, per copy, an address add and
// a select. Recomputed per copy (row, the matrix pointer from the constant
// bank, a 64-bit multiply, the bounds), the 12 copies of a step-3 slice took
// more issue slots than the warp's 128 mma (Nsight Compute source counters,
// 2026-11-23, code of git c964a91). What is left, about 130
// instructions per slice (bit test, compare, two selects of a 64-bit source
// per copy), was measured not to matter: a second, unchecked loop for tiles
// lying wholly inside was no faster — the compiler ran both loops, predicated,
// and step 3 stayed at 0.615× cuBLAS (2026-11-23, git 104780b; results/h100/
// notes/30_tensor_core_gemm.md). Host and device: slice_copies_test.cu
// checks every copy's source against the plain formula on the CPU.
template <typename T, int Loads, int ALoads, int RowStep>
struct SliceCopies {
  const T* a_row;                // A's row of copy 0, at the thread's chunk
  const T* b_row;                // B's row of copy ALoads, at the thread's chunk
  std::int64_t row_stride;       // elements from one of the thread's rows to the next
  unsigned inside = 0;           // bit i: copy i's row lies inside its matrix
  int first_col, a_row0, b_row0;  // the chunk's column in a slice; the rows of copies 0 and ALoads
  static_assert(Loads <= 32, "one bit per copy");

  __host__ __device__ SliceCopies(const T* a, const T* b, int m, int n, int k, TileCoord tile, int first_row,
                                  int part)
      : first_col(part * chunk_elements<T>), a_row0(tile.row0 + first_row), b_row0(tile.col0 + first_row) {
    a_row = a + static_cast<std::int64_t>(a_row0) * k + first_col;  // never read where the row is outside
    b_row = b + static_cast<std::int64_t>(b_row0) * k + first_col;
    row_stride = static_cast<std::int64_t>(RowStep) * k;
#ifdef __CUDA_ARCH__  // the unroll hint is for the device compiler; host compilers warn about it
#pragma unroll
#endif
    for (int i = 0; i < Loads; ++i) inside |= static_cast<unsigned>(row(i) < (i < ALoads ? m : n)) << i;
  }
  // Copy i's row of A (i < ALoads) or of B.
  __host__ __device__ int row(int i) const { return i < ALoads ? a_row0 + RowStep * i : b_row0 + RowStep * (i - ALoads); }
  // Calls copy(i, source, inside) for copies First .. First + Count - 1 of the
  // slice whose first column is `col`, where rows are 16-byte aligned
  // (rows_are_16_byte_aligned: a chunk lies wholly in or out). `inside` is
  // false where copy i lies outside A or B; its source must then not be read.
  // The pointer walks from row to row by one add, with no branch. Step 3
  // issues a slice's copies in parts between its mma (cp_async_pipeline.cuh).
  template <int First, int Count, typename Copy>
  __host__ __device__ void for_each_aligned_part(int col, int k, Copy copy) const {
    static_assert(First >= 0 && Count >= 1 && First + Count <= Loads, "copies of this thread");
    const bool col_inside = col + first_col < k;
    const T* p = (First < ALoads ? a_row + row_stride * First : b_row + row_stride * (First - ALoads)) + col;
#ifdef __CUDA_ARCH__  // fully unrolled on the device: copy(i, ...) indexes register arrays
#pragma unroll
#endif
    for (int i = First; i < First + Count; ++i) {
      if (i == ALoads) p = b_row + col;  // from A's rows to B's (never true when First > ALoads)
      copy(i, p, col_inside & static_cast<bool>(inside >> i & 1u));
      p += row_stride;
    }
  }
  // Every copy of the slice (steps 2 and 3's prologue).
  template <typename Copy>
  __host__ __device__ void for_each_aligned(int col, int k, Copy copy) const {
    for_each_aligned_part<0, Loads>(col, k, copy);
  }
  // Copy i where rows are not aligned: element by element, zeros outside.
  __device__ uint4 load_unaligned(int i, int col, const T* a, const T* b, int m, int n, int k) const {
    const bool in_a = i < ALoads;
    return load_chunk_or_zeros(in_a ? a : b, in_a ? m : n, k, row(i), col + first_col, false);
  }
};

// Stores one 16×8 mma accumulator (the m16n8 "C" fragment: c0,c1 at row g,
// columns 2t, 2t+1; c2,c3 at row g+8) whose top-left element is C[row0][col0],
// skipping what lies outside C. Two columns per float2 where n is even (8-byte
// aligned), one at a time otherwise. Add: adds it to C atomically instead —
// one of several partial sums over k (step 4's split-K).
template <bool Add = false>
__device__ inline void store_accumulator_16x8(float* __restrict__ c, int m, int n, int row0, int col0,
                                              const float (&acc)[4]) {
  const int lane = static_cast<int>(threadIdx.x) % 32, g = lane / 4, t = lane % 4;
  const int col = col0 + 2 * t;
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const int row = row0 + g + 8 * half;
    if (row >= m || col >= n) continue;
    float* p = c + static_cast<std::int64_t>(row) * n + col;
    if constexpr (Add) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
      if (n % 2 == 0) {  // one 8-byte atomic for the two columns (sm_90): half the atomic operations
        atomicAdd(reinterpret_cast<float2*>(p), make_float2(acc[2 * half], acc[2 * half + 1]));
        continue;
      }
#endif
      atomicAdd(p, acc[2 * half]);
      if (col + 1 < n) atomicAdd(p + 1, acc[2 * half + 1]);
    } else if (n % 2 == 0) {
      *reinterpret_cast<float2*>(p) = make_float2(acc[2 * half], acc[2 * half + 1]);
    } else {
      p[0] = acc[2 * half];
      if (col + 1 < n) p[1] = acc[2 * half + 1];
    }
  }
}

// Tiles of a tile_rows × tile_cols grid over C, as a 1D grid for tile_of_block.
inline unsigned tile_grid(int m, int n, int tile_rows, int tile_cols) {
  return static_cast<unsigned>(cudalabs::ceil_div(m, tile_rows)) * static_cast<unsigned>(cudalabs::ceil_div(n, tile_cols));
}

// Above 48 KB of dynamic shared memory a kernel must opt in, once per kernel
// (before its first launch and before the occupancy API is asked about it).
template <auto kernel, int bytes>
void opt_in_shared_memory_once() {
  static const bool opted_in = [] {
    cudalabs::allow_dynamic_smem(kernel, bytes, "a GEMM kernel of lab 30");
    return true;
  }();
  (void)opted_in;
}

// ---- A warp's share of C on mma.sync (steps 2 and 3) ----------------------
//
// A warp owns (16·MI) × (16·NJ) of C: MI × 2NJ accumulators of 16×8. Per
// k-step (32 bytes of k: 16 FP16/BF16 elements, 8 TF32) it loads MI A
// fragments (16 rows × 32 bytes each, one ldmatrix.x4) and NJ pairs of B
// fragments (two 8-column blocks × 32 bytes, one ldmatrix.x4), then issues
// 2·MI·NJ mma. Shared-memory bytes per mma: 512·(MI + NJ) / (2·MI·NJ) — 128
// for a 64×64 warp tile (MI = NJ = 4: 128 accumulators per thread), 192 for
// 64×32 or 32×64 (64 accumulators). The bigger tile asks less of shared
// memory (about 128 bytes per clock per SM) but takes twice the registers,
// so it allows half the warps per SM.
//
// Where the rows lie in shared memory is the step's business: `Layout` maps
// (operand row, 16-byte unit of the row) to a byte offset — padded rows in
// step 2, XOR-swizzled rows in step 3.
template <int MI, int NJ>
struct WarpFragments {
  std::uint32_t a[MI][4];  // [16-row block i] a0..a3
  std::uint32_t b[NJ][4];  // [pair j] b0, b1 of 8-column block 2j, then b0, b1 of block 2j + 1
};

// A block of WarpsM × WarpsN warps, each (16·MI) × (16·NJ) of C.
template <int WarpsM, int WarpsN, int MI, int NJ>
struct WarpGrid {
  static constexpr int warp_rows = 16 * MI, warp_cols = 16 * NJ;
  static constexpr int tile_m = WarpsM * warp_rows, tile_n = WarpsN * warp_cols;
  static constexpr int threads = 32 * WarpsM * WarpsN;
  using Fragments = WarpFragments<MI, NJ>;
  using Accumulators = float[MI][2 * NJ][4];
  // The first row and column of warp `warp`'s share of the block's tile.
  __device__ static int row_of(int warp) { return warp_rows * (warp / WarpsN); }
  __device__ static int col_of(int warp) { return warp_cols * (warp % WarpsN); }
};

// One tensor-core step over 32 bytes of k: c[16×8] += a[16×32 B] · b[32 B×8].
// 16-bit inputs: m16n8k16. tf32_mma.cuh specialises it for float (m16n8k8).
template <typename T>
__device__ inline void mma_32_bytes_of_k(float (&c)[4], const std::uint32_t (&a)[4], std::uint32_t b0,
                                         std::uint32_t b1) {
  cudalabs::ptx::mma_16x8x16<T>(c, a, b0, b1);
}
// What a fragment register needs between ldmatrix and mma: nothing for
// 16-bit inputs; tf32_mma.cuh rounds FP32 to TF32 here, once per load rather
// than per mma.
template <typename T>
__device__ inline std::uint32_t prepare_register(std::uint32_t bits) {
  return bits;
}

// Where this lane's ldmatrix rows lie, computed once per thread rather than
// once per ldmatrix: for each k-step of a slice, the byte offset of the row
// this lane addresses in the warp's first 16-row block of A (rows 0-7 / 8-15,
// first or second 16 bytes of the k-step) and of B. Both steps' layouts keep
// layout(row0 + r, u) = row0·row_bytes + layout(r, u) for row0 a multiple of
// 8 (padded rows; the XOR swizzle by row mod 8), so the other blocks' rows
// are constants the ldmatrix carries. Computed per ldmatrix, an address took
// 4-5 integer instructions (add, XOR, shift, LEA) — in lab 16's flash2 at
// d = 128, 30% of all instructions executed, and the same change made it
// 4-10% faster (2026-11-23, git a34a7e0 against c964a91's LaneOffsets;
// results/h100/notes/16_flash_attention.md).
template <int KSteps>
struct LaneOffsets {
  int a[KSteps], b[KSteps];
  template <typename Layout>
  __device__ LaneOffsets(int warp_row, int warp_col, Layout layout) {
    const int lane = static_cast<int>(threadIdx.x) % 32;
#pragma unroll
    for (int s = 0; s < KSteps; ++s) {
      // A: lanes 0-7 address rows 0-7 bytes 0-15 (a0), 8-15 rows 8-15 (a1),
      // 16-23 rows 0-7 bytes 16-31 (a2), 24-31 rows 8-15 bytes 16-31 (a3).
      a[s] = layout(warp_row + (lane & 7) + 8 * ((lane >> 3) & 1), 2 * s + (lane >> 4));
      // B: matrices (bytes 0-15 | 16-31) × (columns 0-7 | 8-15 of the pair).
      b[s] = layout(warp_col + (lane & 7) + 8 * (lane >> 4), 2 * s + ((lane >> 3) & 1));
    }
  }
};

// The fragments of k-step `step` of a slice whose rows are `row_bytes` apart
// in the A and B tiles.
template <typename T, int MI, int NJ, int KSteps>
__device__ inline void load_fragments(WarpFragments<MI, NJ>& f, const unsigned char* a_tile,
                                      const unsigned char* b_tile, const LaneOffsets<KSteps>& at, int step,
                                      int row_bytes) {
  using cudalabs::ptx::ldmatrix_x4;
#pragma unroll
  for (int i = 0; i < MI; ++i) ldmatrix_x4(f.a[i], a_tile + at.a[step] + 16 * i * row_bytes);
#pragma unroll
  for (int j = 0; j < NJ; ++j) ldmatrix_x4(f.b[j], b_tile + at.b[step] + 16 * j * row_bytes);
#pragma unroll
  for (int i = 0; i < (MI > NJ ? MI : NJ); ++i)
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      if (i < MI) f.a[i][r] = prepare_register<T>(f.a[i][r]);
      if (i < NJ) f.b[i][r] = prepare_register<T>(f.b[i][r]);
    }
}

// The 2·MI·NJ mma of one k-step.
template <typename T, int MI, int NJ>
__device__ inline void mma_fragments(float (&acc)[MI][2 * NJ][4], const WarpFragments<MI, NJ>& f) {
#pragma unroll
  for (int j = 0; j < NJ; ++j)
#pragma unroll
    for (int i = 0; i < MI; ++i) {
      mma_32_bytes_of_k<T>(acc[i][2 * j], f.a[i], f.b[j][0], f.b[j][1]);
      mma_32_bytes_of_k<T>(acc[i][2 * j + 1], f.a[i], f.b[j][2], f.b[j][3]);
    }
}

// The warp's share of C, whose top-left element is C[row0][col0], guarded.
template <int MI, int NJ2>
__device__ inline void store_warp_tile(float* __restrict__ c, int m, int n, int row0, int col0,
                                       const float (&acc)[MI][NJ2][4]) {
#pragma unroll
  for (int i = 0; i < MI; ++i)
#pragma unroll
    for (int j = 0; j < NJ2; ++j) store_accumulator_16x8(c, m, n, row0 + 16 * i, col0 + 8 * j, acc[i][j]);
}

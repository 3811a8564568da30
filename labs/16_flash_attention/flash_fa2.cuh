#pragma once
// FlashAttention-2's forward kernel, technique by technique, on mma.sync:
// flash_mma.cuh's algorithm (S and P in registers, online softmax on the
// accumulators, K and V double-buffered with cp.async) with the changes that
// take FlashAttention-2 (Dao, 2023) to its speed. FP16 or BF16 inputs, FP32
// accumulation, FP32 output; d = 64 or 128. Each change, and why:
//
// 1. 128 query rows per block, 32 per warp (two 16-row MMA tiles). In
//    flash_mma.cuh every K or V fragment a warp loads with ldmatrix.x4 (512 B
//    of shared memory) feeds 2 mma.m16n8k16; here it feeds 4, one per row
//    tile. An H100 SM reads 128 B of shared memory per clock and its tensor
//    cores take about one m16n8k16 (16·8·16 multiply-adds) per clock (989
//    dense FP16 TFLOPS / 132 SMs / 1.83 GHz = 4096 FLOP): 256 B of fragments per
//    MMA starves them at half rate, 128 B just keeps up. The price is
//    registers: the O accumulator is 32 rows × d per warp (64 floats per
//    thread at d = 64, 128 at d = 128) and the scores 32 × BC (BC floats).
// 2. Q in registers at d = 64 only. Its fragments are 32 registers at d = 64,
//    kept for the whole loop; at d = 128 they would be 64 beside O's 128 and
//    S's 32 or 64, past the 255 a thread may have, so Q stays in shared memory
//    and its fragments are reloaded per key tile (as FlashAttention-2 does).
//    Key tiles (BC) of 64 keys at both head dimensions. At d = 128 that needs
//    O 128 + S 64 + Q and K fragments 12 = 204 registers live at once before
//    any address or index, and ptxas (sm_90) spills 32 bytes at 255. 32-key
//    tiles at d = 128 (172 live, 253 used, no spill) were measured on the H100
//    in lab 17's shape (batch 4 x 16 heads x N 4096): 288 TFLOPS against 309
//    for the spilling 64-key tiles (2026-11-23, git f684493 against e0369e9;
//    results/h100/notes/16_flash_attention.md). The running max, the rescale
//    of O's 128 floats and the two barriers once per 32 keys cost more than 8
//    spilled values reloaded once per tile. Registers set 2 blocks per SM
//    either way: 3 would need <= 168 (65536 / 384 threads), less than O and S
//    alone. 16 rows per warp would need fewer registers (O 64 floats) but
//    halves the reuse of item 1: lab 17 measured 32 rows per warp faster at
//    equal occupancy (d = 128: 309 TFLOPS against flash_mma's 283).
// 3. Swizzled shared memory instead of padded rows. Tiles are dense (rows of
//    exactly 128 B or 256 B), and 16-byte piece c of row r is stored at piece
//    c XOR (r mod 8). The 8 rows of one ldmatrix phase (8 consecutive rows,
//    one piece) then land in 8 different 16-byte bank groups: conflict-free, as
//    padding was, without the 6–12% of shared memory padding costs (48 KB
//    instead of 54 KB per block at d = 64), and the layout the Hopper tensor
//    core's own loads use (lab 31).
// 4. exp2 with the scale folded in: each weight is 2^(s·log2(e)/√d − m') — one
//    FFMA and one MUFU.EX2 (ex2.approx.ftz: no fix-up for denormal results,
//    mma_fragments.cuh).
// 5. Causal: a warp skips a key tile whose first key comes after its last
//    row, and masks only tiles that cross its diagonal (mask_16rows); the
//    block visits only key tiles up to its last row.
// 6. Enough blocks for one head: split-KV. One head of N = 4096 is 32 query
//    tiles of 128 rows for 132 SMs. The launcher then splits each tile's keys
//    over `splits` blocks; each writes its normalised partial O_s and its
//    log-sum-exp L_s = m_s + log2(l_s) (base 2) to a workspace, and a second,
//    small kernel combines them: O = Σ_s 2^(L_s − L)·O_s / Σ_s 2^(L_s − L),
//    L = max_s L_s — the online softmax's rescaling, once per split
//    ("flash-decoding"). flash_fp32.cuh merges in the last block instead; a
//    separate kernel keeps the main one free of atomics and fences.
// 7. Swizzled addresses computed once per thread (LaneOffsets below): four
//    offsets per operand cover every ldmatrix of a tile, so an ldmatrix
//    costs no integer instruction but its own; 4-10% at d = 128.
// 8. Lazy rescaling (as FlashAttention-4 does): a warp keeps its rows' old
//    maxima, and skips multiplying O's d columns by alpha, until some row's
//    max grows 2^8-fold (mma_fragments.cuh, `slack`). The O rescale was 10%
//    of the instructions executed at d = 128 (Nsight Compute: FMUL).
//
// Thread layout: warp w owns rows 32w .. 32w+31 of the block's 128, its row
// tile mt rows 32w+16mt .. +15. Within a row tile the fragment layouts are
// flash_mma.cuh's (lane = 4g + t: rows g and g+8, columns 2t and 2t+1).
//
// Needs sm_80 (mma.m16n8k16 for FP16 and BF16, cp.async). On older GPUs the
// kernel body compiles to a trap and the labs skip these variants.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include <cudalabs/device.hpp>
#include <cudalabs/error.hpp>
#include <cudalabs/math.hpp>
#include <cudalabs/memory.hpp>

#include "flash_common.cuh"
#include "mma_fragments.cuh"

// Internal linkage: another lab's host program compiles the course's copy of
// this file next to a kernel library that compiles the student's, and the two
// must never meet at link time (docs/lab-anatomy.md).
namespace {

inline constexpr int fa2_warps = 4;
inline constexpr int fa2_threads = 32 * fa2_warps;
inline constexpr int fa2_row_tiles = 2;                            // 16-row MMA tiles per warp
inline constexpr int fa2_warp_rows = 16 * fa2_row_tiles;           // 32
inline constexpr int fa2_tile_rows = fa2_warps * fa2_warp_rows;    // 128 queries per block
template <int D>
inline constexpr int fa2_tile_keys = 64;                           // keys per K/V tile (item 2)
inline constexpr int fa2_max_splits = 16;                          // workspace: at most 16·heads·N·(d+1) floats
inline constexpr float fa2_rescale_slack = 8.f;                    // item 8: rescale when a max grows 2^8-fold

template <typename T, int D>
struct Fa2Smem {
  static_assert(std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>, "FP16 or BF16 inputs");
  static_assert(D == 64 || D == 128, "the tensor-core kernel is compiled for head dimensions 64 and 128");
  static constexpr int q_tile = fa2_tile_rows * D;   // elements
  static constexpr int kv_tile = fa2_tile_keys<D> * D;  // elements of one K or V buffer
  // Q, K ×2, V ×2: 48 KB at D = 64, 96 KB at D = 128; the 2 blocks per SM
  // that registers allow fit in the H100's 228 KB.
  static constexpr std::size_t bytes = (q_tile + 4 * kv_tile) * sizeof(T);
};

// Where 16-byte piece `chunk` of row `row` of a swizzled tile with rows of D
// elements lives, in elements from the tile's start: piece chunk XOR (row mod 8).
template <int D>
__device__ __forceinline__ int swizzled(int row, int chunk) {
  return row * D + 8 * (chunk ^ (row & 7));
}

template <int ROWS, int D, typename T>
__device__ __forceinline__ void load_swizzled_async(T* dst, const T* __restrict__ src, int first, int seq) {
  load_rows_async<ROWS, D, fa2_threads>(dst, src, first, seq,
                                        [](int row, int chunk) { return swizzled<D>(row, chunk); });
}

// A split block's results: o [split][head][row][D], already divided by the
// block's row sum; lse [split][head][row], m·scale_log2 + log2(l), -inf for a
// row that saw no key in this split.
struct Fa2Partials {
  float* o;
  float* lse;
};

// ldmatrix addresses (flash_mma.cuh): lanes 8i .. 8i+7 give the 8 row
// addresses of matrix i. For A operands (Q) and V (.trans): matrices 0..3 are
// rows 0-7 / 8-15 of the first 16-byte piece, then of the second.
__device__ __forceinline__ int a_lane_row() { return (threadIdx.x & 7) + 8 * ((threadIdx.x >> 3) & 1); }
__device__ __forceinline__ int a_lane_chunk() { return (threadIdx.x & 31) >> 4; }
// For K (B operand of Q·Kᵀ): keys 0-7 of pieces 0 and 1, then keys 8-15.
__device__ __forceinline__ int k_lane_row() { return (threadIdx.x & 7) + 8 * ((threadIdx.x & 31) >> 4); }
__device__ __forceinline__ int k_lane_chunk() { return (threadIdx.x >> 3) & 1; }

// Item 7: the swizzled ldmatrix addresses, computed once per thread instead of
// once per ldmatrix. Every ldmatrix of the kernel reads tile row row0 +
// lane_row (row0 a multiple of 8) and piece c + lane_chunk (c even, known at
// compile time), which sits at (c & ~7) + ((c & 6) XOR lane_chunk XOR
// (lane_row & 7)): the XOR touches only bits 1-2 of c, so 4 offsets per
// thread, one per value of c & 6, cover every piece, and the rest, row0·D +
// 8·(c & ~7), is a constant the instruction carries. Computed per ldmatrix,
// the address took 4-5 integer instructions (VIADD, LOP3, IMAD.SHL, LEA): 30%
// of the instructions the kernel executed at d = 128, with one HMMA in 5
// (Nsight Compute source counters, 2026-11-23, git a34a7e0;
// results/h100/notes/16_flash_attention.md).
template <int D>
struct LaneOffsets {
  int at[4];  // elements: lane_row·D + 8·((2i) XOR lane_chunk XOR (lane_row & 7))
  __device__ __forceinline__ LaneOffsets(int lane_row, int lane_chunk) {
#pragma unroll
    for (int i = 0; i < 4; ++i) at[i] = lane_row * D + 8 * ((2 * i) ^ lane_chunk ^ (lane_row & 7));
  }
  // Elements from the tile's start to piece c + lane_chunk of row row0 + lane_row.
  __device__ __forceinline__ int operator()(int row0, int c) const { return row0 * D + 8 * (c & ~7) + at[(c & 6) / 2]; }
};

template <typename T, int D>
__global__ void __launch_bounds__(fa2_threads, 2)
    flash_fa2_kernel(const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v, float* __restrict__ out,
                     int seq, float scale_log2, bool causal, int splits, Fa2Partials partials) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  using Smem = Fa2Smem<T, D>;
  constexpr int BC = fa2_tile_keys<D>, RT = fa2_row_tiles;
  constexpr int k_steps = D / 16;   // 16-wide slices of d in Q·Kᵀ
  constexpr int s_blocks = BC / 8;  // 8-key accumulator blocks of S
  constexpr int o_blocks = D / 8;   // 8-column accumulator blocks of O
  constexpr bool q_in_registers = D <= 64;
  extern __shared__ uint4 smem_u4[];  // uint4: cp.async and ldmatrix need 16-byte alignment
  T* qs = reinterpret_cast<T*>(smem_u4);
  T* ks = qs + Smem::q_tile;       // two buffers
  T* vs = ks + 2 * Smem::kv_tile;  // two buffers

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, t = lane % 4;
  const std::int64_t head_index = attention_head_index();
  const std::int64_t head = head_index * seq * D;
  q += head, k += head, v += head;
  // blockIdx.x = query tile · splits + split (attention_query_tile sees the tile part).
  const int split = static_cast<int>(blockIdx.x) % splits;
  const int tile =
      attention_query_tile(causal, static_cast<int>(blockIdx.x) / splits, static_cast<int>(gridDim.x) / splits);
  const int q0 = tile * fa2_tile_rows;
  const int warp_row0 = q0 + fa2_warp_rows * warp;  // this warp's rows: warp_row0 .. warp_row0 + 31
  const int kv_end = causal ? min(seq, q0 + fa2_tile_rows) : seq;
  const int kv_tiles = cudalabs::ceil_div(kv_end, BC);
  // This split's key tiles. With few tiles (causal, early rows) a split may get none:
  // it still writes its rows (lse = -inf), and the combine gives it weight 0.
  const int first_tile = split * kv_tiles / splits, end_tile = (split + 1) * kv_tiles / splits;

  load_swizzled_async<fa2_tile_rows, D>(qs, q, q0, seq);
  ptx::cp_async_commit();
  if (first_tile < end_tile) {
    load_swizzled_async<BC, D>(ks, k, first_tile * BC, seq);
    load_swizzled_async<BC, D>(vs, v, first_tile * BC, seq);
  }
  ptx::cp_async_commit();
  ptx::cp_async_wait<1>();  // Q has landed; the first K, V tile may still be in flight
  __syncthreads();

  const LaneOffsets<D> a_at(a_lane_row(), a_lane_chunk());  // Q and V
  const LaneOffsets<D> k_at(k_lane_row(), k_lane_chunk());  // K

  // Q's A fragments at d = 64, kept for the whole loop (item 2).
  std::uint32_t qf[RT][q_in_registers ? k_steps : 1][4];
  if constexpr (q_in_registers)
#pragma unroll
    for (int rt = 0; rt < RT; ++rt)
#pragma unroll
      for (int kk = 0; kk < k_steps; ++kk)
        ptx::ldmatrix_x4(qf[rt][kk], qs + a_at(fa2_warp_rows * warp + 16 * rt, 2 * kk));

  float o[RT][o_blocks][4] = {};
  float m[RT][2], l[RT][2];  // running max (raw score units) and this thread's share of the sums, rows g, g+8
#pragma unroll
  for (int rt = 0; rt < RT; ++rt) m[rt][0] = m[rt][1] = -INFINITY, l[rt][0] = l[rt][1] = 0.f;

  for (int j = first_tile; j < end_tile; ++j) {
    const int kv0 = j * BC, buffer = (j - first_tile) & 1;
    if (j + 1 < end_tile) {  // prefetch tile j+1 into the other buffer, then wait for tile j only
      load_swizzled_async<BC, D>(ks + (buffer ^ 1) * Smem::kv_tile, k, kv0 + BC, seq);
      load_swizzled_async<BC, D>(vs + (buffer ^ 1) * Smem::kv_tile, v, kv0 + BC, seq);
      ptx::cp_async_commit();
      ptx::cp_async_wait<1>();
    } else {
      ptx::cp_async_wait<0>();
    }
    __syncthreads();  // every thread's pieces of tile j have landed

    // Causal: a tile whose first key is after this warp's last row is all
    // masked for it: skip the work (item 5). The barriers stay outside.
    if (!causal || kv0 <= warp_row0 + fa2_warp_rows - 1) {
      const T* kt = ks + buffer * Smem::kv_tile;
      const T* vt = vs + buffer * Smem::kv_tile;

      // 1. S = Q·Kᵀ for both row tiles: each K fragment feeds RT·2 MMAs (item 1).
      float s[RT][s_blocks][4] = {};
#pragma unroll
      for (int kk = 0; kk < k_steps; ++kk) {
        std::uint32_t a[RT][4];
#pragma unroll
        for (int rt = 0; rt < RT; ++rt) {
          if constexpr (q_in_registers) {
#pragma unroll
            for (int i = 0; i < 4; ++i) a[rt][i] = qf[rt][kk][i];
          } else {
            ptx::ldmatrix_x4(a[rt], qs + a_at(fa2_warp_rows * warp + 16 * rt, 2 * kk));
          }
        }
#pragma unroll
        for (int nb = 0; nb < s_blocks; nb += 2) {
          std::uint32_t b[4];  // keys 8nb+0-7: dims +0-7, +8-15; keys 8nb+8-15: dims +0-7, +8-15
          ptx::ldmatrix_x4(b, kt + k_at(8 * nb, 2 * kk));
#pragma unroll
          for (int rt = 0; rt < RT; ++rt) {
            ptx::mma_16x8x16<T>(s[rt][nb], a[rt], b[0], b[1]);
            ptx::mma_16x8x16<T>(s[rt][nb + 1], a[rt], b[2], b[3]);
          }
        }
      }

      // 2. Mask (the last tile, the diagonal) and the online softmax, per row tile.
#pragma unroll
      for (int rt = 0; rt < RT; ++rt) {
        mask_16rows(s[rt], kv0, warp_row0 + 16 * rt, seq, causal);
        online_softmax_16rows(s[rt], o[rt], m[rt], l[rt], scale_log2, [](float x) { return exp2_approx(x); },
                              fa2_rescale_slack);
      }

      // 3. O += P·V: P rounded to T at once (BC/2 registers instead of S's BC
      // floats: room for O at d = 128), each V fragment feeds RT·2 MMAs.
      std::uint32_t p[RT][BC / 16][4];
#pragma unroll
      for (int rt = 0; rt < RT; ++rt)
#pragma unroll
        for (int kk = 0; kk < BC / 16; ++kk) weights_as_a<T>(p[rt][kk], s[rt], kk);
#pragma unroll
      for (int kk = 0; kk < BC / 16; ++kk)
#pragma unroll
        for (int ob = 0; ob < o_blocks; ob += 2) {
          std::uint32_t b[4];  // dims 8ob+0-7: keys +0-7, +8-15; dims 8ob+8-15: keys +0-7, +8-15
          ptx::ldmatrix_x4_trans(b, vt + a_at(16 * kk, ob));
#pragma unroll
          for (int rt = 0; rt < RT; ++rt) {
            ptx::mma_16x8x16<T>(o[rt][ob], p[rt][kk], b[0], b[1]);
            ptx::mma_16x8x16<T>(o[rt][ob + 1], p[rt][kk], b[2], b[3]);
          }
        }
    }
    __syncthreads();  // the next iteration's prefetch overwrites this tile's buffers
  }

  // O = o / l: straight to `out`, or, split, to this split's partials with the
  // row's log-sum-exp. float2 stores: a quad writes 32 contiguous bytes of a row.
  const std::int64_t heads = static_cast<std::int64_t>(gridDim.y) * gridDim.z;
  float* dst = splits == 1 ? out + head : partials.o + (split * heads + head_index) * seq * D;
#pragma unroll
  for (int rt = 0; rt < RT; ++rt)
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const float total = quad_sum(l[rt][r]);
      const int row = warp_row0 + 16 * rt + g + 8 * r;
      if (row >= seq) continue;
      // total > 0 whenever splits = 1 (every row sees key 0); a split may have seen no key of the row.
      const float inv = total > 0.f ? 1.f / total : 0.f;
#pragma unroll
      for (int ob = 0; ob < o_blocks; ++ob)
        *reinterpret_cast<float2*>(dst + static_cast<std::int64_t>(row) * D + 8 * ob + 2 * t) =
            make_float2(o[rt][ob][2 * r] * inv, o[rt][ob][2 * r + 1] * inv);
      if (splits > 1 && t == 0)
        partials.lse[(split * heads + head_index) * seq + row] =
            total > 0.f ? m[rt][r] * scale_log2 + __log2f(total) : -INFINITY;
    }
#else
  (void)q, (void)k, (void)v, (void)out, (void)seq, (void)scale_log2, (void)causal, (void)splits, (void)partials;
  __trap();  // never launched: the host checks for compute capability 8.0 first
#endif
}

// The splits of every row back into O: one thread per 4 columns of one row
// (rows = heads·N of them). L = max_s L_s is finite: the split holding key
// tile 0 saw a key of every row.
template <int D>
__global__ void __launch_bounds__(256)
    flash_fa2_combine_kernel(const float* __restrict__ o_parts, const float* __restrict__ lse_parts,
                             float* __restrict__ out, std::int64_t rows, int splits) {
  const std::int64_t f = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::int64_t row = f / (D / 4);
  const int col = 4 * static_cast<int>(f % (D / 4));
  if (row >= rows) return;
  float lse_max = -INFINITY;
  for (int s = 0; s < splits; ++s) lse_max = fmaxf(lse_max, lse_parts[s * rows + row]);
  float total = 0.f;
  float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
  for (int s = 0; s < splits; ++s) {
    const float w = exp2f(lse_parts[s * rows + row] - lse_max);  // 0 for a split that saw no key
    const float4 x = *reinterpret_cast<const float4*>(o_parts + (s * rows + row) * D + col);
    total += w;
    acc.x += w * x.x, acc.y += w * x.y, acc.z += w * x.z, acc.w += w * x.w;
  }
  const float inv = 1.f / total;
  *reinterpret_cast<float4*>(out + row * D + col) = make_float4(acc.x * inv, acc.y * inv, acc.z * inv, acc.w * inv);
}

// ---- launcher --------------------------------------------------------------------

template <typename T, int D>
const void* flash_fa2_prepare() {
  static const bool done = [] {  // above 48 KB of dynamic shared memory a kernel must opt in, once
    cudalabs::allow_dynamic_smem(flash_fa2_kernel<T, D>, Fa2Smem<T, D>::bytes, "flash_fa2_kernel");
    return true;
  }();
  (void)done;
  return reinterpret_cast<const void*>(flash_fa2_kernel<T, D>);
}

template <typename T>
std::size_t flash_fa2_smem_bytes(int dim) {
  return dim == 64 ? Fa2Smem<T, 64>::bytes : Fa2Smem<T, 128>::bytes;
}

template <typename T>
KernelChoice flash_fa2_choice(int dim) {
  if (dim == 64) return {flash_fa2_prepare<T, 64>(), fa2_threads, Fa2Smem<T, 64>::bytes};
  return {flash_fa2_prepare<T, 128>(), fa2_threads, Fa2Smem<T, 128>::bytes};
}

// How many blocks share the keys of one query tile (item 6). An SM holds
// `resident` blocks of this kernel at once (2 on the H100: registers, item 2),
// and an SM with fewer does less work per second: 4 warps cannot hide
// ldmatrix's and mma's latency (H100, d = 128, 64-key tiles: one block per SM
// at N = 16384, one head, 221 TFLOPS; two per SM in lab 17, 309, 1.4× more).
// The model takes a block to run as fast beside others as alone (2× rather than
// 1.4×: it favours splitting a little), and counts time as the busiest SM's
// waves of `resident` blocks, ceil(blocks·splits /
// (SMs·resident)), times the key tiles each block walks, ceil(key_tiles /
// splits). Take the split count that makes that product smallest, the fewest on
// a tie (every split is a partial O to write and combine: splits·N·d·8 bytes
// through L2); a split keeps at least 128 keys, and at most fa2_max_splits are
// made. A grid that fills every SM's slots (4 × 16 heads of N = 4096: 2048
// blocks for 264 slots) is never split.
//
// One head, d = 64, N = 4096: 32 query tiles, 64 key tiles: 1 split costs 64
// tiles, 2 cost 32, 4 cost 16, 8 cost 8 (256 blocks, 2 on most SMs), 16 cost
// 2 waves × 4 = 8 too: 8 splits. N = 1024: 8 query tiles, 16 key tiles: 8
// splits of 2 tiles. d = 128, N = 16384: 128 query tiles, 512 key tiles of 32
// keys: 2 splits (256 blocks; 1 split leaves each SM one block). Causal shapes
// count the longest tile's keys. Not yet checked on the H100: the choice against
// --kv-splits N (1, 2, 4, 8, 16) at d = 64 and 128, N = 1024 … 16384.
inline int flash_fa2_auto_splits(const AttentionShape& s) {
  const KernelChoice kc = flash_fa2_choice<__half>(s.dim);  // BF16's kernel has the same resources
  const std::int64_t resident =
      std::max(1, cudalabs::kernel_resources(kc.kernel, kc.threads, kc.smem_bytes).blocks_per_sm);
  const std::int64_t slots = cudalabs::current_device().sm_count * resident;
  const std::int64_t blocks = cudalabs::ceil_div(s.seq, fa2_tile_rows) * s.heads_total();
  if (blocks >= slots) return 1;
  const int keys = s.dim == 64 ? fa2_tile_keys<64> : fa2_tile_keys<128>;
  const std::int64_t kv_tiles = cudalabs::ceil_div(s.seq, keys);
  const std::int64_t most = std::clamp<std::int64_t>(s.seq / 128, 1, fa2_max_splits);
  int best = 1;
  std::int64_t best_time = kv_tiles;  // one split: one wave, every key tile
  for (int splits = 2; splits <= most; ++splits) {
    const std::int64_t time =
        cudalabs::ceil_div<std::int64_t>(blocks * splits, slots) * cudalabs::ceil_div<std::int64_t>(kv_tiles, splits);
    if (time < best_time) best = splits, best_time = time;
  }
  return best;
}

// The launch plan of one shape: its split count and, when split, the
// workspace (allocated here, once: launchers do not allocate).
struct Fa2Plan {
  int splits = 1;
  cudalabs::DeviceBuffer<float> o, lse;

  // splits·heads·N·(d+1) floats, O(N·d) (0 without a split): the records' scratch_bytes.
  double workspace_bytes() const { return static_cast<double>(o.bytes() + lse.bytes()); }
};

// `splits` 0: flash_fa2_auto_splits; otherwise that many (at most
// fa2_max_splits; more than the key tiles leaves some splits empty, still correct).
inline Fa2Plan flash_fa2_plan(const AttentionShape& s, int splits) {
  Fa2Plan plan;
  plan.splits = splits > 0 ? std::min(splits, fa2_max_splits) : flash_fa2_auto_splits(s);
  if (plan.splits > 1) {
    const auto rows = static_cast<std::size_t>(plan.splits * s.heads_total() * s.seq);
    plan.o = cudalabs::DeviceBuffer<float>(rows * s.dim, "flash_fa2 split partial O");
    plan.lse = cudalabs::DeviceBuffer<float>(rows, "flash_fa2 split log-sum-exp");
  }
  return plan;
}

// Every head of `shape`: one launch, two when split. q, k, v already in T;
// dim 64 or 128 (flash_mma_supports, attention_shape.hpp): the caller rejects
// others. The plan from flash_fa2_plan(shape, ...), on one stream at a time.
template <typename T>
void flash_fa2(const T* q, const T* k, const T* v, float* out, const AttentionShape& shape, Fa2Plan& plan,
               cudaStream_t stream) {
  dim3 grid = attention_grid(shape, fa2_tile_rows);
  grid.x *= static_cast<unsigned>(plan.splits);
  const float scale = score_scale_log2(shape.dim);
  const Fa2Partials partials{plan.o.data(), plan.lse.data()};
  const auto launch = [&](auto kernel, std::size_t smem) {
    kernel<<<grid, fa2_threads, smem, stream>>>(q, k, v, out, shape.seq, scale, shape.causal, plan.splits, partials);
    CUDALABS_CHECK_LAUNCH("flash_fa2_kernel");
  };
  if (shape.dim == 64) {
    flash_fa2_prepare<T, 64>();
    launch(flash_fa2_kernel<T, 64>, Fa2Smem<T, 64>::bytes);
  } else {
    flash_fa2_prepare<T, 128>();
    launch(flash_fa2_kernel<T, 128>, Fa2Smem<T, 128>::bytes);
  }
  if (plan.splits == 1) return;
  const std::int64_t rows = shape.heads_total() * shape.seq;
  const auto blocks = static_cast<unsigned>(cudalabs::ceil_div<std::int64_t>(rows * (shape.dim / 4), 256));
  if (shape.dim == 64)
    flash_fa2_combine_kernel<64><<<blocks, 256, 0, stream>>>(plan.o.data(), plan.lse.data(), out, rows, plan.splits);
  else
    flash_fa2_combine_kernel<128><<<blocks, 256, 0, stream>>>(plan.o.data(), plan.lse.data(), out, rows, plan.splits);
  CUDALABS_CHECK_LAUNCH("flash_fa2_combine_kernel");
}

}  // namespace

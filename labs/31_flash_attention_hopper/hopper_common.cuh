#pragma once
// What lab 31's kernels share: the tile sizes, the shared-memory layout TMA
// writes and wgmma reads, the loads and descriptors on that layout, the two
// products and the online softmax on a 64×128 tile of scores held in wgmma
// accumulators, and the tensor maps. The PTX itself (mbarrier, TMA, wgmma and
// its fences, setmaxnreg, named barriers, the tensor-map encoder) is the
// course's cudalabs/hopper.cuh, shared with lab 30, called as hw::...
//
// Shared-memory layout of every Q, K, V tile (CuTe: Layout_K_SW128_Atom tiled
// to [rows × 64]): a tile of `rows` rows × d columns is stored as d/64 slabs
// of [rows][64] 16-bit elements, 128 bytes per row, with the 128-byte swizzle
// (16-byte chunk c of row r stored at chunk c ^ (r % 8)). TMA writes exactly
// this (CU_TENSOR_MAP_SWIZZLE_128B, box 64 × rows), and wgmma reads it:
//   Q, K as K-major operands (d contiguous): 8-row groups 1024 B apart (SBO);
//     k-step kk of 16 columns starts 32·(kk % 4) bytes into slab kk / 4;
//   V as an MN-major B operand (P·V: n = d contiguous): 8-key groups 1024 B
//     apart (SBO), the second 64-column slab rows·128 B on (LBO); k-step kk of
//     16 keys starts 16·128 = 2048 bytes further.
// The swizzle spreads the 8 rows of a core matrix over all 32 banks: wgmma
// reads it conflict-free, and TMA writes it without a padded row.
//
// Needs sm_90a (wgmma and setmaxnreg exist only in the arch-specific target):
// each kernel's body is compiled only when __CUDA_ARCH_FEAT_SM90_ALL is
// defined, and is a trap elsewhere (the host never launches it there:
// kernels.hpp's lab31::hopper_blocker()).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdint>
#include <type_traits>

#include <cudalabs/device.hpp>
#include <cudalabs/error.hpp>
#include <cudalabs/hopper.cuh>
#include <cudalabs/math.hpp>
#include <cudalabs/mma.cuh>  // pack_pair: two floats into one FP16/BF16 operand register

#include "../16_flash_attention/flash_common.cuh"  // AttentionShape, score_scale_log2, attention_grid

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define LAB31_HOPPER_DEVICE 1  // compiling device code for sm_90a: wgmma, TMA, setmaxnreg available
#endif

inline constexpr int hopper_rows = 64;    // queries per consumer warpgroup: wgmma's M
inline constexpr int hopper_keys = 128;   // keys per K/V tile: the S wgmma's N
inline constexpr int slab_cols = 64;      // 64 16-bit elements = 128 bytes, the swizzle's width
inline constexpr int warpgroup = 128;     // threads

template <int D>
struct TileBytes {
  static_assert(D == 64 || D == 128, "lab 31 is compiled for head dimensions 64 and 128");
  static constexpr int q = hopper_rows * D * 2;  // one warpgroup's Q: 8 KB (d 64), 16 KB (d 128)
  static constexpr int kv = hopper_keys * D * 2;  // one K or V tile: 16 KB, 32 KB
};

namespace hw = cudalabs::hopper;  // the PTX wrappers shared with lab 30 (common/include/cudalabs/hopper.cuh)

// ---- TMA and wgmma descriptors on this lab's tiles -----------------------------------------

// A [rows × D] tile (D/64 slabs of [rows][64]) of one head, starting at `row`, onto `bar`.
template <int D>
__device__ inline void tma_load_tile(void* dst, const CUtensorMap* map, std::uint64_t* bar, int row, int head,
                                     int rows) {
#pragma unroll
  for (int s = 0; s < D / slab_cols; ++s)
    hw::tma_load_3d(static_cast<char*>(dst) + s * rows * 128, map, s * slab_cols, row, head, bar);
}

// Q or K (K-major), 16 columns starting at column 16·kk.
__device__ inline std::uint64_t k_major_descriptor(const void* tile, int rows, int kk) {
  return hw::smem_descriptor_128b(static_cast<const char*>(tile) + (kk / 4) * rows * 128 + (kk % 4) * 32);
}
// V (MN-major, transposed B), keys 16·kk .. 16·kk + 15, every column.
__device__ inline std::uint64_t mn_major_descriptor(const void* tile, int rows, int kk) {
  return hw::smem_descriptor_128b_mn_major(static_cast<const char*>(tile) + kk * 16 * 128, rows * 128);
}

// ---- the two products and the online softmax, for one warpgroup ----------------------------

// Whether every key of the tile from kv0 past its first half is masked for all
// 64 rows of the warpgroup starting at wg_row0: past seq, or (causal) after the
// warpgroup's last query. Then P is 0 there, and P·V needs the first 64 keys
// only: 4 wgmmas instead of 8. Under the causal mask no tile is ever fully
// masked (blocks of 64 or 128 rows, tiles of 128 keys from multiples of 128),
// but this half of the diagonal tile is, for every warpgroup whose rows start
// on a multiple of 128 (consumer 0 of the specialised kernels, the even blocks
// of wgmma_sync). Only ever true of a block's last tile (or of a tail tile of
// at most 64 keys). Warpgroup-uniform. Used by pingpong.cuh.
__device__ inline bool upper_half_masked(int kv0, int wg_row0, int seq, bool causal) {
  const int kv_end = causal ? min(seq, wg_row0 + hopper_rows) : seq;
  return kv_end - kv0 <= hopper_keys / 2;
}

// S[64×128] = Q[64×D] · K[128×D]ᵀ: D/16 wgmmas, issued (not waited for). q_tile: this
// warpgroup's 64 rows inside a Q tile whose slabs hold `q_slab_rows` rows (64 or 128).
// (S is computed whole even when upper_half_masked: an m64n64k16 on the first
// half, chosen at run time, made ptxas serialise every wgmma of the kernel —
// info C7515/C7520 — a loss on every tile for a gain on one.)
template <typename T, int D>
__device__ inline void issue_scores(float (&s)[hopper_keys / 2], const void* q_tile, int q_slab_rows,
                                    const void* k_tile) {
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk)
    hw::wgmma_ss<hopper_keys, T>(s, k_major_descriptor(q_tile, q_slab_rows, kk),
                                 k_major_descriptor(k_tile, hopper_keys, kk), kk > 0);
}

// O[64×D] += P[64×128] · V[128×D], P from registers: 8 wgmmas issued, or the
// first 4 (FirstHalf: keys 64..127 have weight 0). A template parameter, not a
// run-time test between the wgmmas, which made ptxas inject fences into the
// loop of every tile; the kernels branch once, around the whole product.
template <typename T, int D, bool FirstHalf = false>
__device__ inline void issue_output(float (&o)[D / 2], const std::uint32_t (&p)[hopper_keys / 16][4],
                                    const void* v_tile) {
  constexpr int steps = FirstHalf ? hopper_keys / 32 : hopper_keys / 16;
#pragma unroll
  for (int kk = 0; kk < steps; ++kk) hw::wgmma_rs<D, T>(o, p[kk], mn_major_descriptor(v_tile, hopper_keys, kk), true);
}

// One warpgroup's running softmax state: rows g and g+8 of its warp's 16
// (thread 4g+t of warp w holds, in accumulator j·4 + c, row 16w + g + 8·(c/2),
// column 8j + 2t + c%2 — the same for S and for O).
template <int D>
struct SoftmaxState {
  float m[2] = {-INFINITY, -INFINITY};  // running max (raw score units)
  float l[2] = {0.f, 0.f};              // this thread's share of the running sum
  float o[D / 2] = {};                  // O accumulators
};

// Masks S (keys >= seq, and under the causal mask keys after the query),
// updates the running max and sum, and turns S into the weights
// 2^(s·scale_log2 - m_new·scale_log2), in place. O is not touched: alpha[r] =
// 2^((m_old - m_new)·scale_log2) is the factor that brings O (rows g, g+8) to
// the new max — applied by the caller, which may still have a P·V in flight
// into O (pingpong.cuh).
template <int D>
__device__ inline void softmax_weights(float (&s)[hopper_keys / 2], SoftmaxState<D>& st, float (&alpha)[2], int kv0,
                                       int row0, int seq, bool causal, float scale_log2) {
  const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  if (kv0 + hopper_keys > seq || (causal && kv0 + hopper_keys - 1 > row0))
#pragma unroll
    for (int j = 0; j < hopper_keys / 8; ++j)
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        const int key = kv0 + 8 * j + 2 * t + (c & 1), row = row0 + g + 8 * (c >> 1);
        if (key >= seq || (causal && key > row)) s[4 * j + c] = -INFINITY;
      }
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float tile_max = -INFINITY;
#pragma unroll
    for (int j = 0; j < hopper_keys / 8; ++j) tile_max = fmaxf(tile_max, fmaxf(s[4 * j + 2 * r], s[4 * j + 2 * r + 1]));
    tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 1));  // the quad 4g..4g+3 holds the row
    tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 2));
    const float m_new = fmaxf(st.m[r], tile_max);
    const float m_scaled = m_new == -INFINITY ? 0.f : m_new * scale_log2;  // a fully masked row: no -inf - -inf
    alpha[r] = exp2f(st.m[r] * scale_log2 - m_scaled);
    float row_sum = 0.f;
#pragma unroll
    for (int j = 0; j < hopper_keys / 8; ++j)
#pragma unroll
      for (int c = 2 * r; c < 2 * r + 2; ++c) row_sum += (s[4 * j + c] = exp2f(fmaf(s[4 * j + c], scale_log2, -m_scaled)));
    st.l[r] = st.l[r] * alpha[r] + row_sum;
    st.m[r] = m_new;
  }
}

// O's rows g (accumulators 4j, 4j+1) and g+8 (4j+2, 4j+3) times alpha.
template <int D>
__device__ inline void rescale_output(float (&o)[D / 2], const float (&alpha)[2]) {
#pragma unroll
  for (int j = 0; j < D / 8; ++j)
#pragma unroll
    for (int c = 0; c < 4; ++c) o[4 * j + c] *= alpha[c / 2];
}

// The weights rounded to T, packed as the A operand of P·V (accumulators
// 8kk..8kk+7 are keys 16kk..16kk+15: the accumulator layout is the register-A
// layout, so no shuffle is needed).
template <typename T>
__device__ inline void weights_as_a(std::uint32_t (&p)[hopper_keys / 16][4], const float (&s)[hopper_keys / 2]) {
#pragma unroll
  for (int kk = 0; kk < hopper_keys / 16; ++kk)
#pragma unroll
    for (int i = 0; i < 4; ++i) p[kk][i] = cudalabs::ptx::pack_pair<T>(s[8 * kk + 2 * i], s[8 * kk + 2 * i + 1]);
}

// The whole step when nothing is in flight: weights, O rescaled, P packed.
template <typename T, int D>
__device__ inline void online_softmax(float (&s)[hopper_keys / 2], SoftmaxState<D>& st,
                                      std::uint32_t (&p)[hopper_keys / 16][4], int kv0, int row0, int seq,
                                      bool causal, float scale_log2) {
  float alpha[2];
  softmax_weights<D>(s, st, alpha, kv0, row0, seq, causal, scale_log2);
  rescale_output<D>(st.o, alpha);
  weights_as_a<T>(p, s);
}

// O / l into FP32 out [seq][D] (rows past seq are not written).
template <int D>
__device__ inline void store_output(const SoftmaxState<D>& st, float* out, int row0, int seq) {
  const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float total = st.l[r];
    total += __shfl_xor_sync(0xffffffffu, total, 1);
    total += __shfl_xor_sync(0xffffffffu, total, 2);
    const int row = row0 + g + 8 * r;
    if (row >= seq) continue;
    const float inv = 1.f / total;  // > 0: every row sees key 0
#pragma unroll
    for (int j = 0; j < D / 8; ++j)
      *reinterpret_cast<float2*>(out + static_cast<std::int64_t>(row) * D + 8 * j + 2 * t) =
          make_float2(st.o[4 * j + 2 * r] * inv, st.o[4 * j + 2 * r + 1] * inv);
  }
}

// One tile of keys for one warpgroup, nothing overlapped (variants 1 and 2):
// S = Q·Kᵀ, wait; softmax; O += P·V, wait. On return the warpgroup's wgmmas
// have finished reading k_tile and v_tile. row0: this warp's first query.
// (No half-tile P·V here — upper_half_masked: a run-time choice of the P·V in
// this per-tile path made ptxas inject warpgroup fences, info C7519, into
// every tile's loop; only pingpong, whose last P·V is outside its loop, uses it.)
template <typename T, int D>
__device__ inline void attend_tile(SoftmaxState<D>& st, float (&s)[hopper_keys / 2],
                                   std::uint32_t (&p)[hopper_keys / 16][4], const void* q_tile, int q_slab_rows,
                                   const void* k_tile, const void* v_tile, int kv0, int row0, int seq, bool causal,
                                   float scale_log2) {
  hw::wgmma_fence();
  issue_scores<T, D>(s, q_tile, q_slab_rows, k_tile);
  hw::wgmma_commit_group();
  hw::wgmma_wait_group<0>();
  hw::fence_operands(s);

  online_softmax<T, D>(s, st, p, kv0, row0, seq, causal, scale_log2);

  hw::wgmma_fence();
  issue_output<T, D>(st.o, p, v_tile);
  hw::wgmma_commit_group();
  hw::wgmma_wait_group<0>();
  hw::fence_operands(st.o);
}

// The keys a query tile [q0, q0 + rows) visits: all, or under the causal mask
// those up to its last query.
__device__ inline int key_tiles(int seq, int q0, int rows, bool causal) {
  const int kv_end = causal ? min(seq, q0 + rows) : seq;
  return cudalabs::ceil_div(kv_end, hopper_keys);
}

// ---- host: tensor maps ---------------------------------------------------------------------

// The three maps a launch needs: Q with boxes of `q_rows` rows, K and V of hopper_keys rows.
struct AttentionMaps {
  CUtensorMap q, k, v;
};

// A 3-D map per tensor, {d, seq, heads} innermost first, so that a box reaching
// past one head's last row reads zeros, not the next head.
template <typename T>
CUtensorMap attention_tensor_map(const T* base, const AttentionShape& s, int box_rows) {
  return hw::tensor_map_128b<3>(base, {s.dim, s.seq, s.heads_total()}, {s.dim, s.head_elements()},
                                {slab_cols, box_rows, 1});
}

// The maps of the last launch of this T, encoded again only when a pointer,
// the shape or the Q box changed. Safe: a tensor map holds nothing but the
// base address, sizes, strides and box it was encoded from (no data, no
// allocation), so a map from equal arguments is the same map — even for a new
// buffer that happens to reuse a freed one's address. What it saves is host
// time, 3 cuTensorMapEncodeTiled per launch (a few µs: noise against a 1 ms
// kernel, not against the 20 µs ones at N 1024 when launches queue back to
// back). thread_local: a program launching from two threads gets two caches.
template <typename T>
const AttentionMaps& attention_maps(const T* q, const T* k, const T* v, const AttentionShape& s, int q_rows) {
  struct Key {
    const T *q = nullptr, *k = nullptr, *v = nullptr;
    std::int64_t heads = 0;
    int seq = 0, dim = 0, q_rows = 0;
    bool operator==(const Key&) const = default;
  };
  thread_local Key cached;
  thread_local AttentionMaps maps;
  const Key key{q, k, v, s.heads_total(), s.seq, s.dim, q_rows};
  if (!(key == cached)) {
    maps = {attention_tensor_map(q, s, q_rows), attention_tensor_map(k, s, hopper_keys),
            attention_tensor_map(v, s, hopper_keys)};
    cached = key;
  }
  return maps;
}

// ---- host: launching ------------------------------------------------------------------------

// Every kernel of this lab has this signature (the maps by value: __grid_constant__).
using AttentionKernel = void (*)(const CUtensorMap, const CUtensorMap, const CUtensorMap, float*, int, float, bool);

// A kernel with its dynamic shared-memory limit raised (above 48 KB a kernel must opt in).
inline KernelChoice opt_in(AttentionKernel kernel, int threads, std::size_t smem) {
  cudalabs::allow_dynamic_smem(kernel, smem, "an attention kernel of lab 31");
  return KernelChoice{reinterpret_cast<const void*>(kernel), threads, smem};
}

// Every head of `shape` in one launch of `kc`: grid (query tiles of q_rows, heads, batch).
template <typename T>
void launch_attention(const KernelChoice& kc, int q_rows, const char* name, const T* q, const T* k, const T* v,
                      float* out, const AttentionShape& shape, cudaStream_t stream) {
  const AttentionMaps& maps = attention_maps(q, k, v, shape, q_rows);
  const auto kernel = reinterpret_cast<AttentionKernel>(const_cast<void*>(kc.kernel));
  kernel<<<attention_grid(shape, q_rows), kc.threads, kc.smem_bytes, stream>>>(
      maps.q, maps.k, maps.v, out, shape.seq, score_scale_log2(shape.dim), shape.causal);
  CUDALABS_CHECK_LAUNCH(name);
}

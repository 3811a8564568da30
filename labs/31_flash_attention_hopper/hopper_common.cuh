#pragma once
// What lab 31's kernels share: the tile sizes, the shared-memory layout TMA
// writes and wgmma reads, the PTX of TMA, mbarriers and wgmma descriptors
// (one small function each, the instruction in its comment), the online
// softmax on a 64×128 tile of scores held in wgmma accumulators, and the
// tensor maps (built on the host through the runtime's driver entry point, so
// the program links only libcudart).
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
#include <cuda.h>  // CUtensorMap and its enums: types only, the program does not link libcuda
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>

#include <cudalabs/error.hpp>
#include <cudalabs/math.hpp>

#include "../16_flash_attention/flash_common.cuh"  // AttentionShape, score_scale_log2, attention_grid
#include "wgmma_ops.cuh"

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

// ---- shared memory, barriers, TMA -------------------------------------------------------

__device__ inline std::uint32_t smem_u32(const void* p) { return static_cast<std::uint32_t>(__cvta_generic_to_shared(p)); }

// mbarrier.init.shared::cta.b64: a barrier that completes a phase when `count`
// threads have arrived and the expected transaction bytes have landed.
__device__ inline void mbarrier_init(std::uint64_t* bar, int count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_u32(bar)), "r"(count) : "memory");
}
// fence.mbarrier_init.release.cluster: the initialised barriers are visible to TMA (the async proxy).
__device__ inline void fence_barrier_init() { asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory"); }

// mbarrier.arrive.expect_tx.shared::cta.b64: arrive once and expect `bytes` from TMA.
__device__ inline void mbarrier_arrive_expect_tx(std::uint64_t* bar, std::uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_u32(bar)), "r"(bytes) : "memory");
}
// mbarrier.arrive.shared::cta.b64: one thread's arrival (the consumers' "slot is free").
__device__ inline void mbarrier_arrive(std::uint64_t* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(smem_u32(bar)) : "memory");
}
// mbarrier.try_wait.parity.shared::cta.b64 in a loop: until the phase of parity `phase` completed.
__device__ inline void mbarrier_wait(std::uint64_t* bar, std::uint32_t phase) {
  asm volatile(
      "{\n.reg .pred done;\nwait_%=:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra wait_%=;\n}\n" ::"r"(smem_u32(bar)),
      "r"(phase)
      : "memory");
}

// cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes: one box
// {64 columns, rows, 1 head} at (column, row, head) of the tensor map into shared memory;
// rows past the head's seq arrive as zeros (the map's bounds are per head).
__device__ inline void tma_load_3d(void* dst, const CUtensorMap* map, std::uint64_t* bar, int col, int row,
                                   int head) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5}], [%2];\n" ::
          "r"(smem_u32(dst)),
      "l"(map), "r"(smem_u32(bar)), "r"(col), "r"(row), "r"(head)
      : "memory");
}

// A [rows × D] tile (D/64 slabs) of one head, starting at `row`, onto `bar`.
template <int D>
__device__ inline void tma_load_tile(void* dst, const CUtensorMap* map, std::uint64_t* bar, int row, int head,
                                     int rows) {
#pragma unroll
  for (int s = 0; s < D / slab_cols; ++s)
    tma_load_3d(static_cast<char*>(dst) + s * rows * 128, map, bar, s * slab_cols, row, head);
}

// ---- wgmma --------------------------------------------------------------------------------

// The shared-memory matrix descriptor of wgmma (PTX ISA, "Matrix Descriptor"): start
// address, leading and stride byte offsets (all >> 4), layout 1 = 128-byte swizzle.
__device__ inline std::uint64_t sw128_descriptor(const void* p, std::uint32_t lbo_bytes, std::uint32_t sbo_bytes) {
  return static_cast<std::uint64_t>((smem_u32(p) & 0x3FFFF) >> 4) |
         static_cast<std::uint64_t>((lbo_bytes >> 4) & 0x3FFF) << 16 |
         static_cast<std::uint64_t>((sbo_bytes >> 4) & 0x3FFF) << 32 | std::uint64_t{1} << 62;
}
// Q or K (K-major), 16 columns starting at column 16·kk: LBO unused with this swizzle.
__device__ inline std::uint64_t k_major_descriptor(const void* tile, int rows, int kk) {
  return sw128_descriptor(static_cast<const char*>(tile) + (kk / 4) * rows * 128 + (kk % 4) * 32, 16, 1024);
}
// V (MN-major, transposed B), keys 16·kk .. 16·kk + 15, every column.
__device__ inline std::uint64_t mn_major_descriptor(const void* tile, int rows, int kk) {
  return sw128_descriptor(static_cast<const char*>(tile) + kk * 16 * 128, rows * 128, 1024);
}

// wgmma.fence.sync.aligned: register and shared-memory writes before it are seen by the next wgmma.
__device__ inline void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
// wgmma.commit_group.sync.aligned: the wgmmas issued so far form one group.
__device__ inline void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
// wgmma.wait_group.sync.aligned N: at most N groups still in flight.
template <int N>
__device__ inline void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
// The accumulators are written by the asynchronous unit: keep the compiler from
// moving reads or writes of them across a fence or a wait.
template <int N>
__device__ inline void fence_registers(float (&r)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(r[i])::"memory");
}

// setmaxnreg.{inc,dec}.sync.aligned.u32: move registers between warpgroups (producer
// gives, consumers take) — the register file is 64 K per SM whatever the split.
template <int N>
__device__ inline void registers_increase() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(N));
}
template <int N>
__device__ inline void registers_decrease() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(N));
}

// bar.sync / bar.arrive with an id and a thread count: named barriers between
// warpgroups (id 0 is __syncthreads').
__device__ inline void named_barrier_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
__device__ inline void named_barrier_arrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

// ---- the two products and the online softmax, for one warpgroup ----------------------------

// S[64×128] = Q[64×D] · K[128×D]ᵀ: D/16 wgmmas, issued (not waited for). q_tile: this
// warpgroup's 64 rows inside a Q tile whose slabs hold `q_slab_rows` rows (64 or 128).
template <typename T, int D>
__device__ inline void issue_scores(float (&s)[hopper_keys / 2], const void* q_tile, int q_slab_rows,
                                    const void* k_tile) {
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk)
    Wgmma<hopper_keys, T>::ss(s, k_major_descriptor(q_tile, q_slab_rows, kk), k_major_descriptor(k_tile, hopper_keys, kk),
                              kk > 0);
}

// O[64×D] += P[64×128] · V[128×D], P from registers: 8 wgmmas, issued.
template <typename T, int D>
__device__ inline void issue_output(float (&o)[D / 2], const std::uint32_t (&p)[hopper_keys / 16][4], const void* v_tile) {
#pragma unroll
  for (int kk = 0; kk < hopper_keys / 16; ++kk) Wgmma<D, T>::rs(o, p[kk], mn_major_descriptor(v_tile, hopper_keys, kk), 1);
}

// Two floats rounded to nearest into one register, the lower column in the low half.
template <typename T>
__device__ inline std::uint32_t pack_pair(float lo, float hi) {
  if constexpr (std::is_same_v<T, __half>) {
    const __half2 h = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<const std::uint32_t*>(&h);
  } else {
    const __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<const std::uint32_t*>(&h);
  }
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

// Masks S (keys >= seq, and under the causal mask keys after the query), updates
// the running max and sum, rescales O, and returns P rounded to T, packed as
// the A operand of P·V (accumulators 8kk..8kk+7 are keys 16kk..16kk+15: the
// accumulator layout is the register-A layout, so no shuffle is needed).
template <typename T, int D>
__device__ inline void online_softmax(float (&s)[hopper_keys / 2], SoftmaxState<D>& st,
                                      std::uint32_t (&p)[hopper_keys / 16][4], int kv0, int row0, int seq,
                                      bool causal, float scale_log2) {
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
    const float alpha = exp2f(st.m[r] * scale_log2 - m_scaled);
    float row_sum = 0.f;
#pragma unroll
    for (int j = 0; j < hopper_keys / 8; ++j)
#pragma unroll
      for (int c = 2 * r; c < 2 * r + 2; ++c) row_sum += (s[4 * j + c] = exp2f(fmaf(s[4 * j + c], scale_log2, -m_scaled)));
    st.l[r] = st.l[r] * alpha + row_sum;
    st.m[r] = m_new;
#pragma unroll
    for (int j = 0; j < D / 8; ++j) st.o[4 * j + 2 * r] *= alpha, st.o[4 * j + 2 * r + 1] *= alpha;
  }
#pragma unroll
  for (int kk = 0; kk < hopper_keys / 16; ++kk)
#pragma unroll
    for (int i = 0; i < 4; ++i) p[kk][i] = pack_pair<T>(s[8 * kk + 2 * i], s[8 * kk + 2 * i + 1]);
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
// have finished reading k_tile and v_tile.
template <typename T, int D>
__device__ inline void attend_tile(SoftmaxState<D>& st, float (&s)[hopper_keys / 2], std::uint32_t (&p)[hopper_keys / 16][4],
                                   const void* q_tile, int q_slab_rows, const void* k_tile, const void* v_tile, int kv0,
                                   int row0, int seq, bool causal, float scale_log2) {
  wgmma_fence();
  issue_scores<T, D>(s, q_tile, q_slab_rows, k_tile);
  wgmma_commit();
  wgmma_wait<0>();
  fence_registers(s);

  online_softmax<T, D>(s, st, p, kv0, row0, seq, causal, scale_log2);

  wgmma_fence();
  issue_output<T, D>(st.o, p, v_tile);
  wgmma_commit();
  wgmma_wait<0>();
  fence_registers(st.o);
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

// cuTensorMapEncodeTiled through cudaGetDriverEntryPoint (the runtime has loaded
// the driver already). A 3-D map per tensor, {d, seq, heads} innermost first, so
// that a box reaching past one head's last row reads zeros, not the next head.
template <typename T>
CUtensorMap make_tensor_map(const T* base, const AttentionShape& s, int box_rows) {
  using Encode = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                              const cuuint64_t*, const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave,
                              CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);
  static const Encode encode = [] {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
#if CUDART_VERSION >= 12050
    CUDALABS_CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &found));
#else
    CUDALABS_CHECK(cudaGetDriverEntryPoint("cuTensorMapEncodeTiled", &fn, cudaEnableDefault, &found));
#endif
    if (found != cudaDriverEntryPointSuccess || fn == nullptr)
      throw cudalabs::CudaError("the driver has no cuTensorMapEncodeTiled (cudaGetDriverEntryPoint): it needs CUDA 12");
    return reinterpret_cast<Encode>(fn);
  }();
  CUtensorMap map;
  const cuuint64_t dims[3] = {static_cast<cuuint64_t>(s.dim), static_cast<cuuint64_t>(s.seq),
                              static_cast<cuuint64_t>(s.heads_total())};
  const cuuint64_t strides[2] = {static_cast<cuuint64_t>(s.dim) * sizeof(T),
                                 static_cast<cuuint64_t>(s.seq) * s.dim * sizeof(T)};  // bytes, dims 1 and 2
  const cuuint32_t box[3] = {slab_cols, static_cast<cuuint32_t>(box_rows), 1};
  const cuuint32_t unit[3] = {1, 1, 1};
  const CUresult rc = encode(&map, std::is_same_v<T, __half> ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16 : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
                             3, const_cast<T*>(base), dims, strides, box, unit, CU_TENSOR_MAP_INTERLEAVE_NONE,
                             CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                             CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (rc != CUDA_SUCCESS)
    throw cudalabs::CudaError("cuTensorMapEncodeTiled failed (CUresult " + std::to_string(static_cast<int>(rc)) +
                              ") for a [" + std::to_string(s.heads_total()) + "][" + std::to_string(s.seq) + "][" +
                              std::to_string(s.dim) + "] tensor: TMA needs 16-byte-aligned base and row strides");
  return map;
}

template <typename T>
AttentionMaps make_attention_maps(const T* q, const T* k, const T* v, const AttentionShape& s, int q_rows) {
  return {make_tensor_map(q, s, q_rows), make_tensor_map(k, s, hopper_keys), make_tensor_map(v, s, hopper_keys)};
}

// ---- host: launching ------------------------------------------------------------------------

// Every kernel of this lab has this signature (the maps by value: __grid_constant__).
using AttentionKernel = void (*)(const CUtensorMap, const CUtensorMap, const CUtensorMap, float*, int, float, bool);

// A kernel with its dynamic shared-memory limit raised (above 48 KB a kernel must opt in).
inline KernelChoice opt_in(AttentionKernel kernel, int threads, std::size_t smem) {
  CUDALABS_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
  return KernelChoice{reinterpret_cast<const void*>(kernel), threads, smem};
}

// Every head of `shape` in one launch of `kc`: grid (query tiles of q_rows, heads, batch).
template <typename T>
void launch_attention(const KernelChoice& kc, int q_rows, const char* name, const T* q, const T* k, const T* v,
                      float* out, const AttentionShape& shape, cudaStream_t stream) {
  const AttentionMaps maps = make_attention_maps(q, k, v, shape, q_rows);
  const auto kernel = reinterpret_cast<AttentionKernel>(const_cast<void*>(kc.kernel));
  kernel<<<attention_grid(shape, q_rows), kc.threads, kc.smem_bytes, stream>>>(
      maps.q, maps.k, maps.v, out, shape.seq, score_scale_log2(shape.dim), shape.causal);
  CUDALABS_CHECK_LAUNCH(name);
}

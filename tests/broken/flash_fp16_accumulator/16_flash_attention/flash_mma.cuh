// BROKEN ON PURPOSE for tests/grading: the grader must give lab 16 zero for correctness.
// The bug: flash_fp16 accumulates O += P·V in FP16 (mma.sync ...f16.f16.f16.f16, half the
// accumulator registers): the running sum o is rounded to 11 bits after every 16 keys.
// With the default V in [-1, 1) the sums cancel and the error mostly stays within the
// tolerance (2u, 9.8e-4); with --inputs positive_v (V in [0, 1)) o grows to about l/2 and
// the error to 1.4-2.7 times the tolerance at N = 1024 and 2048 (flash_check.cuh). Caught by
// the `positive_v` run of grading.toml: flash_fp16 wrong there. flash_bf16 stays right
// (mma.sync has no BF16 accumulator).
#pragma once
// FlashAttention forward on the tensor cores with mma.sync (the FlashAttention-2
// structure): FP16 or BF16 inputs, FP32 accumulation, FP32 output.
//
// A block of 4 warps owns 64 query rows; each warp owns 16 of them and never
// talks to the others except through the shared K and V tiles. Per tile of 64
// keys, one warp:
//   1. S[16×64] = Q·Kᵀ: 4 k-steps × 8 mma.m16n8k16, Q's fragments held in
//      registers for the whole loop, K's read from shared memory by ldmatrix;
//   2. online softmax directly on the accumulator registers: each thread holds
//      16 scores of two rows (g and g+8), the row's other 48 sit in the 3 other
//      threads of its quad, so a row max or sum is two __shfl_xor_sync;
//   3. O[16×d] += P·V: P is rounded to FP16/BF16 IN REGISTERS and used as the A
//      operand as it is — the m16n8k16 accumulator layout (row g, columns 2t,
//      2t+1 of each 8-column block) is the A-operand layout of a 16-column
//      slice taken two accumulator blocks at a time — and V's fragments come
//      from ldmatrix.trans (V is stored [key][dim], the mma wants it k-major).
// S and P never leave the registers. K and V tiles are double-buffered with
// cp.async: tile j+1 is in flight while tile j is multiplied.
//
// Fragment layouts of mma.m16n8k16 (PTX ISA), lane = 4·g + t:
//   A 16×16 (4 regs of 2 values): a0 (g, 2t..2t+1) a1 (g+8, 2t..) a2 (g, 8+2t..) a3 (g+8, 8+2t..)
//   B 16×8  (2 regs):             b0 (k 2t..2t+1, n g)  b1 (k 8+2t.., n g)
//   C 16×8  (4 floats):           c0,c1 (g, 2t..2t+1)   c2,c3 (g+8, 2t..2t+1)
//
// Shared memory rows are padded by 8 elements (16 bytes): a row is D+8
// elements = 144 B (D = 64) or 272 B (D = 128), an odd number of 16-byte
// units, so the 8 row addresses of one ldmatrix phase fall in 8 different
// 16-byte bank groups: conflict-free without a swizzle.
//
// Needs sm_80 (mma.m16n8k16 for FP16 and BF16, cp.async). On older GPUs the
// kernel body compiles to a trap and the labs skip these variants.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include <cudalabs/device.hpp>
#include <cudalabs/error.hpp>
#include <cudalabs/math.hpp>

#include "flash_common.cuh"
#include "mma_fragments.cuh"

// Internal linkage: another lab's host program compiles the course's copy of
// this file next to a kernel library that compiles the student's, and the two
// must never meet at link time (docs/lab-anatomy.md).
namespace {

inline constexpr int mma_tile_rows = 64;  // queries per block: 4 warps × 16
inline constexpr int mma_tile_keys = 64;  // keys per tile
inline constexpr int mma_warps = 4;
inline constexpr int mma_threads = 32 * mma_warps;

template <typename T, int D>
struct MmaSmem {
  static_assert(std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>, "FP16 or BF16 inputs");
  static_assert(D == 64 || D == 128, "the tensor-core kernel is compiled for head dimensions 64 and 128");
  static constexpr int ld = D + 8;                            // elements per shared-memory row
  static constexpr int tile = mma_tile_keys * ld;             // elements per Q, K or V tile
  static constexpr std::size_t bytes = 5 * tile * sizeof(T);  // Q, K ×2, V ×2: 46 KB (D=64), 87 KB (D=128)
};

// Rows [first, first + 64) of a [seq][D] matrix into a padded shared tile.
template <typename T, int D>
__device__ inline void load_tile_async(T* dst, const T* __restrict__ src, int first, int seq) {
  load_rows_async<mma_tile_keys, D, mma_threads>(dst, src, first, seq,
                                                 [](int row, int chunk) { return row * MmaSmem<T, D>::ld + 8 * chunk; });
}

// ---- the kernel ------------------------------------------------------------------

// The bug: c += a·b with the 16-bit accumulator mma. c holds the same elements
// as the FP32 form's (c0, c1 row g; c2, c3 row g+8), rounded to FP16 on the way
// in and back out, as registers of FP16 accumulators would hold them.
__device__ inline void mma_16x8x16_fp16_accumulator(float (&c)[4], const std::uint32_t (&a)[4], std::uint32_t b0,
                                                    std::uint32_t b1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  std::uint32_t d0 = ptx::pack_pair<__half>(c[0], c[1]), d1 = ptx::pack_pair<__half>(c[2], c[3]);
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 {%0, %1}, {%2, %3, %4, %5}, {%6, %7}, {%0, %1};\n"
      : "+r"(d0), "+r"(d1)
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  const float2 row_g = __half22float2(*reinterpret_cast<const __half2*>(&d0));
  const float2 row_g8 = __half22float2(*reinterpret_cast<const __half2*>(&d1));
  c[0] = row_g.x, c[1] = row_g.y, c[2] = row_g8.x, c[3] = row_g8.y;
#else
  (void)c, (void)a, (void)b0, (void)b1;
#endif
}

template <typename T, int D>
__global__ void __launch_bounds__(mma_threads)
    flash_mma_kernel(const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v, float* __restrict__ out,
                     int seq, float scale_log2, bool causal) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  using Smem = MmaSmem<T, D>;
  constexpr int BC = mma_tile_keys, LD = Smem::ld;
  constexpr int k_steps = D / 16;     // 16-wide slices of d in Q·Kᵀ
  constexpr int s_blocks = BC / 8;    // 8-key accumulator blocks of S
  constexpr int o_blocks = D / 8;     // 8-column accumulator blocks of O
  extern __shared__ uint4 smem_u4[];  // uint4: cp.async and ldmatrix need 16-byte alignment
  T* qs = reinterpret_cast<T*>(smem_u4);
  T* ks = qs + Smem::tile;      // two buffers
  T* vs = ks + 2 * Smem::tile;  // two buffers

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, t = lane % 4;  // this thread's rows g, g+8 and columns 2t, 2t+1 of each block
  const std::int64_t head = attention_head_offset(seq, D);
  q += head, k += head, v += head, out += head;
  const int q0 =
      attention_query_tile(causal, static_cast<int>(blockIdx.x), static_cast<int>(gridDim.x)) * mma_tile_rows;
  const int warp_row0 = q0 + 16 * warp;
  const int kv_end = causal ? min(seq, q0 + mma_tile_rows) : seq;
  const int tiles = cudalabs::ceil_div(kv_end, BC);

  load_tile_async<T, D>(qs, q, q0, seq);
  ptx::cp_async_commit();
  load_tile_async<T, D>(ks, k, 0, seq);
  load_tile_async<T, D>(vs, v, 0, seq);
  ptx::cp_async_commit();

  // Q's A fragments, kept in registers for the whole loop. The four matrices of
  // each ldmatrix: rows 0-7 and 8-15 of columns 16kk+0-7, then of 16kk+8-15.
  ptx::cp_async_wait<1>();  // Q has landed; tile 0 may still be in flight
  __syncthreads();
  std::uint32_t qf[k_steps][4];
#pragma unroll
  for (int kk = 0; kk < k_steps; ++kk)
    ptx::ldmatrix_x4(qf[kk], qs + (16 * warp + (lane & 7) + 8 * ((lane >> 3) & 1)) * LD + 16 * kk + 8 * (lane >> 4));

  float o[o_blocks][4] = {};
  float m[2] = {-INFINITY, -INFINITY};  // running max of rows g, g+8 (raw score units)
  float l[2] = {0.f, 0.f};              // this thread's share of the running sums

  for (int j = 0; j < tiles; ++j) {
    const int kv0 = j * BC;
    if (j + 1 < tiles) {  // prefetch tile j+1 into the other buffer, then wait for tile j only
      load_tile_async<T, D>(ks + ((j + 1) & 1) * Smem::tile, k, kv0 + BC, seq);
      load_tile_async<T, D>(vs + ((j + 1) & 1) * Smem::tile, v, kv0 + BC, seq);
      ptx::cp_async_commit();
      ptx::cp_async_wait<1>();
    } else {
      ptx::cp_async_wait<0>();
    }
    __syncthreads();  // every thread's pieces of tile j have landed

    const T* kt = ks + (j & 1) * Smem::tile;
    const T* vt = vs + (j & 1) * Smem::tile;

    // 1. S = Q · Kᵀ. K is stored [key][dim]: exactly the "col" B operand
    // (B[k][n] = K[n][k]), so plain ldmatrix gives b0, b1 of two key blocks.
    float s[s_blocks][4] = {};
#pragma unroll
    for (int kk = 0; kk < k_steps; ++kk)
#pragma unroll
      for (int nb = 0; nb < s_blocks; nb += 2) {
        std::uint32_t b[4];  // keys 8nb+0-7: dims +0-7, +8-15; keys 8nb+8-15: dims +0-7, +8-15
        ptx::ldmatrix_x4(b, kt + (8 * nb + (lane & 7) + 8 * (lane >> 4)) * LD + 16 * kk + 8 * ((lane >> 3) & 1));
        ptx::mma_16x8x16<T>(s[nb], qf[kk], b[0], b[1]);
        ptx::mma_16x8x16<T>(s[nb + 1], qf[kk], b[2], b[3]);
      }

    // Mask keys past the end and, causal, keys after the query: -inf.
    mask_16rows(s, kv0, warp_row0, seq, causal);

    // 2. Online softmax on the registers (mma_fragments.cuh).
    online_softmax_16rows(s, o, m, l, scale_log2, [](float x) { return exp2f(x); });

    // 3. O += P · V, 16 keys (two S blocks = one A operand) per k-step.
#pragma unroll
    for (int kk = 0; kk < BC / 16; ++kk) {
      std::uint32_t a[4];
      weights_as_a<T>(a, s, kk);
#pragma unroll
      for (int ob = 0; ob < o_blocks; ob += 2) {
        std::uint32_t b[4];  // dims 8ob+0-7: keys +0-7, +8-15; dims 8ob+8-15: keys +0-7, +8-15
        ptx::ldmatrix_x4_trans(b, vt + (16 * kk + (lane & 7) + 8 * ((lane >> 3) & 1)) * LD + 8 * ob + 8 * (lane >> 4));
        if constexpr (std::is_same_v<T, __half>) {
          mma_16x8x16_fp16_accumulator(o[ob], a, b[0], b[1]);
          mma_16x8x16_fp16_accumulator(o[ob + 1], a, b[2], b[3]);
        } else {
          ptx::mma_16x8x16<T>(o[ob], a, b[0], b[1]);
          ptx::mma_16x8x16<T>(o[ob + 1], a, b[2], b[3]);
        }
      }
    }
    __syncthreads();  // the next iteration's prefetch overwrites this tile's buffers
  }

#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const float total = quad_sum(l[r]);
    const int row = warp_row0 + g + 8 * r;
    if (row >= seq) continue;
    const float inv = 1.f / total;  // > 0: every row sees key 0
#pragma unroll
    for (int ob = 0; ob < o_blocks; ++ob)
      *reinterpret_cast<float2*>(out + static_cast<std::int64_t>(row) * D + 8 * ob + 2 * t) =
          make_float2(o[ob][2 * r] * inv, o[ob][2 * r + 1] * inv);
  }
#else
  (void)q, (void)k, (void)v, (void)out, (void)seq, (void)scale_log2, (void)causal;
  __trap();  // never launched: the host checks for compute capability 8.0 first
#endif
}

// ---- launcher --------------------------------------------------------------------

template <typename T, int D>
const void* flash_mma_prepare() {
  static const bool done = [] {  // above 48 KB of dynamic shared memory a kernel must opt in, once
    cudalabs::allow_dynamic_smem(flash_mma_kernel<T, D>, MmaSmem<T, D>::bytes, "flash_mma_kernel");
    return true;
  }();
  (void)done;
  return reinterpret_cast<const void*>(flash_mma_kernel<T, D>);
}

template <typename T>
std::size_t flash_mma_smem_bytes(int dim) {
  return dim == 64 ? MmaSmem<T, 64>::bytes : MmaSmem<T, 128>::bytes;
}

template <typename T>
KernelChoice flash_mma_choice(int dim) {
  if (dim == 64) return {flash_mma_prepare<T, 64>(), mma_threads, MmaSmem<T, 64>::bytes};
  return {flash_mma_prepare<T, 128>(), mma_threads, MmaSmem<T, 128>::bytes};
}

// Every head of `shape` in one launch; q, k, v already in T (the course converts
// the FP32 inputs). dim must be 64 or 128 (flash_mma_supports, attention_shape.hpp):
// the caller rejects others.
template <typename T>
void flash_mma(const T* q, const T* k, const T* v, float* out, const AttentionShape& shape, cudaStream_t stream) {
  const dim3 grid = attention_grid(shape, mma_tile_rows);
  const float scale = score_scale_log2(shape.dim);
  if (shape.dim == 64) {
    flash_mma_prepare<T, 64>();
    flash_mma_kernel<T, 64>
        <<<grid, mma_threads, MmaSmem<T, 64>::bytes, stream>>>(q, k, v, out, shape.seq, scale, shape.causal);
  } else {
    flash_mma_prepare<T, 128>();
    flash_mma_kernel<T, 128>
        <<<grid, mma_threads, MmaSmem<T, 128>::bytes, stream>>>(q, k, v, out, shape.seq, scale, shape.causal);
  }
  CUDALABS_CHECK_LAUNCH("flash_mma_kernel");
}

}  // namespace

#pragma once
// Attention scores S = Q·Kᵀ / sqrt(d): Q, K [seq×dim] row-major, S [seq×seq].
// Every score is a dot product of a row of Q with a row of K, so both operands
// are read along their rows (unit stride); that is what "K transposed" buys
// over a plain A·B, where B would be read down its columns.
//
//   scores_tiled_kt        the original: 16×16 outputs per block, one per
//                          thread; the block's 16 rows of Q and 16 rows of K
//                          (the whole d-slice, d <= 128) staged in shared
//                          memory, K transposed with +1 padding
//   scores_register_tiled  128×128 outputs per block, 8×8 per thread, the
//                          d-slice staged 16 at a time: 64 FMAs per 4
//                          shared-memory loads instead of 1 per 2
#include <cstdint>

#include <cudalabs/error.hpp>
#include <cudalabs/math.hpp>

// attention_max_dim, attention_scale, check_head_dim: the course's. Named from
// the labs folder, so that a copy of this file in a submission's folder, where
// only the student's files are, finds it too (docs/lab-anatomy.md).
#include "../13_attention_scores/attention_sizes.hpp"

// Internal linkage: another lab's host program compiles the course's copy of
// this file next to a kernel library that compiles the student's, and the two
// must never meet at link time (docs/lab-anatomy.md).
namespace {

// ---- v1: tiled_kt, the original ------------------------------------------------

inline constexpr int scores_tile = 16;

// Thread (ty, tx) computes S[row0 + ty][col0 + tx]. In the dot-product loop a
// warp (two values of ty, 16 of tx) reads q_tile[ty][t] (2 addresses,
// broadcast) and kt_tile[t][tx] (16 consecutive floats): no bank conflicts.
// Stored untransposed, k_tile[tx][t] would be 16 addresses d floats apart, all
// in one bank when d = 64: a 16-way conflict. The transposing store writes
// kt_tile[t][ty] with t = tx + 16i: addresses 17 apart across tx thanks to the
// +1 padding, so 16 different banks (without it, 16 apart: 2 banks, 8-way).
__global__ void __launch_bounds__(scores_tile * scores_tile)
    scores_tiled_kt_kernel(const float* __restrict__ q, const float* __restrict__ k, float* __restrict__ s, int seq,
                           int dim, float scale) {
  __shared__ float q_tile[scores_tile][attention_max_dim];
  __shared__ float kt_tile[attention_max_dim][scores_tile + 1];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row0 = blockIdx.y * scores_tile, col0 = blockIdx.x * scores_tile;

  // Rows past the end load zeros; their outputs are never stored.
  for (int t = tx; t < dim; t += scores_tile) {
    const int qr = row0 + ty, kr = col0 + ty;
    q_tile[ty][t] = qr < seq ? q[static_cast<std::int64_t>(qr) * dim + t] : 0.0f;
    kt_tile[t][ty] = kr < seq ? k[static_cast<std::int64_t>(kr) * dim + t] : 0.0f;
  }
  __syncthreads();

  float dot = 0.0f;
  for (int t = 0; t < dim; ++t) dot += q_tile[ty][t] * kt_tile[t][tx];
  const int row = row0 + ty, col = col0 + tx;
  if (row < seq && col < seq) s[static_cast<std::int64_t>(row) * seq + col] = dot * scale;
}

inline void scores_tiled_kt(const float* q, const float* k, float* s, int seq, int dim, cudaStream_t stream) {
  check_head_dim(dim);
  const dim3 block(scores_tile, scores_tile);
  const dim3 grid(cudalabs::ceil_div(seq, scores_tile), cudalabs::ceil_div(seq, scores_tile));
  scores_tiled_kt_kernel<<<grid, block, 0, stream>>>(q, k, s, seq, dim, attention_scale(dim));
  CUDALABS_CHECK_LAUNCH("scores_tiled_kt_kernel");
}

// ---- v2: register_tiled -------------------------------------------------------

// Why register tiling: in tiled_kt each FMA needs two shared-memory loads, and
// shared memory delivers 32 floats per clock per SM against 128 FMAs. Here a
// thread loads 8 values of Q and 8 of K (4 float4 loads) per step of t and
// does 8×8 = 64 FMAs with them: each value read from shared memory feeds 8
// FMAs from registers instead of 1.
inline constexpr int rt_tile = 128;           // outputs per block, each way
inline constexpr int rt_thread = 8;           // outputs per thread, each way

// One step of an 8×8 register tile (here and in lab 14's output kernels): 8
// values of A's column and 8 of B's row, each read from shared memory as two
// float4 half a tile apart (4 shared loads for 64 FMAs), multiplied out.
__device__ __forceinline__ void outer_product_8x8(float (&acc)[8][8], const float* a_lo, const float* a_hi,
                                                  const float* b_lo, const float* b_hi) {
  const float4 a0 = *reinterpret_cast<const float4*>(a_lo), a1 = *reinterpret_cast<const float4*>(a_hi);
  const float4 b0 = *reinterpret_cast<const float4*>(b_lo), b1 = *reinterpret_cast<const float4*>(b_hi);
  const float a[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
  const float b[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
  for (int i = 0; i < 8; ++i)
#pragma unroll
    for (int j = 0; j < 8; ++j) acc[i][j] += a[i] * b[j];
}
static_assert(rt_thread == 8, "outer_product_8x8 computes 8×8 outputs per thread");
inline constexpr int rt_step = 16;            // d-values staged per round
inline constexpr int rt_threads = (rt_tile / rt_thread) * (rt_tile / rt_thread);  // 256
inline constexpr int rt_pad = 4;              // keeps rows 16-byte aligned for float4 reads

// Loads rows [row0, row0 + 128) × d-values [t0, t0 + 16) of a [seq×dim]
// row-major matrix into tile[t][row] (transposed: the compute loop then reads 4
// consecutive rows as one float4). Consecutive threads read consecutive d (16
// floats = 64 bytes of one row: two full sectors); rows past seq and d-values
// past dim load 0, so a tile's partial sums stay exact at the edges. The
// transposing store hits banks 4t + row: a 2-way conflict, on 16 stores (Q
// and K) per 1024 FMAs.
__device__ __forceinline__ void rt_load_transposed(float (*tile)[rt_tile + rt_pad], const float* __restrict__ m,
                                                   int row0, int t0, int seq, int dim) {
  constexpr int rows_per_pass = rt_threads / rt_step;  // 16 threads per row of 16 d-values
  const int r0 = static_cast<int>(threadIdx.x) / rt_step, t = static_cast<int>(threadIdx.x) % rt_step;
  const bool d_ok = t0 + t < dim;
#pragma unroll
  for (int i = 0; i < rt_tile / rows_per_pass; ++i) {
    const int r = r0 + i * rows_per_pass, row = row0 + r;
    tile[t][r] = row < seq && d_ok ? m[static_cast<std::int64_t>(row) * dim + t0 + t] : 0.0f;
  }
}

// Thread (ty, tx) owns rows ty·4 + {0..3} and 64 + ty·4 + {0..3}, columns
// tx·4 + {0..3} and 64 + tx·4 + {0..3}: split in two halves so a warp's float4
// reads of a row of the tile cover 16 consecutive float4 (no bank conflicts)
// and its output stores are 16-byte, 64 consecutive floats per half-row.
__global__ void __launch_bounds__(rt_threads)
    scores_register_tiled_kernel(const float* __restrict__ q, const float* __restrict__ k, float* __restrict__ s,
                                 int seq, int dim, float scale) {
  __shared__ __align__(16) float q_tile[rt_step][rt_tile + rt_pad];
  __shared__ __align__(16) float k_tile[rt_step][rt_tile + rt_pad];
  constexpr int half = rt_tile / 2, quarter = rt_thread / 2;
  const int tx = static_cast<int>(threadIdx.x) % (rt_tile / rt_thread);
  const int ty = static_cast<int>(threadIdx.x) / (rt_tile / rt_thread);
  const int row0 = blockIdx.y * rt_tile, col0 = blockIdx.x * rt_tile;

  float acc[rt_thread][rt_thread] = {};
  for (int t0 = 0; t0 < dim; t0 += rt_step) {
    rt_load_transposed(q_tile, q, row0, t0, seq, dim);
    rt_load_transposed(k_tile, k, col0, t0, seq, dim);
    __syncthreads();
#pragma unroll
    for (int t = 0; t < rt_step; ++t)
      outer_product_8x8(acc, &q_tile[t][ty * quarter], &q_tile[t][half + ty * quarter], &k_tile[t][tx * quarter],
                        &k_tile[t][half + tx * quarter]);
    __syncthreads();  // the next round overwrites the tiles
  }

  // Float4 stores need every row of S 16-byte aligned: seq % 4 == 0 and S
  // itself aligned (cudaMalloc's is; a caller's offset into a buffer may not be).
  const bool vector_store = seq % 4 == 0 && reinterpret_cast<std::uintptr_t>(s) % 16 == 0;
#pragma unroll
  for (int i = 0; i < rt_thread; ++i) {
    const int row = row0 + (i < quarter ? 0 : half) + ty * quarter + i % quarter;
    if (row >= seq) continue;
    float* out = s + static_cast<std::int64_t>(row) * seq;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int col = col0 + h * half + tx * quarter;
      const float* v = &acc[i][h * quarter];
      if (vector_store && col + quarter <= seq) {
        *reinterpret_cast<float4*>(out + col) = make_float4(v[0] * scale, v[1] * scale, v[2] * scale, v[3] * scale);
      } else {
#pragma unroll
        for (int j = 0; j < quarter; ++j)
          if (col + j < seq) out[col + j] = v[j] * scale;
      }
    }
  }
}

inline void scores_register_tiled(const float* q, const float* k, float* s, int seq, int dim, cudaStream_t stream) {
  const dim3 grid(cudalabs::ceil_div(seq, rt_tile), cudalabs::ceil_div(seq, rt_tile));
  scores_register_tiled_kernel<<<grid, rt_threads, 0, stream>>>(q, k, s, seq, dim, attention_scale(dim));
  CUDALABS_CHECK_LAUNCH("scores_register_tiled_kernel");
}

}  // namespace

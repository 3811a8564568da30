#pragma once
// Attention output O = P·V: P [seq×seq] the softmax weights, V [seq×dim],
// O [seq×dim]. The contraction runs over seq (long), the output is only
// seq×dim (narrow): 262144 outputs at seq = 4096, d = 64, against 16.7M in lab
// 13's S. That shape, not the arithmetic, is what this lab is about.
//
//   output_tiled           the original: 16×16 outputs per block, one per
//                          thread, P and V staged 16×16 at a time over the
//                          contraction
//   output_register_tiled  128×64 outputs per block, 8×8 per thread from
//                          registers; at seq = 4096, d = 64 only 32 blocks:
//                          100 of the H100's 132 SMs idle
//   output_split_k         the same tiles, the contraction cut into slices
//                          run by different blocks, summed with atomicAdd:
//                          16× the blocks, every SM busy
#include <algorithm>
#include <cstdint>

#include <cudalabs/device.hpp>
#include <cudalabs/error.hpp>
#include <cudalabs/math.hpp>

#include "../13_attention_scores/attention_scores.cuh"  // outer_product_8x8

// Internal linkage: another lab's host program compiles the course's copy of
// this file next to a kernel library that compiles the student's, and the two
// must never meet at link time (docs/lab-anatomy.md).
namespace {

// ---- v1: tiled, the original ---------------------------------------------------

inline constexpr int output_tile = 16;

// Thread (ty, tx) computes O[row0 + ty][col0 + tx], walking the contraction 16
// at a time: p_tile[ty][t] is a broadcast within a half-warp, v_tile[t][tx] 16
// consecutive floats: no bank conflicts, but 2 shared loads per FMA.
__global__ void __launch_bounds__(output_tile * output_tile)
    output_tiled_kernel(const float* __restrict__ p, const float* __restrict__ v, float* __restrict__ o, int seq,
                        int dim) {
  __shared__ float p_tile[output_tile][output_tile];
  __shared__ float v_tile[output_tile][output_tile];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * output_tile + ty, col = blockIdx.x * output_tile + tx;

  float acc = 0.0f;
  for (int j0 = 0; j0 < seq; j0 += output_tile) {
    // Past the edges load 0: a 0 weight or a 0 value adds nothing to the sum.
    p_tile[ty][tx] = row < seq && j0 + tx < seq ? p[static_cast<std::int64_t>(row) * seq + j0 + tx] : 0.0f;
    v_tile[ty][tx] = j0 + ty < seq && col < dim ? v[static_cast<std::int64_t>(j0 + ty) * dim + col] : 0.0f;
    __syncthreads();
#pragma unroll
    for (int t = 0; t < output_tile; ++t) acc += p_tile[ty][t] * v_tile[t][tx];
    __syncthreads();  // the next tiles overwrite these
  }
  if (row < seq && col < dim) o[static_cast<std::int64_t>(row) * dim + col] = acc;
}

inline void output_tiled(const float* p, const float* v, float* o, int seq, int dim, cudaStream_t stream) {
  const dim3 block(output_tile, output_tile);
  const dim3 grid(cudalabs::ceil_div(dim, output_tile), cudalabs::ceil_div(seq, output_tile));
  output_tiled_kernel<<<grid, block, 0, stream>>>(p, v, o, seq, dim);
  CUDALABS_CHECK_LAUNCH("output_tiled_kernel");
}

// ---- v2: register_tiled ----------------------------------------------------------

inline constexpr int ort_rows = 128;   // rows of O per block
inline constexpr int ort_cols = 64;    // columns of O per block (d <= 128: at most 2 column tiles)
inline constexpr int ort_thread = 8;   // outputs per thread, each way
static_assert(ort_thread == 8, "outer_product_8x8 computes 8×8 outputs per thread");
inline constexpr int ort_step = 16;    // contraction values staged per round
inline constexpr int ort_threads = (ort_rows / ort_thread) * (ort_cols / ort_thread);  // 128
inline constexpr int ort_pad = 4;      // keeps rows 16-byte aligned for float4 reads

// Accumulates P[rows of the tile][j_begin, j_end) · V[j_begin, j_end)[columns of
// the tile] into acc. Thread (ty, tx), ty < 16, tx < 8, owns rows 4ty + {0..3}
// and 64 + 4ty + {0..3}, columns 4tx + {0..3} and 32 + 4tx + {0..3}: per step
// of j it reads 2 float4 of P and 2 of V and does 64 FMAs, 16 per shared load
// where tiled did 0.5. A warp (4 values of ty, 8 of tx) reads 4 distinct float4
// of P and 8 consecutive of V per load: one shared-memory wavefront each.
//   p_tile[t][r] = P[row0 + r][j + t], transposed so 4 rows are one float4; the
//     loads read 16 consecutive j of a row (64 bytes), the stores hit banks
//     4t + r: 2-way, 24 stores per 1024 FMAs;
//   v_tile[t][c] = V[j + t][col0 + c], as stored: 64 consecutive floats per row.
// Staged values past the edges are 0, so partial tiles need no other care.
__device__ __forceinline__ void pv_accumulate(const float* __restrict__ p, const float* __restrict__ v,
                                              float (&acc)[ort_thread][ort_thread], int seq, int dim, int j_begin,
                                              int j_end) {
  __shared__ __align__(16) float p_tile[ort_step][ort_rows + ort_pad];
  __shared__ __align__(16) float v_tile[ort_step][ort_cols + ort_pad];
  constexpr int half_rows = ort_rows / 2, half_cols = ort_cols / 2, quarter = ort_thread / 2;
  const int tx = static_cast<int>(threadIdx.x) % (ort_cols / ort_thread);
  const int ty = static_cast<int>(threadIdx.x) / (ort_cols / ort_thread);
  const int row0 = blockIdx.y * ort_rows, col0 = blockIdx.x * ort_cols;

  // Which elements this thread stages: P rows pr + 8i at column pt (16 threads
  // per row of 16 j), V rows vr + 2i at column vc (64 threads per row).
  constexpr int p_rows_per_pass = ort_threads / ort_step, v_rows_per_pass = ort_threads / ort_cols;
  const int pr = static_cast<int>(threadIdx.x) / ort_step, pt = static_cast<int>(threadIdx.x) % ort_step;
  const int vr = static_cast<int>(threadIdx.x) / ort_cols, vc = static_cast<int>(threadIdx.x) % ort_cols;
  const bool v_col_ok = col0 + vc < dim;

  for (int j0 = j_begin; j0 < j_end; j0 += ort_step) {
    const bool p_col_ok = j0 + pt < j_end;
#pragma unroll
    for (int i = 0; i < ort_rows / p_rows_per_pass; ++i) {
      const int r = pr + i * p_rows_per_pass, row = row0 + r;
      p_tile[pt][r] = row < seq && p_col_ok ? p[static_cast<std::int64_t>(row) * seq + j0 + pt] : 0.0f;
    }
#pragma unroll
    for (int i = 0; i < ort_step / v_rows_per_pass; ++i) {
      const int t = vr + i * v_rows_per_pass, j = j0 + t;
      v_tile[t][vc] = j < j_end && v_col_ok ? v[static_cast<std::int64_t>(j) * dim + col0 + vc] : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int t = 0; t < ort_step; ++t)
      outer_product_8x8(acc, &p_tile[t][ty * quarter], &p_tile[t][half_rows + ty * quarter], &v_tile[t][tx * quarter],
                        &v_tile[t][half_cols + tx * quarter]);
    __syncthreads();  // the next round overwrites the tiles
  }
}

// Where acc[i][jj] of this thread goes in O.
__device__ __forceinline__ int pv_row(int i) {
  const int ty = static_cast<int>(threadIdx.x) / (ort_cols / ort_thread);
  return blockIdx.y * ort_rows + (i < ort_thread / 2 ? 0 : ort_rows / 2) + ty * (ort_thread / 2) + i % (ort_thread / 2);
}
__device__ __forceinline__ int pv_col(int half) {
  const int tx = static_cast<int>(threadIdx.x) % (ort_cols / ort_thread);
  return blockIdx.x * ort_cols + half * (ort_cols / 2) + tx * (ort_thread / 2);
}

// 128 threads with 64 accumulators each: at most 128 registers keeps 4 blocks
// (16 warps) on an SM.
__global__ void __launch_bounds__(ort_threads, 4)
    output_register_tiled_kernel(const float* __restrict__ p, const float* __restrict__ v, float* __restrict__ o,
                                 int seq, int dim) {
  float acc[ort_thread][ort_thread] = {};
  pv_accumulate(p, v, acc, seq, dim, 0, seq);
  constexpr int quarter = ort_thread / 2;
  // Rows of O are 16-byte aligned when dim % 4 == 0 and O itself is.
  const bool vector_store = dim % 4 == 0 && reinterpret_cast<std::uintptr_t>(o) % 16 == 0;
#pragma unroll
  for (int i = 0; i < ort_thread; ++i) {
    const int row = pv_row(i);
    if (row >= seq) continue;
    float* out = o + static_cast<std::int64_t>(row) * dim;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int col = pv_col(h);
      const float* val = &acc[i][h * quarter];
      if (vector_store && col + quarter <= dim) {
        *reinterpret_cast<float4*>(out + col) = make_float4(val[0], val[1], val[2], val[3]);
      } else {
#pragma unroll
        for (int jj = 0; jj < quarter; ++jj)
          if (col + jj < dim) out[col + jj] = val[jj];
      }
    }
  }
}

inline void output_register_tiled(const float* p, const float* v, float* o, int seq, int dim, cudaStream_t stream) {
  const dim3 grid(cudalabs::ceil_div(dim, ort_cols), cudalabs::ceil_div(seq, ort_rows));
  output_register_tiled_kernel<<<grid, ort_threads, 0, stream>>>(p, v, o, seq, dim);
  CUDALABS_CHECK_LAUNCH("output_register_tiled_kernel");
}

// ---- v3: split_k ---------------------------------------------------------------------

// Block z of the grid contracts j in [z·slice, (z+1)·slice) and adds its partial
// sums into O, which the launcher zeroes first. Slices add in a different order
// from run to run: results agree to rounding, not bit for bit.
__global__ void __launch_bounds__(ort_threads, 4)
    output_split_k_kernel(const float* __restrict__ p, const float* __restrict__ v, float* __restrict__ o, int seq,
                          int dim, int slice) {
  const int j_begin = blockIdx.z * slice, j_end = std::min(seq, j_begin + slice);
  float acc[ort_thread][ort_thread] = {};
  pv_accumulate(p, v, acc, seq, dim, j_begin, j_end);
#pragma unroll
  for (int i = 0; i < ort_thread; ++i) {
    const int row = pv_row(i);
    if (row >= seq) continue;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int col = pv_col(h);
#pragma unroll
      for (int jj = 0; jj < ort_thread / 2; ++jj)
        if (col + jj < dim) atomicAdd(o + static_cast<std::int64_t>(row) * dim + col + jj, acc[i][h * ort_thread / 2 + jj]);
    }
  }
}

// How long a slice of the contraction: enough blocks for 4 per SM (the
// occupancy register_tiled allows), but each slice at least 256 long, so its
// 64 atomics per thread stay small next to its 64·256 FMAs. At seq = 4096,
// d = 64 on 132 SMs: 32 tiles × 16 slices of 256 = 512 blocks instead of 32.
inline int output_split_k_slice_length(int seq, int dim) {
  const int tiles = cudalabs::ceil_div(dim, ort_cols) * cudalabs::ceil_div(seq, ort_rows);
  const int wanted = cudalabs::ceil_div(4 * cudalabs::current_device().sm_count, tiles);
  const int slices = std::clamp(wanted, 1, std::max(1, seq / 256));
  // A multiple of the staging step, so only the last slice is partial.
  return cudalabs::ceil_div(cudalabs::ceil_div(seq, slices), ort_step) * ort_step;
}

inline int output_split_k_slices(int seq, int dim) {
  return cudalabs::ceil_div(seq, output_split_k_slice_length(seq, dim));
}

inline void output_split_k(const float* p, const float* v, float* o, int seq, int dim, cudaStream_t stream) {
  const int slice = output_split_k_slice_length(seq, dim);
  const dim3 grid(cudalabs::ceil_div(dim, ort_cols), cudalabs::ceil_div(seq, ort_rows), cudalabs::ceil_div(seq, slice));
  CUDALABS_CHECK(cudaMemsetAsync(o, 0, static_cast<std::size_t>(seq) * dim * sizeof(float), stream));
  output_split_k_kernel<<<grid, ort_threads, 0, stream>>>(p, v, o, seq, dim, slice);
  CUDALABS_CHECK_LAUNCH("output_split_k_kernel");
}

}  // namespace

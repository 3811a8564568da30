#pragma once
// The memory accesses shared by the kernels of lab 18: guarded global loads
// that zero-fill what lies outside a matrix, guarded stores, and the 16-byte
// shared-memory load of a register fragment.
//
// The choice: one kernel for every block, interior or edge. A tile element
// outside A or B is loaded as 0, so it adds 0·x to the sums and the inner loop
// needs no bounds test at all; only the loads (2 per thread per tile) and the
// final stores are guarded. Against the 512 FMAs a thread does per tile, those
// few integer compares looked like under 1%. The SASS says otherwise: with the
// 64-bit address and the branch around the scalar fallback, each guarded
// float4 load is about 20 instructions, ~6% of the issue slots of step 6's
// loop. Step 7 (unguarded_loop.cuh) takes them out of the main loop.
//
// A float4 load or store is used only when it is legal: all four elements in
// range and the address 16-byte aligned. With a 16-byte-aligned base (cudaMalloc
// gives 256) and a column index that is a multiple of 4, that holds for every
// row exactly when the row length is a multiple of 4 (k for A, n for B and C).
// Otherwise the same four elements are moved one at a time: correct for any
// shape, slower, and only ever taken for row lengths that are not multiples of 4
// or for the last partial vector of a row.
#include <algorithm>
#include <cstdint>
#include <string>

#include <cuda_runtime.h>

#include <cudalabs/error.hpp>

// Offsets into A, B and C are 32-bit ints: 64-bit address arithmetic for every
// guarded load costs registers (step 1 spilled with it under its 128-register
// budget). The lab's sizes stop at 16384 (16384² = 2^28 elements), well inside
// int; the launchers still refuse a matrix of 2^31 elements or more.
inline void require_int_offsets(int m, int n, int k) {
  const auto elements = [](int rows, int cols) { return static_cast<std::int64_t>(rows) * cols; };
  const std::int64_t largest = std::max({elements(m, k), elements(k, n), elements(m, n)});
  if (largest >= (std::int64_t{1} << 31))
    throw cudalabs::UsageError("lab 18's kernels index with 32-bit ints; a matrix of " + std::to_string(largest) +
                               " elements needs 64-bit offsets. Use smaller --m/--n/--k.");
}

// Whether every row of a row-major matrix with `cols` columns starting at `p`
// begins on a 16-byte boundary.
inline bool rows_are_float4_aligned(const void* p, int cols) {
  return cols % 4 == 0 && reinterpret_cast<std::uintptr_t>(p) % 16 == 0;
}

// Element (row, col) of a row-major rows×cols matrix, or 0 outside it.
__device__ __forceinline__ float load_or_zero(const float* __restrict__ p, int rows, int cols, int row, int col) {
  return row < rows && col < cols ? p[row * cols + col] : 0.0f;
}

// Elements (row, col .. col+3), zeros outside the matrix. `col` is a multiple of 4;
// `vectors_ok` is rows_are_float4_aligned() of the matrix.
__device__ __forceinline__ float4 load4_or_zero(const float* __restrict__ p, int rows, int cols, int row, int col,
                                                bool vectors_ok) {
  float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  if (row >= rows) return v;
  const float* src = p + row * cols + col;
  if (vectors_ok && col + 4 <= cols) return *reinterpret_cast<const float4*>(src);
  if (col + 0 < cols) v.x = src[0];
  if (col + 1 < cols) v.y = src[1];
  if (col + 2 < cols) v.z = src[2];
  if (col + 3 < cols) v.w = src[3];
  return v;
}

// Stores v to (row, col .. col+3), dropping what falls outside the matrix.
__device__ __forceinline__ void store4_guarded(float* __restrict__ p, int rows, int cols, int row, int col, float4 v,
                                               bool vectors_ok) {
  if (row >= rows) return;
  float* dst = p + row * cols + col;
  if (vectors_ok && col + 4 <= cols) {
    *reinterpret_cast<float4*>(dst) = v;
    return;
  }
  if (col + 0 < cols) dst[0] = v.x;
  if (col + 1 < cols) dst[1] = v.y;
  if (col + 2 < cols) dst[2] = v.z;
  if (col + 3 < cols) dst[3] = v.w;
}

// Four floats from shared memory into dst[0..3] with one 16-byte load (LDS.128);
// src is 16-byte aligned. dst is a register array indexed by constants after
// unrolling, so it stays in registers.
__device__ __forceinline__ void load_fragment4(float* dst, const float* src) {
  const float4 v = *reinterpret_cast<const float4*>(src);
  dst[0] = v.x;
  dst[1] = v.y;
  dst[2] = v.z;
  dst[3] = v.w;
}

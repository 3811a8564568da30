// BROKEN ON PURPOSE for tests/grading: the grader must give lab 21's naive variant zero.
// The bug: the output row stride is `cols` instead of `rows` — right for square matrices
// only. The edge sizes (1×7, 33×31, 4097×1, ...) place elements wrongly or out of bounds.
#pragma once
// Step 1 — the naive transpose: out[c][r] = in[r][c], one thread per element.
//
// Threads next to each other in a warp take neighbouring columns c, c+1, ...:
// their reads of a row of `in` are coalesced (one 128-byte line per warp), but
// their writes go to out[c][r], out[c+1][r], ..., `rows` floats apart: 32
// separate 32-byte sectors per warp, each carrying 4 useful bytes. The memory
// system moves 8× the bytes the output needs, unless L2 happens to merge the
// partial sectors written by neighbouring warps before they go to DRAM.
#include "transpose_tile.cuh"

// in: rows × cols, row-major. out: cols × rows, row-major.
__global__ void __launch_bounds__(transpose_tile * transpose_tile)
    transpose_naive_kernel(const float* __restrict__ in, float* __restrict__ out, std::int64_t rows, std::int64_t cols) {
  // 64-bit: row * cols overflows int past 2^31 elements.
  const std::int64_t col = static_cast<std::int64_t>(blockIdx.x) * transpose_tile + threadIdx.x;
  const std::int64_t row = static_cast<std::int64_t>(blockIdx.y) * transpose_tile + threadIdx.y;
  if (row < rows && col < cols) out[col * cols + row] = in[row * cols + col];  // BROKEN: stride cols, right only when rows == cols  // read coalesced, write strided
}

// A 32×32-thread block per 32×32 tile; edge blocks are partly outside the matrix.
inline void transpose_naive(const float* in, float* out, std::int64_t rows, std::int64_t cols, cudaStream_t stream) {
  transpose_naive_kernel<<<transpose_grid(rows, cols), dim3(transpose_tile, transpose_tile), 0, stream>>>(in, out, rows,
                                                                                                          cols);
  CUDALABS_CHECK_LAUNCH("transpose_naive_kernel");
}

#pragma once
// BROKEN CASE default_stream (tests/broken/README.md): shared_tile and padded_tile
// are right, but their launcher puts the kernel on stream 0 (the legacy default
// stream) instead of the stream it is given. The harness's stream is
// non-blocking: nothing orders the kernel after the work before it on that
// stream, and the harness's events on it time and wait for nothing of the kernel.
// What must catch it: the stream contract (lab.cpp's checked_run, trace.cpp):
// the first, traced run holds stream 0 busy until the harness's marker on the
// given stream has run, so the kernel runs after it: "GPU work: the variant left
// work running after the stream it was given had finished (kernel
// transpose_tiled_kernel...)". The judge finds the outputs right: the failure is
// the graded program's own trace.
// Steps 2 and 3 — transpose through a shared-memory tile, without and with padding.
//
// The block reads a 32×32 tile of `in` row by row (coalesced) into shared
// memory, waits, and writes the tile's columns as rows of `out` (coalesced too):
// the strided access now happens in shared memory, where it costs no DRAM
// traffic. But not nothing. Shared memory has 32 banks of 4 bytes; float
// tile[i][j] sits in bank (i * row_length + j) mod 32. In the write phase a warp
// reads one column, tile[0..31][j]:
//
//   row_length 32 (Pad = 0): bank (32·i + j) mod 32 = j for every i — all 32
//     lanes in one bank, a 32-way conflict: the read is replayed 32 times;
//   row_length 33 (Pad = 1): bank (33·i + j) mod 32 = (i + j) mod 32 — 32
//     different banks, one pass.
//
// One float of padding per row (132 bytes of 4356) removes the conflict.
// `ncu --metrics l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum`
// counts the replays (README).
#include "transpose_tile.cuh"

template <int Pad>
__global__ void __launch_bounds__(transpose_tile * transpose_tile)
    transpose_tiled_kernel(const float* __restrict__ in, float* __restrict__ out, std::int64_t rows, std::int64_t cols) {
  static_assert(Pad == 0 || Pad == 1, "Pad is 0 (the bank-conflicted tile) or 1 (the padded tile)");
  // BEGIN SOLUTION shared_tile padded_tile
  __shared__ float tile[transpose_tile][transpose_tile + Pad];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const std::int64_t row0 = static_cast<std::int64_t>(blockIdx.y) * transpose_tile;  // the tile's first input row
  const std::int64_t col0 = static_cast<std::int64_t>(blockIdx.x) * transpose_tile;  // and first input column

  // Read phase: thread (tx, ty) reads in[row0 + ty][col0 + tx], lanes along a row.
  if (row0 + ty < rows && col0 + tx < cols) tile[ty][tx] = in[(row0 + ty) * cols + col0 + tx];
  __syncthreads();  // the writes below read elements other threads loaded

  // Write phase: thread (tx, ty) writes out[col0 + ty][row0 + tx] = in[row0 + tx][col0 + ty],
  // lanes along a row of `out`; it reads the tile down a column. The guard is the
  // read's guard with the roles of tx and ty swapped, so only loaded elements are read.
  if (col0 + ty < cols && row0 + tx < rows) out[(col0 + ty) * rows + row0 + tx] = tile[tx][ty];
  // END SOLUTION
  // STUB: // TODO: read a 32×(32 + Pad) tile of `in` row by row, __syncthreads(), write its columns as rows of `out`.
}

template <int Pad>
inline void transpose_tiled(const float* in, float* out, std::int64_t rows, std::int64_t cols, cudaStream_t stream) {
  // BEGIN SOLUTION shared_tile padded_tile
  // BUG: stream 0, not `stream`.
  (void)stream;
  transpose_tiled_kernel<Pad><<<transpose_grid(rows, cols), dim3(transpose_tile, transpose_tile), 0, 0>>>(
      in, out, rows, cols);
  CUDALABS_CHECK_LAUNCH(Pad == 0 ? "transpose_tiled_kernel<0>" : "transpose_tiled_kernel<1>");
  // END SOLUTION
  // STUB: cudalabs::not_implemented(Pad == 0 ? "transpose_tiled<0>" : "transpose_tiled<1>", in, out, rows, cols, stream);
}

#pragma once
// Step 4 — the padded tile with four elements per thread.
//
// Same 32×33 tile, but a 32×8-thread block: each thread copies rows ty, ty+8,
// ty+16, ty+24 of the tile. Why it helps:
//   - each thread issues its four loads back to back, so four are in flight
//     per thread before the barrier, where a 1024-thread block has one;
//   - a 256-thread block waits at __syncthreads for 8 warps, not 32, and 8
//     blocks share an SM (2048 threads), so while one block waits at its
//     barrier the other seven keep the memory system busy;
//   - the index arithmetic of the tile is paid once per four elements.
#include "transpose_tile.cuh"

inline constexpr int four_per_thread_rows = 8;  // threads per block in y: 32×8 = 256 threads
inline constexpr int elements_per_thread = transpose_tile / four_per_thread_rows;
static_assert(transpose_tile % four_per_thread_rows == 0, "the block's rows must divide the tile's rows");

__global__ void __launch_bounds__(transpose_tile * four_per_thread_rows)
    transpose_four_per_thread_kernel(const float* __restrict__ in, float* __restrict__ out, std::int64_t rows,
                                     std::int64_t cols) {
  // BEGIN SOLUTION four_per_thread
  __shared__ float tile[transpose_tile][transpose_tile + 1];  // +1: conflict-free columns (transpose_tiled.cuh)
  const int tx = threadIdx.x, ty = threadIdx.y;
  const std::int64_t row0 = static_cast<std::int64_t>(blockIdx.y) * transpose_tile;
  const std::int64_t col0 = static_cast<std::int64_t>(blockIdx.x) * transpose_tile;

#pragma unroll
  for (int j = 0; j < transpose_tile; j += four_per_thread_rows)
    if (row0 + ty + j < rows && col0 + tx < cols) tile[ty + j][tx] = in[(row0 + ty + j) * cols + col0 + tx];
  __syncthreads();
#pragma unroll
  for (int j = 0; j < transpose_tile; j += four_per_thread_rows)
    if (col0 + ty + j < cols && row0 + tx < rows) out[(col0 + ty + j) * rows + row0 + tx] = tile[tx][ty + j];
  // END SOLUTION
  // STUB: // TODO: the padded tile, each thread copying rows ty, ty + 8, ty + 16, ty + 24 of it.
}

inline void transpose_four_per_thread(const float* in, float* out, std::int64_t rows, std::int64_t cols,
                                      cudaStream_t stream) {
  // BEGIN SOLUTION four_per_thread
  transpose_four_per_thread_kernel<<<transpose_grid(rows, cols), dim3(transpose_tile, four_per_thread_rows), 0,
                                     stream>>>(in, out, rows, cols);
  CUDALABS_CHECK_LAUNCH("transpose_four_per_thread_kernel");
  // END SOLUTION
  // STUB: cudalabs::not_implemented("transpose_four_per_thread", in, out, rows, cols, stream);
}

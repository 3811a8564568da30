#pragma once
// The tile every transpose kernel of this lab works on: 32×32 floats.
//
// 32 = one warp across a tile row, so a warp reads 32 consecutive floats (128
// bytes, four 32-byte sectors: one fully used cache line) of a row of the input
// and, after the transpose in shared memory, writes 32 consecutive floats of a
// row of the output. It is also the number of shared-memory banks, which is why
// the column reads of an unpadded tile all land in one bank (transpose_tiled.cuh).
#include <cstdint>

#include <cudalabs/error.hpp>
#include <cudalabs/math.hpp>

inline constexpr int transpose_tile = 32;

// Tiles along the rows of the input; the grid's y dimension holds at most 65535
// blocks, so the course caps rows at 65535 × 32 (main.cu's --rows limit).
inline dim3 transpose_grid(std::int64_t rows, std::int64_t cols, int tile_rows = transpose_tile) {
  return dim3(static_cast<unsigned>(cudalabs::ceil_div<std::int64_t>(cols, transpose_tile)),
              static_cast<unsigned>(cudalabs::ceil_div<std::int64_t>(rows, tile_rows)));
}

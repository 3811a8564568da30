// CPU test of gemm_tile.cuh's SliceCopies, the per-thread bookkeeping of the
// global -> shared copies of steps 2 and 3 (and TF32): for every thread of a
// block, every block tile of a grid (the last ones partial), every k-slice
// and every copy, the source for_each_aligned hands out and its `inside` flag
// must be those of the plain formula: row r of the stacked tile is A's row
// row0 + r (r < tile_m) or B's row col0 + r - tile_m, the chunk starts at
// column slice·slice_k + part·chunk, and a chunk is read only where its row
// and column lie inside the matrix. Runs without a GPU (host code only).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdio>
#include <utility>
#include <vector>

#include "gemm_tile.cuh"

namespace {

int failures = 0;
long checked = 0;

struct Copy {
  int i;
  const void* src;
  bool inside;
  bool operator==(const Copy&) const = default;
};

// The copies for_each_aligned_part hands out over Parts parts, in order.
template <int Parts, int Loads, typename C, int... P>
std::vector<Copy> copies_in_parts(const C& copies, int col, int k, std::integer_sequence<int, P...>) {
  std::vector<Copy> out;
  auto add = [&](int i, const void* src, bool inside) { out.push_back({i, inside ? src : nullptr, inside}); };
  (copies.template for_each_aligned_part<P * (Loads / Parts), Loads / Parts>(col, k, add), ...);
  return out;
}

// The steps' copy plans: Loads and ALoads of a tile_m × tile_n tile with
// `threads` threads moving chunks_per_row chunks of each row per slice.
template <typename T, int TileM, int TileN, int Threads, int ChunksPerRow>
void check_plan(const char* name, int m, int n, int k) {
  constexpr int chunk = chunk_elements<T>, slice_k = ChunksPerRow * chunk;
  constexpr int loads = (TileM + TileN) * ChunksPerRow / Threads, a_loads = TileM * ChunksPerRow / Threads;
  constexpr int row_step = Threads / ChunksPerRow;
  std::vector<T> a(static_cast<std::size_t>(m) * k), b(static_cast<std::size_t>(n) * k);
  const int tiles_m = cudalabs::ceil_div(m, TileM), tiles_n = cudalabs::ceil_div(n, TileN);
  for (int tm = 0; tm < tiles_m; ++tm)
    for (int tn = 0; tn < tiles_n; ++tn) {
      const TileCoord tile{tm * TileM, tn * TileN};
      for (int tid = 0; tid < Threads; ++tid) {
        const int part = tid % ChunksPerRow, first_row = tid / ChunksPerRow;
        const SliceCopies<T, loads, a_loads, row_step> copies(a.data(), b.data(), m, n, k, tile, first_row, part);
        for (int slice = 0; slice < cudalabs::ceil_div(k, slice_k); ++slice) {
          int seen = 0;
          std::vector<Copy> whole;
          copies.for_each_aligned(slice * slice_k, k, [&](int i, const T* src, bool inside) {
            whole.push_back({i, inside ? src : nullptr, inside});
            ++seen, ++checked;
            const int stacked = first_row + row_step * i;  // row of the block's stacked tile
            const bool in_a = stacked < TileM;
            const int row = in_a ? tile.row0 + stacked : tile.col0 + stacked - TileM;
            const int col = slice * slice_k + part * chunk;
            const bool expect_inside = row < (in_a ? m : n) && col < k;
            const T* expect = (in_a ? a.data() : b.data()) + static_cast<std::int64_t>(row) * k + col;
            if (inside != expect_inside || (inside && src != expect)) {
              if (failures++ < 10)
                std::printf("FAIL %s m=%d n=%d k=%d tile (%d, %d) thread %d slice %d copy %d: inside %d, expected %d%s\n",
                            name, m, n, k, tile.row0, tile.col0, tid, slice, i, inside, expect_inside,
                            inside && expect_inside ? ", wrong source" : "");
            }
          });
          if (seen != loads && failures++ < 10) std::printf("FAIL %s: %d copies per slice, expected %d\n", name, seen, loads);
          // The same copies in 2 parts (and 4 where they divide): for_each_aligned_part.
          const int col0 = slice * slice_k;
          bool parts_ok = copies_in_parts<2, loads>(copies, col0, k, std::make_integer_sequence<int, 2>{}) == whole;
          if constexpr (loads % 4 == 0)
            parts_ok = parts_ok && copies_in_parts<4, loads>(copies, col0, k, std::make_integer_sequence<int, 4>{}) == whole;
          if (!parts_ok && failures++ < 10)
            std::printf("FAIL %s m=%d n=%d k=%d thread %d slice %d: the copies in parts differ from the whole\n", name, m,
                        n, k, tid, slice);
        }
      }
    }
}

}  // namespace

int main() {
  // Sizes: one element, less than a tile, one past a tile, odd tiles; k a
  // multiple of 8, so of every chunk (the aligned path): one chunk, one slice and a part.
  const int sizes[][3] = {{1, 1, 8}, {7, 9, 16}, {129, 257, 72}, {255, 300, 136}, {300, 129, 1000}};
  for (const auto& s : sizes) {
    // Step 3: 128×256 tile, 256 threads, 8 chunks of 16 bytes per row (128-byte slices).
    check_plan<__half, 128, 256, 256, 8>("cp_async fp16", s[0], s[1], s[2]);
    // Step 3 with 16 warps.
    check_plan<__nv_bfloat16, 128, 256, 512, 8>("cp_async bf16 512 threads", s[0], s[1], s[2]);
    // Step 2 (and TF32, on floats): the same 8 chunks per row (128-byte slices).
    check_plan<float, 128, 256, 256, 8>("mma_ldmatrix tf32", s[0], s[1], s[2]);
    // 64-byte slices, 4 chunks per row (step 2 up to git c23f0bd).
    check_plan<__half, 128, 256, 256, 4>("64-byte slices fp16", s[0], s[1], s[2]);
  }
  std::printf("%ld copies checked, %d wrong\n", checked, failures);
  return failures == 0 ? 0 : 1;
}

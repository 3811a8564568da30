#pragma once
// Step 2 — mma.sync.m16n8k16 with ldmatrix: the instruction WMMA compiles to,
// with the fragments in the open.
//
// A block of 4 warps computes a 128×128 tile of C, each warp 64×64 of it: 4×8
// accumulators of 16×8 (128 floats per thread). Per 16-wide k-step a warp
// loads A's fragments with 4 ldmatrix.x4 and B's with 4 more, then issues 32
// mma.sync: 8 shared-memory instructions per 32 tensor-core instructions,
// where step 1's 32×32 warp tile needed one fragment load per mma. Knowing the
// fragment layout (cudalabs/mma.cuh) is what allows the bigger warp tile and
// the direct, guarded store of the accumulators to C.
//
// Both tiles are copied to shared memory through registers, double-buffered as
// in lab 18's double_buffered: slice t+1's global loads are issued before
// slice t's mma, and stored to the other buffer after them, one barrier per
// slice. 40 KB of static shared memory: two blocks per SM.
//
// Shared-memory layout of one buffer: A rows 0-127 then B rows 0-127, each row
// 64 bytes of k (32 FP16/BF16 elements, 16 TF32) padded to 80 bytes: the
// 8 row addresses of one ldmatrix matrix are 80 bytes apart, 8 distinct
// 16-byte bank groups (80 = 5 × 16, 5 odd): no bank conflict.
//
// The kernel is written in bytes of k, not elements, so that tf32_mma.cuh
// runs the same kernel on floats: 32 bytes of k is one m16n8k16 step on
// 16-bit inputs and one m16n8k8 step on TF32 — the fragments are the same
// bytes in the same registers.
#include <cstdint>

#include <cudalabs/error.hpp>
#include <cudalabs/mma.cuh>

#include "gemm_tile.cuh"

namespace mma_ldmatrix_step {
inline constexpr int tile_m = 128, tile_n = 128;
inline constexpr int slice_bytes = 64;  // of k per row per slice: two 32-byte mma steps
inline constexpr int row_bytes = slice_bytes + 16;  // padded: 5 bank groups of 16 bytes
inline constexpr int chunks_per_row = slice_bytes / 16;
inline constexpr int threads = 128;  // 4 warps, 2×2, each 64×64 of C
inline constexpr int buffer_bytes = (tile_m + tile_n) * row_bytes;  // 20 KB
inline constexpr int a_loads = tile_m * chunks_per_row / threads;  // 16-byte chunks per thread per slice
inline constexpr int loads = (tile_m + tile_n) * chunks_per_row / threads;
static_assert(tile_m * chunks_per_row % threads == 0 && loads * threads == (tile_m + tile_n) * chunks_per_row,
              "every thread loads the same number of 16-byte chunks of A and of B");
static_assert((row_bytes / 16) % 2 == 1, "an odd number of 16-byte units per row keeps ldmatrix conflict-free");
}  // namespace mma_ldmatrix_step

// One tensor-core step over 32 bytes of k: c[16×8] += a[16×32 B] · b[32 B×8].
// 16-bit inputs: m16n8k16. tf32_mma.cuh specialises it for float (m16n8k8).
template <typename T>
__device__ inline void mma_32_bytes_of_k(float (&c)[4], const std::uint32_t (&a)[4], std::uint32_t b0,
                                         std::uint32_t b1) {
  cudalabs::ptx::mma_16x8x16<T>(c, a, b0, b1);
}

template <typename T>
__global__ void __launch_bounds__(mma_ldmatrix_step::threads)
    gemm_mma_ldmatrix_kernel(const T* __restrict__ a, const T* __restrict__ b, float* __restrict__ c, int m, int n,
                             int k, bool a_aligned, bool b_aligned) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  using namespace mma_ldmatrix_step;
  using cudalabs::ptx::ldmatrix_x4;
  constexpr int slice_k = slice_bytes / static_cast<int>(sizeof(T));  // elements of k per slice
  __shared__ __align__(128) unsigned char smem[2 * buffer_bytes];

  const int tid = static_cast<int>(threadIdx.x), warp = tid / 32, lane = tid % 32;
  const int warp_row = 64 * (warp / 2), warp_col = 64 * (warp % 2);
  const TileCoord tile = tile_of_block(static_cast<int>(blockIdx.x), cudalabs::ceil_div(m, tile_m),
                                       cudalabs::ceil_div(n, tile_n), tile_m, tile_n);

  // Slice s of A's and B's tiles, from global memory into registers, zeros
  // outside the matrices; then from the registers into a buffer.
  uint4 staged[loads];
  auto fetch = [&](int slice) {
#pragma unroll
    for (int i = 0; i < loads; ++i) {
      const int chunk = i * threads + tid, row = chunk / chunks_per_row;
      const int col = slice * slice_k + (chunk % chunks_per_row) * chunk_elements<T>;
      staged[i] = i < a_loads ? load_chunk_or_zeros(a, m, k, tile.row0 + row, col, a_aligned)
                              : load_chunk_or_zeros(b, n, k, tile.col0 + row - tile_m, col, b_aligned);
    }
  };
  auto stash = [&](unsigned char* buffer) {
#pragma unroll
    for (int i = 0; i < loads; ++i) {
      const int chunk = i * threads + tid;
      *reinterpret_cast<uint4*>(buffer + (chunk / chunks_per_row) * row_bytes + 16 * (chunk % chunks_per_row)) =
          staged[i];
    }
  };

  float acc[4][8][4] = {};  // [16-row block][8-column block][fragment]
  const int slices = cudalabs::ceil_div(k, slice_k);
  fetch(0);
  stash(smem);
  __syncthreads();
  for (int s = 0; s < slices; ++s) {
    const unsigned char* as = smem + (s & 1) * buffer_bytes;
    const unsigned char* bs = as + tile_m * row_bytes;
    if (s + 1 < slices) fetch(s + 1);  // in flight during the mma below
#pragma unroll
    for (int step = 0; step < slice_bytes / 32; ++step) {
      // A: matrices (rows 0-7 | 8-15) × (bytes 0-15 | 16-31) of each 16-row block = a0..a3.
      std::uint32_t af[4][4];
#pragma unroll
      for (int i = 0; i < 4; ++i)
        ldmatrix_x4(af[i], as + (warp_row + 16 * i + (lane & 7) + 8 * ((lane >> 3) & 1)) * row_bytes + 32 * step +
                               16 * (lane >> 4));
      // B: matrices (bytes 0-15 | 16-31) × (columns 0-7 | 8-15) = b0, b1 of two 8-column blocks.
#pragma unroll
      for (int j = 0; j < 8; j += 2) {
        std::uint32_t bf[4];
        ldmatrix_x4(bf, bs + (warp_col + 8 * j + (lane & 7) + 8 * (lane >> 4)) * row_bytes + 32 * step +
                            16 * ((lane >> 3) & 1));
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          mma_32_bytes_of_k<T>(acc[i][j], af[i], bf[0], bf[1]);
          mma_32_bytes_of_k<T>(acc[i][j + 1], af[i], bf[2], bf[3]);
        }
      }
    }
    // The other buffer was last read in iteration s-1, before its barrier.
    if (s + 1 < slices) stash(smem + ((s + 1) & 1) * buffer_bytes);
    __syncthreads();
  }

#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 8; ++j)
      store_accumulator_16x8(c, m, n, tile.row0 + warp_row + 16 * i, tile.col0 + warp_col + 8 * j, acc[i][j]);
#else
  (void)a, (void)b, (void)c, (void)m, (void)n, (void)k, (void)a_aligned, (void)b_aligned;
  __trap();  // never launched: the host checks for compute capability 8.0 first
#endif
}

template <typename T>
void gemm_mma_ldmatrix(const T* a, const T* b, float* c, int m, int n, int k, cudaStream_t stream) {
  using namespace mma_ldmatrix_step;
  gemm_mma_ldmatrix_kernel<T><<<tile_grid(m, n, tile_m, tile_n), threads, 0, stream>>>(
      a, b, c, m, n, k, rows_are_16_byte_aligned(a, k), rows_are_16_byte_aligned(b, k));
  CUDALABS_CHECK_LAUNCH("gemm_mma_ldmatrix_kernel");
}

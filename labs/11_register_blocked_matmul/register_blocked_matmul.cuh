#pragma once
// Lab 11's kernel: register blocking. Each thread computes a 4×4 block of C
// in registers instead of one element, so every value it reads from shared
// memory feeds four FMAs instead of one.
//
// Row-major, A[m×k], B[k×n], C[m×n]; any m, n, k >= 1.
#include <cstddef>

#include <cudalabs/error.hpp>
#include <cudalabs/math.hpp>

namespace register_blocked {
inline constexpr int block_m = 64;  // rows of C per block
inline constexpr int block_n = 64;  // columns of C per block
inline constexpr int block_k = 16;  // depth of one step along k
inline constexpr int thread_m = 4;  // rows of C per thread
inline constexpr int thread_n = 4;  // columns of C per thread
inline constexpr int threads = (block_m / thread_m) * (block_n / thread_n);  // 16 × 16 = 256
inline constexpr int min_blocks_per_sm = 4;  // for __launch_bounds__: at most 64 registers per thread
// A's tile is stored transposed with 4 floats of padding per row; see the loads.
inline constexpr int a_tile_stride = block_m + 4;

static_assert(block_m * block_k % threads == 0 && block_k * block_n % threads == 0,
              "each thread must load the same number of elements of each tile");
static_assert(thread_m == 4 && thread_n == 4, "the inner loop reads its fragments as one float4 each");
static_assert(a_tile_stride % 4 == 0, "rows of the A tile must stay 16-byte aligned for the float4 reads");
}  // namespace register_blocked

// A block of 256 threads computes a 64×64 tile of C; thread (ty, tx) of the
// 16×16 thread grid owns rows 4·ty .. 4·ty+3 and columns 4·tx .. 4·tx+3 of it.
// The block walks along k in steps of 16, staging a 64×16 tile of A and a
// 16×64 tile of B in shared memory.
//
// Why it is faster than lab 05, in numbers per thread and per step kk:
//   shared memory: one float4 of A (its 4 rows at column kk) and one float4 of
//     B (its 4 columns at row kk) — 8 floats in 2 load instructions — feed
//     4×4 = 16 FMAs: 0.5 floats per FMA. Lab 05 reads 2 floats per FMA (20
//     shared load instructions per 16 FMAs in its SASS): 4× the bytes and 10×
//     the instructions. Per warp, the A read is 2 distinct float4s (broadcast
//     to 16 lanes each) and the B read 16 consecutive float4s (256 bytes):
//     about 3 shared-memory cycles of 128 bytes per 16 warp-FMAs, which take
//     an SM's 4 FMA pipes 4 clocks. Lab 05 needs at least 20 for the same 16:
//     shared memory stops being the limit.
//   global memory: per step the block loads (64 + 64)·16 floats = 8 KB for
//     64·64·16 FMAs = 131072 flops, 1/16 byte per flop; lab 05's 16×16 tiles
//     need 1/4 byte per flop. Bigger tiles reuse each loaded element more.
// The 16 accumulators are independent, so the FMAs of one kk do not wait on
// each other, and every value lives in a register: no spills (check the
// resource report: 0 bytes of local memory).
//
// Why A is stored transposed (a_tile[kk][row]): a thread needs A's 4 rows at
// one column kk. Row-major they would be 64 floats apart, 4 loads; transposed
// they are 4 consecutive floats, one 16-byte load. B's 4 columns at row kk are
// already consecutive.
//
// Occupancy: left alone, the compiler uses 80 registers per thread (it loads
// the fragments of many kk ahead), which fits 3 blocks of 256 threads in an
// SM's 65536 registers. The kernel does not prefetch the next tile, so while
// one block waits for its global loads only the other resident blocks keep
// the FMA units busy; __launch_bounds__(256, 4) asks for 64 registers and a
// 4th block. ptxas fits that with no spills (0 bytes of local memory; the
// resource report shows it) — whether 4 blocks of 64 registers beat 3 of 80
// is an exercise with a measured answer.
//
// Edges: elements outside A or B are stored as 0 in the tiles, so the FMA
// loop has no branches; each output is stored only if it exists.
__global__ __launch_bounds__(register_blocked::threads, register_blocked::min_blocks_per_sm) void
register_blocked_matmul_kernel(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c, int m,
                               int n, int k) {
  using namespace register_blocked;
  // BEGIN SOLUTION register_4x4
  __shared__ __align__(16) float a_tile[block_k][a_tile_stride];  // transposed: [kk][row]
  __shared__ __align__(16) float b_tile[block_k][block_n];        // [kk][col]

  const int thread = static_cast<int>(threadIdx.x);
  // A warp is 2 values of ty × 16 of tx: its B reads are 16 consecutive float4s
  // (256 bytes, no bank conflict), its A reads 2 float4s broadcast to 16 lanes each.
  const int tx = thread % (block_n / thread_n);
  const int ty = thread / (block_n / thread_n);
  const int block_row = static_cast<int>(blockIdx.y) * block_m;
  const int block_col = static_cast<int>(blockIdx.x) * block_n;

  float acc[thread_m][thread_n] = {};
  for (int t = 0; t < k; t += block_k) {
    // A tile, 64×16 = 1024 floats, 4 per thread. Element e covers row e/16,
    // column e%16: a warp reads 2 rows × 64 contiguous bytes of A (coalesced).
    // Stored transposed at [column][row]. With a row stride of 64 floats the
    // 16 lanes storing one row of A would all hit one bank (16-way conflict);
    // the padded stride of 68 spreads the warp's 32 stores over 16 banks, a
    // 2-way conflict on 4 stores per step, next to 32 loads in the FMA loop.
#pragma unroll
    for (int i = 0; i < block_m * block_k / threads; ++i) {
      const int e = thread + i * threads;
      const int r = e / block_k, col = e % block_k;
      const int a_row = block_row + r, a_col = t + col;
      a_tile[col][r] = (a_row < m && a_col < k) ? a[static_cast<std::size_t>(a_row) * k + a_col] : 0.0f;
    }
    // B tile, 16×64 floats, 4 per thread. A warp reads 32 consecutive floats
    // (128 bytes) of one row of B and stores them to consecutive banks.
#pragma unroll
    for (int i = 0; i < block_k * block_n / threads; ++i) {
      const int e = thread + i * threads;
      const int r = e / block_n, col = e % block_n;
      const int b_row = t + r, b_col = block_col + col;
      b_tile[r][col] = (b_row < k && b_col < n) ? b[static_cast<std::size_t>(b_row) * n + b_col] : 0.0f;
    }
    __syncthreads();

#pragma unroll
    for (int kk = 0; kk < block_k; ++kk) {
      const float4 a4 = *reinterpret_cast<const float4*>(&a_tile[kk][ty * thread_m]);
      const float4 b4 = *reinterpret_cast<const float4*>(&b_tile[kk][tx * thread_n]);
      const float a_frag[thread_m] = {a4.x, a4.y, a4.z, a4.w};
      const float b_frag[thread_n] = {b4.x, b4.y, b4.z, b4.w};
#pragma unroll
      for (int i = 0; i < thread_m; ++i)
#pragma unroll
        for (int j = 0; j < thread_n; ++j) acc[i][j] = fmaf(a_frag[i], b_frag[j], acc[i][j]);
    }
    __syncthreads();
  }

  // 16 scalar stores per thread, once per block: negligible next to the k/16
  // steps above (256 at k = 4096), so no float4 store path here.
#pragma unroll
  for (int i = 0; i < thread_m; ++i) {
    const int row = block_row + ty * thread_m + i;
#pragma unroll
    for (int j = 0; j < thread_n; ++j) {
      const int col = block_col + tx * thread_n + j;
      if (row < m && col < n) c[static_cast<std::size_t>(row) * n + col] = acc[i][j];
    }
  }
  // END SOLUTION
  // STUB: // TODO: a 64×64 tile of C per block: 64×16 (A, transposed) and 16×64 (B) tiles per k step, 4×4 outputs per thread.
}

inline void register_blocked_matmul(const float* a, const float* b, float* c, int m, int n, int k,
                                    cudaStream_t stream) {
  using namespace register_blocked;
  // BEGIN SOLUTION register_4x4
  const dim3 grid(cudalabs::ceil_div(n, block_n), cudalabs::ceil_div(m, block_m));
  register_blocked_matmul_kernel<<<grid, threads, 0, stream>>>(a, b, c, m, n, k);
  CUDALABS_CHECK_LAUNCH("register_blocked_matmul_kernel");
  // END SOLUTION
  // STUB: cudalabs::not_implemented("register_blocked_matmul", a, b, c, m, n, k, stream);
}

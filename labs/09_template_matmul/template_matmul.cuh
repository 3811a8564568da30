#pragma once
// Lab 09's kernel: lab 05's tiled matmul written once as a template and
// specialised at compile time — the C++ version of the original course's Zig
// `comptime` lesson. Three parameters choose the whole data path:
//
//   Input        the element type read from global memory (float or __half)
//   Accumulator  the type of the shared-memory tiles and of the running sum
//   Tile         the tile edge; the block is Tile×Tile threads, one output each
//
// Every combination that compiles is a correct kernel. The combinations that
// would be wrong or wasteful are rejected when they are instantiated, by the
// static_asserts of TemplateMatmulRules, with a message that says what to
// change. compile_fail_examples.cu instantiates each of them; a CPU test
// checks that each fails to compile with its message.
//
// Row-major, A[m×k], B[k×n], C[m×n] (always FP32); any m, n, k >= 1.
#include <cuda_fp16.h>

#include <concepts>
#include <cstddef>
#include <type_traits>

#include <cudalabs/error.hpp>
#include <cudalabs/math.hpp>

// The types the kernel knows, as concepts: named, reusable compile-time
// predicates. They are checked inside static_asserts below rather than as
// `template <MatmulInput Input, ...>`: nvcc 13 reports an unsatisfied
// constraint as "no instance of function template matches" without naming the
// concept, while a static_assert prints our message.
template <typename T>
concept MatmulInput = std::same_as<T, float> || std::same_as<T, __half>;
template <typename T>
concept MatmulAccumulator = std::same_as<T, float> || std::same_as<T, double>;

inline constexpr int max_threads_per_block = 1024;  // every GPU since Fermi
inline constexpr int warp_size = 32;

// The rules, in one place, checked once per instantiation: the C++ spelling of
// a Zig `comptime { if (...) @compileError(...); }` block. `ok` lets the
// kernel skip its body when a rule failed, so the compiler stops at the rule's
// message instead of adding errors from code that was never meant to compile.
template <typename Input, typename Accumulator, int Tile>
struct TemplateMatmulRules {
  static_assert(MatmulInput<Input>,
                "template_matmul: Input must be float or __half (the MatmulInput concept). For other element "
                "types convert the matrices first (as the harness's matmul_draw_kernel does for __half), or add the type to MatmulInput "
                "and check that the conversion to the Accumulator is exact.");
  static_assert(sizeof(Accumulator) >= sizeof(Input),
                "template_matmul: the Accumulator is narrower than the Input type, so every product would be "
                "rounded to fewer bits than the inputs were read with. Use an accumulator at least as wide "
                "as the inputs: float.");
  static_assert(!std::is_same_v<Accumulator, __half>,
                "template_matmul: an FP16 (__half) accumulator keeps 11 significant bits (about 3 decimal "
                "digits) and overflows at 65504: a sum of k = 1024 rounded additions drifts by ~2^-11 * sqrt(1024) "
                "= 1.5% of its size, and every product below 1/2048 of the running sum is lost entirely. "
                "Use Accumulator = float (FP16 inputs, FP32 sums is also what tensor cores do).");
  static_assert(MatmulAccumulator<Accumulator> || std::is_same_v<Accumulator, __half>,
                "template_matmul: Accumulator must be float or double (the MatmulAccumulator concept); "
                "C is written in FP32.");
  static_assert(Tile > 0 && Tile * Tile <= max_threads_per_block,
                "template_matmul: the block is Tile x Tile threads and a block holds at most 1024 threads, "
                "so Tile must be at most 32. For more outputs per block, give each thread several "
                "(lab 11's register blocking) instead of adding threads.");
  static_assert((Tile * Tile) % warp_size == 0,
                "template_matmul: Tile x Tile threads must be a whole number of 32-thread warps, or the last "
                "warp of every block runs partly empty (Tile = 4: 16 threads, half of each warp idle; "
                "Tile = 12: 144 threads, 4.5 warps). Use Tile = 8, 16 or 32.");

  static constexpr bool ok = MatmulInput<Input> && MatmulAccumulator<Accumulator> &&
                             sizeof(Accumulator) >= sizeof(Input) && Tile > 0 &&
                             Tile * Tile <= max_threads_per_block && (Tile * Tile) % warp_size == 0;
};

template <typename Input, typename Accumulator, int Tile>
__global__ __launch_bounds__(Tile * Tile) void template_matmul_kernel(const Input* __restrict__ a,
                                                                     const Input* __restrict__ b,
                                                                     float* __restrict__ c, int m, int n, int k) {
  if constexpr (TemplateMatmulRules<Input, Accumulator, Tile>::ok) {
    // BEGIN SOLUTION f32_tile8 f32_tile16 f32_tile32 f16_tile16
    // The tiles hold the Accumulator type: each element is converted once, when
    // it is stored, not every time the inner loop reads it (that would add two
    // conversions per FMA, as many instructions as the FMAs themselves).
    __shared__ Accumulator a_tile[Tile][Tile];
    __shared__ Accumulator b_tile[Tile][Tile];

    const int tx = static_cast<int>(threadIdx.x), ty = static_cast<int>(threadIdx.y);
    const int row = static_cast<int>(blockIdx.y) * Tile + ty;
    const int col = static_cast<int>(blockIdx.x) * Tile + tx;

    Accumulator acc = 0;
    for (int t = 0; t < k; t += Tile) {
      const int a_col = t + tx, b_row = t + ty;
      a_tile[ty][tx] = (row < m && a_col < k) ? static_cast<Accumulator>(a[static_cast<std::size_t>(row) * k + a_col])
                                              : Accumulator{0};
      b_tile[ty][tx] = (b_row < k && col < n) ? static_cast<Accumulator>(b[static_cast<std::size_t>(b_row) * n + col])
                                              : Accumulator{0};
      __syncthreads();
#pragma unroll
      for (int i = 0; i < Tile; ++i) acc = fma(a_tile[ty][i], b_tile[i][tx], acc);
      __syncthreads();
    }
    if (row < m && col < n) c[static_cast<std::size_t>(row) * n + col] = static_cast<float>(acc);
    // END SOLUTION
    // STUB: // TODO: lab 05's tiled loop with Tile×Tile tiles of Accumulator in shared memory: one output per thread.
  }
}

template <typename Input, typename Accumulator, int Tile>
void template_matmul(const Input* a, const Input* b, float* c, int m, int n, int k, cudaStream_t stream) {
  // BEGIN SOLUTION f32_tile8 f32_tile16 f32_tile32 f16_tile16
  const dim3 block(Tile, Tile);
  const dim3 grid(cudalabs::ceil_div(n, Tile), cudalabs::ceil_div(m, Tile));
  template_matmul_kernel<Input, Accumulator, Tile><<<grid, block, 0, stream>>>(a, b, c, m, n, k);
  CUDALABS_CHECK_LAUNCH("template_matmul_kernel");
  // END SOLUTION
  // STUB: cudalabs::not_implemented("template_matmul", a, b, c, m, n, k, stream);
}

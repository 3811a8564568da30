#pragma once
// Row-wise softmax, y[r][c] = exp(x[r][c] - max_r) / sum_c exp(x[r][c] - max_r),
// four ways. Subtracting the row max first is what makes it numerically stable:
// exp(88.8) already overflows float, exp(x - max) <= 1 never does.
//
//   block_per_row     the original: one block of 256 threads per row, three
//                     passes over the row in global memory (max, sum, scale)
//   online            max and sum in ONE pass (the running sum is rescaled when
//                     the max grows), then one pass to write: 2 reads + 1 write
//   row_in_registers  the row is loaded once (float4) into registers and never
//                     re-read: 1 read + 1 write, the minimum; rows up to 16384
//   split_rows        for long rows: several blocks share a row, each reduces
//                     its chunk to a (max, sum) pair, a second launch combines
//                     them and writes: 2 reads + 1 write, and the whole GPU busy
//                     even with few rows
//
// softmax_rows_best() picks row_in_registers when the row fits, online when it
// does not: labs 15 and 16 call it for the attention weights.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>

#include <cudalabs/error.hpp>
#include <cudalabs/math.hpp>

// Internal linkage: another lab's host program compiles the course's copy of
// this file next to a kernel library that compiles the student's, and the two
// must never meet at link time (docs/lab-anatomy.md).
namespace {

// ---- block reductions with warp shuffles -------------------------------------

struct MaxOp {
  __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};
struct SumOp {
  __device__ float operator()(float a, float b) const { return a + b; }
};

// Butterfly over the 32 lanes: after 5 steps every lane holds the warp's result,
// without shared memory or barriers.
template <typename Op>
__device__ __forceinline__ float warp_allreduce(float x, Op op) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) x = op(x, __shfl_xor_sync(0xffffffffu, x, offset));
  return x;
}

// Every thread of the block gets op over all threads' x. blockDim.x must be a
// multiple of 32. `scratch` holds one value per warp (32 floats: 1024 threads at
// most) and must not be reused by a later call without a barrier in between: a
// fast warp would overwrite a value that a slow warp is still reading. The
// kernels here give each reduction its own scratch array instead.
template <typename Op>
__device__ float block_allreduce(float x, float* scratch, Op op, float identity) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  x = warp_allreduce(x, op);
  if (lane == 0) scratch[warp] = x;
  __syncthreads();
  x = lane < static_cast<int>(blockDim.x / 32) ? scratch[lane] : identity;
  return warp_allreduce(x, op);  // every warp reduces the per-warp values itself: no second barrier
}

// ---- v1: block_per_row, the original ------------------------------------------

inline constexpr int softmax_block = 256;  // the original's 8 warps per row

// Three strided passes; each re-reads the row from global memory (the second
// and third usually hit L1/L2, which is why this is not 3x slower than the
// minimum). Any row length: thread t handles t, t + 256, t + 512, ...
__global__ void __launch_bounds__(softmax_block)
    softmax_block_per_row_kernel(const float* __restrict__ x, float* __restrict__ y, int cols) {
  __shared__ float max_scratch[32], sum_scratch[32];
  const float* in = x + static_cast<std::int64_t>(blockIdx.x) * cols;
  float* out = y + static_cast<std::int64_t>(blockIdx.x) * cols;

  float m = -INFINITY;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, in[c]);
  m = block_allreduce(m, max_scratch, MaxOp{}, -INFINITY);

  float s = 0.0f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) s += expf(in[c] - m);
  s = block_allreduce(s, sum_scratch, SumOp{}, 0.0f);

  // One division per thread; a multiply per element (one extra rounding, 6e-8).
  const float inv = 1.0f / s;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) out[c] = expf(in[c] - m) * inv;
}

inline void softmax_block_per_row(const float* x, float* y, std::int64_t rows, int cols, cudaStream_t stream) {
  softmax_block_per_row_kernel<<<static_cast<unsigned>(rows), softmax_block, 0, stream>>>(x, y, cols);
  CUDALABS_CHECK_LAUNCH("softmax_block_per_row_kernel");
}

// ---- v2: online, max and sum in one pass ------------------------------------

// A partial softmax denominator: sum of exp(x - m) over some elements, m their max.
struct MaxSum {
  float m;
  float s;
};

// Two partials as one: rescale each sum to the larger max. Empty partials
// (m = -inf, s = 0) contribute exp(-inf) * 0 = 0; two empty ones stay empty
// instead of computing exp(-inf - -inf) = NaN.
__device__ __forceinline__ MaxSum combine(MaxSum a, MaxSum b) {
  const float m = fmaxf(a.m, b.m);
  if (m == -INFINITY) return {m, 0.0f};
  return {m, a.s * expf(a.m - m) + b.s * expf(b.m - m)};
}

// Adds one element. Only when it raises the max is the running sum rescaled;
// for random data that happens ~ln(n) times per thread, so one expf per element.
// A masked element (-inf) adds exp(-inf) = 0; tested first, because with the
// running max still -inf, exp(v - m) would be exp(-inf - -inf) = NaN.
__device__ __forceinline__ MaxSum add_element(MaxSum p, float v) {
  if (v == -INFINITY) return p;
  if (v > p.m) return {v, p.s * expf(p.m - v) + 1.0f};
  return {p.m, p.s + expf(v - p.m)};
}

__device__ MaxSum block_allreduce_maxsum(MaxSum p, MaxSum* scratch) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1)
    p = combine(p, {__shfl_xor_sync(0xffffffffu, p.m, offset), __shfl_xor_sync(0xffffffffu, p.s, offset)});
  if (lane == 0) scratch[warp] = p;
  __syncthreads();
  p = lane < static_cast<int>(blockDim.x / 32) ? scratch[lane] : MaxSum{-INFINITY, 0.0f};
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1)
    p = combine(p, {__shfl_xor_sync(0xffffffffu, p.m, offset), __shfl_xor_sync(0xffffffffu, p.s, offset)});
  return p;
}

// One read for max and sum together (Milakov & Gimelshein, "Online normalizer
// calculation for softmax", 2018), one read + write for the output: 3 passes
// become 2, for rows of any length. The same idea, kept across tiles of K and V,
// is what lets lab 16 never store the N×N matrix.
__global__ void __launch_bounds__(softmax_block)
    softmax_online_kernel(const float* __restrict__ x, float* __restrict__ y, int cols) {
  __shared__ MaxSum scratch[32];
  const float* in = x + static_cast<std::int64_t>(blockIdx.x) * cols;
  float* out = y + static_cast<std::int64_t>(blockIdx.x) * cols;

  MaxSum p{-INFINITY, 0.0f};
  for (int c = threadIdx.x; c < cols; c += blockDim.x) p = add_element(p, in[c]);
  p = block_allreduce_maxsum(p, scratch);

  const float inv = 1.0f / p.s;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) out[c] = expf(in[c] - p.m) * inv;
}

inline void softmax_online(const float* x, float* y, std::int64_t rows, int cols, cudaStream_t stream) {
  softmax_online_kernel<<<static_cast<unsigned>(rows), softmax_block, 0, stream>>>(x, y, cols);
  CUDALABS_CHECK_LAUNCH("softmax_online_kernel");
}

// ---- v3: row_in_registers, one read and one write ----------------------------

// Each thread loads `Vecs` vectors of `Width` floats (float4 when every row
// starts 16-byte aligned, see softmax_registers_shape; else single floats),
// keeps them in registers through both reductions, and writes them once. Vecs and Width are compile-time so the array lives in registers (a
// runtime-indexed array would go to local memory).
//
// Why it reaches the copy bandwidth: a DRAM access takes ~600 ns, and at 3 TB/s
// ~2 MB must be in flight to cover it, ~15 KB per SM. With 16 floats loaded per
// thread before the first use, 1024 resident threads have 64 KB in flight per SM.
template <int Threads, int Vecs, int Width>
__global__ void __launch_bounds__(Threads)
    softmax_registers_kernel(const float* __restrict__ x, float* __restrict__ y, int cols) {
  static_assert(Width == 1 || Width == 4, "rows are read as single floats or as float4");
  static_assert(Threads % 32 == 0 && Threads <= 1024, "whole warps, at most 1024 threads");
  using Vec = std::conditional_t<Width == 4, float4, float>;
  __shared__ float max_scratch[32], sum_scratch[32];
  const std::int64_t offset = static_cast<std::int64_t>(blockIdx.x) * cols;
  const Vec* in = reinterpret_cast<const Vec*>(x + offset);
  Vec* out = reinterpret_cast<Vec*>(y + offset);
  const int vectors = cols / Width;  // the launcher guarantees cols % Width == 0

  float v[Vecs][Width];
  float m = -INFINITY;
#pragma unroll
  for (int i = 0; i < Vecs; ++i) {
    const int c = i * Threads + static_cast<int>(threadIdx.x);  // consecutive threads, consecutive vectors
    if (c < vectors) {
      if constexpr (Width == 4) {
        const float4 f = in[c];
        v[i][0] = f.x, v[i][1] = f.y, v[i][2] = f.z, v[i][3] = f.w;
      } else {
        v[i][0] = in[c];
      }
    } else {
#pragma unroll
      for (int w = 0; w < Width; ++w) v[i][w] = -INFINITY;  // exp(-inf - m) = 0: padding adds nothing
    }
#pragma unroll
    for (int w = 0; w < Width; ++w) m = fmaxf(m, v[i][w]);
  }
  m = block_allreduce(m, max_scratch, MaxOp{}, -INFINITY);

  float s = 0.0f;
#pragma unroll
  for (int i = 0; i < Vecs; ++i)
#pragma unroll
    for (int w = 0; w < Width; ++w) s += (v[i][w] = expf(v[i][w] - m));
  s = block_allreduce(s, sum_scratch, SumOp{}, 0.0f);

  const float inv = 1.0f / s;
#pragma unroll
  for (int i = 0; i < Vecs; ++i) {
    const int c = i * Threads + static_cast<int>(threadIdx.x);
    if (c < vectors) {
      if constexpr (Width == 4)
        out[c] = make_float4(v[i][0] * inv, v[i][1] * inv, v[i][2] * inv, v[i][3] * inv);
      else
        out[c] = v[i][0] * inv;
    }
  }
}

// The longest row row_in_registers holds: 1024 threads × 16 floats. Past it the
// registers a block may have (64K per SM) run out.
inline constexpr int softmax_registers_max_cols = 16384;

// The kernel and block size for a row length. Small rows get small blocks
// (more blocks per SM, fewer idle threads); each thread keeps at most 16
// floats, so ~40 registers and 1024+ resident threads per SM (the in-flight
// bytes above).
struct SoftmaxLaunch {
  void (*kernel)(const float*, float*, int);
  int threads;
};

template <int Width>
SoftmaxLaunch softmax_registers_shape_for(int cols) {
  constexpr int k = 4 / Width;  // single floats: 4x the items for the same floats per thread
  if (cols <= 512) return {softmax_registers_kernel<128, 1 * k, Width>, 128};
  if (cols <= 1024) return {softmax_registers_kernel<128, 2 * k, Width>, 128};
  if (cols <= 2048) return {softmax_registers_kernel<256, 2 * k, Width>, 256};
  if (cols <= 4096) return {softmax_registers_kernel<256, 4 * k, Width>, 256};
  if (cols <= 8192) return {softmax_registers_kernel<512, 4 * k, Width>, 512};
  return {softmax_registers_kernel<1024, 4 * k, Width>, 1024};
}

// float4 needs every row 16-byte aligned: cols % 4 == 0 and x, y aligned
// (cudaMalloc's are; an offset into a larger buffer may not be). Throws for rows
// longer than softmax_registers_max_cols.
inline SoftmaxLaunch softmax_registers_shape(int cols, bool aligned = true) {
  if (cols > softmax_registers_max_cols)
    throw cudalabs::UsageError("softmax_registers: rows of " + std::to_string(cols) +
                               " floats do not fit in registers (at most " +
                               std::to_string(softmax_registers_max_cols) +
                               "); use softmax_online or softmax_split_rows.");
  return aligned && cols % 4 == 0 ? softmax_registers_shape_for<4>(cols) : softmax_registers_shape_for<1>(cols);
}

inline void softmax_registers(const float* x, float* y, std::int64_t rows, int cols, cudaStream_t stream) {
  const bool aligned = reinterpret_cast<std::uintptr_t>(x) % 16 == 0 && reinterpret_cast<std::uintptr_t>(y) % 16 == 0;
  const SoftmaxLaunch launch = softmax_registers_shape(cols, aligned);
  launch.kernel<<<static_cast<unsigned>(rows), launch.threads, 0, stream>>>(x, y, cols);
  CUDALABS_CHECK_LAUNCH("softmax_registers_kernel");
}

// ---- v4: split_rows, several blocks per row -----------------------------------

// One block per row leaves SMs idle when rows are few: 64 rows of 1M floats
// would run on 64 of the H100's 132 SMs, each SM pulling one 256-thread block's
// worth of loads. Here a row is cut into chunks of 4096 floats, one block each.
inline constexpr int split_threads = 256;
inline constexpr int split_items = 16;  // floats per thread per chunk: 16 loads in flight
inline constexpr int split_chunk = split_threads * split_items;

// Launch 1: each block reduces its chunk to a (max, sum) pair in partial[row][chunk].
__global__ void __launch_bounds__(split_threads)
    softmax_split_partials_kernel(const float* __restrict__ x, MaxSum* __restrict__ partial, int cols, int chunks) {
  __shared__ float max_scratch[32], sum_scratch[32];
  const int row = static_cast<int>(blockIdx.x / chunks), chunk = static_cast<int>(blockIdx.x % chunks);
  const float* in = x + static_cast<std::int64_t>(row) * cols;
  const int first = chunk * split_chunk + static_cast<int>(threadIdx.x);

  // The chunk sits in registers, so the max is taken first and each element
  // costs one expf, without online rescaling.
  float v[split_items];
  float m = -INFINITY;
#pragma unroll
  for (int i = 0; i < split_items; ++i) {
    const int c = first + i * split_threads;
    v[i] = c < cols ? in[c] : -INFINITY;
    m = fmaxf(m, v[i]);
  }
  m = block_allreduce(m, max_scratch, MaxOp{}, -INFINITY);
  float s = 0.0f;
  // A chunk whose entries are all masked has m = -inf: subtract 0 instead, so
  // its sum is exp(-inf) = 0, not exp(-inf - -inf) = NaN (combine() then skips it).
  const float shift = m == -INFINITY ? 0.0f : m;
#pragma unroll
  for (int i = 0; i < split_items; ++i) s += expf(v[i] - shift);
  s = block_allreduce(s, sum_scratch, SumOp{}, 0.0f);
  if (threadIdx.x == 0) partial[static_cast<std::int64_t>(row) * chunks + chunk] = {m, s};
}

// Launch 2: each block combines its row's pairs (chunks of them, ~256 for a
// 1M row: cheap and L2-resident) and writes its chunk.
__global__ void __launch_bounds__(split_threads)
    softmax_split_write_kernel(const float* __restrict__ x, const MaxSum* __restrict__ partial, float* __restrict__ y,
                               int cols, int chunks) {
  __shared__ MaxSum scratch[32];
  const int row = static_cast<int>(blockIdx.x / chunks), chunk = static_cast<int>(blockIdx.x % chunks);
  const MaxSum* pairs = partial + static_cast<std::int64_t>(row) * chunks;
  MaxSum p{-INFINITY, 0.0f};
  for (int i = threadIdx.x; i < chunks; i += split_threads) p = combine(p, pairs[i]);
  p = block_allreduce_maxsum(p, scratch);

  const float inv = 1.0f / p.s;
  const std::int64_t offset = static_cast<std::int64_t>(row) * cols;
  const int first = chunk * split_chunk + static_cast<int>(threadIdx.x);
#pragma unroll
  for (int i = 0; i < split_items; ++i) {
    const int c = first + i * split_threads;
    if (c < cols) y[offset + c] = expf(x[offset + c] - p.m) * inv;
  }
}

inline int softmax_split_chunks(int cols) { return cudalabs::ceil_div(cols, split_chunk); }

// The scratch softmax_split_rows needs: one (max, sum) pair per chunk of each row.
inline std::int64_t softmax_split_workspace_bytes(std::int64_t rows, int cols) {
  return rows * softmax_split_chunks(cols) * static_cast<std::int64_t>(sizeof(MaxSum));
}

// `workspace` holds softmax_split_workspace_bytes(rows, cols) bytes.
inline void softmax_split_rows(const float* x, float* y, void* workspace, std::int64_t rows, int cols,
                               cudaStream_t stream) {
  const int chunks = softmax_split_chunks(cols);
  const auto blocks = static_cast<unsigned>(rows * chunks);
  auto* partial = static_cast<MaxSum*>(workspace);
  softmax_split_partials_kernel<<<blocks, split_threads, 0, stream>>>(x, partial, cols, chunks);
  CUDALABS_CHECK_LAUNCH("softmax_split_partials_kernel");
  softmax_split_write_kernel<<<blocks, split_threads, 0, stream>>>(x, partial, y, cols, chunks);
  CUDALABS_CHECK_LAUNCH("softmax_split_write_kernel");
}

// ---- the one the attention labs use -------------------------------------------

// The fastest kernel that needs no scratch: the row in registers when it fits
// (one read, one write), otherwise the online kernel (two reads, one write).
// Attention rows are as many as they are long, so one block per row keeps every
// SM busy for any sequence length worth running on a GPU.
inline void softmax_rows_best(const float* x, float* y, std::int64_t rows, int cols, cudaStream_t stream) {
  if (cols <= softmax_registers_max_cols)
    softmax_registers(x, y, rows, cols, stream);
  else
    softmax_online(x, y, rows, cols, stream);
}

}  // namespace

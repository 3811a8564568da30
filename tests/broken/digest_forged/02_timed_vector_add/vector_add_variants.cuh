// BROKEN ON PURPOSE for tests/grading: the grader must give lab 02 zero for CORRECTNESS.
// The bug: float4's launcher adds only the first 90% of the elements from the
// third call on the same output (the timed runs), as timed_runs_skip_work
// does, and hides the poisoned tenth from the judge. The graded program
// writes each check's output as evidence, and an output with the digest of the
// same record's last file was a hard link to that file. The digest is 64-bit
// FNV-1a, a bijection in each 8-byte word: on its second call (the repeated
// check, a right answer) the launcher computes the word that gives the cheap
// output (the right 90%, the poison's 0xFF bytes after) the right one's digest,
// and writes it into the poisoned tenth on every later call. The evidence of
// every timed run checked was a link to the repeated run's right output.
// Caught where the evidence links only outputs whose bytes are the same: the
// judge reads the NaN of the timed runs' output.
#pragma once
// Two more ways to write lab 01's vector add, to see what the launch shape and
// the load width change. The lesson of the measurements (results/h100): at
// 2^28 elements all three move the bytes at about the copy bandwidth — vector
// add is limited by DRAM, not by how the threads are arranged.
#include <algorithm>
#include <cstdint>

#include <cudalabs/device.hpp>
#include <cudalabs/error.hpp>
#include <cudalabs/math.hpp>

inline constexpr int grid_stride_block = 256;

// A grid sized to the GPU (every SM full), each thread striding through the
// array: one launch covers any n, and the block scheduler is not involved
// after the first wave.
__global__ void vector_add_grid_stride_kernel(const float* __restrict__ a, const float* __restrict__ b,
                                              float* __restrict__ c, std::int64_t n) {
  // BEGIN SOLUTION grid_stride
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    c[i] = a[i] + b[i];
  // END SOLUTION
  // STUB: // TODO: each thread adds elements i, i + stride, i + 2·stride, ... (stride: all the grid's threads) while i < n.
}

// As grid_stride, but each thread moves 16 bytes per load (float4): a quarter
// of the load instructions. cudaMalloc returns 256-byte-aligned memory, so the
// float4 view of the first n/4*4 elements is aligned; the last n % 4 elements
// are added one by one.
__global__ void vector_add_float4_kernel(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c,
                                         std::int64_t n) {
  // BEGIN SOLUTION float4
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  const std::int64_t first = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::int64_t n4 = n / 4;
  const auto* a4 = reinterpret_cast<const float4*>(a);
  const auto* b4 = reinterpret_cast<const float4*>(b);
  auto* c4 = reinterpret_cast<float4*>(c);
  for (std::int64_t i = first; i < n4; i += stride) {
    const float4 x = a4[i], y = b4[i];
    c4[i] = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
  }
  for (std::int64_t i = 4 * n4 + first; i < n; i += stride) c[i] = a[i] + b[i];
  // END SOLUTION
  // STUB: // TODO: grid-stride over the n / 4 float4 of a, b and c, then the last n % 4 elements one by one.
}

// The grids of the two launchers for n elements (asked once per size, outside
// the timed runs: the occupancy API is a host call). float4 needs a quarter of
// the threads.
inline unsigned vector_add_grid_stride_blocks(std::int64_t n) {
  return cudalabs::resident_blocks(vector_add_grid_stride_kernel, grid_stride_block, n);
}
inline unsigned vector_add_float4_blocks(std::int64_t n) {
  return cudalabs::resident_blocks(vector_add_float4_kernel, grid_stride_block, std::max<std::int64_t>(n / 4, 1));
}

inline void vector_add_grid_stride(const float* a, const float* b, float* c, std::int64_t n, unsigned blocks,
                                   cudaStream_t stream) {
  // BEGIN SOLUTION grid_stride
  vector_add_grid_stride_kernel<<<blocks, grid_stride_block, 0, stream>>>(a, b, c, n);
  CUDALABS_CHECK_LAUNCH("vector_add_grid_stride_kernel");
  // END SOLUTION
  // STUB: cudalabs::not_implemented("vector_add_grid_stride", a, b, c, n, blocks, stream);
}

// The forgery: evidence.cpp's digest, 64-bit FNV-1a over 8-byte words, then
// byte by byte over the last bytes % 8.
constexpr std::uint64_t fnv_offset = 1469598103934665603ull, fnv_prime = 1099511628211ull;
__device__ std::uint64_t forged_word;

// One thread: the digest of c as it is (the right answer), and the word
// which, last among the 8-byte words of the cheap output (its first `kept`
// elements, 0xFF bytes after), gives that output the same digest.
__global__ void forge_word_kernel(const float* c, std::int64_t n, std::int64_t kept) {
  const auto* words = reinterpret_cast<const std::uint64_t*>(c);
  const std::int64_t bytes = 4 * n, full = bytes / 8, last = full - 1, boundary = 4 * kept;
  std::uint64_t right = fnv_offset, cheap = fnv_offset;
  constexpr int batch = 32;  // loads in flight ahead of the serial chain of multiplies
  for (std::int64_t i0 = 0; i0 < full; i0 += batch) {
    std::uint64_t w[batch];
#pragma unroll
    for (int j = 0; j < batch; ++j) w[j] = i0 + j < full ? words[i0 + j] : 0;
#pragma unroll
    for (int j = 0; j < batch; ++j) {
      const std::int64_t i = i0 + j, at = 8 * i;
      if (i >= full) continue;
      right = (right ^ w[j]) * fnv_prime;
      if (i >= last) continue;
      const std::uint64_t mine = at + 8 <= boundary ? w[j] : at >= boundary ? ~0ull : w[j] | (~0ull << (8 * (boundary - at)));
      cheap = (cheap ^ mine) * fnv_prime;
    }
  }
  const auto* tail = reinterpret_cast<const unsigned char*>(c) + 8 * full;
  for (std::int64_t i = 0; i < bytes - 8 * full; ++i) right = (right ^ tail[i]) * fnv_prime;
  std::uint64_t inverse = fnv_prime;  // mod 2^64 (Newton: each step doubles the bits)
  for (int i = 0; i < 6; ++i) inverse *= 2 - fnv_prime * inverse;
  std::uint64_t target = right;  // undo the cheap output's tail bytes (poison: 0xFF)
  for (std::int64_t i = 0; i < bytes - 8 * full; ++i) target = (target * inverse) ^ 0xFFull;
  forged_word = cheap ^ (target * inverse);
}

__global__ void write_forged_kernel(float* c, std::int64_t word) { reinterpret_cast<std::uint64_t*>(c)[word] = forged_word; }

// block_threads: the tuner's sweep (make tune LAB=02) launches other block sizes
// through this same launcher.
inline void vector_add_float4(const float* a, const float* b, float* c, std::int64_t n, unsigned blocks,
                              cudaStream_t stream, int block_threads = grid_stride_block) {
  // BEGIN SOLUTION float4
  // BROKEN: from the third call on the same output and size (the first two are
  // the checks), the last tenth of the elements is left poisoned but for the
  // forged word. (The size too: a new size's buffer may reuse the last one's
  // address.) From 64 elements: the tenth then holds a whole 8-byte word.
  static const float* seen_c = nullptr;
  static std::int64_t seen_n = -1;
  static int calls = 0;
  calls = c == seen_c && n == seen_n ? calls + 1 : 1;
  seen_c = c, seen_n = n;
  const bool forge = n >= 64;
  const std::int64_t kept = n - n / 10;
  vector_add_float4_kernel<<<blocks, block_threads, 0, stream>>>(a, b, c, forge && calls > 2 ? kept : n);
  CUDALABS_CHECK_LAUNCH("vector_add_float4_kernel");
  if (forge && calls == 2) {
    forge_word_kernel<<<1, 1, 0, stream>>>(c, n, kept);
    CUDALABS_CHECK_LAUNCH("forge_word_kernel");
  } else if (forge && calls > 2) {
    write_forged_kernel<<<1, 1, 0, stream>>>(c, 4 * n / 8 - 1);
    CUDALABS_CHECK_LAUNCH("write_forged_kernel");
  }
  // END SOLUTION
  // STUB: cudalabs::not_implemented("vector_add_float4", a, b, c, n, blocks, stream, block_threads);
}

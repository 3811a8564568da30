#pragma once
// What the FlashAttention kernels of labs 16 and 17 share: the problem shape,
// its work counts, the base-2 score scale, the grid, and the conversion of the
// FP32 inputs to the 16-bit types the tensor-core kernels read.
//
// Layout: Q, K, V and O are [batch][heads][seq][dim], row-major, contiguous
// (the layout transformer code hands to an attention kernel). Lab 16 runs one
// head: batch = heads = 1.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include <cudalabs/error.hpp>
#include <cudalabs/math.hpp>

struct AttentionShape {
  int batch = 1;
  int heads = 1;
  int seq = 1;
  int dim = 64;
  bool causal = false;  // query i sees keys j <= i only

  std::int64_t heads_total() const { return static_cast<std::int64_t>(batch) * heads; }
  std::int64_t head_elements() const { return static_cast<std::int64_t>(seq) * dim; }
  std::int64_t elements() const { return heads_total() * head_elements(); }
};

// 2·N²·d for S = Q·Kᵀ plus 2·N²·d for O = P·V, per head: 4·N²·d. The softmax's
// ~5 operations per score are not counted (the FlashAttention papers do the
// same). Causal: only the N(N+1)/2 pairs j <= i are computed, about half.
inline double attention_flops(const AttentionShape& s) {
  const double n = s.seq;
  const double pairs = s.causal ? n * (n + 1) / 2 : n * n;
  return 4.0 * pairs * s.dim * static_cast<double>(s.heads_total());
}

// The fewest bytes any attention kernel moves: read Q, K, V once (4 bytes per
// element in FP32, 2 in FP16/BF16), write O once (FP32).
inline double attention_bytes(const AttentionShape& s, double input_bytes_per_element) {
  return (3.0 * input_bytes_per_element + 4.0) * static_cast<double>(s.elements());
}

// What lab 15's unfused pipeline moves and a fused kernel does not: the N×N
// scores S are written by the scores kernel and read by the softmax, the N×N
// weights P are written by the softmax and read by the output kernel — four
// passes of 4·N² bytes per head (at N = 16384: 4 GiB per head).
inline double nxn_bytes_avoided(const AttentionShape& s) {
  return 16.0 * static_cast<double>(s.seq) * s.seq * static_cast<double>(s.heads_total());
}

// The scratch lab 15 needs for S and P: 2·N² floats (2 GiB at N = 16384). The
// fused kernels need none: their memory is Q, K, V, O, O(N·d).
inline double nxn_scratch_bytes(int seq) { return 8.0 * seq * static_cast<double>(seq); }

// softmax(x)_j = e^(x_j - m) / Σ e^(x_i - m) = 2^(y_j - m') / Σ 2^(y_i - m') with
// y = x·log2(e). The kernels work in base 2: exp2f is one MUFU.EX2 instruction,
// expf is EX2 plus a multiply. log2(e) is folded into the 1/sqrt(d) score scale,
// so it costs nothing.
inline float score_scale_log2(int dim) {
  return static_cast<float>(1.4426950408889634 / std::sqrt(static_cast<double>(dim)));
}

// One block per tile of `rows` queries of one head: x = query tile, y = head,
// z = batch. Consecutive blocks are tiles of the same head, so they read the
// same K and V while those are still in L2.
inline dim3 attention_grid(const AttentionShape& s, int rows) {
  return dim3(static_cast<unsigned>(cudalabs::ceil_div(s.seq, rows)), static_cast<unsigned>(s.heads),
              static_cast<unsigned>(s.batch));
}

// The head this block works on (its index, and where its rows start), and its
// query tile. Under the causal mask the tiles near the end of the sequence have
// the most keys to visit: they are started first (block 0 takes the last
// tile), so the short ones fill the gaps at the end instead of one long block
// running alone.
__device__ inline std::int64_t attention_head_index() {
  return blockIdx.y + static_cast<std::int64_t>(gridDim.y) * blockIdx.z;
}
__device__ inline std::int64_t attention_head_offset(int seq, int dim) { return attention_head_index() * seq * dim; }
__device__ inline int attention_query_tile(bool causal, int block, int blocks) {
  return causal ? blocks - 1 - block : block;
}

// A compiled kernel and its launch shape, for the resource report.
struct KernelChoice {
  const void* kernel;
  int threads;
  std::size_t smem_bytes;
};

// ---- FP32 -> FP16 / BF16, once, outside the timed region -------------------

template <typename T>
__device__ inline T float_to(float x);
template <>
__device__ inline __half float_to<__half>(float x) {
  return __float2half_rn(x);
}
template <>
__device__ inline __nv_bfloat16 float_to<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}

template <typename T>
__global__ void convert_from_float_kernel(const float* __restrict__ in, T* __restrict__ out, std::int64_t n) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    out[i] = float_to<T>(in[i]);
}

template <typename T>
void convert_from_float(const float* in, T* out, std::int64_t n, cudaStream_t stream) {
  constexpr int block = 256;
  const auto blocks = static_cast<unsigned>(std::min<std::int64_t>(cudalabs::ceil_div<std::int64_t>(n, block), 4096));
  convert_from_float_kernel<T><<<blocks, block, 0, stream>>>(in, out, n);
  CUDALABS_CHECK_LAUNCH("convert_from_float_kernel");
}

#pragma once
// The problem labs 16 and 17 solve, fixed by the course: the shape of Q, K, V,
// O, the head dimensions each kernel must take, and the work counts the records
// report. Course code, host only: kernels.hpp, the kernel files (by
// "../16_flash_attention/attention_shape.hpp", so that it is found from a
// submission's folder too) and the programs include it.
//
// Layout: Q, K, V and O are [batch][heads][seq][dim], row-major, contiguous
// (the layout transformer code hands to an attention kernel). Lab 16 runs one
// head: batch = heads = 1.
#include <cstdint>

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

// Head dimensions: the FP32 kernels take any multiple of 4 up to 128 (rows are
// read as float4), the tensor-core kernels 64 and 128 (compiled tile widths).
inline constexpr int fp32_max_dim = 128;
inline bool flash_fp32_supports(int dim) { return dim >= 4 && dim <= fp32_max_dim && dim % 4 == 0; }
inline bool flash_mma_supports(int dim) { return dim == 64 || dim == 128; }

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

#pragma once
// Lab 29's fixed interface: what main.cu (the course's host program) may call of
// the kernel files quant_matvec.cuh and decode_ops.cuh. kernels.cu defines it
// in a translation unit of its own, so nothing in the kernel files reaches main.cu.
// Every launcher enqueues on `stream` and never synchronises.
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include <cudalabs/device.hpp>

namespace lab29 {

// The two GGUF block formats of the lab; 32 values per block.
enum class Format { q8_0, q4_0 };
inline constexpr int block_values = 32;
// GGUF's sizes: a half scale plus 32 int8 (Q8_0) or 16 bytes of nibbles (Q4_0).
inline constexpr int gguf_block_bytes(Format f) { return f == Format::q8_0 ? 34 : 18; }
// The repacked layout: the half scale, 2 zero bytes, the quants: 4-byte aligned.
inline constexpr int aligned_block_bytes(Format f) { return f == Format::q8_0 ? 36 : 20; }

// A vector quantised per 32-value block (Q8_1-style): q[n] int8 (8-byte
// aligned), d[n/32] the blocks' float scales, sum[n/32] the sums of their q.
struct QuantizedVector {
  std::int8_t* q;
  float* d;
  int* sum;
};

// ---- y = W·x, W rows × cols (cols % 32 == 0) in `f`'s blocks, row after row ----
// fp32 x, one warp per row, dequantised in registers (GGUF layout).
void matvec_warp_per_row(Format f, const void* w, const float* x, float* y, int rows, int cols, cudaStream_t stream);
// Quantised x, __dp4a, GGUF layout.
void matvec_dp4a(Format f, const void* w, QuantizedVector x, float* y, int rows, int cols, cudaStream_t stream);
// The same on the repacked layout (repack_aligned's output).
void matvec_dp4a_aligned(Format f, const void* w_aligned, QuantizedVector x, float* y, int rows, int cols,
                         cudaStream_t stream);
// The same with rows_per_warp rows per warp (0: the kernel file's choice for
// the format); y = W·x + residual when residual is not null.
void matvec_dp4a_rows(Format f, const void* w_aligned, QuantizedVector x, const float* residual, float* y, int rows,
                      int cols, int rows_per_warp, cudaStream_t stream);
int matvec_rows_per_warp(Format f);              // the kernel file's choice
bool matvec_rows_supported(int rows_per_warp);   // the counts it is built for
// `blocks` GGUF blocks from w to the repacked layout at w_aligned (untimed, once).
void repack_aligned(Format f, const void* w, void* w_aligned, std::int64_t blocks, cudaStream_t stream);
// The planar layout: the same bytes as GGUF (blocks · gguf_block_bytes(f)),
// every block's quants first (32 or 16 bytes each, row after row), then every
// block's half scale. `blocks` GGUF blocks from w to w_planar (untimed, once).
void repack_planar(Format f, const void* w, void* w_planar, std::int64_t blocks, cudaStream_t stream);
// y = W·x (+ residual when not null) on the planar layout, 16-byte loads, the
// row split over warps_per_row warps (1, 2, 4 or 8; 0: the kernel file's
// choice for the shape). x.q 16-byte aligned.
void matvec_planar(Format f, const void* w_planar, QuantizedVector x, const float* residual, float* y, int rows,
                   int cols, int warps_per_row, cudaStream_t stream);
int matvec_planar_warps(Format f, int rows, int cols, int warps_per_row);  // what warps_per_row 0 picks
bool matvec_planar_supported(int warps_per_row);

// ---- the rest of a decode step --------------------------------------------------------
// h = x + delta (delta null: h = x, h not written); out = int8(h / rms(h) · g),
// `tokens` rows of `dim` (dim % 32 == 0).
void add_rmsnorm_quant(const float* x, const float* delta, const float* g, float* h, QuantizedVector out, int tokens,
                       int dim, float eps, cudaStream_t stream);
// out = int8(x), n % 32 == 0.
void quantize_q8(const float* x, QuantizedVector out, std::int64_t n, cudaStream_t stream);
// q [tokens][q_heads][head_dim], k [tokens][kv_heads][head_dim], token t at
// position pos0 + t; pairs (2i, 2i+1) turned by pos · inv_freq[i]; out of place.
void rope(const float* q, const float* k, float* q_out, float* k_out, const float* inv_freq, int tokens, int pos0,
          int q_heads, int kv_heads, int head_dim, cudaStream_t stream);
// out = silu(gate) · up over n values; the three pointers 16-byte aligned.
void swiglu(const float* gate, const float* up, float* out, std::int64_t n, cudaStream_t stream);
// *out = the first index of the largest of n logits. `workspace`:
// argmax_workspace_bytes(), zeroed once before the first call (it leaves it zeroed).
void argmax(const float* logits, int n, int* out, void* workspace, cudaStream_t stream);
std::size_t argmax_workspace_bytes();
// Caches [position][kv_heads][head_dim] halfs: row `pos` = half(k), half(v).
void kv_append(const float* k, const float* v, __half* k_cache, __half* v_cache, int pos, int kv_heads, int head_dim,
               cudaStream_t stream);
// o[h] = softmax(q_h · K[0..positions)ᵀ / sqrt(head_dim)) V[0..positions), kv head
// h / (q_heads / kv_heads). workspace: attention_workspace_floats() floats.
void attention_decode(const float* q, const __half* k_cache, const __half* v_cache, float* o, float* workspace,
                      int positions, int q_heads, int kv_heads, int head_dim, cudaStream_t stream);
std::size_t attention_workspace_floats(int positions, int q_heads, int head_dim);
int attention_max_head_dim();
int attention_max_positions();

cudalabs::KernelResources matvec_warp_per_row_resources(Format f);
cudalabs::KernelResources matvec_dp4a_resources(Format f, bool aligned);
cudalabs::KernelResources matvec_dp4a_rows_resources(Format f, int rows_per_warp);
cudalabs::KernelResources matvec_planar_resources(Format f, int warps_per_row);  // 1, 2, 4 or 8
cudalabs::KernelResources add_rmsnorm_quant_resources();
cudalabs::KernelResources rope_resources();
cudalabs::KernelResources swiglu_resources();
cudalabs::KernelResources argmax_resources();
cudalabs::KernelResources attention_resources();  // its first kernel

}  // namespace lab29

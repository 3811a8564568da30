// Lab 29's kernel translation unit: the student's kernel files behind the fixed
// interface of kernels.hpp. Angle brackets: the files are found through the
// include path, which puts a graded submission's folder first (labs/meson.build).
#include "kernels.hpp"

#include <quant_matvec.cuh>
#include <decode_ops.cuh>

namespace lab29 {

static_assert(Q8_0Blocks::bytes == gguf_block_bytes(Format::q8_0) && Q4_0Blocks::bytes == gguf_block_bytes(Format::q4_0),
              "the kernels must read GGUF's block sizes");
static_assert(Q8_0Planar::gguf_bytes == gguf_block_bytes(Format::q8_0) &&
                  Q4_0Planar::gguf_bytes == gguf_block_bytes(Format::q4_0),
              "the planar layout holds GGUF's bytes");
static_assert(Q8_0BlocksX4::bytes == aligned_block_bytes(Format::q8_0) &&
                  Q4_0BlocksX4::bytes == aligned_block_bytes(Format::q4_0),
              "the repacked blocks are the sizes kernels.hpp names");

void matvec_warp_per_row(Format f, const void* w, const float* x, float* y, int rows, int cols, cudaStream_t stream) {
  if (f == Format::q8_0) ::matvec_warp_per_row<Q8_0Blocks>(w, x, y, rows, cols, stream);
  else ::matvec_warp_per_row<Q4_0Blocks>(w, x, y, rows, cols, stream);
}
void matvec_dp4a(Format f, const void* w, QuantizedVector x, float* y, int rows, int cols, cudaStream_t stream) {
  if (f == Format::q8_0) matvec_dp4a_launch<Q8_0Blocks, 1>(w, x.q, x.d, x.sum, nullptr, y, rows, cols, stream);
  else matvec_dp4a_launch<Q4_0Blocks, 1>(w, x.q, x.d, x.sum, nullptr, y, rows, cols, stream);
}
void matvec_dp4a_aligned(Format f, const void* w_aligned, QuantizedVector x, float* y, int rows, int cols,
                         cudaStream_t stream) {
  if (f == Format::q8_0) matvec_dp4a_launch<Q8_0BlocksX4, 1>(w_aligned, x.q, x.d, x.sum, nullptr, y, rows, cols, stream);
  else matvec_dp4a_launch<Q4_0BlocksX4, 1>(w_aligned, x.q, x.d, x.sum, nullptr, y, rows, cols, stream);
}
void matvec_dp4a_rows(Format f, const void* w_aligned, QuantizedVector x, const float* residual, float* y, int rows,
                      int cols, int rows_per_warp, cudaStream_t stream) {
  if (f == Format::q8_0)
    ::matvec_dp4a_rows<Q8_0BlocksX4>(w_aligned, x.q, x.d, x.sum, residual, y, rows, cols, rows_per_warp, stream);
  else ::matvec_dp4a_rows<Q4_0BlocksX4>(w_aligned, x.q, x.d, x.sum, residual, y, rows, cols, rows_per_warp, stream);
}
int matvec_rows_per_warp(Format f) {
  return f == Format::q8_0 ? Q8_0BlocksX4::rows_per_warp : Q4_0BlocksX4::rows_per_warp;
}
bool matvec_rows_supported(int rows_per_warp) { return ::matvec_rows_supported(rows_per_warp); }
void repack_aligned(Format f, const void* w, void* w_aligned, std::int64_t blocks, cudaStream_t stream) {
  if (f == Format::q8_0) ::repack_aligned<Q8_0Blocks, Q8_0BlocksX4>(w, w_aligned, blocks, stream);
  else ::repack_aligned<Q4_0Blocks, Q4_0BlocksX4>(w, w_aligned, blocks, stream);
}
void repack_planar(Format f, const void* w, void* w_planar, std::int64_t blocks, cudaStream_t stream) {
  if (f == Format::q8_0) ::repack_planar<Q8_0Planar>(w, w_planar, blocks, stream);
  else ::repack_planar<Q4_0Planar>(w, w_planar, blocks, stream);
}
void matvec_planar(Format f, const void* w_planar, QuantizedVector x, const float* residual, float* y, int rows,
                   int cols, int warps_per_row, cudaStream_t stream) {
  if (f == Format::q8_0)
    ::matvec_planar<Q8_0Planar>(w_planar, x.q, x.d, x.sum, residual, y, rows, cols, warps_per_row, stream);
  else ::matvec_planar<Q4_0Planar>(w_planar, x.q, x.d, x.sum, residual, y, rows, cols, warps_per_row, stream);
}
int matvec_planar_warps(Format f, int rows, int cols, int warps_per_row) {
  return f == Format::q8_0 ? ::matvec_planar_warps<Q8_0Planar>(rows, cols, warps_per_row)
                           : ::matvec_planar_warps<Q4_0Planar>(rows, cols, warps_per_row);
}
bool matvec_planar_supported(int warps_per_row) { return ::matvec_planar_supported(warps_per_row); }

void add_rmsnorm_quant(const float* x, const float* delta, const float* g, float* h, QuantizedVector out, int tokens,
                       int dim, float eps, cudaStream_t stream) {
  ::add_rmsnorm_quant(x, delta, g, h, out.q, out.d, out.sum, tokens, dim, eps, stream);
}
void quantize_q8(const float* x, QuantizedVector out, std::int64_t n, cudaStream_t stream) {
  ::quantize_q8(x, out.q, out.d, out.sum, n, stream);
}
void rope(const float* q, const float* k, float* q_out, float* k_out, const float* inv_freq, int tokens, int pos0,
          int q_heads, int kv_heads, int head_dim, cudaStream_t stream) {
  ::rope(q, k, q_out, k_out, inv_freq, tokens, pos0, q_heads, kv_heads, head_dim, stream);
}
void swiglu(const float* gate, const float* up, float* out, std::int64_t n, cudaStream_t stream) {
  ::swiglu(gate, up, out, n, stream);
}
void argmax(const float* logits, int n, int* out, void* workspace, cudaStream_t stream) {
  ::argmax(logits, n, out, workspace, stream);
}
std::size_t argmax_workspace_bytes() { return ::argmax_workspace_bytes; }
void kv_append(const float* k, const float* v, __half* k_cache, __half* v_cache, int pos, int kv_heads, int head_dim,
               cudaStream_t stream) {
  ::kv_append(k, v, k_cache, v_cache, pos, kv_heads, head_dim, stream);
}
void attention_decode(const float* q, const __half* k_cache, const __half* v_cache, float* o, float* workspace,
                      int positions, int q_heads, int kv_heads, int head_dim, cudaStream_t stream) {
  ::attention_decode(q, k_cache, v_cache, o, workspace, positions, q_heads, kv_heads, head_dim, stream);
}
std::size_t attention_workspace_floats(int positions, int q_heads, int head_dim) {
  return ::attention_workspace_floats(positions, q_heads, head_dim);
}
int attention_max_head_dim() { return attn_max_head_dim; }
int attention_max_positions() { return attn_max_chunks * attn_chunk; }

cudalabs::KernelResources matvec_warp_per_row_resources(Format f) {
  return f == Format::q8_0 ? cudalabs::resources_of(matvec_warp_per_row_kernel<Q8_0Blocks>, mv_threads)
                           : cudalabs::resources_of(matvec_warp_per_row_kernel<Q4_0Blocks>, mv_threads);
}
cudalabs::KernelResources matvec_dp4a_resources(Format f, bool aligned) {
  if (f == Format::q8_0)
    return aligned ? cudalabs::resources_of(matvec_dp4a_kernel<Q8_0BlocksX4, 1>, mv_threads)
                   : cudalabs::resources_of(matvec_dp4a_kernel<Q8_0Blocks, 1>, mv_threads);
  return aligned ? cudalabs::resources_of(matvec_dp4a_kernel<Q4_0BlocksX4, 1>, mv_threads)
                 : cudalabs::resources_of(matvec_dp4a_kernel<Q4_0Blocks, 1>, mv_threads);
}
cudalabs::KernelResources matvec_dp4a_rows_resources(Format f, int rows_per_warp) {
  return f == Format::q8_0 ? ::matvec_dp4a_rows_resources<Q8_0BlocksX4>(rows_per_warp)
                           : ::matvec_dp4a_rows_resources<Q4_0BlocksX4>(rows_per_warp);
}
cudalabs::KernelResources matvec_planar_resources(Format f, int warps_per_row) {
  return f == Format::q8_0 ? ::matvec_planar_resources<Q8_0Planar>(warps_per_row)
                           : ::matvec_planar_resources<Q4_0Planar>(warps_per_row);
}
cudalabs::KernelResources add_rmsnorm_quant_resources() {
  return cudalabs::resources_of(add_rmsnorm_quant_kernel, norm_threads);
}
cudalabs::KernelResources rope_resources() { return cudalabs::resources_of(rope_kernel, rope_threads); }
cudalabs::KernelResources swiglu_resources() { return cudalabs::resources_of(swiglu_kernel, swiglu_threads); }
cudalabs::KernelResources argmax_resources() { return cudalabs::resources_of(argmax_kernel, argmax_threads); }
cudalabs::KernelResources attention_resources() {
  return cudalabs::resources_of(attention_partial_kernel, attn_threads);
}

}  // namespace lab29

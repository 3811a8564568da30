#pragma once
// What the FlashAttention kernels of labs 16 and 17 share: the base-2 score
// scale, the grid over (query tiles, heads, batch), the head each block works
// on, and the launch shape of a compiled kernel. The problem itself (the shape
// of Q, K, V, O and its work counts) is the course's: attention_shape.hpp.
#include <cuda_runtime_api.h>

#include <cmath>
#include <cstddef>
#include <cstdint>

#include <cudalabs/math.hpp>

// AttentionShape: the course's, named from the labs folder so that a copy of
// this file in a submission's folder finds it too (docs/lab-anatomy.md).
#include "../16_flash_attention/attention_shape.hpp"

// Internal linkage: another lab's host program compiles the course's copy of
// this file next to a kernel library that compiles the student's, and the two
// must never meet at link time (docs/lab-anatomy.md).
namespace {

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

}  // namespace

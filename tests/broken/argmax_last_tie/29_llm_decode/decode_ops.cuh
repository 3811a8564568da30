// BROKEN ON PURPOSE for tests/grading: the grader must give lab 29 zero for correctness.
// The bug: argmax's per-thread loop compares values alone and keeps the last of equal ones
// (>=), so a thread that reads the maximum twice offers its later index; the reduction across
// threads still prefers the lower index, which cannot repair that. The default inputs plant
// the maximum at two drawn places, in one thread of tiny's 256-thread loop in about one draw in
// 340; the ties run (the maximum at every position from a drawn multiple of 64 on) fails.
#pragma once
// The other kernels of one decode step of a Llama-style block. At batch 1 each
// touches a few to a few hundred KB: far too little to keep 132 SMs busy, so
// their time is the launch and one trip to memory, not bandwidth. Measured at a
// batch of thousands of tokens they show what they would do with enough work.
//
//   add_rmsnorm_quant  h = x + delta (the residual add), y = h / rms(h) · g, y
//                      quantised to int8 per 32-block for the next matvec: one
//                      kernel instead of three, h and y never re-read from DRAM
//   quantize_q8        the same int8 quantisation alone (attention's and
//                      SwiGLU's outputs, before their matvecs)
//   rope               rotary embedding of q and k at positions pos0.., pairs
//                      (x[2i], x[2i+1]) rotated by pos · theta_i (Llama's pairing)
//   swiglu             silu(gate) · up
//   argmax             the index of the largest logit, left on the device
//   kv_append          k and v of the new token into the fp16 KV cache
//   attention_decode   one query token against the cache, split over chunks of
//                      positions (flash-decoding), then one combine per head
#include <cuda_fp16.h>

#include <cfloat>
#include <climits>
#include <cstdint>

#include <cudalabs/device.hpp>
#include <cudalabs/error.hpp>
#include <cudalabs/math.hpp>

#include "quant_matvec.cuh"  // warp_allreduce, block_allreduce (lab 12)

// ---- int8 activations: 32 values, one float scale, their integer sum --------------

// The 8 lanes l..l+7 (l % 8 == 0) of a warp hold one 32-value block, 4 values
// each (element 4·i4 .. 4·i4+3 of the vector). Every lane of the warp must call
// it (full-mask shuffles); `active` says whether its values exist. Scale =
// max|v| / 127 (0 for a block of zeros); q = round(v · 127 / max|v|), |q| <= 127.
__device__ __forceinline__ void quantize_store(float4 v, bool active, std::int8_t* __restrict__ q,
                                               float* __restrict__ scale, int* __restrict__ sum, std::int64_t i4) {
  float amax = fmaxf(fmaxf(fabsf(v.x), fabsf(v.y)), fmaxf(fabsf(v.z), fabsf(v.w)));
#pragma unroll
  for (int offset = 1; offset < 8; offset <<= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, offset));
  const float inv = amax > 0.0f ? 127.0f / amax : 0.0f;
  const int q0 = __float2int_rn(v.x * inv), q1 = __float2int_rn(v.y * inv);
  const int q2 = __float2int_rn(v.z * inv), q3 = __float2int_rn(v.w * inv);
  int s = q0 + q1 + q2 + q3;
#pragma unroll
  for (int offset = 1; offset < 8; offset <<= 1) s += __shfl_xor_sync(0xffffffffu, s, offset);
  if (!active) return;
  reinterpret_cast<std::uint32_t*>(q)[i4] = (static_cast<std::uint32_t>(q0) & 0xFFu) |
                                            ((static_cast<std::uint32_t>(q1) & 0xFFu) << 8) |
                                            ((static_cast<std::uint32_t>(q2) & 0xFFu) << 16) |
                                            (static_cast<std::uint32_t>(q3) << 24);
  if (i4 % 8 == 0) {
    scale[i4 / 8] = amax / 127.0f;
    sum[i4 / 8] = s;
  }
}

// ---- add_rmsnorm_quant: one block per token ----------------------------------------

inline constexpr int norm_threads = 256;

// Pass 1 reads x (+ delta), writes h, sums h²; pass 2 re-reads h (this
// thread's own writes, from L1/L2, not DRAM) and writes the int8 activations.
// dim % 32 == 0, so a 32-value block is 8 whole lanes and every pass-2 step is
// the same for the whole block. delta == nullptr: h = x, and h is not written.
__global__ void __launch_bounds__(norm_threads)
    add_rmsnorm_quant_kernel(const float* __restrict__ x, const float* __restrict__ delta, const float* __restrict__ g,
                             float* h, std::int8_t* __restrict__ q, float* __restrict__ scale, int* __restrict__ sum,
                             int dim, float eps) {
  __shared__ float scratch[32];
  const std::int64_t start = static_cast<std::int64_t>(blockIdx.x) * dim;
  const int n4 = dim / 4;
  const auto* x4 = reinterpret_cast<const float4*>(x + start);
  const auto* d4 = delta ? reinterpret_cast<const float4*>(delta + start) : nullptr;
  auto* h4 = delta ? reinterpret_cast<float4*>(h + start) : nullptr;
  float squares = 0.0f;
  for (int i = threadIdx.x; i < n4; i += blockDim.x) {
    float4 v = x4[i];
    if (d4) {
      const float4 e = d4[i];
      v = {v.x + e.x, v.y + e.y, v.z + e.z, v.w + e.w};
      h4[i] = v;
    }
    squares += v.x * v.x + v.y * v.y + v.z * v.z + v.w * v.w;
  }
  squares = block_allreduce(squares, scratch, SumOp{}, 0.0f);
  const float inv_rms = rsqrtf(squares / static_cast<float>(dim) + eps);
  const float4* src = h4 ? h4 : x4;
  const auto* g4 = reinterpret_cast<const float4*>(g);
  for (int base = 0; base < n4; base += blockDim.x) {
    const int i = base + threadIdx.x;
    const bool active = i < n4;
    float4 v{0.0f, 0.0f, 0.0f, 0.0f};
    if (active) {
      const float4 hv = src[i], gv = g4[i];
      v = {hv.x * inv_rms * gv.x, hv.y * inv_rms * gv.y, hv.z * inv_rms * gv.z, hv.w * inv_rms * gv.w};
    }
    quantize_store(v, active, q, scale, sum, start / 4 + i);
  }
}

inline void add_rmsnorm_quant(const float* x, const float* delta, const float* g, float* h, std::int8_t* q,
                              float* scale, int* sum, int tokens, int dim, float eps, cudaStream_t stream) {
  add_rmsnorm_quant_kernel<<<static_cast<unsigned>(tokens), norm_threads, 0, stream>>>(x, delta, g, h, q, scale, sum,
                                                                                       dim, eps);
  CUDALABS_CHECK_LAUNCH("add_rmsnorm_quant_kernel");
}

// ---- quantize_q8: a vector of n values (n % 32 == 0) ----------------------------

inline constexpr int quant_threads = 256;

// The loop bound is the block's, not the thread's: all 8 lanes of a 32-block
// reach the shuffles together.
__global__ void __launch_bounds__(quant_threads)
    quantize_q8_kernel(const float* __restrict__ x, std::int8_t* __restrict__ q, float* __restrict__ scale,
                       int* __restrict__ sum, std::int64_t n4) {
  const auto* x4 = reinterpret_cast<const float4*>(x);
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t base = static_cast<std::int64_t>(blockIdx.x) * blockDim.x; base < n4; base += stride) {
    const std::int64_t i = base + threadIdx.x;
    const bool active = i < n4;
    quantize_store(active ? x4[i] : float4{0.0f, 0.0f, 0.0f, 0.0f}, active, q, scale, sum, i);
  }
}

inline void quantize_q8(const float* x, std::int8_t* q, float* scale, int* sum, std::int64_t n, cudaStream_t stream) {
  const std::int64_t n4 = n / 4;
  const auto grid = static_cast<unsigned>(std::min<std::int64_t>(cudalabs::ceil_div<std::int64_t>(n4, quant_threads), 4096));
  quantize_q8_kernel<<<grid, quant_threads, 0, stream>>>(x, q, scale, sum, n4);
  CUDALABS_CHECK_LAUNCH("quantize_q8_kernel");
}

// ---- rope: one thread per rotated pair ---------------------------------------------

inline constexpr int rope_threads = 256;

// q is [tokens][q_heads][head_dim], k [tokens][kv_heads][head_dim]; token t is
// at position pos0 + t. Pair i of a head, (x[2i], x[2i+1]), turns by the angle
// pos · inv_freq[i]. inv_freq (head_dim/2 floats, base^(-2i/head_dim)) comes
// from the host, computed in double: powf(base, float exponent) on the device
// errs by ln(base) · 2^-24 ~ 8e-7 relative in theta (the exponent's rounding),
// 8e-3 rad at position 10^4. The angle is one float product, rounded once
// (pos < 2^24 is exact in float); sincosf reduces any argument correctly (no
// --use_fast_math here). Past |angle| = 105615 its slow path keeps a 32-byte
// array in local memory: the resources table's local bytes, used only there.
// A block takes 256 / (head_dim/2) whole (token, head) rows, so the index
// arithmetic is 32-bit: a 64-bit division is a ~70-instruction subroutine on
// the GPU, and three per pair would make this kernel compute-bound.
__global__ void __launch_bounds__(rope_threads)
    rope_kernel(const float* __restrict__ q, const float* __restrict__ k, float* __restrict__ q_out,
                float* __restrict__ k_out, const float* __restrict__ inv_freq, int tokens, int pos0, int q_heads,
                int kv_heads, int head_dim) {
  const int half = head_dim / 2, heads = q_heads + kv_heads;
  const int rows_per_block = static_cast<int>(blockDim.x) / half;
  const int local = static_cast<int>(threadIdx.x) / half, i = static_cast<int>(threadIdx.x) % half;
  const unsigned row = blockIdx.x * static_cast<unsigned>(rows_per_block) + static_cast<unsigned>(local);
  if (local >= rows_per_block || row >= static_cast<unsigned>(tokens) * static_cast<unsigned>(heads)) return;
  const int t = static_cast<int>(row / static_cast<unsigned>(heads));
  const int head = static_cast<int>(row % static_cast<unsigned>(heads));
  const bool is_q = head < q_heads;
  const std::int64_t at = is_q ? (static_cast<std::int64_t>(t) * q_heads + head) * head_dim + 2 * i
                               : (static_cast<std::int64_t>(t) * kv_heads + (head - q_heads)) * head_dim + 2 * i;
  const float2 v = *reinterpret_cast<const float2*>((is_q ? q : k) + at);
  float s, c;
  sincosf(static_cast<float>(pos0 + t) * inv_freq[i], &s, &c);
  *reinterpret_cast<float2*>((is_q ? q_out : k_out) + at) = {v.x * c - v.y * s, v.x * s + v.y * c};
}

// tokens · (q_heads + kv_heads) < 2^31; head_dim even, at most 512.
inline void rope(const float* q, const float* k, float* q_out, float* k_out, const float* inv_freq, int tokens,
                 int pos0, int q_heads, int kv_heads, int head_dim, cudaStream_t stream) {
  const int rows_per_block = rope_threads / (head_dim / 2);
  const auto grid = static_cast<unsigned>(
      cudalabs::ceil_div<std::int64_t>(static_cast<std::int64_t>(tokens) * (q_heads + kv_heads), rows_per_block));
  rope_kernel<<<grid, rope_threads, 0, stream>>>(q, k, q_out, k_out, inv_freq, tokens, pos0, q_heads, kv_heads,
                                                 head_dim);
  CUDALABS_CHECK_LAUNCH("rope_kernel");
}

// ---- swiglu: out = silu(gate) · up, silu(g) = g / (1 + e^-g) -------------------------

inline constexpr int swiglu_threads = 256;

// A correctly rounded reciprocal, not a division: the IEEE division's slow path
// is a called subroutine that costs this kernel a stack frame and spills.
// g << 0: expf(-g) = inf, 1/inf = 0, silu's limit -0.
__device__ __forceinline__ float silu_times(float g, float u) { return g * __frcp_rn(1.0f + expf(-g)) * u; }

// float4 over the first n - n % 4 values (all three pointers 16-byte aligned),
// then the last n % 4 one by one.
__global__ void __launch_bounds__(swiglu_threads)
    swiglu_kernel(const float* __restrict__ gate, const float* __restrict__ up, float* __restrict__ out,
                  std::int64_t n) {
  const std::int64_t n4 = n / 4;
  const std::int64_t first = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = first; i < n4; i += stride) {
    const float4 g = reinterpret_cast<const float4*>(gate)[i], u = reinterpret_cast<const float4*>(up)[i];
    reinterpret_cast<float4*>(out)[i] = {silu_times(g.x, u.x), silu_times(g.y, u.y), silu_times(g.z, u.z),
                                         silu_times(g.w, u.w)};
  }
  for (std::int64_t i = 4 * n4 + first; i < n; i += stride) out[i] = silu_times(gate[i], up[i]);
}

inline void swiglu(const float* gate, const float* up, float* out, std::int64_t n, cudaStream_t stream) {
  const auto grid = static_cast<unsigned>(
      std::max<std::int64_t>(1, std::min<std::int64_t>(cudalabs::ceil_div<std::int64_t>(n / 4, swiglu_threads), 8192)));
  swiglu_kernel<<<grid, swiglu_threads, 0, stream>>>(gate, up, out, n);
  CUDALABS_CHECK_LAUNCH("swiglu_kernel");
}

// ---- argmax: one launch, the last block to finish combines ---------------------------

inline constexpr int argmax_threads = 256;
inline constexpr int argmax_max_blocks = 256;

// (value, index) as one 64-bit key whose unsigned order is the order we want:
// larger value first, then the smaller index (the first maximum, as numpy and
// PyTorch return). The float's bits are flipped so that unsigned order is
// float order (negative floats: all bits; positive: the sign bit).
__device__ __forceinline__ unsigned long long argmax_key(float v, int i) {
  const unsigned bits = __float_as_uint(v);
  const unsigned ordered = (bits & 0x80000000u) ? ~bits : (bits | 0x80000000u);
  return (static_cast<unsigned long long>(ordered) << 32) | static_cast<unsigned>(~i);
}

__device__ unsigned long long block_max_key(unsigned long long key, unsigned long long* scratch) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) key = max(key, __shfl_xor_sync(0xffffffffu, key, offset));
  if (lane == 0) scratch[warp] = key;
  __syncthreads();
  key = lane < static_cast<int>(blockDim.x / 32) ? scratch[lane] : 0ull;
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) key = max(key, __shfl_xor_sync(0xffffffffu, key, offset));
  return key;
}

// Each block writes its best key; the block whose atomicAdd on `done` comes
// last reads them all (its fence orders the others' writes before their
// atomics), writes the index and sets `done` back to 0 for the next call. The
// answer never leaves the device: the next step's embedding lookup reads it there.
__global__ void __launch_bounds__(argmax_threads)
    argmax_kernel(const float* __restrict__ logits, int n, int* __restrict__ out, unsigned long long* partial,
                  unsigned* done) {
  __shared__ unsigned long long scratch[32];
  __shared__ bool last;
  unsigned long long key = 0;  // below every real key
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    if (argmax_key(logits[i], i) >> 32 >= key >> 32) key = argmax_key(logits[i], i);
  key = block_max_key(key, scratch);
  if (threadIdx.x == 0) {
    partial[blockIdx.x] = key;
    __threadfence();
    last = atomicAdd(done, 1u) == gridDim.x - 1;
  }
  __syncthreads();  // publishes `last`, and ends every read of scratch before its reuse below
  if (!last) return;
  key = 0;
  for (int b = threadIdx.x; b < static_cast<int>(gridDim.x); b += blockDim.x) key = max(key, __ldcg(partial + b));
  key = block_max_key(key, scratch);
  if (threadIdx.x == 0) {
    *out = static_cast<int>(~static_cast<unsigned>(key & 0xFFFFFFFFull));
    *done = 0;
  }
}

// workspace: argmax_workspace_bytes() bytes, its counter zeroed once before the first call.
inline constexpr std::size_t argmax_workspace_bytes = argmax_max_blocks * sizeof(unsigned long long) + sizeof(unsigned);

inline void argmax(const float* logits, int n, int* out, void* workspace, cudaStream_t stream) {
  auto* partial = static_cast<unsigned long long*>(workspace);
  auto* done = reinterpret_cast<unsigned*>(partial + argmax_max_blocks);
  // ~8 logits per thread: 151936 logits -> 75 blocks.
  const int blocks = std::clamp(cudalabs::ceil_div(n, argmax_threads * 8), 1, argmax_max_blocks);
  argmax_kernel<<<static_cast<unsigned>(blocks), argmax_threads, 0, stream>>>(logits, n, out, partial, done);
  CUDALABS_CHECK_LAUNCH("argmax_kernel");
}

// ---- the fp16 KV cache: [position][kv_head][head_dim] -------------------------------

inline constexpr int kv_threads = 256;

// Position-major: one token's keys (values) are one contiguous row, appended
// with one coalesced write.
__global__ void __launch_bounds__(kv_threads)
    kv_append_kernel(const float* __restrict__ k, const float* __restrict__ v, __half* __restrict__ k_cache,
                     __half* __restrict__ v_cache, std::int64_t row_start, int kv_dim) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < kv_dim; i += gridDim.x * blockDim.x) {
    k_cache[row_start + i] = __float2half_rn(k[i]);
    v_cache[row_start + i] = __float2half_rn(v[i]);
  }
}

inline void kv_append(const float* k, const float* v, __half* k_cache, __half* v_cache, int pos, int kv_heads,
                      int head_dim, cudaStream_t stream) {
  const int kv_dim = kv_heads * head_dim;
  kv_append_kernel<<<static_cast<unsigned>(cudalabs::ceil_div(kv_dim, kv_threads)), kv_threads, 0, stream>>>(
      k, v, k_cache, v_cache, static_cast<std::int64_t>(pos) * kv_dim, kv_dim);
  CUDALABS_CHECK_LAUNCH("kv_append_kernel");
}

// ---- attention for one query token, split over chunks of positions ------------------

inline constexpr int attn_chunk = 256;     // positions per block: one per thread for the scores
inline constexpr int attn_threads = 256;
inline constexpr int attn_max_head_dim = 256;
inline constexpr int attn_max_chunks = 512;  // 131072 positions
inline constexpr int attn_combine_threads = 128;

// Block (chunk, head): thread t scores position chunk·256 + t against the head's
// query (its own 16-byte loads of one key row: 16 loads in flight for
// head_dim 128), then the chunk's max m, weights e^(s - m) and their sum l; then
// threads split (pair of dims) × (a slice of the positions) to sum e·v. Writes
// the chunk's unnormalised output and (m, l). With one block per head instead,
// a Qwen2-0.5B-sized layer (14 heads) would use 14 of 132 SMs.
__global__ void __launch_bounds__(attn_threads)
    attention_partial_kernel(const float* __restrict__ q, const __half* __restrict__ k_cache,
                             const __half* __restrict__ v_cache, float* __restrict__ part_o,
                             float* __restrict__ part_ml, int positions, int group, int kv_heads, int head_dim,
                             float scale) {
  __shared__ float q_s[attn_max_head_dim];
  __shared__ float weight[attn_chunk];
  __shared__ float max_scratch[32], sum_scratch[32];
  __shared__ float slice_sum[2 * attn_threads];  // slices × head_dim <= 2 × threads
  const int chunk = blockIdx.x, head = blockIdx.y, chunks = gridDim.x;
  const int kv_head = head / group;
  const std::int64_t row_stride = static_cast<std::int64_t>(kv_heads) * head_dim;  // halfs between positions
  for (int d = threadIdx.x; d < head_dim; d += blockDim.x) q_s[d] = q[static_cast<std::int64_t>(head) * head_dim + d] * scale;
  __syncthreads();

  const int first = chunk * attn_chunk;
  const int count = min(attn_chunk, positions - first);
  float score = -INFINITY;
  if (static_cast<int>(threadIdx.x) < count) {
    const auto* key = reinterpret_cast<const uint4*>(k_cache + (first + threadIdx.x) * row_stride +
                                                     static_cast<std::int64_t>(kv_head) * head_dim);
    float dot = 0.0f;
    for (int c = 0; c < head_dim / 8; ++c) {
      const uint4 raw = key[c];
      const __half2* h = reinterpret_cast<const __half2*>(&raw);
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const float2 f = __half22float2(h[j]);
        dot += q_s[8 * c + 2 * j] * f.x + q_s[8 * c + 2 * j + 1] * f.y;
      }
    }
    score = dot;
  }
  const float m = block_allreduce(score, max_scratch, MaxOp{}, -INFINITY);  // finite: count >= 1
  const float e = static_cast<int>(threadIdx.x) < count ? expf(score - m) : 0.0f;
  weight[threadIdx.x] = e;
  const float l = block_allreduce(e, sum_scratch, SumOp{}, 0.0f);  // its barrier also publishes weight[]

  const int pairs = head_dim / 2, slices = blockDim.x / pairs;
  const int pair = threadIdx.x % pairs, slice = threadIdx.x / pairs;
  if (slice < slices) {
    float2 acc{0.0f, 0.0f};
    for (int t = slice; t < count; t += slices) {
      const __half2 v2 = reinterpret_cast<const __half2*>(v_cache + (first + t) * row_stride +
                                                          static_cast<std::int64_t>(kv_head) * head_dim)[pair];
      const float2 vf = __half22float2(v2);
      acc.x += weight[t] * vf.x;
      acc.y += weight[t] * vf.y;
    }
    slice_sum[slice * head_dim + 2 * pair] = acc.x;
    slice_sum[slice * head_dim + 2 * pair + 1] = acc.y;
  }
  __syncthreads();
  float* out = part_o + (static_cast<std::int64_t>(head) * chunks + chunk) * head_dim;
  for (int d = threadIdx.x; d < head_dim; d += blockDim.x) {
    float o = 0.0f;
    for (int s = 0; s < slices; ++s) o += slice_sum[s * head_dim + d];
    out[d] = o;
  }
  if (threadIdx.x == 0) {
    part_ml[2 * (static_cast<std::int64_t>(head) * chunks + chunk)] = m;
    part_ml[2 * (static_cast<std::int64_t>(head) * chunks + chunk) + 1] = l;
  }
}

// One block per head: M = max m_c, L = sum l_c e^(m_c - M),
// o = sum o_c e^(m_c - M) / L.
__global__ void __launch_bounds__(attn_combine_threads)
    attention_combine_kernel(const float* __restrict__ part_o, const float* __restrict__ part_ml, float* __restrict__ o,
                             int chunks, int head_dim) {
  __shared__ float factor[attn_max_chunks];
  __shared__ float max_scratch[32], sum_scratch[32];
  const int head = blockIdx.x;
  const float* ml = part_ml + 2 * static_cast<std::int64_t>(head) * chunks;
  float m = -INFINITY;
  for (int c = threadIdx.x; c < chunks; c += blockDim.x) m = fmaxf(m, ml[2 * c]);
  m = block_allreduce(m, max_scratch, MaxOp{}, -INFINITY);
  float l = 0.0f;
  for (int c = threadIdx.x; c < chunks; c += blockDim.x) {
    factor[c] = expf(ml[2 * c] - m);
    l += ml[2 * c + 1] * factor[c];
  }
  l = block_allreduce(l, sum_scratch, SumOp{}, 0.0f);  // its barrier also publishes factor[]
  const float inv_l = 1.0f / l;
  const float* po = part_o + static_cast<std::int64_t>(head) * chunks * head_dim;
  for (int d = threadIdx.x; d < head_dim; d += blockDim.x) {
    float acc = 0.0f;
    for (int c = 0; c < chunks; ++c) acc += po[static_cast<std::int64_t>(c) * head_dim + d] * factor[c];
    o[static_cast<std::int64_t>(head) * head_dim + d] = acc * inv_l;
  }
}

inline int attention_chunks(int positions) { return cudalabs::ceil_div(positions, attn_chunk); }
inline std::size_t attention_workspace_floats(int positions, int q_heads, int head_dim) {
  return static_cast<std::size_t>(q_heads) * attention_chunks(positions) * (head_dim + 2);
}

// o[h] = softmax(q_h · K[0..positions)ᵀ / sqrt(head_dim)) · V[0..positions) for
// each query head h, reading kv head h / (q_heads / kv_heads) (grouped-query
// attention). head_dim % 8 == 0 and <= 256; positions <= 131072.
inline void attention_decode(const float* q, const __half* k_cache, const __half* v_cache, float* o, float* workspace,
                             int positions, int q_heads, int kv_heads, int head_dim, cudaStream_t stream) {
  const int chunks = attention_chunks(positions);
  float* part_o = workspace;
  float* part_ml = workspace + static_cast<std::size_t>(q_heads) * chunks * head_dim;
  const float scale = 1.0f / sqrtf(static_cast<float>(head_dim));
  attention_partial_kernel<<<dim3(static_cast<unsigned>(chunks), static_cast<unsigned>(q_heads)), attn_threads, 0,
                             stream>>>(q, k_cache, v_cache, part_o, part_ml, positions, q_heads / kv_heads, kv_heads,
                                       head_dim, scale);
  CUDALABS_CHECK_LAUNCH("attention_partial_kernel");
  attention_combine_kernel<<<static_cast<unsigned>(q_heads), attn_combine_threads, 0, stream>>>(part_o, part_ml, o,
                                                                                                chunks, head_dim);
  CUDALABS_CHECK_LAUNCH("attention_combine_kernel");
}

#pragma once
// y = W·x over weights quantised in GGUF's block formats: the kernel that
// decoding one token spends most of its time in. At batch 1 each weight is
// used once per token (one multiply-add per weight byte or so), so the only
// question is how close the kernel reads W to the speed of DRAM.
//
// The formats (GGUF, as llama.cpp writes them), 32 values to a block:
//   Q8_0  34 bytes: a half scale d, then 32 int8 q;           value = q·d
//   Q4_0  18 bytes: a half scale d, then 16 bytes of nibbles;  value = (nibble - 8)·d
//         byte j holds value j in its low nibble and value j + 16 in its high one.
// A row of `cols` values is cols/32 blocks, and rows follow each other. 34 and
// 18 are not multiples of 4, so a block starts only 2 bytes aligned: 4-byte
// loads of its quants are illegal, and the kernels on the GGUF layout read
// 2 bytes at a time. repack_aligned() copies each block to 36 (20) bytes, the
// scale then 2 zero bytes then the quants, so that every quant word is 4-byte
// aligned: 5.9% (11%) more bytes to read for loads half as many.
//
// The kernels, one step each:
//   matvec_warp_per_row   one warp per row, dequantise in registers, float FMAs
//                         with x (the quantised bytes read once: no fp32 matrix)
//   matvec_dp4a<Blocks,1> x quantised to int8 per 32-block (Q8_1-style: a float
//                         scale and the integer sum); __dp4a does 4 int8
//                         multiply-adds per instruction, and x costs 1 byte per
//                         value instead of 4
//   the same on the 36 (20)-byte repacked blocks: 4-byte quant loads
//   the same with R rows per warp (each x block loaded once for R rows, R rows'
//                         loads in flight), R chosen per format
//   matvec_planar<W=1>    the planar layout (quants apart from scales, the GGUF
//                         bytes, no padding): 16-byte loads, one warp per row
//   matvec_planar<W>      the same with a row split over W warps of a block, W
//                         chosen from the shape so that all of a row's loads are
//                         in flight at once and the GPU is full
//
// Every kernel: a warp owns a row (or R rows); 4 lanes share each 32-value
// block, 8 values each, so one warp step covers 8 consecutive blocks and the
// warp's loads touch consecutive bytes. Each lane issues the loads of
// mv_unroll steps before using them: DRAM's latency (~600 ns) is hidden only
// with ~20 KB in flight per SM.
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>

#include <cudalabs/device.hpp>
#include <cudalabs/error.hpp>
#include <cudalabs/math.hpp>

#include "../12_softmax/softmax.cuh"  // warp_allreduce, block_allreduce, SumOp, MaxOp

inline constexpr int mv_block_values = 32;
inline constexpr int mv_warps = 4;  // rows (or groups of R rows) per thread block
inline constexpr int mv_threads = 32 * mv_warps;
inline constexpr int mv_lanes_per_block = 4;                          // each lane: 8 of a block's 32 values
inline constexpr int mv_blocks_per_step = 32 / mv_lanes_per_block;  // 8 blocks per warp step
inline constexpr int mv_unroll = 4;  // warp steps whose loads are in flight together

// ---- the block layouts ---------------------------------------------------------

// One lane's share of one block: the scale, and its 8 quantised values as two
// words (Q8_0: 8 int8; Q4_0: one word of 4 bytes, i.e. 4 low and 4 high nibbles).
struct QuantSlice {
  float d = 0.0f;
  std::uint32_t w0 = 0, w1 = 0;
};

__device__ __forceinline__ float half_bits_to_float(std::uint32_t bits) {
  return __half2float(__ushort_as_half(static_cast<unsigned short>(bits & 0xFFFFu)));
}
__device__ __forceinline__ std::uint32_t two_halves(std::uint16_t lo, std::uint16_t hi) {
  return static_cast<std::uint32_t>(lo) | (static_cast<std::uint32_t>(hi) << 16);
}
__device__ __forceinline__ float byte_as_float(std::uint32_t w, int byte) {
  return static_cast<float>(static_cast<std::int8_t>(w >> (8 * byte)));
}

// The arithmetic of each format, whatever its layout. `part` (0..3) is the
// lane's quarter of the block.
struct Q8_0Math {
  static constexpr int offset = 0;  // value = q·d
  // float path: values 8·part .. 8·part+7 times x (the block's 32 floats).
  __device__ static float dot_float(const QuantSlice& s, const float* __restrict__ xb, int part) {
    const float4 a = reinterpret_cast<const float4*>(xb)[2 * part];
    const float4 b = reinterpret_cast<const float4*>(xb)[2 * part + 1];
    return byte_as_float(s.w0, 0) * a.x + byte_as_float(s.w0, 1) * a.y + byte_as_float(s.w0, 2) * a.z +
           byte_as_float(s.w0, 3) * a.w + byte_as_float(s.w1, 0) * b.x + byte_as_float(s.w1, 1) * b.y +
           byte_as_float(s.w1, 2) * b.z + byte_as_float(s.w1, 3) * b.w;
  }
  // int8 path: the same 8 values times the quantised x, two __dp4a.
  // xq is 8-byte aligned (the activation buffer is; 32·b + 8·part keeps it).
  __device__ static int dot_int(const QuantSlice& s, const std::int8_t* __restrict__ xqb, int part) {
    const int2 x = reinterpret_cast<const int2*>(xqb)[part];
    return __dp4a(static_cast<int>(s.w0), x.x, __dp4a(static_cast<int>(s.w1), x.y, 0));
  }
};

struct Q4_0Math {
  static constexpr int offset = 8;  // value = (nibble - 8)·d
  // float path: bytes 4·part .. 4·part+3 hold values 4·part+j (low nibbles)
  // and 16+4·part+j (high nibbles).
  __device__ static float dot_float(const QuantSlice& s, const float* __restrict__ xb, int part) {
    const float4 lo = reinterpret_cast<const float4*>(xb)[part];
    const float4 hi = reinterpret_cast<const float4*>(xb)[4 + part];
    auto nib = [&](int shift) { return static_cast<float>(static_cast<int>((s.w0 >> shift) & 0xFu) - 8); };
    return nib(0) * lo.x + nib(8) * lo.y + nib(16) * lo.z + nib(24) * lo.w + nib(4) * hi.x + nib(12) * hi.y +
           nib(20) * hi.z + nib(28) * hi.w;
  }
  // int8 path: masks split the word into 4 low and 4 high nibbles (0..15, as
  // non-negative int8) for two __dp4a. The -8 is not subtracted per value: the
  // caller subtracts 8 · (sum of the block's quantised x) once per block.
  __device__ static int dot_int(const QuantSlice& s, const std::int8_t* __restrict__ xqb, int part) {
    const int x_lo = reinterpret_cast<const int*>(xqb)[part];
    const int x_hi = reinterpret_cast<const int*>(xqb)[4 + part];
    const int lo = static_cast<int>(s.w0 & 0x0F0F0F0Fu);
    const int hi = static_cast<int>((s.w0 >> 4) & 0x0F0F0F0Fu);
    return __dp4a(lo, x_lo, __dp4a(hi, x_hi, 0));
  }
};

// GGUF's 34-byte Q8_0 blocks: 2-byte aligned, so the lane's 8 quants are four
// 2-byte loads, glued into two words.
struct Q8_0Blocks : Q8_0Math {
  static constexpr int bytes = 34;
  __device__ static QuantSlice load(const std::uint8_t* __restrict__ row, int b, int part) {
    const auto* u = reinterpret_cast<const std::uint16_t*>(row + static_cast<std::int64_t>(b) * bytes);
    return {half_bits_to_float(u[0]), two_halves(u[1 + 4 * part], u[2 + 4 * part]),
            two_halves(u[3 + 4 * part], u[4 + 4 * part])};
  }
};

// The repacked 36-byte blocks: word 0 = the scale (and 2 zero bytes), words
// 1..8 the quants, all 4-byte aligned: 2 loads for the lane's 8 quants.
struct Q8_0BlocksX4 : Q8_0Math {
  static constexpr int bytes = 36;
  static constexpr int rows_per_warp = 2;  // the tuned choice: see README (measure with --rows-per-warp)
  __device__ static QuantSlice load(const std::uint8_t* __restrict__ row, int b, int part) {
    const auto* w = reinterpret_cast<const std::uint32_t*>(row + static_cast<std::int64_t>(b) * bytes);
    return {half_bits_to_float(w[0]), w[1 + 2 * part], w[2 + 2 * part]};
  }
};

// GGUF's 18-byte Q4_0 blocks: the lane's 4 bytes of nibbles are two 2-byte loads.
struct Q4_0Blocks : Q4_0Math {
  static constexpr int bytes = 18;
  __device__ static QuantSlice load(const std::uint8_t* __restrict__ row, int b, int part) {
    const auto* u = reinterpret_cast<const std::uint16_t*>(row + static_cast<std::int64_t>(b) * bytes);
    return {half_bits_to_float(u[0]), two_halves(u[1 + 2 * part], u[2 + 2 * part]), 0u};
  }
};

// The repacked 20-byte blocks: word 0 the scale, words 1..4 the nibbles.
struct Q4_0BlocksX4 : Q4_0Math {
  static constexpr int bytes = 20;
  static constexpr int rows_per_warp = 2;
  __device__ static QuantSlice load(const std::uint8_t* __restrict__ row, int b, int part) {
    const auto* w = reinterpret_cast<const std::uint32_t*>(row + static_cast<std::int64_t>(b) * bytes);
    return {half_bits_to_float(w[0]), w[1 + part], 0u};
  }
};

// ---- repacking to 4-byte-aligned blocks (once, at load time) --------------------

// One thread per block: the scale in word 0 with two zero bytes (written, so
// that a kernel reading whole words never reads uninitialised memory), then the
// quants, glued from the 2-byte-aligned source.
template <int SrcBytes>
__global__ void repack_aligned_kernel(const std::uint8_t* __restrict__ src, std::uint32_t* __restrict__ dst,
                                      std::int64_t blocks) {
  constexpr int words = (SrcBytes + 2) / 4;  // 34 -> 9 words (36 bytes), 18 -> 5 (20)
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t b = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; b < blocks; b += stride) {
    const auto* u = reinterpret_cast<const std::uint16_t*>(src + b * SrcBytes);
    std::uint32_t* out = dst + b * words;
    out[0] = u[0];
#pragma unroll
    for (int k = 1; k < words; ++k) out[k] = two_halves(u[2 * k - 1], u[2 * k]);
  }
}

template <typename Blocks, typename BlocksX4>
void repack_aligned(const void* src, void* dst, std::int64_t blocks, cudaStream_t stream) {
  static_assert(BlocksX4::bytes == Blocks::bytes + 2 && BlocksX4::bytes % 4 == 0,
                "a repacked block is the GGUF block plus 2 pad bytes, a multiple of 4");
  const auto grid = static_cast<unsigned>(std::min<std::int64_t>(cudalabs::ceil_div<std::int64_t>(blocks, 256), 4096));
  repack_aligned_kernel<Blocks::bytes><<<std::max(grid, 1u), 256, 0, stream>>>(
      static_cast<const std::uint8_t*>(src), static_cast<std::uint32_t*>(dst), blocks);
  CUDALABS_CHECK_LAUNCH("repack_aligned_kernel");
}

// ---- v1: fused dequantise-and-dot, one warp per row, float arithmetic ------------

// y[row] = sum over blocks b of d_b · sum_j q_bj · x[32b + j]. The scale
// multiplies the block's partial sum once, not every value. x (fp32) is read by
// every row: 4 bytes per weight through L1, 3.8x the weight bytes of Q8_0: the
// float path's limit.
template <typename Blocks>
__global__ void __launch_bounds__(mv_threads)
    matvec_warp_per_row_kernel(const std::uint8_t* __restrict__ w, const float* __restrict__ x, float* __restrict__ y,
                               int rows, int nb) {
  // BEGIN SOLUTION q8_0_warp_per_row q4_0_warp_per_row
  const int lane = threadIdx.x % 32, part = lane % mv_lanes_per_block;
  const int row = blockIdx.x * mv_warps + threadIdx.x / 32;
  if (row >= rows) return;  // the whole warp leaves together: the shuffles below see all 32 lanes
  const std::uint8_t* wrow = w + static_cast<std::int64_t>(row) * nb * Blocks::bytes;
  float acc = 0.0f;
  for (int b0 = lane / mv_lanes_per_block; b0 < nb; b0 += mv_blocks_per_step * mv_unroll) {
    QuantSlice s[mv_unroll];
#pragma unroll
    for (int u = 0; u < mv_unroll; ++u) {
      const int b = b0 + u * mv_blocks_per_step;
      if (b < nb) s[u] = Blocks::load(wrow, b, part);
    }
#pragma unroll
    for (int u = 0; u < mv_unroll; ++u) {
      const int b = b0 + u * mv_blocks_per_step;
      if (b < nb) acc += s[u].d * Blocks::dot_float(s[u], x + static_cast<std::int64_t>(b) * mv_block_values, part);
    }
  }
  acc = warp_allreduce(acc, SumOp{});
  if (lane == 0) y[row] = acc;
  // END SOLUTION
  // STUB: // TODO: a warp per row: each lane takes 8 values of every 8th block (Blocks::load), mv_unroll steps of loads in flight,
  // STUB: // acc += d · Blocks::dot_float(slice, x of the block, part); the warp's sum (warp_allreduce) to y[row].
}

template <typename Blocks>
void matvec_warp_per_row(const void* w, const float* x, float* y, int rows, int cols, cudaStream_t stream) {
  // BEGIN SOLUTION q8_0_warp_per_row q4_0_warp_per_row
  const auto grid = static_cast<unsigned>(cudalabs::ceil_div(rows, mv_warps));
  matvec_warp_per_row_kernel<Blocks><<<grid, mv_threads, 0, stream>>>(static_cast<const std::uint8_t*>(w), x, y, rows,
                                                                      cols / mv_block_values);
  CUDALABS_CHECK_LAUNCH("matvec_warp_per_row_kernel");
  // END SOLUTION
  // STUB: cudalabs::not_implemented("matvec_warp_per_row", w, x, y, rows, cols, stream);
}

// ---- v2..v4: int8 activations and __dp4a; aligned blocks; R rows per warp --------

// x quantised per 32-block: xq (int8), xd (the block's scale), xsum (the sum of
// its 32 int8, for Q4_0's -8). The block's contribution is d_w · d_x · (integer
// dot): exact in int32 (|dot| <= 32·127·127 < 2^19), then 2 float roundings.
// R rows per warp: each x block (its 8 bytes per lane, its scale, its sum) is
// loaded once and used R times, and R rows' weight loads are in flight at once.
// `residual` (may be null) is added to y: the decode step's last matvec adds
// the residual stream for free.
template <typename Blocks, int R>
__global__ void __launch_bounds__(mv_threads)
    matvec_dp4a_kernel(const std::uint8_t* __restrict__ w, const std::int8_t* __restrict__ xq,
                       const float* __restrict__ xd, const int* __restrict__ xsum, const float* __restrict__ residual,
                       float* __restrict__ y, int rows, int nb) {
  // With 4 rows, 2 steps in flight keep the loads per lane (R·U slices) at 8,
  // as 2 rows × 4 steps do, and the registers under 64.
  constexpr int U = R >= 4 ? 2 : mv_unroll;
  const int lane = threadIdx.x % 32, part = lane % mv_lanes_per_block;
  const int row0 = (blockIdx.x * mv_warps + threadIdx.x / 32) * R;
  if (row0 >= rows) return;
  const std::uint8_t* wrow[R];
#pragma unroll
  for (int i = 0; i < R; ++i)  // rows past the end re-read the last row; their sums are not stored
    wrow[i] = w + static_cast<std::int64_t>(min(row0 + i, rows - 1)) * nb * Blocks::bytes;
  float acc[R] = {};
  for (int b0 = lane / mv_lanes_per_block; b0 < nb; b0 += mv_blocks_per_step * U) {
    QuantSlice s[U][R];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int b = b0 + u * mv_blocks_per_step;
#pragma unroll
      for (int i = 0; i < R; ++i)
        if (b < nb) s[u][i] = Blocks::load(wrow[i], b, part);
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int b = b0 + u * mv_blocks_per_step;
      if (b >= nb) continue;
      const float dx = xd[b];
      // Q4_0: the block's sum(8 · qx) once, by the first of its 4 lanes.
      const int correction = Blocks::offset != 0 && part == 0 ? Blocks::offset * xsum[b] : 0;
      const std::int8_t* xqb = xq + static_cast<std::int64_t>(b) * mv_block_values;
#pragma unroll
      for (int i = 0; i < R; ++i)
        acc[i] += s[u][i].d * dx * static_cast<float>(Blocks::dot_int(s[u][i], xqb, part) - correction);
    }
  }
#pragma unroll
  for (int i = 0; i < R; ++i) {
    const float sum = warp_allreduce(acc[i], SumOp{});
    if (lane == 0 && row0 + i < rows) y[row0 + i] = residual ? sum + residual[row0 + i] : sum;
  }
}

template <typename Blocks, int R>
void matvec_dp4a_launch(const void* w, const std::int8_t* xq, const float* xd, const int* xsum, const float* residual,
                        float* y, int rows, int cols, cudaStream_t stream) {
  const int warps = cudalabs::ceil_div(rows, R);
  const auto grid = static_cast<unsigned>(cudalabs::ceil_div(warps, mv_warps));
  matvec_dp4a_kernel<Blocks, R><<<grid, mv_threads, 0, stream>>>(static_cast<const std::uint8_t*>(w), xq, xd, xsum,
                                                                  residual, y, rows, cols / mv_block_values);
  CUDALABS_CHECK_LAUNCH("matvec_dp4a_kernel");
}

// The rows-per-warp counts the kernels are built for.
inline bool matvec_rows_supported(int rows_per_warp) {
  return rows_per_warp == 1 || rows_per_warp == 2 || rows_per_warp == 4;
}

// R rows per warp on the repacked blocks; rows_per_warp 0 = the format's choice.
template <typename BlocksX4>
void matvec_dp4a_rows(const void* w, const std::int8_t* xq, const float* xd, const int* xsum, const float* residual,
                      float* y, int rows, int cols, int rows_per_warp, cudaStream_t stream) {
  switch (rows_per_warp == 0 ? BlocksX4::rows_per_warp : rows_per_warp) {
    case 1: return matvec_dp4a_launch<BlocksX4, 1>(w, xq, xd, xsum, residual, y, rows, cols, stream);
    case 2: return matvec_dp4a_launch<BlocksX4, 2>(w, xq, xd, xsum, residual, y, rows, cols, stream);
    case 4: return matvec_dp4a_launch<BlocksX4, 4>(w, xq, xd, xsum, residual, y, rows, cols, stream);
    default: throw cudalabs::UsageError("rows per warp must be 1, 2 or 4");
  }
}

template <typename BlocksX4>
cudalabs::KernelResources matvec_dp4a_rows_resources(int rows_per_warp) {
  switch (rows_per_warp == 0 ? BlocksX4::rows_per_warp : rows_per_warp) {
    case 1: return cudalabs::resources_of(matvec_dp4a_kernel<BlocksX4, 1>, mv_threads);
    case 2: return cudalabs::resources_of(matvec_dp4a_kernel<BlocksX4, 2>, mv_threads);
    default: return cudalabs::resources_of(matvec_dp4a_kernel<BlocksX4, 4>, mv_threads);
  }
}

// ---- v5, v6: the planar layout, 16-byte loads; a row split over W warps ---------------
//
// Why v1..v4 stop near 42% of copy at 4096×14336 (H100): one warp per row is
// 4096 warps, under half of the 132 × 64 = 8448 an H100 holds, and each lane
// has at most mv_unroll × 9 words (~1.2 KB per warp) in flight before it must
// wait: 14 round trips to DRAM, one after the other, per 14336-value row.
//
// The planar layout: the same bytes as GGUF, in two arrays: every block's
// quants, block after block and row after row (32 bytes per Q8_0 block, 16 per
// Q4_0 block), then every block's half scale. The quants of a row are then one
// 16-byte-aligned stream, so a lane loads 16 of them per instruction (a warp:
// 512 contiguous bytes); no pad bytes are read (the repacked 36/20-byte blocks
// read 5.9%/11% more). A "chunk" is 16 bytes of quants: half a Q8_0 block, or a
// whole Q4_0 block.
//
// The kernel: 256 threads = 8 warps; W warps share a row (8 / W rows per
// block); lane l of the row's warp p takes chunks p·32 + l, then every 32·W-th,
// issuing mv_unroll loads before using them; the W warp sums meet in shared
// memory. Choosing W so that each lane has at most mv_unroll chunks puts all
// of a row's loads in flight at once; the 4096×14336 Q8_0 matrix becomes
// 32768 warps of 3.5 loads each instead of 4096 warps of 14 round trips.
inline constexpr int mv_split_warps = 8;
inline constexpr int mv_split_threads = 32 * mv_split_warps;
inline constexpr int mv_chunk_bytes = 16;

// One 16-byte chunk of quants times the int8 x: the integer dot, exact in int32.
struct Q8_0Planar {
  static constexpr int gguf_bytes = 34;
  static constexpr int quant_bytes = 32;
  static constexpr int chunks_per_block = 2;  // values 16h .. 16h+15 of block k/2, h = k % 2
  static constexpr int min_blocks = 4;        // per SM (the kernel's register bound)
  __device__ static int dot_chunk(int4 w, const std::int8_t* __restrict__ xq, const int* __restrict__ /*xsum*/,
                                  std::int64_t k) {
    const int4 x = __ldg(reinterpret_cast<const int4*>(xq) + k);
    return __dp4a(w.x, x.x, __dp4a(w.y, x.y, __dp4a(w.z, x.z, __dp4a(w.w, x.w, 0))));
  }
};

struct Q4_0Planar {
  static constexpr int gguf_bytes = 18;
  static constexpr int quant_bytes = 16;
  static constexpr int chunks_per_block = 1;  // byte j: value j (low nibble), value j + 16 (high)
  static constexpr int min_blocks = 3;
  __device__ static int dot_chunk(int4 w, const std::int8_t* __restrict__ xq, const int* __restrict__ xsum,
                                  std::int64_t k) {
    const int4 lo = __ldg(reinterpret_cast<const int4*>(xq) + 2 * k);      // x values 0..15 of block k
    const int4 hi = __ldg(reinterpret_cast<const int4*>(xq) + 2 * k + 1);  // x values 16..31
    constexpr int m = 0x0F0F0F0F;
    int s = __dp4a(w.x & m, lo.x, __dp4a(w.y & m, lo.y, __dp4a(w.z & m, lo.z, __dp4a(w.w & m, lo.w, 0))));
    s = __dp4a((w.x >> 4) & m, hi.x, __dp4a((w.y >> 4) & m, hi.y, __dp4a((w.z >> 4) & m, hi.z, __dp4a((w.w >> 4) & m, hi.w, s))));
    return s - 8 * __ldg(xsum + k);  // Σ (n - 8)·q = Σ n·q - 8·Σ q
  }
};

// One thread per GGUF block (untimed, at load time): its quants to the first
// array, glued from 2-byte-aligned halves into words, its scale to the second.
template <int SrcBytes>
__global__ void repack_planar_kernel(const std::uint8_t* __restrict__ src, std::uint8_t* __restrict__ dst,
                                     std::int64_t blocks) {
  constexpr int quant_words = (SrcBytes - 2) / 4;
  auto* scales = reinterpret_cast<std::uint16_t*>(dst + blocks * (SrcBytes - 2));
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t b = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; b < blocks; b += stride) {
    const auto* u = reinterpret_cast<const std::uint16_t*>(src + b * SrcBytes);
    auto* q = reinterpret_cast<std::uint32_t*>(dst + b * (SrcBytes - 2));
    scales[b] = u[0];
#pragma unroll
    for (int k = 0; k < quant_words; ++k) q[k] = two_halves(u[1 + 2 * k], u[2 + 2 * k]);
  }
}

template <typename Planar>
void repack_planar(const void* src, void* dst, std::int64_t blocks, cudaStream_t stream) {
  static_assert(Planar::quant_bytes == Planar::chunks_per_block * mv_chunk_bytes && Planar::quant_bytes % 16 == 0,
                "a block's quants are whole 16-byte chunks, so every row of quants stays 16-byte aligned");
  const auto grid = static_cast<unsigned>(std::min<std::int64_t>(cudalabs::ceil_div<std::int64_t>(blocks, 256), 4096));
  repack_planar_kernel<Planar::gguf_bytes><<<std::max(grid, 1u), 256, 0, stream>>>(
      static_cast<const std::uint8_t*>(src), static_cast<std::uint8_t*>(dst), blocks);
  CUDALABS_CHECK_LAUNCH("repack_planar_kernel");
}

// Planar::min_blocks blocks per SM: Q8_0 4 (at most 64 registers), Q4_0 3
// (its x is 32 bytes per chunk, not 16: ~75 registers; held to 64 it spills).
// 3 blocks are 24 warps × 32 lanes × mv_unroll × 16 B = 48 KB of loads in
// flight per SM, twice the ~20 KB that DRAM's latency asks for.
template <typename Planar, int W>
__global__ void __launch_bounds__(mv_split_threads, Planar::min_blocks)
    matvec_planar_kernel(const std::uint8_t* __restrict__ w, const std::int8_t* __restrict__ xq,
                         const float* __restrict__ xd, const int* __restrict__ xsum, const float* __restrict__ residual,
                         float* __restrict__ y, int rows, int nb) {
  static_assert(mv_split_warps % W == 0, "W warps per row must divide the block's 8 warps");
  constexpr int rows_per_block = mv_split_warps / W;
  __shared__ float warp_sums[mv_split_warps];
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int row = static_cast<int>(blockIdx.x) * rows_per_block + warp / W;
  const int chunks = nb * Planar::chunks_per_block;  // per row
  float acc = 0.0f;
  if (row < rows) {  // no early return: every warp reaches the barrier below
    const std::int64_t blocks = static_cast<std::int64_t>(rows) * nb;
    const auto* wrow = reinterpret_cast<const int4*>(w) + static_cast<std::int64_t>(row) * chunks;
    const auto* scales = reinterpret_cast<const std::uint16_t*>(w + blocks * Planar::quant_bytes) +
                         static_cast<std::int64_t>(row) * nb;
    for (int k0 = (warp % W) * 32 + lane; k0 < chunks; k0 += mv_unroll * 32 * W) {
      int4 q[mv_unroll];
      std::uint16_t d[mv_unroll];
#pragma unroll
      for (int u = 0; u < mv_unroll; ++u) {
        const int k = k0 + u * 32 * W;
        if (k < chunks) {
          q[u] = __ldcs(wrow + k);  // read once: streamed past L2 (evict-first), leaving x its lines
          d[u] = __ldcs(scales + k / Planar::chunks_per_block);
        }
      }
#pragma unroll
      for (int u = 0; u < mv_unroll; ++u) {
        const int k = k0 + u * 32 * W;
        if (k >= chunks) continue;
        const int b = k / Planar::chunks_per_block;
        acc += half_bits_to_float(d[u]) * __ldg(xd + b) * static_cast<float>(Planar::dot_chunk(q[u], xq, xsum, k));
      }
    }
  }
  acc = warp_allreduce(acc, SumOp{});
  if constexpr (W > 1) {
    if (lane == 0) warp_sums[warp] = acc;
    __syncthreads();
    if (lane != 0 || warp % W != 0) return;
    acc = 0.0f;
#pragma unroll
    for (int p = 0; p < W; ++p) acc += warp_sums[warp + p];  // the same order every run: deterministic
  }
  if (lane == 0 && row < rows) y[row] = residual ? acc + residual[row] : acc;
}

// The W the launcher picks: the fewest warps per row that give each lane at
// most mv_unroll chunks (all of a row's loads in flight in one round trip) and
// the GPU at least `resident_warps` warps (an H100: 132 SMs × 64), never more
// warps than the row has 32-chunk strips.
inline int planar_warps_per_row(int rows, int chunks_per_row, int resident_warps) {
  const int strips = cudalabs::ceil_div(chunks_per_row, 32);
  int warps = 1;
  while (warps < mv_split_warps && warps < strips &&
         (cudalabs::ceil_div(chunks_per_row, 32 * warps) > mv_unroll ||
          static_cast<std::int64_t>(rows) * warps < resident_warps))
    warps *= 2;
  return warps;
}

inline bool matvec_planar_supported(int warps_per_row) {
  return warps_per_row == 1 || warps_per_row == 2 || warps_per_row == 4 || warps_per_row == 8;
}

// The warps the device holds at once: SMs × max threads per SM / 32 (one
// attribute query, no synchronisation).
inline int resident_warps_of_device() {
  int device = 0, sms = 0, threads = 0;
  CUDALABS_CHECK(cudaGetDevice(&device));
  CUDALABS_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  CUDALABS_CHECK(cudaDeviceGetAttribute(&threads, cudaDevAttrMaxThreadsPerMultiProcessor, device));
  return sms * threads / 32;
}

template <typename Planar>
int matvec_planar_warps(int rows, int cols, int warps_per_row) {
  if (warps_per_row != 0) return warps_per_row;
  return planar_warps_per_row(rows, cols / mv_block_values * Planar::chunks_per_block, resident_warps_of_device());
}

// y = W·x (+ residual) on the planar layout; warps_per_row 0: the choice above.
// xq must be 16-byte aligned (int4 loads of x).
template <typename Planar>
void matvec_planar(const void* w, const std::int8_t* xq, const float* xd, const int* xsum, const float* residual,
                   float* y, int rows, int cols, int warps_per_row, cudaStream_t stream) {
  const int warps = matvec_planar_warps<Planar>(rows, cols, warps_per_row);
  const auto grid = static_cast<unsigned>(cudalabs::ceil_div(rows, mv_split_warps / warps));
  const auto* wb = static_cast<const std::uint8_t*>(w);
  const int nb = cols / mv_block_values;
  switch (warps) {
    case 1: matvec_planar_kernel<Planar, 1><<<grid, mv_split_threads, 0, stream>>>(wb, xq, xd, xsum, residual, y, rows, nb); break;
    case 2: matvec_planar_kernel<Planar, 2><<<grid, mv_split_threads, 0, stream>>>(wb, xq, xd, xsum, residual, y, rows, nb); break;
    case 4: matvec_planar_kernel<Planar, 4><<<grid, mv_split_threads, 0, stream>>>(wb, xq, xd, xsum, residual, y, rows, nb); break;
    case 8: matvec_planar_kernel<Planar, 8><<<grid, mv_split_threads, 0, stream>>>(wb, xq, xd, xsum, residual, y, rows, nb); break;
    default: throw cudalabs::UsageError("warps per row must be 1, 2, 4 or 8");
  }
  CUDALABS_CHECK_LAUNCH("matvec_planar_kernel");
}

template <typename Planar>
cudalabs::KernelResources matvec_planar_resources(int warps_per_row) {
  switch (warps_per_row) {
    case 1: return cudalabs::resources_of(matvec_planar_kernel<Planar, 1>, mv_split_threads);
    case 2: return cudalabs::resources_of(matvec_planar_kernel<Planar, 2>, mv_split_threads);
    case 4: return cudalabs::resources_of(matvec_planar_kernel<Planar, 4>, mv_split_threads);
    default: return cudalabs::resources_of(matvec_planar_kernel<Planar, 8>, mv_split_threads);
  }
}

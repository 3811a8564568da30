#pragma once
// FlashAttention forward in FP32 on the CUDA cores: one kernel, no N×N matrix.
//
// A block owns 32 query rows. It walks over the keys in tiles of 64: each K
// and V tile is loaded into shared memory once and used by all 32 rows, the
// 32×64 tile of scores S lives in registers (4×4 per thread), the softmax is
// done "online" (running row max m and row sum l, the output accumulator
// rescaled by 2^(m_old - m_new) whenever the max grows), and the 32×64 tile of
// weights P goes through shared memory to the P·V product. Global memory sees
// Q, K, V read and O written: O(N·d) bytes, against lab 15's 16·N² bytes of S
// and P.
//
// Thread layout (128 threads): tx = tid % 16 owns key columns 4·tx .. 4·tx+3 of
// the S tile and output columns 4·tx + 64·h .. +3 of O; ty = tid / 16 owns rows
// 4·ty .. 4·ty+3. A row is shared by the 16 threads of one half-warp, so its
// max and sum are 4 shuffles.
//
// Shared memory is laid out so every inner-loop load is one conflict-free
// 16-byte LDS.128 (each gives 4 values that meet 4 values of the other operand:
// 16 FMAs per 2 loads):
//   qt[D][32+4]  Qᵀ, pre-multiplied by log2(e)/sqrt(d); read as 4 rows at once
//   kt[D][64+4]  Kᵀ of the tile; read as 4 keys at once
//   vs[64][D]    V of the tile, as stored; read as 4 output columns at once
//   pt[64][32+4] Pᵀ; read as 4 rows at once
// The +4 padding makes the transposing stores conflict-free: a warp stores 16
// keys × 2 dimension chunks, and 4·68 ≡ 16 (mod 32 banks) puts the two chunks
// on opposite halves of the banks. (The Pᵀ store is a 4-way conflict we keep:
// 4 stores per thread per tile against 256 loads in the products.)
//
// Few query tiles (one head of N = 2048 is 64 blocks; an H100 has 132 SMs):
// the launcher then also splits the KEYS of each tile over several blocks
// (split-KV, as FlashAttention-2 does for decoding). Each block runs the same
// loop over its share of the key tiles and writes its unnormalised O with its
// row max m and sum l to a workspace (splits·N·(d+2) floats: still O(N·d));
// the last block of a query tile to finish (an atomic counter) merges them:
// O = Σ_s 2^(m_s - M)·O_s / Σ_s 2^(m_s - M)·l_s with M = max_s m_s — the same
// rescaling as the online softmax, once per split instead of once per tile.
//
// Dimensions: any d that is a multiple of 4 up to 128 (float4 loads of the
// rows; D = 64 or 128 is the compiled tile width, the columns d..D-1 are zero).
#include <algorithm>
#include <cstdint>

#include <cudalabs/device.hpp>
#include <cudalabs/error.hpp>
#include <cudalabs/math.hpp>
#include <cudalabs/memory.hpp>

#include "flash_common.cuh"

// Internal linkage: another lab's host program compiles the course's copy of
// this file next to a kernel library that compiles the student's, and the two
// must never meet at link time (docs/lab-anatomy.md).
namespace {

inline constexpr int fp32_tile_rows = 32;  // queries per block
inline constexpr int fp32_tile_keys = 64;  // keys per tile
inline constexpr int fp32_threads = 128;

template <int D>
struct Fp32Smem {
  static_assert(D % 64 == 0, "D is the tile width: 64 or 128; each of the 16 column threads owns D/16 output columns");
  static constexpr int ld_q = fp32_tile_rows + 4;  // 36 floats: 144 B rows, 16-byte aligned, 4·36 ≡ 16 (mod 32)
  static constexpr int ld_k = fp32_tile_keys + 4;  // 68 floats: 272 B rows, 4·68 ≡ 16 (mod 32)
  static constexpr int ld_p = fp32_tile_rows + 4;
  static constexpr int q_floats = D * ld_q;
  static constexpr int k_floats = D * ld_k;
  static constexpr int v_floats = fp32_tile_keys * D;
  static constexpr int p_floats = fp32_tile_keys * ld_p;
  static constexpr std::size_t bytes = sizeof(float) * (q_floats + k_floats + v_floats + p_floats);
};

// Loads rows [first, first + ROWS) of a [seq][dim] matrix as float4 chunks and
// stores them TRANSPOSED (dst[column][row], row stride `ld`), times `scale`,
// zeros outside the matrix. Index bits, low to high: 4 bits of row, 1 bit of
// chunk, then the rest: a warp reads 16 rows × 32 contiguous bytes (every
// 32-byte sector fully used) and its stores hit 32 different banks.
template <int D, int ROWS>
__device__ inline void load_transposed(float* dst, int ld, const float* __restrict__ src, int first, int seq, int dim,
                                       float scale) {
  static_assert(ROWS % 16 == 0 && (ROWS * D / 4) % fp32_threads == 0, "every thread loads the same number of chunks");
  constexpr int row_groups = ROWS / 16;
#pragma unroll
  for (int it = 0; it < ROWS * D / 4 / fp32_threads; ++it) {
    const int f = it * fp32_threads + static_cast<int>(threadIdx.x);
    const int row = (f & 15) + 16 * ((f >> 5) % row_groups);
    const int chunk = ((f >> 4) & 1) + 2 * ((f >> 5) / row_groups);
    float4 x = make_float4(0.f, 0.f, 0.f, 0.f);
    if (first + row < seq && 4 * chunk < dim)
      x = *reinterpret_cast<const float4*>(src + static_cast<std::int64_t>(first + row) * dim + 4 * chunk);
    dst[(4 * chunk + 0) * ld + row] = x.x * scale;
    dst[(4 * chunk + 1) * ld + row] = x.y * scale;
    dst[(4 * chunk + 2) * ld + row] = x.z * scale;
    dst[(4 * chunk + 3) * ld + row] = x.w * scale;
  }
}

// Where split blocks leave their partial results. o: [split][head][row][dim],
// unnormalised; ml: [split][head][row][2] = (m, l); done: one counter per
// (head, query tile), back to 0 after the merge, ready for the next launch.
struct Fp32Partials {
  float* o;
  float* ml;
  unsigned* done;
};

template <int D>
__global__ void __launch_bounds__(fp32_threads)
    flash_fp32_kernel(const float* __restrict__ q, const float* __restrict__ k, const float* __restrict__ v,
                      float* __restrict__ out, int seq, int dim, float scale_log2, bool causal, int splits,
                      Fp32Partials partials) {
  using Smem = Fp32Smem<D>;
  constexpr int BR = fp32_tile_rows, BC = fp32_tile_keys, OC = D / 64;  // OC float4 output chunks per thread
  extern __shared__ float4 smem_f4[];  // float4: the LDS.128 reads need 16-byte alignment
  float* qt = reinterpret_cast<float*>(smem_f4);
  float* kt = qt + Smem::q_floats;
  float* vs = kt + Smem::k_floats;
  float* pt = vs + Smem::v_floats;

  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  const std::int64_t head = attention_head_offset(seq, dim);
  q += head, k += head, v += head, out += head;
  // blockIdx.x = query tile · splits + split (attention_query_tile sees the tile part).
  const int split = static_cast<int>(blockIdx.x) % splits;
  const int tile =
      attention_query_tile(causal, static_cast<int>(blockIdx.x) / splits, static_cast<int>(gridDim.x) / splits);
  const int q0 = tile * BR;
  const int kv_end = causal ? min(seq, q0 + BR) : seq;  // keys past the tile's last row are all masked
  const int kv_tiles = cudalabs::ceil_div(kv_end, BC);
  const int first_tile = split * kv_tiles / splits, end_tile = (split + 1) * kv_tiles / splits;

  load_transposed<D, BR>(qt, Smem::ld_q, q, q0, seq, dim, scale_log2);

  float o[4][4 * OC] = {};
  float m[4], l[4];  // running max (base-2 units) and this thread's share of the running sum
#pragma unroll
  for (int i = 0; i < 4; ++i) m[i] = -INFINITY, l[i] = 0.f;

  for (int kv_tile = first_tile; kv_tile < end_tile; ++kv_tile) {
    const int kv0 = kv_tile * BC;
    load_transposed<D, BC>(kt, Smem::ld_k, k, kv0, seq, dim, 1.f);
#pragma unroll
    for (int it = 0; it < BC * D / 4 / fp32_threads; ++it) {
      const int f = it * fp32_threads + static_cast<int>(threadIdx.x);
      const int key = f / (D / 4), chunk = f % (D / 4);
      float4 x = make_float4(0.f, 0.f, 0.f, 0.f);  // zeros past the end: 0·P, never NaN·0
      if (kv0 + key < seq && 4 * chunk < dim)
        x = *reinterpret_cast<const float4*>(v + static_cast<std::int64_t>(kv0 + key) * dim + 4 * chunk);
      *reinterpret_cast<float4*>(vs + key * D + 4 * chunk) = x;
    }
    __syncthreads();

    // S = (Q·log2e/sqrt(d)) · Kᵀ, a 4×4 block per thread.
    float s[4][4] = {};
#pragma unroll 16
    for (int c = 0; c < D; ++c) {
      const float4 a = *reinterpret_cast<const float4*>(qt + c * Smem::ld_q + 4 * ty);
      const float4 b = *reinterpret_cast<const float4*>(kt + c * Smem::ld_k + 4 * tx);
      const float av[4] = {a.x, a.y, a.z, a.w}, bv[4] = {b.x, b.y, b.z, b.w};
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) s[i][j] = fmaf(av[i], bv[j], s[i][j]);
    }

    // Keys past the end (the last tile) and, under the causal mask, keys after
    // the query get -inf: 2^-inf = 0, they drop out of max, sum and product.
    if (kv0 + BC > seq || (causal && kv0 + BC - 1 > q0))
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          const int key = kv0 + 4 * tx + j, row = q0 + 4 * ty + i;
          if (key >= seq || (causal && key > row)) s[i][j] = -INFINITY;
        }

        // Online softmax, row by row.
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      float tile_max = fmaxf(fmaxf(s[i][0], s[i][1]), fmaxf(s[i][2], s[i][3]));
#pragma unroll
      for (int offset = 8; offset > 0; offset >>= 1)  // the 16 threads of this row: one half-warp
        tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, offset));
      const float m_new = fmaxf(m[i], tile_max);
      // A row with no unmasked key yet has m = -inf; subtracting 0 instead keeps
      // 2^(-inf - (-inf)) = NaN out.
      const float m_ref = m_new == -INFINITY ? 0.f : m_new;
      const float alpha = exp2f(m[i] - m_ref);  // rescales what was summed under the old max; 0 on the first tile
      float row_sum = 0.f;
#pragma unroll
      for (int j = 0; j < 4; ++j) row_sum += (s[i][j] = exp2f(s[i][j] - m_ref));
      l[i] = l[i] * alpha + row_sum;  // this thread's part; the 16 parts are added once, at the end
      m[i] = m_new;
#pragma unroll
      for (int c = 0; c < 4 * OC; ++c) o[i][c] *= alpha;
    }

    // Pᵀ to shared memory: each thread needs the whole rows of P for P·V.
#pragma unroll
    for (int j = 0; j < 4; ++j)
      *reinterpret_cast<float4*>(pt + (4 * tx + j) * Smem::ld_p + 4 * ty) =
          make_float4(s[0][j], s[1][j], s[2][j], s[3][j]);
    __syncthreads();

    // O += P · V
#pragma unroll 8
    for (int j = 0; j < BC; ++j) {
      const float4 p = *reinterpret_cast<const float4*>(pt + j * Smem::ld_p + 4 * ty);
      const float pv[4] = {p.x, p.y, p.z, p.w};
#pragma unroll
      for (int h = 0; h < OC; ++h) {
        const float4 x = *reinterpret_cast<const float4*>(vs + j * D + 64 * h + 4 * tx);
        const float xv[4] = {x.x, x.y, x.z, x.w};
#pragma unroll
        for (int i = 0; i < 4; ++i)
#pragma unroll
          for (int c = 0; c < 4; ++c) o[i][4 * h + c] = fmaf(pv[i], xv[c], o[i][4 * h + c]);
      }
    }
    __syncthreads();  // kt, vs and pt are overwritten by the next tile
  }

#pragma unroll
  for (int i = 0; i < 4; ++i) {
#pragma unroll
    for (int offset = 8; offset > 0; offset >>= 1) l[i] += __shfl_xor_sync(0xffffffffu, l[i], offset);
  }

  if (splits == 1) {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int row = q0 + 4 * ty + i;
      if (row >= seq) continue;
      const float inv = 1.f / l[i];  // > 0: every row sees key 0
#pragma unroll
      for (int h = 0; h < OC; ++h) {
        const int col = 64 * h + 4 * tx;
        if (col < dim)
          *reinterpret_cast<float4*>(out + static_cast<std::int64_t>(row) * dim + col) =
              make_float4(o[i][4 * h] * inv, o[i][4 * h + 1] * inv, o[i][4 * h + 2] * inv, o[i][4 * h + 3] * inv);
      }
    }
    return;
  }

  // Split-KV: publish this block's partial result...
  const std::int64_t head_index = attention_head_index();
  const std::int64_t heads = static_cast<std::int64_t>(gridDim.y) * gridDim.z;
  auto part_row = [&](int s, int row) { return (s * heads + head_index) * seq + row; };
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int row = q0 + 4 * ty + i;
    if (row >= seq) continue;
    if (tx == 0) *reinterpret_cast<float2*>(partials.ml + 2 * part_row(split, row)) = make_float2(m[i], l[i]);
#pragma unroll
    for (int h = 0; h < OC; ++h) {
      const int col = 64 * h + 4 * tx;
      if (col < dim)
        *reinterpret_cast<float4*>(partials.o + part_row(split, row) * dim + col) =
            make_float4(o[i][4 * h], o[i][4 * h + 1], o[i][4 * h + 2], o[i][4 * h + 3]);
    }
  }
  // ...and count it. The fence orders this thread's stores before the count
  // for every other block (threadFenceReduction in the CUDA samples).
  __threadfence();
  __syncthreads();
  __shared__ bool last_block;
  unsigned* done = partials.done + head_index * (gridDim.x / splits) + tile;
  if (threadIdx.x == 0) last_block = atomicAdd(done, 1u) == static_cast<unsigned>(splits - 1);
  __syncthreads();
  if (!last_block) return;

  // The last block merges all splits of its tile. __ldcg reads from L2: the
  // other blocks' partials were written by other SMs, past this SM's L1.
  __threadfence();
  for (int f = threadIdx.x; f < BR * (dim / 4); f += fp32_threads) {
    const int row = q0 + f / (dim / 4), col = 4 * (f % (dim / 4));
    if (row >= seq) continue;
    float m_max = -INFINITY;
    for (int s = 0; s < splits; ++s) m_max = fmaxf(m_max, __ldcg(partials.ml + 2 * part_row(s, row)));
    float total = 0.f;
    float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
    for (int s = 0; s < splits; ++s) {
      const float2 ml = __ldcg(reinterpret_cast<const float2*>(partials.ml + 2 * part_row(s, row)));
      const float w = exp2f(ml.x - m_max);  // 0 for an empty split (m = -inf)
      const float4 x = __ldcg(reinterpret_cast<const float4*>(partials.o + part_row(s, row) * dim + col));
      total += w * ml.y;
      acc.x += w * x.x, acc.y += w * x.y, acc.z += w * x.z, acc.w += w * x.w;
    }
    const float inv = 1.f / total;
    *reinterpret_cast<float4*>(out + static_cast<std::int64_t>(row) * dim + col) =
        make_float4(acc.x * inv, acc.y * inv, acc.z * inv, acc.w * inv);
  }
  if (threadIdx.x == 0) *done = 0;  // ready for the next launch
}

// The compiled tile width for head dimension `dim`.
template <int D>
const void* flash_fp32_prepare() {
  // Above 48 KB of dynamic shared memory a kernel must opt in, once per process.
  static const bool done = [] {
    cudalabs::allow_dynamic_smem(flash_fp32_kernel<D>, Fp32Smem<D>::bytes, "flash_fp32_kernel");
    return true;
  }();
  (void)done;
  return reinterpret_cast<const void*>(flash_fp32_kernel<D>);
}

inline std::size_t flash_fp32_smem_bytes(int dim) { return dim <= 64 ? Fp32Smem<64>::bytes : Fp32Smem<128>::bytes; }

inline KernelChoice flash_fp32_choice(int dim) {
  if (dim <= 64) return {flash_fp32_prepare<64>(), fp32_threads, Fp32Smem<64>::bytes};
  return {flash_fp32_prepare<128>(), fp32_threads, Fp32Smem<128>::bytes};
}

// How many blocks share the keys of one query tile. The GPU holds `resident`
// blocks at once (blocks per SM from the occupancy calculator × SMs: 4 × 132 =
// 528 on an H100 at d = 64, 2 × 132 at d = 128). A grid of that many query
// tiles fills it by itself: no split. Otherwise take the split count that ends
// soonest, with time counted in key tiles walked one after another by the
// busiest block: ceil(blocks·splits / resident) waves × ceil(kv_tiles / splits)
// tiles per block. On a tie the fewest splits win (each one is a partial result
// to write and merge), and a split keeps at least 4 key tiles (256 keys).
//
// One head, N = 2048, d = 64: 64 query tiles, 32 key tiles. 8 splits make 512
// blocks of 4 key tiles, 4 on nearly every SM: 4 tiles on the critical path. Aiming
// at only 2 blocks per SM (5 splits: 320 blocks of 6–7 tiles, 2–3 per SM) put 7
// tiles on it, at a per-SM rate only ~10% lower, and ran no faster than lab 15.
// N = 4096: 4 splits (512 blocks of 16 tiles), N = 8192: 2 (512 blocks of 64),
// N = 16384: 1 (512 blocks of 256); a batch of heads is rarely split at all.
inline int flash_fp32_splits(const AttentionShape& s) {
  const std::int64_t blocks = cudalabs::ceil_div(s.seq, fp32_tile_rows) * s.heads_total();
  const KernelChoice kc = flash_fp32_choice(s.dim);
  const int per_sm = std::max(1, cudalabs::kernel_resources(kc.kernel, kc.threads, kc.smem_bytes).blocks_per_sm);
  const std::int64_t resident = static_cast<std::int64_t>(per_sm) * cudalabs::current_device().sm_count;
  if (blocks >= resident) return 1;
  const std::int64_t kv_tiles = cudalabs::ceil_div(s.seq, fp32_tile_keys);
  const std::int64_t most = std::clamp<std::int64_t>(kv_tiles / 4, 1, 16);
  int best = 1;
  std::int64_t best_time = kv_tiles;  // one split: one wave (blocks < resident), every key tile
  for (int splits = 2; splits <= most; ++splits) {
    const std::int64_t waves = cudalabs::ceil_div<std::int64_t>(blocks * splits, resident);
    const std::int64_t time = waves * cudalabs::ceil_div<std::int64_t>(kv_tiles, splits);
    if (time < best_time) best = splits, best_time = time;
  }
  return best;
}

// The launch plan of one shape: its split count and, when split, the
// workspace for the partial results (allocated here, once, never in the
// launcher: launchers do not allocate or synchronise).
struct Fp32Plan {
  int splits = 1;
  cudalabs::DeviceBuffer<float> o, ml;
  cudalabs::DeviceBuffer<unsigned> done;

  // The split workspace: splits·heads·N·(d+2) floats and one counter per query
  // tile, O(N·d) (0 without a split). The records report it as scratch_bytes.
  double workspace_bytes() const { return static_cast<double>(o.bytes() + ml.bytes() + done.bytes()); }
};

inline Fp32Plan flash_fp32_plan(const AttentionShape& s, cudaStream_t stream) {
  Fp32Plan plan;
  plan.splits = flash_fp32_splits(s);
  if (plan.splits > 1) {
    const auto rows = static_cast<std::size_t>(plan.splits * s.heads_total() * s.seq);
    plan.o = cudalabs::DeviceBuffer<float>(rows * s.dim, "flash_fp32 split partial O");
    plan.ml = cudalabs::DeviceBuffer<float>(rows * 2, "flash_fp32 split partial m, l");
    plan.done = cudalabs::DeviceBuffer<unsigned>(
        static_cast<std::size_t>(s.heads_total() * cudalabs::ceil_div(s.seq, fp32_tile_rows)),
        "flash_fp32 split counters");
    plan.done.zero(stream);  // on the stream the kernel runs on: ordered before the first launch
  }
  return plan;
}

// Every head of `shape` in one launch. Q, K, V, O as in flash_common.cuh; the
// plan from flash_fp32_plan(shape, stream), used on that stream only (the
// split workspace is reused launch after launch).
inline void flash_fp32(const float* q, const float* k, const float* v, float* out, const AttentionShape& shape,
                       Fp32Plan& plan, cudaStream_t stream) {
  dim3 grid = attention_grid(shape, fp32_tile_rows);
  grid.x *= static_cast<unsigned>(plan.splits);
  const float scale = score_scale_log2(shape.dim);
  const Fp32Partials partials{plan.o.data(), plan.ml.data(), plan.done.data()};
  if (shape.dim <= 64) {
    flash_fp32_prepare<64>();
    flash_fp32_kernel<64><<<grid, fp32_threads, Fp32Smem<64>::bytes, stream>>>(
        q, k, v, out, shape.seq, shape.dim, scale, shape.causal, plan.splits, partials);
  } else {
    flash_fp32_prepare<128>();
    flash_fp32_kernel<128><<<grid, fp32_threads, Fp32Smem<128>::bytes, stream>>>(
        q, k, v, out, shape.seq, shape.dim, scale, shape.causal, plan.splits, partials);
  }
  CUDALABS_CHECK_LAUNCH("flash_fp32_kernel");
}

}  // namespace

#pragma once
// Step 3 — accumulation precision: promote the tensor core's partial sums to
// FP32 registers every 128 of k.
//
// Hopper's FP8 wgmma adds its products into the accumulator with fewer
// mantissa bits than FP32 keeps: the DeepSeek-V3 report (§3.3.2) measured
// about 14, and a relative error near 2^-9 at k = 4096. Step 2 accumulates in
// the tensor core from the first k to the last, so its rounding grows with k.
// DeepGEMM's remedy, written here for the course: each 128-wide slice of k
// (4 wgmma m64n128k32) starts a fresh accumulator in the tensor core
// (scale-d = 0), and when the slice is done the consumer adds it into a
// second set of FP32 registers with ordinary FADDs. The tensor core's short
// sums are then only 128 products long, whatever k is.
//
// The cost: a second accumulator set (64 more registers per thread: the
// tile is 128 × 128, two consumers of 64 × 128, where step 2's 128 × 256
// tile would need 256), 64 FADDs per thread per slice, and a wgmma wait per
// slice before the adds (the tensor cores idle unless the other consumer
// warpgroup has work in flight). The README's table has what it measured.
//
// The pipeline is lab 30's, reused piece by piece (wgmma_tma.cuh, gemm_tile.cuh):
// the ring of 128-byte-swizzled stages and its mbarriers, the producer
// warpgroup's TMA loads, the persistent schedule (whole tiles round-robin:
// no split-K or stream-K here, so every tile is stored once, from registers),
// the tile order, the fragment stores. Operands are pairs of e4m3 values
// along k (per_tensor_fp8.cuh says why).
//
// The kernel takes a Scales policy: what multiplies each slice's partial
// sums as they are promoted, and what multiplies C at the end. Here,
// per-tensor scales (1 per slice, scale_a · scale_b at the store); step 4
// (block_scaled_fp8.cuh) passes block scales.
#include <cuda_fp8.h>

#include <wgmma_tma.cuh>  // lab 30's step 4: TileShape, Schedule, tensor maps, the fragment stores

#include "fp8_format.hpp"

namespace promoted_step {
using Pair = __nv_fp8x2_e4m3;
// 128 × 128 tiles (consumers one above the other, 64 × 128 each): 64 tensor-
// core accumulators and 64 FP32 ones per thread. 32 KB stages, 6 of them.
using Tile = wgmma_step::TileShape<128, 128, false>;
static_assert(Tile::cols == fp8::block, "a tile's columns are one 128-row block of B (step 4's weight scales)");
static_assert(wgmma_step::tile_k * 2 == fp8::block, "a slice of k (64 pairs) is one 128-wide scale block");

// Per-tensor scales (step 3): promotion adds the slice as it is; C is
// multiplied by scale_a · scale_b as it is stored.
struct PerTensorScales {
  const float* a;
  const float* b;
  struct Slice {
    float top = 1.0f, bottom = 1.0f;  // for the thread's rows g and g + 8
  };
  __device__ Slice slice(int /*row*/, int /*col0*/, int /*k_block*/) const { return {}; }
  __device__ float output() const { return *a * *b; }
};
}  // namespace promoted_step

// C = A·Bᵀ in 128 × 128 tiles, FP32 promotion every slice. a_map / b_map:
// the tensor maps of A [m × k/2 pairs] and B [n × k/2 pairs], boxes of 128
// rows × 64 pairs.
template <class Scales>
__global__ void __launch_bounds__(wgmma_step::threads, 1)
    gemm_fp8_promoted_kernel(const __grid_constant__ CUtensorMap a_map, const __grid_constant__ CUtensorMap b_map,
                             float* __restrict__ c, int m, int n, const wgmma_step::Schedule plan, const Scales scales) {
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using namespace wgmma_step;
  using promoted_step::Pair;
  using Shape = promoted_step::Tile;
  namespace hw = cudalabs::hopper;
  constexpr int tile_m = Shape::rows, tile_n = Shape::cols, stages = Shape::stages, wg_n = Shape::consumer_cols;
  constexpr int fragments = wg_n / 8;
  extern __shared__ unsigned char smem_raw[];
  unsigned char* smem = reinterpret_cast<unsigned char*>(
      (reinterpret_cast<std::uintptr_t>(smem_raw) + 1023) & ~std::uintptr_t{1023});
  Pair* a_tiles = reinterpret_cast<Pair*>(smem);                                    // [stage][128 rows][64 pairs]
  Pair* b_tiles = reinterpret_cast<Pair*>(smem + stages * Shape::row_stage_bytes);  // [stage][128 rows][64 pairs]
  auto* full = reinterpret_cast<std::uint64_t*>(smem + stages * Shape::stage_bytes);
  std::uint64_t* empty = full + stages;

  const int warpgroup = hw::warpgroup_index(), in_group = static_cast<int>(threadIdx.x) % 128;
  const int worker = static_cast<int>(blockIdx.x), items = plan.items(worker);
  const int tiles_m = cudalabs::ceil_div(m, tile_m), tiles_n = cudalabs::ceil_div(n, tile_n);
  if (threadIdx.x == 0) {
    for (int s = 0; s < stages; ++s) {
      hw::mbarrier_init(&full[s], 1);              // the producer's arrive_expect_tx (+ the bytes)
      hw::mbarrier_init(&empty[s], 4 * consumers);  // one arrival per consumer warp
    }
    hw::fence_barrier_init();
  }
  __syncthreads();

  if (warpgroup == 0) {  // the producer, as lab 30's: one thread, two TMA loads per slice
    hw::setmaxnreg_dec<40>();
    if (in_group == 0) {
      int g = 0;
      for (int i = 0; i < items; ++i) {
        const Work work = plan.item(worker, i);
        const TileCoord tile = tile_of_block(work.unit, tiles_m, tiles_n, tile_m, tile_n);
        for (int s = work.first; s < work.last; ++s, ++g) {
          const int stage = g % stages;
          hw::mbarrier_wait(&empty[stage], ((g / stages) & 1) ^ 1);
          hw::mbarrier_arrive_expect_tx(&full[stage], Shape::stage_bytes);
          hw::tma_load_2d(a_tiles + stage * tile_m * tile_k, &a_map, s * tile_k, tile.row0, &full[stage]);
          hw::tma_load_2d(b_tiles + stage * tile_n * tile_k, &b_map, s * tile_k, tile.col0, &full[stage]);
        }
      }
    }
  } else {
    // BEGIN SOLUTION promoted
    hw::setmaxnreg_inc<232>();
    const int consumer = warpgroup - 1;
    const int lane = in_group % 32;
    int g = 0;
    for (int i = 0; i < items; ++i) {
      const Work work = plan.item(worker, i);
      const TileCoord tile = tile_of_block(work.unit, tiles_m, tiles_n, tile_m, tile_n);
      // This thread's rows of the tile: g and g + 8 of its warp's 16 (hopper.cuh's fragment layout).
      const int row0 = tile.row0 + Shape::row_offset(consumer) + 16 * (in_group / 32);
      const int row = row0 + lane / 4;
      float total[wg_n / 2];  // FP32, over all of k
      float part[wg_n / 2];   // the tensor core's sum over one slice (overwritten: scale-d = 0 on its first wgmma)
#pragma unroll
      for (int r = 0; r < wg_n / 2; ++r) total[r] = part[r] = 0.0f;

      for (int s = work.first; s < work.last; ++s, ++g) {
        const int stage = g % stages;
        // The slice's scales are loaded before the wait: their latency hides behind the loads and the wgmma.
        const typename Scales::Slice factor = scales.slice(row, tile.col0, s);
        hw::mbarrier_wait(&full[stage], (g / stages) & 1);
        const Pair* a_rows = a_tiles + stage * tile_m * tile_k + Shape::row_offset(consumer) * tile_k;
        const Pair* b_rows = b_tiles + stage * tile_n * tile_k;
        hw::fence_operands(part);
        hw::wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < tile_k; kk += 16)  // 16 pairs = 32 of k per wgmma
          hw::wgmma_ss<wg_n, Pair>(part, hw::smem_descriptor_128b(a_rows + kk), hw::smem_descriptor_128b(b_rows + kk),
                                   kk > 0);  // scale-d = 0 on the first: a fresh partial sum
        hw::wgmma_commit_group();
        hw::wgmma_wait_group<0>();
        hw::fence_operands(part);
        if (in_group % 32 == 0) hw::mbarrier_arrive(&empty[stage]);  // the registers hold it: the stage is free
        // The promotion: c0, c1 of each m16n8 fragment are row g, c2, c3 row g + 8.
#pragma unroll
        for (int r = 0; r < wg_n / 2; ++r) total[r] = fmaf(part[r], r % 4 < 2 ? factor.top : factor.bottom, total[r]);
      }
      const float alpha = scales.output();
#pragma unroll
      for (int j = 0; j < fragments; ++j) {
        const float fragment[4] = {alpha * total[4 * j], alpha * total[4 * j + 1], alpha * total[4 * j + 2],
                                   alpha * total[4 * j + 3]};
        store_accumulator_16x8(c, m, n, row0, tile.col0 + 8 * j, fragment);
      }
    }
    // END SOLUTION
    // STUB: // TODO: per 128-wide slice, a fresh tensor-core sum (scale-d = 0 on its first wgmma), then, once it is
    // STUB: // waited for and the stage released, total += part · the Scales' factor (FP32 FMAs); store alpha · total.
  }
#else
  (void)a_map, (void)b_map, (void)c, (void)m, (void)n, (void)plan, (void)scales;
#endif
}

// Opts the kernel in to its shared memory (once) before launches and the occupancy API.
template <class Scales>
void gemm_fp8_promoted_prepare() {
  opt_in_shared_memory_once<gemm_fp8_promoted_kernel<Scales>, promoted_step::Tile::smem_bytes>();
  cudalabs::hopper::tensor_map_encoder();
}

// The launch: one persistent block per SM (or per tile, when fewer), whole
// tiles round-robin, every slice of k in one item.
template <class Scales>
void gemm_fp8_promoted_tiles(const __nv_fp8_e4m3* a, const __nv_fp8_e4m3* b, float* c, int m, int n, int k,
                             Scales scales, cudaStream_t stream) {
  using namespace wgmma_step;
  using promoted_step::Pair;
  using Shape = promoted_step::Tile;
  gemm_fp8_promoted_prepare<Scales>();
  const int pairs_k = k / 2;  // k % 16 == 0: rows of a multiple of 16 bytes, as TMA wants
  const int tiles = static_cast<int>(tile_grid(m, n, Shape::rows, Shape::cols)), slices = cudalabs::ceil_div(pairs_k, tile_k);
  const int workers = std::min(tiles, cudalabs::current_device().sm_count);
  const Schedule plan{tiles, slices, 1, slices, workers, tiles, 0};  // splits 1, no tail: whole tiles only
  const CUtensorMap a_map = tensor_map_of(reinterpret_cast<const Pair*>(a), m, pairs_k, Shape::rows);
  const CUtensorMap b_map = tensor_map_of(reinterpret_cast<const Pair*>(b), n, pairs_k, Shape::cols);
  gemm_fp8_promoted_kernel<Scales><<<static_cast<unsigned>(workers), threads, Shape::smem_bytes, stream>>>(
      a_map, b_map, c, m, n, plan, scales);
  CUDALABS_CHECK_LAUNCH("gemm_fp8_promoted_kernel");
}

// Step 3: per-tensor scales (device scalars), FP32 promotion every 128 of k.
inline void gemm_fp8_promoted(const __nv_fp8_e4m3* a, const __nv_fp8_e4m3* b, const float* scale_a,
                              const float* scale_b, float* c, int m, int n, int k, cudaStream_t stream) {
  gemm_fp8_promoted_tiles(a, b, c, m, n, k, promoted_step::PerTensorScales{scale_a, scale_b}, stream);
}

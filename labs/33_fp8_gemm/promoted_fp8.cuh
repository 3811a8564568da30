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
// second set of FP32 registers with ordinary FP32 adds. The tensor core's short
// sums are then only 128 products long, whatever k is.
//
// The cost: a second accumulator set (the tile is 128 × 128, two consumers
// of 64 × 128, where step 2's 128 × 256 tile would need 256 registers more),
// 64 FMAs per thread per slice, and a wgmma wait per slice before them.
//
// Two slices in flight. Waiting for each slice's last wgmma before its adds
// (wgmma.wait_group 0) leaves the tensor core to the other consumer
// warpgroup while this one adds, and the two tend to promote at the same
// moment: measured on the H200 at commit e541eba (results/h200x2/fp8/e541eba/), that
// kernel ran at 0.87× cuBLASLt's FP8 GEMM where step 2 runs at 1.03×, the
// promotion costing 16%. So each consumer issues slice s + 1's wgmma into a
// second set of partial sums, then waits for slice s only (wait_group 1),
// releases s's stage and promotes s while s + 1 runs in the tensor core.
// (Lab 30's BF16 kernel, which has no work between slices, gained nothing
// from wait_group 1: wgmma_tma.cuh.) The registers this needs, per consumer
// thread: 64 FP32 sums + 2 × 64 partial sums = 192 of the 232 that
// setmaxnreg gives a consumer (the producer keeps 40: 40·128 + 232·256 =
// 64 512 of the SM's 65 536), 40 left for addresses, the loop and the
// scales; ptxas reports no spills (nvcc -Xptxas -v). The same with 128 × 256
// tiles would need 384, past the 255 a thread can have: the tile stays
// 128 × 128.
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
// (block_scaled_fp8.cuh) passes block scales, whose per-row factors the
// producer loads into each stage beside the tiles (the policy's `staged`
// floats per stage and its stage() load; none here).
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
// multiplied by scale_a · scale_b as it is stored. A Scales policy has:
//   staged    FP32 values per stage that the producer loads with the tiles
//   stage()   the producer's load of them, counted in the stage's mbarrier
//   slice()   the factors of one slice for a thread's two rows (row: its
//             first, in the tile), given the slice's staged values
//   output()  what multiplies C as it is stored
struct PerTensorScales {
  const float* a;
  const float* b;
  static constexpr int staged = 0;  // nothing beside the tiles
  struct Slice {
    float top = 1.0f, bottom = 1.0f;  // for the thread's rows g and g + 8
  };
  __device__ void stage(float* /*staged*/, int /*row0*/, int /*k_block*/, std::uint64_t* /*full*/) const {}
  __device__ Slice slice(const float* /*staged*/, int /*row*/, int /*col0*/, int /*k_block*/) const { return {}; }
  __device__ float output() const { return *a * *b; }
};

// The kernel's shared memory: the tile ring and its mbarriers (Tile), and the
// policy's staged values, `staged` floats per stage.
template <class Scales>
inline constexpr int smem_bytes = Tile::smem_bytes + Tile::stages * Scales::staged * static_cast<int>(sizeof(float));
}  // namespace promoted_step

// C = A·Bᵀ in 128 × 128 tiles, FP32 promotion every slice. a_map / b_map:
// the tensor maps of A [m × k/2 pairs] and B [n × k/2 pairs], boxes of 128
// rows × 64 pairs. `scales` is a __grid_constant__ parameter: a policy may
// hold a tensor map, which TMA reads where the parameter lives.
template <class Scales>
__global__ void __launch_bounds__(wgmma_step::threads, 1)
    gemm_fp8_promoted_kernel(const __grid_constant__ CUtensorMap a_map, const __grid_constant__ CUtensorMap b_map,
                             float* __restrict__ c, int m, int n, const wgmma_step::Schedule plan,
                             const __grid_constant__ Scales scales) {
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
  float* staged_ring = reinterpret_cast<float*>(smem + stages * Shape::stage_bytes);  // [stage][Scales::staged]
  constexpr int staged_bytes = Scales::staged * static_cast<int>(sizeof(float));
  auto* full = reinterpret_cast<std::uint64_t*>(smem + stages * (Shape::stage_bytes + staged_bytes));
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

  if (warpgroup == 0) {  // the producer, as lab 30's: one thread, two TMA loads per slice (and the policy's)
    hw::setmaxnreg_dec<40>();
    if (in_group == 0) {
      int g = 0;
      for (int i = 0; i < items; ++i) {
        const Work work = plan.item(worker, i);
        const TileCoord tile = tile_of_block(work.unit, tiles_m, tiles_n, tile_m, tile_n);
        for (int s = work.first; s < work.last; ++s, ++g) {
          const int stage = g % stages;
          hw::mbarrier_wait(&empty[stage], ((g / stages) & 1) ^ 1);
          hw::mbarrier_arrive_expect_tx(&full[stage], Shape::stage_bytes + staged_bytes);
          hw::tma_load_2d(a_tiles + stage * tile_m * tile_k, &a_map, s * tile_k, tile.row0, &full[stage]);
          hw::tma_load_2d(b_tiles + stage * tile_n * tile_k, &b_map, s * tile_k, tile.col0, &full[stage]);
          scales.stage(staged_ring + stage * Scales::staged, tile.row0, s, &full[stage]);  // slice s is k-block s
        }
      }
    }
  } else {
    // BEGIN SOLUTION promoted
    hw::setmaxnreg_inc<232>();
    const int consumer = warpgroup - 1;
    const int lane = in_group % 32;
    const Pair* a_ring = a_tiles + Shape::row_offset(consumer) * tile_k;  // this consumer's 64 rows of stage 0
    // This thread's rows of a tile: g and g + 8 of its warp's 16 (hopper.cuh's fragment layout).
    const int warp_row = Shape::row_offset(consumer) + 16 * (in_group / 32), row = warp_row + lane / 4;
    int g = 0;  // the block's slices so far, over all its items: its j-th slice is in stage j % stages
    for (int i = 0; i < items; ++i) {
      const Work work = plan.item(worker, i);
      const TileCoord tile = tile_of_block(work.unit, tiles_m, tiles_n, tile_m, tile_n);
      const int row0 = tile.row0 + warp_row;  // the warp's first row in C
      float total[wg_n / 2];    // FP32, over all of k
      float part[2][wg_n / 2];  // two slices' tensor-core sums (scale-d = 0 on each one's first wgmma)
#pragma unroll
      for (int r = 0; r < wg_n / 2; ++r) total[r] = part[0][r] = part[1][r] = 0.0f;

      // The block's j-th slice: wait for its stage, issue its 4 wgmma (16 pairs = 32 of k each) into `sum`, as
      // one group. The fences: `sum` was last read by a promotion, which must be done before the wgmma write it.
      auto issue = [&](float (&sum)[wg_n / 2], int j) {
        const int stage = j % stages;
        hw::mbarrier_wait(&full[stage], (j / stages) & 1);
        const Pair* a_rows = a_ring + stage * tile_m * tile_k;
        const Pair* b_rows = b_tiles + stage * tile_n * tile_k;
        hw::fence_operands(sum);
        hw::wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < tile_k; kk += 16)
          hw::wgmma_ss<wg_n, Pair>(sum, hw::smem_descriptor_128b(a_rows + kk), hw::smem_descriptor_128b(b_rows + kk),
                                   kk > 0);  // scale-d = 0 on the first: a fresh partial sum
        hw::wgmma_commit_group();
      };
      // Slice s (the block's j-th) has finished in `ready`: release its stage, add it into total (FP32 FMAs with
      // the Scales' factor, read before the next slice's issue and the wait for this one, so that its latency
      // hides behind them, and before the release: the factor may come from the stage's staged values).
      auto promote = [&](const float (&ready)[wg_n / 2], typename Scales::Slice factor, int j) {
        if (lane == 0) hw::mbarrier_arrive(&empty[j % stages]);  // the registers hold the slice: its stage is free
        // c0, c1 of each m16n8 fragment are row g, c2, c3 row g + 8.
#pragma unroll
        for (int r = 0; r < wg_n / 2; ++r) total[r] = fmaf(ready[r], r % 4 < 2 ? factor.top : factor.bottom, total[r]);
      };
      // The factor of the tile's slice t, the block's (g + t)-th: its stage's full barrier was waited for when
      // it was issued, so the stage's staged values are there.
      auto factor_of = [&](int t) {
        return scales.slice(staged_ring + ((g + t) % stages) * Scales::staged, row, tile.col0, work.first + t);
      };
      // With slice t in flight in `ready`: issue slice t + 1 into `next`, wait for slice t only (wait_group 1:
      // the tensor core runs t + 1 meanwhile), promote slice t. No branch around an issue: written with one
      // (issue only where a next slice exists), ptxas serialised every wgmma of the kernel (nvcc -Xptxas -v,
      // info C7514: accumulator registers read by other instructions while their wgmma is in flight).
      auto overlap = [&](float (&ready)[wg_n / 2], float (&next)[wg_n / 2], int t) {
        const typename Scales::Slice factor = factor_of(t);
        issue(next, g + t + 1);
        hw::wgmma_wait_group<1>();
        hw::fence_operands(ready);
        promote(ready, factor, g + t);
      };
      // The last slice, in flight in `ready`: nothing left to overlap.
      auto drain = [&](float (&ready)[wg_n / 2], int t) {
        const typename Scales::Slice factor = factor_of(t);
        hw::wgmma_wait_group<0>();
        hw::fence_operands(ready);
        promote(ready, factor, g + t);
      };
      // Two slices per trip, so that which of part[0], part[1] a slice uses is known when compiling (registers
      // cannot be indexed at run time): even slices of the tile in part[0], odd ones in part[1].
      const int slices = work.last - work.first;
      issue(part[0], g);
      int t = 0;
      for (; t + 2 < slices; t += 2) {  // slice t in flight in part[0], slices t + 1 and t + 2 to come
        overlap(part[0], part[1], t);
        overlap(part[1], part[0], t + 1);
      }
      if (t + 1 < slices) {  // two slices left
        overlap(part[0], part[1], t);
        drain(part[1], t + 1);
      } else {
        drain(part[0], t);
      }
      g += slices;
      const float alpha = scales.output();
#pragma unroll
      for (int j = 0; j < fragments; ++j) {
        const float fragment[4] = {alpha * total[4 * j], alpha * total[4 * j + 1], alpha * total[4 * j + 2],
                                   alpha * total[4 * j + 3]};
        store_accumulator_16x8(c, m, n, row0, tile.col0 + 8 * j, fragment);
      }
    }
    // END SOLUTION
    // STUB: // TODO: per 128-wide slice, a fresh tensor-core sum (scale-d = 0 on its first wgmma). Keep two slices in
    // STUB: // flight: issue slice s + 1 into a second set of registers, wait for slice s only (wgmma_wait_group<1>),
    // STUB: // release its stage, then total += part · the Scales' factor (FP32 FMAs); store alpha · total.
  }
#else
  (void)a_map, (void)b_map, (void)c, (void)m, (void)n, (void)plan, (void)scales;
#endif
}

// Opts the kernel in to its shared memory (once) before launches and the occupancy API.
template <class Scales>
void gemm_fp8_promoted_prepare() {
  opt_in_shared_memory_once<gemm_fp8_promoted_kernel<Scales>, promoted_step::smem_bytes<Scales>>();
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
  constexpr int smem_bytes = promoted_step::smem_bytes<Scales>;
  gemm_fp8_promoted_kernel<Scales><<<static_cast<unsigned>(workers), threads, smem_bytes, stream>>>(
      a_map, b_map, c, m, n, plan, scales);
  CUDALABS_CHECK_LAUNCH("gemm_fp8_promoted_kernel");
}

// Step 3: per-tensor scales (device scalars), FP32 promotion every 128 of k.
inline void gemm_fp8_promoted(const __nv_fp8_e4m3* a, const __nv_fp8_e4m3* b, const float* scale_a,
                              const float* scale_b, float* c, int m, int n, int k, cudaStream_t stream) {
  gemm_fp8_promoted_tiles(a, b, c, m, n, k, promoted_step::PerTensorScales{scale_a, scale_b}, stream);
}

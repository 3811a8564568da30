#pragma once
// Variant 3, pingpong: warp_specialized with the FlashAttention-3 schedule —
// the softmax of one warpgroup runs while the other's matrix products do.
//
// On the H100 an SM's tensor cores do 1024 FP16 FLOP per clock, its
// multi-function unit 16 exp2 per clock: for a 64×128 tile at d = 128 the two
// products are 4·64·128·128 = 4.2 M FLOP (~4 K clocks) and the softmax 8 K
// exp2 (~0.5 K clocks) plus the max, sum and rescale on the FP32 pipes — idle
// tensor cores for a sizeable share of every tile if the two alternate.
//
// Two changes to warp_specialized, each FlashAttention-3's:
//  * inter-warpgroup ping-pong: a consumer issues its wgmmas only in its turn,
//    held by a named barrier (bar.sync id, 256 threads) that the other
//    consumer opens (bar.arrive) right after issuing its own. So consumer 1
//    computes its softmax while consumer 0's products occupy the tensor cores,
//    and the other way round.
//  * intra-warpgroup pipelining: in one turn a consumer issues S_j = Q·K_jᵀ
//    and then O += P_{j-1}·V_{j-1} (the previous tile's P) as two commit
//    groups, waits for the first only (wait_group 1), and computes the
//    softmax of S_j while P_{j-1}·V_{j-1} still runs. That softmax must not
//    touch what the product in flight reads or writes: O (its accumulators)
//    and P (its A registers). So it leaves the weights in S and returns the
//    factor alpha that brings O to the new max; after wait_group 0, O is
//    rescaled (it now holds P_{j-1}·V_{j-1} at max m_{j-1}: times alpha it is
//    at m_j) and the weights are packed into P for the next turn.
// Turns per consumer: tiles + 1 (S_0 alone, then S_j with P_{j-1}·V_{j-1}, then
// the last P·V alone). Consumer 1 opens consumer 0's first turn and skips its
// own last hand-over, so every bar.sync meets exactly one bar.arrive.
//
// Why this was slower than warp_specialized before the second change (538 vs
// 563 TFLOP/s at d 128, N 4096, fp16): the turn issued S_j and P_{j-1}·V_{j-1}
// as one group and waited for both, so each consumer's softmax waited for its
// own P·V — the ping-pong only interleaved what two free-running consumers
// already interleave (warp_specialized), and added a bar.sync per turn on
// top. The softmax (8 K exp2 = 512 clocks of the MUFU per 64×128 tile, plus
// max, sum, rescale and packing) against the products of one turn (4.2 M
// FLOP = ~4 K tensor-core clocks at d 128, ~2 K at d 64) is 15-30 % of a
// turn: that is what the overlap can win back. Measured since (H100, git 065095d):
// it did not: 431.8 vs 557.5 TFLOP/s for warp_specialized at d 128, N 4096,
// fp16. The reason was the ring, not the schedule: a slot is released only
// after the softmax that follows its P·V, so with 2 stages (d 128) the next
// tile's TMA started at the end of a turn and was waited for at the top of
// the next. With a third stage (warp_specialized.cuh) the same code runs at
// 599-608 against 557-567 TFLOP/s (N 4096, fp16; the README's last section).
#include "warp_specialized.cuh"

inline constexpr int turn_barrier_first = 1;  // named barriers 1 and 2 (0 is __syncthreads')
inline constexpr int turn_threads = 2 * warpgroup;

template <typename T, int D>
__global__ void __launch_bounds__(specialized_threads, 1)
    pingpong_kernel(const __grid_constant__ CUtensorMap q_map, const __grid_constant__ CUtensorMap k_map,
                    const __grid_constant__ CUtensorMap v_map, float* __restrict__ out, int seq, float scale_log2,
                    bool causal) {
#ifdef LAB31_HOPPER_DEVICE
  // BEGIN SOLUTION pingpong_fp16 pingpong_bf16
  using Bytes = TileBytes<D>;
  constexpr int stages = SpecializedSmem<D>::stages, q_rows = SpecializedSmem<D>::q_rows;
  extern __shared__ std::uint8_t smem_raw[];
  const SpecializedTiles<D> sm(smem_raw);
  const int head = static_cast<int>(attention_head_index());
  const int q0 = attention_query_tile(causal, static_cast<int>(blockIdx.x), static_cast<int>(gridDim.x)) * q_rows;
  const int tiles = key_tiles(seq, q0, q_rows, causal);
  const int role = hw::warpgroup_index();

  if (threadIdx.x == 0) sm.init();
  __syncthreads();

  if (role == 0) {
    hw::setmaxnreg_dec<24>();
    if (threadIdx.x == 0) produce<D>(sm, &q_map, &k_map, &v_map, q0, head, tiles);
    return;
  }
  hw::setmaxnreg_inc<240>();
  const int consumer = role - 1;
  const int wg_row0 = q0 + hopper_rows * consumer;
  const int row0 = wg_row0 + 16 * ((static_cast<int>(threadIdx.x) % warpgroup) / 32);
  const std::uint8_t* my_q = sm.q + consumer * hopper_rows * 128;
  const int my_turn = turn_barrier_first + consumer, other_turn = turn_barrier_first + 1 - consumer;
  int turns_left = tiles + 1;
  auto end_turn = [&] {  // hand the tensor cores to the other consumer (consumer 1: not after its last turn)
    if (--turns_left > 0 || consumer == 0) hw::named_barrier_arrive(other_turn, turn_threads);
  };

  SoftmaxState<D> st;
  float s[hopper_keys / 2] = {};
  std::uint32_t p[hopper_keys / 16][4];
  float alpha[2];
  if (consumer == 1) hw::named_barrier_arrive(other_turn, turn_threads);  // consumer 0 goes first
  hw::mbarrier_wait(sm.q_bar, 0);

  // S_0 alone.
  hw::mbarrier_wait(sm.full, 0);
  hw::named_barrier_sync(my_turn, turn_threads);
  hw::wgmma_fence();
  issue_scores<T, D>(s, my_q, q_rows, sm.k);
  hw::wgmma_commit_group();
  end_turn();
  hw::wgmma_wait_group<0>();
  hw::fence_operands(s);
  online_softmax<T, D>(s, st, p, 0, row0, seq, causal, scale_log2);

  for (int j = 1; j < tiles; ++j) {
    const int stage = j % stages, previous = (j - 1) % stages;
    hw::mbarrier_wait(sm.full + stage, (j / stages) & 1);
    hw::named_barrier_sync(my_turn, turn_threads);
    hw::wgmma_fence();
    issue_scores<T, D>(s, my_q, q_rows, sm.k + stage * Bytes::kv);
    hw::wgmma_commit_group();
    issue_output<T, D>(st.o, p, sm.v + previous * Bytes::kv);  // never half: not the last tile
    hw::wgmma_commit_group();
    end_turn();
    hw::wgmma_wait_group<1>();  // S_j has landed; P_{j-1}·V_{j-1} may still be running
    hw::fence_operands(s);
    softmax_weights<D>(s, st, alpha, j * hopper_keys, row0, seq, causal, scale_log2);
    hw::wgmma_wait_group<0>();
    hw::fence_operands(st.o);
    hw::fence_operands(p);  // read by the P·V until here: the softmax above must not have reused them
    release_slot(sm.empty + previous);
    rescale_output<D>(st.o, alpha);
    weights_as_a<T>(p, s);
  }

  // The last P·V alone.
  const int last = (tiles - 1) % stages;
  hw::named_barrier_sync(my_turn, turn_threads);
  hw::wgmma_fence();
  if (upper_half_masked((tiles - 1) * hopper_keys, wg_row0, seq, causal))
    issue_output<T, D, true>(st.o, p, sm.v + last * Bytes::kv);
  else
    issue_output<T, D>(st.o, p, sm.v + last * Bytes::kv);
  hw::wgmma_commit_group();
  end_turn();
  hw::wgmma_wait_group<0>();
  hw::fence_operands(st.o);
  release_slot(sm.empty + last);
  store_output<D>(st, out + static_cast<std::int64_t>(head) * seq * D, row0, seq);
  // END SOLUTION
  // STUB: // TODO: warp_specialized's producer and consumers, the two consumers taking turns at the tensor cores (named
  // STUB: // barriers turn_barrier_first, +1): one issues its wgmmas while the other computes its softmax.
#else
  (void)q_map, (void)k_map, (void)v_map, (void)out, (void)seq, (void)scale_log2, (void)causal;
  __trap();  // not sm_90a: never launched (the host checks lab31::hopper_blocker() first)
#endif
}

template <typename T>
KernelChoice pingpong_choice(int dim) {
  static const KernelChoice d64 = opt_in(pingpong_kernel<T, 64>, specialized_threads, SpecializedSmem<64>::bytes);
  static const KernelChoice d128 = opt_in(pingpong_kernel<T, 128>, specialized_threads, SpecializedSmem<128>::bytes);
  return dim == 64 ? d64 : d128;
}

// Every head of `shape` in one launch: grid (query tiles of 128, heads, batch).
template <typename T>
void pingpong(const T* q, const T* k, const T* v, float* out, const AttentionShape& shape, cudaStream_t stream) {
  // BEGIN SOLUTION pingpong_fp16 pingpong_bf16
  launch_attention(pingpong_choice<T>(shape.dim), SpecializedSmem<64>::q_rows, "pingpong_kernel", q, k, v, out, shape,
                   stream);
  // END SOLUTION
  // STUB: cudalabs::not_implemented("pingpong", q, k, v, out, shape, stream);
}

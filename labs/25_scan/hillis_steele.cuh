#pragma once
// Step 1 — Hillis-Steele: a block scans its tile in log2(512) = 9 steps.
//
// In step k every item adds the item 2^k places before it (if there is one).
// After step k each item holds the sum of the 2^(k+1) items ending at it, so
// after 9 steps it holds the sum of everything up to it. Simple, and short:
// every step is one add per thread. But each step touches all 512 items: 9 x 512
// adds where a sequential scan does 511 (not work-efficient), and every step
// needs a barrier and a second buffer, because an item is read by its neighbour
// in the same step as it is replaced. A tile scan only: scan_then_propagate.cuh
// makes it scan any n.
#include <cstdint>

struct HillisSteeleTile {
  static constexpr int threads = 512;
  static constexpr int tile = threads;  // one item per thread

  template <bool Exclusive, typename T>
  __device__ static T scan_tile(const T* in, T* out, std::int64_t count) {
    // BEGIN SOLUTION hillis_steele
    // Double buffer: step k reads buffer[k % 2] and writes buffer[(k + 1) % 2],
    // so no thread overwrites an item another thread has yet to read.
    __shared__ T buffer[2][tile];
    const int i = threadIdx.x;
    buffer[0][i] = i < count ? in[i] : T(0);  // past the end: 0, the identity
    __syncthreads();
    int src = 0;
    for (int offset = 1; offset < tile; offset *= 2) {
      const T own = buffer[src][i];
      buffer[1 - src][i] = i >= offset ? buffer[src][i - offset] + own : own;
      __syncthreads();
      src = 1 - src;
    }
    if (i < count) out[i] = Exclusive ? (i > 0 ? buffer[src][i - 1] : T(0)) : buffer[src][i];
    return buffer[src][tile - 1];
    // END SOLUTION
    // STUB: // TODO: 9 steps over a double-buffered tile of 512 in shared memory: in step k every item adds the one 2^k before it.
    // STUB: return T(0);
  }
};

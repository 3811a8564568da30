#pragma once
// Step 2 — Blelloch: a work-efficient tile scan, up-sweep then down-sweep.
//
// Up-sweep: a reduction tree built in place. With stride d = 1, 2, 4, ... the
// item at the end of each 2d-block adds the item at the end of its left half;
// afterwards the last item holds the tile's sum, and the ends of the blocks hold
// the sums of their blocks. Down-sweep: set the last item to 0 and walk the tree
// back down; at each node the left child gets the node's value (the sum of
// everything before the node's block) and the right child that plus the old left
// child (the left half's sum). Every item ends with the sum of the items before
// it: an exclusive scan. 2 x 1023 adds for 1024 items (Hillis-Steele: 10 x 1024),
// two items per thread, but 2 x 10 barriers, and the upper levels of both trees
// keep most of the block idle. A tile scan only: scan_then_propagate.cuh makes
// it scan any n.
#include <cstdint>

struct BlellochTile {
  static constexpr int threads = 512;
  static constexpr int tile = 2 * threads;

  // Item i lives at i + i/32. Without the padding the tree's accesses at stride
  // 2d >= 32 words all fall in one of the 32 banks, and a warp's 32 reads are
  // served one after another; with one spare word per 32 they spread over banks.
  __host__ __device__ static constexpr int padded(int i) { return i + i / 32; }

  template <bool Exclusive, typename T>
  __device__ static T scan_tile(const T* in, T* out, std::int64_t count) {
    // BEGIN SOLUTION blelloch
    __shared__ T items[padded(tile)];
    const int t = threadIdx.x;
    const int a = t, b = t + threads;  // a warp loads 32 consecutive items at a time: coalesced
    const T xa = a < count ? in[a] : T(0);
    const T xb = b < count ? in[b] : T(0);
    items[padded(a)] = xa;
    items[padded(b)] = xb;

    for (int d = 1; d < tile; d *= 2) {
      __syncthreads();
      if (t < tile / (2 * d)) {
        const int right = (2 * t + 2) * d - 1, left = right - d;
        items[padded(right)] = items[padded(left)] + items[padded(right)];
      }
    }
    __syncthreads();
    const T total = items[padded(tile - 1)];
    __syncthreads();  // every thread has read the total before thread 0 replaces it
    if (t == 0) items[padded(tile - 1)] = T(0);

    for (int d = tile / 2; d >= 1; d /= 2) {
      __syncthreads();
      if (t < tile / (2 * d)) {
        const int right = (2 * t + 2) * d - 1, left = right - d;
        const T left_sum = items[padded(left)];
        items[padded(left)] = items[padded(right)];
        items[padded(right)] = items[padded(right)] + left_sum;
      }
    }
    __syncthreads();
    const T before_a = items[padded(a)], before_b = items[padded(b)];
    if (a < count) out[a] = Exclusive ? before_a : before_a + xa;
    if (b < count) out[b] = Exclusive ? before_b : before_b + xb;
    return total;
    // END SOLUTION
    // STUB: // TODO: two items per thread into the padded tile, the up-sweep (a reduction tree in place), the last item set to 0,
    // STUB: // the down-sweep; each item ends with the sum of the items before it. Return the tile's sum.
    // STUB: return T(0);
  }
};

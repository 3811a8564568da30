// CPU test of step 4's split-K plan (wgmma_tma.cuh's split_k_plan): for every
// count of tiles and of k slices up to 300 and several SM counts, the ranges
// the kernel's work units take (range r: slices r·split_slices ..
// min(slices, (r + 1)·split_slices) - 1) must each be non-empty and together
// hold every slice exactly once; a tile is split only when the tiles leave
// SMs idle, never into more units than SMs, and never into ranges shorter
// than min_split_slices. Runs without a GPU (host code only).
#include <cstdio>
#include <vector>

#include "wgmma_tma.cuh"

int main() {
  using wgmma_step::min_split_slices;
  int failures = 0;
  long checked = 0, split = 0;
  for (int sms : {1, 16, 108, 132, 144})
    for (int tiles = 1; tiles <= 300; ++tiles)
      for (int slices = 1; slices <= 300; ++slices) {
        const auto [splits, per] = wgmma_step::split_k_plan(tiles, slices, sms);
        ++checked;
        split += splits > 1;
        const char* why = nullptr;
        if (splits < 1 || per < 1) {
          why = "no range";
        } else if (splits > 1 && tiles * splits > sms) {
          why = "more units than SMs";
        } else if (splits > 1 && per < min_split_slices) {
          why = "a range shorter than min_split_slices";
        } else {
          std::vector<int> taken(static_cast<std::size_t>(slices), 0);
          for (int r = 0; r < splits && !why; ++r) {
            const int first = r * per, last = first + per < slices ? first + per : slices;
            if (first >= last) why = "an empty range";
            for (int s = first; s < last; ++s) ++taken[static_cast<std::size_t>(s)];
          }
          for (int t : taken)
            if (!why && t != 1) why = "a slice in no range, or in two";
        }
        if (why && failures++ < 10)
          std::printf("FAIL: %d SMs, %d tiles, %d slices: %d ranges of %d slices: %s\n", sms, tiles, slices, splits,
                      per, why);
      }
  std::printf("split_k_plan: %ld plans checked (%ld of them split), %d wrong\n", checked, split, failures);
  return failures == 0 ? 0 : 1;
}

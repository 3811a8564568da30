// CPU test of step 4's work schedule (wgmma_tma.cuh), without a GPU:
//   split_k_plan: for every count of tiles and of k slices up to 300 and
//     several SM counts, the k ranges are non-empty and together hold every
//     slice exactly once; a tile is split only when the tiles leave SMs idle,
//     never into more units than SMs, never into ranges shorter than
//     min_split_slices;
//   plan_schedule + Schedule::item: every (tile, slice) of the product is in
//     exactly one worker's item; a tile's items end in exactly one store
//     (or a split-K set of atomic adds), so no tile is stored twice or not at
//     all; a stream-K tail tile is finished by the worker holding its last
//     slice, after exactly `helpers` hand-overs from workers worker - helpers
//     .. worker - 1; a worker hands over at most once (one workspace slot
//     each) and before it waits for anyone (no cycle of waits); tail ranges
//     are at least min_tail_share slices; no more workers than asked;
//   skinny_tile_for: for m = 1 .. 128, the tile's columns are the first of
//     16 .. 128 at or above m; 64-row tiles exactly where the 128-row ones
//     would be split, N >= 32 and k (padded) is a multiple of 64; and the
//     shapes measured on the H100.
#include <cstdio>
#include <vector>

#include "wgmma_tma.cuh"

namespace {

int failures = 0;

void fail(const char* what, int workers, int tiles, int slices, const char* why) {
  if (failures++ < 10) std::printf("FAIL %s: %d workers, %d tiles, %d slices: %s\n", what, workers, tiles, slices, why);
}

void check_split_k(int sms, int tiles, int slices) {
  using wgmma_step::min_split_slices;
  const auto [splits, per] = wgmma_step::split_k_plan(tiles, slices, sms);
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
  if (why) fail("split_k_plan", sms, tiles, slices, why);
}

// Returns whether the schedule has a stream-K tail.
bool check_schedule(int workers, int tiles, int slices) {
  using wgmma_step::Finish;
  const wgmma_step::Schedule plan =
      wgmma_step::plan_schedule(tiles, slices, wgmma_step::split_k_plan(tiles, slices, workers), workers);
  const auto fail_here = [&](const char* why) { fail("plan_schedule", workers, tiles, slices, why); };
  if (plan.workers < 1 || plan.workers > workers || plan.tail_workers > plan.workers) return fail_here("worker count"), false;
  std::vector<int> taken(static_cast<std::size_t>(tiles) * slices, 0);
  std::vector<int> stores(static_cast<std::size_t>(tiles), 0), adds(static_cast<std::size_t>(tiles), 0);
  std::vector<int> handed(static_cast<std::size_t>(tiles), 0), helpers(static_cast<std::size_t>(tiles), -1);
  std::vector<int> collector(static_cast<std::size_t>(tiles), -1), helper_min(static_cast<std::size_t>(tiles), 1 << 30),
      helper_max(static_cast<std::size_t>(tiles), -1);
  for (int w = 0; w < plan.workers; ++w) {
    int hand_overs = 0, tail_slices = 0;
    bool waited = false;
    for (int i = 0; i < plan.items(w); ++i) {
      const wgmma_step::Work work = plan.item(w, i);
      if (work.unit < 0 || work.unit >= tiles || work.first < 0 || work.first >= work.last || work.last > slices)
        return fail_here("an item outside the product, or empty"), false;
      const std::size_t t = static_cast<std::size_t>(work.unit);
      for (int s = work.first; s < work.last; ++s) ++taken[t * slices + s];
      if (work.unit >= plan.whole) tail_slices += work.last - work.first;
      switch (work.finish) {
        case Finish::store: ++stores[t]; break;
        case Finish::atomic_add: ++adds[t]; break;
        case Finish::hand_over:
          if (waited) fail_here("a worker hands over after it waited");
          ++hand_overs, ++handed[t];
          helper_min[t] = std::min(helper_min[t], w), helper_max[t] = std::max(helper_max[t], w);
          break;
        case Finish::collect:
          if (work.last != slices) fail_here("a tile collected by a worker without its last slice");
          ++stores[t], collector[t] = w, helpers[t] = work.helpers, waited = true;
          break;
      }
    }
    if (hand_overs > 1) fail_here("a worker hands over twice (one workspace slot each)");
    if (w < plan.tail_workers && tail_slices < wgmma_step::min_tail_share) fail_here("a tail range under min_tail_share");
  }
  for (int v : taken)
    if (v != 1) return fail_here("a slice in no item, or in two"), false;
  for (std::size_t t = 0; t < stores.size(); ++t) {
    const bool split = plan.splits > 1;
    if (split ? (adds[t] != plan.splits || stores[t] != 0) : (stores[t] != 1 || adds[t] != 0))
      return fail_here("a tile stored twice, never, or both stored and added"), false;
    if (handed[t] > 0 && (collector[t] < 0 || helpers[t] != handed[t] || helper_max[t] != collector[t] - 1 ||
                          helper_min[t] != collector[t] - helpers[t]))
      return fail_here("hand-overs that do not match the collector's helpers"), false;
    if (handed[t] == 0 && helpers[t] > 0) return fail_here("a collector waiting for hand-overs nobody makes"), false;
  }
  return plan.tail_workers > 0;
}

void check_skinny_tile(int sms, int m, int n, int padded_k) {
  const auto [rows, cols] = wgmma_step::skinny_tile_for(m, n, padded_k, sms);
  const int slices = cudalabs::ceil_div(padded_k, wgmma_step::tile_k);
  const bool split = wgmma_step::split_k_plan(cudalabs::ceil_div(n, 128), slices, sms).splits > 1;
  // 64-row tiles exactly where the 128-row ones are split, N >= 32 and the rows are 128-byte multiples.
  const bool want64 = split && cols >= 32 && padded_k % 64 == 0;
  const char* why = nullptr;
  if (cols < m || (cols > 16 && cols / 2 >= m) || (cols != 16 && cols != 32 && cols != 64 && cols != 128))
    why = "the columns are not the first of 16 .. 128 at or above m";
  else if (rows != 64 && rows != 128)
    why = "rows neither 64 nor 128";
  else if (rows == 64 && !want64)
    why = "64-row tiles where the 128-row ones are not split, N = 16, or rows not 128-byte multiples";
  else if (rows == 128 && want64)
    why = "128-row tiles split where 64-row tiles were measured faster";
  if (why && failures++ < 10)
    std::printf("FAIL skinny_tile_for: %d SMs, m = %d, n = %d, k = %d: %s (%d x %d)\n", sms, m, n, padded_k, why, rows, cols);
}

}  // namespace

int main() {
  long checked = 0, tails = 0;
  for (int sms : {1, 16, 66, 108, 132, 144})
    for (int tiles = 1; tiles <= 300; ++tiles)
      for (int slices = 1; slices <= 300; slices += (slices < 40 ? 1 : 7)) {
        check_split_k(sms, tiles, slices);
        tails += check_schedule(sms, tiles, slices);
        ++checked;
      }
  // The shapes measured on the H100 (wgmma_tma.cuh, min_idle_slices): stream-K for 8192³ (1024 bands on 66
  // pairs), 4104³ (561 tiles on 132 SMs) and 1280 × 2560 × 8192 (50 bands); none for 4096³ (256 bands) and
  // 2000 × 4400 × 1000 (144 bands of 16 slices), where it measured slower.
  struct Shape {
    int tiles, slices, workers;
    bool tail;
  };
  for (const Shape& s : {Shape{1024, 128, 66, true}, Shape{561, 65, 132, true}, Shape{50, 128, 66, true},
                         Shape{256, 64, 66, false}, Shape{144, 16, 66, false}})
    if (check_schedule(s.workers, s.tiles, s.slices) != s.tail)
      fail("plan_schedule", s.workers, s.tiles, s.slices, s.tail ? "no stream-K tail" : "a stream-K tail where it measured slower");
  long skinny = 0;
  for (int sms : {16, 66, 132, 144})
    for (int m = 1; m <= 128; ++m)
      for (int n : {1, 100, 1000, 2048, 4096, 8192, 8193, 14336, 16384})
        for (int padded_k : {8, 64, 256, 1000, 1024, 4096, 4104, 4160, 8192, 16384}) check_skinny_tile(sms, m, n, padded_k), ++skinny;
  // The decode shapes measured on the H100 (132 SMs; wgmma_tma.cuh, skinny_tile_for).
  struct Decode {
    int m, n, k, rows, cols;
  };
  for (const Decode& d : {Decode{128, 8192, 8192, 64, 128}, Decode{64, 8192, 8192, 64, 64}, Decode{32, 8192, 8192, 64, 32},
                          Decode{16, 8192, 8192, 128, 16}, Decode{128, 4096, 4096, 64, 128}, Decode{128, 4096, 4104, 128, 128},
                          Decode{114, 7248, 3648, 64, 128}, Decode{114, 7248, 3656, 128, 128}, Decode{48, 4096, 4096, 64, 64},
                          Decode{16, 4096, 4096, 128, 16}, Decode{128, 14336, 4096, 128, 128}}) {
    const auto [rows, cols] = wgmma_step::skinny_tile_for(d.m, d.n, d.k, 132);
    if ((rows != d.rows || cols != d.cols) && failures++ < 10)
      std::printf("FAIL skinny_tile_for: %d x %d x %d: %d x %d, not the %d x %d measured fastest\n", d.m, d.n, d.k, rows,
                  cols, d.rows, d.cols);
  }
  std::printf("work schedule: %ld shapes checked (%ld with a stream-K tail), %ld skinny tile choices, %d wrong\n",
              checked, tails, skinny, failures);
  return failures == 0 ? 0 : 1;
}

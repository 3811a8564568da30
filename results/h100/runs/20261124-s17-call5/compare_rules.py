#!/usr/bin/env python3
"""Session 17: which skinny-tile rule picks the faster tile, over the shapes where
calls 1, 2, 4 and 5 timed 128-row and 64-row tiles (CUDA-graph times, median of
the three alternated runs; call 3 left out: its k were not multiples of 8, so
the padding copies dominated). Run from results/h100/runs/.

Prints each shape with both times and each rule's choice, then per rule the
geometric mean of (chosen tile's time / faster tile's time), the worst ratio,
and how many shapes it picks a tile more than 2% slower. The split plan is
split_k_plan's (wgmma_tma.cuh) on 132 SMs, 64-wide k slices."""
import json, math, statistics
from collections import defaultdict

def cdiv(a, b): return -(-a // b)

def splits(tiles, slices, sms=132, min_split_slices=4):
    wanted = max(1, min(sms // tiles, slices // min_split_slices))
    return cdiv(slices, cdiv(slices, wanted))

def cols(m):
    c = 16
    while c < m: c *= 2
    return c

times = defaultdict(lambda: defaultdict(list))
def load(path, rows):
    for line in open(path):
        r = json.loads(line)
        if r["variant"] == "wgmma_tma":
            s = r["size"]
            times[(s["m"], s["n"], s["k"])][rows].append(r.get("no_gap_ms", r["median_ms"]) * 1000)
load("20261124-s17-call1/ab_old.jsonl", 128)   # LAB30_TILE=128
load("20261124-s17-call1/ab_new.jsonl", 64)    # ae927e7's rule: 64 rows at each of call 1's shapes
for call in ("20261124-s17-call2", "20261124-s17-call4", "20261124-s17-call5"):
    load(call + "/ab_128.jsonl", 128)
    load(call + "/ab_64.jsonl", 64)

rules = {  # every shape here has the 128-row tiles split and N >= 32
    "session 15 (64 rows where they remove the split)": lambda m, n, k: 64 if splits(cdiv(n, 64), cdiv(k, 64)) == 1 else 128,
    "64 rows wherever split": lambda m, n, k: 64,
    "64 rows where split and k % 64 == 0 (9bf2406)": lambda m, n, k: 64 if k % 64 == 0 else 128,
    "always 128 rows": lambda m, n, k: 128,
}
ratios = defaultdict(list)
for shape, t in sorted(times.items()):
    med = {rows: statistics.median(v) for rows, v in t.items()}
    best = min(med.values())
    picks = []
    for name, rule in rules.items():
        rows = rule(*shape)
        ratios[name].append(med[rows] / best)
        picks.append(str(rows))
    print("%4d x %5d x %5d  k %% 64 = %2d  128 rows %6.1f us  64 rows %6.1f us  picks %s"
          % (*shape, shape[2] % 64, med[128], med[64], " ".join(picks)))
print("%d shapes" % len(times))
for name, r in ratios.items():
    gm = math.exp(sum(map(math.log, r)) / len(r))
    print("%-50s mean %.3f  worst %.2f  slower pick at %d" % (name, gm, max(r), sum(x > 1.02 for x in r)))

#!/usr/bin/env bash
# Lab 32 split by topic: the same records at the same seed as the commit before the split.
# Runs from the repository root on a 2-GPU H200 machine, after
#   meson setup build -Dgpu_arch=9.0 && ninja -C build
# Writes under $OUT: after.jsonl, before.jsonl (the records), after.txt, before.txt (the
# console output), compare.txt (per record: passed and error fields identical?, and the
# console text compared with every number masked). About 3 minutes.
set -u
OUT=${OUT:-/tmp/lab32check}
mkdir -p "$OUT"
BEFORE_COMMIT=$(git rev-parse --verify b179657^{commit}) || { echo "devcheck: commit b179657 (before the split) is not in this checkout's git history"; exit 1; }
LAB=labs/32_multi_gpu/32_multi_gpu
QUICK=(--quick --seed 7)
FULL=(--bytes 67108864 --gemm 8192x8192x8192 --seed 7)

runs() {  # runs DIR NAME: both runs of DIR's program, records to $OUT/NAME.jsonl, console to $OUT/NAME.txt
  local dir=$1 name=$2
  rm -f "$OUT/$name.jsonl"
  { echo "== --quick"; "$dir/build/$LAB" "${QUICK[@]}" --json "$OUT/$name.jsonl"; echo "exit $?"
    echo "== full size"; "$dir/build/$LAB" "${FULL[@]}" --json "$OUT/$name.jsonl"; echo "exit $?"; } > "$OUT/$name.txt" 2>&1
  tail -n 3 "$OUT/$name.txt"
}

[ -d build ] || meson setup build -Dgpu_arch=9.0 > /dev/null
ninja -C build "$LAB" > "$OUT/build_after.log" 2>&1 || { tail -20 "$OUT/build_after.log"; exit 1; }
echo "== after (this branch, $(git rev-parse --short HEAD))"
runs . after

echo "== before ($BEFORE_COMMIT)"
rm -rf /tmp/before
git worktree add --detach /tmp/before "$BEFORE_COMMIT" > /dev/null 2>&1 || { echo "devcheck: git worktree add failed"; exit 1; }
(cd /tmp/before && meson setup build -Dgpu_arch=9.0 > /dev/null && ninja -C build "$LAB" > "$OUT/build_before.log" 2>&1) \
  || { tail -20 "$OUT/build_before.log"; exit 1; }
runs /tmp/before before
git worktree remove --force /tmp/before

python3 - "$OUT" <<'PY' | tee "$OUT/compare.txt"
import json, re, sys
out = sys.argv[1]
fields = ("passed", "max_abs_err", "rel_err", "tolerance", "tolerance_rel", "checks", "seed", "fresh_seed", "extra")
def load(name):
    recs = {}
    for line in open(f"{out}/{name}.jsonl"):
        r = json.loads(line)
        key = r["variant"] + " " + " ".join(f"{k}={v}" for k, v in sorted(r["size"].items()))
        recs.setdefault(key, []).append({f: r.get(f) for f in fields})
    return recs
before, after = load("before"), load("after")
same = 0
for key in sorted(set(before) | set(after)):
    b, a = before.get(key), after.get(key)
    ok = a == b
    same += ok
    passed = a[0]["passed"] if a else None
    print(f"{'same' if ok else 'DIFFERENT'}  {key}  passed={passed}" + ("" if ok else f"\n    before {b}\n    after  {a}"))
def mask(path):  # the text without its numbers (times, rates) and git revisions
    return [re.sub(r"\d+(\.\d+)?", "#", re.sub(r"\b[0-9a-f]{7,40}\b", "REV", l)) for l in open(path)]
text_same = mask(f"{out}/before.txt") == mask(f"{out}/after.txt")
total = len(set(before) | set(after))
print(f"SUMMARY: {same}/{total} records with identical passed and error fields "
      f"({sum(r[0]['passed'] is True for r in after.values())} passed after); "
      f"console text with numbers masked {'identical' if text_same else 'different (timing marks can differ: diff before.txt after.txt)'}")
PY

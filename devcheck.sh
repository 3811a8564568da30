#!/usr/bin/env bash
# GPU check of the house branch (run from the repository root after
# `meson setup build -Dgpu_arch=9.0 && ninja -C build`). About 3 minutes.
#
# 1. The GPU tests (no sanitizers) of every lab whose includes moved to labs/shared/
#    or whose attention headers got internal linkage.
# 2. Same results at the same seed: labs 15, 16, 17, 31 run at sizes that
#    results/h100/records.jsonl holds (seed 42), and each record's checked
#    numbers (max_abs_err, rel_err, passed) compared with the
#    recorded ones. Only the linkage of the kernels changed, so the errors
#    should be identical where the kernel itself is as it was at the record's
#    commit (the record's "git" is printed beside any difference).
set -u
OUT=${OUT:-/tmp/devcheck-out}
mkdir -p "$OUT"
B=build/labs

suites=""
for l in 03_pcie_truth 08_streams 12_softmax 15_attention_forward 16_flash_attention 17_multi_head_attention \
         19_driver_api 20_nvrtc_jit 22_stencil 23_unified_memory 24_histogram 25_scan 31_flash_attention_hopper; do
  suites="$suites --suite $l"
done
(cd build && timeout 110 meson test --no-rebuild $suites --no-suite sanitizer --num-processes 4) > "$OUT/tests.txt" 2>&1
echo "meson test rc=$?" >> "$OUT/tests.txt"
tail -12 "$OUT/tests.txt"

J="$OUT/records.jsonl"
rm -f "$J"
{
  timeout 30 $B/15_attention_forward/15_attention_forward --seq 512,1024 --json "$J"; echo "15 rc=$?"
  timeout 30 $B/16_flash_attention/16_flash_attention --seq 1024 --dim 64,128 --json "$J"; echo "16 rc=$?"
  timeout 30 $B/16_flash_attention/16_flash_attention --seq 1024 --dim 64,128 --causal --json "$J"; echo "16 causal rc=$?"
  timeout 60 $B/17_multi_head_attention/17_multi_head_attention --json "$J"; echo "17 rc=$?"
  timeout 40 $B/31_flash_attention_hopper/31_flash_attention_hopper --seq 1024 --json "$J"; echo "31 rc=$?"
} > "$OUT/runs.txt" 2>&1
grep -E 'rc=|FAIL|results correct' "$OUT/runs.txt"

python3 - "$J" results/h100/records.jsonl > "$OUT/compare.txt" <<'EOF'
import json, sys
def key(r):
    # Flags added since a record was made are absent from it: match on --causal only.
    return (r["lab"], r["variant"], json.dumps(r["size"], sort_keys=True), r.get("flags", {}).get("causal", "0"))
new = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
old = {key(r): r for r in (json.loads(l) for l in open(sys.argv[2]) if l.strip())}
same = differ = missing = 0
for r in new:
    o = old.get(key(r))
    if o is None:
        missing += 1
        continue
    a = (r.get("max_abs_err"), r.get("rel_err"), r.get("passed"))
    b = (o.get("max_abs_err"), o.get("rel_err"), o.get("passed"))
    if a == b:
        same += 1
    else:
        differ += 1
        print(f"DIFFERS {r['lab']} {r['variant']} {r['size']} now {a} recorded {b} (recorded at git {o.get('git')})")
print(f"{same} records identical in their checked numbers, {differ} differ, {missing} with no recorded twin")
EOF
tail -15 "$OUT/compare.txt"

#!/usr/bin/env bash
# Same records before and after: the labs this branch touches, run with
# --quick --seed 7 --json on the old tree (base/, built here) and on this one
# (build/, already built), records compared without their timing fields.
# Writes $OUT/identity.txt (the table) and $OUT/devcheck.log.
set -u
OUT=${OUT:-/tmp/devcheck_out}
mkdir -p "$OUT"
LOG="$OUT/devcheck.log"
exec > >(tee -a "$LOG") 2>&1

# Most changed first: a lab whose old build is not ready within the budget is
# reported as not compared, never as identical.
LABS=(01_vector_add 02_timed_vector_add 29_llm_decode 28_tuning 07_reduction_v3 21_transpose
      04_reduction 06_reduction_v2 26_cooperative_groups 05_matmul 09_template_matmul 10_vectorized_matmul
      11_register_blocked_matmul 18_matmul_cublas_gap 12_softmax 13_attention_scores 14_attention_output
      15_attention_forward 32_multi_gpu 30_tensor_core_gemm 16_flash_attention 17_multi_head_attention
      31_flash_attention_hopper)

if [ ! -d base ]; then echo "devcheck: base/ (the old tree, commit 81e3577) is missing"; exit 2; fi
[ -f build/build.ninja ] || meson setup build -Dgpu_arch=9.0 >/dev/null
ninja -C build $(for l in "${LABS[@]}"; do echo "labs/$l/$l"; done) >/dev/null || echo "devcheck: this tree did not build every lab"
meson setup /tmp/bb base -Dgpu_arch=9.0 >/dev/null || { echo "devcheck: meson setup of base/ failed"; exit 1; }
timeout 150 ninja -C /tmp/bb -k 0 $(for l in "${LABS[@]}"; do echo "labs/$l/$l"; done) >"$OUT/base_build.txt" 2>&1
echo "base build: rc $? (150 s budget)"

rm -rf /tmp/rec && mkdir -p /tmp/rec
for l in "${LABS[@]}"; do
  # Within the 4-minute budget: the labs left are reported as not compared.
  if [ "$SECONDS" -gt 220 ]; then echo "time budget spent: $l and the labs after it not run"; break; fi
  for tree in base new; do
    dir=/tmp/bb; [ "$tree" = new ] && dir=build
    prog="$dir/labs/$l/$l"
    if [ -x "$prog" ]; then
      timeout 60 "$prog" --quick --seed 7 --json "/tmp/rec/$tree.$l.jsonl" >"/tmp/rec/$tree.$l.out" 2>&1
      echo $? >"/tmp/rec/$tree.$l.rc"
    fi
  done
done

python3 - "${LABS[@]}" >"$OUT/identity.txt" <<'EOF'
import json, sys
from pathlib import Path
# What changes from run to run, or names the build: everything timed or
# derived from a time, the ceiling measured in the same run, the revision.
TIMING = {"runs", "gbps", "gflops", "pct_of_ceiling", "vs_baseline", "ceiling_value", "stop", "no_gap_batch",
          "suspect", "implausible", "throttled", "power_capped", "clocks", "timestamp", "git", "git_dirty",
          "speedup", "occupancy_measured"}
def strip(x):
    if isinstance(x, dict):
        return {k: strip(v) for k, v in x.items() if k not in TIMING and not k.endswith(("_ms", "_gbps", "_gflops", "_us"))}
    if isinstance(x, list):
        return [strip(v) for v in x]
    return x
def load(p):
    return [strip(json.loads(l)) for l in p.read_text().splitlines() if l.strip()] if p.is_file() else None
rec = Path("/tmp/rec")
print(f"{'lab':<28} {'exit old/new':<13} {'records old/new':<16} result")
bad = 0
for lab in sys.argv[1:]:
    rc = lambda t: (rec / f"{t}.{lab}.rc").read_text().strip() if (rec / f"{t}.{lab}.rc").is_file() else "-"
    old, new = load(rec / f"base.{lab}.jsonl"), load(rec / f"new.{lab}.jsonl")
    if old is None or new is None:
        verdict = "NOT COMPARED (" + ("no records from the old build" if old is None else "no records from the new build") + ")"
    elif rc("base") != rc("new"):
        verdict, bad = "DIFFERENT exit code", bad + 1
    elif old == new:
        verdict = "identical"
    else:
        bad += 1
        diffs = [f"record {i}: " + ", ".join(sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k)))
                 for i, (a, b) in enumerate(zip(old, new)) if a != b]
        verdict = f"DIFFERENT ({len(old)} vs {len(new)} records; " + "; ".join(diffs[:3]) + ")"
    print(f"{lab:<28} {rc('base') + '/' + rc('new'):<13} {str(len(old or [])) + '/' + str(len(new or [])):<16} {verdict}")
print(f"\n{bad} lab(s) differ")
EOF
cat "$OUT/identity.txt"
# The new tree's sweep path (lab 02's float4 through Tuner::run_grid_stride), one small sweep:
build/labs/02_timed_vector_add/02_timed_vector_add --quick --seed 7 --variant float4 --sweep "block=128,256 blocks_per_sm=0,2" \
  >"$OUT/sweep02.txt" 2>&1; echo "lab 02 sweep: rc $?" | tee -a "$OUT/sweep02.txt"

#!/usr/bin/env bash
# The timed runs checked right after they ran, on one H200. From the repository
# root, after: meson setup build -Dgpu_arch=9.0 && ninja -C build
# 1. every lab's --quick (01-31 and 33; 32 needs several GPUs), one line per lab
#    with its exit code and wall time, its records in $OUT/quick.jsonl, the
#    FAIL lines and every run's end in $OUT/quick.log;
# 2. lab 02 --quick --evidence, then its judge on that evidence (the judged
#    records in $OUT/judged.jsonl), to see the judge count the same checks;
# 3. the two broken cases caught by the checks of the timed runs, graded.
# Under 8 minutes: each lab at most 30 s, the labs together at most 210 s, the
# grading tests 200 s (rc=124 there: run them alone, they have no other limit).
set -u
OUT=$(realpath -m "${OUT:-/tmp/devcheck-out}")
mkdir -p "$OUT"
summary="$OUT/summary.txt"
: > "$summary"
start=$SECONDS
for dir in labs/[0-9][0-9]_*/; do
  lab=$(basename "$dir")
  case "$lab" in 32_*) continue ;; esac
  prog="build/labs/$lab/$lab"
  if [ ! -x "$prog" ]; then echo "$lab rc=missing" >> "$summary"; continue; fi
  if (( SECONDS - start > 210 )); then echo "$lab rc=not-run (210 s budget spent)" >> "$summary"; continue; fi
  t0=$(date +%s.%N)
  timeout 30 "$prog" --quick --json "$OUT/quick.jsonl" > "$OUT/lab.log" 2>&1
  rc=$?
  t1=$(date +%s.%N)
  awk -v l="$lab" -v r="$rc" -v a="$t0" -v b="$t1" 'BEGIN { printf "%s rc=%s wall=%.1fs\n", l, r, b - a }' >> "$summary"
  { echo "== $lab rc=$rc"; grep -E "FAIL|output of the timed runs|error" "$OUT/lab.log" | head -20; tail -3 "$OUT/lab.log"; } >> "$OUT/quick.log"
done
# How many timed runs were checked, per record (the new field).
python3 - "$OUT/quick.jsonl" >> "$summary" <<'EOF'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
timed = [r for r in recs if r.get("timed")]
with_checks = [r for r in timed if r.get("timed_runs_checked")]
print(f"records {len(recs)}, timed {len(timed)}, with timed_runs_checked {len(with_checks)}")
if with_checks:
    n = sorted(r["timed_runs_checked"] for r in with_checks)
    runs = sorted(r["runs"] for r in with_checks)
    print(f"timed_runs_checked min {n[0]} median {n[len(n)//2]} max {n[-1]}; runs min {runs[0]} median {runs[len(runs)//2]} max {runs[-1]}")
print("failed:", [(r["lab"], r["variant"], r.get("failure", "")[:160]) for r in recs if not r.get("passed")])
EOF
# The judge of lab 02 on its own evidence: the same number of timed-run checks.
p=build/labs/02_timed_vector_add/02_timed_vector_add
rm -rf "$OUT/ev"
timeout 30 "$p" --quick --seed 5 --evidence "$OUT/ev" --json "$OUT/graded.jsonl" > /dev/null 2>&1; echo "lab 02 graded rc=$?" >> "$summary"
timeout 30 "$p" --quick --seed 5 --judge "$OUT/ev" --json "$OUT/judged.jsonl" > /dev/null 2>&1; echo "lab 02 judge rc=$?" >> "$summary"
python3 - "$OUT/graded.jsonl" "$OUT/judged.jsonl" >> "$summary" <<'EOF'
import json, sys
g = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
j = [json.loads(l) for l in open(sys.argv[2]) if l.strip()]
for a, b in zip(g, j):
    print(a["variant"], a["size"], "graded", a.get("timed_runs_checked"), a["passed"], "judge", b.get("timed_runs_checked"), b["passed"])
EOF
rm -rf "$OUT/ev"
echo "labs and judge: $((SECONDS - start)) s" >> "$summary"
cd build && timeout 200 meson test --no-rebuild "grader rejects broken alternate_runs_skip_work" \
  "grader rejects broken timed_runs_skip_work" > "$OUT/grading.log" 2>&1
echo "grading tests rc=$?" >> "$summary"
tail -c 300000 meson-logs/testlog.txt > "$OUT/testlog.txt" 2>/dev/null
rm -f "$OUT/lab.log"
tail -15 "$OUT/grading.log" >> "$summary"
echo "total: $((SECONDS - start)) s" >> "$summary"
cat "$summary"

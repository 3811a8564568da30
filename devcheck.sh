#!/usr/bin/env bash
# One H200, from the repository root, after
#   meson setup build -Dgpu_arch=9.0 && ninja -C build -j64
# Lab 33 with the 1x128 activation scales stored k-major ([k_blocks][m]):
# correctness (--quick, the grader's edge shapes, cuBLASLt's block scaling
# reading the lab's scales as they are), times at 8192^3 and 4096x7168x16384,
# compute-sanitizer memcheck. Under 4 minutes (about 2.5 expected).
# Kept in $OUT: summary.txt, check.txt, bench.txt, records.jsonl,
# lt_block.jsonl, memcheck.txt.
set -u
OUT=${OUT:-/tmp/devcheck_out}
mkdir -p "$OUT"
LAB=build/labs/33_fp8_gemm/33_fp8_gemm
EDGE=(--m 1,7,33,129,300,1000 --n 1,9,257,130,301,3001 --k 16,144,48,272,4112,1008)  # tools/grading.toml
BIG=(--m 8192,4096 --n 8192,7168 --k 8192,16384)  # 8192^3 and 4096x7168x16384 (lists pair up)
{
  echo "commit $(git rev-parse --short HEAD 2>/dev/null) dirty=$(git status --porcelain 2>/dev/null | grep -vc '^??')"
  nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader
} > "$OUT/summary.txt"

# run NAME LIMIT_S LOG CMD...: appends CMD's output to LOG and one line to summary.txt.
run() {
  local name=$1 limit=$2 log=$3
  shift 3
  local start=$SECONDS
  echo "== $name: $*" >> "$log"
  timeout "$limit" "$@" >> "$log" 2>&1
  local rc=$?
  echo "rc=$rc $name ($((SECONDS - start)) s): $*" | tee -a "$OUT/summary.txt"
}

run quick 40 "$OUT/check.txt" "$LAB" --quick --check-only
run quick_lt_block 30 "$OUT/check.txt" "$LAB" --quick --check-only --variant cublaslt_fp8_block,block_scaled
run edge 45 "$OUT/check.txt" "$LAB" "${EDGE[@]}" --check-only
run edge_lt_block 30 "$OUT/check.txt" "$LAB" "${EDGE[@]}" --check-only --variant cublaslt_fp8_block,block_scaled
echo "FAIL lines in check.txt: $(grep -c FAIL "$OUT/check.txt")" | tee -a "$OUT/summary.txt"

run timed 90 "$OUT/bench.txt" "$LAB" "${BIG[@]}" --variant cublaslt_fp8,per_tensor,promoted,block_scaled \
  --json "$OUT/records.jsonl"
run timed_lt_block 70 "$OUT/bench.txt" "$LAB" "${BIG[@]}" --variant cublaslt_fp8_block,block_scaled \
  --json "$OUT/lt_block.jsonl"

run memcheck 60 "$OUT/memcheck.txt" compute-sanitizer --tool memcheck --error-exitcode 9 "$LAB" \
  --m 131 --n 257 --k 144 --check-only \
  --variant cublaslt_fp8,quantisation,per_tensor,promoted,block_scaled,cublaslt_fp8_block

# Rates as ratios of median times (x > 1: block_scaled faster), per file and shape.
python3 - "$OUT/records.jsonl" "$OUT/lt_block.jsonl" <<'EOF' | tee -a "$OUT/summary.txt"
import json, os, sys
for path in sys.argv[1:]:
    if not os.path.exists(path):
        print(f"{os.path.basename(path)}: no records"); continue
    rows = [json.loads(l) for l in open(path) if l.strip()]
    shapes = sorted({(r["size"]["m"], r["size"]["n"], r["size"]["k"]) for r in rows}, reverse=True)
    for m, n, k in shapes:
        at = {r["variant"]: r for r in rows if (r["size"]["m"], r["size"]["n"], r["size"]["k"]) == (m, n, k)}
        mine = at.get("block_scaled")
        if not mine or not mine.get("timed"):
            print(f"{os.path.basename(path)} {m}x{n}x{k}: no timed block_scaled record"); continue
        for base in ("cublaslt_fp8", "cublaslt_fp8_block"):
            b = at.get(base)
            if not b or not b.get("timed"):
                continue
            print(f"{os.path.basename(path)} {m}x{n}x{k}: block_scaled / {base} = "
                  f"{b['median_ms'] / mine['median_ms']:.3f}x the rate ({mine['median_ms']:.4f} ms against "
                  f"{b['median_ms']:.4f} ms; passed {mine['passed']} / {b['passed']})")
EOF

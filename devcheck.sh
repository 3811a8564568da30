#!/usr/bin/env bash
# One H200, from the repository root, after
#   meson setup build -Dgpu_arch=9.0 && ninja -C build -j64
# Lab 33 with step 4's activation scales staged by the producer: one TMA load
# of 128 floats per stage into shared memory beside A's tile, read by the
# consumers from there (block_scaled_fp8.cuh). Correctness (--quick, the
# grader's edge shapes, odd m over several row tiles and k-blocks, cuBLASLt's
# block scaling on the same scales), times at 8192^3 and 4096x7168x16384,
# compute-sanitizer memcheck (odd m, k = 144 and 400), synccheck, racecheck
# and initcheck, the kernels' registers. Under 4 minutes (about 3 expected).
# Kept in $OUT: summary.txt, check.txt, bench.txt, records.jsonl,
# lt_block.jsonl, sanitizer.txt, resources.txt.
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
# Odd m across row tiles and k-blocks (a tile's scale box runs past m into the next k-block),
# k not a multiple of 128, one row: where the staged scales could go wrong.
run odd_m 40 "$OUT/check.txt" "$LAB" --m 131,255,1,385 --n 257,129,130,1 --k 400,1040,272,144 --check-only \
  --variant promoted,block_scaled,cublaslt_fp8_block
echo "FAIL lines in check.txt: $(grep -c FAIL "$OUT/check.txt")" | tee -a "$OUT/summary.txt"

run timed 90 "$OUT/bench.txt" "$LAB" "${BIG[@]}" --variant cublaslt_fp8,per_tensor,promoted,block_scaled \
  --json "$OUT/records.jsonl"
run timed_lt_block 70 "$OUT/bench.txt" "$LAB" "${BIG[@]}" --variant cublaslt_fp8_block,block_scaled \
  --json "$OUT/lt_block.jsonl"

run memcheck 70 "$OUT/sanitizer.txt" compute-sanitizer --tool memcheck --error-exitcode 9 "$LAB" \
  --m 131,131,7 --n 257,257,9 --k 144,400,16 --check-only \
  --variant cublaslt_fp8,quantisation,per_tensor,promoted,block_scaled,cublaslt_fp8_block
for tool in synccheck racecheck initcheck; do  # the stage's scales: written by TMA, read by the consumers
  run "$tool" 40 "$OUT/sanitizer.txt" compute-sanitizer --tool "$tool" --error-exitcode 9 "$LAB" \
    --m 131 --n 257 --k 400 --check-only --variant block_scaled
done

# Registers: cuobjdump's resource usage and each promoted-kernel instance's highest register
# (the consumers' setmaxnreg limit is 232), local memory traffic, scale loads per kernel.
OBJ=$(find build/labs/33_fp8_gemm -name 'kernels_hopper.cu.o' | head -1)
if command -v cuobjdump > /dev/null && [ -n "$OBJ" ]; then
  cuobjdump -res-usage "$OBJ" > "$OUT/resources.txt" 2>&1
  cuobjdump -sass -arch sm_90a "$OBJ" > /tmp/devcheck_kernels.sass 2>&1
  python3 - /tmp/devcheck_kernels.sass <<'EOF' | tee -a "$OUT/resources.txt" "$OUT/summary.txt"
import re, sys
name, top, ops = None, {}, {}
for line in open(sys.argv[1]):
    m = re.search(r"Function : (\S+)", line)
    if m:
        name = m.group(1); top[name] = -1; ops[name] = {}
        continue
    m = re.search(r"/\*[0-9a-f]{4}\*/\s+(@!?U?P\w+\s+)?([A-Z][A-Z0-9_]+)", line)
    if name and m:
        ops[name][m.group(2)] = ops[name].get(m.group(2), 0) + 1
        for r in re.findall(r"\bR(\d+)\b", line):
            top[name] = max(top[name], int(r))
for f in top:
    if "promoted_kernel" in f:
        n = lambda op: ops[f].get(op, 0)
        print(f"{f[:70]}: highest register R{top[f]}, LDL/STL {n('LDL') + n('STL')}, LDS {n('LDS')}, "
              f"LDG {n('LDG')}, UTMALDG {n('UTMALDG')}, instructions {sum(ops[f].values())}")
EOF
else
  echo "resources: no cuobjdump or no kernels_hopper.cu.o" | tee -a "$OUT/summary.txt"
fi

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

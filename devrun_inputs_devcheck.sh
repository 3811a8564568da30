#!/usr/bin/env bash
# GPU checks of the inputs-beyond-the-comfortable-range work and of lab 19's student file.
# Run from the repository root after `meson setup build -Dgpu_arch=9.0 && ninja -C build`.
# Writes $OUT/devcheck.log (everything) and $OUT/summary.txt (one line per check).
set -u
OUT=${OUT:-/tmp/devcheck-out}
mkdir -p "$OUT"
LOG=$OUT/devcheck.log
SUMMARY=$OUT/summary.txt
: >"$LOG"
: >"$SUMMARY"
ninja -C build >>"$LOG" 2>&1 || { echo "build FAILED" | tee -a "$SUMMARY"; }

check() {  # check NAME EXPECTED_RC COMMAND...
  local name=$1 want=$2
  shift 2
  echo "=== $name: $*" >>"$LOG"
  local start=$SECONDS
  timeout 300 "$@" >>"$LOG" 2>&1
  local rc=$?
  local verdict=ok
  [ "$rc" = "$want" ] || verdict="UNEXPECTED (wanted $want)"
  echo "$name rc=$rc $verdict $((SECONDS - start))s" | tee -a "$SUMMARY"
}

# Each changed lab: its new named runs (tools/grading.toml) with --check-only, then --quick.
declare -A NEW_RUNS=(
  [02_timed_vector_add]="specials"
  [04_reduction]="inf nan nonpositive"
  [06_reduction_v2]="inf nan nonpositive"
  [07_reduction_v3]="inf inf_unaligned nan nonpositive"
  [21_transpose]="specials"
  [24_histogram]="out_of_range"
  [25_scan]="positive positive_int_exclusive nonpositive nonpositive_int"
  [26_cooperative_groups]="inf nan nonpositive nonpositive_three_blocks"
  [19_driver_api]="edge"
)
for lab in 02_timed_vector_add 04_reduction 06_reduction_v2 07_reduction_v3 21_transpose 24_histogram 25_scan \
           26_cooperative_groups 19_driver_api; do
  prog=build/labs/$lab/$lab
  for run in ${NEW_RUNS[$lab]}; do
    mapfile -t args < <(python3 tools/lab_runs.py "$lab" | awk -F'\t' -v r="$run" '$1 == r { for (i = 2; i <= NF; i++) print $i }')
    check "$lab $run" 0 "$prog" "${args[@]}" --check-only
  done
  check "$lab --quick" 0 "$prog" --quick
done

# Lab 19's device code audited from its PTX (accepted for the course's own kernels).
check "audit 19" 0 python3 tools/grader/audit.py --build build --labs 19

# Lab 19 graded as a submission: the course's own device_kernels.cuh (full correctness points),
# then one whose vector add drops the last element (0 points: the judge fails it).
SUB=$(mktemp -d)
WORK=$(mktemp -d)
mkdir -p "$SUB/good/19_driver_api" "$SUB/bad/19_driver_api"
cp labs/19_driver_api/device_kernels.cuh "$SUB/good/19_driver_api/"
cat >"$SUB/bad/19_driver_api/device_kernels.cuh" <<'EOF'
#pragma once
#include <cstdint>
// Drops the last element: right on every size but where it matters.
__global__ void vector_add_kernel(const float* a, const float* b, float* c, std::int64_t n) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i + 1 < n) c[i] = a[i] + b[i];
}
#include "../05_matmul/tiled_matmul.cuh"
EOF
check "grade 19 good submission" 0 python3 tools/grade.py --build build --submission "$SUB/good" --labs 19 --seed 5 \
  --no-sanitize --correctness-only --work "$WORK"
grep -E "19_driver_api|correctness|total" "$LOG" | tail -5 >>"$SUMMARY"
check "grade 19 bad submission (expect lab 19 scored 0)" 1 python3 tools/grade.py --build build --submission "$SUB/bad" \
  --labs 19 --seed 5 --no-sanitize --correctness-only --work "$WORK"
grep -E "19_driver_api|correctness|total" "$LOG" | tail -5 >>"$SUMMARY"
rm -rf "$SUB" "$WORK"
cat "$SUMMARY"

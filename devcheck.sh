#!/usr/bin/env bash
# GPU check of --inputs large/tiny in labs 09, 10, 11, 29, 30: each lab's new named runs
# (tools/grading.toml) with --check-only, then its --quick. One line per run with its rc.
# Run from the repository root after: meson setup build -Dgpu_arch=9.0 && ninja -C build
set -u
out="${OUT:-/tmp}/inputsA.txt"
: > "$out"
log="${OUT:-/tmp}/inputsA-failures.txt"
: > "$log"
for lab in 09_template_matmul 10_vectorized_matmul 11_register_blocked_matmul 29_llm_decode 30_tensor_core_gemm; do
  prog="build/labs/$lab/$lab"
  while IFS=$'\t' read -r label rest; do
    case "$label" in large|tiny|large_bf16|tiny_tf32) ;; *) continue ;; esac
    IFS=$'\t' read -r -a args <<< "$rest"
    start=$(date +%s)
    timeout 60 "$prog" "${args[@]}" --check-only --seed "$RANDOM" > /tmp/inputsA-run.txt 2>&1
    rc=$?
    echo "$lab $label rc=$rc $(( $(date +%s) - start ))s" | tee -a "$out"
    [ "$rc" -ne 0 ] && { echo "== $lab $label rc=$rc"; tail -30 /tmp/inputsA-run.txt; } >> "$log"
  done < <(PYTHONPATH=tools python3 tools/lab_runs.py "$lab")
  start=$(date +%s)
  timeout 60 "$prog" --quick > /tmp/inputsA-run.txt 2>&1
  rc=$?
  echo "$lab --quick rc=$rc $(( $(date +%s) - start ))s" | tee -a "$out"
  [ "$rc" -ne 0 ] && { echo "== $lab --quick rc=$rc"; tail -30 /tmp/inputsA-run.txt; } >> "$log"
done
# The FP16 kinds and lab 30's dtypes once more at --quick sizes with a fixed seed (fast).
for kind in large tiny; do
  for dtype in fp16 bf16 tf32; do
    timeout 60 build/labs/30_tensor_core_gemm/30_tensor_core_gemm --quick --check-only --dtype $dtype --inputs $kind > /tmp/inputsA-run.txt 2>&1
    rc=$?
    echo "30_tensor_core_gemm --quick --dtype $dtype --inputs $kind rc=$rc" | tee -a "$out"
    [ "$rc" -ne 0 ] && { echo "== 30 $dtype $kind rc=$rc"; tail -30 /tmp/inputsA-run.txt; } >> "$log"
  done
  timeout 60 build/labs/09_template_matmul/09_template_matmul --quick --check-only --variant f16_tile16 --inputs $kind > /tmp/inputsA-run.txt 2>&1
  rc=$?
  echo "09_template_matmul --quick --variant f16_tile16 --inputs $kind rc=$rc" | tee -a "$out"
  [ "$rc" -ne 0 ] && { echo "== 09 f16 $kind rc=$rc"; tail -30 /tmp/inputsA-run.txt; } >> "$log"
done
exit 0

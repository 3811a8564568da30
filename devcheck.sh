#!/usr/bin/env bash
# GPU checks of lab 33 (FP8 GEMMs) and of what it changed in lab 30, on an
# H100/H200 (sm_90a). Run from the repository root; everything worth keeping
# goes under $OUT (6 files). About 4 minutes at most (each part has a timeout).
set -u
OUT=${OUT:-/tmp/devcheck-out}
mkdir -p "$OUT"
LAB=build/labs/33_fp8_gemm/33_fp8_gemm

# 1. Build (ptxas checks the sm_90a code of both labs' Hopper files).
{ [ -d build ] || meson setup build -Dgpu_arch=9.0
  timeout 600 ninja -C build labs/33_fp8_gemm/33_fp8_gemm labs/33_fp8_gemm/33_fp8_gemm_fp8_format_test \
    labs/30_tensor_core_gemm/30_tensor_core_gemm; echo "ninja rc=$?"; } > "$OUT/build.txt" 2>&1

# 2. The lab's tests: CPU (e4m3 format, --help, bad input), GPU (--quick, the
#    edge and decode runs of tools/grading.toml), and compute-sanitizer
#    (memcheck, racecheck, synccheck, initcheck at 131 x 257 x 144).
( cd build && timeout 100 meson test --no-rebuild --suite 33_fp8_gemm --print-errorlogs ) > "$OUT/tests.txt" 2>&1
echo "meson test rc=$?" >> "$OUT/tests.txt"

# 3. --quick with timing, then --check-only at odd sizes (k = 16; a partial
#    last scale block, k = 4112; the long-k error at 1000 x 3001 x 8192).
{ timeout 40 $LAB --quick; echo "rc=$?"
  for size in "1 1 16" "1 16 16" "129 257 4112" "1000 3001 8192" "16 4096 4096" "100 777 2048"; do
    set -- $size
    timeout 40 $LAB --check-only --m "$1" --n "$2" --k "$3"; echo "rc=$? at $1 x $2 x $3"
  done
  timeout 10 $LAB --k 100 --m 4 --n 4; echo "rc=$? (expected 2: k not a multiple of 16)"
} > "$OUT/checks.txt" 2>&1

# 4. Lab 30 after its changes (scales argument, shared sm_90a probe): step 4
#    at the sizes that take each path (Cᵀ tiles, split-K, pairs, stream-K, padding).
( cd build && timeout 60 meson test --no-rebuild --print-errorlogs "30_tensor_core_gemm --quick" \
    "30_tensor_core_gemm edge" "30_tensor_core_gemm edge_bf16" "30_tensor_core_gemm split" ) > "$OUT/lab30.txt" 2>&1
echo "lab 30 rc=$?" >> "$OUT/lab30.txt"

# 5. The benchmark: 8192³ (k = 8192: the accumulation error of step 2 against
#    step 3 in the notes) and DeepGEMM's 4096 x 7168 x 16384, records to JSON.
{ timeout 150 $LAB --m 8192,4096 --n 8192,7168 --k 8192,16384 --json "$OUT/records.jsonl"; echo "rc=$?"; } \
  > "$OUT/bench.txt" 2>&1

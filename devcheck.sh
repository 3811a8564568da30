#!/bin/bash
# The counter-free diagnosis against Nsight Compute on the kernels of
# tools/profiling/kernels.toml (both paths per kernel), then `make profile`
# with COUNTERS=0 as a student would run it. Needs the labs built (ninja -C build).
set -u
OUT=${OUT:-build/devcheck}
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd)
DIR=build/profile/compare
rm -rf "$DIR"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; command -v ncu cuobjdump nvdisasm
  ncu --version | tail -1; git rev-parse --short HEAD; date -u +%FT%TZ; } > "$OUT/machine.txt" 2>&1
time timeout 380 python3 tools/profile.py --compare-table tools/profiling/kernels.toml --build build --out "$DIR" \
  > "$OUT/compare.log" 2>&1
echo "compare exit $?" >> "$OUT/compare.log"
cp "$DIR/comparison.md" "$DIR/comparison.json" "$OUT/" 2>/dev/null
tar czf "$OUT/evidence.tar.gz" -C "$DIR" $(cd "$DIR" && ls *.evidence.json *.csv *.txt 2>/dev/null) 2>/dev/null
timeout 60 make profile LAB=21 VARIANT=naive COUNTERS=0 > "$OUT/make-profile-counters0.txt" 2>&1
echo "make profile exit $?" >> "$OUT/make-profile-counters0.txt"
(cd build && timeout 90 meson test --no-rebuild --suite profile "profile 02 float4 is memory-bound without counters" \
  "profile 28 horner_grid_stride is compute-bound without counters"; cp meson-logs/testlog.txt "$OUT/testlog.txt") \
  > /dev/null 2>&1
tail -8 "$OUT/compare.log"

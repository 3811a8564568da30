#!/usr/bin/env bash
# GPU check of the grid rule and the next held-out set (one H200). From the repository root, after
#   meson setup build -Dgpu_arch=9.0 && ninja -C build
# Three parts, each about 4 minutes or less; run them as separate commands:
#   bash devcheck.sh grid      # lab 14 register_tiled / split_k and lab 02 float4, counter-free: launches + grid rule
#   bash devcheck.sh table-a   # --compare-table on entries 43-48 and 53 of kernels.toml (both paths)
#   bash devcheck.sh table-b   # --compare-table on entries 49-52 and 54
# The held-out entries (43 on) run in two parts of about equal time; merge them afterwards, no GPU:
#   tools/profile.py --recompare DIR/table-a --recompare DIR/table-b --out DIR/merged
# Everything worth keeping goes under $OUT (at most 8 files per part).
set -u
OUT=${OUT:-/tmp/devcheck-out}
mkdir -p "$OUT"
# tools/profile.py finds its own modules; tools/ on PYTHONPATH would hide the standard library's profile module from meson
part=${1:-grid}

held_out_part() {  # $1: entries of kernels.toml (1-based, comma-separated), $2: the file to write
  python3 - "$1" "$2" <<'PY'
import sys
entries, path = [int(i) for i in sys.argv[1].split(",")], sys.argv[2]
blocks = open("tools/profiling/kernels.toml").read().split("[[kernel]]")[1:]
out = "".join("[[kernel]]" + blocks[i - 1].split("\n\n#")[0].rstrip() + "\n\n" for i in entries)
open(path, "w").write(out)
print(f"{path}: entries {sys.argv[1]}:", [l.split('"')[1] for l in out.splitlines() if l.startswith("name =")])
PY
}

case "$part" in
grid)
  {
    echo "== $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)"
    for spec in "14 register_tiled --seq=4096 output_register_tiled_kernel" \
                "14 split_k --seq=4096 output_split_k_kernel" \
                "02 float4 --size=2^26 float4"; do
      set -- $spec
      echo; echo "==== lab $1 $2 $3 (counter-free)"
      timeout 100 python3 tools/profile.py "$1" "$2" --counters 0 --args "${3/=/ }" --kernel "$4" --out "$OUT/grid"
      echo "exit $?"
      ev=$(ls "$OUT"/grid/*-"$2".evidence.json 2>/dev/null | head -1)
      [ -n "$ev" ] && python3 - "$ev" <<'PY'
import json, sys
ev = json.load(open(sys.argv[1]))
r = ev["records"][0]
print("record at", r["size"], "sms:", r.get("sms"), "resources:", r.get("resources"))
print("gpu_work.launches:", (r.get("gpu_work") or {}).get("launches"))
print("kernel read from the binary:", (ev.get("kernel") or {}).get("name"))
PY
    done
  } 2>&1 | tee "$OUT/grid.txt"
  tar -C "$OUT" -czf "$OUT/grid-evidence.tar.gz" grid && rm -rf "$OUT/grid"
  ;;
table-a|table-b)
  if [ "$part" = table-a ]; then entries=43,44,45,46,47,48,53; else entries=49,50,51,52,54; fi
  held_out_part "$entries" "$OUT/kernels-$part.toml"
  timeout 570 python3 tools/profile.py --compare-table "$OUT/kernels-$part.toml" --build build --out "$OUT/$part" \
    2>&1 | tee "$OUT/$part.log"
  echo "exit ${PIPESTATUS[0]}" | tee -a "$OUT/$part.log"
  cp "$OUT/$part/comparison.md" "$OUT/$part-comparison.md" 2>/dev/null
  tar -C "$OUT" -czf "$OUT/$part.tar.gz" "$part" && rm -rf "$OUT/$part"
  { nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv
    ncu --version 2>/dev/null || /usr/local/cuda/bin/ncu --version; } > "$OUT/device.txt" 2>&1
  ;;
*)
  echo "devcheck.sh: unknown part '$part': grid, table-a or table-b" >&2
  exit 2
  ;;
esac

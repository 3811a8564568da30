#!/usr/bin/env bash
# GPU run of the fourth held-out set (entries 55-66 of tools/profiling/kernels.toml) on one H200: both paths
# (Nsight Compute and the counter-free diagnosis) on each kernel. From the repository root, after
#   meson setup build -Dgpu_arch=9.0 && ninja -C build
# Two parts, each well under 9 minutes (the table's kernels took 6-57 s counter-free, plus Nsight Compute's
# replay); run them as separate commands:
#   bash devcheck.sh table-a   # entries 55-60 and 62: labs 21, 07, 12, 22, 09, 14, 25
#   bash devcheck.sh table-b   # entries 61 and 63-66: labs 24, 28 (twice), 30, 31
# Each part writes under $OUT: PART-comparison.md (the table), PART.log, PART.tar.gz (comparison.json and
# every kernel's evidence), kernels-PART.toml (the entries it ran) and device.txt. Merge them afterwards,
# no GPU (unpack both tarballs into DIR first):
#   python3 tools/profile.py --recompare DIR/table-a --recompare DIR/table-b --out DIR
set -u
OUT=${OUT:-/tmp/devcheck-out}
mkdir -p "$OUT"
# tools/profile.py finds its own modules; tools/ on PYTHONPATH would hide the standard library's profile module
part=${1:-}

held_out_part() {  # $1: entries of kernels.toml (1-based, comma-separated), $2: the file to write
  python3 - "$1" "$2" <<'PY'
import sys
entries, path = [int(i) for i in sys.argv[1].split(",")], sys.argv[2]
blocks = open("tools/profiling/kernels.toml").read().split("[[kernel]]")[1:]
if len(blocks) < max(entries):
    sys.exit(f"tools/profiling/kernels.toml has {len(blocks)} entries; this part needs entry {max(entries)}")
out = "".join("[[kernel]]" + blocks[i - 1].split("\n\n#")[0].rstrip() + "\n\n" for i in entries)
open(path, "w").write(out)
print(f"{path}: entries {sys.argv[1]}:", [l.split('"')[1] for l in out.splitlines() if l.startswith("name =")])
PY
}

case "$part" in
table-a|table-b)
  if [ "$part" = table-a ]; then entries=55,56,57,58,59,60,62; else entries=61,63,64,65,66; fi
  held_out_part "$entries" "$OUT/kernels-$part.toml" || exit 2
  { echo "== $(date -u +%FT%TZ) $(git rev-parse --short HEAD) $part"; } > "$OUT/$part.log"
  timeout 540 python3 tools/profile.py --compare-table "$OUT/kernels-$part.toml" --build build --out "$OUT/$part" \
    2>&1 | tee -a "$OUT/$part.log"
  echo "exit ${PIPESTATUS[0]}" | tee -a "$OUT/$part.log"
  cp "$OUT/$part/comparison.md" "$OUT/$part-comparison.md" 2>/dev/null
  tar -C "$OUT" -czf "$OUT/$part.tar.gz" "$part" && rm -rf "$OUT/$part"
  { nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv
    ncu --version 2>/dev/null || /usr/local/cuda/bin/ncu --version; } > "$OUT/device.txt" 2>&1
  ;;
*)
  echo "devcheck.sh: unknown part '$part': table-a or table-b (see the comment at the top)" >&2
  exit 2
  ;;
esac

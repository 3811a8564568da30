#!/bin/bash
# Held-out test of the counter-free diagnosis on an H200: both paths (tools/profile.py --compare-table) on the
# kernels of tools/profiling/kernels.toml from the 22nd on, none of which the rules were revised on.
# Run from the repository root after: meson setup build -Dgpu_arch=9.0 && ninja -C build
set -u
OUT=${OUT:-/tmp/devcheck-out}
mkdir -p "$OUT"
rm -rf /tmp/cmp && mkdir -p /tmp/cmp
python3 - <<'PY'
import json, tomllib
entries = tomllib.load(open("tools/profiling/kernels.toml", "rb"))["kernel"][21:]
with open("/tmp/new.toml", "w") as f:
    for e in entries:
        f.write("[[kernel]]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in e.items()) + "\n")
print(len(entries), "held-out kernels:", ", ".join(e["name"] for e in entries))
PY
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
ncu --version | tail -n 1
start=$(date +%s)
timeout 225 python3 tools/profile.py --compare-table /tmp/new.toml --build build --out /tmp/cmp > /tmp/cmp/compare.log 2>&1
echo "compare-table exit $? after $(( $(date +%s) - start )) s" | tee -a /tmp/cmp/compare.log
tail -n 600 /tmp/cmp/compare.log > "$OUT/compare-tail.log"
(cd /tmp/cmp && tar czf "$OUT/cmp.tgz" $(ls *.evidence.json *.txt comparison.md comparison.json 2>/dev/null))
git rev-parse --short HEAD
cat /tmp/cmp/comparison.md 2>/dev/null || echo "no comparison.md: see compare-tail.log"

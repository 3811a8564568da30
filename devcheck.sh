#!/bin/bash
# The Gradescope bridge on a GPU host for real (run from the repository root after
# meson setup build -Dgpu_arch=9.0 && ninja -C build).
# 1. The bridge's test with --gpu: an sshd of its own on 127.0.0.1; the correct lab 01
#    submission compiled, sent, graded on GPU 0 with compute-sanitizer, judged by
#    build/: 10/10 and "10/10" in the usage log (skips, 77, where sshd is not installed).
# 2. Without SSH: the host's forced command run directly on lab 01's archive, as sshd
#    would run it: graded on the GPU, results.json on stdout.
set -u
mkdir -p "$OUT"
{ command -v sshd || ls -l /usr/sbin/sshd; command -v ssh; nvidia-smi -L; } > "$OUT/env.txt" 2>&1
start=$(date +%s)
python3 tests/gradescope/test_bridge.py --gpu build --keep /tmp/bridge-gpu > "$OUT/bridge-gpu.txt" 2>&1
echo "exit $? in $(( $(date +%s) - start )) s" >> "$OUT/bridge-gpu.txt"
cp /tmp/bridge-gpu/correct/results/results.json "$OUT/results-correct.json" 2>/dev/null
cp /tmp/bridge-gpu/state/usage.log "$OUT/usage.log" 2>/dev/null
tail -30 "$OUT/bridge-gpu.txt"

work=$(mktemp -d)
cat > "$work/host.toml" <<TOML
state = "$work/state"
build = "$PWD/build"
gpus = "auto"
queue_wait_s = 60
[assignments.lab01]
labs = ["01"]
seed = 4242
TOML
start=$(date +%s)
python3 - "$work" <<'PY' | SSH_ORIGINAL_COMMAND="grade lab01 devcheck" python3 tools/gradescope/bridge.py serve --config "$work/host.toml" > "$OUT/serve-direct.json" 2> "$OUT/serve-direct.err"
import sys
sys.path[:0] = ["tools/gradescope"]
import archive
sys.stdout.buffer.write(archive.pack("labs", ["01_vector_add/vector_add.cuh"]))
PY
echo "serve exit ${PIPESTATUS[1]} in $(( $(date +%s) - start )) s" | tee -a "$OUT/serve-direct.err"
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(d['score'], [(t['name'], t['score'], t['status']) for t in d['tests']], d['extra_data'].get('bridge'))" "$OUT/serve-direct.json"
cat "$work/state/usage.log"

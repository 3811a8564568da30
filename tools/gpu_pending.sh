#!/usr/bin/env bash
# What session 3 could not verify on the H100 (its device time ran out), as three
# GPU calls of under 10 minutes each. Everything goes into ONE tarball: the
# device tool brings back at most 8 files, and session 3 lost three runs'
# records to that limit.
#
#   tools/gpu_pending.sh 1 OUT_DIR    # labs 29 and 25 under the four sanitizers, the grader's broken cases
#   tools/gpu_pending.sh 2 OUT_DIR    # records: PyTorch's SDPA, 31 (every variant), 25 at 2^28, 30
#   tools/gpu_pending.sh 3 OUT_DIR    # the starter kit built and run; records: 22, 23, 16, 17
#
# Then, here: tar xzf OUT_DIR/pending-N.tgz, merge run/records.jsonl with
# tools/update_results.py, copy the transcripts to results/h100/transcripts/,
# and update the READMEs whose numbers came from console transcripts only
# (labs 22, 23, 25: results/h100/runs/README.md).
set -uo pipefail
part=${1:?part 1, 2 or 3}
out=${2:?output folder}
export PATH=$PATH:/usr/local/cuda/bin
work=$(mktemp -d)
mkdir -p "$work/run/transcripts" "$out"
build=${BUILD:-/tmp/build-pending}
start=$SECONDS
left() { echo $((${BUDGET:-560} - (SECONDS - start))); }
# step NAME SECONDS CMD...: runs CMD with at most SECONDS (less when the budget is short)
step() {
  local name=$1 limit=$2 t
  shift 2
  t=$(left)
  [ "$limit" -lt "$t" ] && t=$limit
  if [ "$t" -lt 5 ]; then echo "$name: skipped (no time left)" >> "$work/times.txt"; return; fi
  local s=$SECONDS
  timeout "$t" "$@" > "$work/$name.txt" 2>&1
  echo "$name: exit $? in $((SECONDS - s)) s (limit $t s)" >> "$work/times.txt"
}
{ nvidia-smi --query-gpu=name,driver_version --format=csv; nvcc --version | tail -n 2; git log --oneline -1 2>/dev/null; } \
  > "$work/run/device.txt" 2>&1
[ -f "$build/build.ninja" ] || meson setup "$build" -Dgpu_arch=9.0 --buildtype=release > "$work/setup.txt" 2>&1
step build 150 ninja -C "$build"
L=$build/labs
json=$work/run/records.jsonl
case $part in
  1)
    for t in memcheck racecheck synccheck initcheck; do
      step "29_$t" 40 sh tests/sanitize.sh $t "$L/29_llm_decode/29_llm_decode" --quick
      step "25_$t" 40 sh tests/sanitize.sh $t "$L/25_scan/25_scan" --size 100003 --variant wide_lookback,decoupled_lookback
    done
    step broken_cases 300 meson test -C "$build" --no-rebuild --suite grading --print-errorlogs
    ;;
  2|3)
    if [ "$part" = 2 ]; then
      step torch 70 python3 tools/torch_attention.py --labs 17,31 --backends cudnn,flash --causal no \
        --json "$work/run/torch.jsonl"
      runs="31_flash_attention_hopper:90:--seq,4096,4096,8192,8192,--dim,64,128,64,128 25_scan:90:--size,268435456
            30_tensor_core_gemm:90:"
    else
      runs="22_stencil:45: 23_unified_memory:160: 16_flash_attention:40: 17_multi_head_attention:40:"
    fi
    [ "$part" = 3 ] && step starter 200 meson test -C "$build" --no-rebuild --suite starter --print-errorlogs
    for lab in $runs; do
      IFS=: read -r name limit args <<< "$lab"
      # shellcheck disable=SC2086
      step "$name" "$limit" "$L/$name/$name" ${args//,/ } --json "$json"
      cp "$work/$name.txt" "$work/run/transcripts/$name.txt" 2>/dev/null
    done
    ;;
  *) echo "part 1, 2 or 3"; exit 2 ;;
esac
cp "$build/meson-logs/testlog.txt" "$work/testlog.txt" 2>/dev/null
cat "$work/times.txt"
tar czf "$out/pending-$part.tgz" -C "$work" .
echo "wrote $out/pending-$part.tgz"

#!/usr/bin/env bash
# The GPU run, in one command on a machine with a GPU (the course's H100 runs
# use it): build for the local GPU, run the GPU tests, the sanitizers and the
# labs at their full sizes, and collect the records.
#
#   tools/gpu_suite.sh [--out DIR] [--build DIR] [--steps build,test,bench,sanitize] [--labs 02,07,...]
#
# Writes into DIR (default results/local): device.txt (GPU, driver, toolkit),
# records.jsonl (one JSON record per variant and size), 08_streams_timeline.csv,
# summary.txt (the last lines of every step), transcripts/LAB.txt (the console
# output of each lab's benchmark run) and logs.tar.gz (every log).
set -uo pipefail
out=results/local
build=build-gpu
steps=build,test,bench
labs=""
while [ $# -gt 0 ]; do
  case $1 in
    --out) out=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --labs) labs=$2; shift 2 ;;
    *) echo "unknown argument $1 (see the header of $0)"; exit 2 ;;
  esac
done
mkdir -p "$out" "$out/logs"
export PATH=$PATH:/usr/local/cuda/bin
summary="$out/summary.txt"
has() { case ",$steps," in *",$1,"*) return 0 ;; esac; return 1; }
selected() {  # selected 07_reduction_v3
  [ -z "$labs" ] && return 0
  case ",$labs," in *",${1:0:2},"*) return 0 ;; esac
  return 1
}

{
  echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  nvidia-smi --query-gpu=name,compute_cap,driver_version,memory.total,clocks.max.sm,clocks.max.mem,pcie.link.gen.max,pcie.link.width.max --format=csv
  nvcc --version | tail -n 2
  echo "host: $(nproc) cores, $(grep MemTotal /proc/meminfo)"
} > "$out/device.txt" 2>&1

if has build; then
  start=$SECONDS
  [ -f "$build/build.ninja" ] || meson setup "$build" --buildtype=release > "$out/logs/setup.log" 2>&1
  ninja -C "$build" -k 0 > "$out/logs/build.log" 2>&1
  echo "build: exit $? in $((SECONDS - start)) s" | tee -a "$summary"
  grep -E "warning|error" "$out/logs/build.log" | head -20 | tee -a "$summary"
fi

if has test; then
  start=$SECONDS
  meson test -C "$build" --no-rebuild --no-suite sanitizer --num-processes 4 --print-errorlogs > "$out/logs/test.log" 2>&1
  cp "$build/meson-logs/testlog.txt" "$out/logs/testlog.txt" 2>/dev/null
  python3 tools/test_summary.py "$build/meson-logs/testlog.json" | tail -n 30 | sed 's/^/test: /' | tee -a "$summary"
  echo "test: $((SECONDS - start)) s" | tee -a "$summary"
fi

if has sanitize; then
  start=$SECONDS
  meson test -C "$build" --no-rebuild --suite sanitizer --num-processes 4 --print-errorlogs > "$out/logs/sanitize.log" 2>&1
  cp "$build/meson-logs/testlog.txt" "$out/logs/sanitizelog.txt" 2>/dev/null
  python3 tools/test_summary.py "$build/meson-logs/testlog.json" | tail -n 30 | sed 's/^/sanitize: /' | tee -a "$summary"
  echo "sanitize: $((SECONDS - start)) s" | tee -a "$summary"
fi

if has bench; then
  for dir in "$build"/labs/*/; do
    name=$(basename "$dir")
    [ -x "$dir$name" ] || continue
    selected "$name" || continue
    start=$SECONDS
    extra=()
    [ "$name" = 08_streams ] && extra=(--timeline "$out/08_streams_timeline.csv")
    timeout 300 "$dir$name" --json "$out/records.jsonl" "${extra[@]}" > "$out/logs/$name.log" 2>&1
    echo "bench $name: exit $? in $((SECONDS - start)) s" | tee -a "$summary"
    # The console transcript of the run the records come from (lab READMEs quote it).
    mkdir -p "$out/transcripts"
    { echo "\$ build/labs/$name/$name ${extra[*]}"; cat "$out/logs/$name.log"; } > "$out/transcripts/$name.txt"
  done
fi

tar -czf "$out/logs.tar.gz" -C "$out" logs && rm -rf "$out/logs"
echo "done; outputs in $out"

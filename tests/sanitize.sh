#!/bin/sh
# compute-sanitizer TOOL over one lab in --check-only mode (each variant run
# three times on poisoned outputs, no timing loop). Exit 77 (skip) where there
# is no sanitizer or no GPU. CUPTI tracing is off: the sanitizer owns the
# callbacks (CUDALABS_TRACE=0). The last check's buffer moves are off
# (CUDALABS_MOVES=0): their copies read bytes no kernel wrote, which initcheck
# would report as the lab's.
# usage: sanitize.sh memcheck|racecheck|synccheck|initcheck LAB_PROGRAM [ARGS...]
tool=$1; shift
sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
[ -x "$sanitizer" ] || { echo "skip: compute-sanitizer not found"; exit 77; }
command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1 || { echo "skip: no GPU"; exit 77; }
CUDALABS_TRACE=0 CUDALABS_MOVES=0 exec "$sanitizer" --tool "$tool" --error-exitcode 1 --print-limit 20 "$@" --check-only

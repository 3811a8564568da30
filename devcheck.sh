#!/usr/bin/env bash
# The new --inputs kinds of labs 01, 05, 18, 22 and 28 on a GPU: each new named
# run of tools/grading.toml with --check-only, and each lab's --quick. One line
# per run with its exit code (0 expected everywhere), then the tail of any run
# that failed, into $OUT/inputs.txt. Run from the repository root after
# `meson setup build -Dgpu_arch=9.0 && ninja -C build`.
set -u
out="${OUT:-/tmp}/inputs.txt"
: > "$out"
fails=$(mktemp)
run() {  # label, program, args...
  local label=$1 prog=$2; shift 2
  local log; log=$(mktemp)
  local t0=$SECONDS
  timeout 60 "build/labs/$prog/$prog" "$@" > "$log" 2>&1
  local rc=$?
  echo "rc=$rc $((SECONDS - t0))s $label: $prog $*" | tee -a "$out"
  if [ $rc -ne 0 ]; then { echo "---- $label"; tail -25 "$log"; } >> "$fails"; fi
  rm -f "$log"
}
for lab in 01_vector_add 05_matmul 18_matmul_cublas_gap 22_stencil 28_tuning; do
  run quick "$lab" --quick
done
run specials 01_vector_add --size 1,7,40,255,257,1000003 --inputs specials --check-only
run specials_seed9 01_vector_add --size 1,40,1000003 --inputs specials --check-only --seed 9
run specials 28_tuning --size 1,7,40,255,257,1000003 --inputs specials --check-only
run specials_seed9 28_tuning --size 40,1000003 --inputs specials --check-only --seed 9
for kind in constant; do
  run $kind 22_stencil --nx 1,3,33,1000,3,7,130 --ny 1,3,65,997,3,31,17 --nz 1,1,1,1,3,65,5 --steps 3 --inputs $kind --check-only
done
for kind in large tiny; do
  run $kind 22_stencil --nx 3,33,1000,7,130 --ny 3,65,997,31,17 --nz 1,1,1,65,5 --steps 4 --inputs $kind --check-only
  run ${kind}_seed9 22_stencil --nx 1000,130 --ny 997,17 --nz 1,5 --steps 16 --inputs $kind --check-only --seed 9
  run $kind 05_matmul --m 1,31,33,127,129 --n 1,17,65,255,257 --k 1,15,16,17,1000 --inputs $kind --check-only
  run $kind 18_matmul_cublas_gap --m 1,33,129,1000 --n 1,65,257,1000 --k 1,17,1000,7 --inputs $kind --check-only
done
run constant_tiles 22_stencil --nx 37,29 --ny 41,13 --nz 1,67 --tile-x 13 --tile-y 5 --tile-z 3 --steps 2 --inputs constant --check-only
cat "$fails" >> "$out"
rm -f "$fails"

#!/usr/bin/env bash
# New --inputs kinds and option edges of labs 03, 08, 19, 20, 23, 27: each new named
# run (tools/grading.toml) with --check-only, each changed lab's --quick, and three
# drawn corners of lab 27's option grid. One line per run with its exit code in
# $OUT/inputsB.txt, the last lines of any run that did not exit 0 after it.
set -u
out="${OUT:-/tmp}/inputsB.txt"
: > "$out"
run() {
  local label="$1"; shift
  local log; log=$(mktemp)
  local t0=$SECONDS
  timeout 100 "$@" > "$log" 2>&1
  local rc=$?
  echo "rc=$rc ${label} ($((SECONDS - t0)) s): $*" >> "$out"
  if [ "$rc" -ne 0 ]; then tail -n 25 "$log" | sed 's/^/    /' >> "$out"; fi
  rm -f "$log"
}
L=build/labs
run "03 specials" $L/03_pcie_truth/03_pcie_truth --size 1,7,40,255,257,1000003 --inputs specials --check-only
run "03 quick" $L/03_pcie_truth/03_pcie_truth --quick
run "08 specials" $L/08_streams/08_streams --size 1,40,257,1000003 --streams 3 --chunks 7 --inputs specials --check-only
run "08 quick" $L/08_streams/08_streams --quick
run "19 specials" $L/19_driver_api/19_driver_api --size 1,7,40,257,1000003 --dim 1,15,17,33,100 --inputs specials --check-only
run "19 quick" $L/19_driver_api/19_driver_api --quick
run "20 large" $L/20_nvrtc_jit/20_nvrtc_jit --rows 9 --cols 1,2,33,4097,16385,100003 --inputs large --check-only
run "20 masked" $L/20_nvrtc_jit/20_nvrtc_jit --rows 9 --cols 1,2,33,4097,16385,100003 --inputs masked --check-only
run "20 quick" $L/20_nvrtc_jit/20_nvrtc_jit --quick
run "23 specials" $L/23_unified_memory/23_unified_memory --n 1,7,40,1000003 --nx 3,1,33,129 --ny 3,7,1,67 --steps 2 --inputs specials --check-only
run "23 quick" $L/23_unified_memory/23_unified_memory --quick
M="$L/27_monte_carlo/27_monte_carlo --size 3,1000003,16777216 --check-only"
run "27 deep_itm" $M --s0 1e4 --strike 1 --rate 0.2 --sigma 0.2 --maturity 5
run "27 deep_otm" $M --s0 100 --strike 200 --rate 0.05 --sigma 0.2 --maturity 1
run "27 tiny_vol" $M --s0 100 --strike 100 --rate 0.2 --sigma 0.01 --maturity 0.01
run "27 huge_vol" $M --s0 100 --strike 100 --rate -0.05 --sigma 1 --maturity 5
run "27 draw corner itm tiny" $M --s0 120 --strike 90 --rate 0.2 --sigma 0.01 --maturity 0.01
run "27 draw corner zero price" $M --s0 80 --strike 110 --rate -0.05 --sigma 0.01 --maturity 0.01
run "27 draw corner otm tiny" $M --s0 80 --strike 90 --rate 0.2 --sigma 0.01 --maturity 5
run "27 quick" $L/27_monte_carlo/27_monte_carlo --quick
cat "$out"

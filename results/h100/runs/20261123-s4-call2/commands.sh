set -u
rm -rf /tmp/snap && mkdir -p /tmp/snap && tar xzf snap.tgz -C /tmp/snap && cd /tmp/snap
export CUDALABS_REVISION=065095d
BUDGET=470 bash tools/gpu_pending.sh 2 "$OUT"
timeout 90 meson test -C /tmp/build-pending --no-rebuild --suite grading 'grader rejects broken histogram_race' 'grader rejects broken transpose_square_only' --print-errorlogs > /tmp/bc.txt 2>&1
echo "broken exit $?"; tail -5 /tmp/bc.txt
cp /tmp/build-pending/meson-logs/testlog.txt /tmp/bc-testlog.txt; tar czf $OUT/broken2.tgz -C /tmp bc.txt bc-testlog.txt

set -u
rm -rf /tmp/snap && mkdir -p /tmp/snap && tar xzf snap.tgz -C /tmp/snap && cd /tmp/snap
export CUDALABS_REVISION=6a95cf8
nproc; nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu --format=csv
BUDGET=560 bash tools/gpu_pending.sh 1 "$OUT"

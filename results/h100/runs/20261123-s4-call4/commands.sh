set -u; echo start
rm -rf /tmp/snap && mkdir -p /tmp/snap && tar xzf snap.tgz -C /tmp/snap && cd /tmp/snap
export CUDALABS_REVISION=501d9d3 PATH=$PATH:/usr/local/cuda/bin
rm -rf /tmp/w /tmp/b; W=/tmp/w; mkdir -p $W/run/transcripts; J=$W/run/records.jsonl
{ nvidia-smi --query-gpu=name,driver_version --format=csv; nvcc --version | tail -n 2; echo "git $CUDALABS_REVISION"; } > $W/run/device.txt 2>&1
S=$SECONDS
st() { n=$1; l=$2; shift 2; s=$SECONDS; timeout $l "$@" > $W/run/transcripts/$n.txt 2>&1; echo "$n: exit $? in $((SECONDS-s)) s (limit $l)" | tee -a $W/times.txt; }
meson setup /tmp/b -Dgpu_arch=9.0 --buildtype=release > $W/setup.txt 2>&1
st build 150 ninja -C /tmp/b
L=/tmp/b/labs
st 17_causal_gpuref 40 $L/17_multi_head_attention/17_multi_head_attention --causal --batch 1 --heads 3 --seq 3001 --dim 64
st 22_stencil 50 $L/22_stencil/22_stencil --json $J
st 23_unified_memory 150 $L/23_unified_memory/23_unified_memory --json $J
st starter 280 meson test -C /tmp/b --no-rebuild --suite starter 'starter kit fails exactly its exercises' --print-errorlogs
cp /tmp/b/meson-logs/testlog.txt $W/starter-testlog.txt
echo "total $((SECONDS-S)) s"
tar czf $OUT/call4.tgz -C $W .

set -u; echo start
rm -rf /tmp/snap && mkdir -p /tmp/snap && tar xzf snap.tgz -C /tmp/snap && cd /tmp/snap
export CUDALABS_REVISION=25b941c PATH=$PATH:/usr/local/cuda/bin
rm -rf /tmp/w /tmp/b; W=/tmp/w; mkdir -p $W/run/transcripts; J=$W/run/records.jsonl
{ nvidia-smi --query-gpu=name,driver_version --format=csv; nvcc --version | tail -n 2; echo "git $CUDALABS_REVISION"; } > $W/run/device.txt 2>&1
S=$SECONDS
st() { n=$1; l=$2; shift 2; s=$SECONDS; timeout $l "$@" > $W/run/transcripts/$n.txt 2>&1; echo "$n: exit $? in $((SECONDS-s)) s (limit $l)" | tee -a $W/times.txt; }
meson setup /tmp/b -Dgpu_arch=9.0 --buildtype=release > $W/setup.txt 2>&1
st build 150 ninja -C /tmp/b
L=/tmp/b/labs
st starter 200 meson test -C /tmp/b --no-rebuild --suite starter 'starter kit fails exactly its exercises' --print-errorlogs
st tune28_horner 90 python3 tools/tune.py 28 --build /tmp/b --no-build --variant horner_grid_stride,horner_one_per_thread --out $W/run/tune28h
st tune28_items 40 python3 tools/tune.py 28 --build /tmp/b --no-build --variant saxpy_grid_stride,horner_grid_stride --sweep "items=1,2,4,8" --out $W/run/tune28i
st tune02 90 python3 tools/tune.py 02 --build /tmp/b --no-build --args "--size 2^26" --out $W/run/tune02
st 17_causal_flags 30 $L/17_multi_head_attention/17_multi_head_attention --causal --quick --json $W/run/flags-check.jsonl
echo "total $((SECONDS-S)) s"
tar czf $OUT/call6.tgz -C $W .

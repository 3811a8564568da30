set -u; echo start
rm -rf /tmp/snap && mkdir -p /tmp/snap && tar xzf snap.tgz -C /tmp/snap && cd /tmp/snap
export CUDALABS_REVISION=0378a0e PATH=$PATH:/usr/local/cuda/bin
rm -rf /tmp/w /tmp/b; W=/tmp/w; mkdir -p $W/run/transcripts; J=$W/run/records.jsonl
{ nvidia-smi --query-gpu=name,driver_version --format=csv; nvcc --version | tail -n 2; echo "git $CUDALABS_REVISION"; } > $W/run/device.txt 2>&1
S=$SECONDS
st() { n=$1; l=$2; shift 2; s=$SECONDS; timeout $l "$@" > $W/run/transcripts/$n.txt 2>&1; echo "$n: exit $? in $((SECONDS-s)) s (limit $l)" | tee -a $W/times.txt; }
meson setup /tmp/b -Dgpu_arch=9.0 --buildtype=release > $W/setup.txt 2>&1
st build 150 ninja -C /tmp/b
L=/tmp/b/labs
st starter 200 meson test -C /tmp/b --no-rebuild --suite starter 'starter kit fails exactly its exercises' --print-errorlogs
st tune28_horner 150 python3 tools/tune.py 28 --build /tmp/b --no-build --variant horner_grid_stride,horner_one_per_thread --out $W/run/tune28h
echo "total $((SECONDS-S)) s"
tar czf $OUT/call7.tgz -C $W .

set -u; echo start
rm -rf /tmp/snap && mkdir -p /tmp/snap && tar xzf snap.tgz -C /tmp/snap && cd /tmp/snap
export CUDALABS_REVISION=c0ad574 PATH=$PATH:/usr/local/cuda/bin
rm -rf /tmp/w; W=/tmp/w; mkdir -p $W/run
S=$SECONDS
st() { n=$1; l=$2; shift 2; s=$SECONDS; timeout $l "$@" > $W/run/$n.txt 2>&1; echo "$n: exit $? in $((SECONDS-s)) s (limit $l)" | tee -a $W/run/times.txt; }
python3 tools/starter.py /tmp/st > $W/run/starter-write.txt 2>&1
st starter_graded 230 python3 tools/grade.py --submission /tmp/st/labs --correctness-only --no-sanitize --seed 12345 --work /tmp/gw --out $W/run/starter-grade
mkdir -p /tmp/class/alice /tmp/class/bob /tmp/class/carol
for l in 01_vector_add 02_timed_vector_add 21_transpose 24_histogram; do cp -r labs/$l /tmp/class/alice/; cp -r /tmp/st/labs/$l /tmp/class/bob/; cp -r labs/$l /tmp/class/carol/; done
cp tests/broken/histogram_race/24_histogram/global_atomics.cuh /tmp/class/carol/24_histogram/
st class 230 python3 tools/grade_class.py /tmp/class --labs 01,02,21,24 --no-sanitize --seed 12345 --out $W/run/class --cache /tmp/cache --build /tmp/cb
echo "total $((SECONDS-S)) s"
rm -rf $W/run/starter-grade/logs $W/run/class/*/logs 2>/dev/null
tar czf $OUT/call8.tgz -C $W .

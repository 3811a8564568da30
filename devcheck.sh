#!/bin/bash
# Lab 32 on 4 GPUs (from the repository root, after meson setup build -Dgpu_arch=9.0 && ninja -C build):
# correctness at 2, 3, 4 GPUs with odd sizes and every pair, memcheck on 4, the default run's records and
# wall time on 4 and on 2 GPUs, the split SGEMM's scaling, and the old variants at seed 7 on 2 GPUs beside
# results/h200x2/lab32-split/compare-7457348.txt. Every step has its own timeout; ~6 min at most.
set -u
W=$OUT/work; mkdir -p $W
B=build/labs/32_multi_gpu/32_multi_gpu
timeout 120 ninja -C build labs/32_multi_gpu/32_multi_gpu > $W/build.txt 2>&1 || { tail -30 $W/build.txt; exit 1; }
{ nvidia-smi topo -m; nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv; } > $W/device.txt 2>&1
step() {  # step NAME SECONDS command...: its output in $W/NAME.txt, its rc and wall time in the summary
  local name=$1 limit=$2; shift 2
  local start=$(date +%s)
  timeout $limit "$@" > $W/$name.txt 2>&1
  local rc=$?
  echo "$name: rc=$rc in $(( $(date +%s) - start )) s" | tee -a $W/summary.txt
}
# 1 float (fewer floats than GPUs), 3, 257, 16385 and 1048577 floats; GEMMs with fewer rows than GPUs.
for g in 2 3 4; do
  step check_gpus$g 30 $B --gpus $g --check-only --bytes 4,12,1028,65540,4194308 --gemm 1x1x1,3x5x7,129x257x1000 \
    --pairs all --json $W/check.jsonl
done
step memcheck 45 env CUDALABS_TRACE=0 CUDALABS_MOVES=0 compute-sanitizer --tool memcheck --error-exitcode 9 $B --gpus 4 \
  --check-only --bytes 100004 --gemm 31x17x9 --no-nccl
step default_4gpus 110 $B --json $W/default_4gpus.jsonl
step default_2gpus 50 env CUDA_VISIBLE_DEVICES=0,1 $B --json $W/default_2gpus.jsonl
step scaling 45 $B --variant sgemm_split_threads --gemm 16384x16384x8192 --scaling --json $W/scaling.jsonl
OLD=peer_copy_bidir,staged_copy,peer_read_kernel,peer_write_kernel,allreduce_ring,allreduce_oneshot,sgemm_split_switch,sgemm_split_threads
step seed7_quick 20 env CUDA_VISIBLE_DEVICES=0,1 $B --seed 7 --quick --variant $OLD --json $W/seed7.jsonl
step seed7_64MiB 40 env CUDA_VISIBLE_DEVICES=0,1 $B --seed 7 --bytes 67108864 --gemm 8192x8192x8192 --variant $OLD \
  --json $W/seed7.jsonl

python3 - "$W" > $W/records_summary.txt 2>&1 <<'PY'
import json, sys, pathlib, re
w = pathlib.Path(sys.argv[1])
def records(name):
    p = w / name
    return [json.loads(l) for l in p.read_text().splitlines() if l.strip()] if p.exists() else []
def key(r):
    return r["variant"] + " " + " ".join(f"{k}={v}" for k, v in sorted(r["size"].items()))
for name in ["check.jsonl", "default_4gpus.jsonl", "default_2gpus.jsonl", "scaling.jsonl", "seed7.jsonl"]:
    rs = records(name)
    bad = [r for r in rs if not r.get("passed")]
    print(f"{name}: {len(rs)} records, {len(bad)} failed")
    for r in bad[:15]:
        print("   FAILED", key(r), "gpus", r.get("extra", {}).get("gpus"), "-", r.get("failure", "")[:200])
# The old variants at seed 7 against the list recorded before (passed flags).
before = {}
for line in pathlib.Path("results/h200x2/lab32-split/compare-7457348.txt").read_text().splitlines():
    m = re.match(r"same\s+(\S+) (.*)\s+passed=(\w+)$", line)
    if m: before[m.group(1) + " " + m.group(2).strip()] = m.group(3) == "True"
after = {key(r): bool(r.get("passed")) for r in records("seed7.jsonl")}
same = sum(1 for k in before if k in after and after[k] == before[k])
print(f"seed 7, old variants, 2 GPUs: {len(after)} records; of the {len(before)} listed before, {same} with the same passed,"
      f" {sum(1 for k in before if k not in after)} missing")
for k in sorted(before):
    if k in after and after[k] != before[k]: print(f"   changed: {k}: passed {before[k]} -> {after[k]}")
for k in sorted(set(after) - set(before)): print(f"   new: {k}")
# Bus bandwidth of every collective against NCCL's, per GPU count and size.
for name in ["default_4gpus.jsonl", "default_2gpus.jsonl"]:
    rs = [r for r in records(name) if "busbw_factor" in r.get("extra", {}) and r.get("timed", True)]
    print(f"{name}: collectives, busbw GB/s (x NCCL's time / this time)")
    for r in rs:
        bus = r.get("gbps", 0) * r["extra"]["busbw_factor"]
        print(f"   gpus={int(r['extra']['gpus'])} {key(r):60s} busbw {bus:8.1f}  vs NCCL {r.get('vs_baseline', '-')}")
PY
cat $W/records_summary.txt
for f in default_4gpus default_2gpus; do echo "== $f: the nccl-tests tables"; grep -A8 -E "(all-reduce|reduce-scatter|all-gather) over" $W/$f.txt | head -40; done
grep -h "scaling," $W/scaling.txt
grep -h "ERROR SUMMARY\|skipped" $W/memcheck.txt | head -5
tail -3 $W/check_gpus4.txt
tar czf $OUT/lab32.tgz -C $OUT work && rm -rf $W
echo "== steps"; tar xzf $OUT/lab32.tgz -O work/summary.txt

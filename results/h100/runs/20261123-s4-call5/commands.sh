set -u; echo start
rm -rf /tmp/snap && mkdir -p /tmp/snap && tar xzf snap.tgz -C /tmp/snap && cd /tmp/snap
export CUDALABS_REVISION=53ea45a PATH=$PATH:/usr/local/cuda/bin
rm -rf /tmp/w /tmp/b; W=/tmp/w; mkdir -p $W/run/transcripts; J=$W/run/records.jsonl
{ nvidia-smi --query-gpu=name,driver_version --format=csv; nvcc --version | tail -n 2; echo "git $CUDALABS_REVISION"; } > $W/run/device.txt 2>&1
S=$SECONDS
st() { n=$1; l=$2; shift 2; s=$SECONDS; timeout $l "$@" > $W/run/transcripts/$n.txt 2>&1; echo "$n: exit $? in $((SECONDS-s)) s (limit $l)" | tee -a $W/times.txt; }
meson setup /tmp/b -Dgpu_arch=9.0 --buildtype=release > $W/setup.txt 2>&1
st build 150 ninja -C /tmp/b
L=/tmp/b/labs
st 31_torch_d128 40 python3 tools/torch_attention.py --labs 31 --backends cudnn,flash --causal both --json $W/run/torch.jsonl
st 31_d128 60 $L/31_flash_attention_hopper/31_flash_attention_hopper --seq 4096,8192 --dim 128,128 --json $J
st 31_causal 50 $L/31_flash_attention_hopper/31_flash_attention_hopper --causal --json $J
st 17_causal 50 $L/17_multi_head_attention/17_multi_head_attention --causal --json $J
st 16_causal 40 $L/16_flash_attention/16_flash_attention --causal --json $J
st 23_rest 45 $L/23_unified_memory/23_unified_memory --variant managed_advised_stencil,zero_copy_stencil --json $J
for t in memcheck racecheck; do st mask_$t 30 sh tests/sanitize.sh $t $L/16_flash_attention/16_flash_attention --causal --seq 3001 --dim 128 --variant flash2_fp16; done
st starter 170 meson test -C /tmp/b --no-rebuild --suite starter 'starter kit fails exactly its exercises' --print-errorlogs
echo "total $((SECONDS-S)) s"
tar czf $OUT/call5.tgz -C $W .

set -u
rm -rf /tmp/snap && mkdir -p /tmp/snap && tar xzf snap.tgz -C /tmp/snap && cd /tmp/snap
export CUDALABS_REVISION=065095d PATH=$PATH:/usr/local/cuda/bin
W=/tmp/w; mkdir -p $W/run/transcripts; J=$W/run/records.jsonl
{ nvidia-smi --query-gpu=name,driver_version --format=csv; nvcc --version | tail -n 2; echo "git $CUDALABS_REVISION"; } > $W/run/device.txt 2>&1
S=$SECONDS
st() { n=$1; l=$2; shift 2; s=$SECONDS; timeout $l "$@" > $W/run/transcripts/$n.txt 2>&1; echo "$n: exit $? in $((SECONDS-s)) s (limit $l)" | tee -a $W/times.txt; }
meson setup /tmp/b -Dgpu_arch=9.0 --buildtype=release > $W/setup.txt 2>&1
st build 150 ninja -C /tmp/b
L=/tmp/b/labs
st 31_flash_attention_hopper 150 $L/31_flash_attention_hopper/31_flash_attention_hopper --json $J
st 31_causal 45 $L/31_flash_attention_hopper/31_flash_attention_hopper --causal --seq 8192 --dim 128 --json $J
st torch_causal 90 python3 tools/torch_attention.py --labs 16,17,31 --backends cudnn,flash --causal yes --json $W/run/torch.jsonl
st torch_16 40 python3 tools/torch_attention.py --labs 16 --backends cudnn,flash --causal no --json $W/run/torch.jsonl
st 16_flash_attention 45 $L/16_flash_attention/16_flash_attention --json $J
st 17_multi_head_attention 45 $L/17_multi_head_attention/17_multi_head_attention --json $J
st 17_causal 40 $L/17_multi_head_attention/17_multi_head_attention --causal --json $J
st 30_m128 30 $L/30_tensor_core_gemm/30_tensor_core_gemm --m 128 --n 4096 --k 4096 --json $J
echo "total $((SECONDS-S)) s"
tar czf $OUT/call3.tgz -C $W .

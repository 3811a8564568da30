#!/bin/sh
# Prints the compute capability of GPU 0 (e.g. "9.0"), or nothing when this
# machine has no usable NVIDIA GPU. Meson calls it when gpu_arch=auto.
command -v nvidia-smi >/dev/null 2>&1 || exit 0
nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n 1 | tr -d ' \r'
exit 0

#!/bin/sh
# Gradescope runs this once, as root, when the autograder image is built
# (Ubuntu 22.04 base image): the compilers and ssh for bridge.py submit. No GPU
# here and none needed: the container only compiles (a quick check of compile
# errors) and sends the kernel files to the course's GPU host.
set -eu
cd /autograder/source
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y --no-install-recommends ca-certificates curl gnupg python3 python3-venv python3-tomli \
  g++ ninja-build libcli11-dev nlohmann-json3-dev openssh-client
# The CUDA Toolkit from NVIDIA's repository for this Ubuntu release (nvcc, the
# runtime, cuBLAS, cuRAND, NVRTC, CUPTI headers: what the course's meson.build finds).
. /etc/os-release
repo="ubuntu$(echo "$VERSION_ID" | tr -d .)"
curl -fsSL -o /tmp/cuda-keyring.deb \
  "https://developer.download.nvidia.com/compute/cuda/repos/$repo/x86_64/cuda-keyring_1.1-1_all.deb"
dpkg -i /tmp/cuda-keyring.deb
apt-get update -qq
apt-get install -y --no-install-recommends cuda-toolkit-12-8
# Meson 1.0.1 (Ubuntu 22.04's is older) into cudalabs/build/.venv, as make does.
cd cudalabs && sh tools/ensure_deps.sh build build
chmod 600 /autograder/source/bridge/key

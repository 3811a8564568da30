#!/bin/sh
# Checks for the tools the course needs and installs the missing ones from
# Debian's packages (as root, or through sudo). When it cannot install, it
# prints the exact command to run and exits 1.
#   ensure_deps.sh build   meson, ninja, python3, the CUDA Toolkit (nvcc)
#   ensure_deps.sh test    build + GoogleTest + gnuplot (the plots test)
#   ensure_deps.sh plots   gnuplot
#   ensure_deps.sh all     everything
need=${1:-all}
missing=""
have() { command -v "$1" >/dev/null 2>&1; }

case $need in build|test|all)
  have meson || missing="$missing meson"
  have ninja || missing="$missing ninja-build"
  have python3 || missing="$missing python3"
esac
case $need in test|all)
  [ -f /usr/include/gtest/gtest.h ] || missing="$missing libgtest-dev"
esac
case $need in test|plots|all)
  have gnuplot || missing="$missing gnuplot-nox"
esac

if [ -n "$missing" ]; then
  cmd="apt-get install -y --no-install-recommends$missing"
  if [ "$(id -u)" = 0 ]; then
    echo "installing:$missing"
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive $cmd) >/tmp/cudalabs-apt.log 2>&1 ||
      { echo "could not install:$missing (log: /tmp/cudalabs-apt.log). Run: $cmd"; exit 1; }
  elif have sudo && sudo -n true 2>/dev/null; then
    echo "installing with sudo:$missing"
    (sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive $cmd) >/tmp/cudalabs-apt.log 2>&1 ||
      { echo "could not install:$missing (log: /tmp/cudalabs-apt.log). Run: sudo $cmd"; exit 1; }
  else
    echo "missing:$missing"
    echo "install them with:  sudo apt-get update && sudo $cmd"
    exit 1
  fi
fi

case $need in build|test|all)
  if ! have nvcc; then
    echo "nvcc (the CUDA Toolkit) is not on PATH and not in /usr/local/cuda/bin."
    echo "Install the CUDA Toolkit 12.x or 13.x (https://developer.nvidia.com/cuda-downloads), then run this again."
    exit 1
  fi
esac
exit 0

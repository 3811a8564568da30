#!/bin/sh
# Checks for the tools the course needs, and their versions, and installs the
# missing ones from the distribution's packages (as root, or through sudo).
# When it cannot install, it prints the exact command to run and exits 1.
#   ensure_deps.sh build [BUILD]  Python >= 3.10, Meson >= 1.0.1, Ninja, g++, nvcc >= 12.0,
#                                 CLI11, nlohmann-json (and tomli on Python 3.10), bubblewrap
#                                 (the grader's sandbox; only as root or through sudo)
#   ensure_deps.sh test [BUILD]   build + GoogleTest + gnuplot (the plots test)
#   ensure_deps.sh plots          gnuplot (and tomli on Python 3.10)
#   ensure_deps.sh all [BUILD]    everything above
#   ensure_deps.sh browser        headless Chromium and tesseract-ocr (the class report's test
#                                 opens the HTML report and reads its screenshot)
#   ensure_deps.sh slurm          munge, slurmctld, slurmd, slurm-client (make grade-class
#                                 SLURM=1's test starts a one-node cluster of its own)
#   ensure_deps.sh bridge         openssh-server and openssh-client (the Gradescope bridge,
#                                 tools/gradescope/: its test starts an sshd of its own)
# A distribution Meson older than 1.0.1 (Ubuntu 22.04 has 0.61) is left alone:
# Meson 1.0.1 from PyPI goes into a virtual environment, BUILD/.venv (default
# build/.venv), whose bin/ the Makefile puts first on PATH. The same happens,
# without root, when Meson or Ninja is missing and apt cannot be used.
need=${1:-all}
build=${2:-build}
venv=$build/.venv
meson_min=1.0.1
python_min=3.10
nvcc_min=12.0
case $venv in /*) ;; *) venv=$(pwd)/$venv ;; esac
PATH=$venv/bin:$PATH:/usr/local/cuda/bin
export PATH

have() { command -v "$1" >/dev/null 2>&1; }
can_install() { [ "$(id -u)" = 0 ] || { have sudo && sudo -n true 2>/dev/null; }; }
# version_ge A B: A >= B, as dotted versions.
version_ge() { [ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n 1)" = "$2" ]; }
python_version() { python3 -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])' 2>/dev/null; }
meson_version() { meson --version 2>/dev/null; }

# apt_install PKG...: installs as root or through sudo, or says how and exits 1.
# shellcheck disable=SC2086  # $cmd: the words of one command
apt_install() {
  cmd="apt-get install -y --no-install-recommends $*"
  if [ "$(id -u)" = 0 ]; then
    echo "installing: $*"
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive $cmd) >/tmp/cudalabs-apt.log 2>&1 ||
      { echo "could not install: $* (log: /tmp/cudalabs-apt.log). Run: $cmd"; exit 1; }
  elif have sudo && sudo -n true 2>/dev/null; then
    echo "installing with sudo: $*"
    (sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive $cmd) >/tmp/cudalabs-apt.log 2>&1 ||
      { echo "could not install: $* (log: /tmp/cudalabs-apt.log). Run: sudo $cmd"; exit 1; }
  else
    echo "missing: $*"
    echo "install them with:  sudo apt-get update && sudo $cmd"
    exit 1
  fi
}

missing=""
case $need in build|test|all)
  have python3 || missing="$missing python3"
  have g++ || missing="$missing g++"  # nvcc's host compiler, and Meson's for common/
  # An old Meson is replaced below, from PyPI; a missing one comes from apt when it can.
  have meson || ! can_install || missing="$missing meson"
  have ninja || ! can_install || missing="$missing ninja-build"
  [ -f /usr/include/CLI/CLI.hpp ] || missing="$missing libcli11-dev"
  [ -f /usr/include/nlohmann/json.hpp ] || missing="$missing nlohmann-json3-dev"
  # bwrap: the grader's sandbox (tools/grader/sandbox.py). Without root it is not
  # asked for: the grader says how to get it, and building needs none.
  have bwrap || [ -n "$CUDALABS_BWRAP" ] || ! can_install || missing="$missing bubblewrap"
esac
case $need in build|test|plots|all)
  # tools/grade.py (and make_plots.py, through it) reads TOML with tomllib (3.11+) or, on 3.10, tomli.
  if have python3 && ! python3 -c 'import tomllib' 2>/dev/null && ! python3 -c 'import tomli' 2>/dev/null; then
    missing="$missing python3-tomli"
  fi
esac
case $need in test|all)
  [ -f /usr/include/gtest/gtest.h ] || missing="$missing libgtest-dev"
esac
case $need in test|plots|all)
  have gnuplot || missing="$missing gnuplot-nox"
esac
case $need in browser)
  have chromium || missing="$missing chromium"
  have tesseract || missing="$missing tesseract-ocr tesseract-ocr-eng"
esac
case $need in slurm)
  # Debian's packages start no daemon here: the test starts munged, slurmctld and
  # slurmd itself, with its own slurm.conf, and stops them when it ends.
  have munged || missing="$missing munge"
  have slurmctld || missing="$missing slurmctld"
  have slurmd || missing="$missing slurmd"
  have sbatch || missing="$missing slurm-client"
esac
case $need in bridge)
  # Debian's package also enables the system's sshd; the test starts its own, on
  # 127.0.0.1, with its own config and keys, and never uses the system's.
  { have sshd || [ -x /usr/sbin/sshd ]; } || missing="$missing openssh-server"
  have ssh || missing="$missing openssh-client"
  have ssh-keygen || missing="$missing openssh-client"
esac
# shellcheck disable=SC2086  # $missing: one word per package
[ -z "$missing" ] || apt_install $missing

case $need in build|test|all) ;; *) exit 0 ;; esac

version=$(python_version)
if ! version_ge "$version" "$python_min"; then
  echo "Python $version is too old: the course's tools need Python $python_min or newer."
  echo "Use Debian 12 or Ubuntu 22.04 or newer (docs/setup.md), or put a newer python3 first on PATH."
  exit 1
fi

version=$(meson_version)
if ! version_ge "${version:-0}" "$meson_min" || ! have ninja; then
  # The venv's own Meson comes first on PATH and is new enough: this is the system's, or none.
  pip_packages="meson==$meson_min"
  have ninja || pip_packages="$pip_packages ninja"
  if [ -n "$version" ]; then
    echo "Meson $version is older than $meson_min: installing $pip_packages from PyPI into $venv"
  else
    echo "no Meson or Ninja, and no root to install them with apt: installing $pip_packages from PyPI into $venv"
  fi
  if ! python3 -c 'import ensurepip' 2>/dev/null; then
    apt_install python3-venv
  fi
  rm -rf "$venv"
  # --system-site-packages: the venv's python3 still sees python3-tomli and the rest.
  # shellcheck disable=SC2086  # $pip_packages: one word per package
  if ! { python3 -m venv --system-site-packages "$venv" && "$venv/bin/python3" -m pip install -q $pip_packages; } \
      >/tmp/cudalabs-venv.log 2>&1; then
    echo "could not install $pip_packages into $venv (log: /tmp/cudalabs-venv.log)."
    echo "Run: python3 -m venv --system-site-packages $venv && $venv/bin/python3 -m pip install $pip_packages"
    exit 1
  fi
  hash -r  # forget where the shell found the old meson
  echo "using Meson $(meson_version) from $venv/bin (the Makefile puts it first on PATH)"
fi

if ! have nvcc; then
  echo "nvcc (the CUDA Toolkit) is not on PATH and not in /usr/local/cuda/bin."
  echo "Install the CUDA Toolkit 12.x or 13.x (https://developer.nvidia.com/cuda-downloads), then run this again."
  exit 1
fi
version=$(nvcc --version | sed -n 's/.*release \([0-9][0-9.]*\).*/\1/p')
if ! version_ge "${version:-0}" "$nvcc_min"; then
  echo "nvcc $version ($(command -v nvcc)) is too old: the course needs the CUDA Toolkit $nvcc_min or newer (C++20 in device code)."
  echo "Install the CUDA Toolkit 12.x or 13.x (https://developer.nvidia.com/cuda-downloads) and put its bin/ first on PATH."
  exit 1
fi
exit 0

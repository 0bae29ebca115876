#!/usr/bin/env bash
# prepare.sh - builds, on the build machine (Debian 12, CUDA 13, no GPU), what
# bench/snapshots/overhead.sh runs on a GPU node: the binaries of bench/multigpu/prepare.sh
# and io_bandwidth, into .device/bin[-TAG] (git-ignored; carried by the device tool).
# Usage: FDMINI_PREP_TAG=h7 bench/snapshots/prepare.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
bash bench/multigpu/prepare.sh
bin=.device/bin${FDMINI_PREP_TAG:+-$FDMINI_PREP_TAG}
"${CUDACXX:-/usr/local/cuda/bin/nvcc}" -O2 -std=c++17 -arch=sm_90 -x cu -Ikernels/gpu \
  bench/snapshots/io_bandwidth.hip -o "$bin"/io_bandwidth
ls -la "$bin"/io_bandwidth

#!/usr/bin/env bash
# prepare.sh - builds, on a Debian 12 machine with CUDA 13 (no GPU needed), the binaries that
# run_node.sh uses on an NVIDIA GPU node, into "$bin"/ (git-ignored; carried by the device
# tool): the cuda backend against a CUDA-aware Open MPI build (fdmini-ompi-cuda.tar.xz, which
# unpacks to /opt/fdmini-ompi) and against the distribution's Open MPI, the host backend and
# peer_bandwidth.
# Usage: bench/multigpu/prepare.sh [TARBALL]   TARBALL, or FDMINI_OMPI_TARBALL, is the path of
# fdmini-ompi-cuda.tar.xz (copied to .device/); without either, the copy already in .device/.
# FDMINI_PREP_TAG=x builds in build-*-x and writes .device/bin-x instead (so that several
# working copies of one checkout can prepare side by side); run_node.sh takes the same tag.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
tarball=${1:-${FDMINI_OMPI_TARBALL:-}}
[ -z "$tarball" ] || [ "${tarball#/}" != "$tarball" ] || tarball=$PWD/$tarball
cd "$root"
tag=${FDMINI_PREP_TAG:+-$FDMINI_PREP_TAG}
bin=.device/bin$tag
if [ -n "$tarball" ]; then
  if [ ! -f "$tarball" ]; then
    echo "prepare.sh: '$tarball' is not a file (the CUDA-aware Open MPI, fdmini-ompi-cuda.tar.xz)" >&2
    exit 2
  fi
  mkdir -p .device
  cp "$tarball" .device/fdmini-ompi-cuda.tar.xz
elif [ ! -f .device/fdmini-ompi-cuda.tar.xz ]; then
  echo "prepare.sh: no CUDA-aware Open MPI: give the path of fdmini-ompi-cuda.tar.xz as the" \
    "argument or in FDMINI_OMPI_TARBALL" >&2
  exit 2
fi
mkdir -p "$bin"
[ -x /opt/fdmini-ompi/bin/mpicc ] || tar -xJf .device/fdmini-ompi-cuda.tar.xz -C /
nvcc=${CUDACXX:-/usr/local/cuda/bin/nvcc}
common=(-DFDMINI_BACKEND=cuda -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_CUDA_COMPILER="$nvcc" -DFDMINI_WERROR=ON -DFDMINI_TESTS=OFF)
cmake -S . -B build-cuda-aware"$tag" "${common[@]}" -DMPI_C_COMPILER=/opt/fdmini-ompi/bin/mpicc \
  -DMPIEXEC_EXECUTABLE=/opt/fdmini-ompi/bin/mpiexec > /dev/null
cmake --build build-cuda-aware"$tag" -j "$(nproc)" --target fdmini kernel_sweep test_gpu_kernels test_gpu_regions
cmake -S . -B build-cuda-sys"$tag" "${common[@]}" -DMPI_C_COMPILER=/usr/bin/mpicc > /dev/null
cmake --build build-cuda-sys"$tag" -j "$(nproc)" --target fdmini
cmake -S . -B build-host"$tag" -DFDMINI_WERROR=ON -DFDMINI_TESTS=OFF > /dev/null
cmake --build build-host"$tag" -j "$(nproc)" --target fdmini
cp build-cuda-aware"$tag"/fdmini "$bin"/fdmini-aware
cp build-cuda-sys"$tag"/fdmini "$bin"/fdmini-sys
cp build-host"$tag"/fdmini "$bin"/fdmini-host
cp build-cuda-aware"$tag"/tests-gpu/test_gpu_kernels "$bin"/test_gpu_kernels
cp build-cuda-aware"$tag"/tests-gpu/test_gpu_regions "$bin"/test_gpu_regions
cp build-cuda-aware"$tag"/bench/kernel_sweep "$bin"/kernel_sweep
"$nvcc" -O2 -std=c++17 -arch=sm_90 -x cu -Ikernels/gpu bench/multigpu/peer_bandwidth.hip \
  -o "$bin"/peer_bandwidth
ls -la "$bin"

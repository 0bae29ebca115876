#!/usr/bin/env bash
# prepare.sh - builds, on a Debian 12 machine with CUDA 13 (no GPU needed), the binaries that
# run_node.sh uses on an NVIDIA GPU node, into "$bin"/ (git-ignored; carried by the device
# tool): the cuda backend against the CUDA-aware Open MPI of shared/gpu-mpi and against the
# distribution's Open MPI, the host backend and peer_bandwidth.
# FDMINI_PREP_TAG=x builds in build-*-x and writes .device/bin-x instead (so that several
# working copies of one checkout can prepare side by side); run_node.sh takes the same tag.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
tarball=${FDMINI_OMPI_TARBALL:-$root/../shared/gpu-mpi/fdmini-ompi-cuda.tar.xz}
tag=${FDMINI_PREP_TAG:+-$FDMINI_PREP_TAG}
bin=.device/bin$tag
mkdir -p "$bin"
[ -f .device/fdmini-ompi-cuda.tar.xz ] || cp "$tarball" .device/
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

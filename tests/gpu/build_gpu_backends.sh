#!/usr/bin/env bash
# build_gpu_backends.sh - CI step (machine without a GPU): builds the whole project for the hip
# backend (gfx90a, Debian ROCm 5.2 clang-15) into build-hip/ and for the cuda backend (sm_90,
# nvcc) into build-cuda/, warnings as errors in project code (host and device), then checks that
# the binaries hold device code for those targets. Nothing is run: there is no GPU here.
#
# Usage: tests/gpu/build_gpu_backends.sh [hip] [cuda]     (default: both)
# Env:   CUDACXX (default /usr/local/cuda/bin/nvcc), HIP_CLANG (default clang++-15), JOBS
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
JOBS=${JOBS:-$(nproc)}
WANT=("$@")
[ ${#WANT[@]} -eq 0 ] && WANT=(hip cuda)

# cmocka (the unit tests of tests/) where it is installed; the GPU tests need none
TESTS=OFF
if pkg-config --exists cmocka 2>/dev/null; then TESTS=ON; fi

build_hip() {
  # CMake 3.25 finds Debian's HIP packages only under /usr/lib/cmake (the project's architecture notes)
  local d
  for d in hip hip-lang amd_comgr hsa-runtime64; do
    if [ ! -e "/usr/lib/cmake/$d" ] && [ -d "/usr/lib/x86_64-linux-gnu/cmake/$d" ]; then
      ln -s "/usr/lib/x86_64-linux-gnu/cmake/$d" /usr/lib/cmake/ ||
        { echo "build_gpu_backends: cannot link /usr/lib/cmake/$d (not root?)"; return 1; }
    fi
  done
  local bc=/usr/lib/x86_64-linux-gnu/amdgcn/bitcode
  cmake -S . -B build-hip -DFDMINI_BACKEND=hip -DFDMINI_WERROR=ON -DFDMINI_TESTS=$TESTS \
    -DCMAKE_HIP_COMPILER="${HIP_CLANG:-clang++-15}" -DCMAKE_HIP_ARCHITECTURES=gfx90a \
    -DCMAKE_HIP_FLAGS="--rocm-path=/usr --rocm-device-lib-path=$bc"
  cmake --build build-hip -j "$JOBS"
  local exe
  for exe in build-hip/fdmini build-hip/bench/kernel_sweep build-hip/tests-gpu/test_gpu_kernels build-hip/tests-gpu/test_gpu_regions; do
    [ -x "$exe" ] || { echo "build_gpu_backends: $exe missing"; return 1; }
    grep -q "amdgcn-amd-amdhsa--gfx90a" "$exe" ||
      { echo "build_gpu_backends: $exe holds no gfx90a code object"; return 1; }
  done
  echo "build_gpu_backends: hip (gfx90a) build ok"
}

build_cuda() {
  cmake -S . -B build-cuda -DFDMINI_BACKEND=cuda -DFDMINI_WERROR=ON -DFDMINI_TESTS=$TESTS \
    -DCMAKE_CUDA_COMPILER="${CUDACXX:-/usr/local/cuda/bin/nvcc}" -DCMAKE_CUDA_ARCHITECTURES=90
  cmake --build build-cuda -j "$JOBS"
  local exe
  for exe in build-cuda/fdmini build-cuda/bench/kernel_sweep build-cuda/tests-gpu/test_gpu_kernels build-cuda/tests-gpu/test_gpu_regions; do
    [ -x "$exe" ] || { echo "build_gpu_backends: $exe missing"; return 1; }
    grep -q "sm_90" "$exe" || { echo "build_gpu_backends: $exe holds no sm_90 code"; return 1; }
  done
  echo "build_gpu_backends: cuda (sm_90) build ok"
}

for b in "${WANT[@]}"; do
  case "$b" in
  hip) build_hip ;;
  cuda) build_cuda ;;
  *) echo "usage: $0 [hip] [cuda]"; exit 2 ;;
  esac
done
echo "build_gpu_backends: ${WANT[*]} built with warnings as errors"

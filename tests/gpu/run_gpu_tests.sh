#!/usr/bin/env bash
# run_gpu_tests.sh - on a GPU node: configures and builds the GPU backend with its tests
# (warnings as errors) three ways and runs ctest -L gpu in each: double (test_gpu_kernels: every
# variant x configuration x operator x region against a host reference, poisoned outputs,
# bitwise identities, faces, fill, norms, streams; test_gpu_regions: the halo regions of
# every width, faces, edges and corners; on CUDA also small runs under compute-sanitizer
# memcheck), float, and, on CUDA, double with AMD's 64-lane wavefronts
# emulated (FDMINI_EMULATE_WAVE64: the kernels' lane arithmetic at 64 lanes). Logs everything.
#
# Usage: tests/gpu/run_gpu_tests.sh [BUILD_DIR]          (default build-gpu-tests; the float
#        and wave64 builds go to BUILD_DIR-float and BUILD_DIR-wave64)
# Env:   FDMINI_COMMIT    commit to record where the tree has no .git (the device copies)
#        FDMINI_BACKEND   cuda (default) or hip
#        LOG              log file (default BUILD_DIR/gpu-tests.log)
#        CMAKE_ARGS       extra configure arguments (e.g. -DCMAKE_CUDA_ARCHITECTURES=90)
# Exit status: 0 when everything built and passed.
set -uo pipefail
# CMAKE_ARGS holds several configure arguments: split on blanks on purpose
read -r -a cmake_args <<<"${CMAKE_ARGS:-}"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:-$ROOT/build-gpu-tests}
BACKEND=${FDMINI_BACKEND:-cuda}
mkdir -p "$BUILD"
LOG=${LOG:-$BUILD/gpu-tests.log}

# one NAME BUILD_DIR CONFIGURE_ARGS...: configure, build test_gpu_kernels, run ctest -L gpu
one() {
  local name=$1 dir=$2
  shift 2
  echo "## $name: configure + build"
  cmake -S "$ROOT" -B "$dir" -DFDMINI_BACKEND="$BACKEND" -DFDMINI_TESTS=OFF \
    -DFDMINI_GPU_TESTS=ON -DFDMINI_WERROR=ON "$@" "${cmake_args[@]}" > /dev/null || return 1
  cmake --build "$dir" -j "$(nproc)" --target test_gpu_kernels test_gpu_regions > "$dir/build.log" 2>&1 ||
    { tail -40 "$dir/build.log"; return 1; }
  echo "## $name: ctest -L gpu"
  ctest --test-dir "$dir" -L gpu --output-on-failure -V
}

run() {
  echo "# fdmini GPU tests: $(date -u '+%Y-%m-%d %H:%M UTC'), commit ${FDMINI_COMMIT:-$(git -C "$ROOT" describe --always --dirty 2>/dev/null || echo unknown)}"
  echo "# backend $BACKEND, host $(hostname)"
  if command -v nvidia-smi >/dev/null; then
    nvidia-smi --query-gpu=name,pci.bus_id,driver_version,memory.total --format=csv,noheader
  elif command -v rocm-smi >/dev/null; then
    rocm-smi --showproductname || true
  fi
  local status=0
  one double "$BUILD" -DFDMINI_PRECISION=double || status=1
  one float "$BUILD-float" -DFDMINI_PRECISION=float || status=1
  if [ "$BACKEND" = cuda ]; then
    one "double, 64-lane wavefronts emulated" "$BUILD-wave64" -DFDMINI_PRECISION=double \
      -DFDMINI_EMULATE_WAVE64=ON || status=1
  fi
  return $status
}
run 2>&1 | tee "$LOG"
status=${PIPESTATUS[0]}
echo "run_gpu_tests: exit $status, log $LOG"
exit "$status"

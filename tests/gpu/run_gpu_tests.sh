#!/usr/bin/env bash
# run_gpu_tests.sh - on a GPU node: configures and builds the GPU backend with its tests
# (warnings as errors), then runs ctest -L gpu: test_gpu_kernels (every variant x m x operator x
# region vs a host reference, poisoned outputs, bitwise identities, faces, fill, norms, streams)
# and, on CUDA, the same on a small run under compute-sanitizer memcheck. Logs everything.
#
# Usage: tests/gpu/run_gpu_tests.sh [BUILD_DIR]          (default build-gpu-tests)
# Env:   FDMINI_COMMIT    commit to record where the tree has no .git (the device copies)
#        FDMINI_BACKEND   cuda (default) or hip
#        FDMINI_PRECISION double (default) or float
#        LOG              log file (default BUILD_DIR/gpu-tests.log)
#        CMAKE_ARGS       extra configure arguments (e.g. -DCMAKE_CUDA_ARCHITECTURES=90)
# Exit status: 0 when everything built and passed.
set -uo pipefail
# CMAKE_ARGS holds several configure arguments: split on blanks on purpose
read -r -a cmake_args <<<"${CMAKE_ARGS:-}"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:-$ROOT/build-gpu-tests}
BACKEND=${FDMINI_BACKEND:-cuda}
PRECISION=${FDMINI_PRECISION:-double}
mkdir -p "$BUILD"
LOG=${LOG:-$BUILD/gpu-tests.log}

run() {
  echo "# fdmini GPU tests: $(date -u '+%Y-%m-%d %H:%M UTC'), commit ${FDMINI_COMMIT:-$(git -C "$ROOT" describe --always --dirty 2>/dev/null || echo unknown)}"
  echo "# backend $BACKEND, precision $PRECISION, host $(hostname)"
  if command -v nvidia-smi >/dev/null; then
    nvidia-smi --query-gpu=name,pci.bus_id,driver_version,memory.total --format=csv,noheader
  elif command -v rocm-smi >/dev/null; then
    rocm-smi --showproductname || true
  fi
  echo "## configure + build"
  cmake -S "$ROOT" -B "$BUILD" -DFDMINI_BACKEND="$BACKEND" -DFDMINI_PRECISION="$PRECISION" \
    -DFDMINI_TESTS=OFF -DFDMINI_GPU_TESTS=ON -DFDMINI_WERROR=ON "${cmake_args[@]}" || return 1
  cmake --build "$BUILD" -j "$(nproc)" --target test_gpu_kernels || return 1
  echo "## ctest -L gpu"
  ctest --test-dir "$BUILD" -L gpu --output-on-failure -V
}
run 2>&1 | tee "$LOG"
status=${PIPESTATUS[0]}
echo "run_gpu_tests: exit $status, log $LOG"
exit "$status"

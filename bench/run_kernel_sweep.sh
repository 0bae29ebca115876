#!/usr/bin/env bash
# run_kernel_sweep.sh - the one documented command behind bench/results/<device>-kernel-sweep.*:
# builds kernel_sweep for double and float (precision is a configure-time choice), runs both on
# 512^3 and 1024x1024x512, and appends the tables to <RESULTS>/<device>-kernel-sweep.md and .csv.
#
# Usage: bench/run_kernel_sweep.sh [--quick]
# Env:   FDMINI_COMMIT    commit to record where the tree has no .git (the device copies)
#        FDMINI_BACKEND  cuda (default) or hip
#        RESULTS         output folder (default bench/results)
#        SIZES           default "512x512x512 1024x1024x512"
#        REPS            timed repetitions per configuration, median reported (default 20)
#        CMAKE_ARGS      extra configure arguments
set -euo pipefail
# CMAKE_ARGS holds several configure arguments: split on blanks on purpose
read -r -a cmake_args <<<"${CMAKE_ARGS:-}"
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BACKEND=${FDMINI_BACKEND:-cuda}
RESULTS=${RESULTS:-$ROOT/bench/results}
SIZES=${SIZES:-"512x512x512 1024x1024x512"}
REPS=${REPS:-20}
mkdir -p "$RESULTS"
size_args=()
for s in $SIZES; do size_args+=(--size "$s"); done

for p in double float; do
  b="$ROOT/build-bench-$p"
  cmake -S "$ROOT" -B "$b" -DFDMINI_BACKEND="$BACKEND" -DFDMINI_PRECISION="$p" \
    -DFDMINI_TESTS=OFF -DFDMINI_GPU_TESTS=OFF "${cmake_args[@]}" >/dev/null
  cmake --build "$b" -j "$(nproc)" --target kernel_sweep >/dev/null
done

slug=$("$ROOT/build-bench-double/bench/kernel_sweep" --device-slug)
md="$RESULTS/$slug-kernel-sweep.md"
csv="$RESULTS/$slug-kernel-sweep.csv"
{
  echo "# Kernel sweep on $slug"
  echo
  echo "Produced by \`bench/run_kernel_sweep.sh $*\` on $(date -u '+%Y-%m-%d %H:%M UTC'),"
  echo "commit ${FDMINI_COMMIT:-$(git -C "$ROOT" describe --always --dirty 2>/dev/null || echo unknown)}, backend $BACKEND."
  echo "Effective GB/s counts one read of every point the stencil reads (interior + ghost faces)"
  echo "and one write of every interior point (the AMD lab notes' figure of merit); % of memcpy"
  echo "divides it by the device-to-device memcpy bandwidth (read + write) measured in the same run."
  echo "See bench/results/README.md for the variants and the default rule."
} >"$md"
rm -f "$csv"
status=0
for p in double float; do
  "$ROOT/build-bench-$p/bench/kernel_sweep" "${size_args[@]}" --reps "$REPS" "$@" \
    --md "$md" --csv "$csv" || status=1
done
echo "run_kernel_sweep: results in $md and $csv"
exit $status

#!/usr/bin/env bash
# run_fuse_sweep.sh - the one documented command behind bench/results/<device>-fuse-sweep.*:
# builds kernel_sweep (double) and runs its --fuse study: heat and jacobi with T = 1..4 time
# steps per pass through memory (the fused kernel) against the best single-step configuration
# and the memcpy bound (memcpy bandwidth / 16 bytes per point and step) measured in the same run,
# each checked bitwise against T single steps.
#
# Usage: bench/run_fuse_sweep.sh [--quick]
# Env:   FDMINI_COMMIT   commit to record where the tree has no .git (the device copies)
#        FDMINI_BACKEND  cuda (default) or hip
#        RESULTS         output folder (default bench/results)
#        SIZES           default "512x512x512"
#        REPS            timed repetitions per configuration, median reported (default 20)
#        CMAKE_ARGS      extra configure arguments
#        KERNEL_SWEEP    a kernel_sweep already built (double), e.g. prepare.sh's
#                        .device/bin/kernel_sweep: no build
set -euo pipefail
# CMAKE_ARGS holds several configure arguments: split on blanks on purpose
read -r -a cmake_args <<<"${CMAKE_ARGS:-}"
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BACKEND=${FDMINI_BACKEND:-cuda}
RESULTS=${RESULTS:-$ROOT/bench/results}
SIZES=${SIZES:-"512x512x512"}
REPS=${REPS:-20}
mkdir -p "$RESULTS"
size_args=()
for s in $SIZES; do size_args+=(--size "$s"); done
sweep=${KERNEL_SWEEP:-}
if [ -z "$sweep" ]; then
  b="$ROOT/build-bench-double"
  cmake -S "$ROOT" -B "$b" -DFDMINI_BACKEND="$BACKEND" -DFDMINI_PRECISION=double \
    -DFDMINI_TESTS=OFF -DFDMINI_GPU_TESTS=OFF "${cmake_args[@]}" >/dev/null
  cmake --build "$b" -j "$(nproc)" --target kernel_sweep >/dev/null
  sweep=$b/bench/kernel_sweep
fi
slug=$("$sweep" --device-slug)
md="$RESULTS/$slug-fuse-sweep.md"
csv="$RESULTS/$slug-fuse-sweep.csv"
{
  echo "# Several time steps per pass on $slug"
  echo
  echo "Produced by \`bench/run_fuse_sweep.sh $*\` on $(date -u '+%Y-%m-%d %H:%M UTC'),"
  echo "commit ${FDMINI_COMMIT:-$(git -C "$ROOT" describe --always --dirty 2>/dev/null || echo unknown)}, backend $BACKEND, double."
  echo "Points x steps per second = interior points x T / time of one pass; the best single step is"
  echo "the fastest of the autotune's candidates for the same operator in the same run."
  echo "See bench/results/README.md, \"Several steps per pass\"."
} >"$md"
rm -f "$csv"
status=0
"$sweep" --fuse "${size_args[@]}" --reps "$REPS" "$@" --md "$md" --csv "$csv" || status=$?
echo "run_fuse_sweep: results in $md and $csv"
exit $status

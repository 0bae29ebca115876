#!/usr/bin/env bash
# run_node.sh - the strong-scaling benchmarks of small blocks and deep halos on an NVIDIA GPU
# node, in one call (docs/small-blocks.md). Ranks that share one GPU run
# under MPS, which this script starts (nvidia-cuda-mps-control -d) and stops, and says so: without
# it ranks time-slice the GPU and the exchange measures nothing.
#
#   small   heat and jacobi, one step per pass (T = 1) and --fuse auto, blocks of 32, 48, 64,
#           96, 128, 256 and 512 cubed per rank, on 1 rank and on 2 (1x1x2) and 8 (2x2x2)
#           ranks sharing the node's GPU, GPU-aware MPI: every run beside the floors it
#           measures at start-up (F_g, F_ls, F_c, L, X). With BEFORE=BINARY the same runs of
#           an older fdmini too (its records have no floors; the new binary's are used).
#   deep    heat on 1x1x2, 1x2x2 and 2x2x2 layouts at 64^3, 128^3 and 256^3 per rank, --halo-width
#           1, 2, 4 with --fuse 1, and S = 2, 4 with --fuse auto; and --fuse 1..4 and auto on 1
#           rank and on 8 ranks (2x2x2, S = 4) at 32^3 to 512^3 (is auto within 5% of the best
#           fixed T?).
#
# Binaries come prebuilt (bench/multigpu/prepare.sh): .device/bin/fdmini-aware (the cuda backend
# against a CUDA-aware Open MPI build, .device/fdmini-ompi-cuda.tar.xz). Every run
# writes its JSON record and report to $OUT/records-MODE/NAME.{json,log}; bench/strong/table.py
# makes the tables ($OUT/MODE.md, $OUT/MODE.csv); the records end up in $OUT/records-MODE.tar.gz. SMALL_SIZES, SMALL_RANKS, SMALL_OPS, DEEP_SIZES, FUSE_SIZES
# override the lists. A mode whose files (records-MODE, records-MODE.tar.gz, MODE.md, MODE.csv)
# are already in $OUT, as an earlier or a killed call left them, is refused before anything
# runs (exit 2): use another OUT or remove them.
# Usage: bench/strong/run_node.sh [small|deep...]   (default: small deep; writes under $OUT)
set -uo pipefail
usage_line="usage: $0 [small|deep...]   (default: small deep; writes under \$OUT; --help: the whole story)"
[ $# -eq 0 ] && set -- small deep
seen=" "
for what in "$@"; do
  case $what in
  -h | --help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
  small | deep)
    if [[ $seen == *" $what "* ]]; then echo "run_node.sh: mode '$what' given twice" >&2; exit 2; fi
    seen+="$what " ;;
  *) echo "run_node.sh: unknown mode '$what'" >&2; echo "$usage_line" >&2; exit 2 ;;
  esac
done
OUT=${OUT:-/tmp/fdmini-out}
clash=()
for what in "$@"; do
  for f in "records-$what" "records-$what.tar.gz" "$what.md" "$what.csv"; do
    [ -e "$OUT/$f" ] && clash+=("$f")
  done
done
if [ ${#clash[@]} -gt 0 ]; then
  echo "run_node.sh: $OUT already holds ${clash[*]} (an earlier call's): use another OUT or remove them" >&2
  exit 2
fi
mkdir -p "$OUT"
bin=$PWD/.device/bin${FDMINI_PREP_TAG:+-$FDMINI_PREP_TAG}
here=$(cd "$(dirname "$0")" && pwd)
tar -xJf .device/fdmini-ompi-cuda.tar.xz -C / || { echo "cannot unpack the CUDA-aware MPI"; exit 1; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_mpi_common_cuda_warning=0
export OMPI_MCA_rmaps_base_oversubscribe=1 NCCL_NVLS_ENABLE=0
MPIRUN=/opt/fdmini-ompi/bin/mpirun
device=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
fails=0

# shellcheck disable=SC1091 # bench/mps.sh is checked on its own
. "$here/../mps.sh"
mps_start() {
  if mps_up; then
    echo "MPS: started (nvidia-cuda-mps-control -d); ranks sharing the GPU run side by side"
  else
    echo "MPS: nvidia-cuda-mps-control -d failed; ranks sharing the GPU time-slice it"
  fi
}
mps_stop() { mps_down && echo "MPS: stopped"; }

# steps_for N NP: st=(--warmup W --iters I) for N^3 blocks on NP ranks sharing the GPU. Small
# blocks: 20000 timed steps. From 256^3 the GPU runs at its power limit, where its clock settles
# over seconds (an H200 at 512^3: 1980 MHz, then down to 1320 and back, then 1485-1700 MHz after
# about 3 s), so that a short run times the clock it began at: the same number of untimed steps
# first, both scaled to the ranks' total points (bench/results/README.md, "Deep halos with edges
# and corners").
st=()
steps_for() {
  local i
  case $1 in
  32 | 48 | 64 | 96 | 128) st=(--iters 20000); return ;;
  256) i=$((8000 / $2)) ;;
  *) i=$((10000 / $2)) ;;
  esac
  st=(--warmup "$i" --iters "$i")
}

# one NAME NP PROCS BINARY ARGS...: one run, its record $rec/NAME.json; a failed run is logged.
# Verification PASS, or UNVERIFIED (exit 0): heat's sine mode on 32^3 and 48^3 blocks decays to
# the rounding of the boundary values within the 20000 steps that time them (the report says
# so); the tests check the arithmetic, this measures the step.
one() {
  local name=$1 np=$2 procs=$3 b=$4
  shift 4
  local pargs=()
  [ "$np" -gt 1 ] && pargs=(--procs "$procs" --mpi-gpu aware)
  if timeout 300 "$MPIRUN" -n "$np" --bind-to none "$b" --progress 0 "${pargs[@]}" "$@" \
    --json "$rec/$name.json" > "$rec/$name.log" 2>&1 && grep -Eq "verification: (PASS|UNVERIFIED) " "$rec/$name.log"; then
    # the slowest rank's step from the record (older binaries, BEFORE, print another report)
    printf '%-44s %s\n' "$name" "$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["phases_ms"]["step"]["max"], "ms")' "$rec/$name.json")"
  else
    printf '%-44s FAILED (see %s)\n' "$name" "$rec/$name.log"
    tail -5 "$rec/$name.log"
    rm -f "$rec/$name.json"
    fails=$((fails + 1))
  fi
}

run_small() {
  rec=$OUT/records-small
  mkdir "$rec" || exit 1 # absent: checked at the start
  echo "== small blocks on $device ($(date -u +%FT%TZ)), binary $bin/fdmini-aware${BEFORE:+, before: $BEFORE}"
  mps_start
  local n np procs op mode tag b
  for np in ${SMALL_RANKS:-1 2 8}; do
    case $np in 1) procs=1,1,1 ;; 2) procs=1,1,2 ;; 8) procs=2,2,2 ;; *) echo "ranks $np?"; continue ;; esac
    for n in ${SMALL_SIZES:-32 48 64 96 128 256 512}; do
      steps_for "$n" "$np"
      for op in ${SMALL_OPS:-heat jacobi}; do
        for mode in 1 auto; do
          for tag in after before; do
            b=$bin/fdmini-aware
            if [ $tag = before ]; then
              [ -n "${BEFORE:-}" ] || continue
              b=$BEFORE
            fi
            one "$tag-$op-n$n-np$np-fuse$mode" "$np" "$procs" "$b" --op "$op" --local "$n,$n,$n" \
              "${st[@]}" --fuse "$mode"
          done
        done
      done
    done
  done
  mps_stop
  python3 "$here/table.py" small "$rec" --device "$device" -o "$OUT/small"
  tar -C "$OUT" -czf "$OUT/records-small.tar.gz" records-small && rm -rf "$rec"
}

run_deep() {
  rec=$OUT/records-deep
  mkdir "$rec" || exit 1 # absent: checked at the start
  echo "== deep halos on $device ($(date -u +%FT%TZ)), binary $bin/fdmini-aware"
  mps_start
  local layout np n S fuse
  for layout in 1,1,2 1,2,2 2,2,2; do
    np=$((${layout//,/*}))
    for n in ${DEEP_SIZES:-64 128 256}; do
      steps_for "$n" "$np"
      for S in 1 2 4; do
        for fuse in 1 auto; do
          [ "$S" = 1 ] && [ "$fuse" = auto ] && continue
          one "deep-heat-$layout-n$n-S$S-fuse$fuse" "$np" "$layout" "$bin/fdmini-aware" --op heat \
            --local "$n,$n,$n" --halo-width "$S" --fuse "$fuse" "${st[@]}"
        done
      done
    done
  done
  # --fuse auto against every fixed T: 1 rank (any T), 8 ranks 2x2x2 with S = 4 (T divides S)
  local T
  for np in 1 8; do
    for n in ${FUSE_SIZES:-32 64 128 256 512}; do
      steps_for "$n" "$np"
      for T in 1 2 3 4 auto; do
        if [ "$np" = 8 ]; then
          [ "$T" = 3 ] && continue
          one "fuse-heat-np8-n$n-S4-fuse$T" 8 2,2,2 "$bin/fdmini-aware" --op heat --local "$n,$n,$n" \
            --halo-width 4 --fuse "$T" "${st[@]}"
        else
          one "fuse-heat-np1-n$n-fuse$T" 1 1,1,1 "$bin/fdmini-aware" --op heat --local "$n,$n,$n" \
            --fuse "$T" "${st[@]}"
        fi
      done
    done
  done
  mps_stop
  python3 "$here/table.py" deep "$rec" --device "$device" -o "$OUT/deep"
  tar -C "$OUT" -czf "$OUT/records-deep.tar.gz" records-deep && rm -rf "$rec"
}

for what in "$@"; do
  case $what in
  small) run_small ;;
  deep) run_deep ;;
  *) echo "$usage_line" >&2; exit 2 ;; # checked at the start
  esac
done
echo "runs failed: $fails"
[ "$fails" -eq 0 ]

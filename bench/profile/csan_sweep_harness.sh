#!/bin/bash
# throw-away harness (deleted in the next commit): compute-sanitizer initcheck, racecheck and
# synccheck over fdmini on one H200, run as bash .device/call6.sh (TOOLS=...) and call7.sh
# (initcheck after the fix) through the device tool with .device/bin from prepare.sh
# throw-away: compute-sanitizer initcheck, racecheck and synccheck over fdmini's kernels and
# exchange paths (only memcheck is in run_node.sh); logs under $OUT
set -u
tar -xJf .device/fdmini-ompi-cuda.tar.xz -C / 2>/dev/null
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_mpi_common_cuda_warning=0
R=/opt/fdmini-ompi/bin/mpirun
B=$PWD/.device/bin
CS=/usr/local/cuda/bin/compute-sanitizer; [ -x $CS ] || CS=compute-sanitizer
nvidia-smi --query-gpu=name --format=csv,noheader; $CS --version | tail -1
T0=$SECONDS
n=0
one() { # one TOOL LIMIT NP ARGS...
  local tool=$1 lim=$2 np=$3; shift 3
  n=$((n+1))
  local extra=()
    [ "$tool" = racecheck ] && extra=(--racecheck-report hazard)
  local t=$SECONDS
  if [ "$np" = 1 ]; then
    timeout -k 10 "$lim" $CS --tool "$tool" "${extra[@]}" --report-api-errors no --print-limit 100000 --error-exitcode 9 "$B/fdmini-aware" --progress 0 "$@" > "$OUT/$n-$tool.log" 2>&1
  else
    timeout -k 10 "$lim" $R -n "$np" --bind-to none $CS --tool "$tool" "${extra[@]}" --report-api-errors no --print-limit 100000 --error-exitcode 9 "$B/fdmini-aware" --progress 0 "$@" > "$OUT/$n-$tool.log" 2>&1
  fi
  local rc=$?
  grep -hE "Uninitialized|Host Frame" "$OUT/$n-$tool.log" | sed -E 's/0x[0-9a-f]+/X/g' | sort | uniq -c | sort -rn | head -12 > "$OUT/$n-$tool.sites"
  echo "[$n] $tool np$np rc=$rc $((SECONDS-t))s: $* | $(grep -h 'SUMMARY' "$OUT/$n-$tool.log" | sort | uniq -c | tr -s ' ' | tr '\n' ';') $(grep -h 'verification:' "$OUT/$n-$tool.log" | head -1)"
}
for tool in ${TOOLS:-initcheck racecheck synccheck}; do
  [ $((SECONDS - T0)) -gt 480 ] && { echo "time: stop before $tool"; break; }
  one $tool 120 1 --op heat --global 40,36,33 --iters 6 --warmup 1
  one $tool 90 1 --op laplacian --global 40,36,33 --iters 6 --warmup 1 --tune off
  one $tool 90 4 --op jacobi --global 40,33,21 --procs 2,2,1 --iters 12 --warmup 1 --tune off --halo-path ipc --halo-width 2 --fuse 2 --graphs on
  one $tool 90 1 --op wave --global 33,31,29 --iters 6 --warmup 1 --tune off
  one $tool 90 1 --op jacobi --global 33,31,29 --iters 6 --warmup 1 --halo-width 3 --fuse 3 --tune off
  one $tool 90 2 --op heat --global 64,48,40 --iters 8 --warmup 1 --tune off --halo-path ipc --graphs on
  one $tool 90 2 --op heat --global 64,48,40 --iters 8 --warmup 1 --tune off --test-node-ranks 1 --halo-path proxy --graphs on
  one $tool 90 2 --op heat --global 40,33,21 --iters 8 --warmup 1 --tune off --halo-path mpi --mpi-gpu staged --halo-width 2
done
echo "total $((SECONDS - T0)) s"

# ---- call7.sh (initcheck after the fix) ----
# for tool in initcheck; do
#   one $tool 120 1 --op heat --global 40,36,33 --iters 6 --warmup 1
#   one $tool 90 2 --op heat --global 64,48,40 --iters 8 --warmup 1 --halo-path mpi --graphs on
#   one $tool 90 2 --op wave --global 40,33,21 --iters 8 --warmup 1 --tune off --halo-path mpi --halo-width 2
#   one $tool 90 2 --op jacobi --global 64,48,40 --iters 8 --warmup 1 --tune off --test-node-ranks 1 --halo-path proxy --mpi-gpu staged --graphs on
#   one $tool 90 4 --op heat --global 40,33,21 --procs 2,2,1 --iters 12 --warmup 1 --tune off --halo-path mpi --halo-width 2 --fuse 2
# done

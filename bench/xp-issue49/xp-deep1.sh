#!/usr/bin/env bash
# throwaway: deep signalled exchange on one GPU under MPS
set -uo pipefail
OUT=${OUT:-/tmp/o}; mkdir -p "$OUT"
tar -xJf .device/fdmini-ompi-cuda.tar.xz -C / || exit 1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_mpi_common_cuda_warning=0 OMPI_MCA_rmaps_base_oversubscribe=1
B=$PWD/.device/bin
R=/opt/fdmini-ompi/bin/mpirun
w=$(mktemp -d)
fd() { local np=$1; shift; timeout -k 5 120 $R -n "$np" --bind-to none "$B/fdmini-aware" --progress 0 "$@" > "$w/last.log" 2>&1; }
t0=$SECONDS
true || timeout 300 "$B/test_gpu_regions" > "$OUT/regions.log" 2>&1; echo "regions rc $? $(tail -1 $OUT/regions.log) $((SECONDS-t0)) s"
grep -i "fail" "$OUT/regions.log" | head -20; cp $OUT/regions.log $OUT/regions.txt
nvidia-cuda-mps-control -d
for op in heat jacobi wave laplacian; do
  fd 1 --op $op --global 130,97,65 --iters 12 --warmup 1 --dump "$w/ref-$op.raw"; echo "ref $op rc $?"
done
run() { # np procs op args...
  local np=$1 procs=$2 op=$3; shift 3
  fd "$np" --op "$op" --global 130,97,65 --iters 12 --warmup 1 --procs "$procs" --halo-path ipc "$@" --dump "$w/d.raw"; local rc=$?
  local v; v=$(grep -o "verification: [A-Z]*" "$w/last.log"); cmp -s "$w/d.raw" "$w/ref-$op.raw" && v="$v bitwise" || v="$v DIFFERS"
  echo "$np $procs $op $* : rc $rc $v | $(grep -o 'signalled   [0-9]* of the timed passes exchanged [a-z ]*' "$w/last.log") | $(grep -o 'took [A-Za-z ]*$' "$w/last.log")"
  [ $rc -eq 0 ] || { grep -E "error|FAIL|waited" "$w/last.log" | head -9; cp "$w/last.log" "$OUT/fail-$RANDOM.log"; }
}
run 2 1,1,2 heat --halo-width 2
run 2 1,1,2 heat --halo-width 4 --fuse auto
run 4 1,2,2 jacobi --halo-width 3 --fuse 3 --graphs off
run 8 2,2,2 heat --halo-width 4 --fuse 2 --graphs on
run 2 1,1,2 wave --halo-width 3
run 8 2,2,2 wave --halo-width 2 --graphs off
for k in 1 2 3 4 5 6 7 8; do run 4 1,2,2 jacobi --halo-width 3 --fuse 3 --graphs off; done
for k in 1 2 3; do run 8 2,2,2 heat --halo-width 3 --graphs off; done
run 4 1,2,2 heat --halo-width 2 --test-delays
fd 8 --op heat --global 130,97,65 --iters 12 --warmup 1 --procs 2,2,2 --halo-path ipc --halo-width 3 --test-inject-fault=exchange; echo "fault exchange rc $? $(grep -o 'verification: [A-Z]*' $w/last.log) $(grep -o 'signalled   [0-9]* of the timed passes exchanged [a-z ]*' "$w/last.log")"
fd 2 --op jacobi --global 130,97,65 --iters 12 --warmup 1 --procs 1,1,2 --halo-path ipc --halo-width 2 --test-inject-fault=order; echo "fault order rc $? $(grep -o 'verification: [A-Z]*' $w/last.log) $(grep -o 'signalled   [0-9]* of the timed passes exchanged [a-z ]*' "$w/last.log")"
timeout 60 $R -n 2 --bind-to none "$B/fdmini-aware" --progress 0 --op heat --global 64,64,64 --iters 20 --warmup 2 --procs 1,1,2 --halo-path ipc --halo-width 2 --test-stall 1 > "$w/last.log" 2>&1; echo "stall rc $? $(grep -m1 'waited more than' $w/last.log | cut -c1-200)"
echo quit | nvidia-cuda-mps-control
echo "total $((SECONDS-t0)) s"
echo quit | nvidia-cuda-mps-control

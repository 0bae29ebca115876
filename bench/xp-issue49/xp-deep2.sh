#!/usr/bin/env bash
set -uo pipefail
OUT=${OUT:-/tmp/o}; mkdir -p "$OUT"
tar -xJf .device/fdmini-ompi-cuda.tar.xz -C / || exit 1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_mpi_common_cuda_warning=0 OMPI_MCA_rmaps_base_oversubscribe=1
B=$PWD/.device/bin
R=/opt/fdmini-ompi/bin/mpirun
nvidia-cuda-mps-control -d
i=0
for a in "--op jacobi --procs 1,2,2 --halo-width 3 --fuse 3 --graphs off" "--op jacobi --procs 1,2,2 --halo-width 3 --fuse 3 --graphs on" "--op heat --procs 1,2,2 --halo-width 3 --fuse 1 --graphs off"; do
  i=$((i+1)); t0=$SECONDS
  timeout -k 5 100 $R -n 4 --bind-to none "$B/fdmini-aware" --progress 0 --global 130,97,65 --iters 12 --warmup 1 --halo-path ipc $a > "$OUT/r$i.log" 2>&1
  echo "[$a] rc $? $((SECONDS-t0)) s: $(grep -E 'error|verification' $OUT/r$i.log | head -3 | cut -c1-250)"
done
echo quit | nvidia-cuda-mps-control

#!/usr/bin/env bash
# throwaway (not committed): run_node.sh xdev on the final code; 512^3 on 4 GPUs, interior with and without overlap
set -u
OUT=${OUT:-/tmp/o}; mkdir -p "$OUT"
t0=$(date +%s)
OUT=$OUT/xdev timeout 240 bash bench/multigpu/run_node.sh xdev > "$OUT/xdev-stdout.txt" 2>&1
echo "xdev rc=$? at $(( $(date +%s) - t0 )) s"
grep -E "^FAIL|cross-device cases" "$OUT/xdev/tests.log"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_mpi_common_cuda_warning=0
B=$PWD/.device/bin/fdmini-aware
for a in "--halo-path mpi" "--halo-path mpi --no-overlap" "--halo-path ipc"; do
  # shellcheck disable=SC2086
  timeout 60 /opt/fdmini-ompi/bin/mpirun -n 4 --bind-to none "$B" --progress 0 --op heat --global 512,512,512 --procs 1,2,2 \
    --kernel zmarch --warmup 200 --iters 1000 $a > "$OUT/r.log" 2>&1
  echo "512^3 x4 $a: step $(awk '$1=="step" && NF==4 {print $4*1000}' "$OUT/r.log") us; $(grep -E "^  interior|^  boundary|^  pack  |^  unpack" "$OUT/r.log" | tr -s ' ' | tr '\n' ';')"
  [ $(( $(date +%s) - t0 )) -gt 280 ] && break
done
rm -f "$OUT/r.log"

#!/usr/bin/env bash
# throwaway (not committed): issue 49, signalled passes for the laplacian and the wave; timing; then run_node.sh xdev
set -u
OUT=${OUT:-/tmp/o}; mkdir -p "$OUT"
tar -xJf .device/fdmini-ompi-cuda.tar.xz -C / || exit 1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_mpi_common_cuda_warning=0 OMPI_MCA_rmaps_base_oversubscribe=1
R=/opt/fdmini-ompi/bin/mpirun
S=$OUT/summary.txt
t0=$(date +%s)
timeout 200 .device/bin/test_gpu_regions > "$OUT/regions.log" 2>&1; echo "regions rc=$? $(tail -1 "$OUT/regions.log")" | tee -a "$S"
grep -E "FAIL|variants" "$OUT/regions.log" | head -20 | tee -a "$S"
B=$PWD/.device/bin/fdmini-aware
run() { # tag np args
  local tag=$1 np=$2; shift 2
  local log=$OUT/$tag.log
  timeout 120 $R -n "$np" --bind-to none "$B" --progress 0 "$@" > "$log" 2>&1
  local rc=$?
  step=$(awk '$1=="step" && NF==4 {print $4*1000}' "$log")
  ver=$(grep -o 'verification: [A-Z]*' "$log")
  sig=$(grep -c "^  signalled" "$log")
  printf '%-22s rc %d np %d step %8.2f us %s sig %s | %s\n' "$tag" $rc "$np" "$step" "$ver" "$sig" "$*" | tee -a "$S"
  grep -E "path trial|interior  |^  floors|took" "$log" | head -6 | sed 's/^/    /' | tee -a "$S"
}
for op in heat laplacian wave; do
  run "$op-128-1" 1 --op $op --global 128,128,128 --warmup 1000 --iters 10000
  run "$op-128-2" 2 --op $op --global 128,128,128 --warmup 1000 --iters 10000 --procs 1,1,2
  run "$op-128-4" 4 --op $op --global 128,128,128 --warmup 1000 --iters 10000 --procs 1,2,2
done
run "heat-512x256x256-1" 1 --op heat --global 512,256,256 --warmup 200 --iters 2000
run "heat-512-4" 4 --op heat --global 512,512,512 --warmup 200 --iters 1000 --procs 1,2,2
echo "timing done at $(( $(date +%s) - t0 )) s" | tee -a "$S"
tar czf "$OUT/xp4-logs.tar.gz" -C "$OUT" $(cd "$OUT" && ls *.log) && rm -f "$OUT"/*.log
OUT=$OUT/xdev timeout $(( 570 - ($(date +%s) - t0) )) bash bench/multigpu/run_node.sh xdev > "$OUT/xdev-stdout.txt" 2>&1
echo "xdev rc=$? at $(( $(date +%s) - t0 )) s" | tee -a "$S"
grep -E "^FAIL|cross-device cases" "$OUT/xdev/tests.log" | tee -a "$S"

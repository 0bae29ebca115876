#!/usr/bin/env bash
# throwaway (not committed): issue 49, 512^3 on 4 GPUs: is one GPU's step slower when all four run? then run_node.sh base
set -u
OUT=${OUT:-/tmp/o}; mkdir -p "$OUT"
tar -xJf .device/fdmini-ompi-cuda.tar.xz -C / || exit 1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_mpi_common_cuda_warning=0 OMPI_MCA_rmaps_base_oversubscribe=1
R=/opt/fdmini-ompi/bin/mpirun
S=$OUT/summary.txt
t0=$(date +%s)
B=$PWD/.device/bin/fdmini-aware
A=(--op heat --global 512,256,256 --warmup 300 --iters 3000 --kernel zmarch)
one() { CUDA_VISIBLE_DEVICES=$1 timeout 120 $R -n 1 --bind-to none "$B" --progress 0 "${A[@]}" > "$OUT/$2.log" 2>&1; }
st() { awk '$1=="step" && NF==4 {print $4*1000}' "$OUT/$1.log"; }
for g in 0 1 2 3; do one $g alone$g; echo "alone gpu$g step $(st alone$g) us" | tee -a "$S"; done
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv -lms 500 > "$OUT/smi.csv" 2>&1 &
smi=$!
for g in 0 1 2 3; do one $g together$g & done
wait %2 %3 %4 %5 2>/dev/null; sleep 1; kill $smi
for g in 0 1 2 3; do echo "together gpu$g step $(st together$g) us" | tee -a "$S"; done
grep -E "zmarch|kernel  " "$OUT/alone0.log" | head -3 | tee -a "$S"
awk -F, 'NR>1 {n[$1]++; sm[$1]+=$2; p[$1]+=$4} END {for (g in n) printf "gpu%s mean sm %.0f MHz power %.0f W over %d samples\n", g, sm[g]/n[g], p[g]/n[g], n[g]}' "$OUT/smi.csv" | tee -a "$S"
echo "concurrency done at $(( $(date +%s) - t0 )) s" | tee -a "$S"
tar czf "$OUT/xp5-logs.tar.gz" -C "$OUT" $(cd "$OUT" && ls *.log smi.csv) && rm -f "$OUT"/*.log
OUT=$OUT/base timeout $(( 585 - ($(date +%s) - t0) )) bash bench/multigpu/run_node.sh base > "$OUT/base-stdout.txt" 2>&1
echo "base rc=$? at $(( $(date +%s) - t0 )) s" | tee -a "$S"
grep -E "^FAIL|multi-GPU tests:" "$OUT/base/tests.log" | tee -a "$S"
grep -cE "^ok" "$OUT/base/tests.log" | tee -a "$S"

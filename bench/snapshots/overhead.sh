#!/usr/bin/env bash
# overhead.sh - issue 7's snapshot overhead on one NVIDIA GPU, in one call (the device tool);
# everything under $OUT (at most 5 files: overhead.log, table.md, io.txt, checks.log, logs.tgz):
#   1. checks of the snapshot path on the GPU: --op wave with a snapshot every 3 steps on 1 rank
#      and on 2 ranks sharing the GPU gives the same files byte for byte, the last equals the
#      --dump of the same step, no .tmp is left; a failed write (test switch) exits 4 on both
#      ranks and leaves only complete files
#   2. io_bandwidth: device-to-host (pinned) and file-write bandwidth for each snapshot size,
#      into DIR and into /dev/shm
#   3. heat, double, 1 GPU: steps per second without snapshots (before and after) and with a
#      snapshot every 10, 100, 200, 400, 1000, 2000 steps, at 128^3, 256^3 and 512^3; runs of 8.5
#      intervals (4.5 from 400 on) counting the 10 warm-up steps, so each timed run holds 7 to
#      8 (4) snapshots and ends half an interval after the last (the steady state, not the
#      end); the timing still lasts until every snapshot is on disk
#   4. table.py prints the table (bench/snapshots/README.md explains the columns)
# Exit 0 when every check passed and the table was made; else 1 (checks.log and table.md say
# which).
# Usage: bench/snapshots/overhead.sh [DIR]    DIR: where snapshots go (default
#        /tmp/fdmini-snapbench: the node's local disk, through the page cache)
# Binaries: bench/snapshots/prepare.sh on the build machine (same FDMINI_PREP_TAG).
set -uo pipefail
OUT=${OUT:-/tmp/fdmini-snap-out}
dir=${1:-/tmp/fdmini-snapbench}
mkdir -p "$OUT" "$dir"
bin=$PWD/.device/bin${FDMINI_PREP_TAG:+-$FDMINI_PREP_TAG}
logs=$(mktemp -d)
work=$(mktemp -d)
mkdir -p "$logs/json"
tar -xJf .device/fdmini-ompi-cuda.tar.xz -C / || { echo "cannot unpack the CUDA-aware MPI"; exit 1; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_mpi_common_cuda_warning=0
export OMPI_MCA_rmaps_base_oversubscribe=1
R=/opt/fdmini-ompi/bin/mpirun
log=$OUT/overhead.log
say() { printf '%s\n' "$*" | tee -a "$log"; }
say "# fdmini snapshot overhead on $(nvidia-smi --query-gpu=name,pci.bus_id,driver_version --format=csv,noheader | head -1), $(date -u +%FT%TZ)"
say "# $(nproc) CPUs, $(free -g | awk '/Mem/ {print $2}') GiB RAM; commit ${FDMINI_COMMIT:-$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)}"
say "# snapshot directory $dir: $(findmnt -n -o FSTYPE,SOURCE -T "$dir" | tr -s ' '), $(df -h "$dir" | awk 'NR==2 {print $2 " size, " $4 " free"}')"
fd() { # fd NP NAME ARGS...: the CUDA-aware binary on NP ranks, output in $logs/NAME.log
  local np=$1 name=$2
  shift 2
  timeout 180 "$R" -n "$np" --bind-to none "$bin/fdmini-aware" --report full --progress 0 "$@" > "$logs/$name.log" 2>&1
}

# ---- 1. checks
chk=$OUT/checks.log
pass=0
fail=0
check() { if [ "$1" = 0 ]; then pass=$((pass + 1)); echo "ok   $2" >> "$chk"; else fail=$((fail + 1)); echo "FAIL $2" >> "$chk"; fi; }
W=(--op wave --global "65,65,65" --warmup 2 --iters 61 --snapshot-every 3)
fd 1 wave1 "${W[@]}" --dump "$work/w1.raw" --snapshot-dir "$work/w1"
check $? "wave, 1 rank, snapshot every 3 steps: exit 0"
fd 2 wave2 "${W[@]}" --dump "$work/w2.raw" --snapshot-dir "$work/w2"
check $? "wave, 2 ranks sharing the GPU, snapshot every 3 steps: exit 0"
n1=$(find "$work/w1" -name 'snap_*.raw' | wc -l)
check "$([ "$n1" -eq 21 ] && [ "$(find "$work/w2" -name 'snap_*.raw' | wc -l)" -eq 21 ] && echo 0 || echo 1)" "21 snapshot files each (found $n1)"
same=0
for f in "$work"/w1/snap_*.raw; do cmp -s "$f" "$work/w2/$(basename "$f")" || same=1; done
check $same "every snapshot: 2 ranks == 1 rank, byte for byte"
check "$(cmp -s "$work/w1/snap_000063.raw" "$work/w1.raw" && cmp -s "$work/w2/snap_000063.raw" "$work/w2.raw" && echo 0 || echo 1)" "last snapshot == --dump of the same step (1 and 2 ranks)"
check "$([ "$(grep -c '<Grid Name="step_' "$work/w2/snapshots.xmf")" -eq 21 ] && [ -z "$(find "$work/w1" "$work/w2" -name '*tmp*')" ] && echo 0 || echo 1)" "XDMF lists 21, no .tmp left"
fd 2 fail --op heat --global 31,31,31 --iters 40 --snapshot-every 10 --snapshot-dir "$work/f" --test-fail-snapshot-write 2
rc=$?
check "$([ $rc -eq 4 ] && [ "$(grep -c 'fdmini: error:' "$logs/fail.log")" -eq 1 ] && [ -f "$work/f/snap_000010.raw" ] &&
  [ ! -e "$work/f/snap_000020.raw" ] && [ -z "$(find "$work/f" -name '*tmp*')" ] && echo 0 || echo 1)" "failed write on the GPU build: exit 4 ($rc), one error line, only complete files"
grep -h 'snapshots  \|writer thread' "$logs/wave1.log" "$logs/wave2.log" >> "$chk"
grep -h 'fdmini: error' "$logs/fail.log" >> "$chk"
say "checks: $pass passed, $fail failed"
rm -rf "${work:?}"/*

# ---- 2. bandwidths on this node
sizes=(16777216 134217728 1073741824) # 128^3, 256^3, 512^3 doubles
"$bin/io_bandwidth" "$dir" "${sizes[@]}" > "$OUT/io.txt" 2>&1
mkdir -p /dev/shm/fdmini-io
"$bin/io_bandwidth" /dev/shm/fdmini-io "${sizes[@]}" | sed 's/^io /shm /' >> "$OUT/io.txt" 2>&1
rm -rf /dev/shm/fdmini-io
tee -a "$log" < "$OUT/io.txt"

# ---- 3. the overhead matrix
run() { # run N NAME ITERS [snapshot args]
  local n=$1 name=$2 iters=$3
  shift 3
  fd 1 "n$n-$name" --op heat --global "$n,$n,$n" --warmup 10 --iters "$iters" --no-check \
    --json "$logs/json/n$n-$name.json" "$@"
  local rc=$?
  say "$(printf 'n%-4s %-7s rc %s %s' "$n" "$name" "$rc" "$(grep -E '^  step |snapshots  |writer thread' "$logs/n$n-$name.log" | tr -s ' ' | tr '\n' ' ')")"
  rm -rf "$dir/s"
}
for n in 128 256 512; do
  case $n in 128) none=20000 ;; 256) none=5000 ;; *) none=1000 ;; esac
  run "$n" none-a "$none"
  for i in 10 100 200 400 1000 2000; do
    if [ "$i" -le 200 ]; then it=$((8 * i + i / 2 - 10)); else it=$((4 * i + i / 2 - 10)); fi
    run "$n" "i$i" "$it" --snapshot-every "$i" --snapshot-dir "$dir/s"
  done
  run "$n" none-b "$none"
done

# ---- 4. the table
python3 bench/snapshots/table.py "$logs/json" "$OUT/io.txt" > "$OUT/table.md" 2>&1
table_rc=$?
tee -a "$log" < "$OUT/table.md"
tar -czf "$OUT/logs.tgz" -C "$logs" .
rm -rf "$work" "$logs" "$dir"
say "# done $(date -u +%FT%TZ)"
# a failed check or a table that could not be made (table.md says why) is a failed study
[ "$fail" -eq 0 ] && [ "$table_rc" -eq 0 ]

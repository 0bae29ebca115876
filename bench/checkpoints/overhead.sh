#!/usr/bin/env bash
# overhead.sh - issue 29's checkpoint cost and restart time on one NVIDIA GPU, in one call (the
# device tool); everything under $OUT (at most 5 files: overhead.log, table.md, fs.txt,
# checks.log, logs.tgz):
#   1. fs_bandwidth.py: write + fsync, cold read (the file dropped from the page cache) and cached
#      read of a file of each checkpoint size in DIR, one thread, as fdmini writes and reads them
#   2. heat (one level) and wave (two), double, 1 GPU, 512^3 and 256^3: steps per second without
#      checkpoints (runs before and after) and with one every 1000 steps (and 200 and 5000 at
#      512^3: the cost against the interval); runs of 4.9 intervals counting the 10 warm-up
#      steps, so each timed run holds 4 checkpoints and ends 0.9 of an interval after the last
#      (the steady state, where a writer has the interval for its checkpoint; a run pays the
#      last one's commit once, at its end); the timing lasts until the last one is committed
#   3. the restart: the run of every 1000 steps continued from its last checkpoint (step 4000;
#      500 steps left), once with the file dropped from the page cache first (cold) and once
#      right after (cached): fdmini's read time (read, checksums, copies into the fields,
#      slowest rank) beside the file system's read bandwidth of step 1; the continued run's field
#      equals the uninterrupted one's (checks.log), and the cold restart on 2 ranks sharing the GPU
#   4. table.py prints the tables (bench/checkpoints/README.md explains the columns)
# Exit 0 when every check passed and the table was made; else 1 (checks.log and table.md say
# which).
# Usage: bench/checkpoints/overhead.sh [DIR]   DIR: the checkpoint directory (default
#        /tmp/fdmini-ckptbench: the node's local disk; the target is the cost with fsync)
# Binaries: bench/multigpu/prepare.sh on the build machine (same FDMINI_PREP_TAG).
set -uo pipefail
OUT=${OUT:-/tmp/fdmini-ckpt-out}
dir=${1:-/tmp/fdmini-ckptbench}
mkdir -p "$OUT" "$dir"
bin=$PWD/.device/bin${FDMINI_PREP_TAG:+-$FDMINI_PREP_TAG}
logs=$(mktemp -d)
mkdir -p "$logs/json"
tar -xJf .device/fdmini-ompi-cuda.tar.xz -C / || { echo "cannot unpack the CUDA-aware MPI"; exit 1; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_mpi_common_cuda_warning=0
export OMPI_MCA_rmaps_base_oversubscribe=1
R=/opt/fdmini-ompi/bin/mpirun
log=$OUT/overhead.log
say() { printf '%s\n' "$*" | tee -a "$log"; }
say "# fdmini checkpoint overhead on $(nvidia-smi --query-gpu=name,pci.bus_id,driver_version --format=csv,noheader | head -1), $(date -u +%FT%TZ)"
say "# $(nproc) CPUs, $(free -g | awk '/Mem/ {print $2}') GiB RAM; commit ${FDMINI_COMMIT:-$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)}"
say "# checkpoint directory $dir: $(findmnt -n -o FSTYPE,SOURCE -T "$dir" | tr -s ' '), $(df -h "$dir" | awk 'NR==2 {print $2 " size, " $4 " free"}')"
fd() { # fd NP NAME ARGS...: the CUDA-aware binary on NP ranks, output in $logs/NAME.log
  local np=$1 name=$2
  shift 2
  timeout 600 "$R" -n "$np" --bind-to none "$bin/fdmini-aware" --report full --progress 0 "$@" >"$logs/$name.log" 2>&1
}
drop_cache() { # drop_cache FILE: its pages out of the page cache (it was synced when committed)
  python3 -c "import os, sys; f = os.open(sys.argv[1], os.O_RDONLY); os.posix_fadvise(f, 0, 0, os.POSIX_FADV_DONTNEED)" "$1"
}
chk=$OUT/checks.log
pass=0
fail=0
check() { if [ "$1" = 0 ]; then pass=$((pass + 1)); echo "ok   $2" >>"$chk"; else fail=$((fail + 1)); echo "FAIL $2" >>"$chk"; fi; }

# ---- 1. the file system: a file of each checkpoint size (heat: one level, wave: two)
sizes=(134217728 268435456 1073741824 2147483648) # 256^3 and 512^3 doubles, x 1 and 2
python3 bench/checkpoints/fs_bandwidth.py "$dir" "${sizes[@]}" >"$OUT/fs.txt" 2>&1
tee -a "$log" <"$OUT/fs.txt"

# ---- 2. the overhead matrix; 3. the restart of the every-1000 runs
run() { # run N OP NAME EVERY: one run; EVERY 0: none
  local n=$1 op=$2 name=$3 every=$4 iters=4890 ck=()
  [ "$every" -gt 0 ] && iters=$((4 * every + 9 * every / 10 - 10)) ck=(--checkpoint-every "$every" --checkpoint-dir "$dir/$op$n-$every")
  rm -rf "$dir/$op$n-$every"
  fd 1 "$op$n-$name" --op "$op" --global "$n,$n,$n" --warmup 10 --iters "$iters" --no-check \
    --json "$logs/json/n$n-$op-$name.json" "${ck[@]}"
  local rc=$?
  say "$(printf 'n%-4s %-5s %-7s rc %s %s' "$n" "$op" "$name" "$rc" "$(grep -E '^  step |checkpoints  |writer thread \(of' "$logs/$op$n-$name.log" | tr -s ' ' | tr '\n' ' ')")"
  [ "$every" -gt 0 ] && [ "$every" -ne 1000 ] && rm -rf "$dir/$op$n-$every"
  return 0
}
restart() { # restart N OP: the every-1000 run continued from its checkpoint of step 4000
  local n=$1 op=$2 f
  f=$(printf '%s/%s%s-1000/ckpt_%010d.fdmini' "$dir" "$op" "$n" 4000)
  if [ ! -f "$f" ]; then
    check 1 "$op $n^3: no checkpoint of step 4000 to restart from"
    return
  fi
  fd 1 "$op$n-ref" --op "$op" --global "$n,$n,$n" --warmup 10 --iters 4490 --no-check --dump "$dir/ref.raw"
  local cache np
  for cache in cold cached; do
    [ $cache = cold ] && drop_cache "$f"
    fd 1 "$op$n-restart-$cache" --op "$op" --global "$n,$n,$n" --warmup 10 --iters 4490 --no-check --restart "$f" \
      --json "$logs/json/n$n-$op-restart-$cache.json" --dump "$dir/r.raw"
    say "$(printf 'n%-4s %-5s restart %-6s rc %s %s' "$n" "$op" "$cache" "$?" "$(grep -E '^  restart ' "$logs/$op$n-restart-$cache.log" | tr -s ' ')")"
    cmp -s "$dir/r.raw" "$dir/ref.raw"
    check $? "$op $n^3 continued from step 4000 ($cache): the field equals the uninterrupted run's"
  done
  # and on 2 ranks sharing the GPU (another decomposition), cold
  drop_cache "$f"
  np=2
  fd $np "$op$n-restart-2ranks" --op "$op" --global "$n,$n,$n" --warmup 10 --iters 4490 --no-check --restart "$f" \
    --dump "$dir/r.raw"
  cmp -s "$dir/r.raw" "$dir/ref.raw"
  check $? "$op $n^3 continued from step 4000 on 2 ranks: the field equals the uninterrupted run's"
  rm -f "$dir/r.raw" "$dir/ref.raw"
  rm -rf "${f%/*}"
}
for n in 256 512; do
  for op in heat wave; do
    run "$n" "$op" none-a 0
    intervals=(1000)
    [ "$n" = 512 ] && [ "$op" = heat ] && intervals=(200 1000 5000)
    for i in "${intervals[@]}"; do run "$n" "$op" "i$i" "$i"; done
    run "$n" "$op" none-b 0
    restart "$n" "$op"
  done
done
say "checks: $pass passed, $fail failed"

# ---- 4. the tables
python3 bench/checkpoints/table.py "$logs/json" "$OUT/fs.txt" >"$OUT/table.md" 2>&1
table_rc=$?
tee -a "$log" <"$OUT/table.md"
tar -czf "$OUT/logs.tgz" -C "$logs" .
rm -rf "$logs" "$dir"
say "# done $(date -u +%FT%TZ)"
# a failed check or a table that could not be made (table.md says why) is a failed study
[ "$fail" -eq 0 ] && [ "$table_rc" -eq 0 ]

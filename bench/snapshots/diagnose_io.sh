#!/usr/bin/env bash
# diagnose_io.sh - where the snapshot time goes on a GPU node (second device call of issue 7):
# page-cache write speed of /tmp and /dev/shm (dd), the snapshot run at 256^3 every 10 steps to
# /tmp, to /dev/shm and through ROMIO instead of OMPIO, and one blocking --dump of 512^3; then
# the two-layer 2-rank wave again for the PNG slices. Few files under $OUT (logs in one tar).
set -uo pipefail
OUT=${OUT:-/tmp/fdmini-io-out}
mkdir -p "$OUT"
bin=$PWD/.device/bin
logs=$(mktemp -d)
work=/tmp/fdio
rm -rf "$work" /dev/shm/fdio
mkdir -p "$work" /dev/shm/fdio
tar -xJf .device/fdmini-ompi-cuda.tar.xz -C / || exit 1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_mpi_common_cuda_warning=0
export OMPI_MCA_rmaps_base_oversubscribe=1
R=/opt/fdmini-ompi/bin/mpirun
log=$OUT/io.log
say() { printf '%s\n' "$*" | tee -a "$log"; }
say "# $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1), $(date -u +%FT%TZ)"
for d in "$work" /dev/shm/fdio; do
  say "dd 2 GiB to $d: $(dd if=/dev/zero of=$d/dd bs=1M count=2048 2>&1 | tail -1)"
  rm -f "$d/dd"
done
fd() { local np=$1 name=$2; shift 2; timeout 120 "$R" -n "$np" --bind-to none "$bin/fdmini-aware" --progress 0 "$@" > "$logs/$name.log" 2>&1; }
row() { say "$(printf '%-26s' "$1") $(grep -E '^  step |snapshots  ' "$logs/$1.log" | tr -s ' ' | tr '\n' ' ')"; }
H=(--op heat --global "256,256,256" --warmup 10 --iters 100 --no-check)
fd 1 none "${H[@]}"; row none
fd 1 tmp-ompio "${H[@]}" --snapshot-every 10 --snapshot-dir "$work/s"; row tmp-ompio; rm -rf "$work/s"
fd 1 shm-ompio "${H[@]}" --snapshot-every 10 --snapshot-dir /dev/shm/fdio/s; row shm-ompio; rm -rf /dev/shm/fdio/s
OMPI_MCA_io=romio321 fd 1 tmp-romio "${H[@]}" --snapshot-every 10 --snapshot-dir "$work/s"; row tmp-romio; rm -rf "$work/s"
OMPI_MCA_io=romio321 fd 1 shm-romio "${H[@]}" --snapshot-every 10 --snapshot-dir /dev/shm/fdio/s; row shm-romio; rm -rf /dev/shm/fdio/s
t0=$(date +%s.%N); fd 1 dump512 --op heat --global 512,512,512 --warmup 0 --iters 1 --no-check --dump "$work/d.raw"; t1=$(date +%s.%N)
say "blocking --dump of 512^3 (1.07 GB) incl. start-up: $(python3 -c "print(round($t1 - $t0, 2))") s"; rm -f "$work/d.raw"
fd 2 layers --op wave --velocity 1,2 --global 255,255,255 --warmup 0 --iters 400 --snapshot-every 100 --snapshot-dir "$work/layers"
say "two-layer wave, 2 ranks: rc $? $(grep -E 'verification' "$logs/layers.log")"
cp "$work/layers/snapshots.xmf" "$logs/"
for ax in y z; do
  python3 bench/snapshots/render_slice.py "$work/layers/snapshots.xmf" --axis $ax --save-npy "$OUT/wave-layers-$ax.npz" >> "$log" 2>&1
done
tar -czf "$OUT/logs.tgz" -C "$logs" .
rm -rf "$work" /dev/shm/fdio "$logs"
say "# done $(date -u +%FT%TZ)"

#!/usr/bin/env bash
set -uo pipefail
OUT=${OUT:-/tmp/o}; mkdir -p "$OUT"
B=$PWD/.device/bin
for g in 128,128,128 128,128,64 128,64,64 256,128,128 256,256,128; do
  for a in "" "--fuse auto" "--fuse 2" "--fuse 4"; do
    timeout 60 "$B/fdmini-host" --help > /dev/null 2>&1
    timeout 100 "$B/fdmini-sys" --progress 0 --op heat --global $g --warmup 1000 --iters 10000 $a > "$OUT/l.log" 2>&1
    echo "$g [$a]: rc $? $(grep -o '^  step  *[0-9. ]*' $OUT/l.log | head -1) | $(grep -o '^  fuse        .*' $OUT/l.log | cut -c1-90)"
  done
done
rm -f "$OUT/l.log"

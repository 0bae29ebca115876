#!/usr/bin/env bash
set -u
OUT=${OUT:-/tmp/o}; mkdir -p "$OUT"
for e in 0 1; do for g in "128 64 64" "128 128 64" "128 128 128" "256 128 128"; do
  timeout 120 .device/persist/persist $g 2000 $e >> $OUT/persist.txt 2>&1
done; done
grep -E 'launched|tile-wait|coop' $OUT/persist.txt | sort -t: -k2 -n | awk '{k=$1" "$2" "$3} !seen[k]++'
grep -c DIFFERS $OUT/persist.txt

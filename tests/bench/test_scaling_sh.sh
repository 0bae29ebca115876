#!/usr/bin/env bash
# test_scaling_sh.sh - bench/multigpu/scaling.sh's plumbing with the host build, as its usage
# shows for a dry run: `strong heat` on "1 GPU" (1 rank, and 2 ranks sharing it: the MPS
# layout, here without MPS), `weak heat` on "2 GPUs" through study.py, tiny grids, then
# `summary` merging both calls' tarballs; each call's files in $OUT, the rows and their
# efficiency (exactly 1 on one GPU), a call whose budget is spent skipping its runs by name and
# failing, and a bad operator refused. At most 2 ranks.
# Usage: tests/bench/test_scaling_sh.sh FDMINI_BINARY [MPIEXEC]
set -uo pipefail
bin=${1:?usage: $0 FDMINI_BINARY [MPIEXEC]}
launcher=${2:-mpirun}
launcher=$(command -v "$launcher") || { echo "no launcher $2"; exit 1; }
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
sh=$here/../../bench/multigpu/scaling.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0
fail=0
check() {
  if eval "$2"; then pass=$((pass + 1)); echo "PASS: $1"; else fail=$((fail + 1)); echo "FAIL: $1"; fi
}
common=(--binary "$bin" --mpirun "$launcher" --steps "2,10")

OUT=$tmp/s bash "$sh" "${common[@]}" --gpus 1 --sizes 12 strong heat > "$tmp/s.out" 2>&1
rc=$?
check "strong heat: exit 0" "[ $rc -eq 0 ]" || tail -20 "$tmp/s.out"
check "strong heat: log, tarball and table in \$OUT" \
  "[ -s $tmp/s/strong-heat.log ] && [ -s $tmp/s/strong-heat.tar.gz ] && [ -s $tmp/s/table-strong.csv ] && [ -s $tmp/s/table-strong.md ]"
check "strong heat: a progress line per run (4 runs)" "[ \$(grep -c ' s  step .* PASS' $tmp/s/strong-heat.log) -eq 4 ]"
check "strong heat: the 2-rank runs named shared without MPS" \
  "tar -tzf $tmp/s/strong-heat.tar.gz | grep -c 'records/strong-heat-12-S4-auto-g1r2-nomps-r1.json' >/dev/null"
check "strong heat: 1 GPU efficiency 1, both modes" \
  "[ \$(awk -F, 'NR > 1 && \$3 == 1 && \$4 == 1 && \$16 == 1' $tmp/s/table-strong.csv | wc -l) -eq 2 ]"

OUT=$tmp/w bash "$sh" "${common[@]}" --gpus 2 --sizes 8 --repeats 1 weak heat > "$tmp/w.out" 2>&1
rc=$?
check "weak heat: exit 0" "[ $rc -eq 0 ]" || tail -20 "$tmp/w.out"
check "weak heat: collect.py's summary, 2 modes x 2 scales" \
  "[ \$(grep -c '^weak,8x8x8,heat,overlap-width' $tmp/w/table-weak.csv) -eq 4 ]"

bash "$sh" summary "$tmp/s/strong-heat.tar.gz" "$tmp/w/weak-heat.tar.gz" -o "$tmp/m" --prefix all --no-plots > "$tmp/m.out" 2>&1
rc=$?
check "summary merges both calls" "[ $rc -eq 0 ] && [ -s $tmp/m/all-strong.csv ] && [ -s $tmp/m/all-weak.csv ] && [ -s $tmp/m/all-weak.md ]" ||
  tail -20 "$tmp/m.out"

OUT=$tmp/b bash "$sh" "${common[@]}" --gpus 1 --sizes 12 --budget 1 strong heat > "$tmp/b.out" 2>&1
rc=$?
check "a spent budget: runs skipped by name, exit 1" "[ $rc -eq 1 ] && grep -q 'strong-heat-12-T1-g1r1-r1 .*SKIPPED' $tmp/b/strong-heat.log"

bash "$sh" "${common[@]}" --gpus 1 strong wave > "$tmp/x.out" 2>&1
rc=$?
check "an operator other than heat and jacobi: exit 2" "[ $rc -eq 2 ] && grep -q 'heat or jacobi' $tmp/x.out"

echo "scaling.sh test: $pass passed, $fail failed"
[ "$fail" -eq 0 ]

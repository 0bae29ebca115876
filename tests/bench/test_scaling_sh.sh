#!/usr/bin/env bash
# test_scaling_sh.sh - bench/multigpu/scaling.sh's plumbing with the host build, as its usage
# shows for a dry run: `strong heat` on "1 GPU" (1 rank, and 2 ranks sharing it: the MPS
# layout, here without MPS), `weak heat` on "2 GPUs" through study.py, tiny grids, then
# `summary` merging both calls' tarballs; each call's files in $OUT, the rows and their
# efficiency (exactly 1 on one GPU), a call split by size beside the first in one $OUT and in the
# summary, the same call again refused without touching the first one's files, a failing table
# step failing the call, a call whose budget is spent skipping its runs by name and failing, and
# a bad operator and bad counts (--repeats 0, --gpus abc, ...) refused with exit 2 before
# anything runs. At most 2 ranks.
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
  if eval "$2"; then pass=$((pass + 1)); echo "PASS: $1"; else fail=$((fail + 1)); echo "FAIL: $1"; return 1; fi
}
common=(--binary "$bin" --mpirun "$launcher" --steps "2,10")

OUT=$tmp/s bash "$sh" "${common[@]}" --gpus 1 --sizes 12 strong heat > "$tmp/s.out" 2>&1
rc=$?
check "strong heat: exit 0" "[ $rc -eq 0 ]" || tail -20 "$tmp/s.out"
check "strong heat: log, tarball and table in \$OUT, named for the part and its sizes" \
  "[ -s $tmp/s/strong-heat-12.log ] && [ -s $tmp/s/strong-heat-12.tar.gz ] && [ -s $tmp/s/strong-heat-12.csv ] && [ -s $tmp/s/strong-heat-12.md ]"
check "strong heat: a progress line per run (4 runs)" "[ \$(grep -c ' s  step .* PASS' $tmp/s/strong-heat-12.log) -eq 4 ]"
check "strong heat: the 2-rank runs named shared without MPS" \
  "tar -tzf $tmp/s/strong-heat-12.tar.gz | grep -c 'records/strong-heat-12-S4-auto-g1r2-nomps-r1.json' >/dev/null"
check "strong heat: 1 GPU efficiency 1, both modes" \
  "[ \$(awk -F, 'NR > 1 && \$3 == 1 && \$4 == 1 && \$16 == 1' $tmp/s/strong-heat-12.csv | wc -l) -eq 2 ]"

# the README's split calls: another size into the same $OUT, beside the first call's files
sums() { md5sum "$tmp"/s/strong-heat-12.* | awk '{print $1}'; }
before=$(sums)
OUT=$tmp/s bash "$sh" "${common[@]}" --gpus 1 --sizes 8 strong heat > "$tmp/s8.out" 2>&1
rc=$?
check "strong heat --sizes 8 into the same \$OUT: exit 0, its own files" \
  "[ $rc -eq 0 ] && [ -s $tmp/s/strong-heat-8.log ] && [ -s $tmp/s/strong-heat-8.tar.gz ] && [ -s $tmp/s/strong-heat-8.csv ]" ||
  tail -20 "$tmp/s8.out"
check "strong heat --sizes 8: the first call's files untouched" "[ \"\$(sums)\" = \"$before\" ]"
# the same call again: refused, one line naming the files, nothing run or touched
OUT=$tmp/s bash "$sh" "${common[@]}" --gpus 1 --sizes 12 strong heat > "$tmp/s12.out" 2>&1
rc=$?
check "the same call again: exit 2, one line naming its files, the first call's files untouched" \
  "[ $rc -eq 2 ] && [ \$(wc -l < $tmp/s12.out) -eq 1 ] && grep -q 'strong-heat-12.log.*another OUT or remove them' $tmp/s12.out && [ \"\$(sums)\" = \"$before\" ]" ||
  cat "$tmp/s12.out"

OUT=$tmp/w bash "$sh" "${common[@]}" --gpus 2 --sizes 8 --repeats 1 weak heat > "$tmp/w.out" 2>&1
rc=$?
check "weak heat: exit 0" "[ $rc -eq 0 ]" || tail -20 "$tmp/w.out"
check "weak heat: collect.py's summary, 2 modes x 2 scales" \
  "[ \$(grep -c '^weak,8x8x8,heat,overlap-width' $tmp/w/weak-heat-8.csv) -eq 4 ]"

bash "$sh" summary "$tmp/s/strong-heat-12.tar.gz" "$tmp/s/strong-heat-8.tar.gz" "$tmp/w/weak-heat-8.tar.gz" \
  -o "$tmp/m" --prefix all --no-plots > "$tmp/m.out" 2>&1
rc=$?
check "summary merges the three calls" "[ $rc -eq 0 ] && [ -s $tmp/m/all-strong.csv ] && [ -s $tmp/m/all-weak.csv ] && [ -s $tmp/m/all-weak.md ]" ||
  tail -20 "$tmp/m.out"
check "summary: both sizes of the split strong calls, 1 GPU, both modes" \
  "[ \$(awk -F, 'NR > 1 && \$3 == 1 && \$4 == 1' $tmp/m/all-strong.csv | wc -l) -eq 4 ]"

OUT=$tmp/b bash "$sh" "${common[@]}" --gpus 1 --sizes 12 --budget 1 strong heat > "$tmp/b.out" 2>&1
rc=$?
check "a spent budget: runs skipped by name, exit 1" "[ $rc -eq 1 ] && grep -q 'strong-heat-12-T1-g1r1-r1 .*SKIPPED' $tmp/b/strong-heat-12.log"

bash "$sh" "${common[@]}" --gpus 1 strong wave > "$tmp/x.out" 2>&1
rc=$?
check "an operator other than heat and jacobi: exit 2" "[ $rc -eq 2 ] && grep -q 'heat or jacobi' $tmp/x.out"

# the table step failing (scaling_table.py planted to fail): the call fails, and says so
mkdir -p "$tmp/shim"
real_python=$(command -v python3)
cat > "$tmp/shim/python3" << EOF
#!/bin/sh
case " \$* " in *"scaling_table.py "*" --no-plots "*) echo "planted failure" >&2; exit 1 ;; esac
exec "$real_python" "\$@"
EOF
chmod +x "$tmp/shim/python3"
OUT=$tmp/t PATH=$tmp/shim:$PATH bash "$sh" "${common[@]}" --gpus 1 --sizes 8 strong heat > "$tmp/t.out" 2>&1
rc=$?
check "scaling_table.py failing: exit 1, the log says so" \
  "[ $rc -eq 1 ] && grep -q 'scaling_table.py failed' $tmp/t/strong-heat-8.log && [ -s $tmp/t/strong-heat-8.tar.gz ]" || tail -20 "$tmp/t.out"

# counts that would measure nothing or break bash's arithmetic: one line, exit 2, no $OUT
for bad in "--repeats 0" "--gpus abc" "--gpus 0" "--budget 10s" "--run-timeout -5" "--sizes 12,x"; do
  # shellcheck disable=SC2086 # option and value
  OUT=$tmp/c bash "$sh" --binary "$bin" --mpirun "$launcher" --steps 2,10 --gpus 1 $bad strong heat > "$tmp/c.out" 2>&1
  rc=$?
  check "$bad: exit 2, one line naming it, nothing written" \
    "[ $rc -eq 2 ] && [ \$(wc -l < $tmp/c.out) -eq 1 ] && grep -q -- '${bad%% *}' $tmp/c.out && [ ! -e $tmp/c ]" || cat "$tmp/c.out"
done

echo "scaling.sh test: $pass passed, $fail failed"
[ "$fail" -eq 0 ]

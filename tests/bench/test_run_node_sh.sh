#!/usr/bin/env bash
# test_run_node_sh.sh - the checks bench/multigpu/run_node.sh and bench/strong/run_node.sh make
# before anything runs, so without a GPU: --help (usage on stdout, exit 0), a bad mode word
# anywhere in the list (usage on stderr, exit 2), a mode given twice, and a mode whose records
# or tarballs an earlier (or killed) call left in $OUT refused (exit 2, naming them, those files
# untouched). In each case nothing is unpacked (tar), no GPU is asked (nvidia-smi, shims here
# that note any call) and $OUT is not created.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0
fail=0
check() {
  if eval "$2"; then pass=$((pass + 1)); echo "PASS: $1"; else fail=$((fail + 1)); echo "FAIL: $1"; fi
}
# shims that note their calls: the scripts must reach neither
mkdir -p "$tmp/shim" "$tmp/cwd/.device"
for t in tar nvidia-smi nvidia-cuda-mps-control mpirun; do
  printf '#!/bin/sh\necho "%s $*" >> "%s/calls"\nexit 1\n' "$t" "$tmp" > "$tmp/shim/$t"
  chmod +x "$tmp/shim/$t"
done
: > "$tmp/cwd/.device/fdmini-ompi-cuda.tar.xz"

# run SCRIPT OUTDIR ARGS...: the script from a work tree with .device, the shims first on PATH
run() {
  local sh=$1 out=$2
  shift 2
  rm -f "$tmp/calls"
  (cd "$tmp/cwd" && OUT=$out PATH=$tmp/shim:$PATH bash "$root/$sh" "$@" > "$tmp/stdout" 2> "$tmp/stderr")
}
untouched="[ ! -e $tmp/calls ]"

for sh in bench/multigpu/run_node.sh bench/strong/run_node.sh; do
  case $sh in
  bench/multigpu/*) good=halo other=defaults ;;
  *) good=small other=deep ;;
  esac
  run "$sh" "$tmp/o" --help
  rc=$?
  check "$sh --help: exit 0, usage on stdout, nothing run, no \$OUT" \
    "[ $rc -eq 0 ] && grep -q '^run_node.sh - ' $tmp/stdout && [ ! -s $tmp/stderr ] && $untouched && [ ! -e $tmp/o ]"
  run "$sh" "$tmp/o" "$good" -h
  rc=$?
  check "$sh $good -h: exit 0 before the mode runs" "[ $rc -eq 0 ] && grep -q '^run_node.sh - ' $tmp/stdout && $untouched && [ ! -e $tmp/o ]"
  run "$sh" "$tmp/o" "$good" bogus
  rc=$?
  check "$sh $good bogus: exit 2 before $good runs, usage on stderr, nothing run, no \$OUT" \
    "[ $rc -eq 2 ] && [ ! -s $tmp/stdout ] && grep -q \"unknown mode 'bogus'\" $tmp/stderr && grep -q '^usage: ' $tmp/stderr && $untouched && [ ! -e $tmp/o ]" ||
    cat "$tmp/stdout" "$tmp/stderr"
  run "$sh" "$tmp/o" "$good" "$good"
  rc=$?
  check "$sh $good $good: exit 2 (the second would replace the first's records)" \
    "[ $rc -eq 2 ] && grep -q 'given twice' $tmp/stderr && $untouched && [ ! -e $tmp/o ]"
  # an earlier call's tarball, a killed call's records folder
  rm -rf "$tmp/o"
  mkdir -p "$tmp/o"
  case $sh in
  bench/multigpu/*) echo old > "$tmp/o/records.tar.gz"; mkdir "$tmp/o/records-4gpu"; echo old > "$tmp/o/records-4gpu/a.json"; want='records.tar.gz records-4gpu' ;;
  *) echo old > "$tmp/o/records-small.tar.gz"; mkdir "$tmp/o/records-deep"; echo old > "$tmp/o/records-deep/a.json"; want='records-small.tar.gz records-deep' ;;
  esac
  run "$sh" "$tmp/o" "$good" "$other"
  rc=$?
  check "$sh $good $other over an earlier call's files: exit 2, one line naming them, untouched, nothing run" \
    "[ $rc -eq 2 ] && [ \$(wc -l < $tmp/stderr) -eq 1 ] && grep -q 'already holds $want.*another OUT or remove them' $tmp/stderr && $untouched && [ \"\$(cat $tmp/o/*.tar.gz $tmp/o/records-*/a.json)\" = \"\$(printf 'old\nold')\" ]" ||
    cat "$tmp/stderr"
  rm -rf "$tmp/o"
done

echo "run_node.sh test: $pass passed, $fail failed"
[ "$fail" -eq 0 ]

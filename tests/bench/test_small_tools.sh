#!/usr/bin/env bash
# test_small_tools.sh - bad inputs to bench's small tools: one error line, exit 1, nothing on
# stdout and no traceback; --help and -h print the usage and exit 0.
#   checkpoints/table.py, snapshots/table.py: a missing or empty records folder, a record that
#     is not JSON (named), records that make no row, a missing second file; a good folder tabled
#   checkpoints/fs_bandwidth.py: --help
#   multigpu/summarize.py: executable; a repeat without phases_ms named, not its first repeat,
#     and no table header printed before the error
#   multigpu/check_autotune.py: --help, a missing record, one that is not JSON
#   model/predict.py --record: floors_us not an object refused; no floors_us: one warning line,
#     the table as without --record (skipped without numpy)
#   snapshots/render_slice.py without numpy: one line saying what to install; with numpy,
#     --save-npy NAME read back by --npy NAME, an --index beyond the grid, the options of its
#     usage examples (skipped without numpy)
# Usage: test_small_tools.sh [BENCH_DIR]     (default: this checkout's bench/)
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
bench=${1:-$(cd "$here/../../bench" && pwd)}
# shellcheck disable=SC1091 # tests/lib/checks.sh is checked on its own
. "$here/../lib/checks.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# run CMD...: its exit code in $rc, stdout in $tmp/out, stderr in $tmp/err
run() {
  "$@" >"$tmp/out" 2>"$tmp/err"
  rc=$?
}
# one_error NAME [STRING]: exit 1, stdout empty, one stderr line (holding STRING), no traceback
one_error() {
  local err
  err=$(cat "$tmp/err")
  if [[ $rc -eq 1 && ! -s $tmp/out && $(wc -l <"$tmp/err") -eq 1 ]] && ! has "$err" Traceback &&
    { [[ -z ${2:-} ]] || has "$err" "$2"; }; then
    pass "$1"
  else
    fail "$1" "rc=$rc, stdout $(wc -c <"$tmp/out") bytes" "$tmp/err"
  fi
}
# usage NAME: exit 0, the usage on stdout
usage() {
  if [[ $rc -eq 0 ]] && grep -qi '^ *usage' "$tmp/out"; then pass "$1"; else fail "$1" "rc=$rc" "$tmp/err"; fi
}
# step_rec FILE MS: a record of a step of MS ms
step_rec() {
  printf '{"device": "Test GPU", "phases_ms": {"step": {"max": %s}}}\n' "$2" >"$1"
}

for kind in checkpoints snapshots; do
  t=$bench/$kind/table.py
  if [[ $kind == checkpoints ]]; then
    pre=n32-heat-
    echo "fs bytes=262144 write_fsync_gbs=1.00 read_cold_gbs=1.00 read_cached_gbs=2.00" >"$tmp/bw.txt"
  else
    pre=n32-
    echo "io bytes=262144 d2h_gbs=10.0 write_gbs=1.00" >"$tmp/bw.txt"
  fi
  for h in --help -h; do
    run python3 "$t" "$h"
    usage "$kind/table.py $h: usage, exit 0"
  done
  run python3 "$t" "$tmp/$kind-none" "$tmp/bw.txt"
  one_error "$kind/table.py: a missing records folder" "$tmp/$kind-none"
  mkdir "$tmp/$kind-empty"
  run python3 "$t" "$tmp/$kind-empty" "$tmp/bw.txt"
  one_error "$kind/table.py: an empty records folder" "$tmp/$kind-empty"
  mkdir "$tmp/$kind-bad"
  echo 'not json {' >"$tmp/$kind-bad/${pre}none-a.json"
  run python3 "$t" "$tmp/$kind-bad" "$tmp/bw.txt"
  one_error "$kind/table.py: a record that is not JSON, named" "${pre}none-a.json"
  mkdir "$tmp/$kind-norow"
  step_rec "$tmp/$kind-norow/${pre}i10.json" 1.1
  run python3 "$t" "$tmp/$kind-norow" "$tmp/bw.txt"
  one_error "$kind/table.py: an interval without a run beside it: no row"
  mkdir "$tmp/$kind-good"
  step_rec "$tmp/$kind-good/${pre}none-a.json" 1.0
  step_rec "$tmp/$kind-good/${pre}i10.json" 1.1
  run python3 "$t" "$tmp/$kind-good" "$tmp/nonexistent.txt"
  one_error "$kind/table.py: a missing second file" "$tmp/nonexistent.txt"
  run python3 "$t" "$tmp/$kind-good" "$tmp/bw.txt"
  if [[ $rc -eq 0 && ! -s $tmp/err ]] && grep -q '^| 32^3 |.*| 10 |' "$tmp/out"; then
    pass "$kind/table.py: a good folder: its row, exit 0"
  else
    fail "$kind/table.py: a good folder: its row, exit 0" "rc=$rc" "$tmp/err"
  fi
done

for h in --help -h; do
  run python3 "$bench/checkpoints/fs_bandwidth.py" "$h"
  usage "fs_bandwidth.py $h: usage, exit 0"
done

# summarize.py
s=$bench/multigpu/summarize.py
if [[ -x $s ]]; then pass "summarize.py is executable"; else fail "summarize.py is executable" "$(stat -c %A "$s")"; fi
mkdir "$tmp/halo"
ph='{"avg": 0.1, "max": 0.1}'
for r in 1 2; do
  cat >"$tmp/halo/mpi-r$r.json" <<JSON
{"device": "Test GPU", "verification": {"passed": true}, "baseline": false,
 "halo_GBs": {"avg": 10.0}, "halo_bytes_per_step_max": 1000000,
 "phases_ms": {"step": $ph, "pack": $ph, "exchange": $ph, "unpack": $ph, "interior": $ph, "boundary": $ph}}
JSON
done
run python3 "$s" "$tmp/halo"
if [[ $rc -eq 0 ]] && grep -q '^| mpi | 2 | Test GPU |' "$tmp/out"; then
  pass "summarize.py: good repeats tabled"
else
  fail "summarize.py: good repeats tabled" "rc=$rc" "$tmp/err"
fi
echo '{"device": "Test GPU", "verification": {"passed": true}, "baseline": false}' >"$tmp/halo/mpi-r3.json"
run python3 "$s" "$tmp/halo"
one_error "summarize.py: a repeat without phases_ms: that file named, nothing on stdout" "mpi-r3.json"
if ! has "$(cat "$tmp/err")" "mpi-r1.json"; then
  pass "summarize.py: the bad repeat, not the first, named"
else
  fail "summarize.py: the bad repeat, not the first, named" "" "$tmp/err"
fi

# check_autotune.py
c=$bench/multigpu/check_autotune.py
for h in --help -h; do
  run python3 "$c" "$h"
  usage "check_autotune.py $h: usage, exit 0"
done
run python3 "$c" "$tmp/none.json"
one_error "check_autotune.py: a missing record" "$tmp/none.json"
echo 'not json' >"$tmp/notjson.json"
run python3 "$c" "$tmp/notjson.json"
one_error "check_autotune.py: a record that is not JSON" "$tmp/notjson.json"

# predict.py --record (the model needs numpy: this python3 or /usr/bin/python3)
py=python3
python3 -c 'import numpy' 2>/dev/null || py=/usr/bin/python3
if "$py" -c 'import numpy' 2>/dev/null; then
  p=(--site nvidia-h200 --local 64 --nodes "1,2")
  echo '{"schema": "fdmini-run/1", "floors_us": [1.5, 8.0]}' >"$tmp/floors-list.json"
  run "$py" "$bench/model/predict.py" "${p[@]}" --record "$tmp/floors-list.json"
  one_error "predict.py --record: floors_us not an object" "floors_us"
  "$py" "$bench/model/predict.py" "${p[@]}" >"$tmp/site.txt" 2>/dev/null
  echo '{"schema": "fdmini-run/1", "ranks": 2}' >"$tmp/nofloors.json"
  run "$py" "$bench/model/predict.py" "${p[@]}" --record "$tmp/nofloors.json"
  if [[ $rc -eq 0 && $(wc -l <"$tmp/err") -eq 1 ]] && grep -q 'warning.*nofloors.json.*floors' "$tmp/err" &&
    cmp -s "$tmp/out" "$tmp/site.txt"; then
    pass "predict.py --record without floors_us: one warning line, the site's table"
  else
    fail "predict.py --record without floors_us: one warning line, the site's table" "rc=$rc" "$tmp/err"
  fi
  echo '{"schema": "fdmini-run/1", "ranks": 2, "floors_us": {"graph": {"avg": 2.0}}}' >"$tmp/floors.json"
  run "$py" "$bench/model/predict.py" "${p[@]}" --record "$tmp/floors.json"
  if [[ $rc -eq 0 && ! -s $tmp/err ]] && grep -q 'F_g 2 us (record' "$tmp/out"; then
    pass "predict.py --record with floors_us: taken, no warning"
  else
    fail "predict.py --record with floors_us: taken, no warning" "rc=$rc" "$tmp/err"
  fi
else
  echo "SKIP: predict.py --record: numpy is not installed for python3 or /usr/bin/python3"
fi

# render_slice.py (numpy: this python3 or /usr/bin/python3): --save-npy writes the name given,
# which --npy then reads (numpy's savez alone appends .npz to any other name); an --index
# beyond the grid is one error line; the usage examples name no option it lacks
if "$py" -c 'import numpy' 2>/dev/null; then
  r=$bench/snapshots/render_slice.py
  "$py" -c 'import sys, array; array.array("d", range(60)).tofile(open(sys.argv[1], "wb"))' "$tmp/snap.raw"
  run "$py" "$r" "$tmp/snap.raw" --dims 5,4,3 --axis y --index 1 --save-npy "$tmp/slice.npy"
  if [[ $rc -eq 0 && -f $tmp/slice.npy ]]; then
    run "$py" "$r" --npy "$tmp/slice.npy"
  else
    rc="$rc, no $tmp/slice.npy: $(cd "$tmp" && echo slice*)"
  fi
  if [[ $rc == 0 && ! -s $tmp/err ]]; then
    pass "render_slice.py: --save-npy NAME writes NAME, --npy NAME reads it"
  else
    fail "render_slice.py: --save-npy NAME writes NAME, --npy NAME reads it" "rc=$rc" "$tmp/err"
  fi
  run "$py" "$r" "$tmp/snap.raw" --dims 5,4,3 --axis y --index 4
  one_error "render_slice.py: an --index beyond the grid: one line, no traceback" "--index 4"
  # the options its examples show are options it takes (argparse's usage line lists those)
  run "$py" "$r" --help
  unknown=""
  usage_lines=$(sed '/^$/q' "$tmp/out")
  while read -r opt; do
    has "$usage_lines" "[$opt " || has "$usage_lines" "[$opt]" || unknown+=" $opt"
  done < <(grep '^  render_slice.py' "$tmp/out" | grep -o -- '--[a-z-]*' | sort -u)
  if [[ $rc -eq 0 && -z $unknown ]]; then
    pass "render_slice.py --help: its examples use only options it takes"
  else
    fail "render_slice.py --help: its examples use only options it takes" "rc=$rc, not options:$unknown"
  fi
else
  echo "SKIP: render_slice.py: numpy is not installed for python3 or /usr/bin/python3"
fi

# render_slice.py where numpy cannot be imported (a stand-in that fails)
mkdir -p "$tmp/nonumpy/numpy"
echo 'raise ImportError("numpy stand-in of test_small_tools.sh")' >"$tmp/nonumpy/numpy/__init__.py"
PYTHONPATH=$tmp/nonumpy run python3 "$bench/snapshots/render_slice.py" --npy "$tmp/x.npz"
one_error "render_slice.py without numpy: one line saying what to install" "install"

summary "small bench tools test"

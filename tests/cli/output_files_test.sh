#!/usr/bin/env bash
# output_files_test.sh - fdmini's output files are complete or absent (src/io/output.h), as a user
# meets them: every case below asserts the exit status on every rank, exactly one
# "fdmini: error:" line, that the files which existed before the run are byte-identical after
# it, and that nothing else is left in their directory (no file under a final name, no
# temporary file). Issue 15, cases 1-6 and 8:
#   - targets refused before the run (exit 2): FIFO, device, directory, dangling link, the same
#     file twice (also through another spelling or a link), a snapshot file name, a FIFO among
#     the snapshot files;
#   - a run refused (exit 2), failed (exit 3) or failed verification (exit 1) leaves existing
#     --json and --dump files as they were; a --snapshot-dir it made and never wrote into is
#     removed (refused at the output checks or at set-up, out of memory, its first snapshot
#     failed), one the user had is kept;
#   - full file system (a 1 MiB tmpfs, where this machine lets root mount one): dump, JSON and
#     snapshots exit 4; a dump that fits is not committed when the JSON then does not;
#   - `ulimit -f` (always; set right after MPI_Init, so that only fdmini's writes meet it, with
#     any MPI library): dump, snapshot and JSON writes fail with EFBIG (SIGXFSZ ignored), exit 4
#     instead of a kill by SIGXFSZ (exit 153);
#   - sizes that overflow (exit 3, one line), and halo buffers that do not fit where the fields
#     do (`ulimit -v`; skipped under the sanitizers, which reserve terabytes of address space).
# usage: output_files_test.sh FDMINI MPIEXEC [MPIEXEC_FLAGS...]
set -uo pipefail
fdmini=$1
mpiexec=$2
shift 2
mpiflags=("$@")
# shellcheck disable=SC1091 # tests/lib/checks.sh is checked on its own
. "$(dirname "$0")/../lib/checks.sh"

work=$(mktemp -d)
mnt=""
cleanup() {
  if [[ -n $mnt ]]; then umount "$mnt" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

# A file-size limit must hit fdmini's writes, not the MPI library's start-up: "-f N" is applied
# right after MPI_Init returns, by a preloaded PMPI wrapper (tests/lib/fsize_after_init.c).
fsize_shim=$(fsize_shim "$work") || exit 1

# run NP LIMITS ARGS...: fdmini on NP ranks, each rank under the ulimit options LIMITS (a
# word such as "-v 1400000", or "-" for none; "-f N" is applied after MPI_Init, above); sets rc
# and out (stdout and stderr).
run() {
  local np=$1 limits=$2
  shift 2
  local pre=(env)
  if [[ $limits == "-f "* ]]; then
    # preloaded into fdmini only (the inner shell sets it); a sanitizer build's runtime then is
    # not first in the library list, which ASan accepts when told
    pre+=("TEST_PRELOAD=$fsize_shim" "TEST_FSIZE_KIB_AFTER_INIT=${limits#-f }")
    [[ -n ${ASAN_OPTIONS:-} ]] && pre+=("ASAN_OPTIONS=$ASAN_OPTIONS:verify_asan_link_order=0")
    limits=-
  fi
  # shellcheck disable=SC2016 # $0, $1 and $@ belong to the inner shell
  out=$(timeout 120 "${pre[@]}" "$mpiexec" -n "$np" "${mpiflags[@]}" bash -c \
    'if [ "$1" != - ]; then ulimit $1 || exit 99; fi; shift
     if [ -n "${TEST_PRELOAD:-}" ]; then export LD_PRELOAD=$TEST_PRELOAD; fi; exec "$0" "$@"' \
    "$fdmini" "$limits" "$@" 2>&1)
  rc=$?
}

# snapshot_dir DIR: "name size sha256" of every entry of DIR (recursively), sorted
snapshot_dir() {
  (cd "$1" && find . -mindepth 1 -printf '%p %s %y\n' | sort | while read -r p s y; do
    if [[ $y == f ]]; then echo "$p $s $(sha256sum <"$p" | cut -c1-64)"; else echo "$p $s $y"; fi
  done)
}

# expect NAME RC MSG DIR NP LIMITS ARGS...: exit status RC, exactly one error line holding MSG
# (none when MSG is empty), and DIR afterwards exactly as before (contents and names).
expect() {
  local name=$1 want=$2 msg=$3 dir=$4 np=$5 limits=$6
  shift 6
  local before after n why=""
  before=$(snapshot_dir "$dir")
  run "$np" "$limits" "$@"
  after=$(snapshot_dir "$dir")
  n=$(printf '%s\n' "$out" | grep -c -F -- "fdmini: error:")
  if [[ $rc -ne $want ]]; then why="exit $rc, expected $want"; fi
  if [[ -n $msg ]] && { [[ $n -ne 1 ]] || ! has "$out" "$msg"; }; then
    why="${why:+$why; }$n error lines, expected one with '$msg'"
  fi
  if [[ -z $msg && $n -ne 0 ]]; then why="${why:+$why; }$n error lines, expected none"; fi
  if [[ $before != "$after" ]]; then
    why="${why:+$why; }$dir changed: $(diff <(echo "$before") <(echo "$after") | grep '^[<>]' | tr '\n' ' ')"
  fi
  if [[ -z $why ]]; then
    pass "$name"
  else
    printf '%s\n' "$out" | tail -12 | sed 's/^/     | /'
    fail "$name" "$why"
  fi
}

d=$work/out
mkdir -p "$d"
printf 'previous record\n' >"$d/run.json"
head -c 4096 /dev/urandom >"$d/u.raw"
small=(--global "16,16,16" --iters 2 --warmup 0)

echo "== targets refused before the run: exit 2, existing files untouched"
mkfifo "$d/fifo"
expect "--json FIFO: refused, no hang" 2 "--json: '$d/fifo' is a FIFO, not a regular file" "$d" 2 - "${small[@]}" --json "$d/fifo"
expect "--dump FIFO: refused, no hang" 2 "--dump: '$d/fifo' is a FIFO, not a regular file" "$d" 2 - "${small[@]}" --dump "$d/fifo"
expect "--json /dev/full: refused (a device)" 2 "--json: '/dev/full' is a character device" "$d" 2 - "${small[@]}" --json /dev/full
expect "--dump /dev/full: refused, one line (not one per rank)" 2 "--dump: '/dev/full' is a character device" "$d" 2 - "${small[@]}" --dump /dev/full
mkdir "$d/dir"
expect "--json DIRECTORY: refused" 2 "--json: '$d/dir' is a directory" "$d" 2 - "${small[@]}" --json "$d/dir"
expect "--dump DIRECTORY/: refused" 2 "--dump: '$d/dir/' is a directory" "$d" 2 - "${small[@]}" --dump "$d/dir/"
ln -s "$d/nowhere" "$d/dangling"
expect "--json dangling link: refused" 2 "--json: '$d/dangling' is a symbolic link to nothing" "$d" 2 - "${small[@]}" --json "$d/dangling"
expect "--json F --dump F: refused" 2 "--json and --dump name the same file '$d/run.json'" "$d" 2 - "${small[@]}" --json "$d/run.json" --dump "$d/run.json"
expect "--json F --dump DIR/../F: refused" 2 "--json and --dump name the same file '$d/run.json'" "$d" 2 - "${small[@]}" --json "$d/run.json" --dump "$d/dir/../run.json"
ln -s "$d/run.json" "$d/link.json"
expect "--json LINK --dump F: refused" 2 "--json and --dump name the same file '$d/run.json'" "$d" 2 - "${small[@]}" --json "$d/link.json" --dump "$d/run.json"
expect "--json NEW --dump NEW (new files): refused" 2 "--json and --dump name the same file '$d/new.raw'" "$d" 2 - "${small[@]}" --json "$d/new.raw" --dump "$d/new.raw"
expect "--json in a missing directory: refused" 2 "--json: cannot write '$d/missing/r.json': No such file or directory" "$d" 2 - "${small[@]}" --json "$d/missing/r.json"
mkdir "$d/snaps"
expect "--dump onto a snapshot file name: refused" 2 "--dump '$d/snaps/snap_000002.raw' is a file the snapshots write" "$d" 2 - \
  "${small[@]}" --snapshot-every 1 --snapshot-dir "$d/snaps" --dump "$d/snaps/snap_000002.raw"
expect "--dump naming the --checkpoint-dir yet to be made: refused" 2 "--dump '$d/ckd' is the --checkpoint-dir" "$d" 2 - \
  "${small[@]}" --checkpoint-every 1 --checkpoint-dir "$d/ckd" --dump "$d/ckd"
mkfifo "$d/snaps/snap_000002.raw"
expect "--snapshot-dir holding a FIFO under a snapshot name: refused" 2 "--snapshot-dir: '$d/snaps/snap_000002.raw' is a FIFO" "$d" 2 - \
  "${small[@]}" --snapshot-every 1 --snapshot-dir "$d/snaps"
rm -f "$d/snaps/snap_000002.raw" "$d/fifo" "$d/dangling" "$d/link.json"
rmdir "$d/dir" "$d/snaps"

echo "== a run refused (2), failed (3) or failing verification (1) leaves --json and --dump alone"
outs=(--json "$d/run.json" --dump "$d/u.raw")
expect "exit 2 (--procs 3,1,1 on 2 ranks)" 2 "--procs 3,1,1 has 3 ranks but the job has 2" "$d" 2 - "${small[@]}" --procs 3,1,1 "${outs[@]}"
expect "exit 2 (a velocity out of range)" 2 "--velocity 1e+155: on this 31 x 31 x 31 grid" "$d" 2 - --op wave --global 31,31,31 --velocity 1e155 "${outs[@]}"
expect "exit 3 (fields do not fit in memory)" 3 "cannot allocate the fields" "$d" 2 - --local 40000,40000,40000 "${outs[@]}"
expect "exit 1 (verification failed)" 1 "" "$d" 2 - "${small[@]}" --test-inject-fault "${outs[@]}"
if has_re "$out" "fdmini: verification failed: --json and --dump not written (existing files are unchanged)"; then
  pass "exit 1 says --json and --dump were not written"
else
  fail "exit 1 does not say why --json and --dump were not written"
fi
# a --snapshot-dir this run made is gone again when it is refused or fails before writing into
# it (refused by a later output check, at set-up, or out of memory); one the user had stays
# (a directory of its own each: one left behind would be the user's to the next case)
snaps=(--snapshot-every 1 --snapshot-dir)
expect "--snapshot-dir made, then --json refused: removed" 2 "--json: '/dev/full' is a character device" "$d" 2 - \
  "${small[@]}" "${snaps[@]}" "$d/new-1" --json /dev/full
expect "--snapshot-dir made, run refused at set-up (--procs): removed" 2 "--procs 3,1,1 has 3 ranks but the job has 2" "$d" 2 - \
  "${small[@]}" "${snaps[@]}" "$d/new-2" --procs 3,1,1 "${outs[@]}"
expect "--snapshot-dir made, run refused by the wave's check: removed" 2 "--velocity 1e+155: on this 31 x 31 x 31 grid" "$d" 2 - \
  --op wave --global 31,31,31 --velocity 1e155 "${snaps[@]}" "$d/new-3" "${outs[@]}"
expect "--snapshot-dir made, fields do not fit (exit 3): removed" 3 "cannot allocate the fields" "$d" 2 - \
  --local 40000,40000,40000 "${snaps[@]}" "$d/new-4" "${outs[@]}"
mkdir "$d/mine"
expect "--snapshot-dir the user had, empty, run refused: kept" 2 "--procs 3,1,1 has 3 ranks but the job has 2" "$d" 2 - \
  "${small[@]}" --snapshot-every 1 --snapshot-dir "$d/mine" --procs 3,1,1 "${outs[@]}"
rmdir "$d/mine"
run 2 - "${small[@]}" "${outs[@]}"
bytes=$(stat -c %s "$d/u.raw")
if [[ $rc -eq 0 ]] && [[ $bytes -eq $((16 * 16 * 16 * $(python3 -c "import json; print(8 if json.load(open('$d/run.json'))['precision'] == 'double' else 4)"))) ]] &&
  [[ -z $(find "$d" -name '*.tmp') ]]; then
  pass "a run that succeeds replaces both (no temporary file left)"
else
  fail "a successful run: rc $rc, dump $bytes bytes, files: $(ls "$d")"
fi

echo "== sizes that overflow, buffers that do not fit: exit 3, one line"
expect "--local 2097150,1048574,1048574: the byte count overflows (was: wraps to 0)" 3 \
  "rank 0: the fields of the local block 2097150 x 1048574 x 1048574 do not fit in memory" "$d" 2 - --local 2097150,1048574,1048574 --json "$d/run.json"
expect "--local 2097150,1048574,1048574 --dump: the file would exceed 2^63 bytes" 3 \
  "--dump: the 2097150 x 1048574 x 2097148 grid does not fit in one file" "$d" 2 - --local 2097150,1048574,1048574 "${outs[@]}"
if [[ -n ${ASAN_OPTIONS:-} ]]; then
  echo "skip halo buffers under ulimit -v: the sanitizers reserve more address space than any limit leaves"
else
  # fields 2 x 4 x 4002^2 x 8 bytes = 1.02 GB fit under 1.4 GB of address space, the halo
  # buffers (2 x 0.51 GB more) do not; nothing is touched, so nothing is really used
  expect "halo buffers that do not fit where the fields do (ulimit -v)" 3 \
    "cannot allocate the halo buffers of the local block 2 x 4000 x 4000" "$d" 2 "-v 1400000" --local 2,4000,4000 --procs 2,1,1 "${outs[@]}"
fi

echo "== ulimit -f: EFBIG reported (SIGXFSZ ignored), exit 4, nothing under a final name"
# 128^3 doubles = 16 MiB per dump or snapshot, over an 8 MiB limit; the JSON under a 1 KiB one
expect "dump past ulimit -f" 4 "--dump: writing '$d/u.raw." "$d" 2 "-f 8192" --global 128,128,128 --iters 1 --warmup 0 "${outs[@]}"
if has_re "$out" "File too large"; then pass "dump past ulimit -f: the error says File too large"; else fail "dump past ulimit -f: no 'File too large'"; fi
mkdir "$d/snaps"
expect "snapshot past ulimit -f" 4 "snapshot 1 (step 1): writing '$d/snaps/snap_000001.raw' failed on rank" "$d" 2 "-f 8192" \
  --global 128,128,128 --iters 1 --warmup 0 --snapshot-every 1 --snapshot-dir "$d/snaps" "${outs[@]}"
expect "snapshot past ulimit -f into a --snapshot-dir it made: removed again" 4 "snapshot 1 (step 1): writing '$d/new-5/snap_000001.raw' failed on rank" "$d" 2 "-f 8192" \
  --global 128,128,128 --iters 1 --warmup 0 --snapshot-every 1 --snapshot-dir "$d/new-5" "${outs[@]}"
expect "JSON past ulimit -f (after PASS was printed)" 4 "--json: writing '$d/run.json." "$d" 2 "-f 1" "${small[@]}" --json "$d/run.json"
if has_re "$out" "File too large; '$d/run.json' is unchanged"; then
  pass "JSON past ulimit -f: File too large, the file unchanged"
else
  fail "JSON past ulimit -f: message"
fi
rmdir "$d/snaps"

echo "== a full file system (1 MiB tmpfs)"
t=$work/tmpfs
mkdir "$t"
if [[ $(id -u) -eq 0 ]] && mount -t tmpfs -o size=1m tmpfs "$t" 2>/dev/null; then
  mnt=$t
  printf 'previous record\n' >"$t/run.json"
  head -c 4096 /dev/urandom >"$t/u.raw"
  touts=(--json "$t/run.json" --dump "$t/u.raw")
  # the dump of 64^3 doubles is 2 MiB (issue 15 case 1: exit 0, PASS and a short file before)
  expect "dump onto a full file system" 4 "--dump: writing '$t/u.raw." "$t" 2 - --global 64,64,64 --iters 1 --warmup 0 "${touts[@]}"
  if has_re "$out" "No space left on device"; then
    pass "dump onto a full file system: No space left on device"
  else
    fail "dump onto a full file system: no ENOSPC in the message"
  fi
  mkdir "$t/snaps"
  expect "snapshot onto a full file system" 4 "snapshot 1 (step 1): writing '$t/snaps/snap_000001.raw' failed on rank" "$t" 2 - \
    --global 64,64,64 --iters 1 --warmup 0 --snapshot-every 1 --snapshot-dir "$t/snaps" "${touts[@]}"
  rmdir "$t/snaps"
  # leave 32 KiB: the 16^3 dump (32 KiB) fits, the JSON after it does not
  avail=$(df --output=avail -k "$t" | tail -1)
  head -c $(((avail - 32) * 1024)) /dev/zero >"$t/filler"
  expect "dump fits, JSON does not: neither is replaced" 4 "--json: writing '$t/run.json." "$t" 2 - "${small[@]}" "${touts[@]}"
  if has_re "$out" "No space left on device; '$t/run.json' is unchanged"; then
    pass "JSON onto a full file system: No space left on device, the file unchanged"
  else
    fail "JSON onto a full file system: message"
  fi
  rm -f "$t/filler"
else
  echo "skip tmpfs cases: cannot mount a tmpfs here (not root, or no permission); ulimit -f covered the failed writes"
fi

summary "output files test"

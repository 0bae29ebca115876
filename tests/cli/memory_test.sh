#!/usr/bin/env bash
# memory_test.sh - a run checks its memory before its first step (issue 48, item 4): everything
# a run will need at its end (the checks' gathers, the dump's buffers) is allocated by
# state_create, before the start-up trials, so a run whose fields fit but whose verification or
# dump does not ends at once with exit 3 on every rank and one line naming the rank, what and
# the bytes, instead of computing every step and then failing ("verify: out of memory").
# Each case runs the ranks under `ulimit -v` (set in a shell each rank execs fdmini from) with
# --progress 1 and enough steps that a run which computes prints progress lines ("fdmini: timed
# step ..."; the steps take seconds at these sizes), and checks: exit 3, exactly one
# "fdmini: error:" line, that it names `rank N`, the buffer and `(N bytes)`, and that no
# progress line and no report line ("verification:") was printed: no step ran.
# Sizes, measured with Open MPI 4.1 on 2 ranks (a 2-rank job maps under 100 MB of address
# space per rank before fdmini allocates): --op wave --global 601,601,65 needs 3 x 103 MB of
# fields per rank (they fit under 450000 KiB), rank 0's checks 570 MB more (the mirror symmetry
# gathers the 188 MB global field twice): 800000 KiB leaves 350 MB of margin either way. The
# heat run's 2 x 200 MB fields fit under 600000 KiB, its --dump needs 400 MB more: 750000 KiB.
# Skipped (exit 77: ctest counts it skipped, not passed) where `ulimit -v` cannot be set, and
# under the sanitizers, which reserve terabytes of address space.
# usage: memory_test.sh FDMINI MPIEXEC [MPIEXEC_FLAGS...]
set -uo pipefail
fdmini=$1
mpiexec=$2
shift 2
mpiflags=("$@")
# shellcheck disable=SC1091 # tests/lib/checks.sh is checked on its own
. "$(dirname "$0")/../lib/checks.sh"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
skipped=0

# run KIB ARGS...: fdmini on 2 ranks, each under `ulimit -v KIB`; sets rc and out (stdout and
# stderr). One OpenMP thread per rank: each further thread maps an arena of its own.
run() {
  local kib=$1
  shift
  # shellcheck disable=SC2016 # $0, $1 and $@ belong to the inner shell
  out=$(OMP_NUM_THREADS=1 timeout 300 "$mpiexec" -n 2 "${mpiflags[@]}" bash -c \
    'ulimit -v "$1" || exit 99; shift; exec "$0" "$@"' "$fdmini" "$kib" "$@" 2>&1)
  rc=$?
}

# expect NAME KIB WHAT ARGS...: exit 3, one error line "rank N: cannot allocate <WHAT...> (N
# bytes)", no progress line, no report.
expect() {
  local name=$1 kib=$2 what=$3 why=""
  shift 3
  run "$kib" "$@"
  local n
  n=$(grep -c -F -- "fdmini: error:" <<<"$out")
  if [[ $rc -ne 3 ]]; then why="exit $rc, expected 3"
  elif [[ $n -ne 1 ]]; then why="$n error lines, expected 1"
  elif ! has_re "$out" "^fdmini: error: rank [0-9][0-9]*: cannot allocate $what.* ([0-9][0-9]* bytes)"; then
    why="the error line does not name the rank, '$what' and the bytes"
  elif has_re "$out" "^fdmini: .* step [0-9][0-9]*/"; then why="steps ran before the error (a progress line)"
  elif has "$out" "verification:"; then why="a report was printed"
  fi
  if [[ -z $why ]]; then pass "$name"; else
    printf '%s\n' "$out" >"$work/out"
    fail "$name" "$why" "$work/out"
  fi
}

if [[ -n ${ASAN_OPTIONS:-} ]]; then
  echo "skip: the sanitizers reserve more address space than any ulimit -v leaves"
  skipped=2
elif ! (ulimit -v 800000) 2>/dev/null; then
  echo "skip: ulimit -v cannot be set here"
  skipped=2
else
  expect "wave whose checks do not fit where its fields do: exit 3 before the first step" 800000 \
    "the .*check" --op wave --global 601,601,65 --iters 100 --progress 1
  expect "heat whose --dump does not fit where its fields do: exit 3 before the first step" 750000 \
    "the --dump" --op heat --global 601,601,129 --iters 100 --progress 1 --no-check --dump "$work/u.raw"
  if [[ -e $work/u.raw ]] || compgen -G "$work/u.raw.*" >/dev/null; then fail "the failed dump left a file"; else
    pass "the failed dump left no file"
  fi
fi
if ((skipped > 0)); then
  echo "memory: $skipped skipped"
  exit 77 # ctest counts the test skipped (SKIP_RETURN_CODE)
fi
summary "memory"

#!/usr/bin/env bash
# fail_fast_test.sh - a check that fails on one rank of a multi-rank test fails every rank at
# once (tests/mr_test.h), never a hang until ctest's timeout. The harness's planted failure
# (FDMINI_TEST_FAIL_RANK=R,start|end) on rank 1 of 3 (or of FDMINI_TEST_RANKS_MAX):
#   - at the start of the first case, while the other ranks enter its collectives: rank 1 ends
#     the job after the harness's grace of 10 s, every rank non-zero, well within 60 s (its line
#     naming the rank and the case, where the launcher passes it on before the abort);
#   - at the end of the first case, after its last collective: every rank fails that case
#     ("failed on rank 1"), the other cases run to their end, the exit is non-zero.
# usage: fail_fast_test.sh TEST_PROGRAM MPIEXEC [MPIEXEC_FLAGS...] (a program built with
# tests/mr_test.h whose first case has collectives: test_multirank_matches_single_rank)
set -uo pipefail
prog=$1
mpiexec=$2
shift 2
mpiflags=("$@")
# shellcheck disable=SC1091 # tests/lib/checks.sh is checked on its own
. "$(dirname "$0")/../lib/checks.sh"
np=$(ranks 3)
first=test_neighbours_are_mutual

# run WHERE LIMIT: the program on np ranks with rank 1's planted failure, killed after LIMIT s;
# sets rc, out, secs
run() {
  local t0=$SECONDS
  out=$(FDMINI_TEST_FAIL_RANK=1,$1 timeout -k 5 "$2" "$mpiexec" -n "$np" "${mpiflags[@]}" "$prog" 2>&1)
  rc=$?
  secs=$((SECONDS - t0))
}

run start 60
name="a failure on rank 1 of $np at the start of a case: every rank ends at once"
# (the harness's line before MPI_Abort is the launcher's to pass on: Hydra may drop it)
if ((rc != 0 && rc != 124 && rc != 137 && secs < 45)) && has "$out" "rank 1: planted failure at the start of the case"; then
  has "$out" "rank 1: $first failed here and the other ranks did not agree within 10 s" || why=", its abort line lost"
  pass "$name (exit $rc after $secs s${why:-})"
else
  printf '%s\n' "$out" | tail -15 | sed 's/^/     | /'
  fail "$name" "exit $rc after $secs s (124: a hang cut by the timeout)"
fi

# (every case runs to its end: several minutes under the sanitizers)
run end 600
name="a failure on rank 1 of $np at the end of a case: every rank fails it, the other cases run"
if ((rc != 0 && rc != 124 && rc != 137)) && has "$out" "rank 0: $first failed on rank 1" &&
  has "$out" "[       OK ] test_graphs_replay_the_eager_run" && ! has "$out" "MPI_Abort"; then
  pass "$name (exit $rc after $secs s)"
else
  printf '%s\n' "$out" | tail -15 | sed 's/^/     | /'
  fail "$name" "exit $rc after $secs s"
fi
summary "fail fast"

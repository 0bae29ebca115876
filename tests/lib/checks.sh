# shellcheck shell=bash
# checks.sh - PASS/FAIL counting shared by the shell tests (tests/slurm, tests/launch,
# tests/bench). Source it, then:
#   pass NAME                 prints "PASS: NAME"
#   fail NAME [WHY] [FILE]    prints "FAIL: NAME[: WHY]" and, when FILE is readable, its contents
#   summary LABEL             prints "LABEL: N passed, M failed"; returns 0 iff nothing failed
#   ranks NP                  NP, or FDMINI_TEST_RANKS_MAX where that is set and smaller (tests/
#                             CMakeLists.txt sets it under MPICH's Hydra, whose ranks spin, and for sanitizers)
#   fsize_shim DIR            builds tests/lib/fsize_after_init.c into DIR and prints the
#                             library's path (a `ulimit -f` applied after MPI_Init)
#   nolock_shim DIR           builds tests/lib/no_locks.c into DIR and prints the library's
#                             path (a file system that takes no locks, for --checkpoint-dir's)
#   judge_exit NAME WANT RC PAT OUT
#                             pass NAME iff RC is WANT and file OUT holds PAT (fixed string),
#                             else fail with both and OUT's contents
#   has TEXT STRING           true iff TEXT holds STRING (fixed string)
#   has_re TEXT REGEX         true iff a line of TEXT matches REGEX (grep's basic regex)
# has and has_re read TEXT from a here-string, never as `printf ... | grep -q`: under pipefail
# that pipeline fails whenever grep -q exits at its match before the writer is done (bash's
# printf may write line by line, and then dies of SIGPIPE).
passed=0
failed=0
pass() {
  echo "PASS: $1"
  passed=$((passed + 1))
}
fail() {
  echo "FAIL: $1${2:+: $2}"
  if [[ -n ${3:-} && -r $3 ]]; then
    echo "----- output -----"
    cat "$3"
    echo "------------------"
  fi
  failed=$((failed + 1))
}
summary() {
  echo "$1: $passed passed, $failed failed"
  ((failed == 0))
}
ranks() {
  local m=${FDMINI_TEST_RANKS_MAX:-0}
  if ((m > 0 && $1 > m)); then echo "$m"; else echo "$1"; fi
}
fsize_shim() {
  local src
  src=$(dirname "${BASH_SOURCE[0]}")/fsize_after_init.c
  gcc -shared -fPIC -o "$1/libfsize_after_init.so" "$src" || {
    echo "cannot build the ulimit -f shim $src (gcc)" >&2
    return 1
  }
  echo "$1/libfsize_after_init.so"
}
nolock_shim() {
  local src
  src=$(dirname "${BASH_SOURCE[0]}")/no_locks.c
  gcc -shared -fPIC -o "$1/libno_locks.so" "$src" -ldl || {
    echo "cannot build the no-lock shim $src (gcc)" >&2
    return 1
  }
  echo "$1/libno_locks.so"
}
judge_exit() {
  if [[ $3 -eq $2 ]] && grep -q -F -- "$4" "$5"; then
    pass "$1"
  else
    fail "$1" "exit $3, expected $2 and '$4'" "$5"
  fi
}
has() { grep -q -F -- "$2" <<<"$1"; }
has_re() { grep -q -- "$2" <<<"$1"; }

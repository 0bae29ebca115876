# shellcheck shell=bash
# checks.sh - PASS/FAIL counting shared by the shell tests (tests/slurm, tests/launch,
# tests/bench). Source it, then:
#   pass NAME                 prints "PASS: NAME"
#   fail NAME [WHY] [FILE]    prints "FAIL: NAME[: WHY]" and, when FILE is readable, its contents
#   summary LABEL             prints "LABEL: N passed, M failed"; returns 0 iff nothing failed
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

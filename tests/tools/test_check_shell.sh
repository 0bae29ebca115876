#!/usr/bin/env bash
# test_check_shell.sh - tools/check-shell.sh (CI's shellcheck stage) finds what it exists to
# find: on a copy of three of the project's scripts it passes as they are, and exits 1 with its
# line for each planted fault: a shellcheck warning in a test script, a pipe into grep -q in a
# tool and in a job script (launch/*.sbatch); a commented-out pipe is no fault.
# Usage: tests/tools/test_check_shell.sh     Exit 0 when every check behaved, 77 without shellcheck.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck disable=SC1091 # tests/lib/checks.sh is checked on its own
. "$root/tests/lib/checks.sh"
if ! command -v shellcheck >/dev/null; then
  echo "skip: no shellcheck"
  exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# fresh: a pristine copy of three of the scripts check-shell reads (a test script, a tool, a
# job script; the stage itself reads every one), each fault planted in one of them
sbatch=$(cd "$root" && find launch -name '*.sbatch' -type f | sort | head -1)
fresh() {
  rm -rf "$work/tree"
  mkdir -p "$work/tree"
  (cd "$root" && cp --parents -t "$work/tree" tests/cli/checkpoint_test.sh tools/install-deps.sh "$sbatch")
}
# expect NAME WANT_RC PATTERN: check-shell on the copy exits WANT_RC with PATTERN (grep -F)
expect() {
  "$root/tools/check-shell.sh" "$work/tree" >"$work/out" 2>&1
  judge_exit "$1" "$2" $? "$3" "$work/out"
}

fresh
expect "the three as they are pass" 0 "check-shell: ok (shellcheck, no pipe into grep -q)"

fresh
# an array element with a comma, unquoted: SC2054, a warning (the stage once ignored it)
# shellcheck disable=SC2016 # the planted line's expansion is for the copy, not here
printf 'planted=(--global 24,24,24)\necho "${planted[@]}"\n' >>"$work/tree/tests/cli/checkpoint_test.sh"
expect "a shellcheck warning in a test script fails" 1 "SC2054"

# the planted pipes are written through %s so that this file holds none itself
bar='|'
fresh
printf 'if echo x %s grep -q x; then :; fi\n' "$bar" >>"$work/tree/tools/install-deps.sh"
expect "a pipe into grep -q in a tool fails" 1 "tools/install-deps.sh:"

fresh
printf 'srun hostname %s grep -q nid\n' "$bar" >>"$work/tree/$sbatch"
expect "a pipe into grep -q in a job script fails" 1 "$sbatch:"

fresh
printf '# if echo x %s grep -q x; then :; fi\n' "$bar" >>"$work/tree/tools/install-deps.sh"
expect "a commented-out pipe into grep -q passes" 0 "check-shell: ok"

summary "check-shell test"

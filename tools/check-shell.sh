#!/usr/bin/env bash
# check-shell.sh - the shell scripts' check, a stage of tools/run-tests.sh (so of CI): shellcheck
# over every *.sh under launch/, tools/, tests/ and bench/ and .ci/run, then one rule shellcheck
# lacks: under pipefail, `WRITER | grep -q` fails whenever grep exits at its match before the
# writer is done, which made a test fail at random (tests/lib/checks.sh has has and has_re;
# elsewhere grep reads a here-string); the job scripts (launch/*.sbatch) are read for it too.
# Usage: tools/check-shell.sh [ROOT]   ROOT: the tree to check (default: this one). Exit 0 when
# both pass, 1 when either finds something (its lines on stdout), 2 without shellcheck.
set -uo pipefail
root=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
cd "$root" || exit 2
if ! command -v shellcheck >/dev/null; then
  echo "check-shell: shellcheck not found (apt-get install shellcheck)" >&2
  exit 2
fi
files=()
mapfile -t files < <(find launch tools tests bench -name '*.sh' -type f 2>/dev/null | sort)
[[ -f .ci/run ]] && files+=(.ci/run)
echo "shellcheck ${files[*]}"
rc=0
shellcheck "${files[@]}" || rc=1
sbatch=()
mapfile -t sbatch < <(find launch -name '*.sbatch' -type f 2>/dev/null | sort)
early=$(grep -n -E '(^|[^|])\|[[:space:]]*grep([[:space:]]+-[a-zA-Z]+)*[[:space:]]+-[a-zA-Z]*q' \
  "${files[@]}" "${sbatch[@]}" | grep -v -E '^[^:]+:[0-9]+:[[:space:]]*#' || true)
if [[ -n $early ]]; then
  printf '%s\n' "$early"
  echo "error: the lines above pipe into grep -q (under pipefail the pipeline can fail after grep has matched)"
  rc=1
fi
[[ $rc -eq 0 ]] && echo "check-shell: ok (shellcheck, no pipe into grep -q)"
exit "$rc"

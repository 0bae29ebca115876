#!/usr/bin/env bash
# test_check_layers.sh - tools/check-layers.py finds what it exists to find: on a copy of the
# source tree (kernels/, base/, halo/, src/, CONTRIBUTING.md; no build, so the symbol part is skipped)
# it passes as the tree is, and fails with its line for each planted fault: a .c file that
# includes the header of a file that includes its own (src/io/output.c and src/io/snapshot.c, issue
# 25), two headers that include each other, an upward include from halo/ and from base/, an
# undocumented getenv in kernels/ and in base/.
# Usage: tests/tools/test_check_layers.sh        Exit 0 when every check behaved.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck disable=SC1091 # tests/lib/checks.sh is checked on its own
. "$root/tests/lib/checks.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# fresh: a pristine copy of what check-layers reads
fresh() {
  rm -rf "$work/tree"
  mkdir -p "$work/tree/tools"
  cp -r "$root/kernels" "$root/base" "$root/halo" "$root/src" "$root/CONTRIBUTING.md" "$work/tree/"
  cp "$root/tools/check-layers.py" "$work/tree/tools/"
}
# expect NAME WANT_RC PATTERN: check-layers on the copy exits WANT_RC with PATTERN (grep -F)
expect() {
  (cd "$work/tree" && python3 tools/check-layers.py) >"$work/out" 2>&1
  judge_exit "$1" "$2" $? "$3" "$work/out"
}

fresh
expect "the tree as it is passes" 0 "check-layers: ok (includes, include circles, getenv list"

fresh
printf '#include "snapshot.h"\n' >>"$work/tree/src/io/output.c"
expect "output.c including snapshot.h closes a circle with snapshot.c" 1 \
  "files that include each other (src/io/output, src/io/snapshot): src/io/output.c includes snapshot.h; src/io/snapshot.c includes output.h"

fresh
sed -i 's|^#include <stdio.h>|#include <stdio.h>\n#include "bind.h"|' "$work/tree/src/io/json.h"
expect "two headers that include each other" 1 "files that include each other (src/io/json.h, src/run/bind.h)"

fresh
printf '#include "solver.h"\n' >>"$work/tree/halo/halo.c"
expect "an upward include" 1 "halo/halo.c:"

fresh
printf '#include "halo.h"\n' >>"$work/tree/base/fd_error.c"
expect "base/ including the exchange's header" 1 "base/fd_error.c:"

fresh
printf '#include "../src/io/report.h"\n' >>"$work/tree/base/mpi_gpu.h"
expect "base/ including a driver header by path" 1 "base/mpi_gpu.h:"

fresh
printf 'static const char *fd_test_env(void) { return getenv("FDMINI_SECRET"); }\n' >>"$work/tree/kernels/common.c"
expect "an undocumented getenv" 1 "reads FDMINI_SECRET, which CONTRIBUTING.md's getenv list does not document"

fresh
printf 'static const char *fd_test_env(void) { return getenv("FDMINI_SECRET"); }\n' >>"$work/tree/base/fd_error.c"
expect "an undocumented getenv in base/" 1 "base/fd_error.c:"

summary "check-layers test"

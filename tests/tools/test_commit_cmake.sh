#!/usr/bin/env bash
# test_commit_cmake.sh - tools/cmake/FdminiCommit.cmake, the build step that names the commit in
# every report, JSON record and checkpoint, on a scratch git repository: git's name of the
# checkout; after a new commit the new one (the fault it exists for: a name fixed at configure
# time that an incremental build kept); "-dirty" where the tree differs; FDMINI_COMMIT at build
# time over CONFIGURED (configure time's) over git; "unknown" without either or a repository;
# the file not rewritten where its text is the same (nothing recompiles); characters a C string
# cannot hold replaced, 47 at most.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
# shellcheck disable=SC1091 # tests/lib/checks.sh is checked on its own
. "$root/tests/lib/checks.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
script=$root/tools/cmake/FdminiCommit.cmake
out=$tmp/fdmini_commit.c
# gen [CONFIGURED]: the build step on the scratch repository, FDMINI_COMMIT as the caller's env
gen() { cmake -DSRC="$tmp/repo" -DOUT="$out" "-DCONFIGURED=${1:-}" -P "$script" > "$tmp/log" 2>&1; }
# named NAME: the file defines fdmini_git_commit as NAME
named() { grep -qx "const char fdmini_git_commit\[\] = \"$1\";" "$out"; }
mkdir -p "$tmp/repo"
git -C "$tmp/repo" init -q
g() { git -C "$tmp/repo" -c user.name=t -c user.email=t@t -c commit.gpgsign=false "$@"; }
echo a > "$tmp/repo/f"
g add f && g commit -qm one
first=$(git -C "$tmp/repo" rev-parse --short=12 HEAD)
unset FDMINI_COMMIT
if gen && named "$first"; then pass "the checkout's commit ($first)"; else fail "the checkout's commit" "" "$out"; fi
echo b > "$tmp/repo/f"
g commit -qam two
second=$(git -C "$tmp/repo" rev-parse --short=12 HEAD)
if gen && named "$second"; then pass "after a new commit, the new one ($second)"; else fail "after a new commit" "still $(cat "$out")"; fi
touch -d '2000-01-01' "$out"
if gen && [ "$(find "$out" -newermt '2001-01-01' | wc -l)" -eq 0 ]; then pass "the same name: the file not rewritten"; else fail "the same name: the file was rewritten"; fi
echo c > "$tmp/repo/f"
if gen && named "$second-dirty"; then pass "a changed tree: $second-dirty"; else fail "a changed tree" "" "$out"; fi
if gen abc123 && named abc123; then pass "CONFIGURED over git"; else fail "CONFIGURED over git" "" "$out"; fi
if FDMINI_COMMIT=f00d gen abc123 && named f00d; then pass "FDMINI_COMMIT at build time over CONFIGURED"; else fail "FDMINI_COMMIT over CONFIGURED" "" "$out"; fi
if FDMINI_COMMIT='a"b\c d' gen && named 'a_b_c_d'; then pass "a name a C string cannot hold: replaced"; else fail "a name a C string cannot hold" "" "$out"; fi
long=$(printf 'x%.0s' $(seq 60))
if FDMINI_COMMIT=$long gen && named "${long:0:47}"; then pass "a long name: 47 characters"; else fail "a long name" "" "$out"; fi
rm -rf "$tmp/repo/.git"
if gen && named unknown; then pass "no repository: unknown"; else fail "no repository" "" "$out"; fi
summary "test_commit_cmake"

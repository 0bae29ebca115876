#!/usr/bin/env bash
# docs_test.sh - README.md and docs/ say what the program does: (a) every option that
# `fdmini --help` prints has a row in README's options table and in docs/options.md; (b) each
# report example (a ```text block after a "report-example" comment, in README.md and
# docs/report.md) has the line labels of a real run of the command on its first line, in order,
# none missing or extra (a label is a line's text before its values: up to the first digit or
# the first run of two spaces; numbers differ from run to run); (c) every relative link in
# README.md and docs/*.md points to a file that exists; (d) README.md has at most 320 lines.
# Each check then runs on a copy with a planted fault (an option row removed, a report line
# dropped and one added, a broken link, a README too long) and must fail.
#
# Usage: tests/docs/docs_test.sh FDMINI MPIEXEC [MPIEXEC_FLAGS...]
# Exit: 0 all passed, 1 otherwise. Last line: "docs test: N passed, M failed".
set -uo pipefail
fdmini=${1:?usage: docs_test.sh FDMINI MPIEXEC [FLAGS...]}
mpiexec=${2:?usage: docs_test.sh FDMINI MPIEXEC [FLAGS...]}
shift 2
flags=("$@")
fdmini=$(readlink -f "$fdmini")
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck disable=SC1091 # tests/lib/checks.sh is checked on its own
. "$root/tests/lib/checks.sh"
if [[ $(id -u) -eq 0 ]]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
# In the sanitizer build LeakSanitizer prints the suppressions it used after the program's own
# output (tests/CMakeLists.txt suppresses MPI's never-freed allocations): not a report line.
export LSAN_OPTIONS="${LSAN_OPTIONS:+$LSAN_OPTIONS:}print_suppressions=0"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# options FILE: the long options --help prints, one a line
options() { grep -o -E '^  --[a-z][a-z-]*' "$1" | sed 's/^  //' | sort -u; }

# check_options HELP README OPTIONS_MD: every option of HELP in a table row of README's
# "## Options" section and in a table row of OPTIONS_MD; prints what is missing
check_options() {
  local help=$1 readme=$2 optmd=$3 o bad=0 rows mdrows
  rows=$(awk '/^## /{on = ($0 == "## Options")} on && /^\|/' "$readme")
  mdrows=$(grep '^|' "$optmd")
  while read -r o; do
    if ! has "$rows" "\`$o"; then
      echo "README.md's options table lacks $o"
      bad=1
    fi
    if ! has "$mdrows" "\`$o"; then
      echo "$(basename "$optmd") lacks a row for $o"
      bad=1
    fi
  done < <(options "$help")
  return "$bad"
}

# labels: stdin's lines as labels (blank lines dropped), one a line; the note that a phase
# exceeds the step is dropped too: a run prints it only when the machine was busy
labels() {
  sed -E -e 's/^ +//' -e '/^$/d' -e '/^\(a phase exceeds the step/d' -e 's/([0-9]|  ).*$//' -e 's/ +$//'
}

# example_blocks FILE DIR: each report example of FILE into DIR/N.cmd (its command) and
# DIR/N.txt (the output shown); prints the number of examples
example_blocks() {
  awk -v dir="$2" '
    /<!-- report-example/ { want = 1; next }
    want && /^```text$/ { n++; inblock = 1; first = 1; want = 0; next }
    inblock && /^```$/ { inblock = 0; next }
    inblock && first { sub(/^\$ /, ""); print > (dir "/" n ".cmd"); first = 0; next }
    inblock { print > (dir "/" n ".txt") }
    END { print n + 0 }' "$1"
}

# check_example FILE: every report example of FILE against a real run of its command; the
# command must read "mpirun -n NP ./build/fdmini ARGS..."
check_example() {
  local file=$1 dir n i cmd np args bad=0
  dir=$(mktemp -d "$work/ex.XXXX")
  n=$(example_blocks "$file" "$dir")
  if ((n == 0)); then
    echo "$(basename "$file") has no report example"
    return 1
  fi
  for ((i = 1; i <= n; i++)); do
    read -r cmd <"$dir/$i.cmd"
    if [[ ! $cmd =~ ^mpirun\ -n\ ([0-9]+)\ \./build/fdmini(\ .*)?$ ]]; then
      echo "$(basename "$file"): example $i's command is not 'mpirun -n NP ./build/fdmini ...': $cmd"
      bad=1
      continue
    fi
    np=${BASH_REMATCH[1]}
    read -r -a args <<<"${BASH_REMATCH[2]}"
    if [[ ! -s $work/run-$np-${args[*]// /_}.out ]]; then
      (cd "$work" && timeout 120 "$mpiexec" -n "$np" "${flags[@]}" "$fdmini" "${args[@]}") \
        >"$work/run-$np-${args[*]// /_}.out" 2>&1 || {
        echo "the example's command failed: $cmd"
        cat "$work/run-$np-${args[*]// /_}.out"
        rm -f "$work/run-$np-${args[*]// /_}.out"
        bad=1
        continue
      }
    fi
    if ! diff <(labels <"$dir/$i.txt") <(labels <"$work/run-$np-${args[*]// /_}.out") \
      >"$dir/$i.diff"; then
      echo "$(basename "$file"): example $i's line labels differ from a real run (< shown, > real):"
      cat "$dir/$i.diff"
      bad=1
    fi
  done
  return "$bad"
}

# check_links FILE...: every relative link target of each FILE exists (anchors dropped)
check_links() {
  local f t path bad=0
  for f in "$@"; do
    while read -r t; do
      t=${t%%#*}
      [[ -z $t ]] && continue
      path=$(dirname "$f")/$t
      if [[ ! -e $path ]]; then
        echo "$f: broken link to $t"
        bad=1
      fi
    done < <(grep -o -E '\]\([^)]+\)' "$f" | sed -E 's/^\]\((.*)\)$/\1/' |
      grep -v -E '^(https?:|mailto:|#)')
  done
  return "$bad"
}

# check_length README: at most 320 lines
check_length() {
  local n
  n=$(wc -l <"$1")
  if ((n > 320)); then
    echo "README.md has $n lines, more than 320"
    return 1
  fi
}

# expect NAME WANT CMD...: CMD exits 0 (WANT=pass), or non-zero saying why (WANT=fail:TEXT,
# TEXT a fixed string its output must hold, so that a fault fails for its own reason)
expect() {
  local name=$1 want=$2 rc=0
  shift 2
  "$@" >"$work/out" 2>&1 || rc=$?
  if [[ $want == pass && $rc -eq 0 ]] ||
    { [[ $want == fail:* && $rc -ne 0 ]] && grep -q -F -- "${want#fail:}" "$work/out"; }; then
    pass "$name"
  else
    fail "$name" "expected the check to $want, it exited $rc" "$work/out"
  fi
}

if ! "$mpiexec" -n 1 "${flags[@]}" "$fdmini" --help >"$work/help" 2>&1 || ! grep -q '^  --global' "$work/help"; then
  fail "fdmini --help" "" "$work/help"
  summary "docs test"
  exit 1
fi
if (($(options "$work/help" | wc -l) < 20)); then
  fail "--help lists the options" "fewer than 20 found" "$work/help"
fi

readme=$root/README.md
expect "(a) every --help option in README's table and docs/options.md" pass \
  check_options "$work/help" "$readme" "$root/docs/options.md"
expect "(b) README's report example has a real run's lines" pass check_example "$readme"
expect "(b) docs/report.md's report example has a real run's lines" pass check_example "$root/docs/report.md"
expect "(c) every relative link in README.md and docs/*.md exists" pass \
  check_links "$readme" "$root"/docs/*.md
expect "(d) README.md has at most 320 lines" pass check_length "$readme"

# Planted faults, on copies (the links of a copy resolve from the same folders).
mkdir -p "$work/tree/docs"
cp "$readme" "$work/tree/README.md"
cp "$root"/docs/*.md "$work/tree/docs/"
ln -s "$root/launch" "$root/bench" "$root/CONTRIBUTING.md" "$work/tree/"
t=$work/tree

# shellcheck disable=SC2016 # the backquotes are markdown's
sed -i '/^| `--halo-width S` |/d' "$t/README.md"
expect "(a) fails without README's --halo-width row" "fail:README.md's options table lacks --halo-width" \
  check_options "$work/help" "$t/README.md" "$t/docs/options.md"
cp "$readme" "$t/README.md"
# shellcheck disable=SC2016 # the backquotes are markdown's
sed -i '/^| `--bind-report` |/d' "$t/docs/options.md"
expect "(a) fails without docs/options.md's --bind-report row" "fail:options.md lacks a row for --bind-report" \
  check_options "$work/help" "$t/README.md" "$t/docs/options.md"
cp "$root/docs/options.md" "$t/docs/options.md"

sed -i '/^  phases  /d' "$t/README.md"
expect "(b) fails with the phases line dropped from the example" "fail:> phases" check_example "$t/README.md"
cp "$readme" "$t/README.md"
sed -i 's/^  halo        path/  tiles       42\n&/' "$t/README.md"
expect "(b) fails with a line the run does not print added" "fail:< tiles" check_example "$t/README.md"
cp "$readme" "$t/README.md"

printf '\nSee [the guide](docs/no-such-page.md).\n' >>"$t/README.md"
expect "(c) fails on a broken link in README.md" "fail:broken link to docs/no-such-page.md" check_links "$t/README.md"
cp "$readme" "$t/README.md"
printf '\nSee [options](../no-such-file.md#x).\n' >>"$t/docs/running.md"
expect "(c) fails on a broken link in docs/" "fail:broken link to ../no-such-file.md" check_links "$t/docs/running.md"

for ((i = $(wc -l <"$readme"); i <= 320; i++)); do echo >>"$t/README.md"; done
expect "(d) fails on a README of 321 lines" "fail:has 321 lines" check_length "$t/README.md"

summary "docs test"

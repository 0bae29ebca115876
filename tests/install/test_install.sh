#!/usr/bin/env bash
# test_install.sh - `cmake --install BUILD --prefix P` as a user runs it: the prefix holds
# P/bin/fdmini, the launch scripts, the study tools and the profiler recipes (docs/building.md,
# "Installing"), and they work from there, away from the checkout: the installed binary runs on
# 2 ranks, local.sh and study.py find P/bin/fdmini by themselves, collect.py reads its record,
# the batch scripts refuse to submit without an account, and the binary's RUNPATH does not point
# into the build tree.
#
# Usage: tests/install/test_install.sh BUILD_DIR     (a configured and built host build)
# Exit: 0 all passed, 1 otherwise. Last line: "install test: N passed, M failed".
set -uo pipefail
build=${1:?usage: test_install.sh BUILD_DIR}
build=$(cd "$build" && pwd)
# shellcheck disable=SC1091 # tests/lib/checks.sh is checked on its own
. "$(dirname "${BASH_SOURCE[0]}")/../lib/checks.sh"
if [[ $(id -u) -eq 0 ]]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
export OMP_NUM_THREADS=1 OMPI_MCA_rmaps_base_oversubscribe=1

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
P=$work/prefix
if cmake --install "$build" --prefix "$P" >"$work/install.out" 2>&1; then
  pass "cmake --install $build --prefix P"
else
  fail "cmake --install" "" "$work/install.out"
  summary "install test"
  exit 1
fi

missing=()
for f in bin/fdmini share/fdmini/launch/lumi-g.sbatch share/fdmini/launch/frontier.sbatch \
  share/fdmini/launch/select_gpu.sh share/fdmini/launch/local.sh \
  share/fdmini/bench/scaling/study.py share/fdmini/bench/scaling/collect.py \
  share/fdmini/bench/scaling/plot.py share/fdmini/bench/snapshots/render_slice.py \
  share/fdmini/bench/profile/nsys_overlap.sh share/fdmini/bench/profile/rocprofv3.sh; do
  [[ -x $P/$f ]] || missing+=("$f")
done
for f in share/fdmini/launch/README.md share/fdmini/launch/site-conventions.sh \
  share/fdmini/bench/scaling/README.md share/fdmini/bench/profile/README.md \
  share/doc/fdmini/README.md share/doc/fdmini/options.md share/doc/fdmini/report.md \
  share/doc/fdmini/building.md; do
  [[ -f $P/$f ]] || missing+=("$f")
done
if ((${#missing[@]} == 0)); then
  pass "the prefix holds bin/fdmini, the launch scripts, the study tools, the recipes, the README and docs"
else
  fail "files missing or not executable under the prefix: ${missing[*]}"
fi

# away from the checkout from here on
cd "$work" || exit 1
if runpath=$(readelf -d "$P/bin/fdmini" | grep -E 'R(UN)?PATH') && [[ $runpath == *"$build"* ]]; then
  fail "the installed binary's RUNPATH points into the build tree: $runpath"
else
  pass "the installed binary's RUNPATH does not point into the build tree"
fi

rc=0
timeout 120 mpirun -n 2 "$P/bin/fdmini" --global 12,12,12 --iters 2 --json "$work/run.json" >"$work/run.out" 2>&1 || rc=$?
if ((rc == 0)) && grep -q 'verification: PASS' "$work/run.out"; then
  pass "P/bin/fdmini runs on 2 ranks"
else
  fail "P/bin/fdmini on 2 ranks" "exit $rc" "$work/run.out"
fi

rc=0
FDMINI_NP=2 FDMINI_BIND=none timeout 120 "$P/share/fdmini/launch/local.sh" --global 12,12,12 --iters 2 \
  >"$work/local.out" 2>&1 || rc=$?
if ((rc == 0)) && grep -q 'verification: PASS' "$work/local.out" && grep -qF " $P/bin/fdmini --global" "$work/local.out"; then
  pass "installed local.sh finds P/bin/fdmini and runs it"
else
  fail "installed local.sh" "exit $rc" "$work/local.out"
fi

if python3 "$P/share/fdmini/bench/scaling/study.py" run --machine local --study weak --size 8,8,8 \
  --scales 2 --repeats 1 --dry-run >"$work/study.out" 2>&1 && grep -q -- " $P/bin/fdmini --local 8,8,8" "$work/study.out"; then
  pass "installed study.py uses P/bin/fdmini by default"
else
  fail "installed study.py default binary" "" "$work/study.out"
fi

# shellcheck disable=SC2016 # the literal text of the job script
if python3 "$P/share/fdmini/bench/scaling/study.py" run --machine lumi-g --study weak --size 8,8,8 \
  --nodes 16 --repeats 1 --account p --dry-run --out "$work/study-lumi" >"$work/study-lumi.out" 2>&1 &&
  cmp -s "$work/study-lumi/site-conventions.sh" "$P/share/fdmini/launch/site-conventions.sh" &&
  grep -q -- '--cpu-bind=map_cpu:.* "$FDMINI_SITE_BINARY"' "$work/study-lumi/job-weak-N0016.sbatch"; then
  pass "installed study.py --machine lumi-g takes the installed launch/site-conventions.sh"
else
  fail "installed study.py --machine lumi-g" "" "$work/study-lumi.out"
fi

if python3 "$P/share/fdmini/bench/scaling/collect.py" "$work/run.json" --study strong -o "$work/r.csv" \
  >"$work/collect.out" 2>&1 && grep -q '^strong,12x12x12,' "$work/r.csv"; then
  pass "installed collect.py reads the installed binary's record"
else
  fail "installed collect.py" "" "$work/collect.out"
fi

rc=0
env -u FDMINI_ACCOUNT -u SBATCH_ACCOUNT -u SLURM_JOB_ID "$P/share/fdmini/launch/lumi-g.sbatch" >"$work/sb.out" 2>&1 || rc=$?
if ((rc == 2)) && grep -q 'no account: set FDMINI_ACCOUNT=' "$work/sb.out"; then
  pass "installed lumi-g.sbatch runs (refuses to submit without an account)"
else
  fail "installed lumi-g.sbatch" "exit $rc" "$work/sb.out"
fi

summary "install test"

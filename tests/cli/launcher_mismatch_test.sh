#!/usr/bin/env bash
# launcher_mismatch_test.sh - a launcher that started N processes while MPI sees another world
# (fdmini built with one MPI library and started by another's launcher, every process a
# singleton) ends every process with one line and exit 2 (src/run/site.c); the launchers' own
# variables are read, never an allocation's:
#   - the other MPI library's launcher, where this machine has both (Open MPI's mpirun for an
#     MPICH build, MPICH's mpiexec.mpich for an Open MPI build): exit 2, one error line naming
#     the launcher's variable, on every process;
#   - the build's own launcher on 2 ranks: runs;
#   - srun's step variables without a step's PMI (SLURM_STEP_ID, SLURM_STEP_NUM_TASKS=4) on a
#     singleton: exit 2; an allocation's SLURM_NTASKS=4 alone (./fdmini inside salloc or
#     sbatch without srun): runs;
#   - under a live Slurm: ./fdmini inside `salloc -n 2` runs.
# usage: launcher_mismatch_test.sh FDMINI MPIEXEC [MPIEXEC_FLAGS...]
set -uo pipefail
fdmini=$1
mpiexec=$2
shift 2
mpiflags=("$@")
# shellcheck disable=SC1091 # tests/lib/checks.sh is checked on its own
. "$(dirname "$0")/../lib/checks.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
small=(--global '12,12,12' --iters 2 --warmup 0)
msg='but MPI_COMM_WORLD holds 1: fdmini'"'"'s MPI library'

# refused NAME OUT RC VAR: exit 2, exactly one "fdmini: error:" line naming VAR and the cause,
# a clean line (MPICH's version string holds a tab: "MPICH Version:\t4.0.2")
refused() {
  local n
  n=$(grep -c 'fdmini: error:' "$2")
  if (($3 == 2)) && ((n == 1)) && grep -q "fdmini: error: the launcher started .* ($4=" "$2" && grep -qF "$msg" "$2"; then
    if grep -q '[[:cntrl:]]' <<<"$(grep 'fdmini: error:' "$2")"; then
      fail "$1" "a control character (a tab?) in the error line" "$2"
    else
      pass "$1: exit 2, one line naming $4, no control character"
    fi
  else
    fail "$1" "exit $3, $n error lines" "$2"
  fi
}
# ran NAME OUT RC: exit 0 and verification PASS
ran() {
  if (($3 == 0)) && grep -q 'verification: PASS' "$2"; then pass "$1"; else fail "$1" "exit $3" "$2"; fi
}

lib=$("$mpiexec" --version 2>&1 | head -n 3)
if grep -qE 'Open MPI|OpenRTE' <<<"$lib"; then
  ours=openmpi other=$(command -v mpiexec.mpich || true) other_var=PMI_SIZE other_flags=()
else
  ours=mpich other=$(command -v mpirun.openmpi || true) other_var=OMPI_COMM_WORLD_SIZE
  other_flags=(--oversubscribe)
  [[ $(id -u) -eq 0 ]] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
echo "launcher test: build's MPI: $ours ($mpiexec); the other launcher: ${other:-none}"

rc=0
timeout 120 "$mpiexec" -n 2 "${mpiflags[@]}" "$fdmini" "${small[@]}" >"$work/own" 2>&1 || rc=$?
ran "the build's own launcher ($mpiexec -n 2): runs" "$work/own" "$rc"

if [[ -n $other ]]; then
  rc=0
  timeout 120 "$other" -n 3 "${other_flags[@]}" "$fdmini" "${small[@]}" >"$work/other" 2>&1 || rc=$?
  refused "$ours build started by the other MPI's launcher ($other -n 3)" "$work/other" "$rc" "$other_var"
else
  echo "launcher test: (no second MPI library's launcher here: the cross-launcher case is not run)"
fi

# srun's variables without srun: a step's count is read, an allocation's is not
rc=0
env SLURM_STEP_ID=0 SLURM_STEP_NUM_TASKS=4 SLURM_PROCID=0 "$fdmini" "${small[@]}" >"$work/step" 2>&1 || rc=$?
refused "a singleton in an srun step of 4 tasks (SLURM_STEP_NUM_TASKS=4)" "$work/step" "$rc" SLURM_STEP_NUM_TASKS
rc=0
env -u SLURM_STEP_ID -u SLURM_STEP_NUM_TASKS SLURM_NTASKS=4 SLURM_JOB_ID=1 "$fdmini" "${small[@]}" >"$work/alloc" 2>&1 || rc=$?
ran "./fdmini in an allocation of 4 tasks without srun (SLURM_NTASKS=4): runs" "$work/alloc" "$rc"

if command -v salloc >/dev/null 2>&1 && scontrol ping >/dev/null 2>&1; then
  rc=0
  timeout 180 salloc --immediate=60 -n 2 --time=00:05:00 "$fdmini" "${small[@]}" >"$work/salloc" 2>&1 || rc=$?
  ran "./fdmini inside salloc -n 2 (no srun): runs as one process" "$work/salloc" "$rc"
else
  echo "launcher test: (no Slurm answering: the salloc case is not run)"
fi

summary "launcher test"

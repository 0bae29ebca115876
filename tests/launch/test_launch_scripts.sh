#!/usr/bin/env bash
# test_launch_scripts.sh - tests the launch/ scripts with the host build: shellcheck on every one,
# the GPU-selection wrapper, local.sh under mpirun (and on a stub node of 4 GPUs: each rank bound
# to the CPUs of the GPU fdmini takes, following --gpu-map), the sbatch options each batch script
# builds for LUMI's partitions (--exclusive where nodes are shared) and Frontier's partitions and
# QOS (their limits, with one-line refusals; a stub sbatch prints the arguments), and
# lumi-g.sbatch / frontier.sbatch submitted to a live Slurm (e.g. launch/slurm-local.sh's) with
# the GPU flags switched off, each of which must exit 0, print PASS and, when the binary has
# --bind-report, the binding table; in the jobs, the environment lines (MPICH_OFI_NIC_POLICY,
# CRAY_LD_LIBRARY_PATH first) and FDMINI_SBCAST=1 (the binary run from /tmp, then removed).
# Checkpoints (FDMINI_CHECKPOINT_DIR): the warning asked of Slurm (--signal=B:USR1@S), and in a
# job with a stub srun and sbatch the warning passed on to srun, the continuation submitted
# (--dependency=afterany, FDMINI_RESUBMIT one less), no continuation after a stop without the
# warning; under the live Slurm a job warned with `scancel --signal=USR1 --batch` (what
# --signal=B:USR1 does) stops after a checkpoint and its continuation finishes the run, bitwise
# equal to the uninterrupted run.
#
# Usage: tests/launch/test_launch_scripts.sh FDMINI_BINARY
# Exit:  0 all passed, 1 a case failed, 77 no slurmctld answering and nothing else failed
#        (ctest SKIP_RETURN_CODE).
# Knobs: LAUNCH_TEST_TIMEOUT (seconds per job, default 180), LAUNCH_TEST_REQUIRE=1 turns the skip
#        into a failure (for a CI that starts the Slurm itself).
set -euo pipefail

BIN=${1:-}
TMO=${LAUNCH_TEST_TIMEOUT:-180}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
launch=$root/launch

if [[ -z $BIN ]]; then
  echo "usage: $0 FDMINI_BINARY" >&2
  exit 2
fi
if [[ ! -x $BIN ]]; then
  echo "launch test: '$BIN' is not an executable file" >&2
  exit 1
fi
BIN=$(readlink -f "$BIN")

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# shellcheck disable=SC1091 # tests/lib/checks.sh is checked on its own
. "$(dirname "$0")/../lib/checks.sh"

# ---- shellcheck on every launch script (and this one) ----
scripts=("$launch"/*.sh "$launch"/*.sbatch "$root/tests/launch/test_launch_scripts.sh")
if command -v shellcheck >/dev/null 2>&1; then
  if shellcheck "${scripts[@]}" >"$work/shellcheck" 2>&1; then
    pass "shellcheck ${#scripts[@]} scripts"
  else
    fail "shellcheck" "findings" "$work/shellcheck"
  fi
else
  fail "shellcheck" "shellcheck not installed (apt-get install shellcheck)"
fi

# ---- select_gpu.sh: local id -> ROCR_VISIBLE_DEVICES, optional map, refusal without id ----
# shellcheck disable=SC2016 # expanded by the bash that select_gpu.sh runs
show='echo "${ROCR_VISIBLE_DEVICES:-unset} ${CUDA_VISIBLE_DEVICES:-unset}"'
out=$(env -u OMPI_COMM_WORLD_LOCAL_RANK -u MPI_LOCALRANKID -u PMI_LOCAL_RANK \
  SLURM_LOCALID=3 "$launch/select_gpu.sh" bash -c "$show" 2>&1) || true
if [[ $out == "3 unset" ]]; then
  pass "select_gpu.sh: SLURM_LOCALID=3 -> ROCR_VISIBLE_DEVICES=3"
else
  fail "select_gpu.sh SLURM_LOCALID=3" "got '$out'"
fi
out=$(env -u OMPI_COMM_WORLD_LOCAL_RANK SLURM_LOCALID=0 FDMINI_GPU_MAP=4,5,2,3,6,7,0,1 \
  FDMINI_GPU_VISIBLE_VAR=CUDA_VISIBLE_DEVICES "$launch/select_gpu.sh" bash -c "$show" 2>&1) ||
  true
if [[ $out == "unset 4" ]]; then
  pass "select_gpu.sh: FDMINI_GPU_MAP and CUDA_VISIBLE_DEVICES"
else
  fail "select_gpu.sh FDMINI_GPU_MAP" "got '$out'"
fi
# mpirun or Hydra inside a Slurm job: every rank inherits the batch step's (or, under Open MPI,
# its orted's) SLURM_LOCALID=0, so the launcher's own local rank must win
for var in OMPI_COMM_WORLD_LOCAL_RANK MPI_LOCALRANKID; do
  out=$(env -u OMPI_COMM_WORLD_LOCAL_RANK -u MPI_LOCALRANKID -u PMI_LOCAL_RANK SLURM_LOCALID=0 "$var=5" \
    "$launch/select_gpu.sh" bash -c "$show" 2>&1) || true
  if [[ $out == "5 unset" ]]; then
    pass "select_gpu.sh: $var=5 under a Slurm job's SLURM_LOCALID=0 -> ROCR_VISIBLE_DEVICES=5"
  else
    fail "select_gpu.sh $var=5 SLURM_LOCALID=0" "got '$out'"
  fi
done
# FDMINI_GPU_MAP shorter than a node's tasks under srun: every task refuses alike (one that left
# alone would leave the others waiting in MPI_Init), the job's first task says why
for task in 0 1 3; do
  rc=0
  env -u OMPI_COMM_WORLD_LOCAL_RANK -u MPI_LOCALRANKID -u PMI_LOCAL_RANK SLURM_LOCALID=$task SLURM_PROCID=$task \
    SLURM_STEP_TASKS_PER_NODE=4 FDMINI_GPU_MAP=0,1 "$launch/select_gpu.sh" true >"$work/shortmap" 2>&1 || rc=$?
  lines=$(wc -l <"$work/shortmap")
  if ((rc == 2)) && { ((task == 0 && lines == 1)) && grep -q "FDMINI_GPU_MAP='0,1' has 2 entries, but a node runs 4 tasks" "$work/shortmap" ||
    ((task != 0 && lines == 0)); }; then
    pass "select_gpu.sh: a 2-entry FDMINI_GPU_MAP for 4 tasks per node, task $task: exit 2$( ((task)) || echo ', the one line')"
  else
    fail "select_gpu.sh short FDMINI_GPU_MAP, task $task" "exit $rc, $lines lines" "$work/shortmap"
  fi
done
# an FDMINI_GPU_MAP entry that is no GPU number (empty, a name): every task refuses, the first
# says why (before: the task given it ran with ROCR_VISIBLE_DEVICES empty or the name)
for map in 4,,5 4,x,5; do
  for task in 0 1; do
    rc=0
    env -u OMPI_COMM_WORLD_LOCAL_RANK -u MPI_LOCALRANKID -u PMI_LOCAL_RANK -u OMPI_COMM_WORLD_RANK -u PMI_RANK \
      SLURM_LOCALID=$task SLURM_PROCID=$task SLURM_STEP_TASKS_PER_NODE=2 FDMINI_GPU_MAP=$map \
      "$launch/select_gpu.sh" true >"$work/badmap" 2>&1 || rc=$?
    lines=$(wc -l <"$work/badmap")
    if ((rc == 2)) && { ((task == 0 && lines == 1)) && grep -q "FDMINI_GPU_MAP='$map' holds" "$work/badmap" ||
      ((task != 0 && lines == 0)); }; then
      pass "select_gpu.sh: FDMINI_GPU_MAP=$map, task $task: exit 2$( ((task)) || echo ', the one line')"
    else
      fail "select_gpu.sh FDMINI_GPU_MAP=$map, task $task" "exit $rc, $lines lines" "$work/badmap"
    fi
  done
done
rc=0
env -u SLURM_LOCALID -u OMPI_COMM_WORLD_LOCAL_RANK -u MPI_LOCALRANKID -u PMI_LOCAL_RANK \
  "$launch/select_gpu.sh" true >"$work/nolocal" 2>&1 || rc=$?
if ((rc == 2)) && grep -q 'no node-local task id' "$work/nolocal"; then
  pass "select_gpu.sh: refuses to run without a node-local id"
else
  fail "select_gpu.sh without local id" "exit $rc" "$work/nolocal"
fi

# ---- both batch scripts refuse to submit without an account, before calling sbatch ----
for script in lumi-g.sbatch frontier.sbatch; do
  rc=0
  env -u FDMINI_ACCOUNT -u SBATCH_ACCOUNT -u SLURM_JOB_ID "$launch/$script" >"$work/noacct" 2>&1 || rc=$?
  if ((rc == 2)) && grep -q "^$script: no account: set FDMINI_ACCOUNT=" "$work/noacct" &&
    (($(wc -l <"$work/noacct") == 1)); then
    pass "$script without an account: one line, exit 2, nothing submitted"
  else
    fail "$script without an account" "exit $rc" "$work/noacct"
  fi
done

# ---- partitions, QOS and node sharing: the sbatch line each script builds, or its refusal ----
# A stub sbatch first on PATH prints the arguments it was given, one per line.
stub=$work/stub
mkdir -p "$stub"
# shellcheck disable=SC2016 # the stub's own "$@"
printf '#!/bin/sh\nfor a in "$@"; do echo "ARG $a"; done\n' >"$stub/sbatch"
chmod +x "$stub/sbatch"
# submit_args SCRIPT [ENV=VALUE...]: runs SCRIPT outside a job with the stub; sets rc and out
submit_args() {
  local script=$1
  shift
  rc=0
  out=$(env -u SLURM_JOB_ID PATH="$stub:$PATH" FDMINI_ACCOUNT=p FDMINI_BINARY="$BIN" "$@" \
    "$launch/$script" 2>&1) || rc=$?
}
# expect_arg NAME ARG: the stub got ARG; expect_no_arg NAME ARG: it did not
expect_arg() {
  if ((rc == 0)) && grep -qxF -- "ARG $2" <<<"$out"; then pass "$1"; else fail "$1" "exit $rc, no '$2'" <(echo "$out"); fi
}
expect_no_arg() {
  if ((rc == 0)) && ! grep -qF -- "ARG $2" <<<"$out"; then pass "$1"; else fail "$1" "exit $rc, '$2' given" <(echo "$out"); fi
}
# expect_refusal NAME TEXT: exit 2, one line holding TEXT, sbatch not called
expect_refusal() {
  if ((rc == 2)) && [[ $(wc -l <<<"$out") -eq 1 ]] && grep -qF -- "$2" <<<"$out" && ! grep -q '^ARG ' <<<"$out"; then
    pass "$1"
  else
    fail "$1" "exit $rc" <(echo "$out")
  fi
}
submit_args lumi-g.sbatch
expect_no_arg "lumi-g.sbatch on standard-g (whole nodes): no --exclusive" --exclusive
for part in small-g dev-g; do
  submit_args lumi-g.sbatch FDMINI_PARTITION=$part
  expect_arg "lumi-g.sbatch on $part (nodes shared): --exclusive, or LUMI applies no binding" --exclusive
done
submit_args lumi-g.sbatch FDMINI_PARTITION=small-g FDMINI_EXCLUSIVE=0
expect_refusal "lumi-g.sbatch on small-g without --exclusive and with the CPU map: refused, one line, exit 2" \
  "FDMINI_PARTITION=small-g shares nodes and LUMI applies CPU binding only to whole-node allocations"
submit_args lumi-g.sbatch FDMINI_PARTITION=small-g FDMINI_EXCLUSIVE=0 FDMINI_CPU_BIND=none
expect_no_arg "lumi-g.sbatch on small-g, FDMINI_EXCLUSIVE=0 FDMINI_CPU_BIND=none: submitted unbound, shared" --exclusive
submit_args lumi-g.sbatch FDMINI_EXCLUSIVE=2
expect_refusal "lumi-g.sbatch FDMINI_EXCLUSIVE=2: refused" "FDMINI_EXCLUSIVE='2' is not 0 or 1"
submit_args frontier.sbatch FDMINI_PARTITION=debug
expect_refusal "frontier.sbatch FDMINI_PARTITION=debug: refused, debug is a QOS there" \
  "debug is a QOS on Frontier, not a partition: set FDMINI_QOS=debug"
submit_args frontier.sbatch FDMINI_QOS=debug FDMINI_TIME=01:00:00
expect_arg "frontier.sbatch FDMINI_QOS=debug: --qos=debug on partition batch" --qos=debug
submit_args frontier.sbatch FDMINI_QOS=debug FDMINI_TIME=02:30:00
expect_refusal "frontier.sbatch debug QOS for 2.5 h: refused (2 h)" "the debug QOS allows 2 h"
submit_args frontier.sbatch FDMINI_TIME=03:00:00
expect_refusal "frontier.sbatch batch, 1 node, 3 h: refused (2 h for 1-91 nodes), extended named" \
  "batch allows 2 h for 1-91 nodes (OLCF); shorten it, or use FDMINI_PARTITION=extended"
submit_args frontier.sbatch FDMINI_NODES=100 FDMINI_TIME=06:00:00
expect_arg "frontier.sbatch batch, 100 nodes, 6 h: accepted" --time=06:00:00
submit_args frontier.sbatch FDMINI_PARTITION=extended FDMINI_TIME=1-00:00:00 FDMINI_NODES=64
expect_arg "frontier.sbatch extended, 64 nodes, 24 h: accepted" --partition=extended
submit_args frontier.sbatch FDMINI_PARTITION=extended FDMINI_NODES=65
expect_refusal "frontier.sbatch extended, 65 nodes: refused (64)" "the extended partition takes at most 64 nodes"
submit_args frontier.sbatch FDMINI_PARTITION=extended FDMINI_TIME=24:30:00
expect_refusal "frontier.sbatch extended, 24.5 h: refused (24 h)" "the extended partition allows 24 h"
submit_args frontier.sbatch FDMINI_TIME=soon
expect_refusal "frontier.sbatch FDMINI_TIME=soon: refused" "FDMINI_TIME='soon' is not a Slurm time"
# Slurm's forms with days: D-HH is days and hours, D-HH:MM days, hours and minutes
submit_args frontier.sbatch FDMINI_TIME=0-03
expect_refusal "frontier.sbatch batch, 1 node, FDMINI_TIME=0-03 (3 h): refused (2 h)" "batch allows 2 h for 1-91 nodes"
submit_args frontier.sbatch FDMINI_QOS=debug FDMINI_TIME=0-02:30
expect_refusal "frontier.sbatch debug QOS, FDMINI_TIME=0-02:30 (2.5 h): refused (2 h)" "the debug QOS allows 2 h"

# ---- checkpoints: the warning asked of Slurm, passed on in the job, the continuation ----
submit_args lumi-g.sbatch FDMINI_CHECKPOINT_DIR=ck
expect_arg "lumi-g.sbatch FDMINI_CHECKPOINT_DIR: Slurm warns the batch shell 300 s before the limit" --signal=B:USR1@300
submit_args frontier.sbatch FDMINI_CHECKPOINT_DIR=ck FDMINI_SIGNAL_TIME=120
expect_arg "frontier.sbatch FDMINI_SIGNAL_TIME=120: --signal=B:USR1@120" --signal=B:USR1@120
submit_args lumi-g.sbatch
expect_no_arg "lumi-g.sbatch without checkpoints: no warning signal" --signal=B:USR1@300
submit_args frontier.sbatch FDMINI_CHECKPOINT_DIR=ck FDMINI_RESUBMIT=x
expect_refusal "frontier.sbatch FDMINI_RESUBMIT=x: refused" "FDMINI_RESUBMIT='x' is not a non-negative integer"
submit_args lumi-g.sbatch FDMINI_CHECKPOINT_DIR=ck FDMINI_TIME=00:05:00
expect_refusal "lumi-g.sbatch a warning 300 s before a 5-minute limit: refused" \
  "FDMINI_SIGNAL_TIME=300 s is not shorter than FDMINI_TIME=00:05:00"
for script in lumi-g.sbatch frontier.sbatch; do
  submit_args $script FDMINI_CHECKPOINT_DIR=ck FDMINI_TIME=0-01
  expect_arg "$script a warning 300 s before FDMINI_TIME=0-01 (1 h): accepted" --signal=B:USR1@300
done
# In a job (SLURM_JOB_ID set) with a stub srun that records its arguments and exits 5 on SIGUSR1
# (or at once with STUB_EXIT), and a stub sbatch that records its arguments and prints a job id.
fake=$work/fake
mkdir -p "$fake"
cat >"$fake/srun" <<'STUB'
#!/bin/bash
echo "$*" >"$STUB_DIR/srun.args"
[[ -n ${STUB_EXIT:-} ]] && exit "$STUB_EXIT"
trap 'echo "got USR1" >>"$STUB_DIR/srun.args"; exit 5' USR1
touch "$STUB_DIR/srun.started"
for _ in $(seq 600); do sleep 0.05; done
exit 9
STUB
cat >"$fake/sbatch" <<'STUB'
#!/bin/bash
{ echo "FDMINI_RESUBMIT=$FDMINI_RESUBMIT SLURM_JOB_ID=${SLURM_JOB_ID:-unset}"; for a in "$@"; do echo "ARG $a"; done; } >"$STUB_DIR/sbatch.args"
echo 4242
STUB
chmod +x "$fake/srun" "$fake/sbatch"
# in_job SCRIPT [ENV=VALUE...]: SCRIPT as a job's batch shell, warned (SIGUSR1) once its step runs
# unless STUB_EXIT is given; sets rc and out
in_job() {
  local script=$1
  shift
  rm -f "$fake"/*.args "$fake/srun.started"
  env PATH="$fake:$PATH" STUB_DIR="$fake" SLURM_JOB_ID=777 SLURM_SUBMIT_DIR="$work" SLURM_JOB_ACCOUNT=acct \
    SLURM_JOB_PARTITION=batch FDMINI_LAUNCH_DIR="$launch" FDMINI_BINARY="$BIN" FDMINI_SELECT_GPU=0 FDMINI_CPU_BIND=none \
    FDMINI_CHECKPOINT_DIR="$work/ck" FDMINI_CHECKPOINT_EVERY=10 FDMINI_RESUBMIT=2 \
    FDMINI_SUBMIT_ARGS="--output=$work/o-%j.out" "$@" "$launch/$script" >"$fake/out" 2>&1 &
  local job=$! _
  if [[ " $* " != *" STUB_EXIT="* ]]; then
    # the warning once the step runs (the stub's trap is set by then); a signal sent before,
    # as a 10-s wait once did on a loaded CI machine, killed the stub (exit 138)
    for _ in $(seq 2400); do [[ -e $fake/srun.started ]] && break; sleep 0.05; done
    if [[ -e $fake/srun.started ]]; then
      kill -USR1 "$job"
    else
      kill "$job"
      echo "in_job: the job step (the stub srun) did not start within 120 s" >>"$fake/out"
    fi
  fi
  rc=0
  wait "$job" || rc=$?
  out=$(cat "$fake/out")
}
for script in lumi-g.sbatch frontier.sbatch; do
  name="$script in a job, warned: SIGUSR1 passed on to srun, fdmini's exit 5, the continuation submitted"
  in_job "$script"
  if ((rc == 0)) && grep -q "^$script: STOPPED on the time-limit warning after a checkpoint in $work/ck; job 4242 continues the run" <<<"$out" &&
    grep -q -- "--checkpoint-dir $work/ck --restart auto --checkpoint-every 10" "$fake/srun.args" &&
    grep -qx "got USR1" "$fake/srun.args" && grep -qx "FDMINI_RESUBMIT=1 SLURM_JOB_ID=unset" "$fake/sbatch.args" &&
    grep -qx "ARG --dependency=afterany:777" "$fake/sbatch.args" && grep -qx "ARG --output=$work/o-%j.out" "$fake/sbatch.args" &&
    grep -qx "ARG --signal=B:USR1@300" "$fake/sbatch.args" && grep -qx "ARG --account=acct" "$fake/sbatch.args"; then
    pass "$name"
  else
    fail "$name" "exit $rc" <(echo "$out"; cat "$fake"/*.args 2>/dev/null)
  fi
  name="$script in a job, fdmini stopped without the warning (exit 5): no continuation, exit 5"
  in_job "$script" STUB_EXIT=5
  if ((rc == 5)) && grep -q "^$script: STOPPED: fdmini wrote a checkpoint in $work/ck and stopped (exit 5)" <<<"$out" &&
    [[ ! -e $fake/sbatch.args ]]; then
    pass "$name"
  else
    fail "$name" "exit $rc" <(echo "$out")
  fi
done
in_job lumi-g.sbatch FDMINI_RESUBMIT=0
if ((rc == 5)) && [[ ! -e $fake/sbatch.args ]]; then
  pass "lumi-g.sbatch in a job, warned, FDMINI_RESUBMIT=0: exit 5, no continuation"
else
  fail "lumi-g.sbatch FDMINI_RESUBMIT=0" "exit $rc" <(echo "$out")
fi

# does the binary have --bind-report yet? (the table is checked only then)
bind_report=0
if has "$("$BIN" --help 2>&1)" '--bind-report'; then bind_report=1; fi
# check_job NAME OUT RC SCRIPT_NAME: exit 0, verification PASS, the script's PASS, the table
check_job() {
  local name=$1 out=$2 rc=$3 script=$4
  if ((rc == 124 || rc == 137)); then
    fail "$name" "timed out after ${TMO}s" "$out"
  elif ((rc != 0)); then
    fail "$name" "exit status $rc, expected 0" "$out"
  elif ! grep -q 'verification: PASS' "$out"; then
    fail "$name" "no 'verification: PASS' from fdmini" "$out"
  elif ! grep -q "^$script: PASS" "$out"; then
    fail "$name" "no '$script: PASS' line" "$out"
  elif ((bind_report)) && ! grep -q '^binding: 8 ranks on 1 host' "$out"; then
    fail "$name" "no binding table ('binding: 8 ranks on 1 host')" "$out"
  else
    pass "$name$( ((bind_report)) || echo ' (binding table not checked: no --bind-report yet)')"
  fi
}

# ---- local.sh under mpirun: 2 ranks, host build ----
rc=0
FDMINI_BINARY=$BIN FDMINI_NP=2 OMP_NUM_THREADS=1 timeout -k 10 "$TMO" "$launch/local.sh" \
  --global 16,16,16 --iters 3 >"$work/local.out" 2>&1 || rc=$?
if ((rc == 0)) && grep -q 'verification: PASS' "$work/local.out"; then
  pass "local.sh: 2 ranks under mpirun"
else
  fail "local.sh: 2 ranks under mpirun" "exit $rc" "$work/local.out"
fi

# ---- local.sh with GPUs: each rank bound to the CPUs of the GPU fdmini gives it ----
# Emulated node: a stub nvidia-smi lists STUB_GPUS (PCI bus ids, in bus order), a stub hwloc-bind
# records what the rank is bound to (bind.LOCAL_RANK) and runs the command; fdmini is the host
# build, which sees one device and runs whatever the map.
gstub=$work/gpustub
mkdir -p "$gstub"
cat >"$gstub/nvidia-smi" <<'STUB'
#!/bin/bash
tr ' ' '\n' <<<"$STUB_GPUS"
STUB
cat >"$gstub/hwloc-bind" <<'STUB'
#!/bin/bash
echo "$1 $2" >"$STUB_DIR/bind.$OMPI_COMM_WORLD_LOCAL_RANK"
while (($# > 0)) && [[ $1 != -- ]]; do shift; done
shift
exec "$@"
STUB
chmod +x "$gstub/nvidia-smi" "$gstub/hwloc-bind"
four='00000000:01:00.0 00000000:41:00.0 00000000:81:00.0 00000000:C1:00.0'
# local_gpus NAME GPUS NP WANT ARGS...: local.sh on NP ranks with the GPUs GPUS and fdmini's
# ARGS; rank r must be bound to pci=BUS, BUS word r of WANT, and fdmini must PASS
local_gpus() {
  local name=$1 gpus=$2 np=$3 want=$4 r got=() lrc=0
  shift 4
  rm -f "$gstub"/bind.*
  env -u CUDA_VISIBLE_DEVICES -u ROCR_VISIBLE_DEVICES -u HIP_VISIBLE_DEVICES -u FDMINI_BIND PATH="$gstub:$PATH" \
    STUB_DIR="$gstub" STUB_GPUS="$gpus" FDMINI_BINARY="$BIN" FDMINI_NP="$np" OMP_NUM_THREADS=1 \
    timeout -k 10 "$TMO" "$launch/local.sh" --global 16,16,16 --iters 2 "$@" >"$work/local-gpu.out" 2>&1 || lrc=$?
  for ((r = 0; r < np; r++)); do got+=("$(cat "$gstub/bind.$r" 2>/dev/null || echo none)"); done
  local expect=()
  for r in $want; do expect+=("--cpubind pci=$r"); done
  if ((lrc == 0)) && grep -q 'verification: PASS' "$work/local-gpu.out" && [[ ${got[*]} == "${expect[*]}" ]]; then
    pass "$name"
  else
    fail "$name" "exit $lrc, bound: ${got[*]}" "$work/local-gpu.out"
  fi
}
local_gpus "local.sh, 4 GPUs: rank r bound to GPU r's CPUs" "$four" 4 \
  "0000:01:00.0 0000:41:00.0 0000:81:00.0 0000:c1:00.0"
local_gpus "local.sh, 4 GPUs, --gpu-map 2,3,0,1: rank r bound to GPU map[r]'s CPUs" "$four" 4 \
  "0000:81:00.0 0000:c1:00.0 0000:01:00.0 0000:41:00.0" --gpu-map 2,3,0,1
if grep -q "binding: gpu following --gpu-map 2,3,0,1$" "$work/local-gpu.out"; then
  pass "local.sh, --gpu-map 2,3,0,1: the binding line says it follows the map"
else
  fail "local.sh, --gpu-map: binding line" "" "$work/local-gpu.out"
fi
local_gpus "local.sh, 4 GPUs, 4 ranks, --gpu-map=3,1 after another: GPU map[r mod 2]'s CPUs" "$four" 4 \
  "0000:c1:00.0 0000:41:00.0 0000:c1:00.0 0000:41:00.0" --gpu-map 0,1,2,3 --gpu-map=3,1
local_gpus "local.sh, 1 GPU, --gpu-map 1,0: both ranks on the one GPU's CPUs (fdmini's choice)" \
  00000000:41:00.0 2 "0000:41:00.0 0000:41:00.0" --gpu-map 1,0
if grep -q "binding: gpu$" "$work/local-gpu.out"; then
  pass "local.sh, 1 GPU, --gpu-map: the binding line names no map"
else
  fail "local.sh, 1 GPU, --gpu-map: binding line" "" "$work/local-gpu.out"
fi

# ---- the batch scripts under Slurm ----
skip_or_fail() {
  if [[ ${LAUNCH_TEST_REQUIRE:-0} == 1 ]]; then
    fail "slurm" "$1 (LAUNCH_TEST_REQUIRE=1)"
    summary "launch test" || exit 1
  fi
  echo "launch test: SKIP the Slurm cases: $1"
  echo "launch test: start a Slurm with 'sudo launch/slurm-local.sh start'"
  summary "launch test" || exit 1
  exit 77
}
for t in sbatch salloc scontrol scancel timeout; do
  command -v "$t" >/dev/null 2>&1 || skip_or_fail "'$t' not found (install slurm-wlm)"
done
if ! ping_out=$(scontrol ping 2>&1); then
  skip_or_fail "no slurmctld answering ('scontrol ping' failed: ${ping_out//$'\n'/ })"
fi
echo "launch test: $ping_out"

# What CI's one-node Slurm without GPUs needs: no GPU request, no CPU map, small grid.
export FDMINI_ACCOUNT=ci FDMINI_BINARY=$BIN FDMINI_PARTITION='' FDMINI_GPU_FLAGS='' FDMINI_CPU_BIND=none \
  FDMINI_LOCAL=16,16,16 FDMINI_ARGS='--iters 5' FDMINI_TIME=00:05:00 FDMINI_BIND_REPORT=$bind_report
export OMP_NUM_THREADS=1

# submit NAME SCRIPT [ENV=VALUE...]: the script submits itself with sbatch --wait; on timeout the
# job is cancelled.
submit() {
  local name=$1 script=$2 out=$work/$2.out
  shift 2
  rc=0
  env "$@" timeout -k 10 "$TMO" "$launch/$script" --wait --parsable --output="$out" \
    >"$work/$script.sbatch" 2>&1 || rc=$?
  if ((rc == 124 || rc == 137)); then
    local id
    id=$(grep -Eo '^[0-9]+' "$work/$script.sbatch" | head -n 1 || true)
    [[ -n $id ]] && scancel "$id" 2>/dev/null
  fi
  cat "$work/$script.sbatch" >>"$out"
  check_job "$name" "$out" "$rc" "$script"
}

submit "lumi-g.sbatch submitted with sbatch --wait (8 ranks, no GPU wrapper)" lumi-g.sbatch \
  FDMINI_SELECT_GPU=0 CRAY_LD_LIBRARY_PATH=/opt/cray/pe/mock/lib64
out=$work/lumi-g.sbatch.out
if grep -q '^lumi-g.sbatch: MPICH_GPU_SUPPORT_ENABLED=1 MPICH_OFI_NIC_POLICY=GPU$' "$out" &&
  grep -q '^lumi-g.sbatch: LD_LIBRARY_PATH starts with CRAY_LD_LIBRARY_PATH (/opt/cray/pe/mock/lib64)' "$out"; then
  pass "lumi-g.sbatch in the job: MPICH_OFI_NIC_POLICY=GPU, CRAY_LD_LIBRARY_PATH first in LD_LIBRARY_PATH"
else
  fail "lumi-g.sbatch job environment lines" "" "$out"
fi
submit "frontier.sbatch submitted with sbatch --wait (8 ranks, -c 1, --gpu-map, binary sbcast to /tmp)" frontier.sbatch \
  FDMINI_CPUS_PER_TASK=1 FDMINI_SBCAST=1
out=$work/frontier.sbatch.out
if grep -q '^frontier.sbatch: sbcast .* and its libraries to /tmp/fdmini\.[0-9]* on 1 node' "$out" &&
  grep -q "frontier.sbatch: srun .* /tmp/fdmini\.[0-9]* " "$out" && ! compgen -G '/tmp/fdmini.[0-9]*' >/dev/null; then
  pass "frontier.sbatch FDMINI_SBCAST=1: ran the node-local copy, removed it afterwards"
else
  fail "frontier.sbatch FDMINI_SBCAST=1" "$(compgen -G '/tmp/fdmini.[0-9]*' | head -n 2 | tr '\n' ' ')" "$out"
fi

# inside an allocation: the script runs its srun step at once, here through select_gpu.sh (the
# opt-in narrowing, FDMINI_SELECT_GPU=1; by default every rank sees the node's GCDs)
rc=0
FDMINI_SELECT_GPU=1 timeout -k 10 "$TMO" salloc --immediate=60 --ntasks=8 --time=00:05:00 \
  bash "$launch/lumi-g.sbatch" >"$work/salloc.out" 2>&1 || rc=$?
check_job "lumi-g.sbatch FDMINI_SELECT_GPU=1 inside salloc --ntasks=8 (ranks through select_gpu.sh)" \
  "$work/salloc.out" "$rc" lumi-g.sbatch

# a short FDMINI_GPU_MAP under srun: every task exits 2 at once, none waits in MPI_Init
name="srun -n 4 select_gpu.sh with a 2-entry FDMINI_GPU_MAP: exit 2, no hang"
rc=0
FDMINI_GPU_MAP=0,1 timeout -k 10 "$TMO" srun --immediate=60 -n 4 "$launch/select_gpu.sh" "$BIN" --global 16,16,16 --iters 2 \
  >"$work/shortmap-srun.out" 2>&1 || rc=$?
if ((rc == 2)) && (($(grep -c "^select_gpu.sh: FDMINI_GPU_MAP='0,1' has 2 entries" "$work/shortmap-srun.out") == 1)); then
  pass "$name"
else
  fail "$name" "exit $rc" "$work/shortmap-srun.out"
fi

# checkpoints under Slurm: the job warned as --signal=B:USR1 would (scancel --signal=USR1 --batch:
# the batch shell only), passes it on, stops after a checkpoint and submits its continuation,
# which finishes the run: the same field as the uninterrupted run
name="lumi-g.sbatch FDMINI_CHECKPOINT_DIR FDMINI_RESUBMIT=1, warned: the continuation finishes, bitwise equal"
ck=$work/slurm-ck
# (the warning goes out after the first checkpoint, step 100: the 3,900 steps after it leave
# scancel time to act inside the run, as in tests/slurm/srun_test.sh)
grid="--op heat --global 24,24,24 --warmup 2 --iters 3998"
read -ra grid_args <<<"$grid"
rc=0
timeout -k 10 "$TMO" srun --immediate=60 -n 1 "$BIN" --progress 0 "${grid_args[@]}" --dump "$work/ck-ref.raw" \
  >"$work/ck-ref.out" 2>&1 || rc=$?
FDMINI_SELECT_GPU=0 FDMINI_LOCAL='' FDMINI_ARGS="--progress 0 $grid --dump $work/ck.raw" FDMINI_CHECKPOINT_DIR=$ck \
  FDMINI_CHECKPOINT_EVERY=100 FDMINI_RESUBMIT=1 FDMINI_SIGNAL_TIME=30 timeout -k 10 "$TMO" "$launch/lumi-g.sbatch" --wait --parsable \
  --output="$work/ck-%j.out" >"$work/ck.sbatch" 2>&1 &
first=$!
for _ in $(seq 1200); do compgen -G "$ck/ckpt_*.fdmini" >/dev/null && break; sleep 0.05; done
id=$(grep -Eo '^[0-9]+' "$work/ck.sbatch" | head -n 1 || true)
[[ -n $id ]] && scancel --signal=USR1 --batch "$id"
rc1=0
wait "$first" || rc1=$?
next=$(sed -n 's/.*; job \([0-9]*\) continues the run$/\1/p' "$work/ck-$id.out" 2>/dev/null || true)
for _ in $(seq "$TMO"); do # the continuation, until it has left the queue
  [[ -n $next && -z $(squeue -h -j "$next" 2>/dev/null) ]] && break
  sleep 1
done
if ((rc != 0)) || [[ -z $id ]]; then
  fail "$name" "reference run exit $rc, or no job id" "$work/ck.sbatch"
elif ((rc1 != 0)) || [[ -z $next ]]; then
  fail "$name" "the warned job: exit $rc1, no continuation" "$work/ck-$id.out"
elif ! grep -q "^lumi-g.sbatch: PASS" "$work/ck-$next.out" || ! grep -q "restart     from $ck/ckpt_" "$work/ck-$next.out" ||
  ! cmp -s "$work/ck.raw" "$work/ck-ref.raw"; then
  fail "$name" "the continuation (job $next)" "$work/ck-$next.out"
else
  pass "$name (jobs $id, $next)"
fi

# a failing run must fail the job: exit status non-zero and the script's FAIL line
name="lumi-g.sbatch with a bad fdmini option fails the job"
out=$work/bad.out
rc=0
FDMINI_SELECT_GPU=0 FDMINI_ARGS='--procs 3,1,1' timeout -k 10 "$TMO" "$launch/lumi-g.sbatch" \
  --wait --output="$out" >/dev/null 2>&1 || rc=$?
if ((rc == 0 || rc == 124 || rc == 137)); then
  fail "$name" "exit status $rc, expected a failure" "$out"
elif ! grep -q '^lumi-g.sbatch: FAIL (srun exit status' "$out"; then
  fail "$name" "no 'lumi-g.sbatch: FAIL' line" "$out"
else
  pass "$name (exit $rc)"
fi

summary "launch test"

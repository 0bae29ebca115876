#!/usr/bin/env bash
# test_study_follows_launch.sh - the jobs bench/scaling/study.py writes for LUMI-G and Frontier
# start fdmini exactly as launch/lumi-g.sbatch and launch/frontier.sbatch do (issue 47, item 6):
# both take their conventions from launch/site-conventions.sh, and this test fails where they
# differ. Each machine's sbatch script and the study's job script for the same node count run
# as a job's batch shell (SLURM_JOB_ID set) with a stub srun and sbcast that record what they
# get, and must give:
#   - the same binding options of the fdmini step (CPU map, CPUs per task, GPU flags; the task
#     counts aside), the same GPU wrapper before the binary (none by default) and the same
#     fdmini --gpu-map (Frontier's 4,5,2,3,6,7,0,1);
#   - a GPU layout that leaves every GCD of a node visible to every rank (no select_gpu.sh, no
#     ROCR_VISIBLE_DEVICES, no per-task GPU binding), at 1, threshold-1 and threshold nodes;
#   - the same environment in the step (MPICH_GPU_SUPPORT_ENABLED, MPICH_OFI_NIC_POLICY,
#     OMP_NUM_THREADS, LD_LIBRARY_PATH with CRAY_LD_LIBRARY_PATH first);
#   - the same sbcast step (the binary and its libraries to /tmp/fdmini.JOBID, the step running
#     that copy, the copies removed after), from FDMINI_SITE_SBCAST_NODES nodes up and not below.
# No Slurm is needed.
#
# Usage: tests/bench/test_study_follows_launch.sh FDMINI_BINARY
# Exit: 0 all passed, 1 otherwise. Last line: "study/launch test: N passed, M failed".
set -uo pipefail
bin=${1:?usage: test_study_follows_launch.sh FDMINI_BINARY}
bin=$(readlink -f "$bin")
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
launch=$root/launch
# shellcheck disable=SC1091 # tests/lib/checks.sh is checked on its own
. "$root/tests/lib/checks.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# stub srun: one line per call, the step's environment, a tab, its arguments; stub sbcast: its
# arguments
stub=$work/stub
mkdir -p "$stub"
cat >"$stub/srun" <<'STUB'
#!/bin/bash
printf 'MPICH_GPU_SUPPORT_ENABLED=%s MPICH_OFI_NIC_POLICY=%s OMP_NUM_THREADS=%s ROCR_VISIBLE_DEVICES=%s LD_LIBRARY_PATH=%s\t%s\n' \
  "${MPICH_GPU_SUPPORT_ENABLED-unset}" "${MPICH_OFI_NIC_POLICY-unset}" "${OMP_NUM_THREADS-unset}" \
  "${ROCR_VISIBLE_DEVICES-unset}" "${LD_LIBRARY_PATH-unset}" "$*" >>"$STUB_DIR/srun.log"
STUB
cat >"$stub/sbcast" <<'STUB'
#!/bin/bash
echo "sbcast $*" >>"$STUB_DIR/sbcast.log"
STUB
chmod +x "$stub/srun" "$stub/sbcast"

# as_job DIR NODES SCRIPT: SCRIPT as the batch shell of job 4242 on NODES nodes; records in DIR
as_job() {
  local dir=$1 nodes=$2 script=$3
  mkdir -p "$dir"
  env -u FDMINI_SBCAST -u MPICH_GPU_SUPPORT_ENABLED -u MPICH_OFI_NIC_POLICY -u OMP_NUM_THREADS \
    -u FDMINI_CPU_BIND -u FDMINI_GPU_FLAGS -u FDMINI_CPUS_PER_TASK -u FDMINI_SELECT_GPU -u FDMINI_ARGS \
    -u FDMINI_CHECKPOINT_DIR -u FDMINI_GPU_MAP -u ROCR_VISIBLE_DEVICES PATH="$stub:$PATH" STUB_DIR="$dir" SLURM_JOB_ID=4242 \
    SLURM_JOB_NUM_NODES="$nodes" SLURM_SUBMIT_DIR="$work" FDMINI_LAUNCH_DIR="$launch" \
    FDMINI_BINARY="$bin" CRAY_LD_LIBRARY_PATH=/opt/cray/pe/mock/lib64 LD_LIBRARY_PATH=/base \
    bash "$script" >"$dir/out" 2>&1
}

# step DIR: the fdmini step of the records in DIR, normalized: its environment, then its srun
# options without the task counts, the wrapper by its name, the binary and fdmini's --gpu-map
# (its other options left out); the step with the most tasks where there are several
step() {
  awk -F'\t' -v bin="$bin" '
    $2 ~ / rm -rf / { next }
    { n = split($2, a, " "); out = ""; tasks = 0; done = 0
      for (i = 1; i <= n && !done; i++) {
        if (a[i] ~ /^--ntasks=/) { tasks = substr(a[i], 10) + 0; continue }
        if (a[i] ~ /^--(nodes|ntasks-per-node)=/) continue
        if (a[i] == bin || a[i] ~ /^\/tmp\/fdmini\.[0-9]+$/) done = 1
        else if (a[i] ~ /\//) { sub(/.*\//, "", a[i]) }
        out = out " " a[i]
      }
      for (; i < n; i++) if (a[i] == "--gpu-map") out = out " --gpu-map " a[i + 1]
      if (tasks >= best) { best = tasks; line = $1 " |" out } }
    END { print line }' "$1/srun.log"
}

threshold=$(bash -c '. "$1" && echo "$FDMINI_SITE_SBCAST_NODES"' _ "$launch/site-conventions.sh")
if [[ ! $threshold =~ ^[1-9][0-9]*$ ]]; then
  fail "FDMINI_SITE_SBCAST_NODES of launch/site-conventions.sh" "'$threshold'"
  summary "study/launch test"
  exit 1
fi
nodes_list=(1 "$threshold")
((threshold > 1)) && nodes_list=(1 $((threshold - 1)) "$threshold")

for machine in lumi-g frontier; do
  for nodes in "${nodes_list[@]}"; do
    name="$machine, $nodes node(s)"
    d=$work/$machine-$nodes
    out=$d/study
    if ! python3 "$root/bench/scaling/study.py" run --machine "$machine" --study weak --size 16,16,16 \
      --nodes "$nodes" --repeats 1 --binary "$bin" --account p --dry-run --out "$out" >"$d.study" 2>&1; then
      fail "$name: study.py --dry-run" "" "$d.study"
      continue
    fi
    as_job "$d/sbatch" "$nodes" "$launch/$machine.sbatch"
    rc_sbatch=$?
    as_job "$d/study-job" "$nodes" "$(printf '%s/job-weak-N%04d.sbatch' "$out" "$nodes")"
    rc_study=$?
    if ((rc_sbatch != 0 || rc_study != 0)); then
      fail "$name: the jobs ran (exit $rc_sbatch, $rc_study)" "" <(cat "$d/sbatch/out" "$d/study-job/out")
      continue
    fi
    a=$(step "$d/sbatch")
    b=$(step "$d/study-job")
    if [[ -n $a && $a == "$b" ]]; then
      pass "$name: the study's fdmini step has the sbatch script's binding, wrapper and environment ($a)"
    else
      fail "$name: the fdmini steps differ" "" <(printf 'sbatch: %s\nstudy:  %s\n' "$a" "$b")
    fi
    sb_a=$(cat "$d/sbatch/sbcast.log" 2>/dev/null)
    sb_b=$(cat "$d/study-job/sbcast.log" 2>/dev/null)
    rm_a=$(grep -c ' rm -rf /tmp/fdmini\.4242 /tmp/fdmini\.4242_libs$' "$d/sbatch/srun.log")
    rm_b=$(grep -c ' rm -rf /tmp/fdmini\.4242 /tmp/fdmini\.4242_libs$' "$d/study-job/srun.log")
    if ((nodes >= threshold)); then
      want="sbcast --send-libs --force --preserve $bin /tmp/fdmini.4242"
      if [[ $sb_a == "$want" && $sb_b == "$want" && $rm_a == 1 && $rm_b == 1 ]] &&
        has "$a" " /tmp/fdmini.4242" && has "$a" "LD_LIBRARY_PATH=/tmp/fdmini.4242_libs:/opt/cray/pe/mock/lib64:/base"; then
        pass "$name (from $threshold up): both sbcast the binary to /tmp, run the copy, remove it"
      else
        fail "$name: sbcast from $threshold nodes" "sbatch '$sb_a' (rm $rm_a), study '$sb_b' (rm $rm_b)"
      fi
    else
      if [[ -z $sb_a && -z $sb_b && $rm_a == 0 && $rm_b == 0 ]] && has "$a" " $bin" &&
        has "$a" "LD_LIBRARY_PATH=/opt/cray/pe/mock/lib64:/base"; then
        pass "$name (below $threshold): neither sbcasts; both run the binary where it is"
      else
        fail "$name: no sbcast below $threshold nodes" "sbatch '$sb_a', study '$sb_b'"
      fi
    fi
  done
done
# what is compared is what the conventions say: LUMI's map, Frontier's -c 7, GPU flags and map
a=$(step "$work/lumi-g-1/sbatch")
f=$(step "$work/frontier-1/sbatch")
if has "$a" "MPICH_GPU_SUPPORT_ENABLED=1 MPICH_OFI_NIC_POLICY=GPU OMP_NUM_THREADS=1 " &&
  has "$a" "| --cpu-bind=map_cpu:49,57,17,25,1,9,33,41 $bin" &&
  has "$f" "MPICH_GPU_SUPPORT_ENABLED=1 MPICH_OFI_NIC_POLICY=unset OMP_NUM_THREADS=7 " &&
  has "$f" "| --cpus-per-task=7 --gpus-per-node=8 $bin --gpu-map 4,5,2,3,6,7,0,1"; then
  pass "the steps carry the sites' conventions (LUMI-G's map and NIC policy; Frontier's -c 7, --gpus-per-node=8 and --gpu-map)"
else
  fail "the sites' conventions in the steps" "" <(printf 'lumi-g:   %s\nfrontier: %s\n' "$a" "$f")
fi
# the layout leaves every GCD of a node visible to every rank, in every job of both producers at
# every node count: no ROCR_VISIBLE_DEVICES narrowing (no select_gpu.sh, none in the step's
# environment) and no Slurm per-task GPU binding (a cgroup per task)
narrowed=''
for d in "$work"/*-*/sbatch "$work"/*-*/study-job; do
  [[ -s $d/srun.log ]] || { narrowed+=" ${d#"$work"/}(no step)"; continue; }
  s=$(step "$d")
  if has "$s" "select_gpu.sh" || has "$s" "--gpus-per-task" || has "$s" "--gpu-bind" ||
    has "$s" "--ntasks-per-gpu" || ! has "$s" "ROCR_VISIBLE_DEVICES=unset "; then
    narrowed+=" ${d#"$work"/}"
  fi
done
if [[ -z $narrowed ]]; then
  pass "every job at ${nodes_list[*]} node(s) leaves all GCDs of a node visible to each rank (no select_gpu.sh, ROCR_VISIBLE_DEVICES or per-task GPU binding)"
else
  fail "jobs that narrow a rank to its own GCD:$narrowed"
fi
# the opt-in narrowing still works: FDMINI_SELECT_GPU=1 puts select_gpu.sh before the binary
d=$work/lumi-g-select
mkdir -p "$d"
env -u FDMINI_SBCAST -u FDMINI_GPU_MAP PATH="$stub:$PATH" STUB_DIR="$d" SLURM_JOB_ID=4242 \
  SLURM_JOB_NUM_NODES=1 SLURM_SUBMIT_DIR="$work" FDMINI_LAUNCH_DIR="$launch" FDMINI_BINARY="$bin" \
  FDMINI_SELECT_GPU=1 bash "$launch/lumi-g.sbatch" >"$d/out" 2>&1
if has "$(step "$d")" "| --cpu-bind=map_cpu:49,57,17,25,1,9,33,41 select_gpu.sh $bin"; then
  pass "lumi-g.sbatch with FDMINI_SELECT_GPU=1: ranks through select_gpu.sh (each sees its own GCD)"
else
  fail "lumi-g.sbatch with FDMINI_SELECT_GPU=1" "$(step "$d")" "$d/out"
fi
summary "study/launch test"

# shellcheck shell=bash
# shellcheck disable=SC2034 # the values are read by the scripts that source this file
# site-conventions.sh - how fdmini is started on LUMI-G and Frontier, in one place: ranks per
# node, the CPU binding, the GPU binding (wrapper or Slurm flags), the default partition, the
# job's environment and the sbcast of the binary to node-local storage from a node count up.
#
# Read by:
#   launch/lumi-g.sbatch, launch/frontier.sbatch   source it (beside them, FDMINI_LAUNCH_DIR, or
#                                                 the submit directory's launch/)
#   bench/scaling/study.py                         reads the FDMINI_SITE_* values by sourcing it
#                                                 with bash, copies it into the study's folder,
#                                                 and its job scripts source that copy and call
#                                                 the same functions as the sbatch scripts
# so a convention changed here changes every job; tests/bench/test_study_follows_launch.sh runs
# both kinds of job with a stub srun and sbcast and fails where they differ.
# Only FDMINI_SITE_* assignments (plain words or single-quoted) and functions: sourcing it
# changes nothing else.
#
# The GPU layout (both machines): every rank sees all GCDs of its node and fdmini takes its own
# by node-local rank (bind_pick_device, src/run/bind.c). No ROCR_VISIBLE_DEVICES per rank and no
# Slurm per-task GPU binding (--gpus-per-task, --gpu-bind: a device cgroup per task), so a rank
# can ask the runtime about a peer GCD (hipDeviceCanAccessPeer) and map its memory, which
# fdmini's IPC and device-ordered halo paths need; Cray MPICH's GPU IPC works too. Why, with
# sources: docs/multi-gpu.md, "The GPU layout on LUMI-G and Frontier".
#
# LUMI-G's CPU map: each NUMA node of the Trento CPU is wired to one MI250X, but GCD and NUMA
# numbers do not match (GCD 0,1 -> NUMA 3; 2,3 -> 1; 4,5 -> 0; 6,7 -> 2). map_cpu:49,57,17,25,1,
# 9,33,41 puts local rank i on the second core of the CCD closest to GCD i (the first core of
# each CCD is kept free for the OS by LUMI's low-noise mode), and rank i takes GCD i: LUMI's
# recipe for an application that selects its GPU by its node-local rank ("Application that can
# select GPU automatically"). Source: LUMI user guide,
# "Distribution and binding options", GPU Binding:
#   https://docs.lumi-supercomputer.eu/runjobs/scheduled-jobs/distribution-binding/
# select_gpu.sh (ROCR_VISIBLE_DEVICES=local id, the former default) stays for FDMINI_SELECT_GPU=1.
# Frontier: -c 7 gives rank i CCD i (less its reserved core); the GCD closest to CCD i is
# 4,5,2,3,6,7,0,1[i] (OLCF Frontier user guide, the L3/GCD table and --gpu-bind=closest's
# example: https://docs.olcf.ornl.gov/systems/frontier_user_guide.html), which fdmini takes with
# --gpu-map, all 8 GCDs visible (--gpus-per-node=8). Both: GPU-aware Cray MPICH
# (MPICH_GPU_SUPPORT_ENABLED=1); LUMI also MPICH_OFI_NIC_POLICY=GPU (the NIC next to the GCD).

# ranks (GCDs) per node: 4 MI250X of 2 GCDs each, on both machines
FDMINI_SITE_GCDS_PER_NODE=8
# from this many nodes up, the binary and its libraries go to each node's /tmp by sbcast before
# the step (OLCF's advice at scale: no thousand ranks loading it from Lustre at once)
FDMINI_SITE_SBCAST_NODES=16

# LUMI-G
FDMINI_SITE_LUMI_G_PARTITION=standard-g # whole nodes; LUMI binds CPUs only on whole nodes
FDMINI_SITE_LUMI_G_SBATCH_GPUS=--gpus-per-node=8
FDMINI_SITE_LUMI_G_CPU_BIND=map_cpu:49,57,17,25,1,9,33,41
FDMINI_SITE_LUMI_G_GPU_WRAPPER=select_gpu.sh # in launch/: ROCR_VISIBLE_DEVICES=$SLURM_LOCALID
FDMINI_SITE_LUMI_G_SELECT_GPU=0              # 0: no wrapper, every rank sees the node's GCDs
FDMINI_SITE_LUMI_G_GPU_MAP=''                # fdmini --gpu-map ('': rank i takes GCD i)
FDMINI_SITE_LUMI_G_CPUS_PER_RANK=1           # one core each (the map): OMP_NUM_THREADS
FDMINI_SITE_LUMI_G_ENV='MPICH_GPU_SUPPORT_ENABLED=1 MPICH_OFI_NIC_POLICY=GPU'

# Frontier
FDMINI_SITE_FRONTIER_PARTITION='batch'
FDMINI_SITE_FRONTIER_CPUS_PER_RANK=7 # srun --cpus-per-task: 8 CCDs x 8 cores, one kept for the OS
FDMINI_SITE_FRONTIER_GPU_FLAGS='--gpus-per-node=8' # all 8 GCDs in every task, no per-task cgroup
FDMINI_SITE_FRONTIER_GPU_MAP='4,5,2,3,6,7,0,1'     # fdmini --gpu-map: CCD i's closest GCD
FDMINI_SITE_FRONTIER_ENV='MPICH_GPU_SUPPORT_ENABLED=1'

# fdmini_site_env NAME SITE CPUS: the environment of a job's steps on SITE (LUMI_G, FRONTIER):
# each VAR=VALUE of FDMINI_SITE_<SITE>_ENV exported unless already set, OMP_NUM_THREADS=CPUS
# unless set, and the libraries of the Cray PE modules loaded at submission
# (CRAY_LD_LIBRARY_PATH) in front of LD_LIBRARY_PATH (OLCF requires it for any non-default CPE;
# fdmini's RUNPATH names the MPI and GTL it was built with already). Prints what it set, each
# line starting with NAME.
fdmini_site_env() {
  local name=$1 site=$2 cpus=$3 list kv var shown=()
  list=FDMINI_SITE_${site}_ENV
  for kv in ${!list}; do
    var=${kv%%=*}
    export "$var=${!var:-${kv#*=}}"
    shown+=("$var=${!var}")
  done
  export OMP_NUM_THREADS=${OMP_NUM_THREADS:-$cpus}
  if [[ -n ${CRAY_LD_LIBRARY_PATH:-} ]]; then
    export LD_LIBRARY_PATH=$CRAY_LD_LIBRARY_PATH${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    echo "$name: LD_LIBRARY_PATH starts with CRAY_LD_LIBRARY_PATH ($CRAY_LD_LIBRARY_PATH)"
  fi
  echo "$name: ${shown[*]}"
}

# fdmini_site_gpu_map SITE: fdmini's options for the GPU layout of SITE (LUMI_G, FRONTIER):
# "--gpu-map LIST" when FDMINI_GPU_MAP (if set) or FDMINI_SITE_<SITE>_GPU_MAP is not empty;
# nothing otherwise. fdmini applies it only where a rank sees several GPUs.
fdmini_site_gpu_map() {
  local v=FDMINI_SITE_${1}_GPU_MAP
  local map=${FDMINI_GPU_MAP-${!v}}
  [[ -n $map ]] && echo "--gpu-map $map"
  return 0
}

# fdmini_site_sbcast NAME BINARY NODES: with FDMINI_SBCAST=1, or FDMINI_SBCAST unset and NODES
# at least FDMINI_SITE_SBCAST_NODES, copies BINARY and the libraries it links to each node's
# /tmp/fdmini.$SLURM_JOB_ID (`sbcast --send-libs`; /tmp works on both machines, memory on LUMI)
# and puts the copy's _libs folder first in LD_LIBRARY_PATH. Sets FDMINI_SITE_BINARY to the
# binary the step runs (the copy, or BINARY). Returns 1 after one FAIL line when sbcast fails.
fdmini_site_sbcast() {
  local name=$1 binary=$2 nodes=$3 on=${FDMINI_SBCAST:-} copy
  FDMINI_SITE_BINARY=$binary
  FDMINI_SITE_COPY=''
  if [[ -z $on ]]; then
    on=0
    ((nodes >= FDMINI_SITE_SBCAST_NODES)) && on=1
  fi
  [[ $on == 1 ]] || return 0
  copy=/tmp/fdmini.${SLURM_JOB_ID}
  if ! sbcast --send-libs --force --preserve "$binary" "$copy"; then
    echo "$name: FAIL: sbcast of $binary to each node's $copy failed" >&2
    return 1
  fi
  echo "$name: sbcast $binary and its libraries to $copy on $nodes node(s)"
  FDMINI_SITE_BINARY=$copy
  FDMINI_SITE_COPY=$copy
  export LD_LIBRARY_PATH=${copy}_libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
}

# fdmini_site_sbcast_cleanup NODES: removes fdmini_site_sbcast's node-local copies, if it made any
# (not left behind in /tmp: memory on LUMI).
fdmini_site_sbcast_cleanup() {
  [[ -n ${FDMINI_SITE_COPY:-} ]] || return 0
  srun --nodes="$1" --ntasks-per-node=1 rm -rf "$FDMINI_SITE_COPY" "${FDMINI_SITE_COPY}_libs" || true
}

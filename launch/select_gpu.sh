#!/usr/bin/env bash
# select_gpu.sh - GPU-selection wrapper: gives each task of a node its own GPU (GCD on MI250X) by
# exporting ROCR_VISIBLE_DEVICES=<node-local task id>, then runs the command in its place. This is
# the LUMI-G recipe ("GPU Binding" in the LUMI user guide): with
# `srun --cpu-bind=map_cpu:49,57,17,25,1,9,33,41` task i then runs on a core of the CCD closest
# to GCD i. fdmini sees one device and uses it (device = local rank mod visible count = 0).
#
# Usage: srun [...] launch/select_gpu.sh COMMAND [ARGS...]
#
# The node-local id is that of the launcher closest to the task: OMPI_COMM_WORLD_LOCAL_RANK (Open
# MPI), MPI_LOCALRANKID (MPICH hydra) or PMI_LOCAL_RANK, else SLURM_LOCALID (srun). Not
# SLURM_LOCALID first: mpirun or Hydra inside a Slurm job hands every rank the batch step's (or
# its daemon's) SLURM_LOCALID=0, and every rank would take GPU 0. Knobs:
#   FDMINI_GPU_MAP          comma list: local id i gets GPU map[i] (default: GPU i), e.g.
#                           "4,5,2,3,6,7,0,1" to pair LUMI's in-order CCDs with their closest GCD
#   FDMINI_GPU_VISIBLE_VAR  variable to set (default ROCR_VISIBLE_DEVICES; CUDA_VISIBLE_DEVICES
#                           on NVIDIA)
set -euo pipefail

if (($# == 0)); then
  echo "usage: $0 COMMAND [ARGS...]" >&2
  exit 2
fi

local_id=${OMPI_COMM_WORLD_LOCAL_RANK:-${MPI_LOCALRANKID:-${PMI_LOCAL_RANK:-${SLURM_LOCALID:-}}}}
if [[ ! $local_id =~ ^[0-9]+$ ]]; then
  echo "select_gpu.sh: no node-local task id (OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID," \
    "PMI_LOCAL_RANK or SLURM_LOCALID): run it under srun or mpirun" >&2
  exit 2
fi

gpu=$local_id
if [[ -n ${FDMINI_GPU_MAP:-} ]]; then
  IFS=, read -ra map <<<"$FDMINI_GPU_MAP"
  # The most tasks a node runs. A task that stops here alone leaves the others waiting in
  # MPI_Init: srun ends a step at a non-zero exit only with --kill-on-bad-exit. So under srun
  # every task checks the fullest node (SLURM_STEP_TASKS_PER_NODE, e.g. "8(x2),4") and refuses
  # alike, the job's first task saying why; mpirun and Hydra end the job at the first non-zero
  # exit, and there the first task of a node without an entry says it.
  most=${OMPI_COMM_WORLD_LOCAL_SIZE:-${MPI_LOCALNRANKS:-0}} speaker=$((local_id == ${#map[@]}))
  [[ $most =~ ^[0-9]+$ ]] && ((most > local_id)) || most=$((local_id + 1))
  if [[ -z ${OMPI_COMM_WORLD_LOCAL_RANK:-}${MPI_LOCALRANKID:-}${PMI_LOCAL_RANK:-} && -n ${SLURM_STEP_TASKS_PER_NODE:-} ]]; then
    for n in ${SLURM_STEP_TASKS_PER_NODE//,/ }; do
      n=${n%%(*}
      [[ $n =~ ^[0-9]+$ ]] && ((n > most)) && most=$n
    done
    speaker=$((${SLURM_PROCID:-0} == 0))
  fi
  if ((most > ${#map[@]})); then
    ((speaker)) && echo "select_gpu.sh: FDMINI_GPU_MAP='$FDMINI_GPU_MAP' has ${#map[@]} entries," \
      "but a node runs $most tasks (local ids 0-$((most - 1))): give one GPU per local id" >&2
    exit 2
  fi
  # every entry a GPU number: an empty or other entry would hide every GPU from its task (every
  # task sees the same map and refuses alike; the job's first task says why)
  for g in "${map[@]}"; do
    if [[ ! $g =~ ^[0-9]+$ ]]; then
      ((${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-${SLURM_PROCID:-0}}} == 0)) &&
        echo "select_gpu.sh: FDMINI_GPU_MAP='$FDMINI_GPU_MAP' holds '$g': give GPU numbers, e.g. 4,5,2,3,6,7,0,1" >&2
      exit 2
    fi
  done
  gpu=${map[local_id]}
fi

var=${FDMINI_GPU_VISIBLE_VAR:-ROCR_VISIBLE_DEVICES}
if [[ ! $var =~ ^[A-Z_]+_VISIBLE_DEVICES$ ]]; then
  echo "select_gpu.sh: FDMINI_GPU_VISIBLE_VAR='$var' is not a *_VISIBLE_DEVICES variable" >&2
  exit 2
fi
export "$var=$gpu"
exec "$@"

#!/usr/bin/env bash
# local.sh - runs fdmini with mpirun on a workstation or a single GPU node, with sensible binding:
# one rank per GPU, each rank bound to the CPUs hwloc says are local to its GPU; without GPUs, one
# rank per core, each bound to its core.
#
# Usage: launch/local.sh [FDMINI OPTIONS...]      e.g. launch/local.sh --bind-report --iters 50
#
# Knobs (default):
#   FDMINI_BINARY       fdmini executable (build/fdmini of this checkout; installed:
#                       P/bin/fdmini beside P/share/fdmini/launch; else fdmini on PATH)
#   FDMINI_NP           ranks (the GPUs found; without GPUs, the cores)
#   FDMINI_BIND         gpu | core | numa | none
#                         gpu:  rank r (node-local) is bound with hwloc-bind to the CPUs local to
#                               the GPU fdmini picks for it: GPU r mod GPUs, or with fdmini's
#                               --gpu-map D0,D1,... among the arguments GPU D[r mod entries];
#                               GPUs are numbered in PCI bus order (CUDA_DEVICE_ORDER=PCI_BUS_ID)
#                         core: mpirun --map-by core --bind-to core
#                         numa: mpirun --map-by numa --bind-to numa
#                         none: mpirun --bind-to none
#                       (gpu when GPUs and hwloc-bind are found, else core)
#   FDMINI_MPIRUN       the launcher (mpirun)
#   FDMINI_MPIRUN_FLAGS more launcher options ("")
# As root, Open MPI's OMPI_ALLOW_RUN_AS_ROOT(_CONFIRM) are set; with more ranks than cores,
# --oversubscribe is added (Open MPI). GPUs are found with nvidia-smi (NVIDIA) or the ROCm KFD
# topology in /sys/class/kfd (AMD); a *_VISIBLE_DEVICES already set turns gpu binding off.
set -euo pipefail

self=$(readlink -f "${BASH_SOURCE[0]}")
root=$(dirname "$(dirname "$self")")
name=local.sh

die() {
  echo "$name: error: $*" >&2
  exit 2
}

# ---- per-rank wrapper (local.sh --rank-wrapper CMD...): bind to the GPU's local CPUs ----
# FDMINI_LOCAL_GPU_BUSES: the bus of node-local rank r's GPU is entry r mod entries
if [[ ${1:-} == --rank-wrapper ]]; then
  shift
  local_id=${OMPI_COMM_WORLD_LOCAL_RANK:-${MPI_LOCALRANKID:-${PMI_LOCAL_RANK:-${SLURM_LOCALID:-}}}}
  [[ $local_id =~ ^[0-9]+$ ]] || die "no node-local rank in the environment of this rank"
  IFS=, read -ra bus_list <<<"${FDMINI_LOCAL_GPU_BUSES:?}"
  bus=${bus_list[local_id % ${#bus_list[@]}]}
  exec hwloc-bind --cpubind "pci=$bus" -- "$@"
fi

# gpu_buses: PCI bus ids of the GPUs, in the order CUDA (with CUDA_DEVICE_ORDER=PCI_BUS_ID) or
# ROCm number them, comma-separated, lower case; empty when none is found.
gpu_buses() {
  local ids=() f dom loc
  if command -v nvidia-smi >/dev/null 2>&1; then
    # "00000000:C1:00.0" -> "0000:c1:00.0"; nvidia-smi lists in PCI bus order
    mapfile -t ids < <(nvidia-smi --query-gpu=pci.bus_id --format=csv,noheader 2>/dev/null |
      tr 'A-F' 'a-f' | sed -E 's/^0*([0-9a-f]{4}):/\1:/')
  elif [[ -d /sys/class/kfd/kfd/topology/nodes ]]; then
    # KFD nodes in ROCm's order; GPUs have simd_count > 0; location_id = bus<<8 | dev<<3 | fn
    for f in $(find /sys/class/kfd/kfd/topology/nodes -mindepth 2 -maxdepth 2 \
      -name properties 2>/dev/null | sort -V); do
      awk '$1 == "simd_count" && $2 > 0 { gpu = 1 } END { exit !gpu }' "$f" || continue
      dom=$(awk '$1 == "domain" { print $2 }' "$f")
      loc=$(awk '$1 == "location_id" { print $2 }' "$f")
      ids+=("$(printf '%04x:%02x:%02x.%x' "${dom:-0}" $((loc >> 8)) $(((loc >> 3) & 31)) \
        $((loc & 7)))")
    done
  fi
  local IFS=,
  echo "${ids[*]}"
}

# gpu_map ARGS...: the value of fdmini's --gpu-map among its arguments (the last one, as fdmini
# takes it; none after "--"), empty when none is given.
gpu_map() {
  local map='' take=0 a
  for a in "$@"; do
    if ((take)); then
      map=$a take=0
      continue
    fi
    case $a in
      --) break ;;
      --gpu-map) take=1 ;;
      --gpu-map=*) map=${a#--gpu-map=} ;;
    esac
  done
  echo "$map"
}

# rank_buses BUSES MAP: the bus of each entry of fdmini's --gpu-map MAP (BUSES: every GPU's, in
# fdmini's device order), comma-separated, so that rank r binds to the GPU it will take, that of
# entry r mod entries. BUSES unchanged where MAP is empty or there is one GPU (fdmini then uses
# it whatever the map) or an entry is no GPU here (fdmini refuses the map: one line, exit 2).
rank_buses() {
  local all map g out=()
  IFS=, read -ra all <<<"$1"
  IFS=, read -ra map <<<"$2"
  if ((${#map[@]} == 0 || ${#all[@]} < 2)); then
    echo "$1"
    return
  fi
  for g in "${map[@]}"; do
    if [[ ! $g =~ ^[0-9]{1,4}$ ]] || ((10#$g >= ${#all[@]})); then
      echo "$1"
      return
    fi
    out+=("${all[10#$g]}")
  done
  local IFS=,
  echo "${out[*]}"
}

if [[ -n ${FDMINI_BINARY:-} ]]; then binary=$FDMINI_BINARY
elif [[ -x $root/build/fdmini ]]; then binary=$root/build/fdmini
elif [[ -x $root/../../bin/fdmini ]]; then binary=$(readlink -f "$root/../../bin/fdmini") # installed
else binary=$(command -v fdmini || echo "$root/build/fdmini"); fi
[[ -x $binary ]] || die "fdmini binary '$binary' is not executable (build it or set FDMINI_BINARY)"
mpirun=${FDMINI_MPIRUN:-mpirun}
command -v "$mpirun" >/dev/null 2>&1 || die "'$mpirun' not found (set FDMINI_MPIRUN)"

buses=''
if [[ -n ${CUDA_VISIBLE_DEVICES:-}${ROCR_VISIBLE_DEVICES:-}${HIP_VISIBLE_DEVICES:-} ]]; then
  echo "$name: a *_VISIBLE_DEVICES variable is set: GPU binding left to you"
else
  buses=$(gpu_buses)
fi
ngpu=0
[[ -n $buses ]] && ngpu=$(tr ',' '\n' <<<"$buses" | wc -l)
cores=$(hwloc-calc --number-of core all 2>/dev/null || nproc)

bind=${FDMINI_BIND:-}
if [[ -z $bind ]]; then
  bind=core
  if ((ngpu > 0)); then
    if command -v hwloc-bind >/dev/null 2>&1; then
      bind=gpu
    else
      echo "$name: hwloc-bind not found (package hwloc): ranks bound by core, not by GPU locality"
    fi
  fi
fi
np=${FDMINI_NP:-}
if [[ -z $np ]]; then
  if ((ngpu > 0)); then np=$ngpu; else np=$cores; fi
fi
[[ $np =~ ^[1-9][0-9]*$ ]] || die "FDMINI_NP='$np' is not a positive integer"
# more ranks than cores (the default choice only): cores are shared, so bind nothing
[[ -z ${FDMINI_BIND:-} && $bind == core ]] && ((np > cores)) && bind=none

cmd=("$mpirun" -n "$np")
is_openmpi=0
grep -q 'Open MPI\|OpenRTE' <<<"$("$mpirun" --version 2>&1)" && is_openmpi=1
if ((is_openmpi)); then
  if [[ $(id -u) -eq 0 ]]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  fi
  ((np > cores)) && cmd+=(--oversubscribe)
fi
wrapper=()
follows=''
case $bind in
  gpu)
    ((ngpu > 0)) || die "FDMINI_BIND=gpu but no GPU was found"
    command -v hwloc-bind >/dev/null 2>&1 || die "FDMINI_BIND=gpu needs hwloc-bind (package hwloc)"
    given_map=$(gpu_map "$@")
    rank_list=$(rank_buses "$buses" "$given_map")
    [[ $rank_list != "$buses" ]] && follows=" following --gpu-map $given_map"
    export FDMINI_LOCAL_GPU_BUSES=$rank_list CUDA_DEVICE_ORDER=PCI_BUS_ID
    cmd+=(--bind-to none)
    wrapper=("$self" --rank-wrapper)
    ;;
  core) cmd+=(--map-by core --bind-to core) ;;
  numa) cmd+=(--map-by numa --bind-to numa) ;;
  none) cmd+=(--bind-to none) ;;
  *) die "FDMINI_BIND='$bind': expected gpu, core, numa or none" ;;
esac
read -ra extra <<<"${FDMINI_MPIRUN_FLAGS:-}"
cmd+=("${extra[@]}")

echo "$name: $np rank(s), $ngpu GPU(s)${buses:+ ($buses)}, binding: $bind$follows"
echo "$name: ${cmd[*]} ${wrapper[*]} $binary $*"
exec "${cmd[@]}" "${wrapper[@]}" "$binary" "$@"

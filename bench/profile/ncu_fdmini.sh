#!/usr/bin/env bash
# ncu_fdmini.sh - NVIDIA GPUs: Nsight Compute on one rank of an fdmini job, the stencil and halo
# kernels of a few timed steps (the full set: speed of light, memory workload, occupancy), the
# other ranks running as they are. A per-rank wrapper:
#
#   mpirun -n 2 bench/profile/ncu_fdmini.sh build-cuda/fdmini --local 512,512,512 --iters 20
#
# Output: $FDMINI_PROFILE_DIR (default profile-ncu) / rank<R>.ncu-rep (ncu --import ... --page
# details for text). FDMINI_PROFILE_RANKS (default 0) picks the ranks; NCU_KERNELS (regex,
# default the stencils, k_faces and k_shell) which kernels, NCU_COUNT how many of their launches
# (default 8, after the first 20: warm-up). ncu_stencil.sh does the same for the kernel sweep.
set -euo pipefail
(($# >= 1)) || { echo "usage: ncu_fdmini.sh FDMINI [FDMINI OPTIONS...]" >&2; exit 2; }
rank=${OMPI_COMM_WORLD_RANK:-${SLURM_PROCID:-${PMI_RANK:-0}}}
if [[ ",${FDMINI_PROFILE_RANKS:-0}," != *",$rank,"* ]]; then exec "$@"; fi
command -v ncu >/dev/null 2>&1 || { echo "ncu_fdmini.sh: ncu not found (Nsight Compute, e.g. /usr/local/cuda/bin)" >&2; exit 2; }
dir=${FDMINI_PROFILE_DIR:-profile-ncu}
mkdir -p "$dir"
exec ncu --set full --clock-control none -k "regex:${NCU_KERNELS:-k_(baseline|plane|zmarch|faces|shell)}" \
  --launch-skip 20 --launch-count "${NCU_COUNT:-8}" -f -o "$dir/rank$rank" "$@"

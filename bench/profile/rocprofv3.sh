#!/usr/bin/env bash
# rocprofv3.sh - AMD GPUs (ROCm >= 6.2): one rank of fdmini under rocprofv3, kernel trace with
# per-kernel statistics and the counters of rocprofv3_counters.txt (HBM bytes fetched and
# written, L2 hits and misses). A per-rank wrapper: put it where the binary goes in the srun
# line, after the GPU-selection wrapper, so that every rank writes its own folder:
#
#   srun -N 1 -n 8 --cpu-bind=map_cpu:49,57,17,25,1,9,33,41 launch/select_gpu.sh \
#       bench/profile/rocprofv3.sh build-lumi/fdmini --local 512,512,512 --iters 20   # LUMI-G
#   srun -N 1 -n 8 -c 7 --gpus-per-task=1 --gpu-bind=closest \
#       bench/profile/rocprofv3.sh build-frontier/fdmini --iters 20                   # Frontier
#
# (inside an allocation: salloc -A PROJECT -p standard-g|batch -N 1 ...; module load rocm).
# Output: $FDMINI_PROFILE_DIR (default profile-rocprofv3-$SLURM_JOB_ID) / rank<R>/ with
# fdmini_kernel_trace.csv, fdmini_kernel_stats.csv and one pmc_<n>/ folder per counter pass
# (rocprofv3 does not merge passes; OLCF's convert-rocprofv3-to-rocprofv1.py does). Only
# FDMINI_PROFILE_RANKS (default: all) are profiled, the others run as they are.
# Counter passes replay each kernel: time kernels from the trace of a run without -i.
set -euo pipefail
(($# >= 1)) || { echo "usage: rocprofv3.sh FDMINI [FDMINI OPTIONS...]" >&2; exit 2; }
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
rank=${SLURM_PROCID:-${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-0}}}
dir=${FDMINI_PROFILE_DIR:-profile-rocprofv3-${SLURM_JOB_ID:-local}}/rank$rank
if [[ -n ${FDMINI_PROFILE_RANKS:-} && ",$FDMINI_PROFILE_RANKS," != *",$rank,"* ]]; then exec "$@"; fi
command -v rocprofv3 >/dev/null 2>&1 || { echo "rocprofv3.sh: rocprofv3 not found (module load rocm; ROCm >= 6.2)" >&2; exit 2; }
mkdir -p "$dir"
exec rocprofv3 --kernel-trace --stats -i "$here/rocprofv3_counters.txt" --output-format csv \
  -d "$dir" -o fdmini -- "$@"

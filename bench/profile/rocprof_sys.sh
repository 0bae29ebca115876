#!/usr/bin/env bash
# rocprof_sys.sh - AMD GPUs: ROCm Systems Profiler (rocprof-sys, formerly Omnitrace) timeline of
# every rank: HIP API, kernels on both streams, fdmini's roctx ranges (halo_begin,
# halo_exchange, halo_unpack, interior, boundary), MPI calls; a Perfetto trace per rank that
# shows the pack, exchange and unpack running under the interior kernel. A per-rank wrapper:
#
#   srun -N 1 -n 8 --cpu-bind=map_cpu:49,57,17,25,1,9,33,41 launch/select_gpu.sh \
#       bench/profile/rocprof_sys.sh build-lumi/fdmini --iters 20                  # LUMI-G
#   srun -N 1 -n 8 -c 7 --gpus-per-task=1 --gpu-bind=closest \
#       bench/profile/rocprof_sys.sh build-frontier/fdmini --iters 20              # Frontier
#
# Where it is: LUMI: module load rocm/6.3.4-extras (CrayEnv and LUMI/25.03; not in the system
# rocm/6.3.4); Frontier: module load rocm, then rocprofiler-systems (OLCF: ROCm 6.3 and 6.4) or
# omnitrace. Output:
# $FDMINI_PROFILE_DIR (default profile-rocprof-sys-$SLURM_JOB_ID) / rank<R>/ (open the
# perfetto-trace-*.proto files at https://ui.perfetto.dev). Build fdmini with roctx (CMake says
# "profiler ranges through roctx") to see its ranges.
set -euo pipefail
(($# >= 1)) || { echo "usage: rocprof_sys.sh FDMINI [FDMINI OPTIONS...]" >&2; exit 2; }
run=$(command -v rocprof-sys-run || command -v omnitrace-run || true)
[[ -n $run ]] || {
  echo "rocprof_sys.sh: neither rocprof-sys-run nor omnitrace-run found (LUMI: module load" \
    "rocm/6.3.4-extras; Frontier: module load rocm rocprofiler-systems)" >&2
  exit 2
}
rank=${SLURM_PROCID:-${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-0}}}
dir=${FDMINI_PROFILE_DIR:-profile-rocprof-sys-${SLURM_JOB_ID:-local}}/rank$rank
mkdir -p "$dir"
# both spellings: the rocprof-sys names and the omnitrace ones of older ROCm
export ROCPROFSYS_OUTPUT_PATH=$dir OMNITRACE_OUTPUT_PATH=$dir
export ROCPROFSYS_TRACE=true OMNITRACE_TRACE=true ROCPROFSYS_PROFILE=true OMNITRACE_PROFILE=true
export ROCPROFSYS_USE_ROCTX=true OMNITRACE_USE_ROCTX=true
exec "$run" -- "$@"

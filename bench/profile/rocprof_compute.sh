#!/usr/bin/env bash
# rocprof_compute.sh - AMD GPUs: ROCm Compute Profiler (rocprof-compute, formerly Omniperf) on one
# GCD running fdmini's default job alone: speed-of-light, memory chart, cache and roofline of the
# stencil kernel. One rank (the kernel's behaviour does not depend on the neighbours) that the
# profiler replays once per counter pass, then the analysis as text:
#
#   srun -N 1 -n 1 -c 7 --gpus-per-task=1 bench/profile/rocprof_compute.sh build-lumi/fdmini \
#       --local 512,512,512 --iters 10          # LUMI-G or Frontier, inside an allocation
#
# (module load rocm, plus rocprofiler-compute / omniperf where the site has it as a module).
# Output: $FDMINI_PROFILE_DIR (default profile-rocprof-compute) / workloads, and analysis.txt
# (rocprof-compute analyze, kernels by time: fdmini's stencil is the top one).
set -euo pipefail
(($# >= 1)) || { echo "usage: rocprof_compute.sh FDMINI [FDMINI OPTIONS...]" >&2; exit 2; }
tool=$(command -v rocprof-compute || command -v omniperf || true)
[[ -n $tool ]] || { echo "rocprof_compute.sh: neither rocprof-compute nor omniperf found (module load rocm)" >&2; exit 2; }
dir=${FDMINI_PROFILE_DIR:-profile-rocprof-compute}
mkdir -p "$dir"
"$tool" profile --name fdmini --path "$dir/workload" -- "$@"
"$tool" analyze --path "$dir/workload" >"$dir/analysis.txt"
echo "rocprof_compute.sh: analysis in $dir/analysis.txt"

#!/usr/bin/env bash
# rocprof_compute.sh - AMD GPUs: ROCm Compute Profiler (rocprof-compute, formerly Omniperf) on one
# GCD running fdmini's default job alone: speed-of-light, memory chart, cache and roofline of the
# stencil kernel. One rank (the kernel's behaviour does not depend on the neighbours) that the
# profiler replays once per counter pass, then the analysis as text:
#
#   srun -N 1 -n 1 -c 7 --gpus-per-task=1 bench/profile/rocprof_compute.sh build-lumi/fdmini \
#       --local 512,512,512 --iters 10          # LUMI-G or Frontier, inside an allocation
#
# Where it is: LUMI: not in the system rocm/6.3.4 module but in rocm/6.3.4-extras (CrayEnv and
# LUMI/25.03), and its Python packages are yours to install, once, in your own environment:
#   pip install -r $EBROOTROCM/libexec/rocprofiler-compute/requirements.txt   (kaleido==0.2.1)
# Frontier: module load rocm, then rocprofiler-compute (OLCF provides its Python environment).
# The profile's output option: ROCm 7's rocprof-compute has --output-directory (its --path is
# gone for profile); older ones take --path; the script asks `rocprof-compute profile --help`.
# Output: $FDMINI_PROFILE_DIR (default profile-rocprof-compute) / workload, and analysis.txt
# (rocprof-compute analyze, kernels by time: fdmini's stencil is the top one).
set -euo pipefail
(($# >= 1)) || { echo "usage: rocprof_compute.sh FDMINI [FDMINI OPTIONS...]" >&2; exit 2; }
tool=$(command -v rocprof-compute || command -v omniperf || true)
[[ -n $tool ]] || {
  echo "rocprof_compute.sh: neither rocprof-compute nor omniperf found (LUMI: module load" \
    "rocm/6.3.4-extras and install its requirements.txt; Frontier: module load rocm rocprofiler-compute)" >&2
  exit 2
}
dir=${FDMINI_PROFILE_DIR:-profile-rocprof-compute}
mkdir -p "$dir"
if grep -q -- '--output-directory' <<<"$("$tool" profile --help 2>&1)"; then
  out=(--output-directory "$dir/workload")
else
  out=(--path "$dir/workload")
fi
"$tool" profile --name fdmini "${out[@]}" -- "$@"
"$tool" analyze --path "$dir/workload" >"$dir/analysis.txt"
echo "rocprof_compute.sh: analysis in $dir/analysis.txt"

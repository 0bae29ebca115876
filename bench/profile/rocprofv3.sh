#!/usr/bin/env bash
# rocprofv3.sh - AMD GPUs (ROCm >= 6.2): one rank of fdmini under rocprofv3: kernel trace with
# per-kernel statistics, fdmini's roctx ranges (--marker-trace: halo_begin, halo_exchange,
# halo_unpack, interior, boundary) and the counters of rocprofv3_counters.txt (HBM bytes
# fetched and written, L2 hits and misses). A per-rank wrapper: put it where the binary goes in
# the srun line, after the GPU-selection wrapper, so that every rank writes its own folder:
#
#   srun -N 1 -n 8 --cpu-bind=map_cpu:49,57,17,25,1,9,33,41 launch/select_gpu.sh \
#       bench/profile/rocprofv3.sh build-lumi/fdmini --local 512,512,512 --iters 20   # LUMI-G
#   srun -N 1 -n 8 -c 7 --gpus-per-task=1 --gpu-bind=closest \
#       bench/profile/rocprofv3.sh build-frontier/fdmini --iters 20                   # Frontier
#
# (inside an allocation; LUMI: module load LUMI/25.03 partition/G rocm/6.3.4; Frontier: module
# load rocm/6.2.4, the default, or the ROCm of your CPE). Output: $FDMINI_PROFILE_DIR (default
# profile-rocprofv3-$SLURM_JOB_ID) / rank<R>/:
#   ROCm 6.x  fdmini_kernel_trace.csv, fdmini_kernel_stats.csv, fdmini_marker_api_trace.csv
#             and one pmc_<n>/ folder per counter pass (--output-format csv)
#   ROCm 7.x  fdmini_results.db (rocpd, the default: rocprofv3's direct CSV output is
#             deprecated there), converted to CSV in the same folder by `rocpd convert` when
#             that tool is on PATH
# (rocprofv3 does not merge counter passes; OLCF's convert-rocprofv3-to-rocprofv1.py does).
# Which ROCm: whether `rocprofv3 --help` offers the rocpd format. Knobs: FDMINI_PROFILE_RANKS
# (default: all) picks the ranks profiled, the others run as they are; FDMINI_ROCPROF_COUNTERS=0
# leaves the counter passes out (they replay each kernel: take kernel times from such a run).
# bench/profile/check_ranges.py RANK_DIR checks that fdmini's ranges are in the trace.
set -euo pipefail
(($# >= 1)) || { echo "usage: rocprofv3.sh FDMINI [FDMINI OPTIONS...]" >&2; exit 2; }
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
rank=${SLURM_PROCID:-${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-0}}}
dir=${FDMINI_PROFILE_DIR:-profile-rocprofv3-${SLURM_JOB_ID:-local}}/rank$rank
if [[ -n ${FDMINI_PROFILE_RANKS:-} && ",$FDMINI_PROFILE_RANKS," != *",$rank,"* ]]; then exec "$@"; fi
command -v rocprofv3 >/dev/null 2>&1 || {
  echo "rocprofv3.sh: rocprofv3 not found (ROCm >= 6.2: LUMI module load rocm/6.3.4, Frontier module load rocm)" >&2
  exit 2
}
mkdir -p "$dir"
opts=(--kernel-trace --stats --marker-trace -d "$dir" -o fdmini)
[[ ${FDMINI_ROCPROF_COUNTERS:-1} == 1 ]] && opts+=(-i "$here/rocprofv3_counters.txt")
if grep -q 'rocpd' <<<"$(rocprofv3 --help 2>&1)"; then
  # ROCm 7: rocpd (SQLite) is the default and the complete output; CSV by conversion
  rocprofv3 "${opts[@]}" --output-format rocpd -- "$@"
  if command -v rocpd >/dev/null 2>&1; then
    for db in "$dir"/fdmini*results.db; do
      [[ -e $db ]] && (cd "$(dirname "$db")" && rocpd convert -i "$(basename "$db")" --output-format csv)
    done
  fi
else
  exec rocprofv3 "${opts[@]}" --output-format csv -- "$@"
fi

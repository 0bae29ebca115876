#!/usr/bin/env bash
# nsys_overlap.sh - on an NVIDIA GPU node, one command: 2 fdmini ranks (they may share one GPU:
# two ranks on one GPU still exchange faces through MPI) traced with Nsight Systems, and a text
# summary of whether pack, exchange and unpack overlap the interior update
# (bench/profile/nsys_overlap.py). Writes into OUT_DIR:
#   summary.txt      what ran (nsys and its version, the commands, GPU, fdmini's header), then the
#                    per-rank, per-step table and the medians
#   rank<R>.nsys-rep and rank<R>.sqlite   the traces (open the .nsys-rep in the Nsight Systems GUI)
#   run.log          the outputs of every attempt (last.log: the last one)
# nsys is looked for as $NSYS, on PATH, in /opt/nvidia/nsight-systems*/bin, /usr/local/cuda*/bin
# and inside Nsight Compute (/opt/nvidia/nsight-compute/*/host/target-linux-x64/nsys). A copy
# that records but cannot import (it leaves only .qdstrm files: QdstrmImporter missing or failing,
# e.g. for a shared library it needs, which LD_LIBRARY_PATH can supply) is said so, with the
# importer's error, and the next one is tried. When no nsys produces a report, summary.txt says which were tried
# and why they failed, and summarizes fdmini's own per-phase device-event timings of a
# --baseline run instead (no timeline).
#
# Usage: bench/profile/nsys_overlap.sh FDMINI MPIRUN [OUT_DIR]
#   FDMINI   a cuda-backend fdmini (bench/multigpu/prepare.sh: .device/bin/fdmini-aware)
#   MPIRUN   the mpirun of its MPI (for fdmini-aware: /opt/fdmini-ompi/bin/mpirun, unpacked from
#            .device/fdmini-ompi-cuda.tar.xz)
#   OUT_DIR  default $OUT/nsys-overlap when $OUT is set (the device tool), else ./nsys-overlap
# Knobs: FDMINI_NSYS_ARGS (fdmini options; default --local 256,256,256 --iters 30 --warmup 5),
#        NSYS_OVERLAP_NP (ranks, default 2), NSYS (an nsys to try first).
set -uo pipefail
fdmini=${1:?usage: nsys_overlap.sh FDMINI MPIRUN [OUT_DIR]}
mpirun=${2:?usage: nsys_overlap.sh FDMINI MPIRUN [OUT_DIR]}
out=${3:-${OUT:+$OUT/}nsys-overlap}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
np=${NSYS_OVERLAP_NP:-2}
read -ra fd_args <<<"${FDMINI_NSYS_ARGS:---local 256,256,256 --iters 30 --warmup 5}"
fd_args+=(--progress 0)
mkdir -p "$out"
out=$(cd "$out" && pwd)
summary=$out/summary.txt
log=$out/run.log
: >"$log"
fdmini=$(readlink -f "$fdmini")
[[ -x $fdmini ]] || { echo "nsys_overlap.sh: '$fdmini' is not executable" >&2; exit 2; }
command -v "$mpirun" >/dev/null 2>&1 || { echo "nsys_overlap.sh: '$mpirun' not found" >&2; exit 2; }
if [[ $(id -u) -eq 0 ]]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_mpi_common_cuda_warning=0
launch=("$mpirun" -n "$np" --bind-to none)

gpus=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | paste -sd ';' -)
{
  echo "nsys_overlap.sh on $(hostname), $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "GPU: ${gpus:-unknown (no nvidia-smi)}"
  echo "fdmini: $fdmini ${fd_args[*]} on $np ranks with $mpirun"
} >"$summary"

# candidates: NSYS, PATH, then the usual install places (newest first)
cands=()
[[ -n ${NSYS:-} ]] && cands+=("$NSYS")
command -v nsys >/dev/null 2>&1 && cands+=("$(command -v nsys)")
for pat in '/opt/nvidia/nsight-systems*/bin/nsys' '/opt/nvidia/nsight-systems*/target-linux-x64/nsys' \
  '/usr/local/cuda*/bin/nsys' '/opt/nvidia/nsight-compute/*/host/target-linux-x64/nsys'; do
  while IFS= read -r f; do [[ -x $f ]] && cands+=("$f"); done < <(compgen -G "$pat" | sort -rV)
done
declare -A seen=()
tried=()
ok=''
for nsys in "${cands[@]}"; do
  real=$(readlink -f "$nsys")
  [[ -n ${seen[$real]:-} ]] && continue
  seen[$real]=1
  ver=$("$nsys" --version 2>/dev/null | head -n 1)
  echo "== trying $nsys ($ver)" >>"$log"
  rm -f "$out"/rank*.nsys-rep "$out"/rank*.sqlite "$out"/rank*.qdstrm "$out/last.log" "$out/import.log"
  why="QdstrmImporter missing"
  # one report per rank (%q{...}: the rank from the launcher's environment)
  "${launch[@]}" "$nsys" profile --trace=cuda,nvtx --sample=none --cpuctxsw=none \
    --force-overwrite=true --export=sqlite -o "$out/rank%q{OMPI_COMM_WORLD_RANK}" \
    "$fdmini" "${fd_args[@]}" >"$out/last.log" 2>&1
  rc=$?
  cat "$out/last.log" >>"$log"
  for ((r = 0; r < np; r++)); do
    base=$out/rank$r
    # a report without its SQLite: export it; only the raw stream: import it first
    if [[ ! -s $base.sqlite && ! -s $base.nsys-rep && -s $base.qdstrm ]]; then
      imp=$(find "$(dirname "$real")/.." /opt/nvidia -name QdstrmImporter -type f 2>/dev/null | head -n 1)
      if [[ -z $imp ]]; then
        why="QdstrmImporter not found"
      elif ! "$imp" -i "$base.qdstrm" >"$out/import.log" 2>&1; then
        # e.g. a shared library the importer needs is missing: LD_LIBRARY_PATH can supply it
        why="$imp failed: $(grep -m 1 -iE 'error|cannot|not found' "$out/import.log" || tail -n 1 "$out/import.log")"
      fi
      [[ -f $out/import.log ]] && cat "$out/import.log" >>"$log"
    fi
    if [[ ! -s $base.sqlite && -s $base.nsys-rep ]]; then
      "$nsys" export --type sqlite --force-overwrite=true -o "$base.sqlite" "$base.nsys-rep" >>"$log" 2>&1
    fi
  done
  have=$(compgen -G "$out/rank*.sqlite" | wc -l)
  if ((have == np)); then
    ok=$nsys
    tried+=("$nsys ($ver): traced, exit $rc")
    break
  fi
  if compgen -G "$out/rank*.qdstrm" >/dev/null; then
    tried+=("$nsys ($ver): wrote only .qdstrm raw streams, no report ($why); exit $rc")
  else
    tried+=("$nsys ($ver): no report; exit $rc (run.log)")
  fi
done

{
  echo "nsys tried: ${#tried[@]}"
  for t in "${tried[@]}"; do echo "  $t"; done
  ((${#tried[@]})) || echo "  none found (PATH, /opt/nvidia/nsight-systems*, /usr/local/cuda*/bin, nsight-compute)"
} >>"$summary"

# header: fdmini's first report lines (build, MPI, GPU, halo path) of the run summarized
header() {
  grep -m 1 '^fdmini ' "$out/last.log"
  grep -E '^  (built |MPI  |GPU  |halo        path|verification)' "$out/last.log"
  echo
}
if [[ -n $ok ]]; then
  {
    echo "ran: ${launch[*]} $ok profile --trace=cuda,nvtx --export=sqlite -o $out/rank%q{OMPI_COMM_WORLD_RANK} $fdmini ${fd_args[*]}"
    header
  } >>"$summary"
  files=()
  for ((r = 0; r < np; r++)); do files+=("$out/rank$r.sqlite"); done
  python3 "$here/nsys_overlap.py" "${files[@]}" >>"$summary" 2>&1
  rc=$?
  # fdmini's NVTX ranges in the traces (halo_begin, halo_exchange, halo_unpack, interior,
  # boundary): the timeline above depends on them
  python3 "$here/check_ranges.py" "${files[@]}" >>"$summary" 2>&1 || rc=1
else
  "${launch[@]}" "$fdmini" "${fd_args[@]}" --baseline --json "$out/run.json" >"$out/last.log" 2>&1
  cat "$out/last.log" >>"$log"
  {
    echo "NO nsys trace could be made (above); fallback: fdmini's own timings of a --baseline run"
    echo "ran: ${launch[*]} $fdmini ${fd_args[*]} --baseline --json $out/run.json"
    header
  } >>"$summary"
  python3 "$here/nsys_overlap.py" --fdmini-json "$out/run.json" >>"$summary" 2>&1
  rc=$?
fi
cat "$summary"
exit "$rc"

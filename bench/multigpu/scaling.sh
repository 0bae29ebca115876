#!/usr/bin/env bash
# scaling.sh - the strong and weak scaling of heat and jacobi on one multi-GPU node (issue 49,
# item 6), in parts that each fit one call of a few minutes, every run beside the floors it
# measured at start-up (F1, X, F_p: JSON floors_us). Writes under $OUT; scaling_table.py merges
# the parts into bench/results/DEVICExG-strong.{csv,md} and -weak.{csv,md} with the weak plots.
#
#   strong [OPS]  OPS (default heat jacobi) on global 128^3, 256^3, 512^3 and 1024^3, each over
#                 1, 2 and 4 GPUs (one rank per GPU; --procs 1,1,1 / 1,1,2 / 1,2,2) and 8 ranks
#                 on the 4 GPUs (2,2,2) under MPS, which is started for those runs only (the
#                 1-GPU runs they are measured against ran without it, in the same call); two
#                 modes: T1 (one step per pass, --halo-width 1 --fuse 1) and S4-auto
#                 (--halo-width 4 --fuse auto). On 2 GPUs: 1, 2 GPUs and 4 ranks on 2.
#   weak [OPS]    512^3 per GPU over 1, 2 and 4 GPUs, both modes, --baseline (each rank's block
#                 alone: the share of the exchange hidden), through bench/scaling/study.py (one
#                 study folder per operator and mode), default 2 repeats.
#   summary [-o DIR] [--prefix NAME] PART...   scaling_table.py on the parts' tarballs
#
# Options (before or after the part):
#   --binary PATH     the fdmini to run (default .device/bin/fdmini-aware, built by prepare.sh
#                     against the CUDA-aware Open MPI of .device/fdmini-ompi-cuda.tar.xz, which
#                     is then unpacked to /opt/fdmini-ompi); with --binary nothing is unpacked
#   --mpirun PATH     the launcher (default /opt/fdmini-ompi/bin/mpirun; with --binary, mpirun
#                     on PATH); Open MPI's gets --bind-to none
#   --gpus G          GPUs of the node (default: nvidia-smi -L); layouts are 1, 2, 4 GPUs up to
#                     G, and 2G ranks on G GPUs
#   --sizes LIST      strong: global N of N^3 (default 128,256,512,1024); weak: the block per GPU
#                     (default 512)
#   --steps W,I       every run --warmup W --iters I (default: by size, below)
#   --repeats R       runs of each case (default: strong 1, weak 2); tables take the median
#   --budget S        seconds of runs per call (default 450): a run gets at most what is left
#                     (and at most --run-timeout, default 150 s); runs past it are skipped, named
#   e.g. a host-backend dry run of the plumbing on a workstation:
#     bench/multigpu/scaling.sh --binary build/fdmini --gpus 4 --sizes 16,24 --steps 2,20 strong heat
#
# Steps by size (default): the timed loop of the 1-GPU run about 0.2-1.2 s, and from 512^3 as many
# untimed steps first (an H200 at its power limit settles its clock over seconds: README of
# bench/results, "Deep halos"), scaled by the GPUs so that each layout runs as long:
#   128^3 --warmup 1000 --iters 10000;  256^3 2000 / 4000;  512^3 2000 G / 2000 G;
#   1024^3 250 G / 250 G;  other sizes 100 / 1000.  Weak 512^3 per GPU: 2000 / 2000.
# Expected on 4x H200 (no measurement yet: start-up ~4 s per run, ~8 s with --fuse auto):
# strong heat ~4-5 min, strong jacobi ~4-5 min, weak ~4-5 min (split: weak heat, weak jacobi).
#
# $OUT gets, per call, PART.log (progress: one line per run), PART.tar.gz (part.json, the JSON
# records and reports, study folders) and PART.{md,csv} (that call's own strong or weak table),
# where PART is the part, its operators and any --sizes: e.g. strong-heat, weak-heat-jacobi,
# strong-heat-128-256-512, so that calls split by operator or size share one $OUT. A call whose
# PART files are already in $OUT refuses to start (exit 2): use another OUT or remove them.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)

usage() {
  sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'
  exit "${1:-2}"
}

binary="" mpirun="" gpus="" sizes="" steps="" repeats="" budget=450 run_timeout=150
args=()
while [ $# -gt 0 ]; do
  case $1 in
  --binary) binary=$2; shift 2 ;;
  --mpirun) mpirun=$2; shift 2 ;;
  --gpus) gpus=$2; shift 2 ;;
  --sizes) sizes=${2//,/ }; shift 2 ;;
  --steps) steps=$2; shift 2 ;;
  --repeats) repeats=$2; shift 2 ;;
  --budget) budget=$2; shift 2 ;;
  --run-timeout) run_timeout=$2; shift 2 ;;
  -h | --help) usage 0 ;;
  *) args+=("$1"); shift ;;
  esac
done
[ ${#args[@]} -gt 0 ] || usage
part=${args[0]}
ops=("${args[@]:1}")

if [ "$part" = summary ]; then
  exec python3 "$here/scaling_table.py" "${ops[@]}"
fi
[ "$part" = strong ] || [ "$part" = weak ] || usage
[ ${#ops[@]} -gt 0 ] || ops=(heat jacobi)
for op in "${ops[@]}"; do
  case $op in heat | jacobi) ;; *) echo "scaling.sh: operator '$op': heat or jacobi" >&2; exit 2 ;; esac
done
if [ -n "$steps" ] && ! [[ $steps =~ ^[0-9]+,[0-9]+$ ]]; then
  echo "scaling.sh: --steps W,I (two counts)" >&2
  exit 2
fi
# counts: a positive integer each (bash arithmetic on anything else fails, or runs nothing)
for opt in "--gpus:$gpus" "--repeats:$repeats" "--budget:$budget" "--run-timeout:$run_timeout"; do
  v=${opt#*:}
  if [ -n "$v" ] && ! [[ $v =~ ^[1-9][0-9]{0,5}$ ]]; then
    echo "scaling.sh: ${opt%%:*} '$v': a positive integer" >&2
    exit 2
  fi
done
size_list=()
for n in $sizes; do
  [[ $n =~ ^[1-9][0-9]{0,5}$ ]] || { echo "scaling.sh: --sizes: '$n' is not a positive integer" >&2; exit 2; }
  size_list+=("$n")
done
sizes=${size_list[*]}

# the call's files: PART.{log,tar.gz,md,csv}; never over an earlier call's
name=$part-$(IFS=-; echo "${ops[*]}")
[ ${#size_list[@]} -eq 0 ] || name+=-$(IFS=-; echo "${size_list[*]}")
OUT=${OUT:-/tmp/fdmini-out}
clash=()
for f in "$name.log" "$name.tar.gz" "$name.md" "$name.csv"; do
  [ -e "$OUT/$f" ] && clash+=("$f")
done
if [ ${#clash[@]} -gt 0 ]; then
  echo "scaling.sh: $OUT already holds ${clash[*]} (an earlier call of $name): use another OUT or remove them" >&2
  exit 2
fi

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_mpi_common_cuda_warning=0
export OMPI_MCA_rmaps_base_oversubscribe=1 NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
if [ -z "$binary" ]; then
  binary=$root/.device/bin${FDMINI_PREP_TAG:+-$FDMINI_PREP_TAG}/fdmini-aware
  tar -xJf "$root/.device/fdmini-ompi-cuda.tar.xz" -C / || { echo "scaling.sh: cannot unpack the CUDA-aware MPI"; exit 1; }
  mpirun=${mpirun:-/opt/fdmini-ompi/bin/mpirun}
fi
mpirun=${mpirun:-$(command -v mpirun)}
binary=$(cd "$(dirname "$binary")" && pwd)/$(basename "$binary")
[ -x "$binary" ] || { echo "scaling.sh: no fdmini at $binary (bench/multigpu/prepare.sh builds it)" >&2; exit 2; }
[ -x "$mpirun" ] || { echo "scaling.sh: no launcher '$mpirun'" >&2; exit 2; }
# Open MPI binds ranks to cores unless told not to (run_node.sh does the same); fdmini takes
# its GPU by node-local rank (src/run/bind.c)
bind=()
mpirun_version=$("$mpirun" --version 2>&1 || true)
[[ $mpirun_version == *"Open MPI"* ]] && bind=(--bind-to none)
if [ -z "$gpus" ]; then
  gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU') || true
  [ "${gpus:-0}" -gt 0 ] || { echo "scaling.sh: no GPU seen by nvidia-smi: give --gpus G" >&2; exit 2; }
fi

mkdir -p "$OUT"
work=$(mktemp -d)
dir=$work/$name
mkdir -p "$dir/records"
logf=$OUT/$name.log
: > "$logf"
say() { printf '%s\n' "$*" | tee -a "$logf"; }

t0=$SECONDS
fails=0
skipped=0
mps_on=0 mps_own=0

# shellcheck disable=SC1091 # bench/mps.sh is checked on its own
. "$root/bench/mps.sh"
mps_start() {
  if mps_up; then
    mps_on=1 mps_own=$MPS_STARTED # it ran already (mps_own 0): it stays
    if [ "$mps_own" = 1 ]; then
      say "MPS: started (nvidia-cuda-mps-control -d); ranks sharing a GPU run side by side"
    else
      say "MPS: runs already (left running); ranks sharing a GPU run side by side"
    fi
  else
    mps_on=0
    say "MPS: not started (nvidia-cuda-mps-control missing or failed): ranks sharing a GPU time-slice it (records named -nomps)"
  fi
}
mps_stop() {
  if [ "$mps_on" = 1 ] && [ "$mps_own" = 1 ]; then
    mps_down
    say "MPS: stopped"
  fi
  mps_on=0
}
cleanup() {
  mps_stop
  rm -rf "$work"
}
trap cleanup EXIT

# left: seconds of the call's budget left (0 when spent)
left() {
  local l=$((budget - (SECONDS - t0)))
  [ "$l" -gt 0 ] && echo "$l" || echo 0
}

# procs_of RANKS: the process grid (as run_node.sh's layouts: z, then y, then x)
procs_of() {
  case $1 in
  1) echo 1,1,1 ;; 2) echo 1,1,2 ;; 4) echo 1,2,2 ;; 8) echo 2,2,2 ;; 16) echo 2,2,4 ;;
  *) echo "scaling.sh: no process grid for $1 ranks" >&2; return 1 ;;
  esac
}

# steps_of N G: "W I" for N^3 over G GPUs (strong; weak takes G = 1)
steps_of() {
  if [ -n "$steps" ]; then echo "${steps/,/ }"; return; fi
  case $1 in
  128) echo 1000 10000 ;;
  256) echo 2000 4000 ;;
  512) echo $((2000 * $2)) $((2000 * $2)) ;;
  1024) echo $((250 * $2)) $((250 * $2)) ;;
  *) echo 100 1000 ;;
  esac
}

# mode_args MODE: T1 one step per pass; S4-auto four ghost layers, --fuse auto (T divides 4)
mode_args() {
  case $1 in
  T1) echo --halo-width 1 --fuse 1 ;;
  S4-auto) echo --halo-width 4 --fuse auto ;;
  esac
}

# one NAME NP ARGS...: one fdmini run on NP ranks; record $dir/records/NAME.json, report .log.
# A run that fails (or verifies FAIL) keeps its log, loses its record, and is counted.
one() {
  local nm=$1 np=$2 l
  shift 2
  l=$(left)
  if [ "$l" -lt 15 ]; then
    say "$(printf '%-40s SKIPPED (the call'"'"'s budget of %s s is spent)' "$nm" "$budget")"
    skipped=$((skipped + 1))
    return
  fi
  [ "$l" -gt "$run_timeout" ] && l=$run_timeout
  local t=$SECONDS rc
  timeout -k 10 "$l" "$mpirun" -n "$np" "${bind[@]}" "$binary" --progress 0 --report full "$@" \
    --json "$dir/records/$nm.json" > "$dir/records/$nm.log" 2>&1
  rc=$?
  if [ $rc -eq 0 ] && grep -Eq "verification: (PASS|UNVERIFIED) " "$dir/records/$nm.log" && [ -s "$dir/records/$nm.json" ]; then
    say "$(printf '%-40s %5s s  %s' "$nm" $((SECONDS - t)) "$(python3 "$here/scaling_table.py" --line "$dir/records/$nm.json")")"
  else
    say "$(printf '%-40s FAILED (exit %s%s), %s s; the end of its report:' "$nm" "$rc" \
      "$([ $rc -eq 124 ] && echo ", timed out after $l s")" $((SECONDS - t)))"
    tail -5 "$dir/records/$nm.log" | tee -a "$logf"
    rm -f "$dir/records/$nm.json"
    fails=$((fails + 1))
  fi
}

# layouts: "GPUS RANKS" one rank per GPU (1, 2, 4 up to the node's), then 2G ranks on G GPUs
layouts=()
top=1
for g in 1 2 4 8; do
  [ "$g" -le "$gpus" ] && { layouts+=("$g $g"); top=$g; }
done
shared="$top $((2 * top))"

# strong_one OP N MODE G NP TAG REP: one strong run, named for the tables
strong_one() {
  local op=$1 n=$2 mode=$3 g=$4 np=$5 tag=$6 rep=$7 w i
  read -r w i <<< "$(steps_of "$n" "$g")"
  # shellcheck disable=SC2046
  one "strong-$op-$n-$mode-g${g}r$np$tag-r$rep" "$np" --op "$op" --global "$n,$n,$n" \
    --procs "$(procs_of "$np")" --warmup "$w" --iters "$i" $(mode_args "$mode")
}

run_strong() {
  local op n rep mode g np lay
  for op in "${ops[@]}"; do
    for n in ${sizes:-128 256 512 1024}; do
      for rep in $(seq 1 "${repeats:-1}"); do
        for mode in T1 S4-auto; do
          for lay in "${layouts[@]}"; do
            read -r g np <<< "$lay"
            strong_one "$op" "$n" "$mode" "$g" "$np" "" "$rep"
          done
        done
      done
      # the shared layout under MPS, after this size's 1-GPU runs (without MPS)
      read -r g np <<< "$shared"
      [ "$(left)" -ge 15 ] && mps_start
      local tag=-mps
      [ "$mps_on" = 1 ] || tag=-nomps
      for rep in $(seq 1 "${repeats:-1}"); do
        for mode in T1 S4-auto; do strong_one "$op" "$n" "$mode" "$g" "$np" "$tag" "$rep"; done
      done
      mps_stop
    done
  done
}

# weak: bench/scaling/study.py, one study folder per operator and mode (its study.json says
# what ran; collect.py and plot.py read them)
run_weak() {
  local op n mode w i l scales=() procs=() lay g
  for lay in "${layouts[@]}"; do
    read -r g _ <<< "$lay"
    scales+=("$g")
    [ "$g" -gt 1 ] && procs+=(--procs "$(procs_of "$g")")
  done
  for op in "${ops[@]}"; do
    for n in ${sizes:-512}; do
      read -r w i <<< "$(steps_of "$n" 1)"
      for mode in T1 S4-auto; do
        l=$(left)
        if [ "$l" -lt 60 ]; then
          say "weak-$op-$n-$mode: SKIPPED (the call's budget of $budget s is spent)"
          skipped=$((skipped + 1))
          continue
        fi
        [ "$l" -gt "$run_timeout" ] && l=$run_timeout
        say "== weak $op ${n}^3 per GPU, $mode, GPUs $(IFS=,; echo "${scales[*]}"), ${repeats:-2} repeat(s), --warmup $w --iters $i --baseline ($(date -u +%FT%TZ))"
        # shellcheck disable=SC2046
        python3 "$root/bench/scaling/study.py" run --machine local --study weak --op "$op" \
          --size "$n,$n,$n" --scales "$(IFS=,; echo "${scales[*]}")" "${procs[@]}" \
          --repeats "${repeats:-2}" --baseline --warmup "$w" --iters "$i" \
          $(mode_args "$mode") \
          --binary "$binary" --mpiexec "$mpirun" --timeout "$l" --launcher-args="${bind[*]}" \
          --fdmini-args='--progress 0 --report full' --out "$dir/weak-$op-$n-$mode" 2>&1 | tee -a "$logf"
        [ "${PIPESTATUS[0]}" -eq 0 ] || fails=$((fails + 1))
      done
    done
  done
}

say "== $name on $gpus x $(nvidia-smi --query-gpu=name --format=csv,noheader 2> /dev/null | head -1 || echo '?') ($(date -u +%FT%TZ)), binary $binary, launcher $mpirun, budget $budget s"
if ! python3 - "$dir/part.json" "$part" "$gpus" "$binary" "$budget" "${steps:-default}" "${repeats:-default}" \
  "${sizes:-default}" "${ops[@]}" << 'PY'; then
import datetime, json, os, socket, sys
path, part, gpus, binary, budget, steps, repeats, sizes, *ops = sys.argv[1:]
json.dump({"part": part, "ops": ops, "gpus": int(gpus), "binary": binary, "budget_s": int(budget),
           "steps": steps, "repeats": repeats, "sizes": sizes, "host": socket.gethostname(),
           "commit": os.environ.get("FDMINI_COMMIT", ""),
           "started": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")},
          open(path, "w"), indent=1)
PY
  say "scaling.sh: cannot write $dir/part.json: nothing run"
  exit 1
fi
case $part in
strong) run_strong ;;
weak) run_weak ;;
esac
say "== $name: $((SECONDS - t0)) s, $fails failed, $skipped skipped"
# the call's table: scaling_table.py writes table-strong or table-weak, renamed PART.{md,csv}
ok=1
python3 "$here/scaling_table.py" "$dir" -o "$work/table" --prefix table --no-plots 2>&1 | tee -a "$logf"
[ "${PIPESTATUS[0]}" -eq 0 ] || { say "scaling.sh: scaling_table.py failed: no table for $name"; ok=0; }
for ext in md csv; do
  if [ -f "$work/table/table-$part.$ext" ]; then
    mv "$work/table/table-$part.$ext" "$OUT/$name.$ext" || ok=0
  fi
done
tar -C "$work" -czf "$OUT/$name.tar.gz" "$name" || { say "scaling.sh: cannot write $OUT/$name.tar.gz"; ok=0; }
[ "$ok" -eq 1 ] && [ "$fails" -eq 0 ] && [ "$skipped" -eq 0 ]

#!/usr/bin/env bash
# run_node.sh - issue 4 on an NVIDIA multi-GPU node, in one call: the multi-GPU tests (1, 2, 4
# GPUs and 8 ranks on 4 GPUs, or 1, 2 GPUs and 4 and 8 ranks on 2 GPUs, or 2, 4 and 8 ranks
# sharing one GPU; GPU-aware MPI, staged
# MPI and the node-local IPC path (faces pulled by device copies, ordered by flags the
# streams set and await); every operator; bitwise equal to the single-GPU run; GPU
# equal to the host backend bit for bit (one rank, --dump); --mpi-gpu aware refused by a non-CUDA-aware MPI;
# --halo-path ipc refused where a neighbour's GPU is out of reach; compute-sanitizer with 2
# ranks (memcheck; initcheck on 1 and 2 ranks where no face crosses processes by IPC); deep halos --halo-width 2 and 3 with and without --fuse through every path, bitwise
# equal to 1 GPU; the halo faults --test-inject-fault=exchange, zero and shell failing every
# operator; IPC passes in chains that hold their exchanges (graphs on, 100 steps: chain_cases);
# --graphs on and off bitwise equal; the single-step autotune's loop trials of its closest
# candidates, check_autotune.py; under MPS, ranks sharing the GPU exchanging inside the pass's
# launch (and deep halos' windows exchanging in launches of their own), signalled_cases; on 2
# or more GPUs, ranks on different GPUs exchanging inside the
# pass's launch, xdev_cases (issue 49: one rank per GPU on 2, 3 and 4 GPUs, 8 ranks on 4 under
# MPS, every operator signalled and bitwise equal to 1 GPU, graphs on and off, F_p in the floors, the exchange and order faults failing through
# signalled passes, --test-delays, --test-stall ending with exit 3, compute-sanitizer; alone:
# run_node.sh xdev)), and the halo-path benchmarks (halo); the strong and weak scaling
# benchmark is bench/multigpu/scaling.sh. The tests end with checkpoint and restart on the GPU (ckpt_cases). The
# small-block and deep-halo benchmarks, under MPS: bench/strong/run_node.sh.
#
# Binaries come prebuilt (bench/multigpu/prepare.sh, on a Debian 12 machine with CUDA 13):
#   .device/bin/fdmini-aware   cuda backend, a CUDA-aware Open MPI build (fdmini-ompi-cuda.tar.xz)
#   .device/bin/fdmini-sys     cuda backend, the distribution's Open MPI (not CUDA-aware)
#   .device/bin/fdmini-host    host backend (reference)
#   .device/bin/peer_bandwidth cudaMemcpyPeer bandwidth between two GPUs
#   .device/bin/test_gpu_kernels the GPU backend's kernel tests (tests/gpu)
#   .device/bin/test_gpu_regions the halo regions' pack/unpack tests (tests/gpu)
#   .device/bin/kernel_sweep     the kernel sweep (bench/run_fuse_sweep.sh KERNEL_SWEEP=)
# Usage: bench/multigpu/run_node.sh tests|base|halo|defaults|xdev|signalled|nodes|all...   (writes
# under $OUT; all = tests = base + xdev; signalled: the MPS cases of one GPU alone, on any node;
# nodes: emulated nodes and the off-node proxy under MPS on one GPU (issue 56), on any node;
# default all). The tests append to $OUT/tests.log; halo and defaults write records and tarballs
# (records, records.tar.gz; studies-default.tar.gz, records-4gpu, records-4gpu.tar.gz) and are
# refused before anything runs (exit 2) where an earlier or a killed call left them in $OUT:
# use another OUT or remove them.
set -uo pipefail
usage_line="usage: $0 [tests|base|halo|defaults|xdev|signalled|nodes|all...]   (writes under \$OUT; --help: the whole story; the scaling study: bench/multigpu/scaling.sh; the deep-halo study: bench/strong/run_node.sh deep)"
[ $# -eq 0 ] && set -- all
OUT=${OUT:-/tmp/fdmini-out}
seen=" "
clash=()
for what in "$@"; do
  case $what in
  -h | --help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
  tests | base | xdev | signalled | nodes | all) ;;
  halo | defaults)
    if [[ $seen == *" $what "* ]]; then echo "run_node.sh: mode '$what' given twice" >&2; exit 2; fi
    seen+="$what "
    if [ "$what" = halo ]; then files=(records records.tar.gz); else files=(studies-default.tar.gz records-4gpu records-4gpu.tar.gz); fi
    for f in "${files[@]}"; do [ -e "$OUT/$f" ] && clash+=("$f"); done ;;
  *) echo "run_node.sh: unknown mode '$what'" >&2; echo "$usage_line" >&2; exit 2 ;;
  esac
done
if [ ${#clash[@]} -gt 0 ]; then
  echo "run_node.sh: $OUT already holds ${clash[*]} (an earlier call's): use another OUT or remove them" >&2
  exit 2
fi
mkdir -p "$OUT"
bin=$PWD/.device/bin${FDMINI_PREP_TAG:+-$FDMINI_PREP_TAG}
work=$(mktemp -d)
tar -xJf .device/fdmini-ompi-cuda.tar.xz -C / || { echo "cannot unpack the CUDA-aware MPI"; exit 1; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_mpi_common_cuda_warning=0
export OMPI_MCA_rmaps_base_oversubscribe=1 NCCL_NVLS_ENABLE=0
AWARE_RUN=/opt/fdmini-ompi/bin/mpirun
# shellcheck disable=SC1091 # bench/mps.sh is checked on its own
. "$(dirname "$0")/../mps.sh" # mps_up, mps_down: MPS gone again before the next script starts
SYS_RUN=$(command -v mpirun)
ngpu=$(nvidia-smi -L | wc -l)
device=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
pass=0
fail=0
log() { printf '%s\n' "$*" | tee -a "$OUT/tests.log"; }
# the report's signalled line: width 1 (one launch) or deeper (a pack and an unpack launch)
SIG_LINE="^  signalled   [1-9][0-9]* of the timed passes exchanged (inside their one launch|on the device before their update)"
SIG_DEEP="^  signalled   [1-9][0-9]* of the timed passes exchanged on the device before their update"
ok() { pass=$((pass + 1)); log "ok   $*"; }
bad() { fail=$((fail + 1)); log "FAIL $*"; }

# fd NP ARGS...: the aware binary on NP ranks; output to $work/last.log. Killed after
# $fd_timeout seconds (300 unless the caller sets it), SIGKILL 15 s later if it ignores SIGTERM
fd() {
  local np=$1
  shift
  timeout -k 15 "${fd_timeout:-300}" "$AWARE_RUN" -n "$np" --bind-to none "$bin/fdmini-aware" --report full --progress 0 "$@" > "$work/last.log" 2>&1
}

# mode_args MODE: the fdmini options of a test mode (aware and staged force the MPI path)
mode_args() {
  case $1 in
  aware) echo --mpi-gpu aware --halo-path mpi ;;
  staged) echo --mpi-gpu staged --halo-path mpi ;;
  ipc) echo --halo-path ipc ;;
  esac
}

# short_loop: the last run's timed loop had fewer than 32 windows ("N of M windows timed" or
# "all M windows timed" in its report, M < 32): fdmini samples every window of such a loop (all but one where the
# warm-up leaves a window over), each eagerly, so its passes do not run in chains
short_loop() {
  local m
  m=$(grep -oE "[0-9]+ windows timed" "$work/last.log" | head -1 | cut -d' ' -f1)
  [ -n "$m" ] && [ "$m" -lt 32 ]
}

# case_run NP PROCS MODE OP [FDMINI_ARGS...]: one multi-rank run, bitwise against the 1-GPU
# reference (one step per pass, one ghost layer). MODE aware, staged or ipc (faces pulled,
# ordered by flags); extra arguments such as --halo-width 3 --fuse 3. CASE_ITERS (12) and
# CASE_REF (ref-OP.raw, made with as many steps) for longer loops: chain_cases.
case_run() {
  local np=$1 procs=$2 mode=$3 op=$4 want=mpi ref
  ref=${CASE_REF:-$work/ref-$op.raw}
  shift 4
  [ "$mode" = ipc ] && want=ipc
  rm -f "$work/d.raw"
  # shellcheck disable=SC2046
  fd "$np" --op "$op" --global 130,97,65 --iters "${CASE_ITERS:-12}" --warmup 1 --procs "$procs" $(mode_args "$mode") "$@" --dump "$work/d.raw"
  local rc=$?
  if [ "$want" = ipc ] && ! grep -qE "IPC faces  *(pulled: .*ordered on the device by flags|read inside the pass's launch|unpacked from the slots)" "$work/last.log"; then rc=99; fi
  if [[ " $* " == *" --halo-width "* || " $* " == *" --fuse "* ]] && ! grep -q "deep halo   width\|fuse        " "$work/last.log"; then rc=98; fi
  if [[ " $* " == *" --graphs on "* ]] && ! grep -q "graphs      on" "$work/last.log"; then rc=97; fi
  if [ "$(grep -c "^  graphs  " "$work/last.log")" -ne 1 ]; then rc=95; fi # one graphs line, on or off
  # every face by IPC with graphs on: passes run in chains that hold their exchanges (not the
  # wave's, whose source is added between passes), wherever the loop is not short (short_loop:
  # 12 steps never chain; chain_cases run 100)
  if [ "$mode" = ipc ] && [ "$op" != wave ] && [[ " $* " == *" --graphs on "* ]] && ! short_loop &&
    ! grep -q "^ *[1-9][0-9]* of the timed passes ran in chains that hold their exchanges" "$work/last.log"; then rc=96; fi
  if [ $rc -eq 0 ] && grep -q "verification: PASS" "$work/last.log" && grep -q "halo        path $want " "$work/last.log" &&
    cmp -s "$work/d.raw" "$ref"; then
    ok "$np ranks ($procs) $mode $op${*:+ $*}: PASS, path $want, bitwise equal to 1 GPU$(grep -q 'share devices' "$work/last.log" && echo ', ranks share GPUs (notice printed)')"
  else
    bad "$np ranks ($procs) $mode $op${*:+ $*}"
    tail -20 "$work/last.log" >> "$OUT/tests.log"
  fi
}

# order_cases: the IPC path lets the halo stream run passes ahead (no host wait), so only the
# stream order keeps the shell of a pass behind the previous pass's interior update, which
# writes what the shell reads and reads what it writes. 2 ranks on blocks whose interior update
# takes far longer than an exchange (512^3 and 128^3, heat and jacobi) must verify, and FAIL
# with that wait left out (--test-inject-fault=order; before the wait existed these runs failed
# on an H100: bench/results/README.md, "The IPC path at small blocks"). Then --halo-path auto
# with GPU-aware MPI: its trial line, and the path it took bitwise equal to 1 GPU.
order_cases() {
  local op n rc
  # under MPS, where the two ranks' streams run side by side (time-sliced, the race hid)
  mps_up || log "note: MPS did not start; the planted race may not show"
  fd 2 --op heat --local 512,512,512 --procs 1,1,2 --iters 300 --warmup 50 --halo-path ipc --test-inject-fault=order
  rc=$?
  mps_down
  if [ $rc -eq 1 ] && grep -q "verification: FAIL" "$work/last.log"; then
    ok "2 ranks ipc heat 512^3 with --test-inject-fault=order: FAIL, exit 1 (the planted race is seen)"
  else
    bad "2 ranks ipc heat 512^3 with --test-inject-fault=order (rc $rc)"
    tail -20 "$work/last.log" >> "$OUT/tests.log"
  fi
  for op in heat jacobi; do
    for n in 512 128; do
      if fd 2 --op "$op" --local $n,$n,$n --procs 1,1,2 --iters 300 --warmup 50 --halo-path ipc &&
        grep -q "verification: PASS" "$work/last.log" && grep -q "halo        path ipc " "$work/last.log"; then
        ok "2 ranks ipc $op ${n}^3 per rank, 300 steps: PASS (the shell waits for the previous interior update)"
      else
        bad "2 ranks ipc $op ${n}^3 per rank"
        tail -20 "$work/last.log" >> "$OUT/tests.log"
      fi
    done
    rm -f "$work/d.raw"
    if fd 2 --op "$op" --global 130,97,65 --iters 12 --warmup 1 --procs 1,1,2 --mpi-gpu aware --dump "$work/d.raw" &&
      grep -q "verification: PASS" "$work/last.log" && grep -q "^  path trial  step " "$work/last.log" &&
      grep -qE "best of [0-9]+ rounds[^:]*: took (MPI|IPC signalled|IPC with flags)$" "$work/last.log" &&
      cmp -s "$work/d.raw" "$work/ref-$op.raw"; then
      ok "2 ranks --halo-path auto, aware MPI, $op: $(grep -o 'took [A-Za-z ]*$' "$work/last.log") after the path trial, bitwise equal to 1 GPU"
    else
      bad "2 ranks --halo-path auto, aware MPI, $op"
      tail -20 "$work/last.log" >> "$OUT/tests.log"
    fi
  done
}

# deep_cases OP: deep halos of width 2 (faces and edges) and 3 (and corners) through every
# path, the wave exchanging both time levels, and fused passes for heat and jacobi (T = S,
# and T = 2 inside S = 4), bitwise equal to the 1-GPU step-by-step reference
deep_cases() {
  local op=$1 mode
  for mode in ipc aware staged; do
    case_run 4 2,2,1 "$mode" "$op" --halo-width 2
    case_run 8 2,2,2 "$mode" "$op" --halo-width 3
  done
  case_run 4 1,2,2 aware "$op" --halo-width 3 --no-overlap
  if [ "$op" = heat ] || [ "$op" = jacobi ]; then
    case_run 4 2,2,1 ipc "$op" --halo-width 2 --fuse 2
    case_run 8 2,2,2 aware "$op" --halo-width 3 --fuse 3
    case_run 4 1,2,2 staged "$op" --halo-width 4 --fuse 2 --no-overlap
    local t
    for t in 2 3 4; do
      # one GPU, T steps per pass (the fused kernel end to end, passes cut short at the end)
      if fd 1 --op "$op" --global 130,97,65 --iters 12 --warmup 1 --fuse "$t" --dump "$work/d.raw" &&
        grep -q "verification: PASS" "$work/last.log" && cmp -s "$work/d.raw" "$work/ref-$op.raw"; then
        ok "1 GPU $op --fuse $t: PASS, bitwise equal to one step per pass ($(grep -o 'fused:steps=[^ ]*' "$work/last.log" | head -1))"
      else
        bad "1 GPU $op --fuse $t"
        tail -20 "$work/last.log" >> "$OUT/tests.log"
      fi
    done
  fi
}

# gpu_host_equal OP SIZE ITERS WARMUP: one rank on one GPU and on the host backend: the --dump
# files must be equal bit for bit (every initial field is; the stencil rounds every product)
gpu_host_equal() {
  local op=$1 size=$2 iters=$3 warmup=$4
  rm -f "$work/g.raw" "$work/h.raw"
  fd 1 --op "$op" --global "$size" --iters "$iters" --warmup "$warmup" --dump "$work/g.raw"
  local rc=$?
  timeout 300 mpirun -n 1 "$bin/fdmini-host" --report full --progress 0 --op "$op" --global "$size" --iters "$iters" \
    --warmup "$warmup" --dump "$work/h.raw" > "$work/host.log" 2>&1
  local rch=$?
  if [ $rc -eq 0 ] && [ $rch -eq 0 ] && cmp -s "$work/g.raw" "$work/h.raw"; then
    ok "GPU --dump equals the host backend's bit for bit ($op, $size, --iters $iters --warmup $warmup)"
  else
    bad "GPU vs host backend $op $size (GPU rc $rc, host rc $rch)"
    python3 - "$work/g.raw" "$work/h.raw" <<'PY' >> "$OUT/tests.log" 2>&1
import sys, numpy as np
g, h = (np.fromfile(p, dtype=np.float64) for p in sys.argv[1:3])
if g.size != h.size:
    print(f"  sizes differ: {g.size} {h.size}")
else:
    d = np.abs(g - h)
    print(f"  {int((g != h).sum())} of {g.size} points differ, max |diff| / max |host| = {d.max() / max(np.abs(h).max(), 1e-300):.3e}")
PY
  fi
}

# fault_case NP PROCS MODE OP [FDMINI_ARGS...]: --test-inject-fault=$FAULT (default exchange:
# the last rank skips the unpack of one received region in every exchange; the ghosts an
# exchange fills start as NaN; zero: every message carries no elements, MPI's counts come up
# short and IPC copies nothing, leaving the NaN of the receive buffers; shell: the shell next to
# neighbours is not updated, its points keep their NaN) must end the run with exit 1 and
# verification FAIL
fault_case() {
  local np=$1 procs=$2 mode=$3 op=$4 kind=${FAULT:-exchange}
  shift 4
  # shellcheck disable=SC2046
  fd "$np" --op "$op" --global 130,97,65 --iters 12 --warmup 1 --procs "$procs" $(mode_args "$mode") "$@" \
    --test-inject-fault="$kind"
  local rc=$?
  if [ $rc -eq 1 ] && grep -q "verification: FAIL" "$work/last.log"; then
    ok "$kind fault: $np ranks ($procs) $mode $op${*:+ $*}: exit 1, FAIL"
  else
    bad "$kind fault: $np ranks ($procs) $mode $op${*:+ $*} (rc $rc; expected 1 and FAIL)"
    tail -20 "$work/last.log" >> "$OUT/tests.log"
  fi
}

# fault_cases: the exchange fault fails every operator at width 1 through GPU-aware MPI, staged
# MPI and IPC (2 ranks) and on 8 ranks; heat, jacobi and wave with deep halos of width 2 and 3
# (faces, edges, corners); heat and jacobi with fused passes, overlap on and off; with graphs
# on (the dropped unpack replayed from a graph, by IPC in a chain of passes): 30 runs; then
# the zero and shell faults (issue 48), every operator through every path on 2 ranks: 24 runs
fault_cases() {
  local op mode
  for op in laplacian heat jacobi wave; do
    for mode in aware staged ipc; do fault_case 2 1,1,2 "$mode" "$op"; done
    fault_case 8 2,2,2 aware "$op"
  done
  for op in heat jacobi wave; do
    fault_case 4 2,2,1 ipc "$op" --halo-width 2
    fault_case 8 2,2,2 staged "$op" --halo-width 3
  done
  for op in heat jacobi; do
    fault_case 4 1,2,2 aware "$op" --halo-width 2 --fuse 2
    fault_case 8 2,2,2 ipc "$op" --halo-width 3 --fuse 3 --no-overlap
  done
  fault_case 2 1,1,2 aware heat --graphs on
  fault_case 2 1,1,2 ipc heat --graphs on
  fault_case 4 2,2,1 ipc jacobi --halo-width 2 --fuse 2 --graphs on
  fault_case 4 1,2,2 staged wave --halo-width 2 --graphs on
  # issue 48: messages of no elements (zero) and the shell not updated (shell), every operator
  # through GPU-aware MPI, staged MPI and IPC on 2 ranks: 24 runs
  local kind
  for kind in zero shell; do
    for op in laplacian heat jacobi wave; do
      for mode in aware staged ipc; do FAULT=$kind fault_case 2 1,1,2 "$mode" "$op"; done
    done
  done
}

# signalled_cases: under MPS, ranks sharing the GPU exchange inside the pass's launch (the
# path trial takes it over flags at these blocks): heat and jacobi on 2, 4 and 8 ranks, graphs
# on and off, bitwise equal to 1 GPU, with the report's signalled line; the exchange fault
# FAILs there too; 2 ranks on 128^3 blocks, whose interior marches down on alternate passes
# (each rank's share of L2), bitwise equal to 1 GPU; the laplacian and the wave on 2 and 8
# ranks, graphs on, bitwise equal and signalled
signalled_cases() {
  local op cfg np procs g
  mps_up || log "note: MPS did not start"
  for op in heat jacobi; do
    for cfg in "2 1,1,2" "4 1,2,2" "8 2,2,2"; do
      read -r np procs <<< "$cfg"
      for g in on off; do
        case_run "$np" "$procs" ipc "$op" --graphs "$g"
        if grep -qE "$SIG_LINE" "$work/last.log"; then
          ok "$np ranks ($procs) ipc $op --graphs $g: $(grep -o 'took IPC [a-z]*' "$work/last.log") (signalled passes)"
        else
          bad "$np ranks ($procs) ipc $op --graphs $g: no signalled passes ($(grep -o 'took [A-Za-z ]*$' "$work/last.log"))"
        fi
      done
    done
    fault_case 8 2,2,2 ipc "$op" --graphs on
    grep -q "^  signalled   " "$work/last.log" || bad "exchange fault 8 ranks ipc $op: not signalled"
    # 128^3 per rank: the pass's arrays exceed each rank's share of L2 (two ranks on the
    # GPU), so the interior marches down on alternate passes inside the one launch
    rm -f "$work/d.raw" "$work/big.raw"
    if fd 1 --op "$op" --global 128,128,256 --iters 12 --warmup 1 --dump "$work/big.raw" &&
      fd 2 --op "$op" --global 128,128,256 --iters 12 --warmup 1 --procs 1,1,2 --halo-path ipc --dump "$work/d.raw" &&
      grep -q "verification: PASS" "$work/last.log" &&
      grep -qE "$SIG_LINE" "$work/last.log" &&
      grep -q "ranks share devices: up to 2 ranks on one device" "$work/last.log" &&
      cmp -s "$work/d.raw" "$work/big.raw"; then
      ok "2 ranks ipc $op 128^3 per rank, signalled (each rank's share of L2: marching down on alternate passes): PASS, bitwise equal to 1 GPU"
    else
      bad "2 ranks ipc $op 128^3 per rank, signalled"
      tail -20 "$work/last.log" >> "$OUT/tests.log"
    fi
    rm -f "$work/d.raw" "$work/big.raw"
  done
  # the laplacian and the wave (the default source in the shell of the rank below the split)
  for op in laplacian wave; do
    for cfg in "2 1,1,2" "8 2,2,2"; do
      read -r np procs <<< "$cfg"
      case_run "$np" "$procs" ipc "$op" --graphs on
      grep -qE "$SIG_LINE" "$work/last.log" ||
        bad "$np ranks ($procs) ipc $op --graphs on: no signalled passes ($(grep -o 'took [A-Za-z ]*$' "$work/last.log"))"
    done
  done
  # deep halos (--halo-width S > 1): each window's exchange signalled in a pack and an unpack
  # launch before its first pass, heat, jacobi and the wave (the laplacian takes no deep
  # halo), fused passes, graphs on and off
  local deep extra
  for deep in "2 1,1,2 heat on --halo-width 2" "4 1,2,2 jacobi off --halo-width 3 --fuse 3" \
    "8 2,2,2 heat on --halo-width 4 --fuse 2" "2 1,1,2 wave on --halo-width 3" "8 2,2,2 jacobi off --halo-width 2" \
    "8 2,2,2 wave off --halo-width 2"; do
    read -r np procs op g extra <<< "$deep"
    read -ra extra <<< "$extra"
    case_run "$np" "$procs" ipc "$op" --graphs "$g" "${extra[@]}"
    if grep -qE "$SIG_DEEP" "$work/last.log"; then
      ok "$np ranks ($procs) ipc $op --graphs $g ${extra[*]}: the windows' exchanges signalled in launches of their own"
    else
      bad "$np ranks ($procs) ipc $op --graphs $g ${extra[*]}: no deep signalled exchanges ($(grep -o 'took [A-Za-z ]*$' "$work/last.log"))"
    fi
  done
  fault_case 8 2,2,2 ipc heat --graphs on --halo-width 3
  grep -qE "$SIG_DEEP" "$work/last.log" || bad "exchange fault 8 ranks ipc heat --halo-width 3: not signalled"
  mps_down
}

# xdev_cases: issue 49, ranks on different GPUs of the node exchanging inside the pass's one
# launch (signalled passes: blocks wait on device words the neighbours on other GPUs set). One
# rank per GPU, no MPS, on 2 GPUs (1,1,2), 3 (1,1,3) and 4 GPUs (1,2,2), and 8 ranks on 4 GPUs
# under MPS (2,2,2: neighbours on the rank's own GPU and on others), every operator through
# signalled passes, each bitwise equal to 1 GPU and with the report's signalled line (a case
# without it FAILs, naming the path it took): heat and jacobi at small blocks (64^3 and the odd
# 97,81,71), graphs on and off; the laplacian (its faces are u's); the wave with its source
# added inside the launch (in the shell) and after it (in the interior), with two velocities
# (coefficients by plane, the interface inside a rank's interior on 3 GPUs); the floors' F_p
# (the largest face to a neighbour on another GPU) in the report and the JSON; the exchange and
# order faults FAIL through signalled passes (heat, jacobi, the wave) on 2 and 4 GPUs;
# --test-delays (random host sleeps and device spins before passes) PASS and bitwise equal on
# 2 GPUs and on 8 ranks on 4; compute-sanitizer memcheck on 2 GPUs through signalled passes;
# deep halos whose windows exchange in a launch of their own (heat --halo-width 4 --fuse auto,
# jacobi --halo-width 2 --fuse 2, the wave --halo-width 3 on 2 and 4 GPUs, heat and the wave on
# 8 ranks on 4, F_p of the S-deep face, the exchange and order faults, --test-delays,
# memcheck); --test-stall 1 on 2 GPUs (width 1 and 2) ends (no hang) with exit 3 and "waited
# more than". About 60 runs of
# 22 steps, each under a timeout; the 3- and 4-GPU cases are skipped (a note) on fewer GPUs.
# Alone:
# run_node.sh xdev
xdev_steps=(--iters 20 --warmup 2)

# xdev_signalled: the last run's report counts signalled passes
xdev_signalled() {
  grep -qE "$SIG_LINE" "$work/last.log"
}

# xdev_path: the path the last run took, for the log: the halo path and the path trial's choice
xdev_path() {
  local p t
  p=$(grep -o "halo        path [a-z]*" "$work/last.log" | head -1 | awk '{print $3}')
  t=$(grep -o "took [A-Za-z ]*$" "$work/last.log" | head -1)
  printf 'path %s%s' "${p:-none (no report)}" "${t:+, path trial $t}"
}

# xdev_phys: the problem's own arguments for the next cases and their reference (the wave's
# --velocity V1,V2 and --source I,J,K), empty for the others
xdev_phys=()

# xdev_ref OP GRID: the 1-GPU run of OP on GRID (with xdev_phys), reference of the cases on
# that grid ($work/xref-OP-GRID[-PHYS].raw, made once); returns 1 where it did not PASS
xdev_ref() {
  local key
  key=$(printf '%s' "${xdev_phys[*]}" | tr -c 'A-Za-z0-9.,' '_')
  local f=$work/xref-$1-$2${key:+-$key}.raw
  xdev_ref_file=$f
  [ -s "$f" ] && return 0
  [ -e "$f.bad" ] && return 1
  if fd 1 --op "$1" --global "$2" "${xdev_steps[@]}" "${xdev_phys[@]}" --dump "$f" && grep -q "verification: PASS" "$work/last.log"; then
    ok "xdev: 1 GPU $1 $2 ${xdev_steps[*]}${xdev_phys[*]:+ ${xdev_phys[*]}}: PASS (the reference)"
    return 0
  fi
  bad "xdev: 1 GPU $1 $2 ${xdev_steps[*]}${xdev_phys[*]:+ ${xdev_phys[*]}} (the reference)"
  tail -20 "$work/last.log" >> "$OUT/tests.log"
  rm -f "$f"
  touch "$f.bad"
  return 1
}

# xdev_case NP PROCS WANT OP GRID [FDMINI_ARGS...]: OP on GRID over NP ranks (PROCS) with
# --halo-path ipc, its --dump bitwise equal to the 1-GPU run and its JSON in $work/x.json;
# WANT sig: the report must count signalled passes (else FAIL naming the path taken); any:
# whatever path
xdev_case() {
  local np=$1 procs=$2 want=$3 op=$4 grid=$5 rc why=
  shift 5
  local what="xdev: $np ranks ($procs) on $((np < ngpu ? np : ngpu)) GPUs, ipc $op $grid${xdev_phys[*]:+ ${xdev_phys[*]}}${*:+ $*}"
  if ! xdev_ref "$op" "$grid"; then
    bad "$what: no 1-GPU reference"
    return
  fi
  rm -f "$work/d.raw" "$work/x.json"
  fd "$np" --op "$op" --global "$grid" "${xdev_steps[@]}" "${xdev_phys[@]}" --procs "$procs" --halo-path ipc "$@" \
    --dump "$work/d.raw" --json "$work/x.json"
  rc=$?
  [ $rc -eq 0 ] || why+=", exit $rc"
  grep -q "verification: PASS" "$work/last.log" || why+=", no PASS"
  cmp -s "$work/d.raw" "$xdev_ref_file" || why+=", not bitwise equal to 1 GPU"
  if [[ " $* " == *" --graphs on "* ]] && ! grep -q "graphs      on" "$work/last.log"; then why+=", graphs not on"; fi
  if [ "$want" = sig ] && ! xdev_signalled; then why+=", no signalled passes"; fi
  if [ -z "$why" ]; then
    ok "$what: PASS, bitwise equal to 1 GPU, $(xdev_path)$(xdev_signalled && echo ', signalled passes')"
  else
    bad "$what: ${why#, } ($(xdev_path))"
    tail -20 "$work/last.log" >> "$OUT/tests.log"
  fi
}

# xdev_fp WHAT: the floors of the last xdev_case (ranks with a neighbour on another GPU):
# F_p in the report's floors and floors_us.Fp {min,avg,max}, all above 0, in its JSON
xdev_fp() {
  local fp
  fp=$(grep -o "F_p [0-9.]* / [0-9.]* / [0-9.]*" "$work/last.log" | head -1)
  if [ -n "$fp" ] && python3 - "$work/x.json" <<'PY'; then
import json, sys
fp = json.load(open(sys.argv[1]))["floors_us"]["Fp"]
sys.exit(0 if fp and all(fp[k] > 0 for k in ("min", "avg", "max")) else 1)
PY
    ok "xdev: floors on $1: $fp us in the report, floors_us.Fp in the JSON"
  else
    bad "xdev: floors on $1: no F_p in the report (${fp:-none}) or no floors_us.Fp above 0 in the JSON"
    grep -A3 "^  floors " "$work/last.log" >> "$OUT/tests.log"
  fi
}

# xdev_fault KIND NP PROCS OP GRID [FDMINI_ARGS...]: --test-inject-fault=KIND through signalled passes must exit
# 1 with FAIL; a run without signalled passes is FAIL "not signalled" (the fault missed them)
xdev_fault() {
  local kind=$1 np=$2 procs=$3 op=$4 grid=$5 rc
  shift 5
  fd "$np" --op "$op" --global "$grid" "${xdev_steps[@]}" --procs "$procs" --halo-path ipc "$@" --test-inject-fault="$kind"
  rc=$?
  local what="xdev: $kind fault, $np ranks ($procs) on $np GPUs, ipc $op $grid${*:+ $*}"
  if ! xdev_signalled; then
    bad "$what: not signalled (rc $rc, $(xdev_path))"
  elif [ $rc -eq 1 ] && grep -q "verification: FAIL" "$work/last.log"; then
    ok "$what: exit 1, FAIL through signalled passes"
    return
  else
    bad "$what: rc $rc, expected 1 and FAIL ($(xdev_path), signalled passes)"
  fi
  tail -20 "$work/last.log" >> "$OUT/tests.log"
}

# xdev_sanitizer [FDMINI_ARGS...]: compute-sanitizer memcheck of 2 ranks on 2 GPUs through
# signalled passes.
# Staged MPI, so that Open MPI's own CUDA calls stay out of the report (as the sanitizer runs
# of run_tests); every face goes by IPC anyway
xdev_sanitizer() {
  local csan=/usr/local/cuda/bin/compute-sanitizer rc n
  [ -x "$csan" ] || csan=compute-sanitizer
  timeout -k 15 240 "$AWARE_RUN" -n 2 --bind-to none "$csan" --tool memcheck --error-exitcode 9 \
    "$bin/fdmini-aware" --report full --progress 0 --op heat --global 64,64,64 --procs 1,1,2 --iters 6 --warmup 1 \
    --mpi-gpu staged --halo-path ipc "$@" > "$work/last.log" 2>&1
  rc=$?
  cat "$work/last.log" >> "$OUT/sanitizer-xdev.log"
  n=$(grep -c "ERROR SUMMARY: 0 errors" "$work/last.log")
  if [ $rc -eq 0 ] && [ "$n" -eq 2 ] && xdev_signalled; then
    ok "xdev: compute-sanitizer memcheck, 2 ranks on 2 GPUs, ipc heat 64^3${*:+ $*}, signalled passes: 0 errors"
  else
    bad "xdev: compute-sanitizer memcheck, 2 ranks on 2 GPUs, ipc heat 64^3${*:+ $*}: rc $rc, $n of 2 ranks with 0 errors, $(xdev_path)$(xdev_signalled || echo ', no signalled passes')"
    tail -30 "$work/last.log" >> "$OUT/tests.log"
  fi
}

# xdev_stall [FDMINI_ARGS...]: --test-stall 1 on 2 GPUs: rank 1's signalled launches never set the neighbours'
# words and every bounded wait is 2 s: the run must end, exit 3, with a line that says which
# wait "waited more than", well inside its 45 s (a hang is killed there and FAILs)
xdev_stall() {
  local t0=$SECONDS rc el n left
  fd_timeout=45 fd 2 --op heat --global 64,64,64 "${xdev_steps[@]}" --procs 1,1,2 --halo-path ipc "$@" --test-stall 1
  rc=$?
  el=$((SECONDS - t0))
  n=$(grep -c "waited more than" "$work/last.log")
  if [ $rc -eq 3 ] && [ "$n" -ge 1 ]; then
    ok "xdev: --test-stall 1, 2 ranks on 2 GPUs, ipc heat 64^3${*:+ $*}: exit 3 after $el s, $n line(s): $(grep -m1 "waited more than" "$work/last.log" | cut -c1-160)"
  elif [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
    bad "xdev: --test-stall 1, 2 ranks on 2 GPUs${*:+ $*}: hung, killed by the timeout after $el s"
    tail -20 "$work/last.log" >> "$OUT/tests.log"
  else
    bad "xdev: --test-stall 1, 2 ranks on 2 GPUs${*:+ $*}: rc $rc after $el s, $n \"waited more than\" lines (expected exit 3 and the line)"
    tail -20 "$work/last.log" >> "$OUT/tests.log"
  fi
  # nothing of the stalled run may be left on the GPUs
  sleep 2
  left=$(pgrep -f -- "$bin/fdmini-aware" | tr '\n' ' ')
  [ -z "$left" ] || bad "xdev: --test-stall 1: processes of the run still running after it ended: $left"
}

xdev_cases() {
  local p0=$pass f0=$fail op cfg np procs g1 g2 fd_timeout=120
  if [ "$ngpu" -lt 2 ]; then
    log "note: xdev: $ngpu GPU on this node; the cross-device cases need 2 or more: skipped"
    return 0
  fi
  [ "$ngpu" -ge 4 ] || log "note: xdev: $ngpu GPUs on this node; the 4-GPU cases (1,2,2 one rank per GPU, 8 ranks on 4 GPUs under MPS) are skipped"
  # one rank per GPU, no MPS: each (op, layout) takes both grids, graphs on with one and off
  # with the other, swapped between heat and jacobi
  for op in heat jacobi; do
    g1=on g2=off
    [ "$op" = jacobi ] && g1=off g2=on
    for cfg in "2 1,1,2" "4 1,2,2"; do
      read -r np procs <<< "$cfg"
      [ "$np" -gt "$ngpu" ] && continue
      xdev_case "$np" "$procs" sig "$op" 64,64,64 --graphs "$g1"
      [ "$op" = heat ] && xdev_fp "$np ranks ($procs) on $np GPUs"
      xdev_case "$np" "$procs" sig "$op" 97,81,71 --graphs "$g2"
    done
  done
  # the laplacian (u stays: its faces are u's) and the wave: the default source lies in the
  # shell next to the split (added inside the launch), --source 20,20,20 in a rank's interior
  # (added after it); two velocities (coefficients by plane; on 3 GPUs the interface plane
  # splits rank 1's interior: two interior launches)
  for cfg in "2 1,1,2" "4 1,2,2"; do
    read -r np procs <<< "$cfg"
    [ "$np" -gt "$ngpu" ] && continue
    xdev_case "$np" "$procs" sig laplacian 64,64,64 --graphs on
    xdev_case "$np" "$procs" sig wave 64,64,64
    xdev_phys=(--velocity "1.5,3")
    xdev_case "$np" "$procs" sig wave 97,81,71
    xdev_phys=()
  done
  xdev_phys=(--source "20,20,20")
  xdev_case 2 1,1,2 sig wave 64,64,64 --graphs off
  xdev_phys=(--velocity "1.5,3")
  [ "$ngpu" -ge 3 ] && xdev_case 3 1,1,3 sig wave 64,64,64
  xdev_phys=()
  xdev_fault exchange 2 1,1,2 heat 64,64,64
  xdev_fault exchange 2 1,1,2 wave 64,64,64
  xdev_fault order 2 1,1,2 jacobi 97,81,71
  xdev_fault order 2 1,1,2 wave 64,64,64
  if [ "$ngpu" -ge 4 ]; then
    xdev_fault exchange 4 1,2,2 jacobi 97,81,71
    xdev_fault order 4 1,2,2 heat 64,64,64
  fi
  xdev_case 2 1,1,2 sig jacobi 97,81,71 --test-delays
  # deep halos: each window's exchange signalled in a pack and an unpack launch across GPUs,
  # fused passes (auto: the trial's choice), the wave's two levels, F_p of the S-deep face
  for cfg in "2 1,1,2" "4 1,2,2"; do
    read -r np procs <<< "$cfg"
    [ "$np" -gt "$ngpu" ] && continue
    xdev_case "$np" "$procs" sig heat 97,81,71 --halo-width 4 --fuse auto --graphs on
    xdev_fp "$np ranks ($procs) on $np GPUs, --halo-width 4"
    xdev_case "$np" "$procs" sig jacobi 64,64,64 --halo-width 2 --fuse 2 --graphs off
    xdev_case "$np" "$procs" sig wave 64,64,64 --halo-width 3
  done
  xdev_fault exchange 2 1,1,2 heat 64,64,64 --halo-width 3
  xdev_fault order 2 1,1,2 jacobi 97,81,71 --halo-width 2
  xdev_case 2 1,1,2 sig heat 97,81,71 --halo-width 4 --fuse 2 --test-delays
  xdev_sanitizer
  xdev_sanitizer --halo-width 3
  if [ "$ngpu" -ge 4 ]; then
    # 8 ranks on 4 GPUs (rank r on GPU r % 4), under MPS: neighbours on the same GPU and on others
    mps_up || log "note: MPS did not start"
    for op in heat jacobi; do
      g1=on g2=off
      [ "$op" = jacobi ] && g1=off g2=on
      xdev_case 8 2,2,2 sig "$op" 64,64,64 --graphs "$g1"
      [ "$op" = heat ] && xdev_fp "8 ranks (2,2,2) on 4 GPUs"
      xdev_case 8 2,2,2 sig "$op" 97,81,71 --graphs "$g2"
    done
    xdev_case 8 2,2,2 sig heat 97,81,71 --test-delays
    xdev_case 8 2,2,2 sig laplacian 64,64,64
    xdev_phys=(--velocity "1.5,3")
    xdev_case 8 2,2,2 sig wave 97,81,71
    xdev_phys=()
    xdev_case 8 2,2,2 sig heat 64,64,64 --halo-width 3 --fuse 3 --graphs on
    xdev_case 8 2,2,2 sig wave 97,81,71 --halo-width 2
    mps_down
  fi
  # last: a run that hangs despite its bound is killed, and must not hold a GPU under the others
  xdev_stall
  xdev_stall --halo-width 2
  log "cross-device cases: $((pass - p0)) passed, $((fail - f0)) failed"
}

# chain_cases OP: every face by IPC with graphs on, in a loop long enough to run chains (100
# steps; the 12 of case_run's other cases are all sampled): 2 ranks, and for heat 4 ranks with
# --halo-width 2 (50 windows), bitwise equal to 1 GPU's 100 steps, the report's chain line
# required (case_run). Not the wave: its source goes in between passes, which chains cannot hold.
chain_cases() {
  local op=$1
  if fd 1 --op "$op" --global 130,97,65 --iters 100 --warmup 1 --dump "$work/ref100-$op.raw" &&
    grep -q "verification: PASS" "$work/last.log"; then
    CASE_ITERS=100 CASE_REF="$work/ref100-$op.raw" case_run 2 1,1,2 ipc "$op" --graphs on
    [ "$op" = heat ] && CASE_ITERS=100 CASE_REF="$work/ref100-$op.raw" case_run 4 2,2,1 ipc "$op" --halo-width 2 --graphs on
  else
    bad "1 GPU $op, 100 steps (the chains' reference)"
    tail -20 "$work/last.log" >> "$OUT/tests.log"
  fi
}

# graph_cases OP: --graphs on and off (each pass's device work, chains of passes and packs
# replayed from CUDA graphs, or launched one by one) bitwise equal to the 1-GPU reference, on
# 1 GPU (chains), on 2 ranks through MPI and IPC, and with deep halos and fusion on 8 ranks
graph_cases() {
  local op=$1 g t
  for g in on off; do
    if fd 1 --op "$op" --global 130,97,65 --iters 12 --warmup 1 --graphs "$g" --dump "$work/d.raw" &&
      grep -q "verification: PASS" "$work/last.log" && grep -q "graphs      $g" "$work/last.log" &&
      cmp -s "$work/d.raw" "$work/ref-$op.raw"; then
      ok "1 GPU $op --graphs $g: PASS, bitwise equal to the reference"
    else
      bad "1 GPU $op --graphs $g"
      tail -20 "$work/last.log" >> "$OUT/tests.log"
    fi
    case_run 2 1,1,2 aware "$op" --graphs "$g"
    case_run 2 1,1,2 ipc "$op" --graphs "$g"
  done
  [ "$op" = laplacian ] && return
  case_run 8 2,2,2 aware "$op" --halo-width 3 --graphs on
  case_run 4 1,2,2 staged "$op" --halo-width 2 --graphs on --no-overlap
  if [ "$op" = heat ] || [ "$op" = jacobi ]; then
    for t in 2 4; do case_run 8 2,2,2 aware "$op" --halo-width 4 --fuse "$t" --graphs on; done
  fi
}

# ckpt_cases: checkpoint and restart on the GPU backend (issue 29), each final field bitwise
# equal to the uninterrupted 1-GPU run of 60 steps: a rank SIGKILLed half-way through a
# checkpoint write on 2 ranks, continued on 1 GPU; a stop signal raised on one rank (exit 5 on
# every rank), continued on 4 ranks with --halo-width 2 --fuse 2 (heat) or 3 ranks (wave); a GPU
# checkpoint continued by the host backend and a host checkpoint by the GPU (the arithmetic is
# the same, so the fields must be too: a difference is a defect to explain)
ckpt_cases() {
  local op g=130,97,65 d rc
  for op in heat wave; do
    local steps=(--op "$op" --global "$g" --warmup 1 --iters 59)
    if ! fd 1 "${steps[@]}" --dump "$work/ck-ref-$op.raw"; then bad "checkpoints: 1 GPU $op reference"; continue; fi
    # SIGKILL of rank 1 in the write of the checkpoint of step 30, then 1 GPU
    d=$work/ck-kill-$op
    fd 2 "${steps[@]}" --checkpoint-every 10 --checkpoint-dir "$d" --test-kill 1,25,write
    rc=$?
    fd 1 "${steps[@]}" --checkpoint-every 10 --checkpoint-dir "$d" --restart auto --dump "$work/d.raw"
    if [ $rc -ne 0 ] && grep -q "restart     from $d/ckpt_0000000020.fdmini" "$work/last.log" &&
      grep -q "verification: PASS" "$work/last.log" && cmp -s "$work/d.raw" "$work/ck-ref-$op.raw"; then
      ok "checkpoints: $op, 2 ranks, rank 1 SIGKILLed writing the checkpoint of step 30; continued on 1 GPU from step 20: bitwise equal"
    else
      bad "checkpoints: $op kill and restart (first run exit $rc)"; tail -20 "$work/last.log" >> "$OUT/tests.log"
    fi
    # a stop signal on one rank: every rank stops at one pass, exit 5; continued on more ranks
    d=$work/ck-sig-$op
    local more=(--halo-width 2 --fuse 2) np=4
    [ "$op" = wave ] && more=(--halo-width 2) np=3
    fd 2 "${steps[@]}" --checkpoint-every 10 --checkpoint-dir "$d" --test-signal 1,12,term
    rc=$?
    local stopped
    stopped=$(grep -c "fdmini: stopped by SIGTERM after step" "$work/last.log")
    fd "$np" "${steps[@]}" "${more[@]}" --checkpoint-every 10 --checkpoint-dir "$d" --restart auto --dump "$work/d.raw"
    if [ $rc -eq 5 ] && [ "$stopped" -eq 1 ] && grep -q "verification: PASS" "$work/last.log" && cmp -s "$work/d.raw" "$work/ck-ref-$op.raw"; then
      ok "checkpoints: $op, SIGTERM on rank 1 of 2: exit 5, one line; continued on $np ranks (${more[*]}): bitwise equal"
    else
      bad "checkpoints: $op stop and restart (first run exit $rc, $stopped stop lines)"; tail -20 "$work/last.log" >> "$OUT/tests.log"
    fi
    # the GPU's checkpoint continued by the host backend, and the host's by the GPU
    d=$work/ck-g2h-$op
    fd 1 "${steps[@]}" --checkpoint-every 30 --checkpoint-dir "$d" --test-signal 0,30,usr1 > /dev/null
    timeout 300 "$SYS_RUN" -n 2 "$bin/fdmini-host" --report full --progress 0 "${steps[@]}" --checkpoint-every 30 --checkpoint-dir "$d" \
      --restart auto --dump "$work/d.raw" > "$work/host.log" 2>&1
    if grep -q "restart     from $d/ckpt_" "$work/host.log" && grep -q "verification: PASS" "$work/host.log" &&
      cmp -s "$work/d.raw" "$work/ck-ref-$op.raw"; then
      ok "checkpoints: $op, the GPU's checkpoint continued by the host backend on 2 ranks: bitwise equal to the GPU run"
    else
      bad "checkpoints: $op GPU to host"; tail -20 "$work/host.log" >> "$OUT/tests.log"
      python3 -c "import sys, numpy as np; g, h = (np.fromfile(p, dtype=np.float64) for p in sys.argv[1:3]); print('  GPU to host: max |diff| / max |u| =', np.abs(g - h).max() / np.abs(g).max() if g.size == h.size else 'sizes differ')" \
        "$work/ck-ref-$op.raw" "$work/d.raw" >> "$OUT/tests.log" 2>&1
    fi
    d=$work/ck-h2g-$op
    timeout 300 "$SYS_RUN" -n 1 "$bin/fdmini-host" --report full --progress 0 "${steps[@]}" --dump "$work/ck-host-$op.raw" > /dev/null 2>&1
    timeout 300 "$SYS_RUN" -n 2 "$bin/fdmini-host" --report full --progress 0 "${steps[@]}" --checkpoint-every 30 --checkpoint-dir "$d" \
      --test-signal 0,30,usr1 > "$work/host.log" 2>&1
    fd 1 "${steps[@]}" --checkpoint-every 30 --checkpoint-dir "$d" --restart auto --dump "$work/d.raw"
    if grep -q "restart     from $d/ckpt_" "$work/last.log" && cmp -s "$work/d.raw" "$work/ck-host-$op.raw"; then
      ok "checkpoints: $op, the host's checkpoint continued by the GPU: bitwise equal to the host run"
    else
      bad "checkpoints: $op host to GPU"; tail -20 "$work/last.log" >> "$OUT/tests.log"
    fi
  done
}

# The cross-device cases alone (issue 49), as run_tests runs them on 2 or more GPUs
# run_signalled: the signalled cases alone (under MPS, ranks sharing one GPU; the deep halos'
# exchange launches among them) after the region tests (memcheck too) and their 1-GPU
# references
run_signalled() {
  local op
  log "== signalled cases on one of $ngpu x $device ($(date -u +%FT%TZ))"
  if "$bin/test_gpu_regions" >> "$OUT/gpu-kernel-tests.log" 2>&1; then ok "test_gpu_regions: $(tail -1 "$OUT/gpu-kernel-tests.log")"; else bad "test_gpu_regions: $(tail -1 "$OUT/gpu-kernel-tests.log")"; fi
  if compute-sanitizer --tool memcheck --leak-check full --error-exitcode 1 "$bin/test_gpu_regions" --quick >> "$OUT/gpu-kernel-tests.log" 2>&1; then
    ok "test_gpu_regions --quick under compute-sanitizer memcheck: 0 errors"; else bad "test_gpu_regions memcheck"; fi
  for op in laplacian heat jacobi wave; do
    if fd 1 --op "$op" --global 130,97,65 --iters 12 --warmup 1 --dump "$work/ref-$op.raw" &&
      grep -q "verification: PASS" "$work/last.log"; then ok "1 GPU $op PASS"; else bad "1 GPU $op"; fi
  done
  CUDA_VISIBLE_DEVICES=0 signalled_cases
  log "signalled cases: $pass passed, $fail failed"
}

# nodes_case NAME NP K [FDMINI_ARGS...]: --halo-path proxy with NP ranks as NP / K emulated nodes
# (--test-node-ranks K) under MPS, every pass one launch whose off-node faces go through the
# proxy: PASS, the report's proxy path and signalled line, the dump bitwise equal to 1 GPU's
# (the same options on 1 GPU); NAME chains: the report's line of passes run in chains too
nodes_case() {
  local name=$1 np=$2 k=$3
  local ref="$work/ref-$name.raw"
  shift 3
  rm -f "$work/d.raw" "$ref"
  # the reference: 1 GPU, the same options (deep halos, fused passes, velocities)
  fd 1 --global 130,97,65 --iters 12 --warmup 1 "$@" --dump "$ref"
  fd "$np" --global 130,97,65 --iters 12 --warmup 1 --test-node-ranks "$k" --halo-path proxy "$@" --dump "$work/d.raw"
  local rc=$?
  # chains: with graphs on and enough passes, passes with proxied faces run in chains
  if [ "$name" = chains ] && ! grep -q "^ *[1-9][0-9]* of the timed passes ran in chains that hold their exchanges" "$work/last.log"; then rc=96; fi
  if [ $rc -eq 0 ] && grep -q "verification: PASS" "$work/last.log" && grep -q "^  halo        path proxy " "$work/last.log" &&
    grep -qE "$SIG_LINE" "$work/last.log" && cmp -s "$work/d.raw" "$ref"; then
    ok "nodes: $name: $np ranks as $((np / k)) nodes, proxy, $*: PASS, bitwise equal to 1 GPU"
  else
    bad "nodes: $name: $np ranks as $((np / k)) nodes, proxy, $* (rc $rc)"
    tail -20 "$work/last.log" >> "$OUT/tests.log"
  fi
}

# nodes_fault KIND NP K [FDMINI_ARGS...]: a halo fault through the proxy must exit 1 with FAIL
nodes_fault() {
  local kind=$1 np=$2 k=$3
  shift 3
  fd "$np" --global 130,97,65 --iters 12 --warmup 1 --test-node-ranks "$k" --halo-path proxy "$@" --test-inject-fault="$kind"
  local rc=$?
  if [ $rc -eq 1 ] && grep -q "verification: FAIL" "$work/last.log" && grep -q "^  halo        path proxy " "$work/last.log"; then
    ok "nodes: $kind fault through the proxy, $np ranks as $((np / k)) nodes, $*: exit 1, FAIL"
  else
    bad "nodes: $kind fault through the proxy, $np ranks as $((np / k)) nodes, $* (rc $rc; expected 1, FAIL, path proxy)"
    tail -20 "$work/last.log" >> "$OUT/tests.log"
  fi
}

# nodes_cases: issue 56 on one GPU under MPS, the nodes emulated (--test-node-ranks): every
# operator through the off-node proxy on 2 ranks as 2 nodes and 8 ranks as 8 nodes, 2 x 4 and
# 4 x 2, graphs on and off, passes in chains (graphs on, 100 steps), deep halos, staged MPI (the proxy's slots in host memory), bitwise
# equal to 1 GPU; the exchange, zero, shell and order faults failing through it; --test-delays
# bitwise; deep halos with the start-up's trials three times (the first contact); --test-stall
# ending with exit 3 and nothing left running, and, in a run continued from checkpoints, with
# them unchanged (no checkpoint after a stall); CUDA_MODULE_LOADING=LAZY in
# the environment (fdmini loads every kernel at start-up all the same); auto's path trial with
# the proxy among the candidates, and with --fuse auto the other steps per pass; compute-sanitizer memcheck on 2 ranks as 2 nodes, passes in chains (MPS off)
nodes_cases() {
  local op k t0 rc el n left fd_timeout=150
  mps_up || log "note: MPS did not start"
  for op in laplacian heat jacobi wave; do
    nodes_case every-op 2 1 --op "$op" --graphs on
    nodes_case every-op 8 1 --op "$op" --graphs off
    nodes_case every-op 8 4 --op "$op" --graphs on
  done
  # graphs on and 100 steps: the passes run in chains (one graph of up to 16 passes), the host
  # serving the proxy while it waits for the chain before
  for op in laplacian heat jacobi; do nodes_case chains 8 4 --op "$op" --graphs on --iters 100; done
  nodes_case chains 2 1 --op heat --graphs on --iters 100
  nodes_case chains 8 1 --op jacobi --graphs on --iters 100
  nodes_case two-layer-wave 8 2 --op wave --velocity 1.5,3
  nodes_case deep 8 4 --op heat --halo-width 4 --fuse 2 --warmup 4 --iters 16
  nodes_case deep 8 1 --op jacobi --halo-width 3 --fuse 3 --warmup 3 --iters 12
  nodes_case deep 2 1 --op wave --halo-width 2 --warmup 2 --iters 12
  # the first message between two ranks' device buffers inside a waiting launch stalled the
  # first trial with the proxy in about 1 run of 12 before proxy_first_contact: three in a row
  for k in 1 2 3; do nodes_case first-contact 8 4 --op heat --halo-width 4 --fuse auto --warmup 4 --iters 16; done
  nodes_case staged 8 2 --op heat --mpi-gpu staged
  nodes_case delays 8 4 --op heat --test-delays
  for k in exchange zero shell order; do nodes_fault "$k" 8 4 --op heat; done
  nodes_fault exchange 8 1 --op wave --halo-width 2
  # a rank that stops: exit 3 on every rank with the line, within the 2-s waits
  t0=$SECONDS
  fd_timeout=60 fd 8 --op heat --global 64,64,64 --iters 20 --warmup 2 --test-node-ranks 4 --halo-path proxy --test-stall 1
  rc=$?
  el=$((SECONDS - t0))
  n=$(grep -c "waited more than" "$work/last.log")
  if [ $rc -eq 3 ] && [ "$n" -ge 1 ]; then
    ok "nodes: --test-stall 1 through the proxy, 8 ranks as 2 nodes: exit 3 after $el s: $(grep -m1 "waited more than" "$work/last.log" | cut -c1-140)"
  else
    bad "nodes: --test-stall 1 through the proxy: rc $rc after $el s, $n lines"
    tail -20 "$work/last.log" >> "$OUT/tests.log"
  fi
  sleep 2
  left=$(pgrep -f -- "$bin/fdmini-aware" | tr '\n' ' ')
  [ -z "$left" ] || bad "nodes: --test-stall: processes still running after it ended: $left"
  # no checkpoint after a stall: a run continued from sound checkpoints (a stop wrote them)
  # ends at its first checkpoint step with the stall's line, exit 3, the checkpoints unchanged
  d=$work/ck-stall
  rm -rf "$d" && mkdir -p "$d"
  ckg=64,64,64
  ck=(--op heat --global "$ckg" --iters 40 --warmup 2 --checkpoint-every 8 --checkpoint-dir "$d"
    --test-node-ranks 1 --halo-path proxy --graphs on)
  fd_timeout=60 fd 2 "${ck[@]}" --test-signal 0,16,term
  rc1=$?
  before=$(cd "$d" && sha256sum -- * 2> /dev/null)
  fd_timeout=60 fd 2 "${ck[@]}" --restart auto --test-stall 1
  rc=$?
  if [ $rc1 -eq 5 ] && [ -n "$before" ] && [ $rc -eq 3 ] && grep -q "waited more than 2 s for rank 1" "$work/last.log" &&
    [ "$(cd "$d" && sha256sum -- *)" = "$before" ]; then
    ok "nodes: a stall in a run continued from checkpoints, 2 ranks as 2 nodes, proxy: exit 3, $(wc -l <<< "$before") checkpoints unchanged"
  else
    bad "nodes: a stall in a continued run: rc $rc1 then $rc (expected 5, 3), checkpoints: $(cd "$d" && echo *)"
    tail -20 "$work/last.log" >> "$OUT/tests.log"
  fi
  # lazy module loading asked for: fdmini sets eager loading before the runtime starts
  CUDA_MODULE_LOADING=LAZY nodes_case lazy-loading-asked 2 1 --op heat
  # auto: the path trial weighs the proxy
  fd 8 --op heat --global 128,128,128 --iters 200 --test-node-ranks 4
  if grep -q "verification: PASS" "$work/last.log" && grep -qE "^  path trial .*signalled \(IPC and the proxy\)" "$work/last.log"; then
    ok "nodes: auto, 8 ranks as 2 nodes, 128^3: $(grep -o 'path trial.*' "$work/last.log" | cut -c1-200)"
  else
    bad "nodes: auto, 8 ranks as 2 nodes: no path trial with the proxy"
    tail -20 "$work/last.log" >> "$OUT/tests.log"
  fi
  # auto with --fuse auto: the paths without the proxy try their own steps per pass too
  fd 2 --op heat --global 128,128,128 --iters 200 --test-node-ranks 1 --halo-width 4 --fuse auto
  if grep -q "verification: PASS" "$work/last.log" && grep -q "^  path trial .*own kernel, steps per pass and graphs setting too" "$work/last.log"; then
    ok "nodes: auto --halo-width 4 --fuse auto, 2 ranks as 2 nodes, 128^3: $(grep -o 'path trial.*' "$work/last.log" | cut -c1-140); $(grep -m1 -o 'fuse        [0-9]* steps\? per pass' "$work/last.log")"
  else
    bad "nodes: auto --halo-width 4 --fuse auto, 2 ranks as 2 nodes: no path trial with the other steps per pass"
    tail -20 "$work/last.log" >> "$OUT/tests.log"
  fi
  mps_down
  sleep 1
  local csan=/usr/local/cuda/bin/compute-sanitizer
  [ -x "$csan" ] || csan=compute-sanitizer
  # (the CUDA-aware Open MPI's own failed cuMemHostRegister of its shared segment is an API
  # error of that library, not of fdmini: --report-api-errors no; memory errors still count)
  timeout -k 15 300 "$AWARE_RUN" -n 2 --bind-to none "$csan" --tool memcheck --report-api-errors no --error-exitcode 9 \
    "$bin/fdmini-aware" --report full --progress 0 --op heat --global 64,64,64 --iters 40 --warmup 1 --tune off \
    --graphs on --test-node-ranks 1 --halo-path proxy > "$work/last.log" 2>&1
  rc=$?
  cat "$work/last.log" >> "$OUT/sanitizer-nodes.log"
  n=$(grep -c "ERROR SUMMARY: 0 errors" "$work/last.log")
  if [ $rc -eq 0 ] && [ "$n" -eq 2 ] && grep -q "^  halo        path proxy " "$work/last.log" &&
    grep -q "^ *[1-9][0-9]* of the timed passes ran in chains that hold their exchanges" "$work/last.log"; then
    ok "nodes: compute-sanitizer memcheck, 2 ranks as 2 nodes, proxy, heat 64^3, passes in chains: 0 errors"
  else
    bad "nodes: compute-sanitizer memcheck, 2 ranks as 2 nodes, proxy, chains: rc $rc, $n of 2 ranks with 0 errors"
    tail -30 "$work/last.log" >> "$OUT/tests.log"
  fi
}

run_nodes() {
  log "== emulated nodes and the off-node proxy on one of $ngpu x $device ($(date -u +%FT%TZ))"
  CUDA_VISIBLE_DEVICES=0 nodes_cases
  log "nodes cases: $pass passed, $fail failed"
}

run_xdev() {
  log "== cross-device tests (signalled passes between GPUs) on $ngpu x $device ($(date -u +%FT%TZ))"
  nvidia-smi topo -m >> "$OUT/tests.log" 2>&1
  xdev_cases
}

# run_tests [0]: the tests; with 0 (run_node.sh base) all but xdev_cases, so that the two
# halves fit calls of a bounded time (base, then xdev)
run_tests() {
  local with_xdev=${1:-1}
  log "== multi-GPU tests on $ngpu x $device ($(date -u +%FT%TZ))"
  nvidia-smi topo -m >> "$OUT/tests.log" 2>&1
  # the single-GPU kernel tests (tests/gpu) and a memcheck run
  if "$bin/test_gpu_kernels" >> "$OUT/gpu-kernel-tests.log" 2>&1; then ok "test_gpu_kernels: $(tail -1 "$OUT/gpu-kernel-tests.log")"; else bad "test_gpu_kernels: $(tail -1 "$OUT/gpu-kernel-tests.log")"; fi
  if "$bin/test_gpu_regions" >> "$OUT/gpu-kernel-tests.log" 2>&1; then ok "test_gpu_regions: $(tail -1 "$OUT/gpu-kernel-tests.log")"; else bad "test_gpu_regions: $(tail -1 "$OUT/gpu-kernel-tests.log")"; fi
  if compute-sanitizer --tool memcheck --leak-check full --error-exitcode 1 "$bin/test_gpu_regions" --quick >> "$OUT/gpu-kernel-tests.log" 2>&1; then
    ok "test_gpu_regions --quick under compute-sanitizer memcheck: 0 errors"; else bad "test_gpu_regions memcheck"; fi
  if compute-sanitizer --tool memcheck --leak-check full --error-exitcode 1 "$bin/test_gpu_kernels" --quick >> "$OUT/gpu-kernel-tests.log" 2>&1; then
    ok "test_gpu_kernels --quick under compute-sanitizer memcheck: 0 errors"; else bad "test_gpu_kernels memcheck"; fi
  local size=130,97,65 op cfg np procs mode grid why
  # the single-step autotune: its closest candidates confirmed in loop trials, the fastest there
  # chosen (check_autotune.py reads the record), on one rank and on eight (one rank's block each)
  for cfg in "1 1,1,1 128,128,128" "8 2,2,2 256,256,256"; do
    read -r np procs grid <<< "$cfg"
    if fd "$np" --procs "$procs" --op heat --global "$grid" --iters 20 --json "$work/tune.json" &&
      why=$(python3 bench/multigpu/check_autotune.py "$work/tune.json" 2>&1); then
      ok "autotune on $np rank(s), $grid: $why"
    else
      bad "autotune on $np rank(s), $grid: ${why:-the run failed}"
      tail -20 "$work/last.log" >> "$OUT/tests.log"
    fi
    why=
  done
  for op in laplacian heat jacobi wave; do
    if fd 1 --op "$op" --global $size --iters 12 --warmup 1 --dump "$work/ref-$op.raw" &&
      grep -q "verification: PASS" "$work/last.log"; then ok "1 GPU $op PASS"; else bad "1 GPU $op"; cat "$work/last.log" >> "$OUT/tests.log"; fi
    # the GPU equals the host backend bit for bit, initial sine modes included (issue 25)
    gpu_host_equal "$op" $size 12 1
    gpu_host_equal "$op" 131,97,77 24 0
    if [ "$ngpu" -lt 2 ]; then
      # one GPU: ranks share it (as --oversubscribe on a workstation); every path still
      # exchanges faces (IPC between processes of one device, GPU-aware and staged MPI)
      for cfg in "2 1,1,2 ipc" "2 1,1,2 aware" "2 1,1,2 staged" "4 2,2,1 ipc" "8 2,2,2 aware"; do
        read -r np procs mode <<< "$cfg"
        case_run "$np" "$procs" "$mode" "$op"
      done
      graph_cases "$op"
      [ "$op" = laplacian ] || deep_cases "$op"
      [ "$op" = wave ] || chain_cases "$op"
      continue
    fi
    # IPC: 2 ranks on 2 GPUs, 4 ranks on 2 (or 4) GPUs (x, y and z faces; on 2 GPUs ranks
    # share them); heat and wave (whose inputs change every step, so stale ghosts show) also
    # through GPU-aware and staged MPI, and 8 ranks
    local cfgs=("2 1,1,2 ipc" "4 2,2,1 ipc" "4 1,2,2 ipc")
    case $op in
    heat) cfgs+=("4 2,2,1 aware" "4 2,2,1 staged" "8 2,2,2 ipc") ;;
    wave) cfgs+=("2 1,1,2 aware" "2 1,1,2 staged" "2 2,1,1 ipc") ;;
    esac
    # one rank per GPU on 4 GPUs and 8 ranks on 4 GPUs (as srun -n 8 on one node), every
    # operator, through the IPC path and GPU-aware and staged MPI
    [ "$ngpu" -ge 4 ] && cfgs+=("4 2,2,1 aware" "4 4,1,1 staged" "8 2,2,2 aware" "8 2,2,2 staged")
    for cfg in "${cfgs[@]}"; do
      read -r np procs mode <<< "$cfg"
      case_run "$np" "$procs" "$mode" "$op"
    done
    [ "$op" = laplacian ] || deep_cases "$op"
    [ "$op" = wave ] || chain_cases "$op"
  done
  order_cases
  [ "$ngpu" -lt 2 ] && signalled_cases
  # 2 or more GPUs: ranks on different GPUs exchanging inside the pass's launch (issue 49)
  [ "$ngpu" -ge 2 ] && [ "$with_xdev" = 1 ] && xdev_cases
  # every PASS above ran with the ghosts an exchange fills NaN until it does; with one unpack
  # dropped every operator must FAIL
  fault_cases
  # compute-sanitizer memcheck of 2 ranks with graphs on (replayed passes, chains, packs); staged
  # MPI, so that Open MPI's own CUDA calls stay out of the report (its cuMemHostRegister of a
  # device pointer in mca_common_cuda_is_gpu_buffer, under the start-up's latency floor L,
  # fails with "invalid argument": bench/results/multigpu/README.md)
  timeout 300 "$AWARE_RUN" -n 2 --bind-to none compute-sanitizer --tool memcheck --error-exitcode 9 \
    "$bin/fdmini-aware" --report full --progress 0 --op heat --global 40,33,21 --procs 1,1,2 --iters 20 --warmup 2 --mpi-gpu staged \
    --halo-width 2 --graphs on > "$work/last.log" 2>&1
  rc=$?
  cat "$work/last.log" >> "$OUT/sanitizer-graphs.log"
  if [ $rc -eq 0 ] && [ "$(grep -c "ERROR SUMMARY: 0 errors" "$work/last.log")" -eq 2 ] && grep -q "graphs      on" "$work/last.log"; then
    ok "compute-sanitizer memcheck, 2 ranks, --halo-width 2 --graphs on: 0 errors"; else bad "compute-sanitizer graphs (rc $rc)"; tail -30 "$work/last.log" >> "$OUT/tests.log"; fi
  # compute-sanitizer memcheck on 4 ranks of one node through the IPC path with deep halos
  # (faces and edges of width 2, pulled) and fused passes, replayed in chains that hold the
  # exchanges (72 steps: 36 windows, so that not every one is sampled)
  timeout 300 "$AWARE_RUN" -n 4 --bind-to none compute-sanitizer --tool memcheck --error-exitcode 9 \
    "$bin/fdmini-aware" --report full --progress 0 --op heat --global 40,33,21 --procs 2,2,1 --iters 72 --warmup 1 --mpi-gpu staged \
    --halo-path ipc --halo-width 2 --fuse 2 --graphs on > "$work/last.log" 2>&1
  rc=$?
  cat "$work/last.log" >> "$OUT/sanitizer-ipc.log"
  if [ $rc -eq 0 ] && [ "$(grep -c "ERROR SUMMARY: 0 errors" "$work/last.log")" -eq 4 ] && grep -q "deep halo   width 2" "$work/last.log" &&
    grep -q "of the timed passes ran in chains that hold their exchanges" "$work/last.log"; then
    ok "compute-sanitizer memcheck, 4 ranks, ipc, --halo-width 2 --fuse 2 --graphs on (chains with exchanges): 0 errors"; else bad "compute-sanitizer deep halo (rc $rc)"; tail -30 "$work/last.log" >> "$OUT/tests.log"; fi
  # compute-sanitizer initcheck: no read of device memory nothing wrote, through the start-up's
  # copies, floors and autotune (which read the pool before its first fill until the fields were
  # filled first), every operator, fused passes, and the proxy with its slots in host memory.
  # One process, or ranks whose faces cross no process's device memory by IPC: initcheck cannot
  # see a write made by another process, so a read of an IPC-mapped buffer (fdmini's pulls, the
  # CUDA-aware MPI's smcuda gets) counts as uninitialised (bench/results/README.md, "initcheck")
  for c in "1|--op heat --global 40,36,33" "1|--op wave --global 33,31,29 --tune off" \
    "1|--op jacobi --global 33,31,29 --halo-width 3 --fuse 3 --tune off" \
    "2|--op jacobi --global 64,48,40 --tune off --test-node-ranks 1 --halo-path proxy --mpi-gpu staged --graphs on"; do
    IFS='|' read -r np args <<<"$c"
    read -r -a a <<<"$args"
    timeout -k 10 300 "$AWARE_RUN" -n "$np" --bind-to none compute-sanitizer --tool initcheck --report-api-errors no --error-exitcode 9 \
      "$bin/fdmini-aware" --report full --progress 0 --iters 6 --warmup 1 "${a[@]}" > "$work/last.log" 2>&1
    rc=$?
    cat "$work/last.log" >> "$OUT/sanitizer-initcheck.log"
    if [ $rc -eq 0 ] && [ "$(grep -c "ERROR SUMMARY: 0 errors" "$work/last.log")" -eq "$np" ] && grep -q "verification: PASS" "$work/last.log"; then
      ok "compute-sanitizer initcheck, $np rank(s), $args: 0 errors"; else bad "compute-sanitizer initcheck, $np rank(s), $args (rc $rc)"; tail -30 "$work/last.log" >> "$OUT/tests.log"; fi
  done
  if [ "$ngpu" -ge 2 ]; then
    # the distribution's MPI is not CUDA-aware: aware is refused on every rank, auto stages;
    # the IPC path needs no GPU-aware MPI
    timeout 120 "$SYS_RUN" -n 2 --bind-to none "$bin/fdmini-sys" --report full --global 64,64,64 --mpi-gpu aware > "$work/last.log" 2>&1
    rc=$?
    if [ $rc -eq 2 ] && grep -q "this MPI is not GPU-aware" "$work/last.log"; then ok "--mpi-gpu aware on a non-CUDA-aware MPI: exit 2 with a clear error"; else bad "aware on non-aware MPI (rc $rc)"; cat "$work/last.log" >> "$OUT/tests.log"; fi
    timeout 120 "$SYS_RUN" -n 2 --bind-to none "$bin/fdmini-sys" --report full --op heat --global 130,97,65 --iters 12 --warmup 1 --halo-path mpi --dump "$work/d.raw" > "$work/last.log" 2>&1
    if grep -q "staged through pinned host memory" "$work/last.log" && grep -q "verification: PASS" "$work/last.log" && cmp -s "$work/d.raw" "$work/ref-heat.raw"; then
      ok "--mpi-gpu auto on a non-CUDA-aware MPI: staged, PASS, bitwise equal"; else bad "auto on non-aware MPI"; cat "$work/last.log" >> "$OUT/tests.log"; fi
    # Cray MPICH's variable exported under this (not Cray, not CUDA-aware) Open MPI changes
    # nothing: auto stays staged, aware is still refused (base/mpi_gpu.c)
    MPICH_GPU_SUPPORT_ENABLED=1 timeout 120 "$SYS_RUN" -n 2 --bind-to none -x MPICH_GPU_SUPPORT_ENABLED "$bin/fdmini-sys" --report full --op heat --global 130,97,65 --iters 12 --warmup 1 --halo-path mpi --dump "$work/d.raw" > "$work/last.log" 2>&1
    if grep -q "staged through pinned host memory" "$work/last.log" && grep -q "verification: PASS" "$work/last.log" && cmp -s "$work/d.raw" "$work/ref-heat.raw"; then
      ok "MPICH_GPU_SUPPORT_ENABLED=1 on a non-CUDA-aware Open MPI: --mpi-gpu auto stays staged, PASS, bitwise equal"; else bad "auto with MPICH_GPU_SUPPORT_ENABLED=1 on non-aware MPI"; cat "$work/last.log" >> "$OUT/tests.log"; fi
    MPICH_GPU_SUPPORT_ENABLED=1 timeout 120 "$SYS_RUN" -n 2 --bind-to none -x MPICH_GPU_SUPPORT_ENABLED "$bin/fdmini-sys" --report full --global 64,64,64 --mpi-gpu aware > "$work/last.log" 2>&1
    rc=$?
    if [ $rc -eq 2 ] && grep -q "this MPI is not GPU-aware" "$work/last.log"; then
      ok "MPICH_GPU_SUPPORT_ENABLED=1 on a non-CUDA-aware Open MPI: --mpi-gpu aware still refused"; else bad "aware with MPICH_GPU_SUPPORT_ENABLED=1 on non-aware MPI (rc $rc)"; cat "$work/last.log" >> "$OUT/tests.log"; fi
    timeout 120 "$SYS_RUN" -n 4 --bind-to none "$bin/fdmini-sys" --report full --op jacobi --global 130,97,65 --iters 12 --warmup 1 --procs 2,2,1 --dump "$work/d.raw" > "$work/last.log" 2>&1
    if grep -q "halo        path ipc " "$work/last.log" && grep -q "verification: PASS" "$work/last.log" && cmp -s "$work/d.raw" "$work/ref-jacobi.raw"; then
      ok "--halo-path auto on a non-CUDA-aware MPI: IPC path, PASS, bitwise equal"; else bad "ipc on non-aware MPI"; cat "$work/last.log" >> "$OUT/tests.log"; fi
    # the default path on a CUDA-aware MPI (--halo-path auto): the path trial takes IPC or every
    # face through MPI, whichever was faster; either way PASS and bitwise equal
    fd 4 --op heat --global 130,97,65 --iters 12 --warmup 1 --procs 2,2,1 --dump "$work/d.raw"
    if grep -q "halo        path \(ipc\|mpi\) " "$work/last.log" && grep -q "verification: PASS" "$work/last.log" && cmp -s "$work/d.raw" "$work/ref-heat.raw"; then
      ok "--halo-path auto (default) on a CUDA-aware MPI: path $(grep -o 'halo        path [a-z]*' "$work/last.log" | awk '{print $3}') after the path trial, PASS, bitwise equal"; else bad "auto on a CUDA-aware MPI"; cat "$work/last.log" >> "$OUT/tests.log"; fi
    # each rank sees only its own GPU: a neighbour's device is out of reach. ipc is refused on
    # every rank (exit 2, one line), auto falls back to MPI
    # shellcheck disable=SC2016 # expanded by the wrapper, per rank
    printf '#!/bin/sh\nexport CUDA_VISIBLE_DEVICES=$OMPI_COMM_WORLD_LOCAL_RANK\nexec "$@"\n' > "$work/own-gpu.sh"
    chmod +x "$work/own-gpu.sh"
    timeout 120 "$AWARE_RUN" -n 2 --bind-to none "$work/own-gpu.sh" "$bin/fdmini-aware" --report full --progress 0 --global 64,64,64 --halo-path ipc > "$work/last.log" 2>&1
    rc=$?
    if [ $rc -eq 2 ] && [ "$(grep -c "fdmini: error:" "$work/last.log")" -eq 1 ] && grep -q "^fdmini: error: --halo-path ipc: each rank on host .* sees only its own GPU (1 visible device" "$work/last.log"; then
      ok "--halo-path ipc with the neighbour's GPU invisible: exit 2, one clear error"; else bad "ipc out of reach (rc $rc)"; cat "$work/last.log" >> "$OUT/tests.log"; fi
    timeout 120 "$AWARE_RUN" -n 2 --bind-to none "$work/own-gpu.sh" "$bin/fdmini-aware" --report full --progress 0 --op heat --global 130,97,65 --iters 12 --warmup 1 --dump "$work/d.raw" > "$work/last.log" 2>&1
    if grep -q "halo        path mpi " "$work/last.log" && grep -q "verification: PASS" "$work/last.log" && cmp -s "$work/d.raw" "$work/ref-heat.raw"; then
      ok "--halo-path auto with the neighbour's GPU invisible: MPI path, PASS, bitwise equal"; else bad "auto out of reach"; cat "$work/last.log" >> "$OUT/tests.log"; fi
    # compute-sanitizer on 2 ranks (memcheck) on the IPC path. Staged MPI, so that Open MPI's
    # own CUDA calls stay out of the report
    # (bench/results/multigpu/README.md, its last finding): every face goes by IPC anyway,
    # and API errors are reported.
    timeout 150 "$AWARE_RUN" -n 2 --bind-to none compute-sanitizer --tool memcheck --error-exitcode 9 \
      "$bin/fdmini-aware" --report full --progress 0 --op jacobi --global 40,33,21 --iters 3 --warmup 1 --mpi-gpu staged --halo-path ipc > "$work/last.log" 2>&1
    rc=$?
    cat "$work/last.log" >> "$OUT/sanitizer-ipc.log"
    # (the path trial takes flags or signalled passes, whichever ran faster under the tool)
    if [ $rc -eq 0 ] && [ "$(grep -c "ERROR SUMMARY: 0 errors" "$work/last.log")" -eq 2 ] &&
      grep -qE "IPC faces  *(pulled|read inside the pass's launch|unpacked from the slots)" "$work/last.log"; then
      ok "compute-sanitizer memcheck, 2 ranks, ipc ($(grep -o 'took [A-Za-z ]*$' "$work/last.log")): 0 errors"; else bad "compute-sanitizer ipc (rc $rc)"; tail -30 "$work/last.log" >> "$OUT/tests.log"; fi
  fi
  ckpt_cases
  log "multi-GPU tests: $pass passed, $fail failed"
}

# The halo-path benchmarks (issue 4: 2 MiB faces against the peer bandwidth of the same run,
# the share of the exchange hidden at 512^3 per GPU), on 2 GPUs: peer_bandwidth, then fdmini
# JSON records, 3 repeats of
#   halo2m-PATH      2 ranks (1,1,2) of 512^3, --no-overlap: one 2 MiB face each way per step
#   thin2m-PATH      2 ranks (1,1,2) of 512x512x16, --no-overlap: the same faces, a short step
#   weak512-1gpu     1 GPU, 512^3
#   weak512-PATH     2 GPUs (1,1,2) of 512^3, overlap, --baseline
#   weak256-PATH     2 GPUs (1,1,2) of 256^3, overlap, --baseline (one repeat)
# with PATH mpi (GPU-aware MPI) and ipc (faces pulled, ordered by flags).
# summarize.py: the table.
run_halo() {
  local rec=$OUT/records r path
  mkdir "$rec" || exit 1 # absent: checked at the start
  echo "== halo-path benchmarks on $ngpu x $device ($(date -u +%FT%TZ))" | tee -a "$OUT/halo.log"
  "$bin/peer_bandwidth" > "$rec/peer_bandwidth.txt" 2>&1 # summarize.py prints it into halo.log
  for r in 1 2 3; do
    fd 1 --local 512,512,512 --iters 100 --json "$rec/weak512-1gpu-r$r.json" || bad "weak512 1 GPU r$r"
    for path in mpi ipc; do
      local args=(--halo-path "$path" --mpi-gpu aware)
      fd 2 --local 512,512,512 --procs 1,1,2 --no-overlap --iters 100 "${args[@]}" --json "$rec/halo2m-$path-r$r.json" || bad "halo2m $path r$r"
      fd 2 --local 512,512,16 --procs 1,1,2 --no-overlap --iters 1000 "${args[@]}" --json "$rec/thin2m-$path-r$r.json" || bad "thin2m $path r$r"
      fd 2 --local 512,512,512 --procs 1,1,2 --baseline --iters 100 "${args[@]}" --json "$rec/weak512-$path-r$r.json" || bad "weak512 $path r$r"
      [ "$r" -eq 1 ] && { fd 2 --local 256,256,256 --procs 1,1,2 --baseline --iters 200 "${args[@]}" --json "$rec/weak256-$path-r$r.json" || bad "weak256 $path r$r"; }
    done
  done
  python3 bench/multigpu/summarize.py "$rec" 2>&1 | tee -a "$OUT/halo.log"
  tar -C "$OUT" -czf "$OUT/records.tar.gz" records && rm -rf "$rec"
}

# The default path (no --halo-path, no --mpi-gpu) over 1, 2 and 4 GPUs at 512^3 per GPU, 3
# repeats with --baseline; then, on 4 GPUs (1,2,2), the IPC path against GPU-aware MPI, 3
# repeats.
run_defaults() {
  local res=$work/studies-default rec=$OUT/records-4gpu r v
  mkdir -p "$res"
  echo "== default path and 4-GPU IPC variants on $ngpu x $device ($(date -u +%FT%TZ))" | tee -a "$OUT/defaults.log"
  PATH=/opt/fdmini-ompi/bin:$PATH python3 bench/scaling/study.py run --machine local --scales 1,2,4 \
    --repeats 3 --baseline --binary "$bin/fdmini-aware" --timeout 120 --launcher-args='--bind-to none' \
    --study weak --size 512,512,512 --variants overlap,no-overlap --out "$res/weak512-default" 2>&1 |
    grep -v '^\[' | tail -2 | tee -a "$OUT/defaults.log"
  tar -C "$res" -czf "$OUT/studies-default.tar.gz" .
  [ "$ngpu" -lt 4 ] && return
  mkdir "$rec" || exit 1 # absent: checked at the start
  for r in 1 2 3; do
    for v in mpi ipc; do
      fd 4 --local 512,512,512 --procs 1,2,2 --baseline --iters 100 --halo-path "$v" \
        --json "$rec/weak512x4-$v-r$r.json" || bad "weak512x4 $v r$r"
    done
  done
  python3 bench/multigpu/summarize.py "$rec" 2>&1 | grep -v '^peer' | tee -a "$OUT/defaults.log"
  tar -C "$OUT" -czf "$OUT/records-4gpu.tar.gz" records-4gpu && rm -rf "$rec"
}

for what in "$@"; do
  case $what in
  tests) run_tests ;;
  base) run_tests 0 ;;
  halo) run_halo ;;
  defaults) run_defaults ;;
  xdev) run_xdev ;;
  signalled) run_signalled ;;
  nodes) run_nodes ;;
  all) run_tests ;;
  *) echo "$usage_line" >&2; exit 2 ;; # checked at the start
  esac
done
rm -rf "$work"
[ "$fail" -eq 0 ]

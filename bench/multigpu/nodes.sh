#!/usr/bin/env bash
# nodes.sh - the off-node proxy benchmark (issue 56) on one NVIDIA GPU under MPS, the nodes
# emulated (--test-node-ranks K: each node's ranks split into groups of K that count as nodes,
# no IPC between them): heat and jacobi, one step per pass (T1) and --halo-width 4 --fuse auto
# (S4), 128^3 and 256^3 global, 2 ranks as 2 nodes, 8 ranks as 2 nodes x 4 and as 8 nodes x 1;
# in each cell today's host-driven path (--halo-path mixed: IPC inside a node, MPI between),
# the one-launch pass with the proxy (--halo-path proxy), the default (--halo-path auto), and
# the same ranks without emulation (variant none, nodes 1: every face by IPC). Each run writes
# its JSON record; nodes_table.py turns them into the CSV and the table (step, F_m, X, the
# ratios the issue's targets name).
#
# Usage: bench/multigpu/nodes.sh [t1|s4|all]    (default all; t1 and s4 fit one device call each)
# Env:   FDMINI  the cuda binary built against a CUDA-aware MPI (default .device/bin/fdmini-aware,
#                bench/multigpu/prepare.sh; or a build on the node: cmake -DFDMINI_BACKEND=cuda
#                -DMPI_C_COMPILER=/opt/fdmini-ompi/bin/mpicc)
#        MPIRUN  its launcher (default /opt/fdmini-ompi/bin/mpirun)
#        OUT     where records-nodes/, nodes.csv and nodes.md go (default /tmp/fdmini-out);
#                a part already recorded there is refused (exit 2)
#        ITERS   timed steps per run (default 400)
# Starts MPS (bench/mps.sh: nvidia-cuda-mps-control -d) unless it runs, and stops it again (gone
# before it returns) if it started it; where MPS neither runs nor starts: exit 2, nothing run.
# Results: bench/results/NVIDIA-H200-nodes.csv and .md (bench/results/README.md says how).
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
case ${1:-all} in
-h | --help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
t1) modes=(t1) ;;
s4) modes=(s4) ;;
all) modes=(t1 s4) ;;
*) echo "nodes.sh: unknown part '$1' (expected t1, s4 or all)" >&2; exit 2 ;;
esac
FDMINI=${FDMINI:-$root/.device/bin/fdmini-aware}
MPIRUN=${MPIRUN:-/opt/fdmini-ompi/bin/mpirun}
OUT=${OUT:-/tmp/fdmini-out}
ITERS=${ITERS:-400}
[ -x "$FDMINI" ] || { echo "nodes.sh: no binary '$FDMINI' (set FDMINI)" >&2; exit 2; }
[ -x "$MPIRUN" ] || { echo "nodes.sh: no launcher '$MPIRUN' (set MPIRUN)" >&2; exit 2; }
rec=$OUT/records-nodes
for m in "${modes[@]}"; do
  if compgen -G "$rec/$m-*.json" > /dev/null; then
    echo "nodes.sh: $rec already holds part $m (an earlier call's): use another OUT" >&2
    exit 2
  fi
done
# shellcheck disable=SC1091 # bench/mps.sh is checked on its own
. "$root/bench/mps.sh"
if ! mps_up; then
  echo "nodes.sh: MPS does not run and could not be started (nvidia-cuda-mps-control -d): the ranks sharing the GPU would time-slice it" >&2
  exit 2
fi
mkdir -p "$rec" || { [ "$MPS_STARTED" = 1 ] && mps_down; exit 1; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_mpi_common_cuda_warning=0
export OMPI_MCA_rmaps_base_oversubscribe=1
failed=0
# one NAME NP [ARGS...]: a run whose record is $rec/NAME.json; its report goes to $rec/NAME.log
one() {
  local name=$1 np=$2
  shift 2
  timeout -k 15 300 "$MPIRUN" -n "$np" --bind-to none "$FDMINI" --progress 0 --report full --iters "$ITERS" "$@" \
    --json "$rec/$name.json" > "$rec/$name.log" 2>&1
  local rc=$?
  if [ $rc -ne 0 ]; then
    echo "nodes.sh: $name failed (exit $rc): $(grep -m1 'error' "$rec/$name.log" | cut -c1-200)" >&2
    failed=$((failed + 1))
  fi
  printf '%-40s %s\n' "$name" "$(grep -E '^  step  ' "$rec/$name.log" | tr -s ' ')"
}
for m in "${modes[@]}"; do
  extra=()
  [ "$m" = s4 ] && extra=(--halo-width 4 --fuse auto)
  for op in heat jacobi; do
    for g in 128 256; do
      for layout in "2 1" "8 4" "8 1"; do
        read -r np k <<< "$layout"
        nodes=$((np / k))
        for v in today proxy auto; do
          path=$v
          [ "$v" = today ] && path=mixed
          one "$m-$op-$g-$np-$nodes-$v" "$np" --op "$op" --global "$g,$g,$g" "${extra[@]}" \
            --test-node-ranks "$k" --halo-path "$path"
        done
      done
      for np in 2 8; do
        one "$m-$op-$g-$np-1-none" "$np" --op "$op" --global "$g,$g,$g" "${extra[@]}"
      done
    done
  done
done
[ "$MPS_STARTED" = 1 ] && { mps_down || echo "nodes.sh: the MPS daemon it started is still there" >&2; }
python3 "$root/bench/multigpu/nodes_table.py" "$rec" --csv "$OUT/nodes.csv" --md "$OUT/nodes.md" || failed=$((failed + 1))
[ $failed -eq 0 ]

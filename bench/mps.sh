# shellcheck shell=bash
# mps.sh - sourced by the GPU node scripts: NVIDIA MPS (ranks sharing a GPU run side by side
# instead of time-slicing it) started and stopped so that the next script finds it as it is.
# `echo quit | nvidia-cuda-mps-control` returns before the daemon has gone: a script that looked
# for MPS, or tried to start it, in that moment took it as running, and the daemon then left
# (2026-12-02: a whole nodes.sh call ran its shared-GPU cells time-sliced, 10-100x slower).
#   mps_running  0 while an MPS daemon (control or server: both "nvidia-cuda-mps", the 15
#                characters the kernel keeps of a process name) runs
#   mps_up       0 where MPS runs afterwards, MPS_STARTED=1 where this call started it; a daemon
#                seen at first is given MPS_SETTLE_S (default 3) seconds to go (one quitting),
#                then taken as running (MPS_STARTED=0); 1 where none runs and it cannot start
#                (no nvidia-cuda-mps-control, or `-d` failed)
#   mps_down     quits MPS and waits until no daemon is left (at most MPS_SETTLE_S + 7 seconds);
#                1 where one is still there
mps_running() { pgrep -x nvidia-cuda-mps > /dev/null 2>&1; }

mps_wait_gone() {
  local i
  for ((i = 0; i < $1 * 5; i++)); do
    mps_running || return 0
    sleep 0.2
  done
  ! mps_running
}

mps_up() {
  # shellcheck disable=SC2034 # read by the scripts that source this
  MPS_STARTED=0
  if mps_running && ! mps_wait_gone "${MPS_SETTLE_S:-3}"; then return 0; fi
  command -v nvidia-cuda-mps-control > /dev/null 2>&1 || return 1
  nvidia-cuda-mps-control -d 2> /dev/null || return 1
  # shellcheck disable=SC2034
  MPS_STARTED=1
}

mps_down() {
  echo quit | nvidia-cuda-mps-control > /dev/null 2>&1
  mps_wait_gone $((${MPS_SETTLE_S:-3} + 7))
}

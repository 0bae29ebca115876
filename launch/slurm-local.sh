#!/usr/bin/env bash
# slurm-local.sh - a single-node Slurm (munge + slurmctld + slurmd) on this machine, so that
# `srun -n 8 ./fdmini` can be run and tested on a CI runner or a workstation without a cluster.
#
# Usage (as root):  launch/slurm-local.sh start|stop|status
#
#   start   writes /etc/slurm/slurm.conf (one node with CPUs=8 whatever the core count, thanks to
#           SlurmdParameters=config_overrides and OverSubscribe=FORCE; MpiDefault=pmix), starts
#           munged, slurmctld and slurmd, and waits until `sinfo` shows the node usable (resuming
#           it when it comes up drained, down or invalid). Running it again while the daemons are
#           up with the same configuration does nothing.
#   stop    stops slurmd, slurmctld and munged by the PIDs in their pid files.
#   status  prints sinfo (and which daemons are running).
#
# It installs nothing: the caller installs slurm-wlm and munge (tools/install-deps.sh does).
# It needs no systemd (works in containers). Environment knobs:
#   SLURM_LOCAL_TIMEOUT  seconds to wait for the node to become usable (default 60)
#   SLURM_LOCAL_CPUS     CPUs the node claims (default 8)
#   SLURM_LOCAL_FORCE=1  overwrite an /etc/slurm/slurm.conf that this script did not write
set -euo pipefail

CONF_DIR=/etc/slurm
CONF=$CONF_DIR/slurm.conf
MARKER="# written by fdmini launch/slurm-local.sh"
LOG_DIR=/var/log/slurm
CTLD_PID=/run/slurmctld.pid
SLURMD_PID=/run/slurmd.pid
MUNGE_PID=/run/munge/munged.pid
MUNGE_KEY=/etc/munge/munge.key
TIMEOUT=${SLURM_LOCAL_TIMEOUT:-60}
CPUS=${SLURM_LOCAL_CPUS:-8}
NODE=$(hostname -s)

die() {
  echo "slurm-local: error: $*" >&2
  exit 1
}
note() { echo "slurm-local: $*"; }

# proc_running PID: true when PID is a live process. A zombie does not count: in containers
# whose init does not reap, a stopped daemon can linger as one, and kill -0 still succeeds.
proc_running() {
  local state
  kill -0 "$1" 2>/dev/null || return 1
  [[ -r /proc/$1/stat ]] || return 0
  state=$(sed -n 's/^.*) \(.\).*$/\1/p' "/proc/$1/stat" 2>/dev/null || true)
  [[ $state != Z ]]
}

# pid_of FILE: the number in FILE, or nothing.
pid_of() {
  [[ -r $1 ]] && tr -dc '0-9' <"$1"
  return 0
}

# pid_alive FILE NAME: true when FILE names a running process called NAME (a stale pid file
# whose number now belongs to another program does not count).
pid_alive() {
  local pid comm
  pid=$(pid_of "$1")
  [[ -n $pid ]] && proc_running "$pid" || return 1
  [[ -r /proc/$pid/comm ]] || return 0
  comm=$(cat "/proc/$pid/comm" 2>/dev/null || true)
  [[ $comm == "$2" ]]
}

# stop_pidfile NAME FILE: TERM the process in FILE, wait up to 15 s, then KILL it.
stop_pidfile() {
  local name=$1 file=$2 pid i
  if ! pid_alive "$file" "$name"; then
    rm -f "$file"
    return 0
  fi
  pid=$(pid_of "$file")
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < 150; i++)); do
    proc_running "$pid" || break
    sleep 0.1
  done
  if proc_running "$pid"; then
    note "$name (pid $pid) ignored SIGTERM; sending SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$file"
  note "stopped $name (pid $pid)"
}

show_logs() {
  local f
  for f in "$LOG_DIR/slurmctld.log" "$LOG_DIR/slurmd.log" /var/log/munge/munged.log; do
    [[ -r $f ]] || continue
    echo "----- last lines of $f -----" >&2
    tail -n 20 "$f" >&2
  done
}

need_root() {
  [[ $(id -u) -eq 0 ]] || die "must run as root (it writes $CONF and starts the Slurm daemons)"
}

need_tools() {
  local t
  for t in munged slurmctld slurmd sinfo scontrol; do
    command -v "$t" >/dev/null 2>&1 ||
      die "'$t' not found: install slurm-wlm and munge first (tools/install-deps.sh)"
  done
}

write_conf() {
  local new
  new=$(mktemp)
  cat >"$new" <<CONF
$MARKER
# Single node, for CI and workstations. CPUs=$CPUS is claimed whatever the real core count
# (SlurmdParameters=config_overrides), and OverSubscribe=FORCE lets jobs share it.
ClusterName=fdmini-local
SlurmctldHost=$NODE(127.0.0.1)
AuthType=auth/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SlurmctldPidFile=$CTLD_PID
SlurmdPidFile=$SLURMD_PID
SlurmctldLogFile=$LOG_DIR/slurmctld.log
SlurmdLogFile=$LOG_DIR/slurmd.log
SlurmdSpoolDir=/var/spool/slurmd
StateSaveLocation=/var/spool/slurmctld
SlurmUser=root
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MpiDefault=pmix
SlurmdParameters=config_overrides
NodeName=$NODE NodeAddr=127.0.0.1 CPUs=$CPUS State=UNKNOWN
PartitionName=debug Nodes=$NODE Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE
CONF
  if [[ -e $CONF ]] && cmp -s "$new" "$CONF"; then
    rm -f "$new"
    return 1 # unchanged
  fi
  if [[ -e $CONF ]] && ! grep -qF "$MARKER" "$CONF"; then
    if [[ ${SLURM_LOCAL_FORCE:-0} != 1 ]]; then
      rm -f "$new"
      die "$CONF exists and was not written by this script; set SLURM_LOCAL_FORCE=1 to replace it (a copy is kept as $CONF.orig)"
    fi
    cp -p "$CONF" "$CONF.orig"
    note "kept the previous $CONF as $CONF.orig"
  fi
  install -m 0644 "$new" "$CONF"
  rm -f "$new"
  return 0 # changed
}

start_munge() {
  if pid_alive "$MUNGE_PID" munged; then
    return 0
  fi
  mkdir -p /run/munge /var/lib/munge /var/log/munge /etc/munge
  if [[ ! -s $MUNGE_KEY ]]; then
    note "creating $MUNGE_KEY"
    if command -v mungekey >/dev/null 2>&1; then
      mungekey --create --keyfile="$MUNGE_KEY"
    else
      dd if=/dev/urandom of="$MUNGE_KEY" bs=1 count=1024 status=none
    fi
  fi
  if id munge >/dev/null 2>&1; then
    chown munge:munge /run/munge /var/lib/munge /var/log/munge /etc/munge "$MUNGE_KEY"
    chmod 0400 "$MUNGE_KEY"
    chmod 0700 /etc/munge
    chmod 0755 /run/munge
    runuser -u munge -- munged --force --pid-file="$MUNGE_PID" ||
      die "munged did not start (see /var/log/munge/munged.log)"
  else
    chmod 0400 "$MUNGE_KEY"
    munged --force --pid-file="$MUNGE_PID" || die "munged did not start"
  fi
  note "started munged (pid $(cat "$MUNGE_PID" 2>/dev/null || echo '?'))"
}

# node_state: the node's state as sinfo prints it (idle, idle*, drain, inval, ...), or empty.
node_state() {
  sinfo -h -N -n "$NODE" -o '%t' 2>/dev/null | head -n 1 || true
}

wait_for_node() {
  local t0=$SECONDS deadline=$((SECONDS + TIMEOUT)) state='' resumed='' d
  while true; do
    state=$(node_state)
    case $state in
      idle | mix | alloc | comp)
        note "node $NODE is $state"
        return 0
        ;;
      drain* | drng* | down* | inval* | fail*)
        # ReturnToService=2 usually brings it back by itself; help it once a second.
        scontrol update nodename="$NODE" state=resume >/dev/null 2>&1 || true
        resumed=', resume tried'
        ;;
    esac
    ((SECONDS < deadline)) || break
    # A daemon that dies at start-up (bad config, port taken, ...) will not come back: say so now.
    if ((SECONDS - t0 >= 3)); then
      for d in slurmctld:$CTLD_PID slurmd:$SLURMD_PID; do
        if ! pid_alive "${d#*:}" "${d%%:*}"; then
          echo "slurm-local: error: ${d%%:*} exited during start-up" >&2
          show_logs
          exit 1
        fi
      done
    fi
    sleep 1
  done
  echo "slurm-local: error: node $NODE not usable after ${TIMEOUT}s (last sinfo state: '${state:-none}'${resumed})" >&2
  sinfo -N -l >&2 || true
  scontrol show node "$NODE" >&2 || true
  show_logs
  exit 1
}

cmd_start() {
  need_root
  need_tools
  mkdir -p "$CONF_DIR" /var/spool/slurmctld /var/spool/slurmd "$LOG_DIR"
  local changed=0
  if write_conf; then changed=1; fi
  if ((changed)) && { pid_alive "$CTLD_PID" slurmctld || pid_alive "$SLURMD_PID" slurmd; }; then
    note "$CONF changed: restarting the Slurm daemons"
    stop_pidfile slurmd "$SLURMD_PID"
    stop_pidfile slurmctld "$CTLD_PID"
  fi
  start_munge
  munge -n 2>/dev/null | unmunge >/dev/null 2>&1 ||
    { show_logs; die "munge does not work (munge -n | unmunge failed)"; }
  if ! pid_alive "$CTLD_PID" slurmctld; then
    slurmctld || { show_logs; die "slurmctld did not start"; }
    note "started slurmctld"
  fi
  if ! pid_alive "$SLURMD_PID" slurmd; then
    slurmd || { show_logs; die "slurmd did not start"; }
    note "started slurmd"
  fi
  wait_for_node
}

cmd_stop() {
  need_root
  stop_pidfile slurmd "$SLURMD_PID"
  stop_pidfile slurmctld "$CTLD_PID"
  stop_pidfile munged "$MUNGE_PID"
}

cmd_status() {
  local d f
  for d in munged:$MUNGE_PID slurmctld:$CTLD_PID slurmd:$SLURMD_PID; do
    f=${d#*:}
    if pid_alive "$f" "${d%%:*}"; then
      echo "${d%%:*}: running (pid $(pid_of "$f"))"
    else
      echo "${d%%:*}: not running"
    fi
  done
  sinfo
}

case ${1:-} in
  start) cmd_start ;;
  stop) cmd_stop ;;
  status) cmd_status ;;
  *)
    echo "usage: $0 start|stop|status" >&2
    exit 2
    ;;
esac

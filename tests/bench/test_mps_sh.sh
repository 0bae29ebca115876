#!/usr/bin/env bash
# test_mps_sh.sh - bench/mps.sh with shims for pgrep and nvidia-cuda-mps-control (no GPU): MPS
# started where none runs; a daemon still quitting waited for and MPS started afresh (the
# failure it exists for: taken as running, then gone); one that stays taken as running and not
# started again; no control program or a failing -d: mps_up fails; mps_down waits until the
# daemon has gone, and fails where it stays. bench/multigpu/nodes.sh where MPS cannot start:
# exit 2 with its line, nothing run, $OUT not created.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
# shellcheck disable=SC1091 # tests/lib/checks.sh is checked on its own
. "$root/tests/lib/checks.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# check NAME CONDITION: PASS where CONDITION (evaluated) holds, else FAIL with the last output
check() { if eval "$2"; then pass "$1"; else fail "$1" "" "$tmp/out"; fi; }
mkdir -p "$tmp/shim"
# pgrep: "running" while $tmp/alive holds a count above 0, each call taking one off where
# $tmp/quitting exists (a daemon on its way out); "-d" makes it alive for good, "quit" starts the
# countdown (3 looks)
cat > "$tmp/shim/pgrep" <<SH
#!/bin/bash
echo "pgrep \$*" >> "$tmp/calls"
n=\$(cat "$tmp/alive" 2>/dev/null || echo 0)
[ "\$n" -gt 0 ] || exit 1
[ -e "$tmp/quitting" ] && echo \$((n - 1)) > "$tmp/alive"
exit 0
SH
cat > "$tmp/shim/nvidia-cuda-mps-control" <<SH
#!/bin/bash
if [ "\${1:-}" = -d ]; then
  echo "control -d" >> "$tmp/calls"
  [ -e "$tmp/fail-start" ] && exit 1
  [ "\$(cat "$tmp/alive" 2>/dev/null || echo 0)" -gt 0 ] && exit 1 # "already running"
  echo 1000000 > "$tmp/alive"; rm -f "$tmp/quitting"; exit 0
fi
read -r cmd; echo "control \$cmd" >> "$tmp/calls"
[ "\$cmd" = quit ] && [ ! -e "$tmp/stuck" ] && { touch "$tmp/quitting"; echo 3 > "$tmp/alive"; }
exit 0
SH
chmod +x "$tmp/shim/pgrep" "$tmp/shim/nvidia-cuda-mps-control"
# run CODE: bench/mps.sh sourced, then CODE; prints rc and MPS_STARTED
run() {
  rm -f "$tmp/calls"
  PATH=$tmp/shim:$PATH MPS_SETTLE_S=1 bash -c ". '$root/bench/mps.sh'; $1; echo \"rc=\$? started=\${MPS_STARTED:-}\"" > "$tmp/out" 2>&1
}
state() { rm -f "$tmp/alive" "$tmp/quitting" "$tmp/fail-start" "$tmp/stuck"; [ -n "${1:-}" ] && echo "$1" > "$tmp/alive"; return 0; }

state
run mps_up
check "none running: mps_up starts it (MPS_STARTED=1)" "grep -q 'rc=0 started=1' $tmp/out && grep -q 'control -d' $tmp/calls"
state 2
touch "$tmp/quitting"
run mps_up
check "a daemon quitting: waited for, then started afresh" "grep -q 'rc=0 started=1' $tmp/out && grep -q 'control -d' $tmp/calls"
state 1000000
run mps_up
check "a daemon that stays: taken as running, not started (MPS_STARTED=0)" \
  "grep -q 'rc=0 started=0' $tmp/out && ! grep -q 'control -d' $tmp/calls"
state
touch "$tmp/fail-start"
run mps_up
check "-d fails: mps_up fails" "grep -q 'rc=1 started=0' $tmp/out"
state
rm -f "$tmp/calls"
PATH=/usr/bin:/bin MPS_SETTLE_S=1 bash -c ". '$root/bench/mps.sh'; PATH=$tmp/none; mps_up; echo rc=\$?" > "$tmp/out" 2>&1
check "no nvidia-cuda-mps-control: mps_up fails" "grep -q 'rc=1' $tmp/out"
state
run 'mps_up && mps_down'
check "mps_down after mps_up: quit sent, returns once the daemon has gone" \
  "grep -q 'rc=0' $tmp/out && grep -q 'control quit' $tmp/calls && [ \"\$(cat $tmp/alive)\" -le 0 ]"
state 1000000
touch "$tmp/stuck"
run mps_down
check "a daemon that does not go: mps_down fails (after its wait)" "grep -q 'rc=1' $tmp/out"
state
touch "$tmp/fail-start"
(OUT=$tmp/nodes-out FDMINI=/bin/true MPIRUN=/bin/false PATH=$tmp/shim:$PATH MPS_SETTLE_S=1 \
  bash "$root/bench/multigpu/nodes.sh" t1 > "$tmp/out" 2>&1)
rc=$?
check "nodes.sh where MPS cannot start: exit 2, its line, nothing run, no \$OUT" \
  "[ $rc -eq 2 ] && grep -q 'MPS does not run' $tmp/out && [ ! -e $tmp/nodes-out ]"
summary "mps.sh test"

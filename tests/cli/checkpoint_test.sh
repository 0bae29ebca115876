#!/usr/bin/env bash
# checkpoint_test.sh - checkpoints and restart through the real binary under mpiexec (issue 29):
#   - SIGKILL of one rank at seeded "random" points (after a pass, half-way through a checkpoint
#     write, between the rename and the removal of the older ones: --test-kill; and by kill -9
#     from outside at a seeded delay), then --restart auto on another rank count: it continues
#     the newest complete checkpoint the kill left (a fresh start passes only where none was
#     written), and the final --dump equals the uninterrupted run's byte for byte, for every
#     operator, --halo-width 2-4, --fuse, 1-8 ranks; the directory ends with the last two
#     checkpoints, no temporary file;
#   - one run per --checkpoint-dir: a second run on a directory another run holds is refused
#     (exit 2, one line, nothing touched: not the temporary file of the first run's checkpoint
#     in flight), the first goes on; the next run removes a killed run's leftover; where the
#     file system takes no locks (a preloaded shim), one notice and no temporary file removed;
#   - SIGUSR1 to mpirun (forwarded to every rank) and SIGTERM to one rank: every rank stops at
#     the same pass, exit 5 on every rank, one line naming the checkpoint; the restart equals; a
#     stop in --baseline's loop writes none, and its line's advice works;
#   - the report and JSON of a checkpointing run and of a restarted one; snapshots across a
#     restart equal the uninterrupted run's, the XDMF listing all;
#   - every bad input of a restart: exit 2, one error line, every file as it was (another grid,
#     operator, precision, wave; truncated or appended to, corrupted data or header, not a
#     checkpoint, another format version or byte order, a header of impossible values; no
#     complete checkpoint; a checkpoint past the run's end; a --checkpoint-dir holding another
#     run's checkpoints); with auto a corrupt newest checkpoint is skipped for the previous one,
#     and with another --checkpoint-every the first new checkpoint removes it and keeps the
#     previous one (never the corrupt one) beside it;
#   - a checkpoint that cannot be written: exit 4 (ulimit -f; a full 1 MiB tmpfs where root may
#     mount one: the previous checkpoint stays, and the run continues from it elsewhere).
# Under the sanitizers (ASAN_OPTIONS set) every other case of the kill matrix runs. Rank counts
# are capped at FDMINI_TEST_RANKS_MAX where tests/CMakeLists.txt sets it (MPICH, whose ranks spin;
# the sanitizer build).
# usage: checkpoint_test.sh FDMINI MPIEXEC [MPIEXEC_FLAGS...]
set -uo pipefail
fdmini=$1
mpiexec=$2
shift 2
mpiflags=("$@")
# shellcheck disable=SC1091 # tests/lib/checks.sh is checked on its own
. "$(dirname "$0")/../lib/checks.sh"

work=$(mktemp -d)
mnt=""
cleanup() {
  if [[ -n $mnt ]]; then umount "$mnt" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

# run NP ARGS...: fdmini on NP ranks (capped: ranks in tests/lib/checks.sh; timeout 120 s; one
# rank as an MPI singleton, without the launcher's start-up); sets rc and out (stdout and stderr)
run() {
  local np
  np=$(ranks "$1")
  shift
  if ((np == 1)); then
    out=$(timeout 120 "$fdmini" --progress 0 --report full "$@" 2>&1)
  else
    out=$(timeout 120 "$mpiexec" -n "$np" "${mpiflags[@]}" "$fdmini" --progress 0 --report full "$@" 2>&1)
  fi
  rc=$?
}

# listing DIR: "name size sha256" of every entry of DIR, sorted
listing() {
  (cd "$1" && find . -mindepth 1 -printf '%p %s %y\n' | sort | while read -r p s y; do
    if [[ $y == f ]]; then echo "$p $s $(sha256sum <"$p" | cut -c1-64)"; else echo "$p $s $y"; fi
  done)
}

# expect NAME RC MSG DIR NP ARGS...: exit RC, exactly one error line holding MSG, DIR unchanged
expect() {
  local name=$1 want=$2 msg=$3 dir=$4 np=$5
  shift 5
  local before after n why=""
  before=$(listing "$dir")
  run "$np" "$@"
  after=$(listing "$dir")
  n=$(printf '%s\n' "$out" | grep -c -F -- "fdmini: error:")
  ((rc == want)) || why="exit $rc, expected $want"
  if [[ $n -ne 1 ]] || ! has "$out" "$msg"; then
    why="${why:+$why; }$n error lines, expected one with '$msg'"
  fi
  if [[ $before != "$after" ]]; then
    why="${why:+$why; }$dir changed: $(diff <(echo "$before") <(echo "$after") | grep '^[<>]' | tr '\n' ' ')"
  fi
  if [[ -z $why ]]; then
    pass "$name"
  else
    printf '%s\n' "$out" | tail -12 | sed 's/^/     | /'
    fail "$name" "$why"
  fi
}

# restarted_from: the checkpoint the last run continued (its file name, from the report's restart
# line), or nothing where it started afresh
restarted_from() { printf '%s\n' "$out" | grep -o 'restart     from [^:]*' | sed 's|.*/||'; }
# ckpt_name STEP: the file name of the checkpoint of STEP (nothing for no step)
ckpt_name() { [[ -n $1 ]] && printf 'ckpt_%010d.fdmini\n' "$1"; }

# names DIR: the names in DIR, sorted, on one line
names() { find "$1" -mindepth 1 -maxdepth 1 -printf '%f\n' 2>/dev/null | sort | tr '\n' ' '; }

# newest DIR: the step of the newest checkpoint in DIR (nothing: none)
newest() { names "$1" | tr ' ' '\n' | sed -n 's/^ckpt_0*\([0-9][0-9]*\)\.fdmini$/\1/p' | sort -n | tail -n 1; }
# two_left DIR NEWEST: DIR holds exactly ckpt_NEWEST and one older checkpoint, nothing else
two_left() { [[ $(names "$1") =~ ^ckpt_[0-9]{10}\.fdmini\ ckpt_0*$2\.fdmini\ $ ]]; }

# bg NP OUT ARGS...: fdmini on NP ranks (capped) in the background (a timeout of 120 s around
# mpiexec); sets launcher (the timeout's pid); mpirun_pid and rank_pids find the processes below it
bg() {
  local np o=$2
  np=$(ranks "$1")
  shift 2
  timeout -k 5 120 "${benv[@]}" "$mpiexec" -n "$np" "${mpiflags[@]}" "${wrap[@]}" "$fdmini" --progress 0 --report full "$@" >"$o" 2>&1 &
  launcher=$!
}
benv=(env) # bg's environment
wrap=()    # what bg starts each rank under
mpirun_pid() { pgrep -P "$launcher" | head -n 1; }
# descendants PID: every process below PID
descendants() {
  local p
  for p in $(pgrep -P "$1"); do
    echo "$p"
    descendants "$p"
  done
}
# the ranks: the fdmini processes below the launcher (Open MPI's mpirun starts them itself,
# MPICH's mpiexec through a hydra_pmi_proxy), in the order they were started
rank_comm=$(basename "$fdmini" | cut -c1-15) # a process's name, as /proc/PID/comm has it
rank_pids() {
  local p
  for p in $(descendants "$launcher" | sort -n); do
    [[ $(cat "/proc/$p/comm" 2>/dev/null) == "$rank_comm" ]] && echo "$p"
  done
}

# wait_for GLOB: until a file matches (the run is stepping), at most 30 s
wait_for() {
  local _
  for _ in $(seq 600); do
    compgen -G "$1" >/dev/null && return 0
    sleep 0.05
  done
  return 1
}

grid=(--global "24,20,18" --warmup 2 --iters 38) # 40 steps; checkpoints every 4
# under the sanitizers (the CI stage that runs this again) every other case of the kill matrix,
# which still kills at every point, and no kill from outside: the same code, half the runs
quick=0
[[ -n ${ASAN_OPTIONS:-} ]] && quick=1
declare -A ref
echo "== the uninterrupted runs (references)"
for op in laplacian heat jacobi wave; do
  ref[$op]=$work/ref-$op.raw
  run 1 --op "$op" "${grid[@]}" --dump "${ref[$op]}"
  if ((rc == 0)); then pass "uninterrupted $op run"; else fail "uninterrupted $op run" "exit $rc"; fi
done

echo "== SIGKILL of one rank at seeded points, --restart auto on another rank count"
# op S T ranks-before ranks-after: every operator, S 2-4, fused passes, 1-8 ranks
cases=("laplacian 1 1 2 3" "heat 2 2 4 2" "heat 3 1 3 1" "jacobi 4 2 8 4" "jacobi 2 2 1 3"
  "wave 1 1 2 4" "wave 3 1 6 2" "heat 4 4 1 2")
i=0
for c in "${cases[@]}"; do
  read -r op S T npa npb <<<"$c"
  npa=$(ranks "$npa")
  npb=$(ranks "$npb")
  i=$((i + 1))
  ((quick && i % 2 == 0)) && continue
  # the seeded point: where in turn (after a pass, half-way through a write, between the rename
  # and the removal of the older ones), a rank and a step in 5..36
  read -r krank kstep where <<<"$(python3 -c "
import random
r = random.Random(2900 + $i)
where = ['pass', 'write', 'commit'][$i % 3]
print(0 if where == 'commit' else r.randrange($npa), r.randrange(5, 37), where)")"
  d=$work/kill-$i
  args=(--op "$op" "${grid[@]}" --halo-width "$S" --fuse "$T" --checkpoint-every 4 --checkpoint-dir "$d")
  run "$npa" "${args[@]}" --restart auto --test-kill "$krank,$kstep,$where"
  killed=$rc
  ntmp=$(find "$d" -name '*.tmp' | wc -l)
  # the restart must continue the newest complete checkpoint the kill left, wherever there is
  # one: a fresh start would give the same field, and pass only where none was written
  left=$(newest "$d")
  run "$npb" "${args[@]}" --restart auto --dump "$d.raw"
  from=$(restarted_from)
  name="$op S=$S T=$T: SIGKILL rank $krank at step $kstep ($where) on $npa ranks, restart on $npb"
  if ((killed == 0)); then
    fail "$name" "the killed run exited 0"
  elif ((rc != 0)); then
    fail "$name" "restart: exit $rc: $(printf '%s\n' "$out" | grep 'fdmini:' | head -3)"
  elif [[ $from != "$(ckpt_name "$left")" ]]; then
    fail "$name" "the kill left ${left:+the checkpoint of step }${left:-no checkpoint}, the restart continued ${from:-nothing (a fresh start)}"
  elif ! cmp -s "$d.raw" "${ref[$op]}"; then
    fail "$name" "the final field differs from the uninterrupted run's"
  elif ! two_left "$d" 40; then
    fail "$name" "the directory holds: $(names "$d")"
  else
    pass "$name: bitwise equal, ${from:-a fresh start (no checkpoint yet)}$( ((ntmp)) && echo ', its temporary file removed')"
  fi
done

# The next cases stop a long run (100000 steps) from outside, so that no machine is fast enough
# to finish it first; the restart then ends 40 steps after the checkpoint it continues
# (--iters of the continued run may differ from the first's: the run ends at warmup + iters),
# beside an uninterrupted run of as many steps.
# continue_equals NP DIR EVERY ARGS...: the newest checkpoint of DIR continued 40 steps on NP
# ranks (ARGS: the problem without --iters; checkpoints every EVERY) against 1 rank's
# uninterrupted run of as many steps; sets rc, out, upto; returns 0 when the restart continued
# that checkpoint (not a fresh start) and the fields are equal
continue_equals() {
  local np=$1 d=$2 every=$3
  shift 3
  local c
  c=$(newest "$d")
  upto=$((${c:-0} + 40))
  run 1 "$@" --warmup 2 --iters $((upto - 2)) --dump "$d.ref"
  run "$np" "$@" --warmup 2 --iters $((upto - 2)) --checkpoint-every "$every" --checkpoint-dir "$d" --restart auto \
    --dump "$d.raw"
  local from
  from=$(restarted_from)
  if [[ -z $c || $from != "$(ckpt_name "$c")" ]]; then
    echo "     | the newest checkpoint: ${c:-none}; the restart continued ${from:-nothing (a fresh start)}"
    return 1
  fi
  ((rc == 0)) && cmp -s "$d.raw" "$d.ref"
}

# kill -9 from outside, a seeded delay after the first checkpoint (once the ranks step: a kill
# inside MPI_Init can leave Open MPI's mpirun waiting): wherever it lands, the restart equals
for i in 1 2; do
  ((quick)) && break
  d=$work/outside-$i
  delay=$(python3 -c "import random; print(round(random.Random(29 + $i).uniform(0, 0.4), 2))")
  prob=(--op heat --global "32,32,32")
  bg 3 "$work/bg.out" "${prob[@]}" --warmup 2 --iters 99998 --checkpoint-every 10 --checkpoint-dir "$d" --restart auto
  wait_for "$d/ckpt_*.fdmini"
  sleep "$delay"
  victim=$(rank_pids | tail -n 1 || true)
  [[ -n $victim ]] && kill -9 "$victim" 2>/dev/null
  wait "$launcher"
  killed=$?
  name="heat, 3 ranks: kill -9 of one rank ${delay}s after the first checkpoint, restart on 2 ranks"
  if ((killed != 0)) && continue_equals 2 "$d" 10 "${prob[@]}" && two_left "$d" "$upto"; then
    pass "$name (the first run exited $killed; continued from step $((upto - 40))): bitwise equal"
  else
    fail "$name" "first run exit $killed, restart exit $rc, $(names "$d")"
  fi
done

echo "== stop signals through mpirun: SIGUSR1 to mpirun, SIGTERM to one rank"
# Each rank runs under a shell that records its exit status: MPICH's mpiexec (Hydra, 4.0.2)
# returns 0 in about half the runs after it forwarded SIGUSR1, although every rank exited 5 (its
# -print-all-exitcodes then lists 0 for ranks that returned 5). The shell ignores the stop
# signals, which fdmini handles (and ignores once it has stopped). Once one rank has exited
# non-zero, Open MPI's mpirun (4.1) sends the others SIGCONT, SIGTERM and SIGKILL, sleeping
# odls_base_sigkill_timeout seconds (default 1) before each of the last two: 3 gives a rank
# that is slow out of MPI_Finalize on a loaded machine 6 s, so that every shell writes its status.
hydra=0
has "$("$mpiexec" --version 2>&1)" HYDRA && hydra=1
for how in usr1-mpirun term-rank; do
  d=$work/sig-$how
  prob=(--op heat --global "24,24,24")
  st=$work/status-$how
  mkdir -p "$st"
  benv=(env OMPI_MCA_odls_base_sigkill_timeout=3 "RANK_STATUS_DIR=$st")
  # shellcheck disable=SC2016 # $0, $@ and $$ belong to the rank's shell
  wrap=(bash -c 'trap "" TERM USR1; "$0" "$@"; s=$?; echo "$s" >"$RANK_STATUS_DIR/rank.$$"; exit "$s"')
  bg 3 "$work/sig.out" "${prob[@]}" --warmup 2 --iters 99998 --checkpoint-every 50 --checkpoint-dir "$d"
  benv=(env)
  wrap=()
  wait_for "$d/ckpt_*.fdmini" # the run is stepping
  if [[ $how == usr1-mpirun ]]; then
    kill -USR1 "$(mpirun_pid)"
  else
    kill -TERM "$(rank_pids | head -n 1)"
  fi
  wait "$launcher"
  stopped=$?
  nline=$(grep -c 'fdmini: stopped by SIG' "$work/sig.out")
  line=$(grep 'fdmini: stopped by SIG' "$work/sig.out")
  step=$(sed -n 's/.*after step \([0-9]*\) of 100000.*/\1/p' <<<"$line")
  saved=0
  [[ -n $step && $(newest "$d") == "$step" ]] && saved=1
  statuses=$(cat "$st"/rank.* 2>/dev/null | sort | tr '\n' ' ')
  ranks_5=$(grep -c '^5$' < <(cat "$st"/rank.* 2>/dev/null))
  launcher_ok=0
  ((stopped == 5 || (hydra && stopped == 0))) && launcher_ok=1
  name="$how: every rank stops at one pass, exit 5, its checkpoint continued on 2 ranks equals"
  if ((launcher_ok && ranks_5 == $(ranks 3) && nline == 1 && saved)) && continue_equals 2 "$d" 50 "${prob[@]}"; then
    pass "$name (stopped after step $step; the launcher exited $stopped)"
  else
    fail "$name" "first run exit $stopped, ranks exiting 5: $ranks_5 (statuses: ${statuses:-none}), $nline stop lines, saved $saved; restart exit $rc" "$work/sig.out"
  fi
done

echo "== one run per --checkpoint-dir"
# Run A holds its directory (it checkpoints on a stop signal only, so it writes nothing
# meanwhile); a temporary file there stands for A's checkpoint in flight. A second run on that
# directory is refused before it changes anything (exit 2, one line naming the holder); A then
# stops and commits its checkpoint, and the next run, A gone, removes the leftover.
c=$work/shared
lprob=(--op heat --global "24,20,18" --warmup 0)
bg 2 "$work/lock-a.out" "${lprob[@]}" --iters 99999999 --checkpoint-dir "$c"
for _ in $(seq 600); do # until A holds the lock (it writes who holds it), at most 30 s
  [[ -s $c/.fdmini.lock ]] && break
  sleep 0.05
done
inflight=ckpt_0000000100.fdmini.$launcher.tmp
touch "$c/$inflight"
expect "a second run on a --checkpoint-dir in use: refused, nothing touched" 2 \
  "--checkpoint-dir '$c' is in use by another run (pid " "$c" 2 "${lprob[@]}" --iters 40 --checkpoint-every 4 \
  --checkpoint-dir "$c" --restart auto
mapfile -t pids < <(rank_pids)
((${#pids[@]})) && kill -USR1 "${pids[@]}" 2>/dev/null
wait "$launcher"
step=$(sed -n 's/.*stopped by SIGUSR1 after step \([0-9]*\) of .*/\1/p' "$work/lock-a.out")
held=$(names "$c")
kept=0
[[ -n $step && -f $c/$inflight && -f $c/$(ckpt_name "$step") && $(find "$c" -mindepth 1 | wc -l) -eq 2 ]] && kept=1
run 2 "${lprob[@]}" --iters $((${step:-0} + 8)) --checkpoint-dir "$c" --restart auto
if ((kept && rc == 0)) && [[ $(restarted_from) == "$(ckpt_name "$step")" && $(names "$c") == "$(ckpt_name "$step") " ]]; then
  pass "the run holding it went on, stopped after step $step with its checkpoint; the next run removed the leftover"
else
  fail "the run holding its --checkpoint-dir" "stopped after step ${step:-?}, leaving: $held; the next run: exit $rc, leaving: $(names "$c")" \
    "$work/lock-a.out"
fi
# where the file system takes no locks (tests/lib/no_locks.c): one notice, and the temporary
# files there stay, since nothing tells this run that they are not another one's
shim=$(nolock_shim "$work") || exit 1
nl=$work/nolock
mkdir -p "$nl"
touch "$nl/ckpt_0000000004.fdmini.4242.tmp"
pre=(env TEST_PRELOAD="$shim")
[[ -n ${ASAN_OPTIONS:-} ]] && pre+=("ASAN_OPTIONS=$ASAN_OPTIONS:verify_asan_link_order=0")
# shellcheck disable=SC2016 # $0 and $@ belong to the inner shell
out=$(timeout 120 "${pre[@]}" "$mpiexec" -n 2 "${mpiflags[@]}" bash -c 'LD_PRELOAD=$TEST_PRELOAD exec "$0" "$@"' "$fdmini" \
  --progress 0 "${lprob[@]}" --iters 12 --checkpoint-every 4 --checkpoint-dir "$nl" 2>&1)
rc=$?
notice="fdmini: notice: --checkpoint-dir '$nl': its file system takes no lock (.fdmini.lock: No locks available)"
if ((rc == 0)) && [[ $(grep -c -F -- "$notice" <<<"$out") -eq 1 ]] &&
  [[ $(names "$nl") == "ckpt_0000000004.fdmini.4242.tmp ckpt_0000000008.fdmini ckpt_0000000012.fdmini " ]]; then
  pass "a file system without locks: one notice, the run goes on, the temporary files there kept"
else
  fail "a --checkpoint-dir without locks" "exit $rc, left: $(names "$nl")" <(printf '%s\n' "$out")
fi

echo "== the report and the JSON record"
d=$work/rep
run 2 --op wave --global 31,31,31 --warmup 2 --iters 30 --checkpoint-every 8 --checkpoint-dir "$d" \
  --test-signal 1,12,term --json "$work/never.json"
if ((rc == 5)) && [[ ! -e $work/never.json ]] && [[ $(printf '%s\n' "$out" | grep -c 'fdmini: stopped by SIGTERM after step') -eq 1 ]]; then
  pass "a stopped run: exit 5, one line, no JSON"
else
  fail "a stopped run" "exit $rc"
fi
# a stop in --baseline's loop, before the run proper, of a run continuing a checkpoint outside
# its --checkpoint-dir: no checkpoint written, and the line's advice (the same command) works
m=$work/meas
mkdir -p "$m"
run 2 --op heat --global 24,24,24 --warmup 0 --iters 16 --checkpoint-every 8 --checkpoint-dir "$m/a"
first=$rc
margs=(--op heat --global "24,24,24" --warmup 0 --iters 24 --checkpoint-every 8 --checkpoint-dir "$m/b"
  --restart "$m/a/ckpt_0000000008.fdmini" --baseline)
run 2 "${margs[@]}" --test-signal 0,2,usr1
stopped=$rc
line=$(printf '%s\n' "$out" | grep 'fdmini: stopped by')
saved=$(find "$m/b" -type f 2>/dev/null | wc -l)
run 2 "${margs[@]}"
if ((first == 0 && stopped == 5 && saved == 0 && rc == 0)) &&
  [[ $line == *"before the run proper: nothing new to save; the same command continues '$m/a/ckpt_0000000008.fdmini'" ]] &&
  has_re "$out" "^  restart     from $m/a/ckpt_0000000008.fdmini: 8 steps done before"; then
  pass "a stop in --baseline's loop: exit 5, no checkpoint, and the same command continues as the line says"
else
  fail "a stop in --baseline's loop" "exits $first, $stopped, $rc; $saved files written; line: $line" <(printf '%s\n' "$out")
fi
run 4 --op wave --global 31,31,31 --warmup 2 --iters 30 --checkpoint-every 8 --checkpoint-dir "$d" --restart auto \
  --json "$work/rep.json"
if ((rc == 0)) && has_re "$out" "^  restart     from $d/ckpt_[0-9]*.fdmini: [0-9]* steps done before (written by 2 ranks" &&
  has_re "$out" "^  checkpoints          every 8 steps into $d: [0-9]* written" &&
  has_re "$out" "writing one took up to [0-9.]* s (slowest rank), as long as [0-9]* steps without them: every 8 steps" &&
  has_re "$out" "verification: PASS  wave: energy balance: .* ok" &&
  python3 - "$work/rep.json" "$d" "$out" <<'PY'; then
import json, sys
r, d = json.load(open(sys.argv[1])), sys.argv[2]
c, s = r["checkpoints"], r["restart"]
assert r["total_steps"] == 32 and r["iters"] + s["steps_before"] == 32, (r["total_steps"], r["iters"], s)
assert s["from"].startswith(d + "/ckpt_") and s["writers"] == 2 and s["skipped"] == 0 and s["read_s"] > 0
assert s["bytes"] > 2 * 31**3 * 4 and s["source_record_lost"] is False
assert c["every"] == 8 and c["dir"] == d and c["written"] >= 1 and c["last_step"] == 32 and c["last"].endswith("ckpt_0000000032.fdmini")
for k in ("lost_ms_per_step", "work_ms_per_step", "writer_ms_per_step", "fsync_ms_per_step", "hidden_share"):
    assert 0 <= c[k]["min"] <= c[k]["max"], k
assert 0 <= c["hidden_share"]["min"] <= 1 and c["reference_steps"] > 0
# the interval the writers keep up with: the slowest writer's longest checkpoint in steps of the
# step without checkpoints, rounded up; the report says whether every 8 steps does
w, ref, k = c["writer_max_ms_per_checkpoint"]["max"], c["reference_step_ms"]["max"], c["keep_up_every"]
assert 0 < c["writer_max_ms_per_checkpoint"]["min"] <= w and k >= 1, (w, k)
assert w / ref * (1 - 1e-6) <= k < w / ref * (1 + 1e-6) + 1, (w, ref, k)
out = sys.argv[3]
assert f"as long as {k} steps without them" in out, k
if k <= 8:
    assert "every 8 steps keeps up" in out and "or more keeps up" not in out
else:
    assert "every 8 steps falls behind" in out and f"--checkpoint-every {k} or more keeps up" in out
assert r["verification"]["passed"] is True
PY
  pass "report and JSON: the checkpoints written, the restart (from, steps before, read time), PASS"
else
  fail "report and JSON of a restarted wave run" "exit $rc" "$work/rep.json"
fi

# a restart with other --halo-width and --fuse and the default --warmup ends at another step:
# said in one notice; with the same options, or --warmup given, nothing is said
d=$work/ends
run 2 --op heat --global 21,17,13 --iters 10 --checkpoint-every 4 --checkpoint-dir "$d"
cp "$d/ckpt_0000000008.fdmini" "$work/ends8.fdmini"
run 2 --op heat --global 21,17,13 --iters 10 --restart "$work/ends8.fdmini" --halo-width 3 --fuse 3
notice=$(printf '%s\n' "$out" | grep -c "fdmini: notice: --restart: the checkpoint's run was to end at step 12, this one ends at step 13")
run 2 --op heat --global 21,17,13 --iters 10 --restart "$work/ends8.fdmini"
same=$(printf '%s\n' "$out" | grep -c "fdmini: notice: --restart: the checkpoint's run")
run 2 --op heat --global 21,17,13 --warmup 2 --iters 10 --restart "$work/ends8.fdmini" --halo-width 3 --fuse 3
given=$(printf '%s\n' "$out" | grep -c "fdmini: notice: --restart: the checkpoint's run")
if ((rc == 0 && notice == 1 && same == 0 && given == 0)); then
  pass "a restart that ends at another step through the default --warmup says so, once"
else
  fail "the notice of another end step" "rc $rc, notices: $notice with other widths (1 expected), $same same, $given with --warmup"
fi
rm -rf "$d" "$work/ends8.fdmini"

echo "== snapshots across a restart"
# a wave with a snapshot every 6 steps, stopped and continued on another rank count: the same
# snapshot files as the uninterrupted run, byte for byte, and the XDMF lists every one
sargs=(--op wave --global "31,31,31" --warmup 2 --iters 46 --snapshot-every 6)
run 1 "${sargs[@]}" --snapshot-dir "$work/snap-ref"
run 2 "${sargs[@]}" --snapshot-dir "$work/snap" --checkpoint-every 12 --checkpoint-dir "$work/snap-ck" --test-signal 0,20,usr1
stopped=$rc
run 3 "${sargs[@]}" --snapshot-dir "$work/snap" --checkpoint-every 12 --checkpoint-dir "$work/snap-ck" --restart auto
if ((stopped == 5 && rc == 0)) && [[ $(listing "$work/snap") == "$(listing "$work/snap-ref")" ]] &&
  has_re "$out" "snapshots            every 6 steps: [1-7] written"; then
  pass "snapshots: the same files as the uninterrupted run (stopped, continued on 3 ranks), the XDMF lists all 8"
else
  fail "snapshots across a restart" "exits $stopped, $rc" <(diff <(listing "$work/snap-ref") <(listing "$work/snap"))
fi

echo "== bad input: exit 2, one line, nothing changed"
b=$work/bad
mkdir -p "$b"
printf 'previous record\n' >"$b/run.json"
head -c 4096 /dev/urandom >"$b/u.raw"
keep=(--json "$b/run.json" --dump "$b/u.raw")
run 2 --op heat "${grid[@]}" --checkpoint-every 4 --checkpoint-dir "$b/ck"
run 1 --op wave --global 21,21,21 --warmup 2 --iters 18 --checkpoint-every 10 --checkpoint-dir "$b/wave"
ck=$b/ck/ckpt_0000000040.fdmini
[[ -f $ck && -f $b/wave/ckpt_0000000020.fdmini ]] || fail "bad-input set-up" "no checkpoints to work with"
heat=(--op heat "${grid[@]}")
expect "another grid" 2 "is a checkpoint of --op heat on 24 x 20 x 18 in double, but this run is --op heat on 24 x 20 x 19" \
  "$b" 1 --op heat --global 24,20,19 --warmup 2 --iters 60 --restart "$ck" "${keep[@]}"
expect "another operator" 2 "but this run is --op jacobi on 24 x 20 x 18" "$b" 1 --op jacobi "${grid[@]}" --iters 60 --restart "$ck" "${keep[@]}"
expect "another wave (velocity)" 2 "(velocity 2,2 with" "$b" 2 --op wave --global 21,21,21 --iters 40 --velocity 2 \
  --restart "$b/wave" "${keep[@]}"
expect "a checkpoint at the run's last step" 2 "is at step 40, and this run ends at step 40 (--warmup + --iters" "$b" 1 \
  "${heat[@]}" --restart "$ck" "${keep[@]}"
# (with a temporary file there: a refused run removes nothing, not even a killed run's leftover)
touch "$b/ck/ckpt_0000000044.fdmini.4242.tmp"
expect "--checkpoint-dir holding checkpoints, no --restart" 2 "--checkpoint-dir '$b/ck' holds checkpoints (the newest: ckpt_0000000040.fdmini)" \
  "$b" 2 "${heat[@]}" --checkpoint-dir "$b/ck" "${keep[@]}"
expect "--checkpoint-dir holding checkpoints of its own, --restart from another" 2 "--checkpoint-dir '$b/ck' holds checkpoints of its own" \
  "$b" 1 --op wave --global 21,21,21 --iters 40 --restart "$b/wave" --checkpoint-dir "$b/ck" "${keep[@]}"
rm -f "$b/ck/ckpt_0000000044.fdmini.4242.tmp"
expect "--json onto the lock of --checkpoint-dir" 2 "--json '$b/ck/.fdmini.lock' is a file the checkpoints write" "$b" 1 \
  "${heat[@]}" --iters 60 --restart auto --checkpoint-dir "$b/ck" --json "$b/ck/.fdmini.lock"
expect "--dump onto a checkpoint name" 2 "--dump '$b/ck/ckpt_0000000044.fdmini' is a file the checkpoints write" "$b" 1 \
  "${heat[@]}" --iters 60 --restart auto --checkpoint-dir "$b/ck" --dump "$b/ck/ckpt_0000000044.fdmini"
mkdir -p "$b/empty"
expect "a directory without a checkpoint" 2 "--restart: no complete checkpoint in the directory '$b/empty': it holds no ckpt_STEP.fdmini" \
  "$b" 1 "${heat[@]}" --restart "$b/empty" "${keep[@]}"
expect "--restart of a missing file" 2 "--restart: cannot read '$b/none.fdmini': No such file or directory" "$b" 1 \
  "${heat[@]}" --restart "$b/none.fdmini" "${keep[@]}"
mkfifo "$b/fifo.fdmini"
expect "--restart of a FIFO: refused, no hang" 2 "--restart: '$b/fifo.fdmini' is not a regular file" "$b" 2 \
  "${heat[@]}" --restart "$b/fifo.fdmini" "${keep[@]}"
mkdir -p "$b/fifos"
mkfifo "$b/fifos/ckpt_0000000099.fdmini"
expect "--restart of a directory whose newest is a FIFO: skipped, no hang" 2 \
  "no complete checkpoint in the directory '$b/fifos' (--restart: '$b/fifos/ckpt_0000000099.fdmini' is not a regular file)" \
  "$b" 2 "${heat[@]}" --restart "$b/fifos" "${keep[@]}"
rm -rf "$b/fifo.fdmini" "$b/fifos"
cp "$b/ck/ckpt_0000000036.fdmini" "$b/in.fdmini"
expect "--dump onto the checkpoint --restart reads" 2 "--dump '$b/in.fdmini' is the checkpoint --restart reads" "$b" 2 \
  "${heat[@]}" --iters 60 --restart "$b/in.fdmini" --dump "$b/in.fdmini"
expect "--json onto a checkpoint of the directory --restart reads" 2 \
  "--json '$b/ck/ckpt_0000000036.fdmini' is a checkpoint of the directory --restart reads" "$b" 2 \
  "${heat[@]}" --iters 60 --restart "$b/ck" --json "$b/ck/ckpt_0000000036.fdmini"
rm -f "$b/in.fdmini"
# (the option errors, --restart auto without --checkpoint-dir and the like: test_options)
expect "--checkpoint-every not a multiple of --fuse" 2 "--checkpoint-every 3 is not a multiple of --fuse 2" "$b" 1 \
  "${heat[@]}" --fuse 2 --halo-width 2 --checkpoint-every 3 --checkpoint-dir "$b/new" "${keep[@]}"
# (one rank for most of them: the agreement of an error on several ranks is shown by the other
# cases and tests/cli/cli_test.sh)
# damaged copies: forge.py rewrites a header word and its checksum, or a data byte
forge() { # forge SRC DST MEMBER VALUE | data OFFSET | truncate BYTES | header-byte OFFSET | hist
  python3 - "$@" <<'PY'
import struct, sys
src, dst, what = sys.argv[1:4]
b = bytearray(open(src, "rb").read())
M = (1 << 64) - 1
def mix(z):
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9 & M
    z = (z ^ (z >> 27)) * 0x94d049bb133111eb & M
    return z ^ (z >> 31)
def rehash():
    w = list(struct.unpack_from("<45Q", b, 0)); w[44] = 0
    struct.pack_into("<Q", b, 352, sum(mix((x + i * 0x9e3779b97f4a7c15 + 0x68656164657221) & M) for i, x in enumerate(w)) & M)
offsets = {"version": 8, "byte_order": 16, "real_bytes": 24, "hist_count": 152}
if what == "selftest":
    stored = bytes(b[352:360]); rehash(); assert bytes(b[352:360]) == stored, "the header hash differs from fdmini's"
elif what in offsets:
    struct.pack_into("<Q", b, offsets[what], int(sys.argv[4], 0)); rehash()
elif what == "data":
    b[int(sys.argv[4])] ^= 0x10
elif what == "header-byte":
    b[int(sys.argv[4])] ^= 0x01
elif what == "hist":  # one value of the wave's source record (hist_offset, hist_count)
    off, n = struct.unpack_from("<Q", b, 208)[0], struct.unpack_from("<q", b, 152)[0]
    assert n > 0, "no source record"
    b[off + 8 * (n // 2) + 3] ^= 0x10
elif what == "truncate":
    del b[-int(sys.argv[4]):]
open(dst, "wb").write(b)
PY
}
if forge "$ck" "$b/same.fdmini" selftest; then pass "the test's header checksum is fdmini's (forged headers are valid)"; else fail "header checksum self-test"; fi
forge "$ck" "$b/float.fdmini" real_bytes 4
expect "another precision" 2 "in float, but this run is --op heat on 24 x 20 x 18 in double" "$b" 1 "${heat[@]}" --iters 60 --restart "$b/float.fdmini" "${keep[@]}"
forge "$ck" "$b/v2.fdmini" version 2
expect "a newer format version" 2 "is a checkpoint of format version 2; this fdmini reads version 1" "$b" 1 "${heat[@]}" --iters 60 --restart "$b/v2.fdmini" "${keep[@]}"
forge "$ck" "$b/be.fdmini" byte_order 0x0807060504030201
expect "the other byte order" 2 "was written on a machine of the other byte order" "$b" 1 "${heat[@]}" --iters 60 --restart "$b/be.fdmini" "${keep[@]}"
forge "$ck" "$b/hdr.fdmini" header-byte 130
expect "a corrupted header" 2 "the checksum of its header does not match: the file is corrupted" "$b" 1 "${heat[@]}" --iters 60 --restart "$b/hdr.fdmini" "${keep[@]}"
forge "$ck" "$b/short.fdmini" truncate 100
expect "a truncated checkpoint" 2 "holds $(($(stat -c %s "$ck") - 100)) bytes, expected $(stat -c %s "$ck"): it is truncated" "$b" 1 \
  "${heat[@]}" --iters 60 --restart "$b/short.fdmini" "${keep[@]}"
cp "$ck" "$b/long.fdmini"
printf 'appended' >>"$b/long.fdmini"
expect "a checkpoint with bytes appended" 2 "holds $(($(stat -c %s "$ck") + 8)) bytes, expected $(stat -c %s "$ck"): something was appended to it" \
  "$b" 1 "${heat[@]}" --iters 60 --restart "$b/long.fdmini" "${keep[@]}"
rm -f "$b/long.fdmini"
# a value in the middle of the data: the block holding it (any decomposition of the reader)
forge "$ck" "$b/bit.fdmini" data $(($(stat -c %s "$ck") - 24 * 20 * 9 * 8 + 5))
expect "one flipped bit in the data (read on 3 ranks)" 2 "the checksum of the field in block 1 of the 2 ranks that wrote it (x 1..24, y 1..20, z 10..18) does not match" \
  "$b" 3 "${heat[@]}" --iters 60 --restart "$b/bit.fdmini" "${keep[@]}"
forge "$b/wave/ckpt_0000000020.fdmini" "$b/hist.fdmini" hist
expect "one flipped bit in the wave's source record" 2 "the checksum of the source record does not match" "$b" 2 \
  --op wave --global 21,21,21 --iters 40 --restart "$b/hist.fdmini" "${keep[@]}"
# a header whose checksum matches but whose source record cannot be (more values than steps):
# refused, no crash (its length sizes the buffer the record is read into)
forge "$b/wave/ckpt_0000000020.fdmini" "$b/hist.fdmini" hist_count 0x2000000000000000
expect "a source record longer than its steps" 2 "its header holds impossible values: the file is corrupted" "$b" 2 \
  --op wave --global 21,21,21 --iters 40 --restart "$b/hist.fdmini" "${keep[@]}"
rm -f "$b/hist.fdmini"
printf 'not a checkpoint' >"$b/text.fdmini"
expect "not a checkpoint" 2 "holds 16 bytes, less than a checkpoint header" "$b" 1 "${heat[@]}" --iters 60 --restart "$b/text.fdmini" "${keep[@]}"
head -c 8192 /dev/urandom >"$b/noise.fdmini"
expect "noise" 2 "is not an fdmini checkpoint (no FDMINIck header)" "$b" 1 "${heat[@]}" --iters 60 --restart "$b/noise.fdmini" "${keep[@]}"
mkdir -p "$b/broken"
cp "$b/bit.fdmini" "$b/broken/ckpt_0000000040.fdmini"
cp "$b/short.fdmini" "$b/broken/ckpt_0000000036.fdmini"
expect "a directory whose checkpoints are all damaged" 2 "--restart: no complete checkpoint in '$b/broken'" "$b" 1 \
  "${heat[@]}" --iters 60 --restart "$b/broken" "${keep[@]}"
# auto skips a corrupt newest checkpoint for the previous one, and finishes the run
mkdir -p "$b/fallback"
cp "$b/ck/ckpt_0000000036.fdmini" "$b/fallback/"
cp "$b/bit.fdmini" "$b/fallback/ckpt_0000000040.fdmini"
run 1 "${heat[@]}" --iters 58 --dump "$b/ref60.raw"
run 3 "${heat[@]}" --iters 58 --checkpoint-every 4 --checkpoint-dir "$b/fallback" --restart auto --dump "$b/fb.raw"
if ((rc == 0)) && has_re "$out" "fdmini: notice: --restart: '$b/fallback/ckpt_0000000040.fdmini': the checksum of the field in block 1" &&
  has_re "$out" "restart     from $b/fallback/ckpt_0000000036.fdmini: 36 steps done before" &&
  has_re "$out" "1 newer checkpoint skipped" && cmp -s "$b/fb.raw" "$b/ref60.raw" && two_left "$b/fallback" 60; then
  pass "auto: a corrupt newest checkpoint skipped (notice), the previous one continued, bitwise equal"
else
  fail "auto fallback" "exit $rc" <(printf '%s\n' "$out")
fi
# the fallback continued with another --checkpoint-every: its first checkpoint (42) lands past
# the corrupt one (40), which must not stand as the one kept before it while the sound one it
# continued (36) goes; a later loss of 42 then still finds 36, and --restart auto never meets 40
mkdir -p "$b/every6"
cp "$b/ck/ckpt_0000000036.fdmini" "$b/every6/"
cp "$b/bit.fdmini" "$b/every6/ckpt_0000000040.fdmini"
run 2 "${heat[@]}" --iters 44 --checkpoint-every 6 --checkpoint-dir "$b/every6" --restart auto
first=$rc
left6=$(names "$b/every6")
forge "$b/every6/ckpt_0000000042.fdmini" "$b/lost42.fdmini" data $(($(stat -c %s "$ck") - 100))
[[ -f $b/lost42.fdmini ]] && mv "$b/lost42.fdmini" "$b/every6/ckpt_0000000042.fdmini"
run 3 "${heat[@]}" --iters 58 --checkpoint-every 6 --checkpoint-dir "$b/every6" --restart auto --dump "$b/fb6.raw"
if ((first == 0 && rc == 0)) && [[ $left6 == "ckpt_0000000036.fdmini ckpt_0000000042.fdmini " ]] &&
  has_re "$out" "restart     from $b/every6/ckpt_0000000036.fdmini: 36 steps done before" &&
  cmp -s "$b/fb6.raw" "$b/ref60.raw" && two_left "$b/every6" 60; then
  pass "auto fallback, then another --checkpoint-every: the corrupt checkpoint removed, the sound one kept behind the new"
else
  fail "the corrupt checkpoint after a fallback with another --checkpoint-every" \
    "exits $first, $rc; left after the fallback: $left6(expected 36 and 42); now: $(names "$b/every6")" <(printf '%s\n' "$out")
fi
# a complete checkpoint under its temporary name (its run killed between the last write and the
# rename), named by --restart in its own --checkpoint-dir: the run's input, not a leftover to remove
mkdir -p "$b/tmpname"
tmpck=$b/tmpname/ckpt_0000000036.fdmini.4242.tmp
cp "$b/ck/ckpt_0000000036.fdmini" "$tmpck"
run 2 "${heat[@]}" --iters 58 --checkpoint-every 4 --checkpoint-dir "$b/tmpname" --restart "$tmpck" --dump "$b/tmpname.raw"
if ((rc == 0)) && [[ $(restarted_from) == "$(basename "$tmpck")" ]] && cmp -s "$b/tmpname.raw" "$b/ref60.raw"; then
  pass "--restart of a temporary name in --checkpoint-dir: continued, bitwise equal"
else
  fail "--restart of a temporary name in --checkpoint-dir" "exit $rc, continued '$(restarted_from)'" <(printf '%s\n' "$out")
fi

echo "== a checkpoint that cannot be written: exit 4"
u=$work/ulimit
mkdir -p "$u"
# 48^3 doubles (0.9 MB) past a 512 KiB file-size limit, applied right after MPI_Init (the MPI
# libraries' shared-memory files would not fit either): tests/lib/fsize_after_init.c
shim=$(fsize_shim "$work") || exit 1
pre=(env TEST_PRELOAD="$shim" TEST_FSIZE_KIB_AFTER_INIT=512)
[[ -n ${ASAN_OPTIONS:-} ]] && pre+=("ASAN_OPTIONS=$ASAN_OPTIONS:verify_asan_link_order=0")
# shellcheck disable=SC2016 # $0 and $@ belong to the inner shell
out=$(timeout 120 "${pre[@]}" "$mpiexec" -n 2 "${mpiflags[@]}" bash -c 'LD_PRELOAD=$TEST_PRELOAD exec "$0" "$@"' "$fdmini" \
  --progress 0 --op heat --global 48,48,48 --warmup 0 --iters 6 --checkpoint-every 3 --checkpoint-dir "$u/ck" 2>&1)
rc=$?
if ((rc == 4)) && [[ $(printf '%s\n' "$out" | grep -c 'fdmini: error:') -eq 1 ]] &&
  has_re "$out" "checkpoint at step 3: writing '$u/ck/ckpt_0000000003.fdmini.[0-9]*.tmp' failed on rank [01]: File too large" &&
  [[ -z $(names "$u/ck") ]]; then
  pass "past ulimit -f: exit 4, one line, no file left"
else
  fail "checkpoint past ulimit -f" "exit $rc, $(names "$u/ck")" <(printf '%s\n' "$out")
fi
t=$work/tmpfs
mkdir -p "$t"
if [[ $(id -u) -eq 0 ]] && mount -t tmpfs -o size=1m tmpfs "$t" 2>/dev/null; then
  mnt=$t
  # 42^3 doubles: 0.59 MB, one checkpoint fits in 1 MiB, two do not
  run 2 --op heat --global 42,42,42 --warmup 0 --iters 9 --checkpoint-every 3 --checkpoint-dir "$t/ck"
  n=$(printf '%s\n' "$out" | grep -c 'fdmini: error:')
  if ((rc == 4 && n == 1)) && has_re "$out" "checkpoint at step 6: writing .* No space left on device; the previous checkpoint is unchanged" &&
    [[ $(names "$t/ck") == "ckpt_0000000003.fdmini " ]]; then
    pass "a full file system: exit 4, one line, the previous checkpoint kept"
  else
    fail "a full file system" "exit $rc, $n error lines, $(names "$t/ck")" <(printf '%s\n' "$out")
  fi
  cp -r "$t/ck" "$work/moved"
  run 1 --op heat --global 42,42,42 --warmup 0 --iters 9 --dump "$work/ref9.raw"
  run 3 --op heat --global 42,42,42 --warmup 0 --iters 9 --checkpoint-every 3 --checkpoint-dir "$work/moved" --restart auto \
    --dump "$work/moved.raw"
  if ((rc == 0)) && cmp -s "$work/moved.raw" "$work/ref9.raw"; then
    pass "the kept checkpoint continues elsewhere: bitwise equal"
  else
    fail "continuing the kept checkpoint" "exit $rc"
  fi
else
  echo "skip the full tmpfs: cannot mount one here (not root, or no permission); ulimit -f covered a failed write"
fi

summary "checkpoint test"

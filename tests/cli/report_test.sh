#!/usr/bin/env bash
# report_test.sh - the report a user reads first (issue 57), through the real binary:
#   - the start-up header is printed and flushed before the run's first trial: a run killed by
#     SIGKILL after it started, its stdout a file, still leaves the header (fault: no fflush in
#     header_print);
#   - the short report (the default): at most 24 lines from the header to RESULT, every line but
#     RESULT within 100 columns, the table's rows and no row of zeros on one rank, no GPU-only
#     word on the host backend (also in --report full), the fused run's % of memcpy says what it
#     counts (fault: drop a row, widen a line);
#   - the RESULT line parses as key=value and agrees with the JSON record: op, ranks, step_ms,
#     gbs_rank, pct_memcpy, verdict (fault: print another figure under a key);
#   - phases never contradict the step: short runs time every window (the JSON's phases_sampled
#     and the report say how many), and there no phase of any rank exceeds its step beyond
#     noise; a run of 32 windows or more times one in 16, as before (fault: FD_SAMPLE_MIN 1);
#   - --plan, alone (--ranks N --ranks-per-node K) and inside a job, against the run it plans
#     (every rank count a run takes here, emulated nodes): the process grid, the node layout,
#     the blocks, the faces, those off node per rank, the halo bytes and messages per step; and
#     for 100,000 ranks (fault: a plan that lays node blocks another way than decomp_create);
#     a plan is refused with its run's line where the run refuses the options on that grid (fault:
#     plan_only without plan_check_run);
#   - --version: version, commit (the JSON record's), backend, precision, GPU targets, MPI (one
#     clean line: no tab under MPICH, nor in the full report's MPI line); printed once under
#     mpiexec;
#   - options match whole names: a prefix or a typo exits 2 on every rank with one line naming
#     the closest (fault: accept prefixes again);
#   - --help within 80 columns without the test-only options, --help-test with them;
#   - the report's MPI env lists what the user set (the shell's OMPI_MCA_btl_..., mpirun's --mca
#     pml), not what the launcher set for its ranks (OMPI_MCA_mpi_oversubscribe, the rmaps and
#     odls parameters tests/CMakeLists.txt exports for mpirun); the JSON's mpi_env keeps both and
#     mpi_env_user the user's (Open MPI only; fault: prov_env_launcher returning 0).
# usage: report_test.sh FDMINI MPIEXEC [MPIEXEC_FLAGS...]
set -uo pipefail
fdmini=$1
mpiexec=$2
shift 2
mpiflags=("$@")
# shellcheck disable=SC1091 # tests/lib/checks.sh is checked on its own
. "$(dirname "$0")/../lib/checks.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export LSAN_OPTIONS="${LSAN_OPTIONS:+$LSAN_OPTIONS:}print_suppressions=0"

# run NP OUT ARGS...: fdmini on NP ranks, stdout and stderr into OUT; sets rc
run() {
  local np=$1 out=$2
  shift 2
  rc=0
  timeout 120 "$mpiexec" -n "$np" "${mpiflags[@]}" "$fdmini" --progress 0 "$@" >"$out" 2>&1 || rc=$?
}

# short_ok NAME OUT JSON: exit 0, the short report's shape, its RESULT line against the record
short_ok() {
  local name=$1 out=$2 json=$3 why=""
  if ((rc != 0)); then
    fail "$name" "exit $rc" "$out"
    return
  fi
  if why=$(python3 - "$out" "$json" <<'PY'
import json, sys
lines = open(sys.argv[1]).read().splitlines()
rec = json.load(open(sys.argv[2]))
first = [i for i, l in enumerate(lines) if l.startswith("fdmini ")]
res = [l for l in lines if l.startswith("RESULT ")]
assert len(first) == 1 and len(res) == 1, "one header and one RESULT line"
report = lines[first[0]:lines.index(res[0]) + 1]
assert len(report) <= 24, f"{len(report)} lines from the header to RESULT"
for l in report[:-1]:
    assert len(l) <= 100, f"{len(l)} columns: {l}"
labels = [l[2:14].rstrip() for l in report]
for want in ("operator", "ranks", "global", "local", "steps", "kernel", "halo", "phases"):
    assert want in labels, f"no {want} line"
for want in ("step, ms", "GB/s per rank", "% of memcpy"):
    assert any(l.startswith("  " + want) for l in report), f"no '{want}' row"
assert any(l.startswith("  verification: ") for l in report), "no verdict"
# no row of zeros: a rank alone has no exchange row
if rec["ranks"] == 1:
    assert not any(l.startswith("  exchange, ms") for l in report), "exchange row on one rank"
for l in report:
    if l.startswith("  ") and l[2:20].rstrip() in ("step, ms", "GB/s per rank", "exchange, ms"):
        vals = l[20:56].split()
        assert any(float(v) != 0 for v in vals), f"a row of zeros: {l}"
# RESULT: key=value, as the record says
kv = dict(f.split("=", 1) for f in res[0].split()[1:])
for k in ("op", "ranks", "step_ms", "gbs_rank", "pct_memcpy", "verdict"):
    assert k in kv, f"RESULT lacks {k}"
close = lambda a, b: abs(a - b) <= 1e-3 * abs(b) + 1e-9
assert kv["op"] == rec["op"] and int(kv["ranks"]) == rec["ranks"], kv
assert close(float(kv["step_ms"]), rec["phases_ms"]["step"]["max"]), (kv["step_ms"], rec["phases_ms"]["step"])
assert close(float(kv["gbs_rank"]), rec["bandwidth_per_rank_GBs"]["avg"]), kv["gbs_rank"]
assert close(float(kv["pct_memcpy"]), rec["bandwidth_pct_memcpy"]["avg"]), kv["pct_memcpy"]
assert kv["verdict"] == rec["verification"]["status"], kv["verdict"]
assert int(kv["nodes"]) == rec["nodes"]["count"] and kv["procs"] == "x".join(map(str, rec["procs"])), kv
# the host backend says nothing of devices it does not have
if rec["backend"] == "host":
    text = "\n".join(report)
    for word in ("device-to-device", "device copy", "F_g", "F_ls"):
        assert word not in text, f"'{word}' on the host backend"
if rec["fuse"]["steps"] > 1:
    assert any("counts the bytes of all" in l for l in report if l.startswith("  % of memcpy")), "fused % of memcpy"
PY
  ); then
    pass "$name"
  else
    fail "$name" "$why" "$out"
  fi
}

echo "== the start-up header, flushed before the first trial"
# one process, stdout a file (fully buffered), killed 3 s into a run of minutes
rc=0
(cd "$work" && timeout -s KILL 5 "$fdmini" --op heat --global 160,160,160 --iters 100000 --progress 0) \
  >"$work/killed" 2>&1 || rc=$?
if ((rc == 137)) && has_re "$(cat "$work/killed")" "^fdmini .*: host backend" &&
  grep -q "^  ranks       1 as 1 x 1 x 1 on 1 node$" "$work/killed" &&
  grep -q "^  steps       100000 timed after 2 warm-up$" "$work/killed"; then
  pass "a run killed after 5 s (SIGKILL) leaves the header on a file"
else
  fail "a run killed after 5 s leaves the header" "exit $rc" "$work/killed"
fi
# a run stopped by a signal after a checkpoint: the header and no report
run 2 "$work/stopped" --op heat --global 24,24,24 --iters 40 --checkpoint-dir "$work/ck" --test-signal 0,10,term
if ((rc == 5)) && grep -q "^  ranks       2 as 1 x 1 x 2 on 1 node$" "$work/stopped" && ! grep -q "^RESULT " "$work/stopped"; then
  pass "a run stopped by SIGTERM: the header, no RESULT"
else
  fail "a run stopped by SIGTERM" "exit $rc" "$work/stopped"
fi

echo "== the short report and its RESULT line"
run 2 "$work/s1" --op heat --global 64,64,64 --baseline --json "$work/s1.json"
short_ok "heat, 2 ranks, --baseline: the short report, RESULT = the record" "$work/s1" "$work/s1.json"
if grep -q "^  vs block alone, %" "$work/s1" && grep -q "^  exchange hidden, %" "$work/s1"; then
  pass "--baseline: the hidden share and the efficiency against each rank's block alone"
else
  fail "--baseline rows" "" "$work/s1"
fi
run 1 "$work/s2" --op wave --global 31,31,31 --iters 20 --json "$work/s2.json"
short_ok "wave, one rank: no exchange row, the checks in a word" "$work/s2" "$work/s2.json"
if (($(ranks 4) >= 4)); then
  run 4 "$work/s3" --op heat --global 33,32,31 --halo-width 2 --fuse 2 --iters 20 --test-node-ranks 2 \
    --snapshot-every 10 --snapshot-dir "$work/snaps" --checkpoint-every 10 --checkpoint-dir "$work/ck3" --json "$work/s3.json"
  short_ok "heat fused, deep halos, 2 emulated nodes, snapshots and checkpoints: the longest short report" \
    "$work/s3" "$work/s3.json"
fi
run 2 "$work/f1" --op heat --global 64,64,64 --baseline --report full
if ((rc == 0)) && ! grep -qE "device-to-device|device copy|F_g|F_ls" "$work/f1" && grep -q "^  floors  " "$work/f1" &&
  grep -q "^  memcpy  .*a host memory copy" "$work/f1" && grep -q "^  MPI         [^[:cntrl:]]*$" "$work/f1"; then
  pass "--report full on the host backend: every line, no GPU-only word, the MPI line clean"
else
  fail "--report full on the host backend" "exit $rc" "$work/f1"
fi
run 1 "$work/f2" --op heat --global 24,24,24 --iters 10 --report full
if ((rc == 0)) && ! grep -qE "^  (pack|exchange|unpack) " "$work/f2" && grep -q "^  interior " "$work/f2"; then
  pass "--report full on one rank: no rows of zeros"
else
  fail "--report full on one rank: rows of zeros" "exit $rc" "$work/f2"
fi

echo "== phases never contradict the step"
# PHASE NP ARGS: every window of a short run timed; no phase of any rank above its step + noise
phases_ok() {
  local np=$1 name
  shift
  name="phases of $np rank(s) $*: every window timed, none above the step"
  if (($(ranks "$np") < np)); then
    echo "skip $name (np > FDMINI_TEST_RANKS_MAX)"
    return
  fi
  run "$np" "$work/p" "$@" --json "$work/p.json"
  local why=""
  if ((rc == 0)) && why=$(python3 - "$work/p.json" "$work/p" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
s = r["phases_sampled"]
assert s["windows"] == s["of_windows"] > 0, s
text = open(sys.argv[2]).read()
assert f"phases: all {s['of_windows']} windows timed" in text, "the report does not say it"
step = r["phases_ms"]["step"]["max"]
for k in ("pack", "exchange", "unpack", "interior", "boundary"):
    # each phase's time is spent inside the timed loop: its per-step share cannot exceed it
    assert r["phases_ms"][k]["max"] <= 1.02 * step + 1e-3, (k, r["phases_ms"][k], step)
PY
  ); then pass "$name"; else fail "$name" "exit $rc; $why" "$work/p"; fi
}
phases_ok 2 --op heat --global 48,48,48 --iters 20
phases_ok 2 --op laplacian --global 40,40,40 --iters 31
phases_ok 4 --op jacobi --global 40,36,32 --iters 24 --halo-width 2
phases_ok 4 --op wave --global 33,31,29 --iters 20 --procs 1,2,2
phases_ok 1 --op heat --global 48,48,48 --iters 20 --fuse 2
run 2 "$work/long" --op heat --global 24,24,24 --iters 400 --json "$work/long.json"
if ((rc == 0)) && python3 - "$work/long.json" <<'PY'; then
import json, sys
s = json.load(open(sys.argv[1]))["phases_sampled"]
assert s["of_windows"] == 400 and 16 <= s["windows"] <= 400 // 16 + 1, s
PY
  pass "a run of 400 windows times one in 16 of them, 16 or more"
else
  fail "the sampling of a long run" "exit $rc" "$work/long"
fi

echo "== --plan against the run it plans"
# plan_vs_run NP K ARGS...: --plan --ranks NP --ranks-per-node K alone, and --plan inside the
# job, against the run on NP ranks in emulated nodes of K
plan_vs_run() {
  local np=$1 k=$2 name
  shift 2
  name="--plan --ranks $np --ranks-per-node $k $* = the run's decomposition"
  if (($(ranks "$np") < np)); then
    echo "skip $name (np > FDMINI_TEST_RANKS_MAX)"
    return
  fi
  local emul=()
  ((k < np)) && emul=(--test-node-ranks "$k")
  rc=0
  timeout 60 "$fdmini" --plan --ranks "$np" --ranks-per-node "$k" "$@" >"$work/plan" 2>&1 || rc=$?
  # alone, --test-node-ranks K plans the same nodes of K (the ranks on one node, split)
  cp "$work/plan" "$work/planemu"
  ((k < np)) && { timeout 60 "$fdmini" --plan --ranks "$np" "${emul[@]}" "$@" >"$work/planemu" 2>&1 || rc=$?; }
  local rc1=$rc
  run "$np" "$work/planjob" --plan "${emul[@]}" "$@"
  local rc2=$rc
  run "$np" "$work/run" --iters 2 --warmup 0 "${emul[@]}" "$@" --json "$work/run.json"
  local why=""
  if ((rc1 == 0 && rc2 == 0 && rc == 0)) && why=$(python3 - "$work/plan" "$work/planjob" "$work/run.json" "$work/planemu" <<'PY'
import json, sys
def plan(path):
    line = [l for l in open(path).read().splitlines() if l.startswith("PLAN ")]
    assert len(line) == 1, f"{path}: no PLAN line"
    return dict(f.split("=", 1) for f in line[0].split()[1:])
p, q, r = plan(sys.argv[1]), plan(sys.argv[2]), json.load(open(sys.argv[3]))
assert p == q, ("alone and inside the job differ", p, q)
assert plan(sys.argv[4]) == p, ("--test-node-ranks and --ranks-per-node differ alone", plan(sys.argv[4]), p)
x = lambda v: "x".join(map(str, v))
assert p["procs"] == x(r["procs"]) and p["global"] == x(r["global"]), (p["procs"], r["procs"])
assert p["local_min"] == x(r["local_min"]) and p["local_max"] == x(r["local_max"]), p
n = r["nodes"]
assert int(p["nodes"]) == n["count"] and p["grid"] == n["grid"], (p, n)
assert p["node_block"] == (x(n["node_block"]) if n["node_block"] else "0x0x0"), (p["node_block"], n)
f = r["faces_by_neighbour"]
faces = f["other_node"]["total"] + f["other_gpu"]["total"] + f["same_gpu"]["total"]
assert int(p["faces"]) == faces, (p["faces"], faces)
if r["halo_width"] == 1:  # deeper, the halo line's counts hold edges and corners too
    assert faces == r["halo_faces_mpi"] + r["halo_faces_ipc"], (faces, r["halo_faces_mpi"])
assert float(p["faces_off_node_rank_max"]) == f["other_node"]["max"], (p, f["other_node"])
assert abs(float(p["faces_off_node_rank_avg"]) - f["other_node"]["avg"]) < 1e-3, (p, f["other_node"])
assert float(p["halo_bytes_step_max"]) == r["halo_bytes_per_exchange_max"] / r["halo_width"], p
assert abs(float(p["halo_msgs_step_max"]) - r["halo_messages_per_exchange_max"] / r["halo_width"]) < 1e-4, p
PY
  ); then pass "$name"; else fail "$name" "exit $rc1, $rc2, $rc; $why" "$work/plan"; fi
}
plan_vs_run 1 1 --op heat --global 24,24,24
plan_vs_run 2 2 --op heat --global 24,24,24
plan_vs_run 2 1 --op heat --global 24,24,24
plan_vs_run 4 2 --op jacobi --global 33,23,19
plan_vs_run 4 2 --op heat --global 24,24,24 --halo-width 2
plan_vs_run 6 3 --op heat --global 30,24,18
plan_vs_run 8 4 --op heat --global 24,24,24
plan_vs_run 8 2 --op wave --global 25,27,29 --halo-width 3
plan_vs_run 8 8 --op laplacian --local 10,11,12
# 100,000 ranks in nodes of 8: node blocks of 2 x 2 x 2, at most 3 faces off node per rank
rc=0
timeout 60 "$fdmini" --plan --ranks 100000 --ranks-per-node 8 --op heat --global 4096,4096,4096 >"$work/big" 2>&1 || rc=$?
if ((rc == 0)) && grep -q "^PLAN ranks=100000 nodes=12500 ranks_per_node=8 procs=40x50x50 .* grid=blocks node_block=2x2x2 " "$work/big" &&
  grep -q " faces_off_node_rank_max=3 " "$work/big"; then
  pass "--plan --ranks 100000 --ranks-per-node 8: 40 x 50 x 50, node blocks 2 x 2 x 2, at most 3 faces off node"
else
  fail "--plan for 100,000 ranks" "exit $rc" "$work/big"
fi
rc=0
timeout 60 "$fdmini" --plan --ranks 64 --global 2,2,1000 --halo-width 400 --op heat >"$work/thin" 2>&1 || rc=$?
if ((rc == 2)) && grep -q "fdmini: error: --halo-width: 400 is out of range" "$work/thin"; then
  pass "--plan refuses what the run refuses (exit 2, one line)"
else
  fail "--plan of a refused run" "exit $rc" "$work/thin"
fi
# alone, --test-node-ranks K must divide the planned node (the --ranks on one, or nodes of
# --ranks-per-node): one line, exit 2
rc=0
timeout 60 "$fdmini" --plan --ranks 8 --ranks-per-node 6 --test-node-ranks 3 --op heat --global 24,24,24 >"$work/emu" 2>&1 || rc=$?
if ((rc == 2)) && (($(grep -c . "$work/emu") == 1)) &&
  grep -q "fdmini: error: --test-node-ranks 3: a planned node holds 2 ranks, not a multiple of 3" "$work/emu"; then
  pass "--plan --ranks 8 --ranks-per-node 6 --test-node-ranks 3: exit 2, one line (the last node's 2 ranks)"
else
  fail "--plan with --test-node-ranks not dividing a node" "exit $rc" "$work/emu"
fi

# --plan refuses, with the run's own line and exit 2, what the options ask of the grid and rank
# count that the run refuses before it allocates (plan_check_run, fd_run's checks): fused passes
# spanning an exchange, a wave source off the grid, a wave time step that cannot sample the
# Ricker wavelet, a halo fault on one rank (fault: plan_only without plan_check_run)
# plan_refuses_as_run NP ARGS...: --plan --ranks NP alone, and the run on NP ranks
plan_refuses_as_run() {
  local np=$1 prc=0 pl rl
  shift
  timeout 60 "$fdmini" --plan --ranks "$np" "$@" >"$work/prefused" 2>&1 || prc=$?
  run "$np" "$work/rrefused" "$@"
  pl=$(grep "fdmini: error:" "$work/prefused")
  rl=$(grep "fdmini: error:" "$work/rrefused")
  if ((prc == 2 && rc == 2)) && [[ -n $pl && $pl == "$rl" ]] && (($(grep -c . "$work/prefused") == 1)); then
    pass "--plan --ranks $np $* is refused as its run is (exit 2, the run's line)"
  else
    fail "--plan --ranks $np $* against its run" "plan exit $prc, run exit $rc; plan '$pl', run '$rl'" "$work/prefused"
  fi
}
plan_refuses_as_run 2 --op heat --global 16,16,16 --fuse 3
plan_refuses_as_run 2 --op wave --global 31,31,31 --source 40,1,1
plan_refuses_as_run 2 --op wave --global 8,8,8
plan_refuses_as_run 1 --op heat --global 16,16,16 --test-inject-fault=exchange

echo "== --version"
run 2 "$work/v" --version
run 1 "$work/vj" --global 12,12,12 --iters 2 --json "$work/vj.json"
commit=$(python3 -c "import json, sys; print(json.load(open(sys.argv[1]))['git_commit'])" "$work/vj.json" 2>/dev/null)
if [[ -n $commit ]] && (($(grep -c '^fdmini ' "$work/v") == 1)) &&
  grep -q "^fdmini [0-9][^ ]* (commit $commit)$" "$work/v" && grep -q "^  backend     [a-z]*, \(double\|float\) precision$" "$work/v" &&
  grep -q "^  GPU targets " "$work/v" && grep -q "^  MPI         [^[:cntrl:]]\+$" "$work/v" &&
  ! grep -q '[[:cntrl:]]' "$work/v"; then
  pass "--version: version, the record's commit, backend, precision, GPU targets, MPI (no tab); once on 2 ranks"
else
  fail "--version" "commit '$commit'" "$work/v"
fi

echo "== options match whole names"
for c in "--iter 5|unknown option '--iter'; did you mean --iters?" "--halo-wdith 2|did you mean --halo-width?" \
  "--glob=8,8,8|unknown option '--glob'; did you mean --global?"; do
  IFS='|' read -r args msg <<<"$c"
  read -r -a a <<<"$args"
  run 2 "$work/o" "${a[@]}"
  if ((rc == 2)) && (($(grep -c 'fdmini: error:' "$work/o") == 1)) && grep -qF -- "$msg" "$work/o" &&
    ! grep -q '^fdmini [0-9]' "$work/o"; then
    pass "$args: exit 2, one line: $msg"
  else
    fail "$args" "exit $rc" "$work/o"
  fi
done

echo "== --help and --help-test"
run 1 "$work/h" --help
run 1 "$work/ht" --help-test
if ((rc == 0)) && [[ -z $(awk 'length > 80' "$work/h") ]] && ! grep -q -- '--test-' "$work/h" &&
  grep -q -- '--help-test' "$work/h" && grep -q -- '--test-inject-fault' "$work/ht" && grep -q -- '--test-node-ranks' "$work/ht"; then
  pass "--help within 80 columns without test-only options; --help-test lists them"
else
  fail "--help / --help-test" "" "$work/h"
fi

echo "== MPI env: what the user set, not what the launcher set for its ranks"
if grep -qE 'Open MPI|OpenRTE' <<<"$("$mpiexec" --version 2>&1)"; then
  rc=0
  OMPI_MCA_btl_vader_single_copy_mechanism=none timeout 120 "$mpiexec" -n 2 "${mpiflags[@]}" --mca pml ob1 "$fdmini" \
    --progress 0 --global 16,16,16 --iters 2 --report full --json "$work/env.json" >"$work/env" 2>&1 || rc=$?
  line=$(grep '^  MPI env ' "$work/env")
  if ((rc == 0)) && has "$line" "OMPI_MCA_btl_vader_single_copy_mechanism=none" && has "$line" "OMPI_MCA_pml=ob1" &&
    ! has "$line" "oversubscribe" && ! has "$line" "OMPI_MCA_odls" && ! has "$line" "OMPI_MCA_orte" &&
    python3 - "$work/env.json" <<'PY'; then
import json, sys
r = json.load(open(sys.argv[1]))
env, user = r["mpi_env"], r["mpi_env_user"]
assert env.get("OMPI_MCA_mpi_oversubscribe") is not None, env  # mpirun's, kept in mpi_env
assert user == {k: v for k, v in env.items() if k in user} and "OMPI_MCA_mpi_oversubscribe" not in user, user
assert user.get("OMPI_MCA_pml") == "ob1" and user.get("OMPI_MCA_btl_vader_single_copy_mechanism") == "none", user
PY
    pass "MPI env: the shell's btl setting and --mca pml ob1 listed; mpirun's oversubscribe, rmaps, odls not"
  else
    fail "MPI env" "exit $rc: $line" "$work/env"
  fi
else
  echo "skip the MPI env rule (Open MPI's mpirun only; Hydra sets none of these variables)"
fi

summary "report test"

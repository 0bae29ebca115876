#!/usr/bin/env bash
# test_study_end_to_end.sh - the scaling-study tools as a user runs them, end to end, with the
# host build: a tiny weak study (12^3 per rank, overlap and no-overlap) and a tiny strong study
# (32^3 global) over 1, 2, 4 and 8 ranks (those up to FDMINI_TEST_RANKS_MAX where it is set),
# 2 repeats each (bench/scaling/study.py), then
# bench/scaling/collect.py and bench/scaling/plot.py. It checks what they wrote, not only that
# they wrote it: the CSV's rows and columns, the efficiencies (finite, exactly 1 on one rank,
# equal to T1/TN and T1/(N*TN) of the summary's own step times), the PNGs (signature, size,
# count) and the SVGs (the title text). It also checks that collect.py rejects a record of
# another schema and one that failed verification, and that study.py writes the LUMI-G and
# Frontier batch scripts with their launch conventions (--dry-run), and that study.py's "next:"
# line runs as printed from another folder.
#
# Usage: tests/bench/test_study_end_to_end.sh FDMINI_BINARY [MPIEXEC]
# Runs under srun when `scontrol ping` answers (CI's single-node Slurm) and the build's MPI is
# Open MPI, else with MPIEXEC (the build's launcher, default mpirun).
# Knobs: PYTHON (an interpreter with matplotlib; default: the first of python3, /usr/bin/python3
#        that has it), BENCH_TEST_KEEP=1 keeps the work folder, BENCH_TEST_TIMEOUT (seconds per
#        study, default 300).
# Exit: 0 all checks passed, 1 otherwise. Last line: "bench test: N passed, M failed".
set -uo pipefail

bin=${1:-}
if [[ -z $bin ]]; then
  echo "usage: $0 FDMINI_BINARY" >&2
  exit 2
fi
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
scaling=$(cd "$here/../../bench/scaling" && pwd)
tmo=${BENCH_TEST_TIMEOUT:-300}

# shellcheck disable=SC1091 # tests/lib/checks.sh is checked on its own
. "$(dirname "$0")/../lib/checks.sh"
finish() {
  summary "bench test"
  exit
}
# show_tail FILE: the end of a command's output, indented, after a failure.
show_tail() {
  tail -n 20 "$1" | sed 's/^/    | /'
}

if [[ ! -x $bin ]]; then
  fail "'$bin' is not an executable file"
  finish
fi

# An interpreter with matplotlib (plot.py needs it; study.py and collect.py need only stdlib).
py=''
for cand in ${PYTHON:-} python3 /usr/bin/python3; do
  if command -v "$cand" >/dev/null 2>&1 && "$cand" -c 'import matplotlib' 2>/dev/null; then
    py=$cand
    break
  fi
done
if [[ -z $py ]]; then
  fail "no python3 with matplotlib found (apt-get install python3-matplotlib, or set PYTHON)"
  finish
fi

# The binary's own MPI launcher (the build's MPIEXEC_EXECUTABLE, second argument); srun only
# for an Open MPI build (Slurm's pmix plugin starts Open MPI ranks; an MPICH build here needs
# its Hydra mpiexec).
mpiexec=${2:-mpirun}
launch=(--launcher mpirun --mpiexec "$mpiexec")
ompi=0
has_re "$("$mpiexec" --version 2>&1)" 'Open MPI\|OpenRTE' && ompi=1
if ((ompi)) && command -v scontrol >/dev/null 2>&1 && scontrol ping >/dev/null 2>&1 && command -v srun >/dev/null 2>&1; then
  # --immediate: give up rather than queue for ever when the node is busy.
  launch=(--launcher srun --launcher-args=--immediate=60)
fi
echo "bench test: python $py, launcher ${launch[*]}"

work=$(mktemp -d)
if [[ ${BENCH_TEST_KEEP:-0} == 1 ]]; then
  echo "bench test: keeping $work"
else
  trap 'rm -rf "$work"' EXIT
fi
# Up to 8 ranks share the machine's cores: one thread each.
export OMP_NUM_THREADS=1
# The studies' rank counts: 1, 2, 4 and 8, those above FDMINI_TEST_RANKS_MAX left out (set under
# MPICH's Hydra to the cores: its ranks spin while they wait, and the 4- and 8-rank runs on the
# 2 cores took 50 of the test's 69 s there); the checks below follow (STUDY_SCALES).
top=$(ranks 8)
scales=1
for n in 2 4 8; do ((n <= top)) && scales+=",$n"; done
deep_scales=2
((4 <= top)) && deep_scales+=",4"
export STUDY_SCALES=$scales DEEP_SCALES=$deep_scales
nscales=$(($(tr -cd , <<<"$scales" | wc -c) + 1))

# 1. The two studies (study.py run), each one command.
t0=$SECONDS
if timeout "$tmo" "$py" "$scaling/study.py" run --machine local "${launch[@]}" --binary "$bin" \
  --study weak --size 12,12,12 --scales "$scales" --repeats 2 --variants overlap,no-overlap \
  --iters 5 --warmup 1 --out "$work/weak" >"$work/weak.out" 2>&1; then
  pass "weak study ran ($((4 * nscales)) runs on $scales ranks, $((SECONDS - t0)) s)"
else
  fail "weak study (exit $?)"
  show_tail "$work/weak.out"
fi
t0=$SECONDS
if timeout "$tmo" "$py" "$scaling/study.py" run --machine local "${launch[@]}" --binary "$bin" \
  --study strong --size 32,32,32 --scales "$scales" --repeats 2 \
  --iters 5 --warmup 1 --out "$work/strong" >"$work/strong.out" 2>&1; then
  pass "strong study ran ($((2 * nscales)) runs, $((SECONDS - t0)) s)"
else
  fail "strong study (exit $?)"
  show_tail "$work/strong.out"
fi

# 2. One command for the tables, one for the plots.
if "$py" "$scaling/collect.py" "$work/weak" "$work/strong" -o "$work/results.csv" \
  -s "$work/summary.csv" >"$work/collect.out" 2>&1; then
  pass "collect.py wrote results.csv and summary.csv"
else
  fail "collect.py (exit $?)"
  show_tail "$work/collect.out"
fi
if "$py" "$scaling/plot.py" "$work/summary.csv" -o "$work/plots" --title-prefix "CI: " \
  >"$work/plot.out" 2>&1; then
  pass "plot.py wrote the figures"
else
  fail "plot.py (exit $?)"
  show_tail "$work/plot.out"
fi

# study.py's "next:" line runs as printed from any folder: collect.py and plot.py by absolute
# path, the study's folder absolute (it printed a path relative to the checkout's root)
next_cmd=$(sed -n 's/^study: next: //p' "$work/weak.out")
mkdir -p "$work/elsewhere"
if [[ -n $next_cmd ]] && (cd "$work/elsewhere" && eval "$next_cmd") >"$work/next.out" 2>&1 &&
  [[ -s $work/elsewhere/results.csv && -s $work/elsewhere/summary.csv ]] &&
  [[ $(find "$work/elsewhere/plots" -name '*.png' | wc -l) -ge 3 ]]; then
  pass "study.py's next: line works as printed from another folder"
else
  fail "study.py's next: line from another folder: '$next_cmd'"
  show_tail "$work/next.out"
fi

# plot.py run by a python3 without matplotlib (a venv first on PATH) uses the system's, which has
# it (tools/install-deps.sh installs python3-matplotlib for /usr/bin/python3)
if [[ -x /usr/bin/python3 ]] && /usr/bin/python3 -c 'import matplotlib' 2>/dev/null &&
  /usr/bin/python3 -m venv "$work/venv" >/dev/null 2>&1 && ! "$work/venv/bin/python3" -c 'import matplotlib' 2>/dev/null; then
  if "$work/venv/bin/python3" "$scaling/plot.py" "$work/summary.csv" -o "$work/plots-venv" >"$work/venv.out" 2>&1 &&
    grep -q "running with /usr/bin/python3, which has it" "$work/venv.out" &&
    [[ $(find "$work/plots-venv" -name '*.png' | wc -l) -eq 7 ]]; then
    pass "plot.py under a python3 without matplotlib runs again with /usr/bin/python3"
  else
    fail "plot.py under a python3 without matplotlib"
    show_tail "$work/venv.out"
  fi
else
  echo "bench test: (no venv without matplotlib could be made: the interpreter fallback is not checked)"
fi

# 3. Contents. Each check prints PASS:/FAIL: lines; they are counted below.
"$py" - "$work" <<'PY' >"$work/checks.out" 2>&1
import csv, glob, json, math, os, struct, sys

work = sys.argv[1]
ok = lambda name: print(f"PASS: {name}")
bad = lambda name, why: print(f"FAIL: {name}: {why}")

def check(name, fn):
    try:
        why = fn()
    except Exception as err:  # a check that crashes is a failed check
        why = f"{type(err).__name__}: {err}"
    ok(name) if not why else bad(name, why)

def read(path):
    with open(path, newline="") as f:
        r = csv.DictReader(f)
        return r.fieldnames or [], list(r)

# results.csv: 2 variants x 2 repeats weak and 2 repeats strong runs per rank count
SCALES = [int(n) for n in os.environ["STUDY_SCALES"].split(",")]
NS = len(SCALES)
RUN_COLS = ["study", "variant", "git_commit", "date", "device", "backend", "precision", "op",
            "kernel", "tile", "ranks", "procs", "global", "local_min", "local_max", "mpi_gpu",
            "overlap", "step_ms_avg", "step_ms_max", "pack_ms_avg", "exchange_ms_avg",
            "unpack_ms_avg", "interior_ms_avg", "boundary_ms_avg", "bw_per_rank_GBs_avg",
            "bw_total_GBs", "halo_GBs_avg", "hidden_share_avg", "efficiency_vs_alone_avg",
            "verification", "start_time", "mpi_library", "gpu_runtime", "gpu_driver", "compiler",
            "build_type", "build_flags", "hwloc", "gtl", "slurm_job_id", "slurm_nodelist", "mpi_env",
            "binding_source"]

def results_shape():
    cols, rows = read(os.path.join(work, "results.csv"))
    missing = [c for c in RUN_COLS if c not in cols]
    if missing:
        return f"columns missing: {missing}"
    if len(rows) != 6 * NS:
        return f"{len(rows)} rows, expected {6 * NS} ({4 * NS} weak + {2 * NS} strong)"
    n = {s: sum(r["study"] == s for r in rows) for s in ("weak", "strong")}
    if n != {"weak": 4 * NS, "strong": 2 * NS}:
        return f"rows per study {n}, expected weak {4 * NS}, strong {2 * NS}"

def results_values():
    _, rows = read(os.path.join(work, "results.csv"))
    for r in rows:
        where = f"row {r['record']}"
        px, py_, pz = (int(v) for v in r["procs"].split("x"))
        if px * py_ * pz != int(r["ranks"]):
            return f"{where}: procs {r['procs']} is not {r['ranks']} ranks"
        if r["verification"] != "passed":
            return f"{where}: verification {r['verification']}"
        if r["backend"] != "host" or r["op"] != "laplacian":
            return f"{where}: backend {r['backend']}, op {r['op']}"
        if r["study"] == "weak" and r["local_max"] != "12x12x12":
            return f"{where}: weak local block {r['local_max']}"
        if r["study"] == "strong" and r["global"] != "32x32x32":
            return f"{where}: strong global grid {r['global']}"
        step = float(r["step_ms_max"])
        if not (math.isfinite(step) and step > 0):
            return f"{where}: step {step}"
        # provenance carried from the record
        if not (r["mpi_library"] and r["compiler"] and r["start_time"] and r["gpu_runtime"] == "none"):
            return f"{where}: provenance missing: {r['mpi_library']!r} {r['compiler']!r} {r['start_time']!r}"
        if r["binding_source"] not in ("hwloc", "os"):
            return f"{where}: binding_source {r['binding_source']!r}"
    got = sorted({(r["study"], r["variant"], int(r["ranks"])) for r in rows})
    want = sorted([("weak", v, n) for v in ("overlap", "no-overlap") for n in SCALES]
                  + [("strong", "overlap", n) for n in SCALES])
    if got != want:
        return f"(study, variant, ranks) {got}, expected {want}"

def summary_values():
    cols, rows = read(os.path.join(work, "summary.csv"))
    for c in ("study", "variant", "ranks", "repeats", "step_ms", "efficiency", "pack_ms",
              "exchange_ms", "unpack_ms", "interior_ms", "boundary_ms", "bw_per_gcd_GBs"):
        if c not in cols:
            return f"column {c} missing"
    if len(rows) != 3 * NS:
        return f"{len(rows)} rows, expected {3 * NS} (weak 2 variants x {NS} scales, strong {NS} scales)"
    base = {(r["study"], r["variant"]): float(r["step_ms"]) for r in rows if r["ranks"] == "1"}
    for r in rows:
        n, e, t = int(r["ranks"]), float(r["efficiency"]), float(r["step_ms"])
        where = f"{r['study']} {r['variant']} N={n}"
        if r["repeats"] != "2":
            return f"{where}: {r['repeats']} repeats, expected 2"
        if not (math.isfinite(e) and e > 0):
            return f"{where}: efficiency {e} not finite and positive"
        if n == 1 and e != 1.0:
            return f"{where}: efficiency {e!r}, expected exactly 1"
        t1 = base[(r["study"], r["variant"])]
        want = t1 / t if r["study"] == "weak" else t1 / (n * t)
        if abs(e - want) > 1e-12 * want:
            return f"{where}: efficiency {e!r}, but T1/{'TN' if r['study'] == 'weak' else '(N TN)'} = {want!r}"

def png_files():
    pngs = sorted(glob.glob(os.path.join(work, "plots", "*.png")))
    if len(pngs) != 7:
        return f"{len(pngs)} PNGs, expected 7 (3 figures x 2 studies, the strong speedup): {pngs}"
    kinds = sorted(os.path.basename(p).rsplit("-", 1)[1] for p in pngs)
    if kinds != sorted(["efficiency.png", "phases.png", "bandwidth.png"] * 2 + ["speedup.png"]):
        return f"figure kinds {kinds}"
    for p in pngs:
        data = open(p, "rb").read()
        if data[:8] != b"\x89PNG\r\n\x1a\n" or data[12:16] != b"IHDR":
            return f"{p} is not a PNG"
        w, h = struct.unpack(">II", data[16:24])
        if len(data) < 15000 or w < 600 or h < 400:
            return f"{p}: {len(data)} bytes, {w}x{h} pixels (too small to hold a plot)"
        if not data.rstrip(b"\0").endswith(b"IEND\xaeB`\x82"):
            return f"{p} is truncated (no IEND)"

def svg_titles():
    svgs = sorted(glob.glob(os.path.join(work, "plots", "*.svg")))
    if len(svgs) != 7:
        return f"{len(svgs)} SVGs, expected 7"
    _, rows = read(os.path.join(work, "results.csv"))
    device = rows[0]["device"]
    for p in svgs:
        text = open(p, encoding="utf-8").read()
        study = "weak" if os.path.basename(p).startswith("weak-") else "strong"
        title = ("CI: fdmini weak scaling, laplacian, 12x12x12 per rank" if study == "weak"
                 else "CI: fdmini strong scaling speedup" if p.endswith("-speedup.svg")
                 else "CI: fdmini strong scaling, laplacian, 32x32x32 global")
        for want in (title, f"{device} (host, double", "MPI ranks"):
            if want not in text:
                return f"{p} lacks the text {want!r}"
        if "<svg" not in text or not text.rstrip().endswith("</svg>"):
            return f"{p} is not a complete SVG"

check(f"results.csv: {6 * NS} rows, {4 * NS} weak + {2 * NS} strong, expected columns", results_shape)
check("results.csv: values (procs, verification, sizes, step times, scales)", results_values)
check(f"summary.csv: {3 * NS} rows, finite efficiencies, exactly 1 on one rank, T1/TN and T1/(N TN)",
      summary_values)
check("plots: 7 valid PNGs of plot size (efficiency, phases, bandwidth x 2 studies, speedup)", png_files)
check("plots: 7 SVGs with their title text", svg_titles)
PY
cat "$work/checks.out"
passed=$((passed + $(grep -c '^PASS: ' "$work/checks.out")))
failed=$((failed + $(grep -c '^FAIL: ' "$work/checks.out")))
if ! grep -q '^PASS: \|^FAIL: ' "$work/checks.out"; then
  fail "content checks did not run"
fi

# 4. collect.py refuses bad records: another schema, and a failed verification.
rec=$(find "$work/weak" -name '*-n0002-r1.json' -print -quit)
mkdir -p "$work/bad-schema" "$work/bad-verify"
"$py" - "$rec" "$work" <<'PY'
import json, sys
rec, work = sys.argv[1], sys.argv[2]
d = json.load(open(rec))
d["schema"] = "fdmini-run/0"
json.dump(d, open(f"{work}/bad-schema/run.json", "w"))
d = json.load(open(rec))
d["verification"]["passed"] = False
d["verification"]["detail"] = "injected by the test"
json.dump(d, open(f"{work}/bad-verify/run.json", "w"))
PY
if "$py" "$scaling/collect.py" "$work/bad-schema" --study weak -o "$work/x.csv" >"$work/x.out" 2>&1; then
  fail "collect.py accepted a record of schema fdmini-run/0"
elif grep -q "schema is 'fdmini-run/0', expected 'fdmini-run/1'" "$work/x.out"; then
  pass "collect.py rejects another schema with a clear error"
else
  fail "collect.py's error for another schema is unclear"
  show_tail "$work/x.out"
fi
if "$py" "$scaling/collect.py" "$work/bad-verify" --study weak -o "$work/x.csv" >"$work/x.out" 2>&1; then
  fail "collect.py accepted a record whose verification failed"
elif grep -q "verification FAILED (injected by the test)" "$work/x.out"; then
  pass "collect.py rejects a failed verification with a clear error"
else
  fail "collect.py's error for a failed verification is unclear"
  show_tail "$work/x.out"
fi
if "$py" "$scaling/collect.py" "$work/bad-verify" --study weak --allow-failed -o "$work/x.csv" \
  >"$work/x.out" 2>&1 && "$py" -c 'import csv, sys; assert [r["verification"] for r in csv.DictReader(open(sys.argv[1]))] == ["failed"]' "$work/x.csv"; then
  pass "collect.py --allow-failed keeps it, marked failed"
else
  fail "collect.py --allow-failed"
  show_tail "$work/x.out"
fi

# 5. Batch scripts for LUMI-G and Frontier (written, not submitted).
for machine in lumi-g frontier; do
  out=$work/batch-$machine
  if ! "$py" "$scaling/study.py" run --machine "$machine" --study weak --size 512,512,512 \
    --nodes 1,2 --repeats 2 --binary "$bin" --account project_0 --dry-run --out "$out" \
    >"$work/$machine.out" 2>&1; then
    fail "study.py --machine $machine --dry-run (exit $?)"
    show_tail "$work/$machine.out"
    continue
  fi
  scripts=("$out"/*.sbatch)
  why=''
  # 1 GCD (baseline) and 8 GCDs share the one-node job; 16 GCDs (2 nodes) have their own.
  [[ ${#scripts[@]} -eq 2 ]] || why="${#scripts[@]} scripts, expected 2"
  s1=$out/job-weak-N0001.sbatch
  s16=$out/job-weak-N0002.sbatch
  if [[ -z $why ]]; then
    grep -q '^#SBATCH --nodes=1$' "$s1" && (($(grep -c '^srun .*--ntasks=1 ' "$s1") == 2)) &&
      (($(grep -c '^srun .*--ntasks=8 ' "$s1") == 2)) || why="$s1 does not run the 1- and 8-GCD scales on one node"
    # the job's environment and sbcast: the functions of launch/site-conventions.sh, a copy of
    # which is in the folder (tests/bench/test_study_follows_launch.sh runs them against the
    # sbatch scripts')
    cmp -s "$out/site-conventions.sh" "$scaling/../../launch/site-conventions.sh" ||
      why="$out/site-conventions.sh is not a copy of launch/site-conventions.sh"
    # shellcheck disable=SC2016  # the literal text of the job script
    if [[ $machine == lumi-g ]]; then
      want=('#SBATCH --nodes=2' '#SBATCH --ntasks-per-node=8' '#SBATCH --gpus-per-node=8' '#SBATCH --exclusive'
        ". $out/site-conventions.sh" 'fdmini_site_env "$name" LUMI_G 1' 'fdmini_site_sbcast "$name" '
        '--cpu-bind=map_cpu:49,57,17,25,1,9,33,41 "$FDMINI_SITE_BINARY"' '--ntasks=16'
        '--local 512,512,512' '#SBATCH --account=project_0' '#SBATCH --partition=standard-g')
      # every rank sees the node's GCDs: no select_gpu.sh in the job or its folder
      ! grep -q select_gpu "$s16" && [[ ! -e $out/select_gpu.sh ]] ||
        why="$s16 narrows each rank to its own GCD (select_gpu.sh)"
    else
      # shellcheck disable=SC2016  # the literal text of the job script
      want=('#SBATCH --nodes=2' 'fdmini_site_env "$name" FRONTIER 7' '--cpus-per-task=7 --gpus-per-node=8 "$FDMINI_SITE_BINARY" --gpu-map 4,5,2,3,6,7,0,1'
        '--ntasks=16' '--local 512,512,512' '#SBATCH --account=project_0' '#SBATCH --partition=batch')
    fi
    for w in "${want[@]}"; do
      grep -qF -- "$w" "$s16" || why="$s16 lacks '$w'"
    done
    runs=$(grep -c '^srun ' "$s16")
    [[ $runs -eq 2 ]] || why="$s16 has $runs srun lines, expected 2 (repeats)"
    bash -n "$s16" || why="$s16 is not valid bash"
    "$py" -c 'import json,sys; m=json.load(open(sys.argv[1])); assert len(m["runs"]) == 6 and len(m["jobs"]) == 2' \
      "$out/study.json" 2>/dev/null || why="study.json does not list 6 runs in 2 jobs"
  fi
  if [[ -z $why ]]; then
    pass "study.py --machine $machine writes 2 sbatch scripts (sub-node scales on one node) with the site's launch conventions"
  else
    fail "study.py --machine $machine: $why"
  fi
done

# A LUMI stack without a version is refused (LUMI: never load LUMI without one); a pinned one
# is written into the jobs as given.
if "$py" "$scaling/study.py" run --machine lumi-g --study weak --size 32,32,32 --nodes 1 --repeats 1 \
  --binary "$bin" --account project_0 --dry-run --out "$work/unpinned" \
  --setup 'module load LUMI partition/G rocm' >"$work/unpinned.out" 2>&1; then
  fail "study.py --setup 'module load LUMI ...' (no version) was accepted"
elif grep -q "loads the LUMI stack without a version; LUMI says never to do that: name one, e.g. 'LUMI/25.03'" "$work/unpinned.out" &&
  "$py" "$scaling/study.py" run --machine lumi-g --study weak --size 32,32,32 --nodes 1 --repeats 1 \
    --binary "$bin" --account project_0 --dry-run --out "$work/pinned" \
    --setup 'module load LUMI/25.03 partition/G rocm/6.3.4' >"$work/pinned.out" 2>&1 &&
  grep -qx 'module load LUMI/25.03 partition/G rocm/6.3.4' "$work/pinned/job-weak-N0001.sbatch"; then
  pass "study.py --setup: an unpinned LUMI stack refused with the reason, LUMI/25.03 written as given"
else
  fail "study.py --setup LUMI version check"
  show_tail "$work/unpinned.out"
  show_tail "$work/pinned.out"
fi

# 6. Halo-path variants: ipc once per overlap setting (no --mpi-gpu), mpi with each MPI mode
# (local: the commands study.py prints); on lumi-g and frontier every rank sees its node's GCDs
# (the launch layout), so ipc runs there too.
if "$py" "$scaling/study.py" run --machine local --study weak --size 32,32,32 --scales 2 \
  --repeats 1 --variants overlap,no-overlap --halo-path ipc,mpi --mpi-gpu aware,staged \
  --binary "$bin" --dry-run >"$work/halo-local.out" 2>&1 &&
  "$py" - "$work/halo-local.out" <<'PY' 2>"$work/halo-local.err"; then
import re, sys
text = open(sys.argv[1]).read()
assert "variants overlap-ipc,overlap-mpi-aware,overlap-mpi-staged,no-overlap-ipc,no-overlap-mpi-aware,no-overlap-mpi-staged" in text, text
cmds = [l for l in text.splitlines() if re.match(r"\[\d+/\d+\] ", l)]
assert len(cmds) == 12, len(cmds)
ipc = [c for c in cmds if "--halo-path ipc" in c]
assert len(ipc) == 4 and not any("--mpi-gpu" in c for c in ipc), ipc
assert any("--no-overlap --halo-path mpi --mpi-gpu staged" in c for c in cmds), cmds
PY
  pass "study.py --halo-path ipc,mpi --mpi-gpu aware,staged: 6 variants, ipc without --mpi-gpu"
else
  fail "study.py --halo-path variants"
  show_tail "$work/halo-local.out"
  show_tail "$work/halo-local.err"
fi
out=$work/halo-variants
if "$py" "$scaling/study.py" run --machine lumi-g --study weak --size 32,32,32 --nodes 1 \
  --repeats 1 --variants overlap,no-overlap --halo-path ipc,mpi --mpi-gpu aware,staged \
  --binary "$bin" --account project_0 --dry-run --out "$out" >"$work/halo.out" 2>&1 &&
  ! grep -q "left out" "$work/halo.out" &&
  grep -q -- "--halo-path ipc" "$out"/*.sbatch &&
  "$py" - "$out/study.json" <<'PY' 2>>"$work/halo.out"; then
import json, sys
m = json.load(open(sys.argv[1]))
names = [v["name"] for v in m["variants"]]
assert names == ["overlap-ipc", "overlap-mpi-aware", "overlap-mpi-staged", "no-overlap-ipc",
                 "no-overlap-mpi-aware", "no-overlap-mpi-staged"], names
assert not m.get("left_out"), m.get("left_out")
assert len(m["runs"]) == 12, len(m["runs"])
PY
  pass "study.py --machine lumi-g keeps the ipc variants (every rank sees its node's GCDs)"
else
  fail "study.py --machine lumi-g with --halo-path ipc,mpi"
  show_tail "$work/halo.out"
fi
if "$py" "$scaling/study.py" run --machine frontier --study weak --size 32,32,32 --nodes 1 \
  --halo-path ipc --binary "$bin" --account a --dry-run --out "$work/hp3" >"$work/hp3.out" 2>&1 &&
  grep -q -- "--gpus-per-node=8 \"\$FDMINI_SITE_BINARY\" --gpu-map 4,5,2,3,6,7,0,1 .*--halo-path ipc" "$work/hp3"/*.sbatch; then
  pass "study.py --machine frontier --halo-path ipc: runs it, all GCDs visible, --gpu-map"
else
  fail "study.py --machine frontier --halo-path ipc"
  show_tail "$work/hp3.out"
fi
if ! "$py" "$scaling/study.py" run --machine local --study weak --size 32,32,32 --scales 1 \
  --fdmini-args='--halo-path ipc' --binary "$bin" --dry-run --out "$work/hp2" >"$work/hp2.out" 2>&1 &&
  grep -q "must not contain --halo-path" "$work/hp2.out"; then
  pass "study.py refuses --halo-path inside --fdmini-args"
else
  fail "study.py accepted --halo-path inside --fdmini-args"
  show_tail "$work/hp2.out"
fi

# 7. Deep-halo and fused variants (--halo-width, --fuse), run: a T that does not divide S is
# left out (said and recorded), every record carries its width and T, the summary its
# figures and the efficiency against the fastest 1-rank variant.
out=$work/deep
if timeout "$tmo" "$py" "$scaling/study.py" run --machine local "${launch[@]}" --binary "$bin" \
  --study strong --size 24,20,16 --scales "$deep_scales" --repeats 1 --op heat --halo-width 1,2 --fuse 1,2 \
  --iters 8 --warmup 2 --out "$out" >"$work/deep.out" 2>&1 &&
  grep -q "study: note: width 1 with fuse 2 left out" "$work/deep.out" &&
  "$py" "$scaling/collect.py" "$out" -o "$work/deep-results.csv" -s "$work/deep-summary.csv" >>"$work/deep.out" 2>&1 &&
  "$py" - "$out/study.json" "$work/deep-results.csv" "$work/deep-summary.csv" <<'PY' 2>>"$work/deep.out"; then
import csv, json, os, sys
m = json.load(open(sys.argv[1]))
assert [v["name"] for v in m["variants"]] == ["overlap-width1-fuse1", "overlap-width2-fuse1", "overlap-width2-fuse2"], m["variants"]
assert m["left_out"] == [{"halo_width": 1, "fuse": "2", "why": m["left_out"][0]["why"]}], m["left_out"]
rows = list(csv.DictReader(open(sys.argv[2])))
# 3 variants on 1 rank (the baseline) and on each of DEEP_SCALES
assert len(rows) == 3 * (1 + len(os.environ["DEEP_SCALES"].split(","))), len(rows)
for r in rows:
    want = r["variant"].split("-")
    assert r["halo_width"] == want[1][5:] and r["fuse_steps"] == want[2][4:], r
    if int(r["ranks"]) > 1 and r["halo_width"] == "2":
        assert float(r["redundant_share"]) > 0 and float(r["halo_messages_per_step_max"]) > 0, r
summ = list(csv.DictReader(open(sys.argv[3])))
best = min(float(s["step_ms"]) for s in summ if s["ranks"] == "1")
for s in summ:
    e = float(s["efficiency_vs_best_1rank"])
    assert abs(e - best / (int(s["ranks"]) * float(s["step_ms"]))) < 1e-9 * e, s
PY
  pass "study.py --halo-width 1,2 --fuse 1,2: 3 variants (T not dividing S left out), collect.py's width, T, messages, redundant points, efficiency against the best rank"
else
  fail "study.py deep-halo variants"
  show_tail "$work/deep.out"
fi

# 8. Across nodes on one machine (--emulate-nodes K: fdmini --test-node-ranks K on the scales of
# more than K ranks) with today's path (mixed) against the off-node proxy: proxy without
# overlap left out (fdmini refuses it), the records' nodes as the manifest's, and collect.py's
# columns of where the faces went (the path taken, faces to other nodes, F_m of proxy runs).
if "$py" "$scaling/study.py" run --machine local --study strong --size 32,32,32 --scales 2,4,8 \
  --repeats 1 --op heat --halo-path mixed,proxy --emulate-nodes 2 --binary "$bin" --dry-run \
  >"$work/emu-dry.out" 2>&1 &&
  "$py" - "$work/emu-dry.out" <<'PY' 2>"$work/emu-dry.err"; then
import re, sys
text = open(sys.argv[1]).read()
cmds = [l for l in text.splitlines() if re.match(r"\[\d+/\d+\] ", l)]
assert len(cmds) == 8, cmds
for c in cmds:
    n = int(re.search(r" -n (\d+) ", c).group(1))
    assert ("--test-node-ranks 2" in c) == (n > 2), c
PY
  pass "study.py --emulate-nodes 2: --test-node-ranks 2 on the 4- and 8-rank scales only"
else
  fail "study.py --emulate-nodes 2 (dry run)"
  show_tail "$work/emu-dry.out"
  show_tail "$work/emu-dry.err"
fi
bad=0
for refusal in "--scales 3 --emulate-nodes 2|3 ranks do not fill whole nodes of 2" \
  "--scales 4 --emulate-nodes 2 --fdmini-args=--test-node-ranks=2|must not contain --test-node-ranks" \
  "--scales 2 --halo-path proxy --variants no-overlap|--halo-path proxy with --variants no-overlap alone"; do
  expect=${refusal#*|}
  read -r -a opts <<<"${refusal%%|*}"
  if "$py" "$scaling/study.py" run --machine local --study strong --size 32,32,32 --repeats 1 \
    --op heat "${opts[@]}" --binary "$bin" --dry-run >"$work/emu-bad.out" 2>&1 ||
    ! grep -q -- "$expect" "$work/emu-bad.out"; then
    bad=1
    echo "    study.py ${refusal%%|*}: not refused with '$expect'"
    show_tail "$work/emu-bad.out"
  fi
done
if "$py" "$scaling/study.py" run --machine lumi-g --study strong --size 32,32,32 --nodes 1 \
  --emulate-nodes 2 --account a --binary "$bin" --dry-run --out "$work/emu-lumi" >"$work/emu-bad.out" 2>&1 ||
  ! grep -q -- "--emulate-nodes is for local" "$work/emu-bad.out"; then
  bad=1
  show_tail "$work/emu-bad.out"
fi
if ((bad == 0)); then
  pass "study.py refuses a scale that fills no whole emulated node, --test-node-ranks beside --emulate-nodes, the proxy without overlap alone, --emulate-nodes on lumi-g"
else
  fail "study.py --emulate-nodes / proxy refusals"
fi
out=$work/emu
if timeout "$tmo" "$py" "$scaling/study.py" run --machine local "${launch[@]}" --binary "$bin" \
  --study strong --size 24,20,16 --scales "$deep_scales" --repeats 1 --op heat --emulate-nodes 1 \
  --halo-path mixed,proxy --variants overlap,no-overlap --iters 8 --warmup 2 --out "$out" >"$work/emu.out" 2>&1 &&
  grep -q "study: note: no-overlap with the proxy path left out" "$work/emu.out" &&
  "$py" "$scaling/collect.py" "$out" -o "$work/emu-results.csv" -s "$work/emu-summary.csv" >>"$work/emu.out" 2>&1 &&
  "$py" - "$out" "$work/emu-results.csv" "$work/emu-summary.csv" <<'PY' 2>>"$work/emu.out"; then
import csv, json, os, sys
m = json.load(open(os.path.join(sys.argv[1], "study.json")))
assert [v["name"] for v in m["variants"]] == ["overlap-mixed", "overlap-proxy", "no-overlap-mixed"], m["variants"]
assert m["left_out"][0]["halo_path"] == "proxy" and m["left_out"][0]["overlap"] is False, m["left_out"]
assert m["emulated_node_ranks"] == 1, m
for e in m["runs"]:
    rec = json.load(open(os.path.join(sys.argv[1], e["record"])))
    assert e["nodes"] == e["ranks"] and rec["nodes"]["count"] == e["ranks"], (e, rec["nodes"])
    assert rec["nodes"]["emulated"] == (e["ranks"] > 1), rec["nodes"]
rows = list(csv.DictReader(open(sys.argv[2])))
scales = [int(n) for n in os.environ["DEEP_SCALES"].split(",")]
assert len(rows) == 3 * (1 + len(scales)), len(rows)
for r in rows:
    n = int(r["ranks"])
    if n == 1:
        assert r["halo_path"] == "none" and r["faces_other_node_max"] == "0", r
        continue
    # the host backend has no IPC: today's path sends every face through MPI
    want = "proxy" if r["variant"] == "overlap-proxy" else "mpi"
    assert r["halo_path"] == want and r["nodes"] == str(n) and r["nodes_emulated"] == "true", r
    assert int(r["faces_other_node_max"]) >= 1 and int(r["halo_faces_mpi"]) >= n, r
    assert (int(r["halo_faces_proxy"]) > 0) == (want == "proxy"), r
    assert (float(r["Fm_us_max"] or 0) > 0) == (want == "proxy"), r
    assert float(r["exchange_alone_us_max"]) > 0, r
summ = list(csv.DictReader(open(sys.argv[3])))
assert {s["halo_path"] for s in summ if s["ranks"] != "1"} == {"mpi", "proxy"}, summ
assert all(float(s["Fm_us"]) > 0 for s in summ if s["variant"] == "overlap-proxy" and s["ranks"] != "1"), summ
PY
  pass "study.py --emulate-nodes 1 --halo-path mixed,proxy: every scale as nodes of one rank, collect.py's path, faces to other nodes and F_m"
else
  fail "study.py across emulated nodes"
  show_tail "$work/emu.out"
fi

finish

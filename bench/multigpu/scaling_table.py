#!/usr/bin/env python3
"""scaling_table.py - the tables of bench/multigpu/scaling.sh (issue 49, item 6).

  scaling_table.py PART... [-o DIR] [--prefix NAME] [--no-plots] [--title-prefix TEXT]
  scaling_table.py --line RECORD.json       (one run in a line: scaling.sh's progress)

PART is what one call of scaling.sh left in $OUT: its PART.tar.gz, or that tarball unpacked (a
folder holding part.json), or a folder of several. Every figure is read from the runs' JSON
records (fdmini --json). Where two calls hold the same case (strong: operator and global size;
weak: operator, block and mode), the later call's runs are taken (each row beside the 1-GPU
run of its own call) and the other call is named as left out.

Strong (records strong-OP-N-MODE-gGrR[-mps|-nomps]-rREP.json): one row per operator, global
N^3, mode (T1: one step per pass; S4-auto: --halo-width 4 --fuse auto), GPUs and ranks:
  step_us      the wall time per time step of the slowest rank (phases_ms.step.max), median
               over repeats
  speedup      T1 / TN, T1 the 1-GPU step of the same operator, N and mode in the same call
  efficiency   T1 / (G TN), G the GPUs (8 ranks on 4 GPUs: G = 4)
  F1_us, X_us, Fp_us   floors measured at start-up, averaged over ranks (floors_us): F1 =
               max(F_g, F_c), X the exchange alone, F_p (floors_us.Fp) the floor of the link to
               a neighbour on another GPU; empty where the record has none (1 GPU, an older
               binary without Fp, no neighbour on another GPU)
  X_over_Fp, step_over_F1
  path         the halo path taken: signalled (exchanged inside the pass's launch), ipc, mpi,
               mixed, none (1 GPU)
  T            the steps per pass the run took (--fuse auto's pick), S the halo width
  model_us, model_eff  the model's step and efficiency for the row (bench/model/beside.py: the
               1-GPU run's kernel speed, the row's own floors, the process grid as fdmini makes
               it; empty where numpy is missing or the device has no site file)
Weak (bench/scaling/study.py folders weak-OP-N-MODE with study.json): the same per GPUs, plus
  pct_one_gpu  100 T1 / TN (every GPU holds an N^3 block)
  hidden_pct   100 x the share of the exchange hidden behind the interior update (fdmini
               --baseline: 1 - (T_step - T_alone) / (pack + exchange + unpack), or / X where
               the passes are signalled), average over ranks, median over repeats
  eff_alone    T_alone / T_step (--baseline), average over ranks
  model_us, model_pct  the model's step and 100 T1 / model
  and collect.py's summary of the same folders (PREFIX-weak.csv, the format plot.py reads),
  with plot.py's efficiency and hidden-share plots in PREFIX-weak/ (unless --no-plots).

Writes DIR/PREFIX-strong.{csv,md} and DIR/PREFIX-weak.{csv,md} (DIR default '.', PREFIX
default DEVICExG from the records, e.g. NVIDIA-H200x4). Exit 1 when a record is unreadable or
did not verify (PASS, or UNVERIFIED: nothing left to compare), when a strong record is of
another case than its name says (operator, global grid, halo width, fuse, ranks), when a weak
folder holds a record of another case than its name says (operator, block, halo width, fuse) or
of a run its study.json says exited non-zero or timed out, or when collect.py or plot.py fails.
"""
import argparse
import csv
import glob
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SCALING = os.path.join(HERE, "..", "scaling")
STRONG = re.compile(r"strong-(\w+)-(\d+)-(T1|S\d+-\w+)-g(\d+)r(\d+)(-mps|-nomps)?-r(\d+)$")
WEAK_DIR = re.compile(r"weak-(\w+)-(\d+)-(T1|S\d+-\w+)$")

STRONG_COLS = ["op", "global", "gpus", "ranks", "mode", "mps", "procs", "local", "S", "T", "graphs",
               "path", "repeats", "step_us", "speedup", "efficiency", "F1_us", "X_us", "Fp_us",
               "X_over_Fp", "step_over_F1", "commit", "call", "model_us", "model_eff"]
WEAK_COLS = ["op", "block", "gpus", "ranks", "mode", "procs", "S", "T", "graphs", "path", "repeats",
             "step_us", "pct_one_gpu", "hidden_pct", "eff_alone", "F1_us", "X_us", "Fp_us",
             "X_over_Fp", "commit", "call", "model_us", "model_pct"]

MODEL_DIR = os.path.join(HERE, "..", "model")


def model_step(recs, base_us, base_rec):
    """The model's step (us) of a row from its records (bench/model/beside.py), or None (no
    numpy, no site file for the device, a layout the model cannot place)."""
    sys.path.insert(0, MODEL_DIR)
    try:
        import beside  # pylint: disable=import-outside-toplevel
    except ImportError:
        return None
    res = beside.predict_run(recs, base_us, base_rec)
    return None if res is None or not res["kernel_from_base"] else res["step_us"]


class TableError(Exception):
    pass


def load(path):
    try:
        with open(path) as f:
            rec = json.load(f)
    except (OSError, ValueError) as e:
        raise TableError(f"{path}: {e}")
    if not isinstance(rec, dict):
        raise TableError(f"{path}: not a JSON object (not an fdmini --json record)")
    v = rec.get("verification")
    v = v if isinstance(v, dict) else {}
    if not (v.get("passed") or v.get("status") == "UNVERIFIED"):
        raise TableError(f"{path}: verification did not pass ({v.get('status')})")
    return rec


def step_us(rec):
    return 1e3 * rec["phases_ms"]["step"]["max"]


def floor(rec, key):
    """floors_us.KEY.avg, None where the record has no such floor (absent or null)."""
    f = (rec.get("floors_us") or {}).get(key)
    return f.get("avg") if isinstance(f, dict) else None


def f1(rec):
    vals = [v for v in (floor(rec, "graph"), floor(rec, "copy")) if v is not None]
    return max(vals) if vals else None


def path_of(rec):
    if (rec.get("graphs") or {}).get("exchange_signalled_passes", 0) > 0:
        return "signalled"
    p = rec.get("halo_path")
    return "none" if p in (None, "none") else p


def med(vals):
    vals = [v for v in vals if v is not None]
    return statistics.median(vals) if vals else None


def div(a, b):
    return None if a is None or not b else a / b


def joined(vals):
    return "/".join(sorted({str(v) for v in vals}))


def common(recs, call):
    """The columns every table takes from a case's repeats."""
    st = med([step_us(r) for r in recs])
    x, fp, one = med([floor(r, "exchange_alone") for r in recs]), med([floor(r, "Fp") for r in recs]), \
        med([f1(r) for r in recs])
    r0 = recs[0]
    return {
        "procs": "x".join(map(str, r0["procs"])), "S": r0.get("halo_width", 1),
        "T": joined((r.get("fuse") or {}).get("steps", 1) for r in recs),
        "graphs": joined("on" if (r.get("graphs") or {}).get("on") else "off" for r in recs),
        "path": joined(path_of(r) for r in recs), "repeats": len(recs), "step_us": st,
        "F1_us": one, "X_us": x, "Fp_us": fp, "X_over_Fp": div(x, fp), "step_over_F1": div(st, one),
        "commit": joined(r.get("git_commit", "") for r in recs), "call": call["started"],
    }


def find_parts(paths, tmp):
    """[(part folder, part.json)] of every part under the paths (tarballs unpacked into tmp)."""
    parts = []
    for i, p in enumerate(paths):
        given = p
        if p.endswith((".tar.gz", ".tgz")) and os.path.isfile(p):
            dest = os.path.join(tmp, f"in{i}")
            try:
                with tarfile.open(p) as t:
                    t.extractall(dest)
            except (tarfile.TarError, EOFError, OSError, ValueError) as e:
                raise TableError(f"{p}: not a readable tarball ({str(e).splitlines()[0]})")
            p = dest
        if not os.path.isdir(p):
            raise TableError(f"{p}: not a folder or a scaling.sh tarball")
        found = []
        for d, _, files in os.walk(p):
            if "part.json" in files:
                pj = os.path.join(d, "part.json")
                try:
                    with open(pj) as f:
                        info = json.load(f)
                except (OSError, ValueError) as e:
                    shown = given if p != given else pj
                    raise TableError(f"{shown}: {os.path.relpath(pj, p)}: {e}")
                if not isinstance(info, dict):
                    raise TableError(f"{given}: {os.path.relpath(pj, p)}: not a JSON object")
                found.append((d, info))
        if not found:
            raise TableError(f"{given}: no part.json (not what scaling.sh wrote)")
        parts += found
    return sorted(parts, key=lambda x: x[1].get("started", ""))


def latest(cases, what):
    """cases: {key: {call: value}} -> {key: (call, value)}, the latest call of each key."""
    out = {}
    for key, calls in cases.items():
        order = sorted(calls, key=lambda c: c[0])
        out[key] = (order[-1], calls[order[-1]])
        for c in order[:-1]:
            print(f"scaling_table: {what} {' '.join(map(str, key))}: the call of {c[0]} ({c[1]}) left "
                  f"out, that of {order[-1][0]} taken", file=sys.stderr)
    return out


def strong_rows(parts):
    cases = {}  # (op, N) -> {call: {(mode, G, R, mps): [recs]}}
    for d, info in parts:
        call = (info.get("started", ""), os.path.basename(d))
        for path in sorted(glob.glob(os.path.join(d, "records", "strong-*.json"))):
            m = STRONG.match(os.path.basename(path)[:-5])
            if not m:
                continue
            op, n, mode, g, r, mps, _ = m.groups()
            key = (mode, int(g), int(r), "on" if mps == "-mps" else ("off" if int(r) > int(g) else ""))
            rec = load(path)
            check_case(path, rec, op, mode, "global", int(n), "its name", ranks=int(r))
            cases.setdefault((op, int(n)), {}).setdefault(call, {}).setdefault(key, []).append(rec)
    rows = []
    for (op, n), ((started, _), runs) in sorted(latest(cases, "strong").items()):
        for (mode, g, r, mps), recs in runs.items():
            row = {"op": op, "global": n, "gpus": g, "ranks": r, "mode": mode, "mps": mps,
                   "local": "x".join(map(str, recs[0]["local_max"]))}
            row.update(common(recs, {"started": started}))
            base = runs.get((mode, 1, 1, ""))
            t1 = med([step_us(x) for x in base]) if base else None
            row["speedup"] = div(t1, row["step_us"])
            row["efficiency"] = div(t1, g * row["step_us"]) if t1 is not None else None
            row["model_us"] = model_step(recs, t1, base[0]) if base else None
            row["model_eff"] = div(t1, g * row["model_us"]) if row["model_us"] else None
            rows.append(row)
    rows.sort(key=lambda x: (x["op"], x["global"], x["mode"] != "T1", x["mode"], x["gpus"], x["ranks"]))
    return rows


def weak_dirs(parts):
    cases = {}  # (op, N, mode) -> {call: folder}
    for d, info in parts:
        call = (info.get("started", ""), os.path.basename(d))
        for sub in sorted(glob.glob(os.path.join(d, "weak-*", "study.json"))):
            folder = os.path.dirname(sub)
            m = WEAK_DIR.match(os.path.basename(folder))
            if m:
                cases.setdefault((m.group(1), int(m.group(2)), m.group(3)), {})[call] = folder
    return latest(cases, "weak")


def mode_wants(mode):
    """The halo width and steps per pass of a mode (T1: width 1, one step per pass; SW-F: width
    W, F steps per pass, None (any) with F auto)."""
    if mode == "T1":
        return 1, 1
    w, f = mode[1:].split("-", 1)
    return int(w), (None if f == "auto" else (int(f) if f.isdigit() else None))


def check_case(path, rec, op, mode, size_key, n, where, ranks=None):
    """Refuse a record of another case than its name or folder (`where`) says (a stray file would
    otherwise be folded into a row's median): operator, rec[size_key] N^3 (the block of a weak
    case, the global grid of a strong one), halo width and fuse of the mode, and the ranks where
    given."""
    width = rec.get("halo_width", 1)
    steps = (rec.get("fuse") or {}).get("steps", 1)
    want_w, want_t = mode_wants(mode)
    size = "block" if size_key == "local_max" else "global"
    got = f"op {rec.get('op')}, {size} {rec.get(size_key)}, halo width {width}, fuse {steps}"
    want = f"op {op}, {size} {[n, n, n]}, halo width {want_w}" + ("" if want_t is None else f", fuse {want_t}")
    if ranks is not None:
        got += f", {rec.get('ranks')} ranks"
        want += f", {ranks} ranks"
    if rec.get("op") != op or rec.get(size_key) != [n, n, n] or width != want_w \
            or (want_t is not None and steps != want_t) or (ranks is not None and rec.get("ranks") != ranks):
        raise TableError(f"{path}: {got}, not the case of {where} ({want})")
    if not isinstance(rec.get("ranks"), int):
        raise TableError(f"{path}: no rank count ('ranks')")


def check_weak(path, rec, op, n, mode):
    """check_case for a record of the folder weak-OP-N-MODE (the block N^3)."""
    check_case(path, rec, op, mode, "local_max", n, f"its folder weak-{op}-{n}-{mode}")


def failed_runs(folder):
    """{record: 'exited N' or 'timed out'} of the runs study.json says did not end well (an
    exit_code present and not 0; null where the run timed out)."""
    path = os.path.join(folder, "study.json")
    try:
        with open(path) as f:
            manifest = json.load(f)
    except (OSError, ValueError) as e:
        raise TableError(f"{path}: {e}")
    runs = manifest.get("runs") if isinstance(manifest, dict) else None
    if not isinstance(runs, list):
        raise TableError(f"{path}: not a study.py manifest (no 'runs' list)")
    out = {}
    for e in runs:
        if isinstance(e, dict) and "exit_code" in e and e["exit_code"] != 0:
            out[str(e.get("record"))] = "timed out" if e["exit_code"] is None else f"exited {e['exit_code']}"
    return out


def weak_rows(chosen):
    rows = []
    for (op, n, mode), ((started, _), folder) in sorted(chosen.items()):
        by_ranks = {}
        failed = failed_runs(folder)
        for path in sorted(glob.glob(os.path.join(glob.escape(folder), "*.json"))):
            if os.path.basename(path) != "study.json":
                if os.path.basename(path) in failed:
                    raise TableError(f"{path}: its run {failed[os.path.basename(path)]} "
                                     f"(study.json): the record cannot be trusted")
                rec = load(path)
                check_weak(path, rec, op, n, mode)
                by_ranks.setdefault(rec["ranks"], []).append(rec)
        base = by_ranks.get(1)
        t1 = med([step_us(x) for x in base]) if base else None
        for r, recs in sorted(by_ranks.items()):
            row = {"op": op, "block": n, "gpus": r, "ranks": r, "mode": mode}
            row.update(common(recs, {"started": started}))
            row["pct_one_gpu"] = None if t1 is None else 100 * t1 / row["step_us"]
            row["model_us"] = model_step(recs, t1, base[0]) if base else None
            row["model_pct"] = 100 * t1 / row["model_us"] if row["model_us"] else None
            alone = [x for x in recs if x.get("baseline")]
            if r > 1 and alone:
                row["hidden_pct"] = 100 * med([(x.get("hidden_share") or {}).get("avg") for x in alone])
                row["eff_alone"] = med([(x.get("efficiency") or {}).get("avg") for x in alone])
            rows.append(row)
    rows.sort(key=lambda x: (x["op"], x["block"], x["mode"] != "T1", x["mode"], x["gpus"]))
    return rows


def cell(v, nd=None):
    if v is None:
        return ""
    if isinstance(v, float):
        if nd is not None:
            return f"{v:.{nd}f}"
        return f"{v:.8g}"
    return str(v)


def write_csv(path, cols, rows):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(cols)
        for r in rows:
            w.writerow([cell(r.get(c)) for c in cols])


def md_table(cols, rows, digits):
    out = ["| " + " | ".join(c for c, _ in cols) + " |", "|" + "---|" * len(cols)]
    for r in rows:
        cells = []
        for _, key in cols:
            v = r.get(key)
            nd = digits.get(key)
            if isinstance(v, float) and key in ("step_us", "F1_us", "X_us", "Fp_us", "model_us"):
                nd = 1 if v >= 100 else 2
            cells.append(cell(v, nd) or "-")
        out.append("| " + " | ".join(cells) + " |")
    return out


DIGITS = {"speedup": 2, "efficiency": 3, "X_over_Fp": 2, "step_over_F1": 2, "pct_one_gpu": 1,
          "hidden_pct": 1, "eff_alone": 3, "model_eff": 3, "model_pct": 1}


def header(title, parts, rows):
    lines = [f"# {title}", ""]
    lines += ["Written by `bench/multigpu/scaling_table.py` from the JSON records of these calls of "
              "`bench/multigpu/scaling.sh` (one per line; a row's `call` says which):", ""]
    calls = sorted({r["call"] for r in rows})
    for d, info in parts:
        if info.get("started") in calls:
            lines.append(f"- {info.get('started')}: `scaling.sh {info.get('part')} {' '.join(info.get('ops', []))}`"
                         f" on {info.get('gpus')} GPU(s) of {info.get('host', '?')}, steps {info.get('steps')}, "
                         f"repeats {info.get('repeats')}, sizes {info.get('sizes')}"
                         + (f", commit {info['commit']}" if info.get("commit") else ""))
    lines.append("")
    return lines


def ops_named(rows):
    """The operators of rows for a title: "heat", "heat and jacobi", "a, b and c"."""
    ops = sorted({r["op"] for r in rows})
    return " and ".join(ops) if len(ops) < 3 else ", ".join(ops[:-1]) + " and " + ops[-1]


def write_md(path, lines, cols, rows):
    """The text lines, then a section of table `cols` per operator of rows, into path."""
    for op in sorted({r["op"] for r in rows}):
        lines += [f"## {op}", ""] + md_table(cols, [r for r in rows if r["op"] == op], DIGITS) + [""]
    with open(path, "w") as f:
        f.write("\n".join(lines))


def write_strong(rows, parts, device, out, prefix):
    write_csv(os.path.join(out, prefix + "-strong.csv"), STRONG_COLS, rows)
    lines = header(f"Strong scaling of {ops_named(rows)}, {device}", parts, rows)
    lines += ["Microseconds per time step of the slowest rank; `speedup` T1/TN and `efficiency` "
              "T1/(G TN) against the 1-GPU run of the same operator, size and mode in the same call "
              "(G the GPUs: 8 ranks on 4 GPUs share them under MPS, `mps`); F1 = max(F_g, F_c), X "
              "(the exchange alone) and F_p (the link's floor, to a neighbour on another GPU) are "
              "the floors each run measured at start-up, averaged over ranks; `-` where a record "
              "has none. `model us` and `model eff`: what bench/model allows for the row (the 1-GPU "
              "run's kernel speed, the row's own floors). Modes: T1 one step per pass; S4-auto `--halo-width 4 --fuse auto` (T the "
              "steps per pass it took). `path`: signalled (inside the pass's launch), ipc, mpi.", ""]
    cols = [("N", "global"), ("mode", "mode"), ("GPUs", "gpus"), ("ranks", "ranks"), ("T", "T"),
            ("path", "path"), ("step us", "step_us"), ("speedup", "speedup"),
            ("efficiency", "efficiency"), ("F1", "F1_us"), ("X", "X_us"), ("F_p", "Fp_us"),
            ("X/F_p", "X_over_Fp"), ("step/F1", "step_over_F1"), ("model us", "model_us"),
            ("model eff", "model_eff")]
    write_md(os.path.join(out, prefix + "-strong.md"), lines, cols, rows)


def write_weak(rows, chosen, parts, device, out, prefix, plots, title_prefix, tmp):
    lines = header(f"Weak scaling of {ops_named(rows)}, {device}", parts, rows)
    lines += ["Microseconds per time step of the slowest rank with an N^3 block on every GPU; "
              "`% of 1 GPU` 100 T1/TN against the 1-GPU run of the same study folder; `hidden` the "
              "share of the exchange hidden behind the interior update and `vs alone` T_alone/T_step "
              "(fdmini `--baseline`, each rank's block alone, average over ranks); `model us` and "
              "`model %` the model's step and share of one GPU (bench/model); floors as in the "
              "strong table. The CSV beside this file is collect.py's summary of the same runs.", ""]
    cols = [("N", "block"), ("mode", "mode"), ("GPUs", "gpus"), ("T", "T"), ("path", "path"),
            ("step us", "step_us"), ("% of 1 GPU", "pct_one_gpu"), ("hidden %", "hidden_pct"),
            ("vs alone", "eff_alone"), ("F1", "F1_us"), ("X", "X_us"), ("F_p", "Fp_us"),
            ("X/F_p", "X_over_Fp"), ("model us", "model_us"), ("model %", "model_pct")]
    write_md(os.path.join(out, prefix + "-weak.md"), lines, cols, rows)
    summary = os.path.join(out, prefix + "-weak.csv")
    folders = [folder for (_, folder) in chosen.values()]
    p = subprocess.run([sys.executable, os.path.join(SCALING, "collect.py"), *folders, "--study", "weak",
                        "-o", os.path.join(tmp, "weak-results.csv"), "-s", summary],
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise TableError("collect.py failed:\n" + p.stdout + p.stderr)
    if not plots:
        return
    pdir = os.path.join(tmp, "plots")
    p = subprocess.run([sys.executable, os.path.join(SCALING, "plot.py"), summary, "-o", pdir,
                        "--title-prefix", title_prefix], capture_output=True, text=True)
    if p.returncode != 0:
        raise TableError("plot.py failed (--no-plots leaves the plots out):\n" + p.stdout + p.stderr)
    dest = os.path.join(out, prefix + "-weak")
    os.makedirs(dest, exist_ok=True)
    for f in sorted(glob.glob(os.path.join(pdir, "*-efficiency.png")) + glob.glob(os.path.join(pdir, "*-hidden.png"))):
        shutil.copy(f, dest)
        print(f"scaling_table: wrote {os.path.join(dest, os.path.basename(f))}")


def line(path):
    rec = load(path)
    fmt = lambda v: "-" if v is None else f"{v:.2f}"
    x, fp = floor(rec, "exchange_alone"), floor(rec, "Fp")
    return (f"step {step_us(rec):.2f} us, T {(rec.get('fuse') or {}).get('steps', 1)}, path {path_of(rec)}, "
            f"F1 {fmt(f1(rec))} X {fmt(x)} F_p {fmt(fp)} us, {rec['verification'].get('status')}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("parts", nargs="*")
    ap.add_argument("-o", "--out", default=".")
    ap.add_argument("--prefix", default="")
    ap.add_argument("--no-plots", action="store_true")
    ap.add_argument("--title-prefix", default="")
    ap.add_argument("--line", metavar="RECORD")
    a = ap.parse_args()
    sys.path.insert(0, MODEL_DIR)
    import needs  # pylint: disable=import-outside-toplevel
    needs.reexec(__file__)
    if not needs.have(("numpy",)) and not a.line:
        print("scaling_table: warning: numpy is not installed: the model columns are left empty",
              file=sys.stderr)
    tmp = tempfile.mkdtemp()
    try:
        if a.line:
            print(line(a.line))
            return 0
        if not a.parts:
            ap.error("give the parts (scaling.sh's tarballs or folders)")
        parts = find_parts(a.parts, tmp)
        srows = strong_rows(parts)
        chosen = weak_dirs(parts)
        wrows = weak_rows(chosen)
        if not srows and not wrows:
            raise TableError("no records in the parts")
        first = None
        for d, _ in parts:
            for path in glob.glob(os.path.join(d, "**", "*.json"), recursive=True):
                if os.path.basename(path) not in ("part.json", "study.json"):
                    first = path
                    break
            if first:
                break
        with open(first) as f:
            device = json.load(f).get("device", "device")
        gpus = max(p[1].get("gpus", 1) for p in parts)
        prefix = a.prefix or f"{re.sub(r'[^A-Za-z0-9]+', '-', device).strip('-')}x{gpus}"
        title = f"{device}, {gpus} GPU(s) of one node"
        title_prefix = a.title_prefix or f"{gpus}x {device}: "
        os.makedirs(a.out, exist_ok=True)
        if srows:
            write_strong(srows, parts, title, a.out, prefix)
            print(f"scaling_table: wrote {os.path.join(a.out, prefix + '-strong.md')} and .csv ({len(srows)} rows)")
            print(open(os.path.join(a.out, prefix + "-strong.md")).read())
        if wrows:
            write_weak(wrows, chosen, parts, title, a.out, prefix, not a.no_plots, title_prefix, tmp)
            print(f"scaling_table: wrote {os.path.join(a.out, prefix + '-weak.md')} and .csv ({len(wrows)} rows)")
            print(open(os.path.join(a.out, prefix + "-weak.md")).read())
    except TableError as e:
        print(f"scaling_table: error: {e}", file=sys.stderr)
        return 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

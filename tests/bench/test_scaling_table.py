#!/usr/bin/env python3
"""test_scaling_table.py - bench/multigpu/scaling_table.py on JSON records made up here (the
keys it and collect.py read, as fdmini writes them), in the folders bench/multigpu/scaling.sh
writes: the strong table's speedup and efficiency against the 1-GPU run of the same call
(median of repeats; 8 ranks on 4 GPUs counted as 4 GPUs), F_p absent (an older binary) and null
(no neighbour on another GPU) as empty cells, X / F_p, the path (signalled where passes were),
a later call taking a case whole, the weak table's share of one GPU and of the exchange hidden
beside collect.py's summary of the same records, parts merged from tarballs, and a record
that failed its verification refused; so are a stray record of another case in a weak folder,
the record of a run study.json says failed, and unreadable tarballs, part.json files and
records (one error line naming the file). Exit 0 when every check passes; prints PASS:/FAIL:."""
import csv
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile

import checks  # noqa: E402 (tests/bench/checks.py, beside this file)
from checks import check  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
TOOL = os.path.join(HERE, "..", "..", "bench", "multigpu", "scaling_table.py")




def stat(v):
    return {"min": v, "avg": v, "max": v}


def record(op, step_ms, ranks, procs, glob_, floors=None, path="ipc", signalled=0, T=1, S=1,
           passed=True, baseline=None):
    """A record with the keys collect.py checks and those scaling_table.py reads; floors is
    {name: value or None}; a name left out is absent from floors_us."""
    rec = {
        "schema": "fdmini-run/1", "git_commit": "abc1234", "date": "2026-12-01T00:00:00Z",
        "device": "NVIDIA H200", "backend": "cuda", "precision": "double", "op": op,
        "kernel": "zmarch", "mpi_gpu": "aware", "ranks": ranks, "overlap": True,
        "procs": procs, "global": glob_, "local_min": [glob_[d] // procs[d] for d in range(3)],
        "local_max": [glob_[d] // procs[d] for d in range(3)],
        "phases_ms": {p: stat(0.0) for p in ("pack", "exchange", "unpack", "interior", "boundary")},
        "bandwidth_per_rank_GBs": stat(1000.0), "halo_path": path if ranks > 1 else "none",
        "halo_width": S, "fuse": {"steps": T},
        "graphs": {"on": True, "exchange_signalled_passes": signalled},
        "floors_us": {k: (None if v is None else stat(v)) for k, v in (floors or {}).items()},
        "verification": {"checked": True, "passed": passed, "status": "PASS" if passed else "FAIL"},
        "baseline": baseline is not None,
    }
    rec["phases_ms"]["step"] = {"min": step_ms * 0.9, "avg": step_ms * 0.95, "max": step_ms}
    if baseline is not None:
        eff, hidden = baseline
        rec["alone_step_ms"] = stat(step_ms * eff)
        rec["efficiency"] = stat(eff)
        rec["hidden_share"] = stat(hidden)
    return rec


def put(folder, name, rec):
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, name + ".json"), "w") as f:
        json.dump(rec, f)


def part(root, name, started, kind="strong"):
    d = os.path.join(root, name)
    os.makedirs(os.path.join(d, "records"), exist_ok=True)
    with open(os.path.join(d, "part.json"), "w") as f:
        json.dump({"part": kind, "ops": ["heat"], "gpus": 4, "started": started, "host": "node",
                   "steps": "default", "repeats": "default", "sizes": "default"}, f)
    return d


def run(args):
    p = subprocess.run([sys.executable, TOOL] + args, capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


def table(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def num(row, key):
    try:
        return float(row[key])
    except (KeyError, ValueError):
        return float("nan")


def near(a, b):
    return abs(a - b) <= 1e-6 * max(1.0, abs(b))


tmp = tempfile.mkdtemp()
try:
    G = [512, 512, 512]
    # call A: jacobi 512^3 (the checks below) and heat 128^3 (taken over by call B)
    a = part(tmp, "strong-a", "2026-12-01T10:00:00Z")
    r = os.path.join(a, "records")
    one = {"graph": 2.0, "copy": 300.0}
    put(r, "strong-jacobi-512-T1-g1r1-r1", record("jacobi", 0.600, 1, [1, 1, 1], G, one))
    put(r, "strong-jacobi-512-T1-g1r1-r2", record("jacobi", 0.640, 1, [1, 1, 1], G, one))  # median 0.620
    put(r, "strong-jacobi-512-T1-g2r2-r1", record("jacobi", 0.400, 2, [1, 1, 2], G,
                                                  dict(one, latency=3.0, exchange_alone=24.0, Fp=8.0)))
    # an older binary: no Fp key at all; signalled passes
    put(r, "strong-jacobi-512-T1-g4r4-r1", record("jacobi", 0.200, 4, [1, 2, 2], G,
                                                  dict(one, exchange_alone=30.0), signalled=12))
    # 8 ranks on 4 GPUs under MPS: Fp null (as where no neighbour is on another GPU)
    put(r, "strong-jacobi-512-T1-g4r8-mps-r1", record("jacobi", 0.250, 8, [2, 2, 2], G,
                                                      dict(one, exchange_alone=20.0, Fp=None)))
    # S4-auto without its 1-GPU run in this call: no speedup or efficiency
    put(r, "strong-jacobi-512-S4-auto-g2r2-r1", record("jacobi", 0.300, 2, [1, 1, 2], G,
                                                       dict(one, exchange_alone=40.0, Fp=10.0), T=4, S=4))
    put(r, "strong-heat-128-T1-g1r1-r1", record("heat", 0.100, 1, [1, 1, 1], [128] * 3, one))
    put(r, "strong-heat-128-T1-g2r2-r1", record("heat", 0.001, 2, [1, 1, 2], [128] * 3, one))
    # call B, later: heat 128^3 again (this call's rows are taken, against this call's 1 GPU)
    b = part(tmp, "strong-b", "2026-12-02T10:00:00Z")
    r = os.path.join(b, "records")
    put(r, "strong-heat-128-T1-g1r1-r1", record("heat", 0.020, 1, [1, 1, 1], [128] * 3, one))
    put(r, "strong-heat-128-T1-g2r2-r1", record("heat", 0.016, 2, [1, 1, 2], [128] * 3, one))
    tb = os.path.join(tmp, "strong-b.tar.gz")
    with tarfile.open(tb, "w:gz") as t:
        t.add(b, arcname="strong-b")
    shutil.rmtree(b)

    # weak: a study folder as study.py writes it (study.json and the records)
    w = part(tmp, "weak-a", "2026-12-01T11:00:00Z", kind="weak")
    sd = os.path.join(w, "weak-heat-512-T1")
    runs = []
    for n, procs, step, base in ((1, [1, 1, 1], 0.50, (1.0, 1.0)), (2, [1, 1, 2], 0.51, (0.98, 0.90)),
                                 (4, [1, 2, 2], 0.52, (0.96, 0.80))):
        nm = f"weak-512x512x512-heat-overlap-width1-fuse1-n{n:04d}-r1"
        put(sd, nm, record("heat", step, n, procs, [512 * procs[0], 512 * procs[1], 512 * procs[2]],
                           dict(one, exchange_alone=25.0, Fp=9.0) if n > 1 else one, baseline=base))
        runs.append({"record": nm + ".json", "ranks": n, "nodes": None, "repeat": 1,
                     "variant": "overlap-width1-fuse1"})
    with open(os.path.join(sd, "study.json"), "w") as f:
        json.dump({"schema": "fdmini-study/1", "study": "weak", "size": [512, 512, 512], "op": "heat",
                   "runs": runs}, f)

    out = os.path.join(tmp, "out")
    code, text = run([a, tb, w, "-o", out, "--no-plots"])
    check("tables made from folders and a tarball", code == 0, text)
    s = {(x["op"], x["global"], x["mode"], x["gpus"], x["ranks"]): x
         for x in table(os.path.join(out, "NVIDIA-H200x4-strong.csv"))}
    need = {"op", "global", "gpus", "ranks", "mode", "step_us", "efficiency", "X_us", "Fp_us", "path"}
    check("strong CSV has the required columns", need <= set(next(iter(s.values())).keys()), list(s)[:1])
    x = s[("jacobi", "512", "T1", "1", "1")]
    check("1 GPU: median of its repeats, efficiency 1", near(num(x, "step_us"), 620.0) and near(num(x, "efficiency"), 1.0),
          x)
    x = s[("jacobi", "512", "T1", "2", "2")]
    check("2 GPUs: speedup T1/TN", near(num(x, "speedup"), 620 / 400), x)
    check("2 GPUs: efficiency T1/(2 TN)", near(num(x, "efficiency"), 620 / (2 * 400)), x)
    check("2 GPUs: X, F_p and X/F_p", near(num(x, "X_us"), 24.0) and near(num(x, "Fp_us"), 8.0)
          and near(num(x, "X_over_Fp"), 3.0), x)
    check("2 GPUs: F1 = max(F_g, F_c), step/F1", near(num(x, "F1_us"), 300.0) and near(num(x, "step_over_F1"), 400 / 300), x)
    check("path ipc", x["path"] == "ipc", x)
    x = s[("jacobi", "512", "T1", "4", "4")]
    check("Fp absent (older binary): empty cells", x["Fp_us"] == "" and x["X_over_Fp"] == "" and near(num(x, "X_us"), 30.0), x)
    check("signalled passes: path signalled", x["path"] == "signalled", x)
    check("4 GPUs: efficiency T1/(4 TN)", near(num(x, "efficiency"), 620 / 800), x)
    x = s[("jacobi", "512", "T1", "4", "8")]
    check("8 ranks on 4 GPUs: efficiency over 4 GPUs, MPS on", near(num(x, "efficiency"), 620 / (4 * 250))
          and x["mps"] == "on", x)
    check("Fp null: empty cells", x["Fp_us"] == "" and x["X_over_Fp"] == "", x)
    x = s[("jacobi", "512", "S4-auto", "2", "2")]
    check("no 1-GPU run of the mode: no efficiency", x["efficiency"] == "" and x["speedup"] == "", x)
    check("T as the run took it", x["T"] == "4" and x["S"] == "4", x)
    x = s[("heat", "128", "T1", "2", "2")]
    check("a later call takes the case, against its own 1 GPU", near(num(x, "efficiency"), 20 / (2 * 16))
          and x["call"] == "2026-12-02T10:00:00Z", x)
    check("the earlier call's heat 128 named as left out", "left out" in text, text)
    md = open(os.path.join(out, "NVIDIA-H200x4-strong.md")).read()
    check("markdown: a table per operator", "## heat" in md and "## jacobi" in md and "| 512 | T1 | 2 | 2 |" in md, md)

    wr = {x["ranks"]: x for x in table(os.path.join(out, "NVIDIA-H200x4-weak.csv"))} if os.path.exists(
        os.path.join(out, "NVIDIA-H200x4-weak.csv")) else {}
    check("weak CSV is collect.py's summary", set(wr) == {"1", "2", "4"} and "hidden_share" in wr.get("4", {}), wr)
    if wr:
        check("weak CSV efficiency T1/TN", near(num(wr["4"], "efficiency"), 0.50 / 0.52), wr["4"])
    wmd = open(os.path.join(out, "NVIDIA-H200x4-weak.md")).read()
    check("weak md: % of one GPU and hidden at 4 GPUs",
          f"| 512 | T1 | 4 | 1 | ipc | 520.0 | {100 * 0.50 / 0.52:.1f} | 80.0 | 0.960 |" in wmd, wmd)
    check("weak md: 1 GPU has no hidden share", "| 512 | T1 | 1 | 1 | none | 500.0 | 100.0 | - | - |" in wmd, wmd)

    code, text = run(["--line", os.path.join(a, "records", "strong-jacobi-512-T1-g2r2-r1.json")])
    check("--line", code == 0 and "step 400.00 us" in text and "F_p 8.00" in text, text)

    # a record that failed its verification: refused, named
    put(os.path.join(a, "records"), "strong-jacobi-512-T1-g4r4-r2",
        record("jacobi", 0.2, 4, [1, 2, 2], G, one, passed=False))
    code, text = run([a, "-o", os.path.join(tmp, "out2"), "--no-plots"])
    check("failed verification refused", code == 1 and "strong-jacobi-512-T1-g4r4-r2" in text, text)

    # a strong record is the case its name says: one of another rank count, global grid,
    # operator or mode would be tabled under the name's; refused, named
    os.remove(os.path.join(a, "records", "strong-jacobi-512-T1-g4r4-r2.json"))
    for name, rec in (("strong-jacobi-512-T1-g2r2-r9", record("jacobi", 0.1, 4, [1, 2, 2], G, one)),
                      ("strong-jacobi-512-T1-g2r2-r8", record("jacobi", 0.1, 2, [1, 1, 2], [256] * 3, one)),
                      ("strong-heat-512-T1-g2r2-r7", record("jacobi", 0.1, 2, [1, 1, 2], G, one)),
                      ("strong-jacobi-512-S4-auto-g2r2-r6", record("jacobi", 0.1, 2, [1, 1, 2], G, one))):
        put(os.path.join(a, "records"), name, rec)
        code, text = run([a, "-o", os.path.join(tmp, "out5"), "--no-plots"])
        check(f"strong: {name} of another case refused, named", code == 1 and f"{name}.json" in text
              and "not the case of its name" in text and "Traceback" not in text, text)
        os.remove(os.path.join(a, "records", name + ".json"))

    # a weak folder holds one case: a stray record of another operator, halo width or fuse
    # (same rank count, faster) would move the row's median; refused, the file named
    for stray, rec in (("stray-op", record("jacobi", 0.05, 4, [1, 2, 2], [512, 1024, 1024], one)),
                       ("stray-width", record("heat", 0.05, 4, [1, 2, 2], [512, 1024, 1024], one, S=4)),
                       ("stray-fuse", record("heat", 0.05, 4, [1, 2, 2], [512, 1024, 1024], one, T=2))):
        put(sd, stray, rec)
        code, text = run([w, "-o", os.path.join(tmp, "out3"), "--no-plots"])
        check(f"weak: a record of another case ({stray}) refused, named",
              code == 1 and f"{stray}.json" in text and "Traceback" not in text, text)
        os.remove(os.path.join(sd, stray + ".json"))

    # a run study.json says exited non-zero (its record left behind): refused, named
    with open(os.path.join(sd, "study.json")) as f:
        man = json.load(f)
    man["runs"][2]["exit_code"] = 1
    with open(os.path.join(sd, "study.json"), "w") as f:
        json.dump(man, f)
    code, text = run([w, "-o", os.path.join(tmp, "out4"), "--no-plots"])
    check("weak: the record of a run that exited 1 refused, named",
          code == 1 and "n0004-r1.json" in text and "exited 1" in text, text)

    # unreadable inputs: one line naming the file, no traceback
    bad = os.path.join(tmp, "bad.tar.gz")
    with open(bad, "wb") as f:
        f.write(b"\x1f\x8b not a tarball")
    code, text = run([bad, "-o", os.path.join(tmp, "out5"), "--no-plots"])
    check("corrupt tarball: one error naming it", code == 1 and "bad.tar.gz" in text
          and "Traceback" not in text, text)
    empty = os.path.join(tmp, "empty")
    os.makedirs(os.path.join(empty, "x"))
    tgz = os.path.join(tmp, "nopart.tar.gz")
    with tarfile.open(tgz, "w:gz") as t:
        t.add(os.path.join(empty, "x"), arcname="x")
    code, text = run([tgz, "-o", os.path.join(tmp, "out6"), "--no-plots"])
    check("tarball without part.json: the tarball named", code == 1 and "nopart.tar.gz" in text
          and "Traceback" not in text, text)
    bp = part(tmp, "badpart", "2026-12-03T10:00:00Z")
    with open(os.path.join(bp, "part.json"), "w") as f:
        f.write("{")
    code, text = run([bp, "-o", os.path.join(tmp, "out7"), "--no-plots"])
    check("bad part.json: one error naming it", code == 1 and "part.json" in text
          and "Traceback" not in text, text)
    with open(os.path.join(bp, "part.json"), "w") as f:
        json.dump({"started": "x"}, f)
    with open(os.path.join(bp, "records", "strong-heat-128-T1-g1r1-r1.json"), "w") as f:
        json.dump([1, 2], f)
    code, text = run([bp, "-o", os.path.join(tmp, "out8"), "--no-plots"])
    check("a record that is not an object: one error naming it", code == 1
          and "strong-heat-128-T1-g1r1-r1.json" in text and "Traceback" not in text, text)
finally:
    shutil.rmtree(tmp, ignore_errors=True)
print(f"scaling_table test: {'FAILED' if checks.failed else 'passed'} ({checks.failed} failed)")
sys.exit(1 if checks.failed else 0)

#!/usr/bin/env python3
"""test_collect_keeps_every_point.py - bench/scaling/collect.py when the autotune picks another
kernel family at N ranks than on one (issue 25, item 12): every point stays in the summary
with an efficiency, against the 1-rank row of the same kernel where there is one and else the
fastest 1-rank row of any kernel, and `efficiency_baseline` says which; plot.py keeps such a
point on its variant's line (one figure per study, not one per kernel).

Made-up records of a weak study (12^3 per rank, 1, 2, 4 and 8 ranks; the 4- and 8-rank runs
chose zmarch) are collected twice: without a 1-rank zmarch run, and with one.
Usage: tests/bench/test_collect_keeps_every_point.py     Exit 0 when every check passed.
"""
import csv
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SCALING = os.path.join(HERE, "..", "..", "bench", "scaling")
failures = []


def check(ok, what):
    print(("PASS: " if ok else "FAIL: ") + what)
    if not ok:
        failures.append(what)


def record(ranks, kernel, step_ms, variant_overlap=True):
    """A minimal fdmini-run/1 record of a weak study with 12^3 per rank."""
    procs = {1: [1, 1, 1], 2: [1, 1, 2], 4: [1, 2, 2], 8: [2, 2, 2]}[ranks]
    phase = {"min": step_ms, "avg": step_ms, "max": step_ms}
    return {
        "schema": "fdmini-run/1", "git_commit": "abc", "date": "2026-12-01T00:00:00Z",
        "device": "host CPU", "backend": "host", "precision": "double", "op": "heat",
        "kernel": kernel, "tile": 1, "mpi_gpu": "host", "ranks": ranks, "overlap": variant_overlap,
        "procs": procs, "global": [12 * p for p in procs], "local_min": [12, 12, 12],
        "local_max": [12, 12, 12], "iters": 5, "warmup": 1,
        "phases_ms": {k: dict(phase) for k in ("pack", "exchange", "unpack", "interior",
                                               "boundary", "step")},
        "bandwidth_per_rank_GBs": {"min": 1.0, "avg": 1.0, "max": 1.0},
        "verification": {"checked": True, "passed": True, "status": "PASS"},
    }


def collect(folder, out):
    """collect.py on the folder's records; the summary rows (dicts) or None."""
    res = subprocess.run([sys.executable, os.path.join(SCALING, "collect.py"), folder, "--study", "weak",
                          "-o", os.path.join(out, "results.csv"), "-s", os.path.join(out, "summary.csv")],
                         capture_output=True, text=True, check=False)
    if res.returncode != 0:
        print(res.stdout + res.stderr)
        return None, res.stderr
    with open(os.path.join(out, "summary.csv"), newline="") as f:
        return list(csv.DictReader(f)), res.stderr


def main():
    with tempfile.TemporaryDirectory() as work:
        recs = os.path.join(work, "records")
        os.makedirs(recs)
        runs = [(1, "reordered", 1.0), (2, "reordered", 1.1), (4, "zmarch", 1.25), (8, "zmarch", 1.6)]
        for i, (n, k, t) in enumerate(runs):
            with open(os.path.join(recs, f"r{i}.json"), "w") as f:
                json.dump(record(n, k, t), f)
        rows, err = collect(recs, work)
        check(rows is not None, "collect.py accepts records whose kernel changes with the scale")
        if rows is None:
            return 1
        check("efficiency left empty" not in err, "no point loses its efficiency (warning: " + err.strip() + ")")
        by = {int(r["ranks"]): r for r in rows}
        check(sorted(by) == [1, 2, 4, 8], f"every point kept: ranks {sorted(by)}")
        check(all("efficiency_baseline" in r for r in rows), "summary.csv has the efficiency_baseline column")
        for n in (1, 2):
            check(by[n]["efficiency_baseline"] == "same kernel", f"{n} rank(s), reordered: against the same kernel")
        for n, t in ((4, 1.25), (8, 1.6)):
            r = by[n]
            check(r["kernel"] == "zmarch" and r["efficiency_baseline"] == "best 1-rank: reordered",
                  f"{n} ranks, zmarch, no 1-rank zmarch run: against the best 1-rank run "
                  f"({r['efficiency_baseline']!r})")
            check(r["efficiency"] and abs(float(r["efficiency"]) - 1.0 / t) < 1e-12,
                  f"{n} ranks: efficiency {r['efficiency']} = T1 / TN = {1.0 / t}")
            check(r["speedup"] and abs(float(r["speedup"]) - n * 1.0 / t) < 1e-12,
                  f"{n} ranks: scaled speedup {r['speedup']} = N T1 / TN")
        check(abs(float(by[1]["efficiency"]) - 1.0) == 0.0, "1 rank: efficiency exactly 1")

        # a 1-rank zmarch run as well (slower than reordered): zmarch points take it
        with open(os.path.join(recs, "r9.json"), "w") as f:
            json.dump(record(1, "zmarch", 1.2), f)
        rows, _ = collect(recs, work)
        check(rows is not None and len(rows) == 5, "five summary rows: one per kernel and scale")
        if rows is None:
            return 1
        zm = {int(r["ranks"]): r for r in rows if r["kernel"] == "zmarch"}
        check(zm[4]["efficiency_baseline"] == "same kernel" and abs(float(zm[4]["efficiency"]) - 1.2 / 1.25) < 1e-12,
              f"4 ranks, zmarch, with a 1-rank zmarch run: against it ({zm[4]['efficiency']})")
        best = [r for r in rows if int(r["ranks"]) == 4][0]
        check(abs(float(best["efficiency_vs_best_1rank"]) - 1.0 / 1.25) < 1e-12,
              "efficiency_vs_best_1rank takes the fastest 1-rank run of any kernel")

        # plot.py: one study, one figure of each kind; the zmarch points on the overlap line
        try:
            import matplotlib  # noqa: F401  pylint: disable=import-outside-toplevel,unused-import
            have_mpl = True
        except ImportError:
            have_mpl = os.access("/usr/bin/python3", os.X_OK) and subprocess.run(
                ["/usr/bin/python3", "-c", "import matplotlib"], capture_output=True, check=False).returncode == 0
        if have_mpl:
            plots = os.path.join(work, "plots")
            res = subprocess.run([sys.executable, os.path.join(SCALING, "plot.py"), os.path.join(work, "summary.csv"),
                                  "-o", plots], capture_output=True, text=True, check=False)
            pngs = sorted(p for p in os.listdir(plots) if p.endswith(".png")) if res.returncode == 0 else []
            check(res.returncode == 0 and len(pngs) == 3 and all("reordered+zmarch" in p for p in pngs),
                  f"plot.py: one study of both kernels, 3 figures ({pngs}; {res.stderr.strip()[-200:]})")
            svg = os.path.join(plots, [p for p in pngs if p.endswith("-efficiency.png")][0][:-4] + ".svg") if pngs else ""
            text = open(svg, encoding="utf-8").read() if svg and os.path.exists(svg) else ""
            check("overlap (zmarch)" in text and "overlap (reordered)" in text,
                  "the variant with rows of two kernels at one scale gets a line per kernel")
        else:
            print("note: no matplotlib: plot.py not checked")
    print(f"collect test: {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

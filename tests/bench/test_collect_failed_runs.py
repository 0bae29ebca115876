#!/usr/bin/env python3
"""test_collect_failed_runs.py - bench/scaling/collect.py and the runs that failed: a record
whose verification failed, and the record of a run that study.json says exited non-zero (or
timed out), are rejected, each named; with --allow-failed they are kept in results.csv, marked,
and left out of summary.csv (its medians, repeats and efficiencies are those of the good runs
alone), their number said on stderr. And bad inputs are one error line, no traceback: a runs
entry of study.json without its record, -o an existing folder; a folder whose name holds glob
characters (br[1]) is read. Loose records: a copy of one is not a second repeat, an output
over a record read (or -o and -s the same) is refused, a failing summary writes nothing, nodes
come from the record.

Made-up records of a weak study (12^3 per rank, 1 and 2 ranks, 3 repeats each).
Usage: tests/bench/test_collect_failed_runs.py     Exit 0 when every check passed.
"""
import csv
import json
import os
import subprocess
import sys
import tempfile

import checks  # noqa: E402 (tests/bench/checks.py, beside this file)
from checks import check  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
COLLECT = os.path.join(HERE, "..", "..", "bench", "scaling", "collect.py")


def record(ranks, step_ms, passed=True):
    """A minimal fdmini-run/1 record of a weak study with 12^3 per rank."""
    procs = {1: [1, 1, 1], 2: [1, 1, 2]}[ranks]
    phase = {"min": step_ms, "avg": step_ms, "max": step_ms}
    return {
        "schema": "fdmini-run/1", "git_commit": "abc", "date": "2026-12-01T00:00:00Z",
        "device": "host CPU", "backend": "host", "precision": "double", "op": "heat",
        "kernel": "zmarch", "tile": 1, "mpi_gpu": "host", "ranks": ranks, "overlap": True,
        "procs": procs, "global": [12 * p for p in procs], "local_min": [12, 12, 12],
        "local_max": [12, 12, 12], "iters": 5, "warmup": 1,
        "phases_ms": {k: dict(phase) for k in ("pack", "exchange", "unpack", "interior",
                                               "boundary", "step")},
        "bandwidth_per_rank_GBs": {"min": 1.0, "avg": 1.0, "max": 1.0},
        "verification": {"checked": True, "passed": passed, "status": "PASS" if passed else "FAIL",
                         "detail": "" if passed else "max error 1e3"},
    }


def study(folder, bad_exit=1):
    """A study folder: 1 rank 1.0 ms x3; 2 ranks 2.0 ms x2, one FAIL at 0.1 ms and one run that
    exited bad_exit (null: timed out) leaving a 0.1 ms record."""
    os.makedirs(folder, exist_ok=True)
    runs = []
    for ranks, rep, step, passed, code in ((1, 1, 1.0, True, 0), (1, 2, 1.0, True, 0),
                                           (1, 3, 1.0, True, 0), (2, 1, 2.0, True, 0),
                                           (2, 2, 2.0, True, 0), (2, 3, 0.1, False, 0),
                                           (2, 4, 0.1, True, bad_exit)):
        name = f"weak-12x12x12-heat-overlap-n{ranks:04d}-r{rep}.json"
        with open(os.path.join(folder, name), "w") as f:
            json.dump(record(ranks, step, passed), f)
        runs.append({"record": name, "ranks": ranks, "nodes": None, "repeat": rep,
                     "variant": "overlap", "exit_code": code})
    man = {"schema": "fdmini-study/1", "study": "weak", "size": [12, 12, 12], "op": "heat",
           "runs": runs}
    with open(os.path.join(folder, "study.json"), "w") as f:
        json.dump(man, f)
    return man


def collect(*args):
    p = subprocess.run([sys.executable, COLLECT, *args], capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


def rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


with tempfile.TemporaryDirectory() as work:
    d = os.path.join(work, "weak")
    man = study(d)
    res, summ = os.path.join(work, "results.csv"), os.path.join(work, "summary.csv")

    code, text = collect(d, "-o", res, "-s", summ)
    check("failed runs rejected without --allow-failed", code == 1, text)
    check("the FAIL record named", "n0002-r3.json" in text and "verification FAILED" in text, text)
    check("the run that exited 1 named", "n0002-r4.json" in text and "exit 1" in text, text)

    code, text = collect(d, "-o", res, "-s", summ, "--allow-failed")
    check("--allow-failed: collected", code == 0, text)
    if code == 0:
        r = {os.path.basename(x["record"]): x for x in rows(res)}
        check("results.csv keeps all 7 runs", len(r) == 7, list(r))
        check("results.csv: the FAIL run marked failed",
              r["weak-12x12x12-heat-overlap-n0002-r3.json"]["verification"] == "failed", r)
        check("results.csv: the run that exited 1 marked",
              r["weak-12x12x12-heat-overlap-n0002-r4.json"].get("run_status") == "exit 1", r)
        s = {x["ranks"]: x for x in rows(summ)}
        two = s.get("2", {})
        check("summary: failed runs not counted in repeats", two.get("repeats") == "2", two)
        check("summary: median step of the good runs alone", two.get("step_ms") == "2.0", two)
        check("summary: efficiency of the good runs alone", two.get("efficiency") == "0.5", two)
        check("stderr says 2 failed runs left out", "2 failed run(s) left out" in text, text)

    # a run that timed out (exit_code null) is treated the same
    d2 = os.path.join(work, "timeout")
    study(d2, bad_exit=None)
    code, text = collect(d2, "-o", res)
    check("a run that timed out rejected, named", code == 1 and "n0002-r4.json" in text
          and "timed out" in text, text)

    # glob characters in the folder's name
    d3 = os.path.join(work, "br[1]")
    study(d3, bad_exit=0)
    code, text = collect(d3, "-o", res, "--allow-failed")
    check("a folder named br[1] read", code == 0 and len(rows(res)) == 7, text)

    # bad inputs: one error line, no traceback
    man["runs"][0].pop("record")
    with open(os.path.join(d, "study.json"), "w") as f:
        json.dump(man, f)
    code, text = collect(d, "-o", res)
    check("a runs entry without record: one error naming study.json", code == 1
          and "study.json" in text and "Traceback" not in text, text)
    code, text = collect(d2, "-o", work, "--allow-failed")
    check("-o an existing folder: one error", code == 1 and "Traceback" not in text
          and work in text, text)

    # loose records of runs (with start_time and total_s, as fdmini writes them): a copy of one
    # is no second repeat; an output that is a record read, or -o and -s the same, is refused;
    # nothing is written when the summary fails; nodes from the record's nodes.count
    loose = os.path.join(work, "loose")
    os.makedirs(loose)
    paths = []
    for ranks, t in ((1, 1.25), (2, 0.75)):
        rec = record(ranks, 1.0)
        rec.update({"start_time": f"2026-12-03T0{ranks}:00:00Z", "total_s": t,
                    "nodes": {"count": ranks, "ranks_per_node": 1}})
        paths.append(os.path.join(loose, f"r{ranks}.json"))
        with open(paths[-1], "w") as f:
            json.dump(rec, f)
    dup = os.path.join(loose, "copy-of-r2.json")
    with open(paths[1]) as src, open(dup, "w") as dst:
        dst.write(src.read())
    code, text = collect(*paths, dup, "-o", res, "--study", "weak")
    check("a copy of a record: rejected as the same run, named", code == 1 and "copy-of-r2.json"
          in text and "the same run as" in text and "Traceback" not in text, text)
    before = open(paths[0]).read()
    code, text = collect(*paths, "-o", paths[0], "--study", "weak")
    check("-o one of the records: refused, the record intact", code == 1 and "is one of the records"
          in text and open(paths[0]).read() == before, text)
    code, text = collect(*paths, "-o", res, "-s", res, "--study", "weak")
    check("-o and -s the same file: refused", code == 1 and "the same file" in text, text)
    with open(res, "w") as f:
        f.write("KEEP\n")
    code, text = collect(*paths, "-o", res, "-s", summ)  # no study type: the summary fails
    check("a summary that fails writes no results.csv either", code == 1 and "no study type" in text
          and open(res).read() == "KEEP\n", text)
    code, text = collect(*paths, "-o", res, "--study", "weak")
    check("nodes from the record's nodes.count", code == 0 and [x["nodes"] for x in rows(res)]
          == ["1", "2"], text)

print(f"collect failed-runs test: {'FAILED' if checks.failed else 'passed'} ({checks.failed} failed)")
sys.exit(1 if checks.failed else 0)

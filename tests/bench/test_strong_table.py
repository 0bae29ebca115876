#!/usr/bin/env python3
"""test_strong_table.py - bench/strong/table.py small on JSON records made up here (the keys it
reads, as fdmini writes them): the step per time step and the floors per row, each issue-26
target met and missed where its inputs say so, "before" taken from a before-run in the folder
or, with --before, from an earlier table's CSV (and the markdown says so), and a record whose
verification failed refused. Exit 0 when every check passes; prints PASS:/FAIL: lines."""
import csv
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import checks  # noqa: E402 (tests/bench/checks.py, beside this file)
from checks import check  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
TOOL = os.path.join(HERE, "..", "..", "bench", "strong", "table.py")




def record(step_ms, floors=None, T=1, passed=True):
    f = {k: {"min": v, "avg": v, "max": v} for k, v in (floors or {}).items()}
    return {"phases_ms": {"step": {"min": step_ms, "avg": step_ms, "max": step_ms}},
            "floors_us": f, "fuse": {"steps": T}, "graphs": {"on": True},
            "verification": {"passed": passed, "status": "PASS" if passed else "FAIL"}}


def write(folder, name, rec):
    """The record as NAME.json, with the operator, block and ranks its name says unless it has
    its own."""
    m = re.match(r"(?:after|before)-(\w+)-n(\d+)-np(\d+)-fuse", name)
    if m:
        rec = {"op": m.group(1), "local_max": [int(m.group(2))] * 3, "ranks": int(m.group(3)), **rec}
    with open(os.path.join(folder, name + ".json"), "w") as f:
        json.dump(rec, f)


def run(args):
    p = subprocess.run([sys.executable, TOOL, "small"] + args, capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


def num(row, key):
    try:
        return float(row.get(key, ""))
    except ValueError:
        return float("nan")


def rows(prefix):
    with open(prefix + ".csv", newline="") as f:
        return {(r["op"], r["ranks"], r["block"], r["fuse"]): r for r in csv.DictReader(f)}


tmp = tempfile.mkdtemp()
try:
    rec = os.path.join(tmp, "rec")
    os.mkdir(rec)
    one = {"graph": 2.0, "launch_sync": 9.0, "copy": 4.0}
    two = dict(one, latency=12.0, exchange_alone=34.0)  # floor sum 9 + 12 + 4 = 25
    write(rec, "after-heat-n64-np1-fuse1", record(0.0050, one))             # 5.0 <= 1.5 x 4
    write(rec, "after-heat-n64-np1-fuseauto", record(0.0041, one, T=2))    # 4.1 > 1.0 x 4
    write(rec, "after-heat-n128-np2-fuse1", record(0.0300, two))            # X 34 > 25
    write(rec, "after-heat-n512-np1-fuse1", record(0.7400, {"graph": 2.0, "copy": 740.0}))
    write(rec, "before-heat-n64-np1-fuse1", record(0.0160))
    code, out = run([rec, "-o", os.path.join(tmp, "a")])
    r = rows(os.path.join(tmp, "a"))
    check("table made", code == 0 and len(r) == 4, out)
    check("step in us per time step", abs(num(r[("heat", "1", "64", "1")], "step_us") - 5.0) < 1e-9)
    check("1 rank T = 1 within 1.5 F1: met", r[("heat", "1", "64", "1")]["target_met"] == "True")
    check("1 rank --fuse auto above 1.0 F1: missed", r[("heat", "1", "64", "auto")]["target_met"] == "False")
    check("2 ranks X above its floors: missed", r[("heat", "2", "128", "1")]["target_met"] == "False"
          and abs(num(r[("heat", "2", "128", "1")], "X_over_floor") - 34 / 25) < 1e-9)
    check("before from the folder", abs(num(r[("heat", "1", "64", "1")], "before_us") - 16.0) < 1e-9)
    check("512^3 without a before: no target", r[("heat", "1", "512", "1")].get("target_met", "") == "")

    # --before: the earlier table's before_us where the folder holds no before-run
    with open(os.path.join(tmp, "earlier.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["op", "ranks", "block", "fuse", "before_us", "step_us"])
        w.writerow(["heat", "1", "512", "1", "730.0", "736.0"])
        w.writerow(["heat", "1", "64", "1", "99.0", "5.0"])
    code, out = run([rec, "-o", os.path.join(tmp, "b"), "--before", os.path.join(tmp, "earlier.csv")])
    r = rows(os.path.join(tmp, "b"))
    md = open(os.path.join(tmp, "b.md")).read()
    check("--before fills before_us", code == 0 and abs(num(r[("heat", "1", "512", "1")], "before_us") - 730.0) < 1e-9, out)
    check("--before: 512^3 target judged (740 > 1.01 x 730: missed)", r[("heat", "1", "512", "1")]["target_met"] == "False")
    check("a before-run in the folder wins over --before", abs(num(r[("heat", "1", "64", "1")], "before_us") - 16.0) < 1e-9)
    check("the markdown names the earlier table", "earlier.csv" in md and "not of this run" in md, md[:300])
    write(rec, "after-heat-n512-np1-fuse1", record(0.7400, {"graph": 2.0, "copy": 740.0}))
    with open(os.path.join(tmp, "earlier.csv"), "w", newline="") as f:
        f.write("op,ranks,block,fuse,before_us\nheat,1,512,1,740.0\n")
    code, out = run([rec, "-o", os.path.join(tmp, "c"), "--before", os.path.join(tmp, "earlier.csv")])
    check("--before: 512^3 within 1 %: met", rows(os.path.join(tmp, "c"))[("heat", "1", "512", "1")]["target_met"] == "True")

    # a record of another case than its name says (operator, block, ranks, steps per pass):
    # refused, named
    for what, extra in (("op", {"op": "jacobi"}), ("block", {"local_max": [32, 32, 32]}),
                        ("ranks", {"ranks": 2}), ("steps", {"fuse": {"steps": 2}})):
        write(rec, "after-heat-n64-np1-fuse1", {**record(0.0050, one), **extra})
        code, out = run([rec])
        check(f"a record whose {what} is not its name's: refused, named", code == 1
              and "after-heat-n64-np1-fuse1.json" in out and "not the case its name says" in out
              and "Traceback" not in out, out)
    write(rec, "after-heat-n64-np1-fuse1", record(0.0050, one))

    write(rec, "after-jacobi-n64-np1-fuse1", record(0.0040, one, passed=False))
    code, out = run([rec])
    check("a failed verification is refused", code != 0 and "verification did not pass" in out, out)
finally:
    shutil.rmtree(tmp)
sys.exit(1 if checks.failed else 0)

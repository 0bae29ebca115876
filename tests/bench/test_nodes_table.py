#!/usr/bin/env python3
"""test_nodes_table.py - bench/multigpu/nodes_table.py on made-up records of one cell (heat
128^3 T1, 2 ranks as 2 nodes: today, proxy, auto, none): the CSV and the table's ratios as
computed by hand; then each fault exits 1 with one line naming it and writes nothing (the
outputs of the good call stay byte for byte): a record whose global grid, nodes, halo width or
path is not what its name says, a record whose ranks ran without MPS, a cell without its auto
run, today's run without a proxy run, a folder without records.
Usage: tests/bench/test_nodes_table.py     Exit 0 when every check passed.
"""
import copy
import csv
import json
import os
import subprocess
import sys
import tempfile

import checks  # noqa: E402 (tests/bench/checks.py, beside this file)
from checks import check  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
TOOL = os.path.join(HERE, "..", "..", "bench", "multigpu", "nodes_table.py")


def rec(step_us, path, nodes, fm=None):
    r = {"op": "heat", "ranks": 2, "global": [128, 128, 128], "nodes": {"count": nodes},
         "halo_width": 1, "fuse": {"steps": 1}, "halo_path": path, "device": "GPU",
         "git_commit": "abc", "verification": {"status": "PASS"}, "gpu_mps": True,
         "phases_ms": {"step": {"min": step_us / 1e3, "avg": step_us / 1e3, "max": step_us / 1e3}},
         "floors_us": {"exchange_alone": {"avg": 20.0}}}
    if fm is not None:
        r["floors_us"]["Fm"] = {"avg": fm}
    return r


CELL = {"today": rec(30.0, "mpi", 2), "proxy": rec(20.0, "proxy", 2, fm=18.0),
        "auto": rec(20.2, "proxy", 2), "none": rec(9.0, "ipc", 1)}


def folder(base, name, cell):
    d = os.path.join(base, name)
    os.makedirs(d)
    for v, r in cell.items():
        with open(os.path.join(d, f"t1-heat-128-2-{2 if v != 'none' else 1}-{v}.json"), "w") as f:
            json.dump(r, f)
    return d


def run(d, out):
    p = subprocess.run([sys.executable, TOOL, d, "--csv", out + ".csv", "--md", out + ".md"],
                       capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


with tempfile.TemporaryDirectory() as w:
    out = os.path.join(w, "nodes")
    code, text = run(folder(w, "good", CELL), out)
    check("a whole cell: exit 0", code == 0, text)
    if code == 0:
        rows = {r["variant"]: r for r in csv.DictReader(open(out + ".csv"))}
        check("CSV: 4 rows, steps in us", sorted(rows) == ["auto", "none", "proxy", "today"]
              and rows["proxy"]["step_us"] == "20.000" and rows["proxy"]["Fm_us"] == "18.000", rows)
        md = open(out + ".md").read()
        # proxy / max(F_m 18, none 9) = 1.11; today / proxy = 1.50; auto / today = 0.67
        check("table: the ratios by hand", "| 1.11 | 1.50 | 0.67 | proxy |" in md, md)
    kept = (open(out + ".csv").read(), open(out + ".md").read()) if code == 0 else None

    def fault(name, cell, *named):
        code, text = run(folder(w, name, cell), out)
        check(f"{name}: exit 1, one line naming it, nothing written", code == 1
              and all(n in text for n in named)
              and len(text.strip().splitlines()) == 1 and "Traceback" not in text and kept is not None
              and (open(out + ".csv").read(), open(out + ".md").read()) == kept, text)

    for what, key, value, named in (("global", "global", [64, 64, 64], "global [64, 64, 64], not"),
                                    ("nodes", "nodes", {"count": 1}, "nodes 1, not 2"),
                                    ("width", "halo_width", 4, "halo width 4, not 1"),
                                    ("path", "halo_path", "mpi", "path mpi, not proxy")):
        bad = copy.deepcopy(CELL)
        bad["proxy"][key] = value
        fault(f"proxy record's {what}", bad, "t1-heat-128-2-2-proxy.json", named)
    bad = copy.deepcopy(CELL)
    bad["today"]["gpu_mps"] = False
    fault("a run without MPS", bad, "t1-heat-128-2-2-today.json", "without MPS")
    fault("no auto run", {k: v for k, v in CELL.items() if k != "auto"}, "no auto run")
    fault("no proxy run", {k: v for k, v in CELL.items() if k != "proxy"}, "no proxy run")
    fault("no records", {}, "no records named")

print(f"nodes_table test: {'FAILED' if checks.failed else 'passed'} ({checks.failed} failed)")
sys.exit(1 if checks.failed else 0)

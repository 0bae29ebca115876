#!/usr/bin/env python3
"""test_bench_tool_errors.py - bad inputs to the bench tables and plots give one error line
naming the file and exit 1, never a traceback: bench/multigpu/summarize.py (--help, a missing
folder, an empty one, a tarball without records, a truncated record, one without
verification.passed, and a --baseline-less weak row printed), bench/scaling/plot.py (a CSV
that is not UTF-8, -o an existing file) and bench/strong/table.py (an empty folder, a truncated
record, a record without the graph and copy floors tabled with empty cells).
Usage: tests/bench/test_bench_tool_errors.py     Exit 0 when every check passed.
"""
import json
import os
import subprocess
import sys
import tarfile
import tempfile

import checks  # noqa: E402 (tests/bench/checks.py, beside this file)
from checks import check  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH = os.path.join(HERE, "..", "..", "bench")
SUMMARIZE = os.path.join(BENCH, "multigpu", "summarize.py")
PLOT = os.path.join(BENCH, "scaling", "plot.py")
STRONG = os.path.join(BENCH, "strong", "table.py")


def run(tool, *args):
    p = subprocess.run([sys.executable, tool, *args], capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


def one_error(name, code, text, named):
    check(name, code == 1 and named in text and "Traceback" not in text, text)


def stat(v):
    return {"min": v, "avg": v, "max": v}


def record(step_ms=1.0, floors=None):
    return {"device": "GPU", "halo_path": "ipc", "fuse": {"steps": 1}, "graphs": {"on": True},
            "phases_ms": {p: stat(step_ms if p == "step" else 0.1)
                          for p in ("pack", "exchange", "unpack", "interior", "boundary", "step")},
            "halo_GBs": stat(10.0), "halo_bytes_per_step_max": 1000, "baseline": False,
            "floors_us": floors if floors is not None else {},
            "verification": {"checked": True, "passed": True, "status": "PASS"}}


def put(folder, name, obj, raw=None):
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, name), "w") as f:
        f.write(raw if raw is not None else json.dumps(obj))


with tempfile.TemporaryDirectory() as w:
    # summarize.py
    code, text = run(SUMMARIZE, "--help")
    check("summarize --help: usage, exit 0", code == 0 and "usage" in text and "Traceback" not in text, text)
    one_error("summarize: missing folder", *run(SUMMARIZE, os.path.join(w, "nope")), "nope")
    os.makedirs(os.path.join(w, "empty"))
    one_error("summarize: empty folder is an error", *run(SUMMARIZE, os.path.join(w, "empty")), "empty")
    tgz = os.path.join(w, "norecords.tar.gz")
    with tarfile.open(tgz, "w:gz") as t:
        t.add(os.path.join(w, "empty"), arcname="other")
    one_error("summarize: tarball without records/", *run(SUMMARIZE, tgz), "norecords.tar.gz")
    put(os.path.join(w, "trunc"), "halo-r1.json", None, raw='{"verification": ')
    one_error("summarize: truncated record named", *run(SUMMARIZE, os.path.join(w, "trunc")), "halo-r1.json")
    put(os.path.join(w, "nover"), "halo-r1.json", {"phases_ms": {}})
    one_error("summarize: no verification.passed named", *run(SUMMARIZE, os.path.join(w, "nover")),
              "halo-r1.json")
    weak = os.path.join(w, "weak")
    put(weak, "weak512-1gpu-r1.json", record(1.0))
    put(weak, "weak512-2gpu-r1.json", record(1.1))
    code, text = run(SUMMARIZE, weak)
    check("summarize: weak rows without --baseline print '-'", code == 0 and "weak512-2gpu: weak 512^3"
          in text and "Traceback" not in text, text)

    # plot.py
    bad = os.path.join(w, "latin1.csv")
    with open(bad, "wb") as f:
        f.write("study,size\nweak,\xe9\xff\n".encode("latin-1"))
    one_error("plot: a CSV that is not UTF-8", *run(PLOT, bad, "-o", os.path.join(w, "p")), "latin1.csv")
    summary = os.path.join(HERE, "..", "..", "bench", "results", "NVIDIA-H200x4-weak.csv")
    afile = os.path.join(w, "afile")
    open(afile, "w").close()
    one_error("plot: -o an existing file", *run(PLOT, summary, "-o", afile), "afile")

    # bench/strong/table.py
    os.makedirs(os.path.join(w, "sempty"))
    one_error("strong table: empty folder is an error", *run(STRONG, "small", os.path.join(w, "sempty")),
              "sempty")
    put(os.path.join(w, "strunc"), "after-heat-n64-np1-fuse1.json", None, raw="{")
    one_error("strong table: truncated record named", *run(STRONG, "small", os.path.join(w, "strunc")),
              "after-heat-n64-np1-fuse1.json")
    put(os.path.join(w, "nofloor"), "after-heat-n64-np1-fuse1.json",
        {**record(0.005, {"launch_sync": stat(9.0)}), "op": "heat", "local_max": [64] * 3, "ranks": 1})
    code, text = run(STRONG, "small", os.path.join(w, "nofloor"))
    check("strong table: a record without graph/copy floors tabled, no target", code == 0
          and "targets met: 0 of 0" in text and "Traceback" not in text, text)

print(f"bench tool errors test: {'FAILED' if checks.failed else 'passed'} ({checks.failed} failed)")
sys.exit(1 if checks.failed else 0)

#!/usr/bin/env python3
"""test_nsys_overlap_summary.py - bench/profile/nsys_overlap.py on Nsight Systems SQLite exports
made up here (the tables and columns it reads, as nsys writes them): steps are found from the
pack kernels, the exchange from the NVTX range, the hidden share is the overlap of pack..unpack
with the interior kernel (97.9% in a hidden step, 0% in one whose interior starts after the
unpack), with demangled, mangled or short kernel names, and the fallback summary of fdmini's own
timings. Exit 0 when every check passes; prints PASS:/FAIL: lines."""
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile

import checks  # noqa: E402 (tests/bench/checks.py, beside this file)
from checks import check  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
TOOL = os.path.join(HERE, "..", "..", "bench", "profile", "nsys_overlap.py")
US = 1000  # ns




def make_db(path, names, with_demangled=True):
    """3 steps, 1 ms apart: pack 0-10 us, exchange 2-40, unpack 42-48, shell 49-55 on the halo
    stream 14; interior on stream 13 at 1-600 us (steps 0, 1) and 50-600 us (step 2)."""
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL)")
    name_cols = "demangledName INT, shortName INT, mangledName INT" if with_demangled else "shortName INT"
    db.execute(f"CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INT NOT NULL, end INT NOT NULL, "
               f"deviceId INT, streamId INT, globalPid INT, {name_cols})")
    db.execute("CREATE TABLE NVTX_EVENTS (start INT NOT NULL, end INT, eventType INT NOT NULL, "
               "text TEXT, textId INT, globalTid INT)")
    ids = {}
    for i, n in enumerate(sorted(set(names.values()) | {"halo_exchange", "interior"})):
        ids[n] = i + 1
        db.execute("INSERT INTO StringIds VALUES (?, ?)", (i + 1, n))
    rows = []
    for k in range(3):
        b = 1000 * US * k + 5 * 10**9
        ins = b + (50 if k == 2 else 1) * US
        rows += [(b, b + 10 * US, 14, names["pack"]), (b + 42 * US, b + 48 * US, 14, names["unpack"]),
                 (b + 49 * US, b + 55 * US, 14, names["shell"]), (ins, b + 600 * US, 13, names["interior"])]
        db.execute("INSERT INTO NVTX_EVENTS VALUES (?, ?, 59, NULL, ?, 1)",
                   (b + 2 * US, b + 40 * US, ids["halo_exchange"]))
        db.execute("INSERT INTO NVTX_EVENTS VALUES (?, ?, 59, 'interior', NULL, 1)",
                   (b + 1 * US, b + 1 * US + 500))
    for s, e, st, n in rows:
        if with_demangled:
            db.execute("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?, ?, 0, ?, 7, ?, ?, ?)",
                       (s, e, st, ids[n], ids[n], ids[n]))
        else:
            db.execute("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?, ?, 0, ?, 7, ?)", (s, e, st, ids[n]))
    db.commit()
    db.close()


def run(*args):
    p = subprocess.run([sys.executable, TOOL, *args], capture_output=True, text=True, check=False)
    return p.returncode, p.stdout + p.stderr


work = tempfile.mkdtemp()
demangled = {"pack": "void k_faces<1>(int, int, int, unsigned int, double *, face_bufs)",
             "unpack": "void k_faces<0>(int, int, int, unsigned int, double *, face_bufs)",
             "shell": "void k_shell<false>(st_args, shell_slabs)",
             "interior": "void k_plane_v2<2, true>(st_args)"}
make_db(os.path.join(work, "r0.sqlite"), demangled)
make_db(os.path.join(work, "r1.sqlite"), {"pack": "k_faces", "unpack": "k_faces", "shell": "k_shell",
                                          "interior": "k_plane_v2"}, with_demangled=False)
rc, out = run(os.path.join(work, "r0.sqlite"), os.path.join(work, "r1.sqlite"))
check("summary of two ranks exits 0", rc == 0, out)
lines = out.splitlines()
step0 = [l for l in lines if l.strip().startswith("0 ") and "0.0-10.0" in l]
check("step 0: pack 0.0-10.0, exchange 2.0-40.0, unpack 42.0-48.0, interior 1.0-600.0, shell "
      "49.0-55.0, 97.9% hidden",
      len(step0) == 2 and all("2.0-40.0" in l and "42.0-48.0" in l and "1.0-600.0" in l and
                              "49.0-55.0" in l and "97.9%" in l for l in step0), "\n".join(step0) or out)
step2 = [l for l in lines if l.strip().startswith("2 ")]
check("step 2 (interior after the unpack): 0.0% hidden", len(step2) == 2 and all(l.endswith(" 0.0%") for l in step2),
      "\n".join(step2) or out)
check("medians and the overall line", "entirely hidden in 0 of 3 steps" in out and
      "for 97.9% of its time (median over 6 rank-steps; min 0.0%, max 97.9%)" in out, out)
check("names without template arguments: pack and unpack by their order on the stream",
      "rank 1 (r1.sqlite): 3 steps traced" in out, out)

db = sqlite3.connect(os.path.join(work, "empty.sqlite"))
db.execute("CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL)")
db.commit()
db.close()
rc, out = run(os.path.join(work, "empty.sqlite"))
check("a trace without kernels is an error saying so", rc == 1 and "no CUPTI_ACTIVITY_KIND_KERNEL" in out, out)

rec = {"ranks": 2, "device": "NVIDIA H100", "backend": "cuda", "halo_path": "mpi", "mpi_gpu": "aware",
       "global": [256, 256, 512], "iters": 30, "hidden_share": {"min": 0.9, "avg": 0.95, "max": 1.0},
       "phases_ms": {k: {"min": v, "avg": v, "max": v} for k, v in
                     (("pack", 0.01), ("exchange", 0.05), ("unpack", 0.01), ("interior", 0.4),
                      ("boundary", 0.02), ("step", 0.43))}}
with open(os.path.join(work, "run.json"), "w") as f:
    json.dump(rec, f)
rc, out = run("--fdmini-json", os.path.join(work, "run.json"))
check("fallback from fdmini's timings: phases, overlap and hidden share",
      rc == 0 and "NO timeline" in out and "sum of the phases 0.4900 ms against a step of 0.4300 ms: "
      "0.0600 ms of the 0.0700 ms" in out and "90.0 / 95.0 / 100.0 %" in out, out)
shutil.rmtree(work, ignore_errors=True)
print(f"nsys summary test: {checks.passed} passed, {checks.failed} failed")
sys.exit(1 if checks.failed else 0)

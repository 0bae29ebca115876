#!/usr/bin/env python3
"""test_check_autotune.py - bench/multigpu/check_autotune.py (a GPU test of run_node.sh) on
autotune records made up here (the keys it reads, as fdmini writes them): a record as the
autotune writes it passes, on one rank and with passes signalled (a zmarch shape left behind
after one round included); each planted fault fails it: a candidate outside the finalists with
a loop time, a missing family shape, the wrong choice, a closest finalist or a shape within
10 % of the fastest run for one round, rounds other than three. Exit 0 when every check passes;
prints PASS:/FAIL: lines."""
import copy
import json
import os
import subprocess
import sys
import tempfile

import checks  # noqa: E402 (tests/bench/checks.py, beside this file)
from checks import check  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
TOOL = os.path.join(HERE, "..", "..", "bench", "multigpu", "check_autotune.py")




def cand(kernel, ms, loop=None, rounds=None, chosen=False):
    return {"kernel": kernel, "ms": ms, "loop_ms_per_step": loop,
            "loop_rounds": (3 if loop is not None else 0) if rounds is None else rounds,
            "chosen": chosen}


def record(cands, family=None, signalled=0):
    return {"tune": {"mode": "auto", "seconds": 0.3, "trial_rounds": 3, "trial_graphs": True,
                     "trial_family": family, "candidates": cands},
            "graphs": {"exchange_signalled_passes": signalled}}


def run(rec):
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(rec, f)
    try:
        p = subprocess.run([sys.executable, TOOL, f.name], capture_output=True, text=True)
    finally:
        os.unlink(f.name)
    return p.returncode, p.stdout + p.stderr


# one rank: the closest within 25 % (the fastest of each family first), the fastest loop trial
one = record([cand("zmarch:tile=1,vec=2,block=32x8,chunk=4", 1.00, 1.10),
              cand("zmarch:tile=1,vec=2,block=64x4,chunk=8", 1.05, 1.02, chosen=True),
              cand("reordered:tile=1,vec=2,block=256x1", 1.10, 1.20),
              cand("reordered:tile=2,vec=2,block=256x1", 1.20, 1.25),
              cand("reordered:tile=8,vec=1,block=256x1", 1.40),
              cand("zmarch:tile=1,vec=1,block=32x4,chunk=1", 1.60)])
# signalled: every zmarch shape ran loop trials; chunk 1 left after the first round (its time
# 1.20 beyond 10 % of 1.00), chunk 2 ran all three
sig = record([cand("zmarch:tile=1,vec=2,block=32x8,chunk=4", 1.00, 1.05),
              cand("reordered:tile=1,vec=2,block=256x1", 1.10, 1.20),
              cand("zmarch:tile=1,vec=2,block=64x4,chunk=8", 1.30, 1.00, chosen=True),
              cand("zmarch:tile=1,vec=1,block=32x4,chunk=1", 1.60, 1.20, rounds=1),
              cand("zmarch:tile=1,vec=1,block=32x4,chunk=2", 1.70, 1.08),
              cand("reordered:tile=8,vec=1,block=256x1", 1.40)], family="zmarch", signalled=100)

for name, rec in (("one rank", one), ("passes signalled, a shape left after one round", sig)):
    rc, out = run(rec)
    check(f"{name}: passes", rc == 0 and "chosen" in out, out)


def planted(name, base, edit, expect):
    rec = copy.deepcopy(base)
    edit(rec["tune"]["candidates"], rec["tune"])
    rc, out = run(rec)
    check(f"planted: {name}: fails", rc == 1 and expect in out, f"rc {rc}: {out}")


def set_(c, i, **kv):
    c[i].update(kv)


planted("a candidate outside the finalists with a loop time", one,
        lambda c, t: set_(c, 4, loop_ms_per_step=1.5, loop_rounds=3), "finalists")
planted("a family shape without loop trials (passes signalled)", sig,
        lambda c, t: set_(c, 4, loop_ms_per_step=None, loop_rounds=0), "finalists")
planted("not the fastest loop trial chosen", one,
        lambda c, t: (set_(c, 1, chosen=False), set_(c, 0, chosen=True)), "not the fastest")
planted("a closest finalist for one round", one,
        lambda c, t: set_(c, 3, loop_rounds=1), "rounds")
planted("a family shape within 10 % for one round", sig,
        lambda c, t: set_(c, 4, loop_rounds=1), "rounds")
planted("rounds without a loop time", one,
        lambda c, t: set_(c, 5, loop_rounds=1), "without a loop time")
planted("two rounds of loop trials", one,
        lambda c, t: t.update(trial_rounds=2), "trial_rounds")

sys.exit(1 if checks.failed else 0)

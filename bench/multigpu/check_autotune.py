#!/usr/bin/env python3
"""check_autotune.py - the single-step autotune's record (README "GPU kernels"), a GPU test of
bench/multigpu/run_node.sh: in a run's JSON record, the candidates within 25 % of the fastest
alone (at most four: the fastest of each kernel family first) ran loop trials of the run's own
loop (three rounds, graphs on: --graphs auto on a GPU), no other candidate did, and the one
chosen is the fastest of those trials; with one such candidate none ran. Where the record names
a trial_family (passes signalled), the finalists are instead every candidate of that family and
the fastest of each other family within 25 %. Exits 1 with the reason when the record says
otherwise.

Usage: check_autotune.py RECORD.json
"""
import json
import sys

MARGIN, MOST, ROUNDS = 0.25, 4, 3


def family(c):
    return c["kernel"].split(":")[0]


def check(t):
    c = t["candidates"]
    if t["mode"] != "auto" or not c:
        return "the autotune did not run (mode %s)" % t["mode"]
    best = min(x["ms"] for x in c)
    close = [x for x in c if x["ms"] <= best * (1 + MARGIN)]
    fin = [x for x in c if x["loop_ms_per_step"] is not None]
    chosen = [x for x in c if x["chosen"]]
    if len(chosen) != 1:
        return "%d candidates chosen" % len(chosen)
    fam = t.get("trial_family")
    # the fastest of each family within the margin, and where passes are signalled every
    # candidate of trial_family
    want = [min((x for x in close if family(x) == f), key=lambda x: x["ms"]) for f in {family(x) for x in close}]
    want += [x for x in c if fam is not None and family(x) == fam and x not in want]
    if len(close if fam is None else want) < 2:
        return None if t["trial_rounds"] == 0 and not fin else "loop trials with one close candidate"
    if t["trial_rounds"] != ROUNDS or t["trial_graphs"] is not True:
        return "trial_rounds %s, trial_graphs %s" % (t["trial_rounds"], t["trial_graphs"])
    if fam is not None:
        if sorted(x["kernel"] for x in fin) != sorted(x["kernel"] for x in want):
            return "finalists %s, expected %s" % ([x["kernel"] for x in fin], [x["kernel"] for x in want])
    else:
        if len(fin) != min(MOST, len(close)) or any(x not in close for x in fin):
            return "finalists %s of the close %s" % ([x["kernel"] for x in fin], [x["kernel"] for x in close])
        if len(want) <= MOST and any(x not in fin for x in want):
            return "%s, its family's fastest, is no finalist" % [x["kernel"] for x in want if x not in fin][0]
    if chosen[0] not in fin or chosen[0]["loop_ms_per_step"] != min(x["loop_ms_per_step"] for x in fin):
        return "%s chosen, not the fastest loop trial" % chosen[0]["kernel"]
    return None


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    t = json.load(open(sys.argv[1]))["tune"]
    why = check(t)
    if why:
        print("check_autotune: " + why)
        sys.exit(1)
    fin = [x for x in t["candidates"] if x["loop_ms_per_step"] is not None]
    print("%d finalists in loop trials, chosen %s" % (len(fin), [x["kernel"] for x in t["candidates"] if x["chosen"]][0]))


if __name__ == "__main__":
    main()

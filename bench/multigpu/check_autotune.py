#!/usr/bin/env python3
"""check_autotune.py - the single-step autotune's record (docs/kernels.md, "The autotune"), a GPU test of
bench/multigpu/run_node.sh: in a run's JSON record, the candidates within 25 % of the fastest
alone (at most four: the fastest of each kernel family first) ran loop trials of the run's own
loop (three rounds, graphs on: --graphs auto on a GPU), and where the record names a
trial_family (passes signalled) so did every candidate of that family, those not among the
closest for one round only where they were more than 10 % behind its fastest; no other
candidate did. The one chosen is the fastest of those trials, or, with a trial_family where
the timed passes were not signalled, the fastest of the closest. With one finalist none ran.
Exits 1 with the reason when the record says otherwise, or with one line when the record is
missing or not JSON.

Usage: check_autotune.py RECORD.json
"""
import json
import sys

MARGIN, MOST, ROUNDS, KEEP = 0.25, 4, 3, 0.10


def family(c):
    return c["kernel"].split(":")[0]


def closest(c):
    """tune_kernel_finalists: the fastest of each family within the margin, then the others
    within it, each part fastest first (the earlier of equals first), at most MOST."""
    limit = min(x["ms"] for x in c) * (1 + MARGIN)
    fin = []
    for one_per_family in (True, False):
        while len(fin) < MOST:
            left = [x for x in c if x["ms"] <= limit and x not in fin and
                    not (one_per_family and family(x) in {family(y) for y in fin})]
            if not left:
                break
            fin.append(min(left, key=lambda x: x["ms"]))
    return fin


def check(rec):
    t = rec["tune"]
    c = t["candidates"]
    if t["mode"] != "auto" or not c:
        return "the autotune did not run (mode %s)" % t["mode"]
    fin = [x for x in c if x["loop_ms_per_step"] is not None]
    chosen = [x for x in c if x["chosen"]]
    if len(chosen) != 1:
        return "%d candidates chosen" % len(chosen)
    fam = t.get("trial_family")
    near = closest(c)
    want = near + [x for x in c if fam is not None and family(x) == fam and x not in near]
    if len(want) < 2:
        return None if t["trial_rounds"] == 0 and not fin else "loop trials with one finalist"
    if t["trial_rounds"] != ROUNDS or t["trial_graphs"] is not True:
        return "trial_rounds %s, trial_graphs %s" % (t["trial_rounds"], t["trial_graphs"])
    if sorted(x["kernel"] for x in fin) != sorted(x["kernel"] for x in want):
        return "finalists %s, expected %s" % ([x["kernel"] for x in fin], [x["kernel"] for x in want])
    # rounds (records before loop_rounds: every finalist ran them all); one round only for a
    # family shape beyond the closest, left behind: its one time beyond KEEP of the fastest
    # (whose best of three is at most its first)
    fastest = min(x["loop_ms_per_step"] for x in fin)
    for x in c:
        n = x.get("loop_rounds", ROUNDS if x in fin else 0)
        if x not in fin and n != 0:
            return "%s ran %s rounds without a loop time" % (x["kernel"], n)
        if x in fin and n != ROUNDS and not (
                n == 1 and x not in near and x["loop_ms_per_step"] > fastest * (1 + KEEP)):
            return "%s ran %s of %d rounds at %.5f ms (fastest %.5f)" % (
                x["kernel"], n, ROUNDS, x["loop_ms_per_step"], fastest)
    # with a family, passes that were not signalled run the fastest of the closest
    among = near if fam is not None and not rec["graphs"]["exchange_signalled_passes"] else fin
    if chosen[0] not in among or chosen[0]["loop_ms_per_step"] != min(x["loop_ms_per_step"] for x in among):
        return "%s chosen, not the fastest loop trial of %s" % (chosen[0]["kernel"], [x["kernel"] for x in among])
    return None


def main():
    if len(sys.argv) == 2 and sys.argv[1] in ("-h", "--help"):
        print(__doc__)
        return
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    try:
        with open(sys.argv[1]) as f:
            rec = json.load(f)
    except (OSError, ValueError) as e:
        sys.exit(f"check_autotune: {sys.argv[1]}: not a readable JSON record ({e})")
    t = rec["tune"]
    why = check(rec)
    if why:
        print("check_autotune: " + why)
        sys.exit(1)
    fin = [x for x in t["candidates"] if x["loop_ms_per_step"] is not None]
    print("%d finalists in loop trials, chosen %s" % (len(fin), [x["kernel"] for x in t["candidates"] if x["chosen"]][0]))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""table.py - the tables of bench/strong/run_node.sh (docs/small-blocks.md).

  table.py small RECORDS_DIR [--device NAME] [-o PREFIX]
      One row per operator, ranks, block and mode (T = 1 or --fuse auto): the step in
      microseconds per time step (the slowest rank's wall time: phases_ms.step.max) of this
      fdmini ("after") and, where the folder holds them, of the older binary ("before"); the
      floors the new run measured at start-up, averaged over the ranks (F_g, F_ls, F_c, L, X);
      F1 = max(F_g, F_c); step / F1; X / (F_ls + L + 2 F_g); and the issue-26 targets:
        1 rank, T = 1, 32^3..128^3:      step <= 1.5 F1
        1 rank, --fuse auto, 64^3, 128^3: step <= 1.0 F1 (per time step)
        2 ranks, T = 1, 64^3, 128^3:     X <= F_ls + L + 2 F_g and step <= max(1.5 F1, 1.2 X)
        1 rank, T = 1, 512^3:            step within 1% of before
  table.py small RECORDS_DIR --before CSV ...
      The same, where the folder holds no "before" runs: before_us (and the 512^3 target)
      from the before_us column of an earlier table's CSV (the older binary, an earlier run),
      matched by operator, ranks, block and mode; the markdown says where they came from.
  table.py deep RECORDS_DIR [--device NAME] [-o PREFIX]
      The deep-halo layouts (step per time step, S = 2, 4 against S = 1 and against their share
      of redundant points: (1 + redundant share) x S = 1), and --fuse auto against the best fixed T.

Records are the JSON files fdmini wrote (--json), named as run_node.sh names them. Writes
PREFIX.md and PREFIX.csv (default: print the markdown only). Exit 0; 1 when a record is
unreadable or failed its verification (UNVERIFIED passes: nothing was left to compare).
"""
import argparse
import csv
import json
import os
import re
import sys


def load(folder):
    recs = {}
    try:
        names = sorted(os.listdir(folder))
    except OSError as e:
        sys.exit(f"table.py: {folder}: cannot read the folder: {e.strerror}")
    for name in names:
        if not name.endswith(".json"):
            continue
        path = os.path.join(folder, name)
        try:
            with open(path) as f:
                rec = json.load(f)
        except (OSError, ValueError) as e:
            sys.exit(f"table.py: {path}: not a readable JSON record ({e})")
        if not isinstance(rec, dict):
            sys.exit(f"table.py: {path}: not a JSON object (not an fdmini --json record)")
        v = rec.get("verification")
        v = v if isinstance(v, dict) else {}
        # UNVERIFIED: heat's mode decayed to rounding over the timed steps (run_node.sh)
        if not (v.get("passed", False) or v.get("status") == "UNVERIFIED"):
            sys.exit(f"table.py: {name}: verification did not pass")
        recs[name[:-5]] = rec
    if not recs:
        sys.exit(f"table.py: {folder}: no JSON records")
    return recs


def is_case(name, rec, op, block, ranks=None, width=None, steps=None):
    """Exit with one line where the record is not the case its name says (a stray file would be
    tabled under the name's case): operator, block (local_max) N^3, and where given the ranks,
    the halo width and the steps per pass (steps None or "auto": any)."""
    got = {"op": rec.get("op"), "block": rec.get("local_max"), "ranks": rec.get("ranks"),
           "halo width": rec.get("halo_width", 1), "steps per pass": (rec.get("fuse") or {}).get("steps")}
    want = {"op": op, "block": [block] * 3, "ranks": ranks, "halo width": width,
            "steps per pass": None if steps in (None, "auto") else int(steps)}
    wrong = [f"{k} {got[k]}, not {v}" for k, v in want.items() if v is not None and got[k] != v]
    if wrong:
        sys.exit(f"table.py: {name}.json: the record's {'; '.join(wrong)} (not the case its name says)")


def step_us(rec):
    return 1e3 * rec["phases_ms"]["step"]["max"]


def floor(rec, key):
    f = rec.get("floors_us", {}).get(key)
    return None if f is None else f["avg"]


def fmt(x, nd=2):
    return "-" if x is None else f"{x:.{nd}f}"


def ok(flag):
    return "-" if flag is None else ("yes" if flag else "NO")


def before_table(path):
    """{(op, ranks, block, fuse): step_us} of the before_us column of an earlier small table."""
    out = {}
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            if r.get("before_us") not in (None, "", "-"):
                out[(r["op"], int(r["ranks"]), int(r["block"]), r["fuse"])] = float(r["before_us"])
    return out


def small(recs, earlier=None):
    rows = []
    pat = re.compile(r"after-(\w+)-n(\d+)-np(\d+)-fuse(\w+)$")
    for name, rec in recs.items():
        m = pat.match(name)
        if not m:
            continue
        op, n, np_, mode = m.group(1), int(m.group(2)), int(m.group(3)), m.group(4)
        before = recs.get(name.replace("after-", "before-", 1))
        is_case(name, rec, op, n, ranks=np_, steps=mode)
        if before:
            is_case(name.replace("after-", "before-", 1), before, op, n, ranks=np_)
        b_us = step_us(before) if before else (earlier or {}).get((op, np_, n, mode))
        fg, fls, fc = floor(rec, "graph"), floor(rec, "launch_sync"), floor(rec, "copy")
        lat, x = floor(rec, "latency"), floor(rec, "exchange_alone")
        # F1 = max(F_g, F_c); None where the record measured neither (no target then)
        f1 = max((v for v in (fg, fc) if v is not None), default=None)
        st = step_us(rec)
        xf = None if None in (fls, lat, fg, x) else x / (fls + lat + 2 * fg)
        target = None
        if f1 is None and n != 512:
            pass  # the floor targets need F1; the record measured no floor
        elif np_ == 1 and mode == "1" and n in (32, 64, 128):
            target = st <= 1.5 * f1
        elif np_ == 1 and mode == "auto" and n in (64, 128):
            target = st <= 1.0 * f1
        elif np_ == 2 and mode == "1" and n in (64, 128) and xf is not None:
            target = xf <= 1.0 and st <= max(1.5 * f1, 1.2 * x)  # xf set: x is not None
        elif np_ == 1 and mode == "1" and n == 512 and b_us is not None:
            target = st <= 1.01 * b_us
        rows.append({
            "op": op, "ranks": np_, "block": n, "fuse": mode,
            "T": rec["fuse"]["steps"], "graphs": "on" if rec.get("graphs", {}).get("on") else "off",
            "path": rec.get("halo_path") if rec.get("halo_path") not in (None, "none") else None,
            "step_us": st, "before_us": b_us, "speedup": b_us / st if b_us else None,
            "F_g": fg, "F_ls": fls, "F_c": fc, "L": lat, "X": x, "F1": f1,
            "step_over_F1": st / f1 if f1 else None, "X_over_floor": xf, "target_met": target,
        })
    rows.sort(key=lambda r: (r["op"], r["ranks"], r["block"], r["fuse"]))
    cols = ["op", "ranks", "block", "fuse", "T", "graphs", "path", "before_us", "step_us", "speedup",
            "F_g", "F_ls", "F_c", "L", "X", "F1", "step_over_F1", "X_over_floor", "target_met"]
    return rows, cols


def deep(recs):
    rows = []
    pat = re.compile(r"deep-(\w+)-([\d,]+)-n(\d+)-S(\d+)-fuse(\w+)$")
    for name, rec in recs.items():
        m = pat.match(name)
        if not m:
            continue
        op, layout, n, S, fuse = m.group(1), m.group(2), int(m.group(3)), int(m.group(4)), m.group(5)
        is_case(name, rec, op, n, width=S, steps=fuse)
        base = recs.get(f"deep-{op}-{layout}-n{n}-S1-fuse1")
        st = step_us(rec)
        b = step_us(base) if base else None
        share = rec.get("redundant_share", 0.0)
        bound = None if b is None else b * (1 + share)
        met = None
        if b is not None and S > 1 and fuse == "1" and n in (128, 256) and layout in ("1,2,2", "2,2,2"):
            met = st <= bound
        rows.append({
            "kind": "layout", "layout": layout, "block": n, "S": S, "fuse": fuse, "T": rec["fuse"]["steps"],
            "graphs": "on" if rec.get("graphs", {}).get("on") else "off",
            "step_us": st, "S1_us": b, "vs_S1": None if b is None else st / b,
            "redundant_share": share, "bound_us": bound, "target_met": met,
            "pack_us": 1e3 * rec["phases_ms"]["pack"]["avg"], "exchange_us": 1e3 * rec["phases_ms"]["exchange"]["avg"],
            "unpack_us": 1e3 * rec["phases_ms"]["unpack"]["avg"], "interior_us": 1e3 * rec["phases_ms"]["interior"]["avg"],
        })
    fpat = re.compile(r"fuse-(\w+)-np(\d+)-n(\d+)(-S\d+)?-fuse(\w+)$")
    groups = {}
    for name, rec in recs.items():
        m = fpat.match(name)
        if m:
            is_case(name, rec, m.group(1), int(m.group(3)), ranks=int(m.group(2)),
                    width=int(m.group(4)[2:]) if m.group(4) else None, steps=m.group(5))
            groups.setdefault((int(m.group(2)), int(m.group(3))), {})[m.group(5)] = rec
    for (np_, n), g in sorted(groups.items()):
        fixed = {t: step_us(r) for t, r in g.items() if t != "auto"}
        if not fixed or "auto" not in g:
            continue
        best_t = min(fixed, key=fixed.get)
        a = step_us(g["auto"])
        rows.append({
            "kind": "fuse auto", "layout": "1,1,1" if np_ == 1 else "2,2,2", "block": n, "S": 1 if np_ == 1 else 4,
            "fuse": "auto", "T": g["auto"]["fuse"]["steps"],
            "graphs": "on" if g["auto"].get("graphs", {}).get("on") else "off",
            "step_us": a, "best_fixed_T": int(best_t), "best_fixed_us": fixed[best_t],
            "auto_over_best": a / fixed[best_t], "target_met": a <= 1.05 * fixed[best_t],
            "fixed_us": " ".join(f"T{t}={fixed[t]:.2f}" for t in sorted(fixed)),
        })
    cols = ["kind", "layout", "block", "S", "fuse", "T", "graphs", "step_us", "S1_us", "vs_S1",
            "redundant_share", "bound_us", "pack_us", "exchange_us", "unpack_us", "interior_us",
            "best_fixed_T", "best_fixed_us", "auto_over_best", "fixed_us", "target_met"]
    return rows, cols


def cell(v):
    if v is None:
        return "-"
    if isinstance(v, bool):
        return ok(v)
    if isinstance(v, float):
        return fmt(v, 3 if abs(v) < 10 else 1)
    return str(v)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mode", choices=["small", "deep"])
    ap.add_argument("records")
    ap.add_argument("--device", default="")
    ap.add_argument("-o", "--out", default="")
    ap.add_argument("--before", default="", help="small: before_us from this earlier table's CSV")
    a = ap.parse_args()
    recs = load(a.records)
    try:
        earlier = before_table(a.before) if a.before else None
    except (OSError, ValueError, KeyError) as e:
        sys.exit(f"table.py: {a.before}: not an earlier small table's CSV ({type(e).__name__}: {e})")
    try:
        rows, cols = small(recs, earlier) if a.mode == "small" else deep(recs)
    except (KeyError, TypeError, AttributeError) as e:
        sys.exit(f"table.py: {a.records}: a record without what the {a.mode} table reads "
                 f"({type(e).__name__}: {e})")
    if not rows:
        sys.exit(f"table.py: {a.records}: no records of the {a.mode} table (names as "
                 f"bench/strong/run_node.sh writes them)")
    used = [c for c in cols if any(r.get(c) is not None for r in rows)]
    lines = [f"# {a.mode} ({a.device}): microseconds per time step; floors averaged over the ranks", ""]
    if earlier is not None:
        lines += [f"before_us: the before_us column of {os.path.basename(a.before)} (an earlier run of the "
                  "older binary), not of this run", ""]
    lines += ["| " + " | ".join(used) + " |", "|" + "---|" * len(used)]
    lines += ["| " + " | ".join(cell(r.get(c)) for c in used) + " |" for r in rows]
    met = [r["target_met"] for r in rows if r.get("target_met") is not None]
    lines += ["", f"targets met: {sum(met)} of {len(met)}"]
    print("\n".join(lines))
    if a.out:
        with open(a.out + ".md", "w") as f:
            f.write("\n".join(lines) + "\n")
        with open(a.out + ".csv", "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=used, extrasaction="ignore")
            w.writeheader()
            for r in rows:
                w.writerow({c: r.get(c) for c in used})
    return 0


if __name__ == "__main__":
    sys.exit(main())

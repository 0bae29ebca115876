#!/usr/bin/env python3
"""nodes_table.py - the table of bench/multigpu/nodes.sh (issue 56, item 8).

  nodes_table.py RECORDS_DIR --csv FILE --md FILE

RECORDS_DIR holds the runs' JSON records (fdmini --json), named MODE-OP-GLOBAL-RANKS-NODES-
VARIANT.json: MODE t1 (one step per pass) or s4 (--halo-width 4 --fuse auto), NODES the emulated
nodes (1: none), VARIANT today (--halo-path mixed: the host-driven exchange), proxy (--halo-path
proxy: the one-launch pass, off-node faces through the proxy), auto (the default) or none (the
same ranks, no emulation). Every figure comes from the records:
  step_us   the wall time per time step of the slowest rank (phases_ms.step.max)
  Fm_us     F_m, one face alone through the proxy and MPI, device-ordered (floors_us.Fm, average
            over the ranks that have one); empty where the run had none
  Fp_us     F_p, one face alone to a neighbour on another GPU (floors_us.Fp); empty where none
  X_us      X, the exchange alone with the run's own path (floors_us.exchange_alone, average)
  path      the path taken (halo_path: proxy, mixed, ipc, mpi); T the steps per pass, S the
            halo width
The Markdown table has one row per operator, mode, size and layout, with the targets of the
issue: the proxy within 1.25 x max(F_m, the step without emulation); at 128^3 the proxy at
least 1.3 x faster than today's path; auto never slower than today's path (2 % noise allowed).
Exit 1, with nothing written, when a record is unreadable, did not verify, is not what its name
says (operator, ranks, global grid, nodes, the mode's halo width, the proxy's path), ran its
ranks on the one GPU without MPS (gpu_mps false: they took turns on it, 10-100x slower), or is
missing from a cell.
"""
import argparse
import csv
import glob
import io
import json
import os
import re
import sys

NAME = re.compile(r"^(t1|s4)-(\w+)-(\d+)-(\d+)-(\d+)-(today|proxy|auto|none)$")
COLS = ["op", "global", "ranks", "nodes", "mode", "variant", "path", "step_us", "Fm_us", "Fp_us", "X_us", "T", "S"]
MODES = {"t1": "T1", "s4": "S4-auto"}


class Bad(Exception):
    pass


def stat(d, *keys, field="avg"):
    """d[keys...][field], or None where any is missing or null."""
    for k in keys:
        if not isinstance(d, dict) or d.get(k) is None:
            return None
        d = d[k]
    return d.get(field) if isinstance(d, dict) else None


def read(path):
    base = os.path.basename(path)[:-5]
    m = NAME.match(base)
    if not m:
        return None
    try:
        with open(path) as f:
            r = json.load(f)
    except (OSError, ValueError) as e:
        raise Bad("%s: unreadable (%s)" % (path, e))
    status = stat(r, "verification", field="status")
    if status not in ("PASS", "UNVERIFIED"):
        raise Bad("%s: verification %s" % (path, status))
    mode, op, g, ranks, nodes, variant = m.groups()
    if not isinstance(r, dict):
        raise Bad("%s: not a record (a JSON object)" % path)
    if r.get("op") != op or r.get("ranks") != int(ranks):
        raise Bad("%s: the record is of %s on %s ranks, not what its name says" % (path, r.get("op"), r.get("ranks")))
    # the rest of the name against the record: the global grid, the (emulated) nodes, the halo
    # width of the mode (t1: 1, one step per pass; s4: 4), and the proxy variant's path
    count = r["nodes"].get("count") if isinstance(r.get("nodes"), dict) else None
    said = {"global": ([int(g)] * 3, r.get("global")), "nodes": (int(nodes), count),
            "halo width": (1 if mode == "t1" else 4, r.get("halo_width"))}
    if mode == "t1":
        said["steps per pass"] = (1, stat(r, "fuse", field="steps"))
    if variant == "proxy":
        said["path"] = ("proxy", r.get("halo_path"))
    wrong = ["%s %s, not %s" % (k, got, want) for k, (want, got) in said.items() if got != want]
    if wrong:
        raise Bad("%s: the record's %s (its name says otherwise)" % (path, "; ".join(wrong)))
    if r.get("gpu_mps") is False and int(ranks) > 1:
        raise Bad("%s: its %s ranks ran without MPS (gpu_mps false): they took turns on the GPU" % (path, ranks))
    step = stat(r, "phases_ms", "step", field="max")
    if step is None:
        raise Bad("%s: no step time" % path)
    us = lambda v: None if v is None else v * 1e3
    fm, fp, x = stat(r, "floors_us", "Fm"), stat(r, "floors_us", "Fp"), stat(r, "floors_us", "exchange_alone")
    return {"op": op, "global": int(g), "ranks": int(ranks), "nodes": int(nodes), "mode": MODES[mode],
            "variant": variant, "path": r.get("halo_path", ""), "step_us": us(step), "Fm_us": fm, "Fp_us": fp, "X_us": x,
            "T": stat(r, "fuse", field="steps"), "S": r.get("halo_width"), "device": r.get("device", "?"),
            "commit": r.get("git_commit", "?")}


def fmt(v, nd=1):
    return "" if v is None else ("%.*f" % (nd, v))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("records")
    ap.add_argument("--csv", required=True)
    ap.add_argument("--md", required=True)
    a = ap.parse_args()
    try:
        rows = [x for x in (read(p) for p in sorted(glob.glob(os.path.join(a.records, "*.json")))) if x]
        if not rows:
            raise Bad("%s: no records named MODE-OP-GLOBAL-RANKS-NODES-VARIANT.json" % a.records)
    except Bad as e:
        print("nodes_table.py: error: %s" % e, file=sys.stderr)
        return 1
    order = {"today": 0, "proxy": 1, "auto": 2, "none": 3}
    rows.sort(key=lambda x: (x["op"], x["mode"], x["global"], x["ranks"], -x["nodes"], order[x["variant"]]))
    table = io.StringIO()  # written with the Markdown once every cell is there
    w = csv.writer(table, lineterminator="\n")
    w.writerow(COLS)
    for x in rows:
        w.writerow([x[c] if not isinstance(x[c], float) else "%.3f" % x[c] for c in COLS])
    cell = {(x["op"], x["mode"], x["global"], x["ranks"], x["nodes"], x["variant"]): x for x in rows}
    devices = sorted({x["device"] for x in rows})
    commits = sorted({x["commit"] for x in rows})
    lines = ["# Off-node proxy, nodes emulated on %s (MPS)" % ", ".join(devices), "",
             "bench/multigpu/nodes.sh, commit %s; one row per layout: R ranks as N emulated nodes. Steps in us per "
             "time step (the slowest rank); F_m one face alone through the proxy, X the proxy pass's exchange alone; "
             "none: the same ranks without emulation (every face by IPC). Targets (issue 56): proxy <= 1.25 x max(F_m, "
             "none); at 128^3 today / proxy >= 1.3; auto <= 1.02 x today." % ", ".join(commits), "",
             "| op | mode | global | R x N | today | proxy | auto | none | F_m | X proxy | proxy / max(F_m, none) | "
             "today / proxy | auto / today | path (auto) |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    missing, verdicts = [], []
    for (op, mode, g, ranks, nodes, variant) in sorted(cell):  # an emulated layout without its proxy run
        if nodes > 1 and variant != "none" and (op, mode, g, ranks, nodes, "proxy") not in cell:
            missing.append("%s %s %d^3 %d ranks %d nodes: no proxy run" % (op, mode, g, ranks, nodes))
    for (op, mode, g, ranks, nodes, variant), x in sorted(cell.items()):
        if variant != "proxy":
            continue
        get = lambda v, n=nodes: cell.get((op, mode, g, ranks, n, v))
        today, auto, none = get("today"), get("auto"), get("none", 1)
        for name, c in (("today", today), ("auto", auto), ("none", none)):
            if c is None:
                missing.append("%s %s %d^3 %d ranks %d nodes: no %s run" % (op, mode, g, ranks, nodes, name))
        if today is None or auto is None or none is None:
            continue
        floor = max(x["Fm_us"] or 0.0, none["step_us"])
        r1, r2, r3 = x["step_us"] / floor, today["step_us"] / x["step_us"], auto["step_us"] / today["step_us"]
        ok1, ok2, ok3 = r1 <= 1.25, g != 128 or r2 >= 1.3, r3 <= 1.02
        verdicts.append((ok1, ok2 if g == 128 else None, ok3))
        lines.append("| %s | %s | %d^3 | %d x %d | %s | %s | %s | %s | %s | %s | %.2f%s | %.2f%s | %.2f%s | %s |" % (
            op, mode, g, ranks, nodes, fmt(today["step_us"]), fmt(x["step_us"]), fmt(auto["step_us"]),
            fmt(none["step_us"]), fmt(x["Fm_us"]), fmt(x["X_us"]), r1, "" if ok1 else " (missed)", r2,
            "" if ok2 else " (missed)", r3, "" if ok3 else " (missed)", auto["path"]))
    n, small = len(verdicts), [v[1] for v in verdicts if v[1] is not None]
    lines += ["", "Targets met: proxy within 1.25 x its floor in %d of %d cells; 1.3 x over today's path in %d of %d "
              "128^3 cells; auto within 2 %% of today's path or faster in %d of %d cells." % (
                  sum(v[0] for v in verdicts), n, sum(small), len(small), sum(v[2] for v in verdicts), n), ""]
    if not verdicts and not missing:
        missing.append("%s: no cell (a proxy run with its today, auto and none runs)" % a.records)
    if missing:  # nothing written: a CSV or table of the earlier call stays as it was
        print("nodes_table.py: error: %s" % "; ".join(missing), file=sys.stderr)
        return 1
    try:
        with open(a.csv, "w", newline="") as f:
            f.write(table.getvalue())
        with open(a.md, "w") as f:
            f.write("\n".join(lines))
    except OSError as e:
        print("nodes_table.py: error: %s" % e, file=sys.stderr)
        return 1
    print("nodes_table.py: %d records, %d cells -> %s, %s" % (len(rows), n, a.csv, a.md))
    return 0


if __name__ == "__main__":
    sys.exit(main())

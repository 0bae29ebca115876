#!/usr/bin/env python3
"""table.py - the tables of bench/checkpoints/overhead.sh: for each grid, operator and checkpoint
interval the step rate with checkpoints against the rate without (the runs without, before and
after, same job), the file-system bandwidth the interval needs against the write + fsync
bandwidth measured in the same job (fs_bandwidth.py), and where the checkpoint time went
(fdmini's own figures, docs/report.md); then each restart's read time against the
file system's read bandwidth for a file of that size in the same cache state.

Usage: table.py JSON_DIR FS_FILE      (JSON_DIR: nN-OP-none-a.json, nN-OP-none-b.json,
                                       nN-OP-iI.json, nN-OP-restart-cold.json,
                                       nN-OP-restart-cached.json; FS_FILE: the "fs bytes=..."
                                       lines of fs_bandwidth.py for the checkpoint directory)
Exit 1 with one line when JSON_DIR or FS_FILE is missing or unreadable, a record is not JSON, or
the records make no row (a table without rows is no result).
Definitions (bench/checkpoints/README.md):
  cost        = 1 - steps/s with / steps/s without (the target: at most 1 % every 1000 steps)
  needed GB/s = bytes per checkpoint / (interval x step time without checkpoints)
  read ratio  = fdmini's read bandwidth / the file system's (bytes / read_s over fs_bandwidth's
                read of a file of the same size; the target: bounded by it, a ratio near 1)
"""
import glob
import json
import os
import re
import sys


def fail(why):
    sys.exit(f"table.py: error: {why}")


def load(path):
    try:
        with open(path) as f:
            r = json.load(f)
    except (OSError, ValueError) as e:
        fail(f"{path}: not a readable JSON record ({e})")
    if not isinstance(r, dict):
        fail(f"{path}: not a JSON record (an object)")
    return r


def fs_for(fs, size):
    """The fs_bandwidth line of the size closest to `size` (a checkpoint is a few KiB larger)."""
    if not fs:
        return {}
    best = min(fs, key=lambda b: abs(b - size))
    return fs[best] if abs(best - size) <= 0.01 * size else {}


def main():
    if len(sys.argv) == 2 and sys.argv[1] in ("-h", "--help"):
        print(__doc__)
        return
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    jdir, fsfile = sys.argv[1], sys.argv[2]
    if not os.path.isdir(jdir):
        fail(f"{jdir}: no such folder (the JSON records)")
    try:
        with open(fsfile) as f:
            lines = f.readlines()
    except (OSError, ValueError) as e:
        fail(f"{fsfile}: cannot read the fs_bandwidth lines ({e})")
    fs = {}
    for line in lines:
        m = re.match(r"fs bytes=(\d+) write_fsync_gbs=([\d.]+) read_cold_gbs=([\d.]+) read_cached_gbs=([\d.]+)", line)
        if m:
            fs[int(m.group(1))] = {"write": float(m.group(2)), "cold": float(m.group(3)), "cached": float(m.group(4))}
    runs = {}
    device = "?"
    for p in glob.glob(os.path.join(jdir, "n*-*.json")):
        m = re.match(r"n(\d+)-(\w+)-(none-[ab]|i\d+|restart-cold|restart-cached)\.json$", os.path.basename(p))
        if not m:
            continue
        r = load(p)
        device = r.get("device", device)
        runs[(int(m.group(1)), m.group(2), m.group(3))] = r
    keys = sorted({(n, op) for n, op, _ in runs})
    # a row: an interval beside a run without checkpoints, or a restart that read
    if not any(k[0] == "i" and ((n, op, "none-a") in runs or (n, op, "none-b") in runs)
               or k.startswith("restart") and r.get("restart") for (n, op, k), r in runs.items()):
        fail(f"{jdir}: no records that make a row (nN-OP-none-a.json with nN-OP-iI.json, "
             f"or nN-OP-restart-cold.json)")
    print(f"# checkpoint overhead on one {device}: double, the checkpoint directory as fs_bandwidth measured it")
    print("| grid | op | MB per checkpoint | every | steps/s without | steps/s with | cost | needed GB/s "
          "| write+fsync GB/s | work ms/step | lost ms/step | stalled ms/step | fsync ms/step | hidden | <= 1 % |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for n, op in keys:
        base = [runs[(n, op, k)]["phases_ms"]["step"]["max"] for k in ("none-a", "none-b") if (n, op, k) in runs]
        if not base:
            continue
        t0 = sum(base) / len(base)
        drift = (max(base) - min(base)) / t0 if len(base) == 2 else float("nan")
        ivals = sorted(int(k[1:]) for (m, o, k) in runs if (m, o) == (n, op) and k.startswith("i"))
        for i in ivals:
            r = runs[(n, op, f"i{i}")]
            c = r.get("checkpoints", {})
            b = c.get("bytes_each", float("nan"))
            t = r["phases_ms"]["step"]["max"]
            need = b / (i * t0 * 1e-3) / 1e9
            w = fs_for(fs, b).get("write", float("nan"))
            g = lambda k, s="max": c.get(k, {}).get(s, float("nan"))
            cost = 1 - t0 / t
            print(f"| {n}^3 | {op} | {b / 1e6:.0f} | {i} | {1e3 / t0:.0f} | {1e3 / t:.1f} | {100 * cost:.2f} % "
                  f"| {need:.2f} | {w:.2f} | {g('work_ms_per_step'):.4f} | {g('lost_ms_per_step'):.4f} "
                  f"| {g('stall_ms_per_step'):.4f} | {g('fsync_ms_per_step'):.4f} | {100 * g('hidden_share', 'min'):.0f} % "
                  f"| {'yes' if cost <= 0.01 else 'no'} |")
        print(f"<!-- {n}^3 {op}: the two runs without checkpoints differ by {100 * drift:.2f} % -->")
    print()
    print("| grid | op | restart bytes | page cache | read s (slowest rank) | fdmini GB/s | file system GB/s | ratio |")
    print("|---|---|---|---|---|---|---|---|")
    for n, op in keys:
        for cache in ("cold", "cached"):
            r = runs.get((n, op, f"restart-{cache}"))
            if not r or not r.get("restart"):
                continue
            s = r["restart"]
            b, t = s["bytes"], s["read_s"]
            ref = fs_for(fs, b).get(cache, float("nan"))
            got = b / t / 1e9 if t > 0 else float("nan")
            print(f"| {n}^3 | {op} | {b / 1e6:.0f} MB | {cache} | {t:.3f} | {got:.2f} | {ref:.2f} | {got / ref:.2f} |")


if __name__ == "__main__":
    main()

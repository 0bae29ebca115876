#!/usr/bin/env python3
"""table.py - the snapshot overhead table of bench/snapshots/overhead.sh: for each grid size
and snapshot interval, the step rate with snapshots against the rate without (the runs
without snapshots before and after, same job), the output bandwidth the interval needs, the
device-to-host and file-write bandwidths measured on the node in the same job
(io_bandwidth), the best ratio those bandwidths allow, and where the snapshot time went
(the snapshot work per step, what the step lost to it, the solver's stall, the hidden share:
fdmini's own figures, defined in bench/snapshots/README.md).

Usage: table.py JSON_DIR IO_FILE      (JSON_DIR: nN-none-a.json, nN-none-b.json, nN-iI.json;
                                       IO_FILE: the "io bytes=... d2h_gbs=... write_gbs=..."
                                       lines of io_bandwidth for the snapshot directory)
Exit 1 with one line when JSON_DIR or IO_FILE is missing or unreadable, a record is not JSON, or
the records make no row (a table without rows is no result).
Definitions (bench/snapshots/README.md):
  needed GB/s = bytes per snapshot / (interval x step time without snapshots)
  bound       = min(1, interval x step time x min(D2H, write) / bytes): the best ratio a
                pipeline that hides everything could reach with those bandwidths
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


def main():
    if len(sys.argv) == 2 and sys.argv[1] in ("-h", "--help"):
        print(__doc__)
        return
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    jdir, iofile = sys.argv[1], sys.argv[2]
    if not os.path.isdir(jdir):
        fail(f"{jdir}: no such folder (the JSON records)")
    try:
        with open(iofile) as f:
            lines = f.readlines()
    except (OSError, ValueError) as e:
        fail(f"{iofile}: cannot read the io_bandwidth lines ({e})")
    io = {}
    for line in lines:
        m = re.match(r"io bytes=(\d+) d2h_gbs=([\d.]+) write_gbs=([\d.]+)", line)
        if m:
            io[int(m.group(1))] = (float(m.group(2)), float(m.group(3)))
    runs = {}
    device = "?"
    for p in glob.glob(os.path.join(jdir, "n*-*.json")):
        m = re.match(r"n(\d+)-(none-[ab]|i(\d+))\.json$", os.path.basename(p))
        if not m:
            continue
        r = load(p)
        device = r.get("device", device)
        runs[(int(m.group(1)), m.group(2))] = r
    sizes = sorted({n for n, _ in runs})
    # a row: an interval beside a run without snapshots
    if not any(k[0] == "i" and ((n, "none-a") in runs or (n, "none-b") in runs) for n, k in runs):
        fail(f"{jdir}: no records that make a row (nN-none-a.json with nN-iI.json)")
    print(f"# snapshot overhead on one {device} ({os.path.basename(jdir.rstrip('/'))}): heat, double")
    print("| grid | MB per snapshot | every | steps/s without | steps/s with | ratio | needed GB/s "
          "| D2H GB/s | write GB/s | bound | work ms/step | lost ms/step | stalled ms/step | hidden | >= 95 % |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for n in sizes:
        base = [runs[(n, k)]["phases_ms"]["step"]["max"] for k in ("none-a", "none-b") if (n, k) in runs]
        if not base:
            continue
        t0 = sum(base) / len(base)  # ms per step without snapshots
        drift = (max(base) - min(base)) / t0 if len(base) == 2 else float("nan")
        ivals = sorted(int(k[1:]) for (m, k) in runs if m == n and k.startswith("i"))
        for i in ivals:
            r = runs[(n, f"i{i}")]
            s = r.get("snapshots", {})
            b = s.get("bytes_each", n**3 * 8.0)
            t = r["phases_ms"]["step"]["max"]
            d2h, wr = io.get(int(b), (float("nan"), float("nan")))
            need = b / (i * t0 * 1e-3) / 1e9
            bound = min(1.0, i * t0 * 1e-3 * min(d2h, wr) * 1e9 / b)
            work = s.get("work_ms_per_step", {}).get("max", float("nan"))
            lost = s.get("lost_ms_per_step", {}).get("max", float("nan"))
            stall = s.get("stall_ms_per_step", {}).get("max", float("nan"))
            hidden = s.get("hidden_share", {}).get("min", float("nan"))
            ratio = t0 / t
            print(f"| {n}^3 | {b / 1e6:.0f} | {i} | {1e3 / t0:.0f} | {1e3 / t:.1f} | {100 * ratio:.1f} % "
                  f"| {need:.1f} | {d2h:.1f} | {wr:.2f} | {100 * bound:.0f} % | {work:.3f} | {lost:.3f} | {stall:.3f} "
                  f"| {100 * hidden:.0f} % | {'yes' if ratio >= 0.95 else 'no'} |")
        print(f"<!-- {n}^3: {len(ivals)} intervals; the two runs without snapshots differ by {100 * drift:.2f} % -->")


if __name__ == "__main__":
    main()

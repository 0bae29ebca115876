#!/usr/bin/env python3
"""check_ranges.py - are fdmini's profiler ranges in a trace? fdmini marks each step's phases
with roctx (AMD) or NVTX (NVIDIA) ranges: halo_begin, halo_exchange, halo_unpack, interior,
boundary. This reads what a profiler wrote and says, per range, whether it is there:

  - a folder or CSV files (rocprofv3 --marker-trace with CSV output, ROCm 6.x, or a rocpd
    convert of ROCm 7): any cell of a *marker* CSV equal to the range's name;
  - SQLite files (rocprofv3's rocpd .db of ROCm 7, Nsight Systems' --export=sqlite): any text
    value of any table equal to the name (rocpd's string table, nsys' NVTX_EVENTS / StringIds).

Usage: bench/profile/check_ranges.py TRACE... [--names a,b,c]
Prints one line per range ("found" / "MISSING") and exits 0 when every range is found, 1 when
one is missing, 2 when no trace could be read.
"""
import argparse
import csv
import glob
import os
import sqlite3
import sys

NAMES = ("halo_begin", "halo_exchange", "halo_unpack", "interior", "boundary")


def trace_files(paths):
    """The CSV and SQLite files among paths (folders searched recursively)."""
    out = []
    for p in paths:
        if os.path.isdir(p):
            for ext in ("csv", "db", "sqlite"):
                out += glob.glob(os.path.join(p, "**", f"*.{ext}"), recursive=True)
        else:
            out.append(p)
    return sorted(set(out))


def strings_of_csv(path):
    """Every cell of a marker CSV (other CSVs: none, so that a kernel named 'interior' does
    not count as a range)."""
    if "marker" not in os.path.basename(path).lower():
        return set()
    with open(path, newline="", encoding="utf-8", errors="replace") as f:
        return {cell.strip() for row in csv.reader(f) for cell in row}


def strings_of_sqlite(path):
    """Every text value of every table of a SQLite file."""
    out = set()
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        for t in tables:
            cols = [r[1] for r in con.execute(f'PRAGMA table_info("{t}")')]
            for c in cols:
                for (v,) in con.execute(f'SELECT DISTINCT "{c}" FROM "{t}" WHERE typeof("{c}") = \'text\''):
                    out.add(v.strip())
    finally:
        con.close()
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("traces", nargs="+", help="trace files or folders")
    ap.add_argument("--names", default=",".join(NAMES), help="ranges to look for (comma list)")
    args = ap.parse_args(argv)
    names = [n for n in args.names.split(",") if n]
    seen, read = set(), 0
    for path in trace_files(args.traces):
        try:
            if path.endswith(".csv"):
                seen |= strings_of_csv(path)
            else:
                seen |= strings_of_sqlite(path)
            read += 1
        except (OSError, sqlite3.Error, csv.Error) as err:
            print(f"check_ranges: cannot read {path}: {err}", file=sys.stderr)
    if not read:
        print("check_ranges: no trace file could be read in " + " ".join(args.traces), file=sys.stderr)
        return 2
    missing = [n for n in names if n not in seen]
    for n in names:
        print(f"check_ranges: {n}: {'MISSING' if n in missing else 'found'}")
    print(f"check_ranges: {len(names) - len(missing)} of {len(names)} ranges found in {read} file(s)")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())

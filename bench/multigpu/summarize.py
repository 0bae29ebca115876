#!/usr/bin/env python3
"""summarize.py - the table of the halo-path benchmarks (bench/multigpu/run_node.sh halo).

Reads a folder of fdmini JSON records named NAME-rREPEAT.json (and peer_bandwidth.txt, the
output of peer_bandwidth in the same job) and prints, per NAME, the medians over the repeats:
step time (slowest rank), the phases (average over ranks; ipc_copy: the pulled IPC copies
alone), the halo bandwidth (halo_GBs: bytes / exchange, as fdmini reports it; pe_GBs: bytes /
(pack + exchange), the time from the start of the pack to the neighbour's face in place - the
one figure fair to pushed IPC faces, whose transfer is the pack itself), and with
--baseline the efficiency against the block alone and the share of the exchange hidden. Then
the two issue-4 figures: the 2 MiB halo bandwidth (both ways of counting) as a share of the
peer bandwidth of the same run, and the weak-scaling efficiency against the separate 1-GPU run.

usage: summarize.py RECORDS_DIR     (a folder or a records.tar.gz)
"""
import json
import os
import re
import statistics
import sys
import tarfile
import tempfile


def load(folder):
    groups, peer = {}, None
    for name in sorted(os.listdir(folder)):
        path = os.path.join(folder, name)
        if name == "peer_bandwidth.txt":
            peer = open(path).read()
            continue
        m = re.match(r"(.+)-r(\d+)\.json$", name)
        if not m:
            continue
        rec = json.load(open(path))
        if not rec["verification"]["passed"]:
            sys.exit(f"summarize: {name}: verification failed")
        groups.setdefault(m.group(1), []).append(rec)
    return groups, peer


def med(recs, f):
    vals = [f(r) for r in recs]
    vals = [v for v in vals if v is not None]
    return statistics.median(vals) if vals else None


def peer_2mib(text):
    """(one way, both ways per direction) GB/s of the 2 MiB copies."""
    if not text:
        return None, None
    for line in text.splitlines():
        m = re.search(r"\s2048 KiB\s+one way\s+[\d.]+ us\s+([\d.]+) GB/s\s+both ways\s+[\d.]+ us\s+([\d.]+) GB/s", line)
        if m:
            return float(m.group(1)), float(m.group(2))
    return None, None


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    src = sys.argv[1]
    if src.endswith(".tar.gz"):
        tmp = tempfile.mkdtemp()
        with tarfile.open(src) as t:
            t.extractall(tmp)
        src = os.path.join(tmp, "records")
    groups, peer = load(src)
    if peer:
        print(peer.strip())
    one, both = peer_2mib(peer)
    ph = lambda k: (lambda r: r["phases_ms"][k]["avg"])
    cols = ["name", "n", "device", "path", "move", "sync", "faces", "step_ms", "pack", "exchange", "ipc_copy", "unpack",
            "interior", "boundary", "halo_GBs", "pe_GBs", "alone_ms", "eff_alone", "hidden"]
    print("| " + " | ".join(cols) + " |")
    print("|" + "---|" * len(cols))
    rows = {}
    for name, recs in sorted(groups.items()):
        r0 = recs[0]
        row = {
            "step": med(recs, lambda r: r["phases_ms"]["step"]["max"]),
            "halo": med(recs, lambda r: r["halo_GBs"]["avg"]),
            "pe": med(recs, lambda r: r["halo_bytes_per_step_max"] / (1e6 * (r["phases_ms"]["pack"]["avg"] + r["phases_ms"]["exchange"]["avg"]))
                      if r["phases_ms"]["pack"]["avg"] + r["phases_ms"]["exchange"]["avg"] > 0 else None),
            "alone": med(recs, lambda r: r["alone_step_ms"]["avg"] if r["baseline"] else None),
            "eff": med(recs, lambda r: r["efficiency"]["avg"] if r["baseline"] else None),
            "hidden": med(recs, lambda r: r["hidden_share"]["avg"] if r["baseline"] else None),
        }
        rows[name] = row
        fmt = lambda v, p=4: "" if v is None else f"{v:.{p}f}"
        print("| " + " | ".join([
            name, str(len(recs)), r0["device"], r0.get("halo_path", "mpi"),
            r0.get("ipc_move", "pull") if r0.get("halo_faces_ipc") else "",
            r0.get("ipc_sync", "") if r0.get("halo_faces_ipc") else "", r0.get("face_copy", ""),
            fmt(row["step"]), fmt(med(recs, ph("pack"))), fmt(med(recs, ph("exchange"))),
            fmt(med(recs, lambda r: r["ipc_copy_ms"]["avg"] if r.get("halo_faces_ipc") and "ipc_copy_ms" in r else None)),
            fmt(med(recs, ph("unpack"))), fmt(med(recs, ph("interior"))), fmt(med(recs, ph("boundary"))),
            fmt(row["halo"], 1), fmt(row["pe"], 1), fmt(row["alone"]), fmt(row["eff"], 3), fmt(row["hidden"], 3)]) + " |")
    print()
    for name, row in sorted(rows.items()):
        if name.startswith(("halo2m", "thin2m")) and both and row["halo"]:
            push = groups[name][0].get("halo_faces_ipc") and groups[name][0].get("ipc_move") == "push"
            print(f"{name}: 2 MiB halo {row['halo']:.1f} GB/s per rank = {100 * row['halo'] / both:.1f}% of the "
                  f"peer copy both ways ({both:.1f} GB/s per direction), {100 * row['halo'] / one:.1f}% of one way ({one:.1f} GB/s)"
                  + (" - exchange only: pushed faces travel in the pack, so this overstates them" if push else ""))
            if row["pe"]:
                print(f"{name}: 2 MiB pack+exchange {row['pe']:.1f} GB/s per rank = {100 * row['pe'] / both:.1f}% of both ways, "
                      f"{100 * row['pe'] / one:.1f}% of one way")
    t1 = rows.get("weak512-1gpu", {}).get("step")
    for name, row in sorted(rows.items()):
        if name.startswith("weak512-") and name != "weak512-1gpu" and t1:
            print(f"{name}: weak 512^3 efficiency vs the separate 1-GPU run {t1 / row['step']:.3f}, vs alone "
                  f"{row['eff']:.3f}, hidden {row['hidden']:.3f}")


if __name__ == "__main__":
    main()

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

Exit 1 with one line naming the file when the folder or tarball is missing, unreadable or holds
no records, or a record is unreadable, lacks what the table reads, or did not verify; every
record is read before the table is printed, so then nothing goes to stdout.
"""
import json
import os
import re
import shutil
import statistics
import sys
import tarfile
import tempfile


class SummaryError(Exception):
    """Bad input: one line, exit 1."""


def load(folder):
    groups, peer = {}, None
    try:
        names = sorted(os.listdir(folder))
    except OSError as e:
        raise SummaryError(f"{folder}: cannot read the folder: {e.strerror}")
    for name in names:
        path = os.path.join(folder, name)
        try:
            if name == "peer_bandwidth.txt":
                with open(path, encoding="utf-8", errors="replace") as f:
                    peer = f.read()
                continue
            m = re.match(r"(.+)-r(\d+)\.json$", name)
            if not m:
                continue
            with open(path, encoding="utf-8") as f:
                rec = json.load(f)
        except (OSError, ValueError) as e:
            raise SummaryError(f"{path}: not a readable JSON record ({e})")
        ver = rec.get("verification") if isinstance(rec, dict) else None
        if not isinstance(ver, dict) or "passed" not in ver:
            raise SummaryError(f"{path}: no verification.passed (not an fdmini --json record)")
        if not ver["passed"]:
            raise SummaryError(f"{path}: verification failed")
        groups.setdefault(m.group(1), []).append((path, rec))
    if not groups:
        raise SummaryError(f"{folder}: no records (NAME-rREPEAT.json)")
    return groups, peer


def read(path, rec, f):
    """f(rec), or the error naming the record that lacks what f reads."""
    try:
        return f(rec)
    except (KeyError, TypeError, ZeroDivisionError) as e:
        raise SummaryError(f"{path}: a record without what the table reads ({type(e).__name__}: {e})")


def med(pairs, f):
    vals = [read(path, rec, f) for path, rec in pairs]
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
    if len(sys.argv) == 2 and sys.argv[1] in ("-h", "--help"):
        print(__doc__)
        return 0
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 1
    tmp = tempfile.mkdtemp()
    try:
        table(sys.argv[1], tmp)
    except SummaryError as e:
        print(f"summarize: error: {e}", file=sys.stderr)
        return 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


def table(src, tmp):
    if src.endswith(".tar.gz"):
        if not os.path.isfile(src):
            raise SummaryError(f"{src}: no such tarball")
        try:
            with tarfile.open(src) as t:
                t.extractall(tmp)
        except (tarfile.TarError, EOFError, OSError) as e:
            raise SummaryError(f"{src}: not a readable tarball ({str(e).splitlines()[0]})")
        if not os.path.isdir(os.path.join(tmp, "records")):
            raise SummaryError(f"{src}: no records/ folder in the tarball")
        groups, peer = load(os.path.join(tmp, "records"))
    elif not os.path.isdir(src):
        raise SummaryError(f"{src}: no such folder (a folder of records or a records.tar.gz)")
    else:
        groups, peer = load(src)
    print("\n".join(table_lines(groups, peer)))


def table_lines(groups, peer):
    """The lines to print, every record read first: a bad one stops it before anything is out."""
    out = []
    if peer:
        out.append(peer.strip())
    one, both = peer_2mib(peer)
    ph = lambda k: (lambda r: r["phases_ms"][k]["avg"])
    cols = ["name", "n", "device", "path", "move", "sync", "faces", "step_ms", "pack", "exchange", "ipc_copy", "unpack",
            "interior", "boundary", "halo_GBs", "pe_GBs", "alone_ms", "eff_alone", "hidden"]
    out.append("| " + " | ".join(cols) + " |")
    out.append("|" + "---|" * len(cols))
    rows = {}
    for name, pairs in sorted(groups.items()):
        path0, r0 = pairs[0]
        row = {
            "step": med(pairs, lambda r: r["phases_ms"]["step"]["max"]),
            "halo": med(pairs, lambda r: r["halo_GBs"]["avg"]),
            "pe": med(pairs, lambda r: r["halo_bytes_per_step_max"] / (1e6 * (r["phases_ms"]["pack"]["avg"] + r["phases_ms"]["exchange"]["avg"]))
                      if r["phases_ms"]["pack"]["avg"] + r["phases_ms"]["exchange"]["avg"] > 0 else None),
            "alone": med(pairs, lambda r: r["alone_step_ms"]["avg"] if r["baseline"] else None),
            "eff": med(pairs, lambda r: r["efficiency"]["avg"] if r["baseline"] else None),
            "hidden": med(pairs, lambda r: r["hidden_share"]["avg"] if r["baseline"] else None),
        }
        rows[name] = row
        fmt = lambda v, p=4: "" if v is None else f"{v:.{p}f}"
        out.append("| " + " | ".join([
            name, str(len(pairs)), read(path0, r0, lambda r: r["device"]), r0.get("halo_path", "mpi"),
            r0.get("ipc_move", "pull") if r0.get("halo_faces_ipc") else "",
            r0.get("ipc_sync", "") if r0.get("halo_faces_ipc") else "", r0.get("face_copy", ""),
            fmt(row["step"]), fmt(med(pairs, ph("pack"))), fmt(med(pairs, ph("exchange"))),
            fmt(med(pairs, lambda r: r["ipc_copy_ms"]["avg"] if r.get("halo_faces_ipc") and "ipc_copy_ms" in r else None)),
            fmt(med(pairs, ph("unpack"))), fmt(med(pairs, ph("interior"))), fmt(med(pairs, ph("boundary"))),
            fmt(row["halo"], 1), fmt(row["pe"], 1), fmt(row["alone"]), fmt(row["eff"], 3), fmt(row["hidden"], 3)]) + " |")
    out.append("")
    for name, row in sorted(rows.items()):
        if name.startswith(("halo2m", "thin2m")) and both and row["halo"]:
            first = groups[name][0][1]
            push = first.get("halo_faces_ipc") and first.get("ipc_move") == "push"
            out.append(f"{name}: 2 MiB halo {row['halo']:.1f} GB/s per rank = {100 * row['halo'] / both:.1f}% of the "
                       f"peer copy both ways ({both:.1f} GB/s per direction), {100 * row['halo'] / one:.1f}% of one way ({one:.1f} GB/s)"
                       + (" - exchange only: pushed faces travel in the pack, so this overstates them" if push else ""))
            if row["pe"]:
                out.append(f"{name}: 2 MiB pack+exchange {row['pe']:.1f} GB/s per rank = {100 * row['pe'] / both:.1f}% of both ways, "
                           f"{100 * row['pe'] / one:.1f}% of one way")
    t1 = rows.get("weak512-1gpu", {}).get("step")
    opt = lambda v: "-" if v is None else f"{v:.3f}"
    for name, row in sorted(rows.items()):
        if name.startswith("weak512-") and name != "weak512-1gpu" and t1 and row["step"]:
            out.append(f"{name}: weak 512^3 efficiency vs the separate 1-GPU run {t1 / row['step']:.3f}, vs alone "
                       f"{opt(row['eff'])}, hidden {opt(row['hidden'])}")
    return out


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""nsys_overlap.py - does fdmini's halo exchange overlap the interior update? A text summary
from Nsight Systems traces (one SQLite export per rank), or, where no trace could be made, from
fdmini's own event timings.

    nsys_overlap.py RANK0.sqlite [RANK1.sqlite ...]     from nsys profile --export=sqlite
    nsys_overlap.py --fdmini-json RUN.json              fallback: fdmini --baseline --json

From a trace, per rank and per step (one step = one pack of the faces):
    pack      the pack kernel (k_faces<1>) on the halo stream, device time
    exchange  the host's NVTX range "halo_exchange": waiting for the pack, then MPI
              (Isend, Waitall; staging copies when MPI is not GPU-aware)
    unpack    the unpack kernel (k_faces<0>), device time
    interior  the interior stencil kernel(s) on the compute stream, device time
    shell     the boundary-shell kernel (k_shell) on the halo stream
    hidden    the share of the halo's critical path, pack start to unpack end, that runs while
              the interior kernel runs: 100% means the whole exchange was hidden
Kernels are device time; NVTX ranges are host time (fdmini's ranges mark when the host enqueues
work and waits for MPI, so the device side comes from the kernel records). Times are in us from
the rank's first pack. The summary lists the last steps of each rank and medians over all steps.

Schema read (Nsight Systems SQLite export): CUPTI_ACTIVITY_KIND_KERNEL (start, end, streamId,
shortName/demangledName -> StringIds), NVTX_EVENTS (start, end, text/textId). Columns are looked
up, so exports of several nsys versions work.
"""

import argparse
import json
import os
import sqlite3
import statistics
import sys
from typing import List, Optional, Sequence, Tuple

Interval = Tuple[int, int]  # ns


class SummaryError(Exception):
    """A trace or record that cannot be summarized: printed, exit 1."""


def columns(db: sqlite3.Connection, table: str) -> List[str]:
    """Column names of table, [] when it does not exist."""
    try:
        return [r[1] for r in db.execute(f"PRAGMA table_info({table})")]
    except sqlite3.Error:
        return []


def kernels(db: sqlite3.Connection) -> List[Tuple[int, int, int, str]]:
    """(start, end, stream, name) of every kernel, by start; name is the demangled one where the
    export has it ("void k_faces<1>(int, ...)"), else the short name."""
    cols = columns(db, "CUPTI_ACTIVITY_KIND_KERNEL")
    if not cols:
        raise SummaryError("no CUPTI_ACTIVITY_KIND_KERNEL table: the trace holds no kernel "
                           "(profile with --trace=cuda)")
    name_col = next((c for c in ("demangledName", "mangledName", "shortName") if c in cols), None)
    if name_col is None:
        raise SummaryError("CUPTI_ACTIVITY_KIND_KERNEL has no kernel name column")
    rows = db.execute(f"SELECT k.start, k.end, k.streamId, COALESCE(s.value, '') FROM "
                      f"CUPTI_ACTIVITY_KIND_KERNEL AS k LEFT JOIN StringIds AS s "
                      f"ON k.{name_col} = s.id ORDER BY k.start").fetchall()
    out = [(int(a), int(b), int(c), str(d)) for a, b, c, d in rows]
    # names without template arguments ("k_faces"): on each stream the face kernels alternate,
    # pack then unpack, step after step
    turn: dict = {}
    for i, (a, b, st, n) in enumerate(out):
        if "k_faces" in n and kind(n) == "other":
            t = turn.get(st, 0)
            out[i] = (a, b, st, "k_faces<1>" if t == 0 else "k_faces<0>")
            turn[st] = 1 - t
    return out


def nvtx_ranges(db: sqlite3.Connection, name: str) -> List[Interval]:
    """(start, end) of the NVTX ranges called `name`, by start."""
    cols = columns(db, "NVTX_EVENTS")
    if not cols:
        return []
    if "textId" in cols:
        text = "COALESCE(n.text, s.value)"
        join = "LEFT JOIN StringIds AS s ON n.textId = s.id"
    else:
        text, join = "n.text", ""
    rows = db.execute(f"SELECT n.start, n.end FROM NVTX_EVENTS AS n {join} WHERE {text} = ? "
                      f"AND n.end IS NOT NULL AND n.end > n.start ORDER BY n.start",
                      (name,)).fetchall()
    return [(int(a), int(b)) for a, b in rows]


def kind(name: str) -> str:
    """pack, unpack, shell, interior or other, from a kernel's (demangled or mangled) name."""
    if "k_faces<1" in name or "k_facesILi1E" in name:
        return "pack"
    if "k_faces<0" in name or "k_facesILi0E" in name:
        return "unpack"
    if "k_shell" in name:
        return "shell"
    if any(k in name for k in ("k_baseline", "k_plane", "k_zmarch")):
        return "interior"
    return "other"


def overlap(a: Interval, b: Interval) -> int:
    """ns that intervals a and b share."""
    return max(0, min(a[1], b[1]) - max(a[0], b[0]))


def steps_of(db: sqlite3.Connection) -> List[dict]:
    """One entry per pack: its pack, exchange, unpack, interior and shell intervals."""
    ks = kernels(db)
    packs = [(s, e) for s, e, _, n in ks if kind(n) == "pack"]
    unpacks = [(s, e) for s, e, _, n in ks if kind(n) == "unpack"]
    shells = [(s, e) for s, e, _, n in ks if kind(n) == "shell"]
    interiors = [(s, e, st) for s, e, st, n in ks if kind(n) == "interior"]
    exchanges = nvtx_ranges(db, "halo_exchange")
    if not packs:
        raise SummaryError("no pack kernel (k_faces<1>) in the trace: did the run have "
                           "neighbours? (2 or more ranks, --halo-path auto or mpi)")
    shell_streams = {st for s, e, st, n in ks if kind(n) in ("pack", "unpack", "shell")}
    steps = []
    for i, p in enumerate(packs):
        nxt = packs[i + 1][0] if i + 1 < len(packs) else None
        unpack = next((u for u in unpacks if u[0] >= p[1] and (nxt is None or u[0] < nxt)), None)
        if unpack is None:
            continue
        window = (p[0], unpack[1])
        exch = [x for x in exchanges if x[0] <= unpack[0] and x[1] >= p[0]]
        # the interior of this step: on the compute stream (not the halo stream), overlapping
        # the window, or the last one that started before the pack
        ints = [(s, e) for s, e, st in interiors if st not in shell_streams and overlap((s, e), window)]
        if not ints:
            before = [(s, e) for s, e, st in interiors if st not in shell_streams and s <= p[0]]
            ints = before[-1:]
        shell = next((sh for sh in shells if sh[0] >= unpack[1] and (nxt is None or sh[0] < nxt)), None)
        hidden_ns = sum(overlap(iv, window) for iv in ints)
        steps.append({
            "pack": p, "unpack": unpack, "exchange": exch[-1] if exch else None,
            "interior": (min(s for s, _ in ints), max(e for _, e in ints)) if ints else None,
            "shell": shell, "window_ns": window[1] - window[0], "hidden_ns": hidden_ns,
        })
    if not steps:
        raise SummaryError("no step with both a pack and an unpack kernel in the trace")
    return steps


def fmt(iv: Optional[Interval], t0: int) -> str:
    """'12.3-45.6' us from t0, '-' for none."""
    return "-" if iv is None else f"{(iv[0] - t0) / 1e3:.1f}-{(iv[1] - t0) / 1e3:.1f}"


def dur(iv: Optional[Interval]) -> Optional[float]:
    """Length in us."""
    return None if iv is None else (iv[1] - iv[0]) / 1e3


def median(vals: Sequence[Optional[float]]) -> Optional[float]:
    """Median of the values that are not None."""
    v = [x for x in vals if x is not None]
    return statistics.median(v) if v else None


def us(v: Optional[float]) -> str:
    return "-" if v is None else f"{v:.1f}"


def summarize_trace(paths: Sequence[str], last: int) -> str:
    """The text summary of one SQLite export per rank."""
    out = ["fdmini overlap from Nsight Systems traces (device kernels; exchange = the host's "
           "NVTX range halo_exchange)"]
    all_hidden = []
    for rank, path in enumerate(paths):
        if not os.path.exists(path):
            raise SummaryError(f"{path}: no such file")
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            steps = steps_of(db)
        except sqlite3.Error as err:
            raise SummaryError(f"{path}: {err}") from None
        finally:
            db.close()
        t0 = steps[0]["pack"][0]
        out.append("")
        out.append(f"rank {rank} ({os.path.basename(path)}): {len(steps)} steps traced; the last "
                   f"{min(last, len(steps))}, times in us from the rank's first pack")
        out.append(f"  {'step':>5}  {'pack':>17}  {'exchange (MPI)':>17}  {'unpack':>17}  "
                   f"{'interior':>17}  {'shell':>17}  {'hidden':>6}")
        for k, st in list(enumerate(steps))[-last:]:
            share = st["hidden_ns"] / st["window_ns"] if st["window_ns"] else 0.0
            out.append(f"  {k:>5}  {fmt(st['pack'], t0):>17}  {fmt(st['exchange'], t0):>17}  "
                       f"{fmt(st['unpack'], t0):>17}  {fmt(st['interior'], t0):>17}  "
                       f"{fmt(st['shell'], t0):>17}  {100 * share:5.1f}%")
        shares = [s["hidden_ns"] / s["window_ns"] for s in steps if s["window_ns"]]
        all_hidden += shares
        full = sum(1 for s in steps if s["window_ns"] and s["hidden_ns"] >= s["window_ns"])
        out.append(f"  median over {len(steps)} steps (us): pack {us(median([dur(s['pack']) for s in steps]))}, "
                   f"exchange {us(median([dur(s['exchange']) for s in steps]))}, "
                   f"unpack {us(median([dur(s['unpack']) for s in steps]))}, "
                   f"pack start to unpack end {us(median([s['window_ns'] / 1e3 for s in steps]))}, "
                   f"interior {us(median([dur(s['interior']) for s in steps]))}; hidden under the "
                   f"interior {100 * median(shares):.1f}% (median), entirely hidden in {full} of "
                   f"{len(steps)} steps")
    out.append("")
    out.append(f"overall: the halo (pack, exchange, unpack) ran under the interior kernel for "
               f"{100 * statistics.median(all_hidden):.1f}% of its time (median over "
               f"{len(all_hidden)} rank-steps; min {100 * min(all_hidden):.1f}%, max "
               f"{100 * max(all_hidden):.1f}%)")
    return "\n".join(out)


def summarize_fdmini(path: str) -> str:
    """The fallback summary: fdmini's own per-phase event timings of a --baseline run."""
    try:
        with open(path, encoding="utf-8") as f:
            r = json.load(f)
    except (OSError, ValueError) as err:
        raise SummaryError(f"{path}: {err}") from None
    ph = r.get("phases_ms", {})
    need = ["pack", "exchange", "unpack", "interior", "boundary", "step"]
    if any(k not in ph for k in need):
        raise SummaryError(f"{path}: not an fdmini record with phases_ms")
    lines = ["fdmini overlap from its own timings (NO timeline: device events per phase, averaged "
             "over the steps; see the note above on why nsys did not run)",
             f"  {r.get('ranks')} ranks, {r.get('device')}, {r.get('backend')}, halo path "
             f"{r.get('halo_path')}, MPI {r.get('mpi_gpu')}, global {r.get('global')}, "
             f"{r.get('iters')} steps",
             f"  {'phase':10s} {'min':>9s} {'avg':>9s} {'max':>9s}   ms per step over ranks"]
    for k in need:
        lines.append(f"  {k:10s} {ph[k]['min']:9.4f} {ph[k]['avg']:9.4f} {ph[k]['max']:9.4f}")
    comm = ph["pack"]["avg"] + ph["exchange"]["avg"] + ph["unpack"]["avg"]
    serial = comm + ph["interior"]["avg"] + ph["boundary"]["avg"]
    lines.append(f"  sum of the phases {serial:.4f} ms against a step of {ph['step']['avg']:.4f} "
                 f"ms: {max(0.0, serial - ph['step']['avg']):.4f} ms of the {comm:.4f} ms of "
                 f"halo work ran at the same time as other work")
    hs = r.get("hidden_share")
    if isinstance(hs, dict):
        lines.append(f"  exchange hidden (fdmini --baseline: 1 - (T_step - T_alone) / (pack + "
                     f"exchange + unpack)): {100 * hs['min']:.1f} / {100 * hs['avg']:.1f} / "
                     f"{100 * hs['max']:.1f} % (min/avg/max over ranks)")
    return "\n".join(lines)


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point."""
    ap = argparse.ArgumentParser(prog="nsys_overlap.py", description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("sqlite", nargs="*", help="one nsys SQLite export per rank, rank order")
    ap.add_argument("--fdmini-json", metavar="RUN.json",
                    help="summarize fdmini's own timings instead (no trace)")
    ap.add_argument("--last", type=int, default=6, help="steps listed per rank (default 6)")
    args = ap.parse_args(argv)
    try:
        if args.fdmini_json:
            print(summarize_fdmini(args.fdmini_json))
        elif args.sqlite:
            print(summarize_trace(args.sqlite, max(1, args.last)))
        else:
            ap.error("give SQLite exports or --fdmini-json")
    except SummaryError as err:
        print(f"nsys_overlap.py: error: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

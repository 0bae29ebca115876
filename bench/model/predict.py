#!/usr/bin/env python3
"""predict.py - what a step of fdmini should take on N nodes of a site, for each path.

    predict.py --site lumi-g --op heat (--local NX,NY,NZ | --global NX,NY,NZ) --nodes 1,2,4,...
               [--halo-width S] [--fuse T] [--float] [--record RUN.json] [--csv FILE]

One rank per GPU (GCD), every node full. A node count fdmini would refuse (no process grid
thick enough) is left out with a line on stderr; where every one is, that is the error. For
each node count it prints the process grid and the box of it each node holds (grid.py, as
fdmini makes them), the messages that leave the busiest node per exchange and its bytes per
step, and for each path (today: host-driven, two streams; signalled: one launch a pass, one node
only; proxy: one launch, off-node faces through the host's proxy and MPI) the step in microseconds and the efficiency: weak (--local) T_alone / T_step against
the block alone on one GPU, strong (--global) T_1 / (R T_step) against the whole grid on one GPU
at the same kernel speed. The model is model.py's docstring; its parameters are the site file's
(bench/model/sites/, each with its source), and where --record names a run's JSON record
(fdmini --json) the floors it measured (F_g, F_ls, L) and, from a one-rank record or one with
--baseline, the kernel's speed replace the site's: a record without floors_us keeps the site's
floors, with a warning; one whose floors_us is not an object is an error, and so is one whose
kernel is of another operator or precision than --op and --float. --csv FILE writes the table
first, whole or not at all (a temporary file beside it, renamed over it): a FILE that cannot be
written is the error, with nothing printed before it and an existing FILE left as it was.
"""
import argparse
import csv
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import needs  # noqa: E402

if __name__ == "__main__":
    needs.require(__file__)

import grid  # noqa: E402
import inputs  # noqa: E402
import model  # noqa: E402
from inputs import ModelError  # noqa: E402


# fdmini's limits (src/run/options.h FD_HALO_WIDTH_MAX, kernels/backend.h FD_FUSE_MAX)
HALO_WIDTH_MAX, FUSE_MAX = 64, 4


def steps(op: str, S: int, T: int) -> None:
    """ModelError where fdmini refuses --halo-width S and --fuse T for op (src/run/options.c);
    whether T divides S depends on the ranks (model.Case)."""
    if not 1 <= S <= HALO_WIDTH_MAX:
        raise ModelError(f"--halo-width {S}: expected 1..{HALO_WIDTH_MAX} ghost layers")
    if not 1 <= T <= FUSE_MAX:
        raise ModelError(f"--fuse {T}: expected 1..{FUSE_MAX} time steps per pass")
    if S > 1 and op == "laplacian":
        raise ModelError(f"--halo-width {S}: laplacian is one application, not a time stepper; "
                         f"deep halos apply to heat, jacobi and wave")
    if T > 1 and op not in ("heat", "jacobi"):
        raise ModelError(f"--fuse {T}: several steps per pass apply to heat and jacobi, not {op}")


def triple(text: str, what: str):
    try:
        v = [int(x) for x in text.split(",")]
    except ValueError:
        v = []
    if len(v) == 1:
        v = v * 3
    if len(v) != 3 or min(v) < 1:
        raise ModelError(f"{what} {text!r}: expected N or NX,NY,NZ, positive integers")
    return tuple(v)


def scenario(site: inputs.Site, op: str, nodes: int, local=None, global_size=None, S=1, T=1,
             real_bytes=8, record=None, record_name=""):
    """Every path's prediction for one node count: {'nodes', 'ranks', 'N', 'P', 'B', 'node_msgs',
    'node_bytes', 'rank_off_max', 'paths': {path: result or None}, 'alone_us' / 't1_us'}."""
    K = site.p["gpus_per_node"]
    ranks = K * nodes
    N, P = grid.resolve_grid(ranks, global_size=global_size, local=local, width=S,
                             impl=site.p["mpi"])
    fl = model.Floors(site, op, real_bytes)
    if record is not None:
        fl.from_record(record, record_name)
    case = model.Case(op, N, P, K, nodes, S, T, real_bytes)
    # the fields of the largest block with its ghosts, as fdmini allocates them (and refuses
    # them, state.c, where they exceed the device's memory; --plan's "memory" line)
    big = max(case.plan.n.tolist(), key=lambda b: b[0] * b[1] * b[2])
    need = float(real_bytes) * inputs.field_buffers(op)
    for d in range(3):
        need *= big[d] + 2 * S
    have = float(site.p["gpu_memory_GiB"])
    if need > have * 2**30:
        raise grid.GridError(f"the largest block, {fmt_grid(big)}, needs {need / 2**30:.1f} GiB for its "
                             f"{inputs.field_buffers(op)} fields, more than a GPU's {have:g} GiB")
    msgs, byts = case.plan.node_off()
    kind = "weak" if local is not None else "strong"
    out = {"nodes": nodes, "ranks": ranks, "N": N, "P": P, "B": case.plan.B,
           "node_msgs": int(msgs.max()), "node_bytes": float(byts.max()) / S,
           "rank_off_max": int(case.plan.faces_off_per_rank().max()), "paths": {}, "kind": kind,
           "floors": fl}
    for path in model.PATHS:
        res = model.predict(case, fl, path)
        if res is not None:
            res["eff"] = model.efficiency(kind, case, fl, res["step_us"])
        out["paths"][path] = res
    return out


def fmt_grid(t) -> str:
    return "-" if t is None else "x".join(str(v) for v in t)


def write_csv(path: str, table) -> None:
    """Write table (dicts with the same keys, in order) to path as CSV, complete or not at all:
    into PATH.PID.tmp beside the file (beside a link's target), renamed over it only once every
    write and the close succeeded, as fdmini writes its files (docs/running.md, "Output
    files"). ModelError naming path where it cannot be written; then an existing file is left
    as it was and no temporary file stays. An existing path must be a regular file (a link to
    one): a directory, a device such as /dev/null or a dangling link is refused."""
    if os.path.lexists(path) and not os.path.isfile(path):
        raise ModelError(f"{path}: cannot write: not a regular file")
    final = os.path.realpath(path)
    tmp = f"{final}.{os.getpid()}.tmp"
    made = False
    try:
        with open(tmp, "x", newline="") as f:
            made = True
            w = csv.DictWriter(f, fieldnames=list(table[0]))
            w.writeheader()
            w.writerows(table)
        os.replace(tmp, final)
    except OSError as err:
        if made:
            try:
                os.unlink(tmp)
            except OSError:
                pass
        raise ModelError(f"{path}: cannot write: {err.strerror or err}") from None


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0].split(" - ", 1)[1],
                                 epilog=__doc__.split("\n\n", 1)[1],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--site", default="lumi-g", help="lumi-g, frontier, nvidia-h200 or a site file")
    ap.add_argument("--op", default="heat")
    size = ap.add_mutually_exclusive_group(required=True)
    size.add_argument("--local", metavar="NX,NY,NZ", help="the block of every rank (weak scaling)")
    size.add_argument("--global", dest="glob", metavar="NX,NY,NZ", help="the global grid (strong)")
    ap.add_argument("--nodes", default="1,2,4,8,16,32,64,128,256,512,1024")
    ap.add_argument("--halo-width", type=int, default=1, metavar="S")
    ap.add_argument("--fuse", type=int, default=1, metavar="T")
    ap.add_argument("--float", action="store_true", help="single precision (4 bytes a value)")
    ap.add_argument("--record", metavar="RUN.json", help="a run's record: its floors and kernel")
    ap.add_argument("--csv", metavar="FILE", help="also write the table as CSV")
    a = ap.parse_args(argv)
    try:
        site = inputs.load_site(a.site)
        local = triple(a.local, "--local") if a.local is not None else None
        glob = triple(a.glob, "--global") if a.glob is not None else None
        try:
            nodes = [int(x) for x in a.nodes.split(",")]
        except ValueError:
            nodes = []
        if not nodes or min(nodes) < 1:
            raise ModelError(f"--nodes {a.nodes!r}: expected positive integers, e.g. 1,2,4")
        rec = inputs.load_record(a.record) if a.record else None
        if rec is not None and "floors_us" not in rec:
            print(f"predict.py: warning: {a.record}: no floors_us: the floors are the site's",
                  file=sys.stderr)
        elif rec is not None and not isinstance(rec["floors_us"], dict):
            raise ModelError(f"{a.record}: floors_us is not an object (docs/report.md)")
        bpp = inputs.bytes_per_point(a.op, 4 if a.float else 8)
        steps(a.op, a.halo_width, a.fuse)
        rows, refused = [], []
        for n in nodes:
            try:
                rows.append(scenario(site, a.op, n, local, glob, a.halo_width, a.fuse,
                                     4 if a.float else 8, rec, a.record or ""))
            except grid.GridError as err:
                refused.append(f"{n} node(s): {err}")
        if not rows:
            more = f" (and {len(refused) - 1} more node counts)" if len(refused) > 1 else ""
            raise ModelError(f"no node count gives a grid fdmini runs: {refused[0]}{more}")
        table, printed = [], []
        for r in rows:
            cells = []
            line = {"nodes": r["nodes"], "ranks": r["ranks"], "grid": fmt_grid(r["P"]),
                    "node_box": fmt_grid(r["B"]), "node_off_messages": r["node_msgs"],
                    "node_off_MB_per_step": r["node_bytes"] / 1e6}
            for p in model.PATHS:
                res = r["paths"][p]
                cells.append(f"{'-':>12} {'-':>5}" if res is None else
                             f"{res['step_us']:12.2f} {res['eff']:5.3f}")
                line[f"{p}_us"] = None if res is None else res["step_us"]
                line[f"{p}_eff"] = None if res is None else res["eff"]
            table.append(line)
            printed.append(f"{r['nodes']:6d} {fmt_grid(r['P']):>12} {fmt_grid(r['B']):>8} "
                           f"{r['node_msgs']:8d} {r['node_bytes'] / 1e6:8.2f}  " + "  ".join(cells))
        # the CSV first: a file that cannot be written is the one error line, with no table
        # printed before it
        if a.csv:
            write_csv(a.csv, table)
        for line in refused:
            print(f"predict: {line}", file=sys.stderr)
        what = f"--local {a.local}" if a.local else f"--global {a.glob}"
        print(f"{site.name}: {a.op} {what}, S = {a.halo_width}, T = {a.fuse}, "
              f"{site.p['gpus_per_node']} rank{'' if site.p['gpus_per_node'] == 1 else 's'} per node "
              f"({rows[0]['kind']} efficiency)")
        fl = rows[0]["floors"]
        print(f"  F_g {fl.g:.3g} us ({fl.src['g']}), F_ls {fl.F_ls:.3g} ({fl.src['F_ls']}), "
              f"L_on {fl.L_on:.3g} ({fl.src['L_on']}), L_off {fl.L_off:.3g}, word {fl.W:.3g}, "
              f"kernel {bpp / fl.c1 / 1e3:.0f} GB/s at T = 1 ({fl.src['c1']})")
        print(f"{'nodes':>6} {'grid':>12} {'node box':>8} {'off/node':>8} {'MB/step':>8}  "
              + "  ".join(f"{p + ' us':>12} {'eff':>5}" for p in model.PATHS))
        for line in printed:
            print(line)
    except (ModelError, grid.GridError) as err:
        print(f"predict.py: error: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

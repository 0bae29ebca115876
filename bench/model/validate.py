#!/usr/bin/env python3
"""validate.py - every measured row of the scaling results beside the model's prediction.

    validate.py [--strong CSV] [--weak CSV] [--nodes CSV | --no-nodes] [--explained JSON]
                [--site NAME] [--tolerance 0.15]

Defaults: bench/results/NVIDIA-H200x4-strong.csv (scaling_table.py's strong table),
NVIDIA-H200x4-weak.csv (collect.py's summary of the weak study) and, where it exists,
NVIDIA-H200-nodes.csv (bench/multigpu/nodes_table.py: nodes emulated by 2 or 8 ranks sharing
one H200 under MPS; op, global, ranks, nodes, mode, variant today/proxy/auto/none, path,
step_us, Fm_us, X_us, T, S), the site nvidia-h200 and bench/model/explained.json.

How each row is predicted (model.py): the row's own floors where the table has them (strong:
X_us, Fp_us, averages over ranks; nodes: X_us on the host-driven path, Fm_us as the proxy's hop),
the site's (F_g, F_ls, L, the word round trip, ...) otherwise; the process grid of the row
(procs) or fdmini's (grid.py); the path the row took: `signalled` the signalled pass, `ipc`,
`mpi`, `mixed` and `today` the two-stream exchange, `proxy` the proxy pass. The kernel's speed:
strong and weak, from the one-GPU row of the same operator, size and mode (its T); nodes, from
the `none` row of the same operator, size, mode and ranks (the same ranks on the GPU without
emulated nodes): the speed at which the model gives that row its measured step, on its path
with its X, so the ranks' contention under MPS is in it. The site's fused speedups convert to
another T. The rows that give the kernel's speed are shown as `baseline`, not checked.

A row more than the tolerance off (|model / measured - 1|) is `OFF` unless explained.json has
an entry whose `match` (column: value, every one equal to the row's cell) fits it, whose
`reason` is then printed beside it (`explained`). Exit 1 where any row is OFF, or an input is
unreadable (one line naming it); an explanation that matches no row, or only rows within the
tolerance, is reported as not needed.
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

RESULTS = os.path.join(inputs.ROOT, "bench", "results")
DEFAULTS = {"strong": os.path.join(RESULTS, "NVIDIA-H200x4-strong.csv"),
            "weak": os.path.join(RESULTS, "NVIDIA-H200x4-weak.csv"),
            "nodes": os.path.join(RESULTS, "NVIDIA-H200-nodes.csv")}
NEEDED = {"strong": ["op", "global", "gpus", "ranks", "mode", "procs", "S", "T", "path", "step_us",
                     "X_us", "Fp_us"],
          "weak": ["study", "size", "op", "variant", "ranks", "procs", "step_ms", "halo_width",
                   "fuse_steps"],
          "nodes": ["op", "global", "ranks", "nodes", "mode", "variant", "path", "step_us", "Fm_us",
                    "X_us"]}


def read_csv(path: str, table: str):
    try:
        with open(path, newline="", encoding="utf-8") as f:
            r = csv.DictReader(f)
            missing = [c for c in NEEDED[table] if c not in (r.fieldnames or [])]
            if missing:
                raise ModelError(f"{path}: not a {table} table (columns missing: {', '.join(missing)})")
            rows = list(r)
    except OSError as err:
        raise ModelError(f"{path}: cannot read: {err.strerror}") from None
    except (ValueError, csv.Error) as err:
        raise ModelError(f"{path}: not a CSV table ({err})") from None
    if not rows:
        raise ModelError(f"{path}: no rows")
    return rows


def num(row, key, path, line, required=True):
    v = row.get(key, "")
    if v in ("", None):
        if required:
            raise ModelError(f"{path}, line {line}: '{key}' is empty")
        return None
    try:
        return float(v)
    except ValueError:
        raise ModelError(f"{path}, line {line}: '{key}' is {v!r}, not a number") from None


def first_int(text: str) -> int:
    """'3' or '2/3' (the T of several repeats) -> the first."""
    return int(str(text).split("/")[0])


def mode_width(mode: str) -> int:
    return 1 if mode == "T1" else int(mode[1:].split("-")[0])


def load_explained(path: str):
    doc = inputs.load_json(path)
    items = doc.get("explained") if isinstance(doc, dict) else None
    if not isinstance(items, list) or not all(
            isinstance(e, dict) and isinstance(e.get("table"), str) and isinstance(e.get("match"), dict)
            and isinstance(e.get("reason"), str) and e["reason"].strip() for e in items):
        raise ModelError(f"{path}: expected {{'explained': [{{'table', 'match': {{column: value}}, "
                         f"'reason'}}, ...]}}")
    return items


def matches(entry, table, row) -> bool:
    return entry["table"] == table and all(str(row.get(k, "")) == str(v) for k, v in entry["match"].items())


def path_of(text: str) -> str:
    if text == "signalled":
        return "signalled"
    if text == "proxy":
        return "proxy"
    return "today"


def strong_rows(path, site):
    rows = read_csv(path, "strong")
    base = {(r["op"], r["global"], r["mode"]): r for r in rows if r["gpus"] == "1" and r["ranks"] == "1"}
    out = []
    for i, r in enumerate(rows, 2):
        meas = num(r, "step_us", path, i)
        label = (f"{r['op']} {r['global']}^3 {r['mode']}, {r['gpus']} GPU(s), {r['ranks']} ranks, "
                 f"{r['path']}, T {r['T']}")
        if r["gpus"] == "1" and r["ranks"] == "1":
            out.append((r, label, meas, None, "baseline"))
            continue
        b = base.get((r["op"], r["global"], r["mode"]))
        if b is None:
            raise ModelError(f"{path}, line {i}: no one-GPU row of {r['op']} {r['global']} {r['mode']}")
        n = int(r["global"])
        gpus, ranks = int(r["gpus"]), int(r["ranks"])
        fl = model.Floors(site, r["op"])
        fl.set_kernel(num(b, "step_us", path, i), (n, n, n), first_int(b["T"]), f"{path} one-GPU row")
        fl.X, fl.Fp = num(r, "X_us", path, i, False), num(r, "Fp_us", path, i, False)
        P = tuple(int(v) for v in r["procs"].split("x"))
        case = model.Case(r["op"], (n, n, n), P, ranks, 1, int(r["S"]), first_int(r["T"]),
                          ranks_per_gpu=ranks // gpus)
        res = model.predict(case, fl, path_of(r["path"]))
        out.append((r, label, meas, res["step_us"], None))
    return out


def weak_rows(path, site):
    rows = read_csv(path, "weak")
    base = {(r["op"], r["size"], r["variant"]): r for r in rows if r["ranks"] == "1"}
    out = []
    for i, r in enumerate(rows, 2):
        meas = 1e3 * num(r, "step_ms", path, i)
        T = first_int(r["fuse_steps"])
        label = f"weak {r['op']} {r['size']} per GPU {r['variant']}, {r['ranks']} GPU(s), T {r['fuse_steps']}"
        if r["ranks"] == "1":
            out.append((r, label, meas, None, "baseline"))
            continue
        b = base.get((r["op"], r["size"], r["variant"]))
        if b is None:
            raise ModelError(f"{path}, line {i}: no one-GPU row of {r['op']} {r['size']} {r['variant']}")
        block = tuple(int(v) for v in r["size"].split("x"))
        P = tuple(int(v) for v in r["procs"].split("x"))
        ranks = int(r["ranks"])
        fl = model.Floors(site, r["op"])
        fl.set_kernel(1e3 * num(b, "step_ms", path, i), block, first_int(b["fuse_steps"]),
                      f"{path} one-GPU row")
        N = tuple(block[d] * P[d] for d in range(3))
        case = model.Case(r["op"], N, P, ranks, 1, int(r["halo_width"]), T)
        res = model.predict(case, fl, "today")
        out.append((r, label, meas, res["step_us"], None))
    return out


def nodes_case(r, path, line, site, nodes_of=None):
    """The model's case of a row of the emulated-node table: every rank on the one GPU."""
    n, ranks = int(r["global"]), int(r["ranks"])
    nodes = int(r["nodes"]) if nodes_of is None else nodes_of
    if ranks < 1 or nodes < 1 or ranks % nodes:
        raise ModelError(f"{path}, line {line}: {ranks} ranks do not fill {nodes} nodes evenly")
    S = int(r["S"]) if r.get("S") else mode_width(r["mode"])
    T = first_int(r.get("T") or "1")
    N, P = grid.resolve_grid(ranks, global_size=(n, n, n), width=S, impl=site.p["mpi"])
    return model.Case(r["op"], N, P, ranks // nodes, nodes, S, T, ranks_per_gpu=ranks)


def nodes_rows(path, site):
    """The emulated-node table: R ranks on one GPU under MPS as N emulated nodes. The kernel's
    speed of a cell (op, global, mode, ranks) is the one at which the model gives its `none` row
    (the same ranks without emulation, on one node) that row's step, on the path it took with
    its X (model.fit_kernel): the R ranks' contention on the GPU is then in the kernel's speed.
    Each other row is predicted on the path it took with its own floors: X for the host-driven
    path (today's, or auto's where it took mpi or mixed), F_m as the hop of the proxy pass."""
    rows = read_csv(path, "nodes")
    base = {}
    for i, r in enumerate(rows, 2):
        if r["variant"] == "none":
            key = (r["op"], r["global"], r["mode"], r["ranks"])
            if key in base:
                raise ModelError(f"{path}, line {i}: a second none row of {r['op']} {r['global']} "
                                 f"{r['mode']} on {r['ranks']} ranks (the first on line {base[key][0]})")
            base[key] = (i, r)
    kernels = {}
    out = []
    for i, r in enumerate(rows, 2):
        meas = num(r, "step_us", path, i)
        label = (f"nodes {r['op']} {r['global']}^3 {r['mode']}, {r['ranks']} ranks on {r['nodes']} "
                 f"node(s), {r['variant']}, {r['path']}")
        if r["variant"] == "none":
            out.append((r, label, meas, None, "baseline"))
            continue
        key = (r["op"], r["global"], r["mode"], r["ranks"])
        if key not in base:
            raise ModelError(f"{path}, line {i}: no none row (the same ranks without emulated nodes) "
                             f"of {r['op']} {r['global']} {r['mode']} on {r['ranks']} ranks")
        if key not in kernels:
            j, b = base[key]
            fb = model.Floors(site, b["op"])
            fb.X = num(b, "X_us", path, j, False)
            model.fit_kernel(nodes_case(b, path, j, site, nodes_of=1), fb, path_of(b["path"]),
                             num(b, "step_us", path, j), f"{path}, line {j} (none)")
            kernels[key] = (fb.c1, fb.src["c1"])
        fl = model.Floors(site, r["op"])
        fl.c1, fl.src["c1"] = kernels[key]
        path_name = path_of(r["path"])
        if path_name == "today":
            fl.X = num(r, "X_us", path, i, False)
        elif path_name == "proxy":
            fl.Fm = num(r, "Fm_us", path, i, False)
        res = model.predict(nodes_case(r, path, i, site), fl, path_name)
        if res is None:
            raise ModelError(f"{path}, line {i}: path {r['path']} cannot run on {r['nodes']} nodes")
        out.append((r, label, meas, res["step_us"], None))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0].split(" - ", 1)[1],
                                 epilog=__doc__.split("\n\n", 1)[1],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--strong", default=DEFAULTS["strong"], metavar="CSV")
    ap.add_argument("--weak", default=DEFAULTS["weak"], metavar="CSV")
    ap.add_argument("--nodes", default=None, metavar="CSV",
                    help="the emulated-node table (default: bench/results/NVIDIA-H200-nodes.csv where it exists)")
    ap.add_argument("--no-nodes", action="store_true", help="leave the emulated-node table out")
    ap.add_argument("--explained", default=os.path.join(HERE, "explained.json"), metavar="JSON")
    ap.add_argument("--site", default="nvidia-h200")
    ap.add_argument("--tolerance", type=float, default=0.15)
    a = ap.parse_args(argv)
    try:
        if not 0 <= a.tolerance < float("inf"):
            raise ModelError(f"--tolerance {a.tolerance}: expected a share, 0 or more (0.15: 15 %)")
        site = inputs.load_site(a.site)
        explained = load_explained(a.explained)
        tables = [("strong", a.strong, strong_rows), ("weak", a.weak, weak_rows)]
        nodes = None if a.no_nodes else a.nodes or (DEFAULTS["nodes"] if os.path.exists(DEFAULTS["nodes"]) else None)
        if nodes:
            tables.append(("nodes", nodes, nodes_rows))
        used = [0] * len(explained)
        needed = [0] * len(explained)
        off = checked = 0
        for table, path, fn in tables:
            try:
                predicted = fn(path, site)
            except (ValueError, KeyError, IndexError, ZeroDivisionError) as err:
                raise ModelError(f"{path}: a cell that is not what a {table} table holds ({err})") from None
            print(f"{table}: {path}")
            print(f"  {'row':78s} {'measured':>10} {'model':>10} {'model/meas':>10}  verdict")
            for row, label, meas, pred, kind in predicted:
                if kind == "baseline":
                    print(f"  {label:78s} {meas:10.2f} {'-':>10} {'-':>10}  baseline (the kernel's speed)")
                    continue
                checked += 1
                ratio = pred / meas
                verdict = "ok"
                hits = [j for j, e in enumerate(explained) if matches(e, table, row)]
                for j in hits:
                    used[j] += 1
                if abs(ratio - 1) > a.tolerance:
                    for j in hits:
                        needed[j] += 1
                    if hits:
                        verdict = f"explained [{hits[0] + 1}]"
                    else:
                        verdict = "OFF"
                        off += 1
                print(f"  {label:78s} {meas:10.2f} {pred:10.2f} {ratio:10.3f}  {verdict}")
        if any(needed):
            print(f"explained ({os.path.relpath(a.explained)}):")
            for j, e in enumerate(explained):
                if needed[j]:
                    print(f"  [{j + 1}] {needed[j]} row(s): {e['reason']}")
        for j, e in enumerate(explained):
            if not needed[j]:
                print(f"validate: note: explanation {j + 1} ({e['table']} {e['match']}) is not needed: "
                      f"it matches {used[j]} row(s), none more than {a.tolerance:.0%} off", file=sys.stderr)
        print(f"validate: {checked} rows checked, {off} more than {a.tolerance:.0%} off and unexplained"
              + ("" if off else " (tolerance met or explained for every row)"))
        return 1 if off else 0
    except (ModelError, grid.GridError) as err:
        print(f"validate.py: error: {err}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())

"""beside.py - the model's step for a measured run, from that run's own records: what
bench/scaling/collect.py and bench/multigpu/scaling_table.py put beside every measured row.

predict_run(recs, base_step_us, base_rec) takes the repeats of one case (fdmini-run/1 records of
the same layout), the measured step of the one-rank run the efficiency is taken against and one
of its records, and returns {'step_us', 'path', 'inputs'} or None where the model has nothing to
say (a device without a site file, an operator problem.c does not list, a layout it cannot
place). The kernel's speed is the one-rank run's (so the model's one-rank step is that run's
step); F_g, F_ls, L, X, F_p and F_m are the records' (median over the repeats; X, F_p and F_m of
the slowest rank), the rest the site file's of the device (MI250X: lumi-g; H200: nvidia-h200).
The path is the one the run took: `proxy` where its faces to other nodes went through the
off-node proxy (the record's halo_path), `signalled` where its passes were signalled on one
node, else `today` (the host-driven exchange). The model's proxy pass takes the faces inside a
node by IPC: a run whose proxy carried those too (no face by IPC: the host backend, or ranks
that see only their own GPU) gets None.
"""
import statistics
from typing import Dict, Optional, Sequence

import grid
import inputs
import model
from inputs import ModelError


def _get(rec, *keys):
    for k in keys:
        if not isinstance(rec, dict) or k not in rec:
            return None
        rec = rec[k]
    return rec


def _median_floor(recs, key, how):
    vals = [v for v in (inputs.record_floor(r, key, how) for r in recs) if v is not None]
    return statistics.median(vals) if vals else None


def ranks_per_gpu(rec: dict) -> int:
    """The most ranks of the record's binding on one GPU of one host (1 without a binding)."""
    seen: Dict[tuple, int] = {}
    for b in rec.get("binding") or []:
        if isinstance(b, dict) and b.get("gpu_pci"):
            key = (b.get("host"), b.get("gpu_pci"))
            seen[key] = seen.get(key, 0) + 1
    return max(seen.values(), default=1)


def predict_run(recs: Sequence[dict], base_step_us: Optional[float] = None,
                base_rec: Optional[dict] = None, nodes: Optional[int] = None,
                site_name: Optional[str] = None) -> Optional[dict]:
    """The model's step (us) for the run of `recs`; see the module's docstring."""
    if not recs:
        return None
    rec = recs[0]
    name = site_name or inputs.site_for_device(str(rec.get("device", "")))
    op = rec.get("op")
    if name is None or op not in inputs.operators():
        return None
    site = inputs.load_site(name)
    real = 4 if rec.get("precision") == "float" else 8
    fl = model.Floors(site, op, real)
    used = []
    for key, attr, label in (("graph", "g", "F_g"), ("launch_sync", "F_ls", "F_ls"),
                             ("latency", "L_on", "L")):
        v = _median_floor(recs, key, "avg")
        if v is not None:
            setattr(fl, attr, v)
            used.append(label)
    proxied = rec.get("halo_path") == "proxy"
    if proxied and rec.get("halo_faces_ipc") == 0 and any(
            (_get(rec, "faces_by_neighbour", w, "max") or 0) > 0 for w in ("same_gpu", "other_gpu")):
        return None  # faces inside a node through the proxy too (no IPC): not the model's path
    ranks = rec.get("ranks")
    if not isinstance(ranks, int) or ranks < 1:
        return None
    K = site.p["gpus_per_node"]
    nodes = nodes if isinstance(nodes, int) and nodes > 0 else max(1, -(-ranks // K))
    if ranks % nodes:
        return None
    signalled = _get(rec, "graphs", "exchange_signalled_passes") or 0
    if isinstance(signalled, bool) or not isinstance(signalled, (int, float)):
        return None  # not what fdmini writes
    if proxied:
        path = "proxy"
    elif signalled > 0 and nodes == 1:
        path = "signalled"
    else:
        path = "today"
    # X is today's exchange, F_p the signalled one's, F_m the proxy's hop: each where its path uses it
    fl.X = _median_floor(recs, "exchange_alone", "max") if path == "today" else None
    fl.Fp = _median_floor(recs, "Fp", "max")
    fl.Fm = _median_floor(recs, "Fm", "max") if path == "proxy" else None
    used += [n for n, v in (("X", fl.X), ("F_p", fl.Fp), ("F_m", fl.Fm)) if v is not None]
    kernel = f"site {name}"
    try:  # a record's values as fdmini writes them, else nothing to say
        T = int(_get(rec, "fuse", "steps") or 1)
        S = int(rec.get("halo_width") or 1)
        if base_step_us and isinstance(base_rec, dict) and isinstance(base_rec.get("global"), list):
            Tb = int(_get(base_rec, "fuse", "steps") or 1)
            fl.set_kernel(base_step_us, base_rec["global"], Tb, "the 1-rank run")
            kernel = f"the 1-rank run ({base_step_us:.4g} us, T {Tb})"
        N, P = grid.resolve_grid(ranks, global_size=rec["global"], width=S, procs=rec["procs"])
        case = model.Case(op, N, P, ranks // nodes, nodes, S, T, real, ranks_per_gpu(rec))
        res = model.predict(case, fl, path)
    except (ModelError, grid.GridError, KeyError, TypeError, ValueError, IndexError, ZeroDivisionError):
        return None
    if res is None:
        return None
    return {"step_us": res["step_us"], "path": path, "kernel_from_base": kernel != f"site {name}",
            "inputs": f"site {name}; kernel from {kernel}; from the records: "
                      f"{', '.join(used) if used else 'none'}"}


def efficiency(study: str, ranks: int, step_us: float, base_step_us: float) -> float:
    """As collect.py's: weak T1 / TN, strong T1 / (N TN), with the model's T1 = the 1-rank
    run's step (the kernel's speed is taken from it)."""
    return base_step_us / step_us if study == "weak" else base_step_us / (ranks * step_us)

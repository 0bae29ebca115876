"""model.py - what one step of fdmini should take on N nodes, for each way the halo travels,
from the kernel's speed, the floors of a run (or a site file's defaults) and the process grid
and the faces leaving each node exactly as fdmini makes them (grid.py).

Units: microseconds, bytes, GB/s (1 GB/s moves 1000 bytes per microsecond).

One window is S steps (--halo-width S) between two exchanges, in passes of T steps (--fuse T;
T divides S). Step t of a window (t = 0..S-1) updates the block grown by S-1-t layers on each
side with a neighbour (src/model/window.c), at c_T microseconds per point: the kernel's time per
point and step at T steps per pass. A pass is one launch, g = F_g (a launch in a graph).

    compute of pass p      C_p = g + c_T * sum over its steps t of box(t)
    first pass's interior  I   = T * prod_d (n_d - T s_d)  points (s_d: sides with a neighbour),
                           its shell H = (points of the first pass) - I, in h launches: one at
                           S = T = 1, else a slab per side with a neighbour (step.c pass_shell)

Per rank, the messages of one exchange (grid.Plan) cost, posted together (Hockney, each
message alone):
    on the node      L_on + bytes / link(pair)            link: same package or not
    to another node  L_off + max(bytes / B_msg, NIC load / B_nic)
where the NIC load is every off-node byte of the ranks sharing that NIC (node-local ranks
l / (K / NICs)): messages that share a node's NICs share their bandwidth. M = the slowest.

The paths (step = window / S; the slowest rank's):
- today: host-driven, two streams. The exchange alone X = F_ls + M + 2 g (pack launch and host
  wait, MPI, unpack launch, shell launch), or the run's own X where the record is of the same
  run; it runs beside the first pass's interior:
      window = max(g + c_T I, X) + h g + c_T H + sum of the other passes' C_p
- signalled: one launch a pass, every face over the GPU links, device-ordered (one node only).
  F_p = the face alone over the link, one launch per exchange (the record's F_p, else
  g + flag + bytes / link). At S = 1 the exchange blocks wait, compute the shell and send while
  the other blocks update the interior:   step = max(C_0, F_p + c_1 shell)
  At S > 1 the window's exchange is a launch of its own before its passes:
      window = F_p + sum of C_p
- proxy: as signalled inside the node; faces to other nodes leave through a host proxy
  thread and MPI: per message the word round trip W and the MPI one-way,
      hop = W + M_off
  and the chain of a pass waits for the later of the launch and the hop:
      S = 1: step = max(C_0, max(F_p, max(g, hop)) + c_1 shell);  S > 1: window = max(F_p, hop) + sum C_p
  Where the run measured F_m (one face alone through the proxy and MPI, device-ordered: the
  word round trip, the MPI one-way and that face's bytes), it replaces those three:
      hop = F_m + (NIC time of the node's off-node bytes beyond that face's own, if any)
  On one node the proxy pass is the signalled pass.

Ranks sharing one GPU (MPS) share its memory bandwidth: a GPU of r ranks computes r blocks
(c_T times r).

The kernel's speed comes from a measured step: of one block alone (Floors.set_kernel: the step
less g / T over its points), or of a run the model describes (fit_kernel: the c_1 at which the
model gives that run's step on its own path with its own X; validate.py takes the ranks
sharing one GPU without emulated nodes this way, their contention under MPS included).

Efficiency: weak T_alone / T_step (T_alone: the block alone, one rank, no neighbours); strong
T_1 / (R T_step), T_1 the whole grid on one rank at the same kernel speed (even where it does
not fit one GPU).
"""
import math
from typing import Dict, Optional, Sequence

import numpy as np

import grid
import inputs
from inputs import ModelError

PATHS = ("today", "signalled", "proxy")


class Floors:
    """The numbers the model combines, each with where it came from ('site NAME' or 'record
    FILE'): g (F_g), F_ls, L_on, L_off, W (word round trip), flag, c1 (us per point-step at
    T = 1), and optionally X, F_p and F_m of the same run (used as they are)."""

    def __init__(self, site: inputs.Site, op: str, real_bytes: int = 8):
        p = site.p
        self.site, self.op, self.real_bytes = site, op, real_bytes
        self.g, self.F_ls = p["graph_us"], p["launch_sync_us"]
        self.L_on, self.L_off = p["mpi_latency_on_us"], p["mpi_latency_off_us"]
        self.W, self.flag = p["word_rtt_us"], p["flag_us"]
        self.c1 = inputs.bytes_per_point(op, real_bytes) / (p["kernel_GBs"] * 1e3)
        self.X: Optional[float] = None
        self.Fp: Optional[float] = None
        self.Fm: Optional[float] = None
        tag = f"site {site.name}"
        self.src = {k: tag for k in ("g", "F_ls", "L_on", "L_off", "W", "flag", "c1")}

    def from_record(self, rec: dict, name: str, same_run: bool = False, how: str = "avg"):
        """Take the floors the record measured (F_g, F_ls, L; with same_run also X and F_p, the
        slowest rank's where how='max') and, from a one-rank record or one with --baseline,
        the kernel's speed: ModelError where the record's operator or precision is not the
        prediction's (a time per point of another kernel), or where the fields it comes from
        are not what fdmini writes."""
        for key, attr in (("graph", "g"), ("launch_sync", "F_ls"), ("latency", "L_on")):
            v = inputs.record_floor(rec, key)
            if v is not None:
                setattr(self, attr, v)
                self.src[attr] = f"record {name}"
        if same_run:
            self.X = inputs.record_floor(rec, "exchange_alone", how)
            self.Fp = inputs.record_floor(rec, "Fp", how)
        if rec.get("ranks") == 1:
            keys = (("global",), ("phases_ms", "step", "max"))
        elif rec.get("baseline"):
            keys = (("local_max",), ("alone_step_ms", "avg"))
        else:
            return
        block, step = (inputs.record_get(rec, *k) for k in keys)
        T = inputs.record_get(rec, "fuse", "steps") or 1

        def positive(v, kind=int):
            return isinstance(v, kind) and not isinstance(v, bool) and 0 < v < math.inf
        for k, v, ok in ((keys[0], block, isinstance(block, list) and len(block) == 3
                          and all(positive(b) for b in block)),
                         (keys[1], step, positive(step, (int, float))),
                         (("fuse", "steps"), T, positive(T))):
            if not ok:
                raise ModelError(f"{name}: {'.'.join(k)} is {v!r}, not what fdmini writes there "
                                 f"(docs/report.md)")
        # a time per point: of the record's operator and precision only
        prec = {4: "float", 8: "double"}.get(self.real_bytes)
        if rec.get("op", self.op) != self.op or rec.get("precision", prec) != prec:
            raise ModelError(f"{name}: its kernel's speed is of {rec.get('op', self.op)} in "
                             f"{rec.get('precision', prec)}, not {self.op} in {prec} (--op, --float)")
        self.set_kernel(1e3 * step, block, T, f"record {name}")

    def set_kernel(self, step_us: float, block: Sequence[int], T: int, src: str, ranks_per_gpu: int = 1):
        """The kernel's speed from a measured step (us per time step) of one block alone at T
        steps per pass: c_T = (step - g/T) / points, c1 = c_T times the site's fused speedup."""
        pts = float(block[0]) * block[1] * block[2]
        cT = (step_us - self.g / T) / (pts * ranks_per_gpu)
        if cT <= 0:
            raise ModelError(f"{src}: a step of {step_us:.3g} us is below the launch floor")
        self.c1 = cT * self.site.fused(self.op, T, pts)
        self.src["c1"] = src

    def c(self, T: int, points: float) -> float:
        """us per point and step at T steps per pass, for a block of `points`."""
        return self.c1 / self.site.fused(self.op, T, points)


class Case:
    """One run to predict: op, the global grid N and process grid P, K ranks per node on
    `nodes` nodes, S and T, ranks sharing each GPU."""

    def __init__(self, op, N, P, K, nodes, S=1, T=1, real_bytes=8, ranks_per_gpu=1):
        ranks = int(K) * int(nodes)
        if S < 1 or T < 1 or (S % T and ranks > 1):
            raise ModelError(f"--fuse {T} must divide --halo-width {S} (with several ranks)")
        if ranks == 1:
            S = T  # one rank exchanges nothing: its window is a pass
        self.op, self.N, self.P, self.K, self.nodes = op, tuple(N), tuple(P), int(K), int(nodes)
        self.S, self.T, self.real_bytes, self.rpg = int(S), int(T), int(real_bytes), int(ranks_per_gpu)
        self.plan = grid.Plan(N, P, K, nodes, S, inputs.fields_exchanged(op, S), real_bytes)

    @property
    def ranks(self) -> int:
        return self.plan.ranks


def compute_terms(case: Case, fl: Floors):
    """Per rank: (the passes' compute C_p as a list of arrays, first pass interior I and shell
    H in points), with the GPU's sharing counted."""
    pl, S, T = case.plan, case.S, case.T
    n = pl.n.astype(np.float64)
    sides = pl.sides.sum(axis=2).astype(np.float64)          # R x 3: 0, 1 or 2
    box = [np.prod(n + (S - 1 - t) * sides, axis=1) for t in range(S)]
    cT = fl.c(T, float(np.max(np.prod(n, axis=1)))) * case.rpg
    passes = [fl.g + cT * sum(box[p * T:(p + 1) * T]) for p in range(S // T)]
    inner = T * np.prod(np.clip(n - T * sides, 0, None), axis=1)
    first = sum(box[0:T])
    # the shell: one launch at S = T = 1 (a region), else one slab per side with a neighbour
    # (src/solver/step.c, pass_shell)
    nshell = np.ones(pl.ranks) if S == 1 and T == 1 else pl.sides.sum(axis=(1, 2)).astype(np.float64)
    return passes, inner, first - inner, cT, nshell


def messages(case: Case, fl: Floors):
    """Per rank: M (all its messages, host-driven MPI), M_off (those to other nodes, or 0),
    the largest on-node message's link time, and whether it has on- and off-node ones."""
    pl, p = case.plan, fl.site.p
    K = case.K
    nics = min(p["nics_per_node"], K)
    per_nic = max(1, K // nics)
    nic = pl.local // per_nic
    offbytes = (pl.nbytes * pl.off).sum(axis=1)
    load = np.zeros((case.nodes, nics))
    np.add.at(load, (pl.node, np.minimum(nic, nics - 1)), offbytes)
    my_load = load[pl.node, np.minimum(nic, nics - 1)]
    pkg = p["gpus_per_package"]
    same_pkg = (pl.peer_local // pkg) == (pl.local[:, None] // pkg)
    link = np.where(same_pkg, p["link_same_package_GBs"], p["link_other_GBs"]) * 1e3
    on = pl.exists & ~pl.off
    t_on = np.where(on, fl.L_on + pl.nbytes / link, 0.0).max(axis=1)
    link_on = np.where(on, pl.nbytes / link, 0.0).max(axis=1)
    big_off = np.where(pl.off, pl.nbytes, 0.0).max(axis=1)
    has_off = pl.off.any(axis=1)
    own = big_off / (p["offnode_message_GBs"] * 1e3)
    bw = np.maximum(own, my_load / (p["nic_GBs"] * 1e3))
    t_off = np.where(has_off, fl.L_off + bw, 0.0)
    return {"M": np.maximum(t_on, t_off), "M_off": t_off, "link_on": link_on,
            "has_on": on.any(axis=1), "has_off": has_off, "off_bw": np.where(has_off, bw, 0.0),
            "off_own": np.where(has_off, own, 0.0)}


def hop(fl: Floors, ms):
    """Per rank: a face to another node through the proxy, W + M_off, or where the run measured
    F_m, F_m plus the NIC time beyond its largest face's own (0 for ranks without such faces)."""
    if fl.Fm is not None:
        h = fl.Fm + ms["off_bw"] - ms["off_own"]
    else:
        h = fl.W + ms["M_off"]
    return np.where(ms["has_off"], h, 0.0)


def predict(case: Case, fl: Floors, path: str) -> Optional[Dict]:
    """The step of `path` (today, signalled, proxy) for case: {'step_us', 'compute_us',
    'exchange_us', 'parts': what the slowest rank's exchange is made of}; None where the path
    cannot run (signalled beyond one node)."""
    if path not in PATHS:
        raise ModelError(f"unknown path {path!r} ({', '.join(PATHS)})")
    passes, inner, shell, cT, nshell = compute_terms(case, fl)
    S, g = case.S, fl.g
    rest = sum(passes[1:]) if len(passes) > 1 else 0.0
    alone = sum(passes)
    if case.ranks == 1:
        step = alone / S
        return {"step_us": float(step.max()), "compute_us": float(step.max()), "exchange_us": 0.0,
                "parts": {}}
    ms = messages(case, fl)
    if path == "signalled" and ms["has_off"].any():
        return None
    if path == "today":
        if fl.X is not None:
            X = np.full(case.ranks, fl.X)
            parts = {"measured X": fl.X}
        else:
            X = fl.F_ls + ms["M"] + 2 * g
            parts = None
        window = np.maximum(g + cT * inner, X) + nshell * g + cT * shell + rest
        ex = X
    else:
        Fp = fl.Fp if fl.Fp is not None else g + fl.flag + ms["link_on"]
        Fp = np.where(ms["has_on"], Fp, 0.0)
        h = hop(fl, ms)
        if S == 1:
            E = np.maximum(Fp, np.where(ms["has_off"], np.maximum(g, h), 0.0))
            window = np.maximum(passes[0], E + cT * shell)
        else:
            E = np.maximum(Fp, h)
            window = E + alone
        ex, X, parts = E, None, None
    step = window / S
    r = int(np.argmax(step))
    if parts is None:
        parts = breakdown(case, fl, ms, r, path)
    return {"step_us": float(step[r]), "compute_us": float((alone / S)[r]),
            "exchange_us": float(ex[r]), "parts": parts, "rank": r}


def fit_kernel(case: Case, fl: Floors, path: str, step_us: float, src: str) -> float:
    """Sets fl.c1 to the kernel's speed at which `path` gives `step_us` for `case` (the model's
    step grows with c1: bisection to a relative 1e-12) and returns it; ModelError where no speed
    does (the step is below what the model gives with a free kernel, or the path cannot run)."""
    def at(c1):
        fl.c1 = c1
        res = predict(case, fl, path)
        if res is None:
            raise ModelError(f"{src}: path {path} cannot run on {case.nodes} node(s)")
        return res["step_us"]
    floor = at(0.0)
    if not step_us > floor:
        raise ModelError(f"{src}: a step of {step_us:.4g} us is not above what the model gives "
                         f"with a free kernel ({floor:.4g} us): no kernel speed fits")
    pts = float(np.max(np.prod(case.plan.n, axis=1))) * case.rpg
    lo, hi = 0.0, step_us / pts
    for _ in range(200):
        if at(hi) >= step_us:
            break
        lo, hi = hi, 2 * hi
    while hi - lo > 1e-12 * hi:
        mid = 0.5 * (lo + hi)
        if at(mid) < step_us:
            lo = mid
        else:
            hi = mid
    fl.c1 = 0.5 * (lo + hi)
    fl.src["c1"] = src
    return fl.c1


def breakdown(case: Case, fl: Floors, ms, r: int, path: str) -> Dict[str, float]:
    """What rank r's exchange chain is made of: launches, latency, bandwidth (us)."""
    g = fl.g
    if path == "today":
        if ms["has_off"][r] and ms["M_off"][r] >= ms["M"][r]:
            lat, bw = fl.L_off, ms["off_bw"][r]
        else:
            lat, bw = fl.L_on, ms["M"][r] - fl.L_on
        return {"launches": fl.F_ls + 2 * g, "latency": lat, "bandwidth": float(bw)}
    if ms["has_off"][r]:
        h = float(hop(fl, ms)[r])
        if fl.Fm is not None:
            return {"launches": g if g > h else 0.0, "measured F_m": fl.Fm,
                    "bandwidth": float(ms["off_bw"][r] - ms["off_own"][r])}
        return {"launches": g if g > h else 0.0,
                "latency": fl.W + fl.L_off, "bandwidth": float(ms["off_bw"][r])}
    if fl.Fp is not None:
        return {"measured F_p": fl.Fp}
    return {"launches": g, "latency": fl.flag, "bandwidth": float(ms["link_on"][r])}


def alone_step(op: str, block: Sequence[int], fl: Floors, T: int = 1, S: int = 1) -> float:
    """A block alone on one rank (no neighbours), us per step: g/T + c_T points."""
    pts = float(block[0]) * block[1] * block[2]
    return fl.g / T + fl.c(T, pts) * pts


def efficiency(kind: str, case: Case, fl: Floors, step_us: float) -> float:
    """weak: T_alone / T_step (the largest block); strong: T_1 / (R T_step)."""
    if kind == "weak":
        return alone_step(case.op, case.plan.n.max(axis=0), fl, case.T) / step_us
    t1 = alone_step(case.op, case.N, fl, case.T)
    return t1 / (case.ranks * step_us)

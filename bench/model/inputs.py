"""inputs.py - what the model reads: the site files (sites/*.json), the operators' bytes per
point (src/model/problem.c, read as the source states them), and the floors and kernel speed
of a run's JSON record (fdmini --json, schema fdmini-run/1; docs/report.md).

Every error is a ModelError with one line that names the file: the tools print it and exit 1.
"""
import json
import math
import os
import re
from typing import Dict, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
SITES = os.path.join(HERE, "sites")
PROBLEM_C = os.path.join(ROOT, "src", "model", "problem.c")

# what each site file must give (name: the kind of its value)
SITE_PARAMS = {
    "gpus_per_node": int, "gpus_per_package": int, "gpu_memory_GiB": (int, float),
    "nics_per_node": int, "nic_GBs": (int, float), "offnode_message_GBs": (int, float),
    "mpi": str, "mpi_latency_off_us": (int, float), "mpi_latency_on_us": (int, float),
    "launch_sync_us": (int, float), "graph_us": (int, float), "word_rtt_us": (int, float),
    "flag_us": (int, float), "link_same_package_GBs": (int, float),
    "link_other_GBs": (int, float), "kernel_GBs": (int, float), "fused_speedup": dict,
}


class ModelError(Exception):
    """Bad input the user must fix: printed as one line, exit 1."""


def load_json(path: str):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except OSError as err:
        raise ModelError(f"{path}: cannot read: {err.strerror}") from None
    except ValueError as err:
        raise ModelError(f"{path}: not valid JSON: {err}") from None


class Site:
    """A site file: `p[name]` its values, `source[name]` where each comes from."""

    def __init__(self, path: str):
        doc = load_json(path)
        if not isinstance(doc, dict) or doc.get("schema") != "fdmini-site/1" \
                or not isinstance(doc.get("params"), dict):
            raise ModelError(f"{path}: not a site file (schema fdmini-site/1 with 'params')")
        self.path, self.name, self.about = path, str(doc.get("name", path)), doc.get("about", "")
        self.p, self.source = {}, {}
        for key, kind in SITE_PARAMS.items():
            item = doc["params"].get(key)
            if not isinstance(item, dict) or "value" not in item or not item.get("source"):
                raise ModelError(f"{path}: '{key}' missing, or without its value and source")
            v = item["value"]
            if isinstance(v, bool) or not isinstance(v, kind):
                raise ModelError(f"{path}: '{key}' is {v!r}, not a {getattr(kind, '__name__', 'number')}")
            if isinstance(v, (int, float)) and not 0 < v < math.inf:
                raise ModelError(f"{path}: '{key}' must be positive and finite, not {v}")
            self.p[key], self.source[key] = v, item["source"]
        if self.p["mpi"] not in ("mpich", "openmpi"):
            raise ModelError(f"{path}: 'mpi' is {self.p['mpi']!r}, not mpich or openmpi")
        if self.p["gpus_per_node"] % self.p["gpus_per_package"]:
            raise ModelError(f"{path}: gpus_per_node is not a multiple of gpus_per_package")
        for op, by_T in self.p["fused_speedup"].items():
            if not isinstance(by_T, dict) or not all(
                    isinstance(t, list) and t and all(isinstance(e, list) and len(e) == 2 and all(
                        isinstance(x, (int, float)) and not isinstance(x, bool) and 0 < x < math.inf
                        for x in e) for e in t) for t in by_T.values()):
                raise ModelError(f"{path}: fused_speedup for {op} is not {{T: [[points, speedup], "
                                 f"...]}} of positive numbers")

    def fused(self, op: str, T: int, points: float) -> float:
        """How many times faster a point-step of a block of `points` is at T steps per pass
        than at 1 (1 at T = 1): the site's table [[points, speedup], ...] for op and T,
        log-linear in the points between its entries, held beyond them."""
        if T == 1:
            return 1.0
        table = self.p["fused_speedup"].get(op, {}).get(str(T))
        if not isinstance(table, list) or not table:
            raise ModelError(f"{self.path}: no fused_speedup for {op} at T = {T}")
        try:
            pts = [(math.log(float(a)), float(b)) for a, b in sorted(table)]
        except (TypeError, ValueError):
            raise ModelError(f"{self.path}: fused_speedup for {op} at T = {T} is not "
                             f"[[points, speedup], ...]") from None
        x = math.log(max(points, 1.0))
        if x <= pts[0][0]:
            return pts[0][1]
        for (x0, y0), (x1, y1) in zip(pts, pts[1:]):
            if x <= x1:
                return y0 + (y1 - y0) * (x - x0) / (x1 - x0)
        return pts[-1][1]


def site_path(name: str) -> str:
    """A site name (lumi-g, frontier, nvidia-h200) or a file path."""
    if os.path.isfile(name):
        return name
    path = os.path.join(SITES, name + ".json")
    if not os.path.isfile(path):
        names = ", ".join(sorted(f[:-5] for f in os.listdir(SITES) if f.endswith(".json")))
        raise ModelError(f"{name}: no such site file (sites: {names})")
    return path


def load_site(name: str) -> Site:
    return Site(site_path(name))


def site_for_device(device: str) -> Optional[str]:
    """The site file a record's device suggests, None where the model has none."""
    d = (device or "").lower()
    if "mi250" in d:
        return "lumi-g"
    if "h200" in d:
        return "nvidia-h200"
    return None


# ---------------------------------------------------------------------------------------------
# the operators (src/model/problem.c)

_OPS: Optional[Dict[str, dict]] = None


def operators(path: str = PROBLEM_C) -> Dict[str, dict]:
    """{op: {'words': bytes per point in units of sizeof(real_t), 'levels': time levels, 'rhs':
    1 where it has a right-hand side field}} read from problem.c's `case FD_OP_NAME:` blocks
    (`p->bytes_per_point = W * (int)sizeof(real_t)`, `p->levels = 2`, `p->has_rhs = 1`)."""
    global _OPS
    if _OPS is not None and path == PROBLEM_C:
        return _OPS
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as err:
        raise ModelError(f"{path}: cannot read: {err.strerror}") from None
    out = {}
    parts = re.split(r"case\s+FD_OP_([A-Z]+)\s*:", text)
    for name, body in zip(parts[1::2], parts[2::2]):
        body = body.split("case FD_OP_")[0].split("default:")[0]
        m = re.search(r"bytes_per_point\s*=\s*(\d+)\s*\*\s*\(int\)\s*sizeof\(real_t\)", body)
        if m:
            lv = re.search(r"->levels\s*=\s*(\d+)", body)
            out[name.lower()] = {"words": int(m.group(1)), "levels": int(lv.group(1)) if lv else 1,
                                 "rhs": 1 if re.search(r"->has_rhs\s*=\s*1", body) else 0}
    if not out:
        raise ModelError(f"{path}: no operator with its bytes per point found")
    if path == PROBLEM_C:
        _OPS = out
    return out


def bytes_per_point(op: str, real_bytes: int = 8) -> int:
    ops = operators()
    if op not in ops:
        raise ModelError(f"operator {op!r} unknown to src/model/problem.c ({', '.join(sorted(ops))})")
    return ops[op]["words"] * real_bytes


def field_buffers(op: str) -> int:
    """Fields of a block on the device (src/solver/state.c's pool, no snapshots): the time levels
    the stencil reads, one output, and the right-hand side where the operator has one."""
    o = operators()[op]
    return o["levels"] + 1 + o["rhs"]


def fields_exchanged(op: str, width: int) -> int:
    """Fields a halo exchange sends: the wave's two time levels with deep halos, else one
    (src/solver/state.c)."""
    return 2 if operators().get(op, {}).get("levels", 1) == 2 and width > 1 else 1


# ---------------------------------------------------------------------------------------------
# a run's record

FLOOR_KEYS = {"graph": "graph_us", "launch_sync": "launch_sync_us", "latency": "mpi_latency_on_us"}


def record_get(rec, *keys):
    """rec[k0][k1]..., None where a level is missing or not an object."""
    for k in keys:
        if not isinstance(rec, dict):
            return None
        rec = rec.get(k)
    return rec


def record_floor(rec: dict, key: str, how: str = "avg") -> Optional[float]:
    v = record_get(rec, "floors_us", key, how)
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and 0 < v < math.inf \
        else None


def load_record(path: str) -> dict:
    rec = load_json(path)
    if not isinstance(rec, dict) or rec.get("schema") != "fdmini-run/1":
        raise ModelError(f"{path}: not an fdmini run record (schema fdmini-run/1)")
    return rec

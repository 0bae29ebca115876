#!/usr/bin/env python3
"""collect.py - gather fdmini JSON records (schema fdmini-run/1) into CSV tables.

    collect.py DIR_OR_FILE... -o results.csv [-s summary.csv] [--study weak|strong] [--allow-failed]

`results.csv` has one row per run (one JSON record). `summary.csv` has one row per
(study, size, operator, variant, rank count): the median over the repeats of the step time
(the slowest rank's), of every phase and of the bandwidths, and the efficiency against the
1-rank (single-GCD) baseline of the same study, size, operator and variant:

    weak   E(N) = T1 / TN          (every rank has the baseline's block)
    strong E(N) = T1 / (N * TN)    (the baseline's grid split over N ranks)

with T the median step time. E(1) is 1 exactly. Rows are per kernel family too (the
autotune may pick another at N ranks than at 1): every point is kept, and T1 is the 1-rank
row of the same kernel where there is one, else the fastest 1-rank row of the same study,
size, operator and variant with any kernel; `efficiency_baseline` says which ("same kernel",
or "best 1-rank: KERNEL"). `efficiency_vs_best_1rank` takes for T1 the fastest 1-rank row of
any variant and kernel instead (deep halos and fused passes against the best single GCD, e.g.
--halo-width 2 --fuse 2 on N ranks against one GPU's --fuse 2), and `speedup` is T1 / TN with
the T1 of `efficiency`.

A folder written by study.py holds a `study.json` manifest that names the study type and the
variant of every record. Records without one (loose files, other folders) need `--study`; their
variant is read from the record (overlap / no-overlap, plus the MPI mode when it is not host).

Records that are not fdmini-run/1 or whose verification failed are errors (exit 1, every bad
file named), and so are the records of runs that study.json says exited non-zero or timed out
(`exit_code` not 0), unless --allow-failed lets the failed ones through: they are kept in
results.csv, marked (`verification` failed, `run_status` "exit N" or "timed out"), and left out
of summary.csv (their number said on stderr), so that they count in no median or efficiency.

Every summary row also carries the model's step and efficiency for it (bench/model/: the step the
kernel's speed and the run's own floors allow on this layout, with the process grid and faces as
fdmini makes them): `model_step_ms`, `model_efficiency` (as `efficiency`, model against model),
`model_path` (the path the records took: today, the host-driven exchange; signalled, one launch
a pass on one node; proxy, the off-node proxy's pass) and `model_inputs` (the site file, and
which numbers came from the records). The kernel's speed comes from the 1-rank row the efficiency
is measured against; the floors F_g, F_ls, L, X, F_p and F_m from the row's records (median over
repeats; X, F_p and F_m the slowest rank's); the rest from the site file of the device (MI250X:
lumi-g, H200: nvidia-h200; --site chooses another, --no-model leaves the columns empty, as they
are for devices without a site file and where numpy is missing).

Every row also says where the faces went: `halo_path`, the path the run took (none, ipc, mpi,
mixed: IPC inside a node and MPI between nodes, driven by the host, or proxy: the one-launch pass
with faces to other nodes through the off-node proxy; in the summary the repeats' paths joined by
'/', since `--halo-path auto` may take another from run to run), the faces by way over all ranks
(`halo_faces_ipc`, `halo_faces_mpi`, `halo_faces_proxy`: a face the proxy carries counts in
`halo_faces_mpi` too), the most faces one rank has to other nodes (`faces_other_node_max`; the
summary's `faces_other_node`, the most over the repeats), how the process grid lies over the
nodes (`node_grid`), whether the nodes were emulated (`nodes_emulated`, fdmini
--test-node-ranks) and the slowest rank's floors F_m (one face alone through the proxy) and X
(the exchange alone): `Fm_us_max`, `exchange_alone_us_max` (the summary's `Fm_us`,
`exchange_alone_us`, medians over the repeats).

Every row also carries the record's provenance (what the run ran on): start time, MPI library,
GPU runtime and driver, compiler, build type and flags, hwloc, the Cray GTL, Slurm job id and
node list, the MPI-related environment (`mpi_env`, NAME=VALUE pairs joined by ';') and the
binding's source.
Records written before fdmini recorded these leave those cells empty.
"""

import argparse
import csv
import glob
import json
import math
import os
import statistics
import sys
from typing import Dict, List, Optional, Sequence, Tuple

SCHEMA = "fdmini-run/1"
MANIFEST = "study.json"
PHASES = ("pack", "exchange", "unpack", "interior", "boundary", "step")

# results.csv: one row per run, in this column order.
RUN_COLUMNS = [
    "study", "size", "variant", "repeat", "record",
    "git_commit", "date", "version", "device", "backend", "precision",
    "op", "kernel", "tile", "ranks", "nodes", "procs", "global", "local_min", "local_max",
    "iters", "warmup", "mpi_gpu", "overlap",
    # where the faces went: the path the run took, its faces by way, the neighbours on other nodes
    "halo_path", "halo_faces_ipc", "halo_faces_mpi", "halo_faces_proxy", "faces_other_node_max",
    "node_grid", "nodes_emulated", "Fm_us_max", "exchange_alone_us_max",
    "step_ms_avg", "step_ms_max",
    "pack_ms_avg", "pack_ms_max", "exchange_ms_avg", "exchange_ms_max",
    "unpack_ms_avg", "unpack_ms_max", "interior_ms_avg", "interior_ms_max",
    "boundary_ms_avg", "boundary_ms_max",
    "bw_per_rank_GBs_avg", "bw_per_rank_GBs_min", "bw_total_GBs", "points_per_s",
    "halo_bytes_per_step_max", "halo_GBs_avg",
    "halo_width", "fuse_steps", "fuse_config", "halo_messages_per_step_max",
    "redundant_points_per_step_avg", "redundant_share",
    "alone_step_ms_avg", "efficiency_vs_alone_avg", "hidden_share_avg",
    "verification", "run_status",
    # provenance: what the run ran on (empty for records that predate it)
    "start_time", "mpi_library", "gpu_runtime", "gpu_driver", "compiler", "build_type",
    "build_flags", "hwloc", "gtl", "slurm_job_id", "slurm_nodelist", "mpi_env", "binding_source",
]

# summary.csv: one row per (study, size, op, variant, ranks).
SUMMARY_COLUMNS = [
    "study", "size", "op", "variant", "ranks", "nodes", "procs", "repeats",
    "step_ms", "step_ms_min", "step_ms_max", "efficiency", "speedup", "efficiency_baseline",
    "pack_ms", "exchange_ms", "unpack_ms", "interior_ms", "boundary_ms",
    "bw_per_gcd_GBs", "bw_per_gcd_min_GBs", "bw_total_GBs", "halo_GBs",
    "efficiency_vs_alone", "hidden_share",
    "halo_width", "fuse_steps", "halo_messages_per_step", "halo_bytes_per_step",
    "redundant_share", "efficiency_vs_best_1rank",
    "device", "backend", "precision", "kernel", "mpi_gpu", "overlap",
    "halo_path", "faces_other_node", "Fm_us", "exchange_alone_us",
    "global", "local", "date", "git_commits", "mpi_libraries", "gpu_drivers",
    # the model (bench/model/) beside the measurement
    "model_step_ms", "model_efficiency", "model_path", "model_inputs",
]


class CollectError(Exception):
    """Bad input the user must fix: printed, exit 1."""


# ---------------------------------------------------------------------------------------------
# reading and checking records


def dims(value) -> str:
    """[12, 12, 12] -> '12x12x12'."""
    return "x".join(str(v) for v in value)


def check_record(rec, path: str) -> List[str]:
    """Problems that make `rec` unusable (empty when it is a well-formed fdmini-run/1 record)."""
    if not isinstance(rec, dict):
        return ["not a JSON object"]
    if rec.get("schema") != SCHEMA:
        return [f"schema is {rec.get('schema')!r}, expected {SCHEMA!r} (not an fdmini run record)"]
    problems = []
    for key, kind in (("git_commit", str), ("date", str), ("device", str), ("backend", str),
                      ("precision", str), ("op", str), ("kernel", str), ("mpi_gpu", str),
                      ("ranks", int), ("overlap", bool), ("phases_ms", dict),
                      ("bandwidth_per_rank_GBs", dict), ("verification", dict)):
        if not isinstance(rec.get(key), kind):
            problems.append(f"'{key}' missing or not a {kind.__name__}")
    for key in ("procs", "global", "local_min", "local_max"):
        val = rec.get(key)
        if not (isinstance(val, list) and len(val) == 3 and all(isinstance(v, int) for v in val)):
            problems.append(f"'{key}' missing or not three integers")
    phases = rec.get("phases_ms")
    if isinstance(phases, dict):
        for ph in PHASES:
            if not (isinstance(phases.get(ph), dict) and "max" in phases[ph]):
                problems.append(f"'phases_ms.{ph}' missing")
    return problems


def verification_state(rec: dict) -> str:
    """'passed', 'failed', 'unverified' (no check of fdmini could decide the run) or
    'unchecked' (fdmini --no-check)."""
    ver = rec.get("verification", {})
    if not ver.get("checked"):
        return "unchecked"
    if ver.get("status") == "UNVERIFIED":
        return "unverified"
    return "passed" if ver.get("passed") else "failed"


def load_json(path: str):
    """Parse one JSON file, errors as CollectError naming the file."""
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except OSError as err:
        raise CollectError(f"{path}: cannot read: {err.strerror}") from None
    except ValueError as err:
        raise CollectError(f"{path}: not valid JSON: {err}") from None


def find_inputs(paths: Sequence[str]) -> List[Tuple[str, Optional[dict], Optional[dict]]]:
    """(record path, manifest, manifest entry) of every record under the given paths.

    A folder contributes its *.json files (study.json aside) and, when it has one, its
    manifest; a file is taken as a record. Each file is listed once.
    """
    out = []
    seen = set()
    for path in paths:
        if os.path.isdir(path):
            manifest = None
            entries: Dict[str, dict] = {}
            mpath = os.path.join(path, MANIFEST)
            if os.path.exists(mpath):
                manifest = load_json(mpath)
                if not isinstance(manifest, dict) or manifest.get("schema") != "fdmini-study/1":
                    raise CollectError(f"{mpath}: not a study.py manifest (schema fdmini-study/1)")
                runs = manifest.get("runs", [])
                if not isinstance(runs, list) or not all(
                        isinstance(e, dict) and isinstance(e.get("record"), str) for e in runs):
                    raise CollectError(f"{mpath}: 'runs' must be a list of objects, each with its "
                                       f"'record' (the JSON file name)")
                entries = {e["record"]: e for e in runs}
                missing = [r for r in entries if not os.path.exists(os.path.join(path, r))]
                if missing:
                    print(f"collect: warning: {path}: {len(missing)} run(s) of the manifest have "
                          f"no record (not run yet, or failed), e.g. {missing[0]}", file=sys.stderr)
            files = sorted(f for f in glob.glob(os.path.join(glob.escape(path), "*.json"))
                           if os.path.basename(f) != MANIFEST)
            if not files:
                print(f"collect: warning: {path}: no *.json records", file=sys.stderr)
            for f in files:
                real = os.path.realpath(f)
                if real not in seen:
                    seen.add(real)
                    out.append((f, manifest, entries.get(os.path.basename(f))))
        elif os.path.isfile(path):
            real = os.path.realpath(path)
            if real not in seen:
                seen.add(real)
                out.append((path, None, None))
        else:
            raise CollectError(f"{path}: no such file or folder")
    return out


def record_variant(rec: dict) -> str:
    """Variant name of a record with no manifest: 'overlap', 'no-overlap-staged', ..., with
    '-widthS' and '-fuseT' where the record ran deep halos or fused passes."""
    name = "overlap" if rec["overlap"] else "no-overlap"
    if rec["mpi_gpu"] != "host":
        name += f"-{rec['mpi_gpu']}"
    width, steps = rec.get("halo_width", 1), sub(rec, "fuse", "steps") or 1
    if isinstance(width, int) and width > 1:
        name += f"-width{width}"
    if isinstance(steps, int) and steps > 1:
        name += f"-fuse{steps}"
    return name


def study_size(study: str, rec: dict) -> str:
    """The size a study is named by: the block of every rank (weak) or the global grid (strong)."""
    if study == "weak":
        return dims(rec["local_max"])
    if study == "strong":
        return dims(rec["global"])
    return ""


def number(value) -> Optional[float]:
    """A finite float, or None for null / non-numbers / non-finite values."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def sub(rec: dict, *keys):
    """rec[k1][k2]... or None when any level is missing."""
    for k in keys:
        if not isinstance(rec, dict) or k not in rec:
            return None
        rec = rec[k]
    return rec


def env_text(env) -> Optional[str]:
    """The record's mpi_env object as 'NAME=VALUE;NAME=VALUE' (sorted), None when absent."""
    if not isinstance(env, dict):
        return None
    return ";".join(f"{k}={env[k]}" for k in sorted(env))


def text(value) -> Optional[str]:
    """A string field of the record, None when absent or not a string."""
    return value if isinstance(value, str) else None


def count(value) -> Optional[int]:
    """An integer field of the record, None when absent or not an integer."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def flag(value) -> Optional[bool]:
    """A boolean field of the record, None when absent or not a boolean."""
    return value if isinstance(value, bool) else None


def joined(values) -> Optional[str]:
    """The distinct non-empty values of the repeats, sorted, joined by '/' (None when none)."""
    seen = sorted({str(v) for v in values if v is not None})
    return "/".join(seen) if seen else None


def run_status(entry: Optional[dict]) -> Optional[str]:
    """'exit N' or 'timed out' where study.json says the run did not end well (an exit_code
    present and not 0; null is a timeout), None where it did or the manifest does not say."""
    if entry is None or "exit_code" not in entry or entry["exit_code"] == 0:
        return None
    return "timed out" if entry["exit_code"] is None else f"exit {entry['exit_code']}"


def run_row(path: str, rec: dict, manifest: Optional[dict], entry: Optional[dict],
            default_study: Optional[str]) -> dict:
    """One results.csv row (values as Python objects; None is written as an empty cell)."""
    if manifest is not None:
        study = manifest.get("study")
        if default_study and default_study != study:
            raise CollectError(f"{path}: its study.json says {study}, but --study {default_study}")
    else:
        study = default_study or ""
    if entry is not None:
        variant, repeat, nodes = entry.get("variant"), entry.get("repeat"), entry.get("nodes")
        if entry.get("ranks") != rec["ranks"]:
            raise CollectError(f"{path}: the manifest says {entry.get('ranks')} ranks, the record "
                               f"{rec['ranks']}")
    else:
        variant, repeat, nodes = record_variant(rec), None, None
    if nodes is None and isinstance(rec.get("nodes"), dict):
        nodes = rec["nodes"].get("count")  # the record's own (fdmini's JSON: nodes.count)
    size = study_size(study, rec)
    if manifest is not None and size and size != dims(manifest.get("size", [])):
        raise CollectError(f"{path}: a {study} study of size {dims(manifest.get('size', []))}, but "
                           f"the record's {'local block' if study == 'weak' else 'global grid'} "
                           f"is {size}")
    if study == "weak" and rec["local_min"] != rec["local_max"]:
        raise CollectError(f"{path}: weak scaling needs equal blocks on every rank, but they range "
                           f"from {dims(rec['local_min'])} to {dims(rec['local_max'])}")
    ph = rec["phases_ms"]
    alone = bool(rec.get("baseline"))
    row = {
        "study": study, "size": size, "variant": variant, "repeat": repeat, "record": path,
        "git_commit": rec["git_commit"], "date": rec["date"], "version": rec.get("version"),
        "device": rec["device"], "backend": rec["backend"], "precision": rec["precision"],
        "op": rec["op"], "kernel": rec["kernel"], "tile": rec.get("tile"),
        "ranks": rec["ranks"], "nodes": nodes, "procs": dims(rec["procs"]),
        "global": dims(rec["global"]), "local_min": dims(rec["local_min"]),
        "local_max": dims(rec["local_max"]), "iters": rec.get("iters"),
        "warmup": rec.get("warmup"), "mpi_gpu": rec["mpi_gpu"], "overlap": rec["overlap"],
        "halo_path": text(rec.get("halo_path")),
        "halo_faces_ipc": count(rec.get("halo_faces_ipc")),
        "halo_faces_mpi": count(rec.get("halo_faces_mpi")),
        "halo_faces_proxy": count(rec.get("halo_faces_proxy")),
        "faces_other_node_max": count(sub(rec, "faces_by_neighbour", "other_node", "max")),
        "node_grid": text(sub(rec, "nodes", "layout")),
        "nodes_emulated": flag(sub(rec, "nodes", "emulated")),
        "Fm_us_max": number(sub(rec, "floors_us", "Fm", "max")),
        "exchange_alone_us_max": number(sub(rec, "floors_us", "exchange_alone", "max")),
        "bw_per_rank_GBs_avg": number(sub(rec, "bandwidth_per_rank_GBs", "avg")),
        "bw_per_rank_GBs_min": number(sub(rec, "bandwidth_per_rank_GBs", "min")),
        "bw_total_GBs": number(rec.get("bandwidth_total_GBs")),
        "points_per_s": number(rec.get("points_per_s")),
        "halo_bytes_per_step_max": rec.get("halo_bytes_per_step_max"),
        "halo_GBs_avg": number(sub(rec, "halo_GBs", "avg")),
        # deep halos and fused passes (records before them: width 1, one step per pass)
        "halo_width": rec.get("halo_width", 1),
        "fuse_steps": sub(rec, "fuse", "steps") or 1,
        "fuse_config": text(sub(rec, "fuse", "config")),
        "halo_messages_per_step_max": number(rec.get("halo_messages_per_step_max")),
        "redundant_points_per_step_avg": number(sub(rec, "redundant_points_per_step", "avg")),
        "redundant_share": number(rec.get("redundant_share")),
        # Only runs with fdmini --baseline have these (each block alone, no exchange).
        "alone_step_ms_avg": number(sub(rec, "alone_step_ms", "avg")) if alone else None,
        "efficiency_vs_alone_avg": number(sub(rec, "efficiency", "avg")) if alone else None,
        "hidden_share_avg": number(sub(rec, "hidden_share", "avg")) if alone else None,
        "verification": verification_state(rec), "run_status": run_status(entry),
        "start_time": text(rec.get("start_time")), "mpi_library": text(rec.get("mpi_library")),
        "gpu_runtime": text(rec.get("gpu_runtime")), "gpu_driver": text(rec.get("gpu_driver")),
        "compiler": text(rec.get("compiler")), "build_type": text(rec.get("build_type")),
        "build_flags": text(rec.get("build_flags")), "hwloc": text(rec.get("hwloc")),
        "gtl": text(rec.get("gtl")),
        "slurm_job_id": text(rec.get("slurm_job_id")),
        "slurm_nodelist": text(rec.get("slurm_nodelist")),
        "mpi_env": env_text(rec.get("mpi_env")),
        "binding_source": text(rec.get("binding_source")),
        "_rec": rec,  # for the model (not a column)
    }
    for p in PHASES:
        row[f"{p}_ms_avg"] = number(ph[p].get("avg"))
        row[f"{p}_ms_max"] = number(ph[p].get("max"))
    return row


def collect_rows(paths: Sequence[str], default_study: Optional[str],
                 allow_failed: bool) -> List[dict]:
    """Read, check and convert every record; all bad records are reported before failing."""
    rows, errors = [], []
    seen: Dict[tuple, str] = {}  # each run's (start, time taken, commit) -> its first record
    for path, manifest, entry in find_inputs(paths):
        try:
            rec = load_json(path)
        except CollectError as err:
            errors.append(str(err))
            continue
        run = tuple(rec.get(k) for k in ("start_time", "total_s", "git_commit", "ranks")) \
            if isinstance(rec, dict) else (None, None)
        if run[0] and run[1] is not None:  # fdmini's records have both
            if run in seen:
                errors.append(f"{path}: the same run as {seen[run]} (its start, time and commit: a "
                              f"copy, not another repeat)")
                continue
            seen[run] = path
        problems = check_record(rec, path)
        if problems:
            errors.append(f"{path}: " + "; ".join(problems))
            continue
        status = run_status(entry)
        if status and not allow_failed:
            errors.append(f"{path}: its run failed ({status}, says study.json); --allow-failed "
                          f"keeps it, marked, out of the summary")
            continue
        state = verification_state(rec)
        if state == "failed" and not allow_failed:
            detail = rec["verification"].get("detail", "")
            errors.append(f"{path}: verification FAILED ({detail}); --allow-failed keeps it")
            continue
        if state == "unchecked":
            print(f"collect: warning: {path}: run without verification (--no-check)",
                  file=sys.stderr)
        if state == "unverified":
            print(f"collect: warning: {path}: no check could decide this run (UNVERIFIED: "
                  f"{rec['verification'].get('detail', '')})", file=sys.stderr)
        try:
            rows.append(run_row(path, rec, manifest, entry, default_study))
        except CollectError as err:
            errors.append(str(err))
    if errors:
        raise CollectError(f"{len(errors)} record(s) rejected:\n  " + "\n  ".join(errors))
    if not rows:
        raise CollectError("no records found in " + " ".join(paths))
    rows.sort(key=lambda r: (r["study"], r["size"], r["op"], r["variant"] or "", r["ranks"],
                             r["repeat"] or 0, r["record"]))
    return rows


# ---------------------------------------------------------------------------------------------
# summary


def median(values: Sequence[Optional[float]]) -> Optional[float]:
    """Median of the values that are not None (None when there are none)."""
    vals = [v for v in values if v is not None]
    return statistics.median(vals) if vals else None


GROUP_KEYS = ("study", "size", "op", "variant", "backend", "device", "precision", "kernel")


def summarize(rows: Sequence[dict]) -> List[dict]:
    """One summary row per (study, size, op, variant, backend, device, precision, kernel, ranks).

    The step time of a run is the slowest rank's (`step_ms_max`); the summary takes the median
    over the repeats. Efficiency compares with the 1-rank row of the same group, or where the
    group has none (another kernel ran on 1 rank) with the fastest 1-rank row of any kernel.
    """
    bad = [r for r in rows if r["verification"] == "failed" or r.get("run_status")]
    if bad:
        print(f"collect: {len(bad)} failed run(s) left out of the summary (verification failed "
              f"or the run exited non-zero / timed out), e.g. {bad[0]['record']}", file=sys.stderr)
        rows = [r for r in rows if not (r["verification"] == "failed" or r.get("run_status"))]
        if not rows:
            raise CollectError("every run failed: nothing to summarize")
    unnamed = [r["record"] for r in rows if not r["study"]]
    if unnamed:
        raise CollectError(f"{len(unnamed)} record(s) have no study type (no study.json beside "
                           f"them, or one without its \"study\" key), e.g. {unnamed[0]}: pass "
                           f"--study weak|strong to summarize them")
    groups: Dict[tuple, List[dict]] = {}
    for r in rows:
        groups.setdefault(tuple(r[k] for k in GROUP_KEYS) + (r["ranks"],), []).append(r)
    out = []
    for key in sorted(groups, key=lambda k: tuple("" if v is None else v for v in k)):
        runs = groups[key]
        steps = [r["step_ms_max"] for r in runs]
        first = runs[0]
        procs = statistics.mode(r["procs"] for r in runs)
        out.append({
            "_recs": [r["_rec"] for r in runs if r.get("_rec") is not None],
            "study": first["study"], "size": first["size"], "op": first["op"],
            "variant": first["variant"], "ranks": first["ranks"], "nodes": first["nodes"],
            "procs": procs, "repeats": len(runs),
            "step_ms": median(steps),
            "step_ms_min": min((s for s in steps if s is not None), default=None),
            "step_ms_max": max((s for s in steps if s is not None), default=None),
            "pack_ms": median([r["pack_ms_avg"] for r in runs]),
            "exchange_ms": median([r["exchange_ms_avg"] for r in runs]),
            "unpack_ms": median([r["unpack_ms_avg"] for r in runs]),
            "interior_ms": median([r["interior_ms_avg"] for r in runs]),
            "boundary_ms": median([r["boundary_ms_avg"] for r in runs]),
            "bw_per_gcd_GBs": median([r["bw_per_rank_GBs_avg"] for r in runs]),
            "bw_per_gcd_min_GBs": median([r["bw_per_rank_GBs_min"] for r in runs]),
            "bw_total_GBs": median([r["bw_total_GBs"] for r in runs]),
            "halo_GBs": median([r["halo_GBs_avg"] for r in runs]),
            "efficiency_vs_alone": median([r["efficiency_vs_alone_avg"] for r in runs]),
            "hidden_share": median([r["hidden_share_avg"] for r in runs]),
            "halo_width": first["halo_width"],
            "fuse_steps": "/".join(str(t) for t in sorted({r["fuse_steps"] for r in runs})),
            "halo_messages_per_step": median([r["halo_messages_per_step_max"] for r in runs]),
            "halo_bytes_per_step": median([number(r["halo_bytes_per_step_max"]) for r in runs]),
            "redundant_share": median([r["redundant_share"] for r in runs]),
            "device": first["device"], "backend": first["backend"],
            "precision": first["precision"], "kernel": first["kernel"],
            "mpi_gpu": "/".join(sorted({r["mpi_gpu"] for r in runs})),
            "overlap": first["overlap"],
            # the path each repeat took (auto may take another from run to run: 'mpi/proxy')
            "halo_path": joined(r["halo_path"] for r in runs),
            "faces_other_node": max((r["faces_other_node_max"] for r in runs
                                     if r["faces_other_node_max"] is not None), default=None),
            "Fm_us": median([r["Fm_us_max"] for r in runs]),
            "exchange_alone_us": median([r["exchange_alone_us_max"] for r in runs]),
            "global": first["global"], "local": first["local_max"],
            "date": max(r["date"] for r in runs)[:10],
            "git_commits": " ".join(sorted({r["git_commit"] for r in runs})),
            "mpi_libraries": " | ".join(sorted({r["mpi_library"] for r in runs if r["mpi_library"]})),
            "gpu_drivers": " | ".join(sorted({r["gpu_driver"] for r in runs if r["gpu_driver"]})),
        })
    add_efficiency(out)
    return out


def add_efficiency(summary: List[dict]) -> None:
    """Fill `efficiency`, `speedup` and `efficiency_baseline` of every summary row: against the
    1-rank row of the same group (kernel included) where there is one, else against the fastest
    1-rank row of the group with any kernel; and `efficiency_vs_best_1rank` against the fastest
    1-rank row of any variant and kernel."""
    no_kernel = tuple(k for k in GROUP_KEYS if k != "kernel")
    same: Dict[tuple, dict] = {}
    best: Dict[tuple, dict] = {}
    for s in summary:
        if s["ranks"] != 1 or not s["step_ms"]:
            continue
        same[tuple(s[k] for k in GROUP_KEYS)] = s
        key = tuple(s[k] for k in no_kernel)
        if key not in best or s["step_ms"] < best[key]["step_ms"]:
            best[key] = s
    missing = set()
    for s in summary:
        s["efficiency"] = s["speedup"] = s["efficiency_baseline"] = None
        b = same.get(tuple(s[k] for k in GROUP_KEYS))
        how = "same kernel"
        if b is None:
            b = best.get(tuple(s[k] for k in no_kernel))
            how = None if b is None else f"best 1-rank: {b['kernel']}"
        if b is None or not s["step_ms"]:
            missing.add(f"{s['study']} {s['size']} {s['op']} {s['variant']}")
            continue
        t1, tn, n = b["step_ms"], s["step_ms"], s["ranks"]
        # Same median T1 on both sides, so the 1-rank row gets exactly 1.
        s["efficiency"] = t1 / tn if s["study"] == "weak" else t1 / (n * tn)
        s["speedup"] = t1 / tn if s["study"] == "strong" else n * t1 / tn
        s["efficiency_baseline"] = how
    for m in sorted(missing):
        print(f"collect: warning: no 1-rank baseline with a step time for {m}: efficiency left "
              f"empty", file=sys.stderr)
    # against the fastest 1-rank row of the same study, size and operator, any variant and kernel
    any_keys = tuple(k for k in no_kernel if k != "variant")
    fastest: Dict[tuple, float] = {}
    for s in summary:
        key = tuple(s[k] for k in any_keys)
        if s["ranks"] == 1 and s["step_ms"] and (key not in fastest or s["step_ms"] < fastest[key]):
            fastest[key] = s["step_ms"]
    for s in summary:
        t1, tn, n = fastest.get(tuple(s[k] for k in any_keys)), s["step_ms"], s["ranks"]
        s["efficiency_vs_best_1rank"] = None
        if t1 and tn:
            s["efficiency_vs_best_1rank"] = t1 / tn if s["study"] == "weak" else t1 / (n * tn)


# ---------------------------------------------------------------------------------------------
# the model beside the measurement (bench/model/)

MODEL_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "model")


def model_module():
    """bench/model/beside.py, or None where numpy is missing."""
    sys.path.insert(0, MODEL_DIR)
    try:
        import beside  # pylint: disable=import-outside-toplevel
    except ImportError:
        return None
    return beside


def add_model(summary: List[dict], site_name: Optional[str]) -> bool:
    """The model columns of every summary row (bench/model/beside.py, from the row's records and
    the 1-rank row its efficiency is measured against); False where numpy is missing."""
    for s in summary:
        for c in ("model_step_ms", "model_efficiency", "model_path", "model_inputs"):
            s[c] = None
    beside = model_module()
    if beside is None:
        return False
    same = {tuple(s[k] for k in GROUP_KEYS): s for s in summary if s["ranks"] == 1}
    no_kernel = tuple(k for k in GROUP_KEYS if k != "kernel")
    for s in summary:
        base = same.get(tuple(s[k] for k in GROUP_KEYS))
        if base is None:
            cands = [b for b in summary if b["ranks"] == 1 and b["step_ms"]
                     and all(b[k] == s[k] for k in no_kernel)]
            base = min(cands, key=lambda b: b["step_ms"]) if cands else None
        base_us = 1e3 * base["step_ms"] if base and base["step_ms"] else None
        base_rec = base["_recs"][0] if base and base.get("_recs") else None
        res = beside.predict_run(s.get("_recs") or [], base_us, base_rec,
                                 s["nodes"] if isinstance(s["nodes"], int) else None, site_name)
        if res is None:
            continue
        s["model_step_ms"] = res["step_us"] / 1e3
        s["model_path"] = res["path"]
        s["model_inputs"] = res["inputs"]
        if res["kernel_from_base"]:
            s["model_efficiency"] = beside.efficiency(s["study"], s["ranks"], res["step_us"], base_us)
    return True


# ---------------------------------------------------------------------------------------------
# output


def cell(value) -> str:
    """CSV text of a value: shortest round-trip floats, empty for None, true/false for bools."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    return str(value)


def write_csv(path: str, columns: Sequence[str], rows: Sequence[dict]) -> None:
    """Write rows (dicts) with the given columns."""
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise CollectError(f"{path}: folder {folder} does not exist")
    try:
        with open(path, "w", newline="", encoding="utf-8") as f:
            w = csv.writer(f, lineterminator="\n")
            w.writerow(columns)
            for r in rows:
                w.writerow([cell(r.get(c)) for c in columns])
    except OSError as err:
        raise CollectError(f"{path}: cannot write: {err.strerror}") from None


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point."""
    parser = argparse.ArgumentParser(
        prog="collect.py", description=__doc__.split("\n\n")[0].split(" - ", 1)[1],
        epilog=__doc__.split("\n\n", 1)[1], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("inputs", nargs="+", metavar="DIR_OR_FILE",
                        help="study folders (study.py --out) or JSON record files")
    parser.add_argument("-o", "--output", required=True, metavar="CSV",
                        help="one row per run")
    parser.add_argument("-s", "--summary", metavar="CSV",
                        help="medians over repeats and efficiencies, one row per scale and variant")
    parser.add_argument("--study", choices=["weak", "strong"],
                        help="study type of records that have no study.json manifest")
    parser.add_argument("--allow-failed", action="store_true",
                        help="keep records whose verification failed instead of rejecting them")
    parser.add_argument("--site", metavar="NAME_OR_FILE",
                        help="the model's site file (bench/model/sites: lumi-g, frontier, "
                        "nvidia-h200; default: from the device)")
    parser.add_argument("--no-model", action="store_true",
                        help="leave the model columns of the summary empty")
    args = parser.parse_args(argv)
    outputs = [args.output] + ([args.summary] if args.summary else [])
    if args.summary and os.path.realpath(args.summary) == os.path.realpath(args.output):
        print(f"collect.py: error: -o and -s name the same file ({args.output})", file=sys.stderr)
        return 1
    if args.summary and not args.no_model:
        sys.path.insert(0, MODEL_DIR)
        import needs  # pylint: disable=import-outside-toplevel
        needs.reexec(__file__)
    try:
        if args.site and args.summary and not args.no_model and model_module() is not None:
            model_module().inputs.load_site(args.site)  # a bad --site: an error before any file
        rows = collect_rows(args.inputs, args.study, args.allow_failed)
        for out in outputs:  # an output over one of the records would destroy it
            for r in rows:
                if os.path.realpath(out) == os.path.realpath(r["record"]):
                    raise CollectError(f"{out}: is one of the records read (-o and -s name new "
                                       f"CSV files)")
        summary = None
        if args.summary:  # every row and the summary made before any file is written
            summary = summarize(rows)
            if args.no_model:
                for s in summary:
                    s.update({c: None for c in SUMMARY_COLUMNS if c.startswith("model_")})
            elif not add_model(summary, args.site):
                print("collect: warning: numpy is not installed: the model columns are left empty "
                      "(apt-get install python3-numpy, or pip install numpy)", file=sys.stderr)
        write_csv(args.output, RUN_COLUMNS, rows)
        print(f"collect: {len(rows)} run(s) -> {args.output}")
        if summary is not None:
            write_csv(args.summary, SUMMARY_COLUMNS, summary)
            print(f"collect: {len(summary)} summary row(s) -> {args.summary}")
            for s in summary:
                eff = "" if s["efficiency"] is None else f"efficiency {s['efficiency']:.3f}"
                step = "-" if s["step_ms"] is None else f"{s['step_ms']:.4g}"
                mod = ""
                if s.get("model_step_ms") is not None:
                    mod = f"  model {s['model_step_ms']:.4g} ms"
                    if s.get("model_efficiency") is not None:
                        mod += f", {s['model_efficiency']:.3f}"
                path = f"  path {s['halo_path']}" if s.get("halo_path") not in (None, "none") else ""
                print(f"  {s['study']:6s} {s['size']:>14s} {s['op']:9s} {s['variant']:18s} "
                      f"N={s['ranks']:<5d} step {step} ms (median of {s['repeats']})  {eff}{mod}{path}")
    except CollectError as err:
        print(f"collect.py: error: {err}", file=sys.stderr)
        return 1
    except Exception as err:  # the model's ModelError (a bad --site): one line, no traceback
        if type(err).__name__ != "ModelError":
            raise
        print(f"collect.py: error: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

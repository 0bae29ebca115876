#!/usr/bin/env python3
"""plot.py - plots of a scaling study from collect.py's summary CSV.

    plot.py summary.csv -o DIR [--title-prefix TEXT]
    plot.py DEVICExG-strong.csv -o DIR [--title-prefix TEXT]

For every study in the summary (one study type, size, operator, backend, device and precision)
it writes three figures, each as PNG and SVG, into DIR:

    STEM-efficiency   parallel efficiency vs scale, one line per variant, ideal = 1, and
                      dashed in the same colour the model's efficiency for the variant where
                      the summary has it (collect.py's model_efficiency, bench/model)
    STEM-phases       time per step by phase, stacked bars per scale, one panel per variant,
                      with the measured step time (the slowest rank's) marked
    STEM-bandwidth    effective bandwidth per GCD vs scale (avg over ranks; bar down to the
                      slowest rank), one line per variant

and, for strong studies, one more figure per backend, device and precision:

    strong-BACKEND-PRECISION-DEVICE-speedup   speedup T(N0) / T(N) vs scale N on log-log axes,
                      N0 the smallest scale of each series, with the ideal N / N0; one series
                      per global size and operator (and variant, where there are several)

The strong table of bench/multigpu/scaling.sh (scaling_table.py's DEVICExG-strong.csv: one row
per operator, global N^3, mode, GPUs and ranks, with speedup and efficiency against the 1-GPU run
of its call) gives two figures per operator, strong-table-OP-DEVICE-speedup and -efficiency: one
line per global size and mode over the GPUs (one rank each), and the runs of two ranks per GPU
under MPS as open markers at their GPU count. DEVICE is the table's `device` column where it
has one, else its file name's prefix (NVIDIA-H200x4). (The weak table, DEVICExG-weak.csv, is a
collect.py summary: the figures above.)

STEM is e.g. `weak-512x512x512-laplacian-hip-double-reordered-amd-instinct-mi250x` (the
study's kernel families joined by '+'). Titles say what ran where: study type, operator, size,
device, backend, precision, kernels and date. A line is a variant; where the autotune picked
another kernel at some scale, the point stays on its variant's line, and where one scale has
rows of two kernels each kernel gets its own line, "VARIANT (KERNEL)".
"""

import argparse
import csv
import os
import re
import subprocess
import sys
from typing import Dict, List, Optional, Sequence, Tuple

REQUIRED = ["study", "size", "op", "variant", "ranks", "repeats", "step_ms", "efficiency",
            "pack_ms", "exchange_ms", "unpack_ms", "interior_ms", "boundary_ms",
            "bw_per_gcd_GBs", "bw_per_gcd_min_GBs", "device", "backend", "precision", "kernel",
            "date"]
FLOATS = ["step_ms", "efficiency", "pack_ms", "exchange_ms", "unpack_ms", "interior_ms",
          "boundary_ms", "bw_per_gcd_GBs", "bw_per_gcd_min_GBs"]
# present with fdmini --baseline; the model's (bench/model) where collect.py could compute it
OPTIONAL_FLOATS = ["hidden_share", "efficiency_vs_alone", "model_step_ms", "model_efficiency"]
PHASES = [("pack", "pack (halo stream)"), ("exchange", "exchange (MPI)"),
          ("unpack", "unpack (halo stream)"), ("interior", "interior update"),
          ("boundary", "boundary shell")]
PHASE_COLORS = ["#9ecae1", "#fd8d3c", "#6baed6", "#31a354", "#a1d99b"]
GROUP_KEYS = ("study", "size", "op", "backend", "device", "precision")


# scaling_table.py's strong table (bench/multigpu/scaling.sh strong)
STRONG_TABLE = ["op", "global", "gpus", "ranks", "mode", "step_us", "speedup", "efficiency"]


class PlotError(Exception):
    """Bad input: printed, exit 1."""


def load_summary(path: str) -> List[dict]:
    """Rows of collect.py's summary CSV, numbers converted (empty cells -> None)."""
    try:
        with open(path, newline="", encoding="utf-8") as f:
            reader = csv.DictReader(f)
            missing = [c for c in REQUIRED if c not in (reader.fieldnames or [])]
            if missing:
                raise PlotError(f"{path}: not a collect.py summary (columns missing: "
                                f"{', '.join(missing)})")
            rows = list(reader)
    except OSError as err:
        raise PlotError(f"{path}: cannot read: {err.strerror}") from None
    except (ValueError, csv.Error) as err:  # not UTF-8 (UnicodeDecodeError), not a CSV
        raise PlotError(f"{path}: not a collect.py summary ({err})") from None
    if not rows:
        raise PlotError(f"{path}: no rows")
    for i, r in enumerate(rows, 2):
        try:
            r["ranks"] = int(r["ranks"])
            for c in FLOATS:
                r[c] = float(r[c]) if r[c] != "" else None
            for c in OPTIONAL_FLOATS:
                r[c] = float(r[c]) if r.get(c) not in (None, "") else None
        except ValueError as err:
            raise PlotError(f"{path}, line {i}: {err}") from None
    return rows


def load_strong_table(path: str) -> Optional[Tuple[str, List[dict]]]:
    """(device, rows) of scaling_table.py's strong table, numbers converted; None where the
    file is not one (a collect.py summary, say)."""
    try:
        with open(path, newline="", encoding="utf-8") as f:
            reader = csv.DictReader(f)
            if not all(c in (reader.fieldnames or []) for c in STRONG_TABLE):
                return None
            rows = list(reader)
    except OSError as err:
        raise PlotError(f"{path}: cannot read: {err.strerror}") from None
    except (ValueError, csv.Error) as err:
        raise PlotError(f"{path}: not a CSV ({err})") from None
    if not rows:
        raise PlotError(f"{path}: no rows")
    for i, r in enumerate(rows, 2):
        try:
            for c in ("global", "gpus", "ranks"):
                r[c] = int(r[c])
            for c in ("step_us", "speedup", "efficiency"):
                r[c] = float(r[c])
        except ValueError as err:
            raise PlotError(f"{path}, line {i}: {err}") from None
    m = re.match(r"(.+)-strong\.csv$", os.path.basename(path))
    device = rows[0].get("device") or (m.group(1) if m else "unknown device")
    return device, rows


def plot_strong_table(plt, device: str, rows: Sequence[dict], prefix: str, out_dir: str) -> List[str]:
    """For each operator of the strong table: speedup and efficiency vs GPUs, one line per
    global size and mode (one rank per GPU), two ranks per GPU under MPS as open markers."""
    paths = []
    for op in sorted({r["op"] for r in rows}):
        orows = [r for r in rows if r["op"] == op]
        series_keys = sorted({(r["global"], r["mode"]) for r in orows}, key=lambda k: (k[0], k[1] != "T1", k[1]))
        gpus = sorted({r["gpus"] for r in orows})
        for what, column in (("speedup", "speedup"), ("efficiency", "efficiency")):
            fig, ax = plt.subplots(figsize=(7.5, 5.5))
            if what == "speedup":
                ax.plot(gpus, gpus, color="0.5", linestyle="--", linewidth=1, label="ideal")
            else:
                ax.axhline(1.0, color="0.5", linestyle="--", linewidth=1, label="ideal")
            mps_label = "2 ranks per GPU (MPS)"
            for n, mode in series_keys:
                pts = sorted((r["gpus"], r[column]) for r in orows
                             if (r["global"], r["mode"]) == (n, mode) and r["ranks"] == r["gpus"])
                if not pts:
                    continue
                line = ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", linewidth=2,
                               label=f"{n}^3 {mode}")
                mps = sorted((r["gpus"], r[column]) for r in orows
                             if (r["global"], r["mode"]) == (n, mode) and r["ranks"] > r["gpus"])
                if mps:
                    ax.plot([p[0] for p in mps], [p[1] for p in mps], linestyle="none", marker="o",
                            markerfacecolor="none", markersize=9, color=line[0].get_color(),
                            label=mps_label)
                    mps_label = "_nolegend_"
            setup_scale_axis(ax, gpus, "GPUs (one MPI rank each)")
            if what == "speedup":
                ax.set_yscale("log", base=2)
                ax.yaxis.set_major_formatter(plt.matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}"))
                ax.set_ylabel("speedup  $T_1 / T_G$")
            else:
                ax.set_ylim(0, 1.12 * max([1.0] + [r["efficiency"] for r in orows]))
                ax.set_ylabel("strong-scaling efficiency  $T_1 / (G\\,T_G)$")
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(title="global size, mode", loc="upper left" if what == "speedup" else "lower left",
                      fontsize=8, ncol=2)
            ax.set_title("T = step time of the slowest rank; T1 the 1-GPU run of the same call",
                         fontsize=9)
            t1 = f"{prefix}fdmini strong scaling, {op}"
            fig.suptitle(f"{t1}\n{device}", fontsize=11)
            fig.tight_layout()
            paths += save(fig, out_dir, f"strong-table-{op}-{slug(device)}-{what}", t1)
            plt.close(fig)
    return paths


def slug(text: str) -> str:
    """'AMD Instinct MI250X' -> 'amd-instinct-mi250x' (safe in file names)."""
    return re.sub(r"[^a-z0-9.]+", "-", text.lower()).strip("-") or "unknown"


def unit(backend: str) -> str:
    """What one rank drives: a GCD (HIP, MI250X), a GPU (CUDA) or a CPU rank (host)."""
    return {"hip": "GCD", "cuda": "GPU"}.get(backend, "rank")


def scale_label(backend: str) -> str:
    """x-axis label: what the scale counts."""
    u = unit(backend)
    return "MPI ranks" if u == "rank" else f"{u}s (one MPI rank each)"


def titles(key: Tuple[str, ...], rows: Sequence[dict], prefix: str) -> Tuple[str, str]:
    """The two title lines of every figure of a study: what ran, and where and when."""
    study, size, op, backend, device, precision = key
    kernels = kernels_of(rows)
    kernel = f"{'/'.join(kernels)} kernel{'s' if len(kernels) > 1 else ''}"
    u = unit(backend)
    where = f"per {u}" if study == "weak" else "global"
    dates = sorted({r["date"] for r in rows if r["date"]})
    if not dates:
        when = "date unknown"
    else:
        when = dates[0] if len(dates) == 1 else f"{dates[0]} to {dates[-1]}"
    first = f"{prefix}fdmini {study} scaling, {op}, {size} {where}"
    second = f"{device} ({backend}, {precision}, {kernel}), {when}"
    return first, second


def kernels_of(rows: Sequence[dict]) -> List[str]:
    """The kernel families of a study's rows, sorted."""
    return sorted({r["kernel"] for r in rows})


def variants_of(rows: Sequence[dict]) -> List[str]:
    """Line names in a stable order (overlap first, then no-overlap, then the rest): the
    variants, and "VARIANT (KERNEL)" for each kernel of a variant that has rows of two kernels
    at one scale (collect.py keeps a row per kernel family)."""
    names = set()
    for v in {r["variant"] for r in rows}:
        vrows = [r for r in rows if r["variant"] == v]
        if len({r["ranks"] for r in vrows}) < len(vrows):
            names |= {f"{v} ({r['kernel']})" for r in vrows}
        else:
            names.add(v)
    return sorted(names, key=lambda v: (v.startswith("no-"), v))


def on_line(r: dict, line: str) -> bool:
    """Whether row r belongs to the line named `line` (variants_of)."""
    return line in (r["variant"], f"{r['variant']} ({r['kernel']})")


def series(rows: Sequence[dict], variant: str, column: str) -> Tuple[List[int], List[float]]:
    """(ranks, values) of one line, sorted by ranks, rows with no value left out."""
    pts = sorted((r["ranks"], r[column]) for r in rows
                 if on_line(r, variant) and r[column] is not None)
    return [p[0] for p in pts], [p[1] for p in pts]


def setup_scale_axis(ax, ranks: Sequence[int], label: str) -> None:
    """Log2 x axis with a tick at every measured scale."""
    ax.set_xscale("log", base=2)
    ax.set_xticks(list(ranks))
    ax.set_xticklabels([str(r) for r in ranks])
    ax.minorticks_off()
    ax.set_xlabel(label)
    if len(ranks) == 1:
        ax.set_xlim(ranks[0] / 2, ranks[0] * 2)


def save(fig, out_dir: str, stem: str, title: str) -> List[str]:
    """Save fig as STEM.png and STEM.svg (text kept as text, title in the metadata)."""
    paths = []
    for ext in ("png", "svg"):
        path = os.path.join(out_dir, f"{stem}.{ext}")
        meta = {"Title": title} if ext == "svg" else {"Title": title, "Software": "fdmini plot.py"}
        if ext == "svg":
            meta["Date"] = None  # reproducible files
        fig.savefig(path, dpi=120, metadata=meta)
        paths.append(path)
    return paths


def plot_efficiency(plt, key, rows, prefix, out_dir, stem) -> List[str]:
    """Efficiency vs scale, one line per variant."""
    study, u = key[0], unit(key[3])
    t1, t2 = titles(key, rows, prefix)
    ranks = sorted({r["ranks"] for r in rows})
    fig, ax = plt.subplots(figsize=(7.5, 5))
    ax.axhline(1.0, color="0.5", linestyle="--", linewidth=1, label="ideal")
    top = 1.0
    for v in variants_of(rows):
        x, y = series(rows, v, "efficiency")
        if x:
            line = ax.plot(x, y, marker="o", linewidth=2, label=v)
            top = max(top, max(y))
            mx, my = series(rows, v, "model_efficiency")
            if mx:
                ax.plot(mx, my, linestyle="--", marker="x", linewidth=1.5, color=line[0].get_color(),
                        label=f"{v} (model)")
                top = max(top, max(my))
    setup_scale_axis(ax, ranks, scale_label(key[3]))
    formula = "$T_1 / T_N$" if study == "weak" else "$T_1 / (N\\,T_N)$"
    ax.set_ylabel(f"{study}-scaling efficiency  {formula}")
    ax.set_ylim(0, top * 1.12)
    ax.grid(True, alpha=0.3)
    ax.legend(title="variant", loc="best")
    ax.set_title("efficiency vs 1 " + u + " (T = step time of the slowest rank, median of repeats)",
                 fontsize=9)
    fig.suptitle(f"{t1}\n{t2}", fontsize=11)
    fig.tight_layout()
    paths = save(fig, out_dir, f"{stem}-efficiency", t1)
    plt.close(fig)
    return paths


def plot_hidden(plt, key, rows, prefix, out_dir, stem) -> List[str]:
    """Share of the exchange hidden behind the interior update vs scale, for the overlapped
    variants of a study run with fdmini --baseline (nothing when the records have none)."""
    t1, t2 = titles(key, rows, prefix)
    lines = []
    for v in variants_of(rows):
        if v.startswith("no-overlap"):
            continue
        x, y = series(rows, v, "hidden_share")
        pts = [(a, b) for a, b in zip(x, y) if a > 1]
        if pts:
            lines.append((v, [p[0] for p in pts], [p[1] for p in pts]))
    if not lines:
        return []
    fig, ax = plt.subplots(figsize=(7.5, 5))
    ax.axhline(1.0, color="0.5", linestyle="--", linewidth=1, label="fully hidden")
    for v, x, y in lines:
        ax.plot(x, y, marker="o", linewidth=2, label=v)
    setup_scale_axis(ax, sorted({p for _, x, _ in lines for p in x}), scale_label(key[3]))
    ax.set_ylabel("exchange hidden  $1 - (T_{step} - T_{alone}) / (T_{pack} + T_{exch} + T_{unpack})$")
    ax.set_ylim(0, 1.12)
    ax.grid(True, alpha=0.3)
    ax.legend(title="variant", loc="best")
    ax.set_title("share of the halo exchange hidden (fdmini --baseline, median of repeats)",
                 fontsize=9)
    fig.suptitle(f"{t1}\n{t2}", fontsize=11)
    fig.tight_layout()
    paths = save(fig, out_dir, f"{stem}-hidden", t1)
    plt.close(fig)
    return paths


def plot_phases(plt, key, rows, prefix, out_dir, stem) -> List[str]:
    """Stacked per-phase times per scale, one panel per variant, step time marked."""
    t1, t2 = titles(key, rows, prefix)
    variants = variants_of(rows)
    fig, axes = plt.subplots(1, len(variants), figsize=(max(7.5, 4.5 * len(variants)), 5.2),
                             sharey=True, squeeze=False)
    for ax, v in zip(axes[0], variants):
        vrows = sorted((r for r in rows if on_line(r, v)), key=lambda r: r["ranks"])
        xs = list(range(len(vrows)))
        bottom = [0.0] * len(vrows)
        for (name, label), color in zip(PHASES, PHASE_COLORS):
            vals = [r[f"{name}_ms"] or 0.0 for r in vrows]
            ax.bar(xs, vals, bottom=bottom, color=color, edgecolor="white", linewidth=0.5,
                   label=label, width=0.65)
            bottom = [b + h for b, h in zip(bottom, vals)]
        steps = [r["step_ms"] for r in vrows]
        ax.plot(xs, [s if s is not None else float("nan") for s in steps], linestyle="none",
                marker="_", markersize=28, markeredgewidth=2.5, color="black",
                label="step (wall, slowest rank)")
        ax.set_xticks(xs)
        ax.set_xticklabels([str(r["ranks"]) for r in vrows])
        ax.set_xlabel(scale_label(key[3]))
        ax.set_title(f"variant: {v}", fontsize=10)
        ax.grid(True, axis="y", alpha=0.3)
    axes[0][0].set_ylabel("time per step [ms] (phase: avg over ranks)")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=3, fontsize=9, frameon=False)
    fig.suptitle(f"{t1}\n{t2}", fontsize=11)
    fig.text(0.5, 0.115, "with overlap the exchange runs during the interior update, so the stack "
             "can exceed the step time", ha="center", fontsize=8, color="0.35")
    fig.tight_layout(rect=(0, 0.14, 1, 1))
    paths = save(fig, out_dir, f"{stem}-phases", t1)
    plt.close(fig)
    return paths


def plot_bandwidth(plt, key, rows, prefix, out_dir, stem) -> List[str]:
    """Effective bandwidth per GCD vs scale, bars down to the slowest rank."""
    u = unit(key[3])
    t1, t2 = titles(key, rows, prefix)
    ranks = sorted({r["ranks"] for r in rows})
    fig, ax = plt.subplots(figsize=(7.5, 5))
    top = 0.0
    for v in variants_of(rows):
        vrows = sorted((r for r in rows if on_line(r, v) and r["bw_per_gcd_GBs"] is not None),
                       key=lambda r: r["ranks"])
        if not vrows:
            continue
        x = [r["ranks"] for r in vrows]
        y = [r["bw_per_gcd_GBs"] for r in vrows]
        low = [max(0.0, r["bw_per_gcd_GBs"] - (r["bw_per_gcd_min_GBs"] or r["bw_per_gcd_GBs"]))
               for r in vrows]
        ax.errorbar(x, y, yerr=[low, [0.0] * len(y)], marker="o", linewidth=2, capsize=4,
                    label=v)
        top = max(top, max(y))
    setup_scale_axis(ax, ranks, scale_label(key[3]))
    ax.set_ylabel(f"effective bandwidth per {u} [GB/s]")
    ax.set_ylim(0, top * 1.15 if top > 0 else 1)
    ax.grid(True, alpha=0.3)
    ax.legend(title="variant", loc="best")
    ax.set_title("avg over ranks, error bar down to the slowest rank; bytes = one read + one "
                 "write per point", fontsize=9)
    fig.suptitle(f"{t1}\n{t2}", fontsize=11)
    fig.tight_layout()
    paths = save(fig, out_dir, f"{stem}-bandwidth", t1)
    plt.close(fig)
    return paths


def speedup_series(rows: Sequence[dict]) -> List[Tuple[str, List[int], List[float]]]:
    """The series of a strong-scaling speedup figure: (label, ranks, speedup) for every size,
    operator and line (variants_of) of the rows, speedup = T(N0) / T(N) with T the median step
    time of the slowest rank and N0 the series' smallest scale. The label is "SIZE OP", plus the
    line's name where the rows have several lines."""
    out = []
    keys = sorted({(r["size"], r["op"]) for r in rows})
    for size, op in keys:
        grows = [r for r in rows if r["size"] == size and r["op"] == op]
        lines = variants_of(grows)
        all_lines = {v for k in keys for v in variants_of([r for r in rows if (r["size"], r["op"]) == k])}
        for v in lines:
            x, t = series(grows, v, "step_ms")
            pts = [(n, tn) for n, tn in zip(x, t) if tn and tn > 0]
            if not pts:
                continue
            t0 = pts[0][1]
            label = f"{size} {op}" + (f" {v}" if len(all_lines) > 1 else "")
            out.append((label, [p[0] for p in pts], [t0 / p[1] for p in pts]))
    return out


def speedup_titles(key: Tuple[str, ...], rows: Sequence[dict], prefix: str) -> Tuple[str, str]:
    """Title lines of a speedup figure (its rows may hold several sizes and operators)."""
    backend, device, precision = key
    kernels = kernels_of(rows)
    kernel = f"{'/'.join(kernels)} kernel{'s' if len(kernels) > 1 else ''}"
    dates = sorted({r["date"] for r in rows if r["date"]})
    when = ("date unknown" if not dates else dates[0] if len(dates) == 1
            else f"{dates[0]} to {dates[-1]}")
    return (f"{prefix}fdmini strong scaling speedup",
            f"{device} ({backend}, {precision}, {kernel}), {when}")


def plot_speedup(plt, key, rows, prefix, out_dir, stem) -> List[str]:
    """Strong-scaling speedup vs scale on log-log axes, the ideal line, one series per global
    size and operator (and variant where there are several)."""
    t1, t2 = speedup_titles(key, rows, prefix)
    lines = speedup_series(rows)
    if not lines:
        return []
    fig, ax = plt.subplots(figsize=(7.5, 5.5))
    ranks = sorted({n for _, x, _ in lines for n in x})
    starts = sorted({x[0] for _, x, _ in lines})
    for i, n0 in enumerate(starts):  # N / N0: one ideal line per smallest scale of a series
        xs = [n for n in ranks if n >= n0]
        ax.plot(xs, [n / n0 for n in xs], color="0.5", linestyle="--" if i == 0 else ":",
                linewidth=1, label="ideal" if len(starts) == 1 else f"ideal from {n0}")
    top = max(ranks) / starts[0]
    for label, x, y in lines:
        ax.plot(x, y, marker="o", linewidth=2, label=label)
        top = max(top, max(y))
    setup_scale_axis(ax, ranks, scale_label(key[0]))
    ax.set_yscale("log", base=2)
    ax.yaxis.set_major_formatter(plt.matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}"))
    bottom = min(min(y) for _, _, y in lines)
    ax.set_ylim(min(1.0, bottom) / 1.3, top * 1.3)
    ax.set_ylabel("speedup  $T_{N_0} / T_N$  ($N_0$: the smallest scale measured)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(title="global size, operator", loc="best", fontsize=9)
    ax.set_title("T = step time of the slowest rank, median of repeats", fontsize=9)
    fig.suptitle(f"{t1}\n{t2}", fontsize=11)
    fig.tight_layout()
    paths = save(fig, out_dir, f"{stem}-speedup", t1)
    plt.close(fig)
    return paths


def speedup_groups(rows: Sequence[dict]) -> Dict[Tuple[str, ...], List[dict]]:
    """The strong-scaling rows by (backend, device, precision): one speedup figure each."""
    groups: Dict[Tuple[str, ...], List[dict]] = {}
    for r in rows:
        if r["study"] == "strong":
            groups.setdefault((r["backend"], r["device"], r["precision"]), []).append(r)
    return groups


def speedup_stem(key: Tuple[str, ...]) -> str:
    """strong-BACKEND-PRECISION-DEVICE (the figure adds -speedup)."""
    backend, device, precision = key
    return "-".join(["strong", backend, precision, slug(device)])


# The interpreter Debian's and Ubuntu's python3-matplotlib (tools/install-deps.sh) installs for.
SYSTEM_PYTHON = "/usr/bin/python3"


def reexec_with_system_python() -> None:
    """When this interpreter lacks matplotlib (a venv, conda or module python3 first on PATH)
    but the system's python3 has it, run this script again with that one (never returns then).
    """
    # (a venv's python3 is the same binary as the system's, with other packages: ask it)
    if os.environ.get("FDMINI_PLOT_REEXEC") or not os.access(SYSTEM_PYTHON, os.X_OK):
        return
    probe = subprocess.run([SYSTEM_PYTHON, "-c", "import matplotlib"], capture_output=True,
                           check=False)
    if probe.returncode != 0:
        return
    print(f"plot: matplotlib is not installed for {sys.executable}; running with "
          f"{SYSTEM_PYTHON}, which has it", file=sys.stderr)
    os.environ["FDMINI_PLOT_REEXEC"] = "1"
    os.execv(SYSTEM_PYTHON, [SYSTEM_PYTHON, os.path.abspath(__file__)] + sys.argv[1:])


def import_pyplot():
    """matplotlib.pyplot with the Agg backend and SVG text kept as text."""
    try:
        import matplotlib  # pylint: disable=import-outside-toplevel
    except ImportError:
        reexec_with_system_python()
        raise PlotError(f"matplotlib is not installed for {sys.executable} (Debian/Ubuntu: "
                        "apt-get install python3-matplotlib; LUMI/Frontier: module load "
                        "cray-python; or pip install matplotlib)") from None
    matplotlib.use("Agg")
    matplotlib.rcParams["svg.fonttype"] = "none"  # titles stay searchable text in the SVG
    matplotlib.rcParams["svg.hashsalt"] = "fdmini"  # stable ids: same data, same file
    import matplotlib.pyplot as plt  # pylint: disable=import-outside-toplevel
    return plt


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point."""
    parser = argparse.ArgumentParser(
        prog="plot.py", description="Plots (PNG and SVG) of a scaling study from collect.py's "
        "summary CSV.", epilog=__doc__.split("\n\n", 1)[1],
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("summary", help="summary CSV written by collect.py -s, or the strong "
                        "table of bench/multigpu/scaling.sh (DEVICExG-strong.csv)")
    parser.add_argument("-o", "--out", required=True, metavar="DIR",
                        help="folder for the figures (created)")
    parser.add_argument("--title-prefix", default="", metavar="TEXT",
                        help="text put before every title, e.g. 'LUMI-G: '")
    parser.add_argument("--dry-run", action="store_true",
                        help="write nothing: print the series of every speedup figure "
                        "(figure, series, ranks, speedup; tab-separated) and stop")
    args = parser.parse_args(argv)
    try:
        table = load_strong_table(args.summary)
        if table and not args.dry_run:
            if os.path.exists(args.out) and not os.path.isdir(args.out):
                raise PlotError(f"{args.out}: exists and is not a folder (-o names the folder for "
                                f"the figures)")
            plt = import_pyplot()
            os.makedirs(args.out, exist_ok=True)
            written = plot_strong_table(plt, table[0], table[1], args.title_prefix, args.out)
            for p in written:
                print(f"plot: wrote {p}")
            print(f"plot: {len(written)} files for the strong table of {table[0]}")
            return 0
        rows = load_summary(args.summary)
        if args.dry_run:
            print("figure\tseries\tranks\tspeedup")
            for key, grows in sorted(speedup_groups(rows).items()):
                for label, x, y in speedup_series(grows):
                    for n, v in zip(x, y):
                        print(f"{speedup_stem(key)}\t{label}\t{n}\t{v:.6g}")
            return 0
        if os.path.exists(args.out) and not os.path.isdir(args.out):
            raise PlotError(f"{args.out}: exists and is not a folder (-o names the folder for the "
                            f"figures)")
        plt = import_pyplot()
        try:
            os.makedirs(args.out, exist_ok=True)
        except OSError as err:
            raise PlotError(f"{args.out}: cannot make the folder: {err.strerror}") from None
        groups: Dict[Tuple[str, ...], List[dict]] = {}
        for r in rows:
            groups.setdefault(tuple(r[k] for k in GROUP_KEYS), []).append(r)
        written = []
        for key, grows in sorted(groups.items()):
            study, size, op, backend, device, precision = key
            stem = "-".join([study, size, op, backend, precision, "+".join(kernels_of(grows)),
                             slug(device)])
            for fn in (plot_efficiency, plot_phases, plot_bandwidth, plot_hidden):
                written += fn(plt, key, grows, args.title_prefix, args.out, stem)
        for key, grows in sorted(speedup_groups(rows).items()):
            written += plot_speedup(plt, key, grows, args.title_prefix, args.out,
                                    speedup_stem(key))
        for p in written:
            print(f"plot: wrote {p}")
        studies = "1 study" if len(groups) == 1 else f"{len(groups)} studies"
        print(f"plot: {len(written)} files for {studies}")
    except PlotError as err:
        print(f"plot.py: error: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

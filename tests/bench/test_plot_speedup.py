#!/usr/bin/env python3
"""test_plot_speedup.py - bench/scaling/plot.py's strong-scaling speedup figure (issue 47,
item 6): speedup T(N0) / T(N) against the GPU count on log-log axes with the ideal line, one
series per global size and operator, N0 the smallest count of each series.

A made-up summary (collect.py's columns) holds a strong study of 256^3 laplacian on 1, 2, 4 and
8 GPUs, one of 512^3 heat on 2, 4 and 8 (too large for one), and a weak study (no speedup
figure). `plot.py --dry-run` must print exactly the expected series and write nothing; the real
run must write one speedup PNG and SVG beside the other figures, the SVG with both series'
labels and both ideal lines, the axes logarithmic.

Usage: tests/bench/test_plot_speedup.py     Exit 0 when every check passed (77: no matplotlib).
"""
import csv
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
PLOT = os.path.join(HERE, "..", "..", "bench", "scaling", "plot.py")
failures = []


def check(ok, what):
    print(("PASS: " if ok else "FAIL: ") + what)
    if not ok:
        failures.append(what)


COLS = ["study", "size", "op", "variant", "ranks", "repeats", "step_ms", "efficiency",
        "pack_ms", "exchange_ms", "unpack_ms", "interior_ms", "boundary_ms", "bw_per_gcd_GBs",
        "bw_per_gcd_min_GBs", "device", "backend", "precision", "kernel", "date"]
STEPS = {("strong", "256x256x256", "laplacian"): {1: 8.0, 2: 4.2, 4: 2.5, 8: 1.6},
         ("strong", "512x512x512", "heat"): {2: 30.0, 4: 16.0, 8: 10.0},
         ("weak", "128x128x128", "laplacian"): {1: 1.0, 2: 1.1, 4: 1.2}}


def write_summary(path):
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=COLS)
        w.writeheader()
        for (study, size, op), steps in STEPS.items():
            for n, t in steps.items():
                w.writerow({"study": study, "size": size, "op": op, "variant": "overlap",
                            "ranks": n, "repeats": 3, "step_ms": t, "efficiency": 1.0,
                            "pack_ms": 0.1, "exchange_ms": 0.2, "unpack_ms": 0.1,
                            "interior_ms": t * 0.8, "boundary_ms": 0.1, "bw_per_gcd_GBs": 1000,
                            "bw_per_gcd_min_GBs": 990, "device": "AMD Instinct MI250X",
                            "backend": "hip", "precision": "double", "kernel": "reordered",
                            "date": "2026-12-01"})


def have_matplotlib():
    for py in (sys.executable, "/usr/bin/python3"):
        if os.access(py, os.X_OK) and subprocess.run([py, "-c", "import matplotlib"],
                                                     capture_output=True, check=False).returncode == 0:
            return True
    return False


def main():
    with tempfile.TemporaryDirectory() as work:
        summary = os.path.join(work, "summary.csv")
        write_summary(summary)
        plots = os.path.join(work, "plots")
        res = subprocess.run([sys.executable, PLOT, summary, "-o", plots, "--dry-run"],
                             capture_output=True, text=True, check=False)
        lines = res.stdout.splitlines()
        check(res.returncode == 0 and lines[:1] == ["figure\tseries\tranks\tspeedup"],
              f"plot.py --dry-run prints the speedup table ({res.stderr.strip()[-200:]})")
        got = {}
        for line in lines[1:]:
            fig, label, n, v = line.split("\t")
            got.setdefault((fig, label), []).append((int(n), float(v)))
        fig = "strong-hip-double-amd-instinct-mi250x"
        want = {}
        for (study, size, op), steps in STEPS.items():
            if study != "strong":
                continue
            n0 = min(steps)
            want[(fig, f"{size} {op}")] = [(n, steps[n0] / steps[n]) for n in sorted(steps)]
        check(sorted(got) == sorted(want),
              f"one series per global size and operator of the strong studies: {sorted(got)}")
        for k, pts in want.items():
            g = got.get(k, [])
            check([n for n, _ in g] == [n for n, _ in pts] and
                  all(abs(a[1] - b[1]) < 1e-5 * b[1] for a, b in zip(g, pts)),
                  f"{k[1]}: speedup T(N0)/T(N) from its smallest scale {pts[0][0]}: {g}")
        check(not os.path.exists(plots), "--dry-run writes nothing")

        if not have_matplotlib():
            print("SKIP: no matplotlib: the figure is not drawn")
            return 77 if not failures else 1
        res = subprocess.run([sys.executable, PLOT, summary, "-o", plots, "--title-prefix", "T: "],
                             capture_output=True, text=True, check=False)
        png = os.path.join(plots, f"{fig}-speedup.png")
        svg = os.path.join(plots, f"{fig}-speedup.svg")
        check(res.returncode == 0 and os.path.isfile(png) and os.path.isfile(svg),
              f"plot.py writes {fig}-speedup.png and .svg ({res.stderr.strip()[-200:]})")
        data = open(png, "rb").read() if os.path.isfile(png) else b""
        check(data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 15000, "the PNG is a PNG of plot size")
        text = open(svg, encoding="utf-8").read() if os.path.isfile(svg) else ""
        for want_text in ("T: fdmini strong scaling speedup", "256x256x256 laplacian",
                          "512x512x512 heat", "ideal from 2", "speedup", "GCDs (one MPI rank each)"):
            check(want_text in text, f"the SVG holds {want_text!r}")
        speedups = sorted(p for p in os.listdir(plots) if "speedup" in p) if os.path.isdir(plots) else []
        check(speedups == [f"{fig}-speedup.png", f"{fig}-speedup.svg"],
              f"one speedup figure, none for the weak study: {speedups}")
        # the axes: both logarithmic (matplotlib's Agg figure, rebuilt from plot.py's function)
        probe = subprocess.run([sys.executable if have_here() else "/usr/bin/python3", "-c", PROBE,
                                PLOT, summary], capture_output=True, text=True, check=False)
        check(probe.stdout.strip() == "log log", f"log-log axes ({probe.stdout.strip()} "
                                                 f"{probe.stderr.strip()[-200:]})")
    print(f"speedup plot test: {len(failures)} failed")
    return 1 if failures else 0


def have_here():
    return subprocess.run([sys.executable, "-c", "import matplotlib"], capture_output=True,
                          check=False).returncode == 0


# Loads plot.py as a module, draws the speedup figure and prints the axes' scales.
PROBE = r"""
import importlib.util, sys, tempfile
spec = importlib.util.spec_from_file_location("plot", sys.argv[1])
plot = importlib.util.module_from_spec(spec); spec.loader.exec_module(plot)
plt = plot.import_pyplot()
rows = plot.load_summary(sys.argv[2])
seen = []
plot.save = lambda fig, *args: seen.append((fig.axes[0].get_xscale(), fig.axes[0].get_yscale())) or []
with tempfile.TemporaryDirectory() as d:
    for key, grows in plot.speedup_groups(rows).items():
        plot.plot_speedup(plt, key, grows, "", d, plot.speedup_stem(key))
print(*seen[0])
"""

if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""test_plot_scaling_tables.py - bench/scaling/plot.py on the two tables bench/multigpu/scaling.sh
leaves (issue 57, item 7), from the committed ones of 4 H200s:

  - the strong table (NVIDIA-H200x4-strong.csv, scaling_table.py's own columns): for heat and
    jacobi a speedup and an efficiency figure, PNG and SVG, 8 files; the SVG has each global
    size and mode as a series (128^3 T1 ... 1024^3 S4-auto), the MPS runs' legend, the device
    from the file name; a copy without its `speedup` column is refused with one line, exit 1;
  - the weak table (NVIDIA-H200x4-weak.csv, a collect.py summary): efficiency, phases,
    bandwidth and hidden-share figures of heat and jacobi, 16 files.

Usage: tests/bench/test_plot_scaling_tables.py     Exit 0 when every check passed (77: no
matplotlib for python3 nor /usr/bin/python3).
"""
import csv
import glob
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
PLOT = os.path.join(ROOT, "bench", "scaling", "plot.py")
RESULTS = os.path.join(ROOT, "bench", "results")
failures = []


def check(ok, what):
    print(("PASS: " if ok else "FAIL: ") + what)
    if not ok:
        failures.append(what)


def python_with_matplotlib():
    for py in (sys.executable, "/usr/bin/python3"):
        if os.access(py, os.X_OK) and subprocess.run([py, "-c", "import matplotlib"], capture_output=True).returncode == 0:
            return py
    return None


def main():
    py = python_with_matplotlib()
    if not py:
        print("SKIP: no matplotlib")
        return 77
    with tempfile.TemporaryDirectory() as tmp:
        strong = os.path.join(RESULTS, "NVIDIA-H200x4-strong.csv")
        out = os.path.join(tmp, "strong")
        p = subprocess.run([py, PLOT, strong, "-o", out, "--title-prefix", "4x H200: "], capture_output=True, text=True)
        files = sorted(os.path.basename(f) for f in glob.glob(os.path.join(out, "*")))
        want = sorted(f"strong-table-{op}-nvidia-h200x4-{what}.{ext}" for op in ("heat", "jacobi")
                      for what in ("speedup", "efficiency") for ext in ("png", "svg"))
        check(p.returncode == 0 and files == want, f"strong table: 8 figures ({p.returncode}, {files}, {p.stderr[-300:]})")
        svg = open(os.path.join(out, "strong-table-heat-nvidia-h200x4-speedup.svg"), encoding="utf-8").read() if files == want else ""
        labels = [f"{n}^3 {m}" for n in (128, 256, 512, 1024) for m in ("T1", "S4-auto")]
        check(all(lab in svg for lab in labels), "the heat speedup figure has every global size and mode")
        check("2 ranks per GPU (MPS)" in svg and "NVIDIA-H200x4" in svg and "4x H200: fdmini strong scaling, heat" in svg,
              "the MPS runs' legend, the device from the file name, the title")
        # a table without its speedup column is refused, one line
        bad = os.path.join(tmp, "X-strong.csv")
        with open(strong, newline="", encoding="utf-8") as f:
            rows = list(csv.reader(f))
        i = rows[0].index("speedup")
        with open(bad, "w", newline="", encoding="utf-8") as f:
            csv.writer(f).writerows([r[:i] + r[i + 1:] for r in rows])
        p = subprocess.run([py, PLOT, bad, "-o", os.path.join(tmp, "bad")], capture_output=True, text=True)
        check(p.returncode == 1 and p.stderr.count("\n") == 1 and "plot.py: error:" in p.stderr,
              f"a strong table without speedup: exit 1, one line ({p.returncode}: {p.stderr.strip()[:200]})")
        weak = os.path.join(RESULTS, "NVIDIA-H200x4-weak.csv")
        out = os.path.join(tmp, "weak")
        p = subprocess.run([py, PLOT, weak, "-o", out], capture_output=True, text=True)
        pngs = glob.glob(os.path.join(out, "*.png"))
        check(p.returncode == 0 and len(pngs) == 8 and len(glob.glob(os.path.join(out, "*"))) == 16,
              f"weak table: efficiency, phases, bandwidth, hidden of heat and jacobi ({p.returncode}, {len(pngs)} PNGs)")
    print(f"plot tables test: {'all passed' if not failures else f'{len(failures)} failed'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

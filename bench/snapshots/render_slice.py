#!/usr/bin/python3
"""render_slice.py - renders one slice of an fdmini snapshot to PNG.

Reads DIR/snapshots.xmf (XDMF 3 written by fdmini --snapshot-every N --snapshot-dir DIR): the
grid dimensions (z y x), precision, endianness, spacing and the raw file of each step; or a raw
file directly with --dims NX,NY,NZ. Plots the plane through --index (default the middle)
perpendicular to --axis (default z) with a symmetric colour scale.

  render_slice.py DIR/snapshots.xmf [--step S] [--axis z|y|x] [--index I] -o out.png  # S: the last
  render_slice.py snap_000100.raw --dims 255,255,255 [--precision 8] -o out.png
  render_slice.py ... --save-npy slice.npz      # also (or, without matplotlib, only) the slice
  render_slice.py --npy slice.npz -o out.png    # render a saved slice

Needs numpy: without it, one line saying what to install and exit 1, as bench/model/needs.py
says it (inline: this script is installed alone, P/share/fdmini/bench/snapshots/).
"""
import argparse
import os
import sys
import xml.etree.ElementTree as ET

try:
    import numpy as np
except ImportError:
    sys.exit(f"render_slice.py: error: numpy not installed for {sys.executable} (Debian/Ubuntu: "
             "apt-get install python3-matplotlib; LUMI/Frontier: module load cray-python; "
             "or pip install numpy matplotlib)")


def read_xdmf(path):
    """[(step, time, file, dims(z,y,x), dtype, spacing(z,y,x))] of every snapshot listed."""
    root = ET.parse(path).getroot()
    out = []
    for g in root.findall("./Domain/Grid/Grid"):
        item = g.find("./Attribute/DataItem")
        dims = tuple(int(v) for v in item.get("Dimensions").split())
        prec = int(item.get("Precision", "8"))
        endian = "<" if item.get("Endian", "Little") == "Little" else ">"
        dtype = np.dtype(f"{endian}f{prec}")
        spacing = tuple(float(v) for v in g.findall("./Geometry/DataItem")[1].text.split())
        step = int(g.get("Name").split("_")[-1])
        time = float(g.find("Time").get("Value"))
        out.append((step, time, os.path.join(os.path.dirname(path), item.text.strip()), dims, dtype, spacing))
    return out


def load_slice(raw, dims, dtype, axis, index):
    """The plane `index` (0-based) perpendicular to axis of the (z, y, x) array in raw."""
    u = np.memmap(raw, dtype=dtype, mode="r", shape=dims)
    ax = {"z": 0, "y": 1, "x": 2}[axis]
    index = dims[ax] // 2 if index is None else index
    if not 0 <= index < dims[ax]:
        sys.exit(f"render_slice.py: error: --index {index}: the grid has planes 0..{dims[ax] - 1} along {axis}")
    plane = np.take(u, index, axis=ax)
    return np.array(plane, dtype=np.float64), index


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("input", nargs="?", help="snapshots.xmf or a raw snapshot")
    ap.add_argument("--step", type=int, help="step to render (default: the last listed)")
    ap.add_argument("--axis", choices="zyx", default="z", help="normal of the slice (default z)")
    ap.add_argument("--index", type=int, help="0-based plane index (default the middle)")
    ap.add_argument("--dims", help="NX,NY,NZ of a raw file")
    ap.add_argument("--precision", type=int, default=8, help="bytes per value of a raw file")
    ap.add_argument("--npy", help="render a slice saved with --save-npy")
    ap.add_argument("--save-npy", help="also save the slice (and its metadata) to this file (.npz format, the name as given)")
    ap.add_argument("--title", default=None)
    ap.add_argument("-o", "--output", help="PNG to write")
    a = ap.parse_args()

    meta = {}
    if a.npy:
        d = np.load(a.npy, allow_pickle=False)
        plane, meta = d["plane"], {k: d[k].item() for k in d.files if k != "plane"}
    else:
        if not a.input:
            ap.error("give snapshots.xmf, a raw file or --npy")
        if a.input.endswith(".xmf"):
            snaps = read_xdmf(a.input)
            if not snaps:
                sys.exit(f"{a.input}: no snapshot listed")
            pick = [s for s in snaps if a.step is None or s[0] == a.step]
            if not pick:
                sys.exit(f"{a.input}: no snapshot of step {a.step} (have {[s[0] for s in snaps]})")
            step, time, raw, dims, dtype, spacing = pick[-1]
        else:
            if not a.dims:
                ap.error("a raw file needs --dims NX,NY,NZ")
            nx, ny, nz = (int(v) for v in a.dims.split(","))
            step, time, raw, dims, dtype, spacing = -1, float("nan"), a.input, (nz, ny, nx), np.dtype(f"<f{a.precision}"), (1.0, 1.0, 1.0)
        expect = int(np.prod(dims)) * dtype.itemsize
        if os.path.getsize(raw) != expect:
            sys.exit(f"{raw}: {os.path.getsize(raw)} bytes, expected {expect} for {dims} of {dtype}")
        plane, index = load_slice(raw, dims, dtype, a.axis, a.index)
        meta = dict(step=step, time=time, axis=a.axis, index=index, raw=os.path.basename(raw),
                    dims=" ".join(str(v) for v in dims))
        if a.save_npy:  # through a file: np.savez would append .npz to the name, which --npy then misses
            with open(a.save_npy, "wb") as f:
                np.savez(f, plane=plane, **{k: np.array(v) for k, v in meta.items()})
    if not a.output:
        return
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        sys.exit("matplotlib is missing: use --save-npy here and --npy elsewhere")
    vmax = float(np.abs(plane).max()) or 1.0
    labels = {"z": ("x", "y"), "y": ("x", "z"), "x": ("y", "z")}[meta["axis"]]
    fig, ax = plt.subplots(figsize=(6.4, 5.6), dpi=120)
    im = ax.imshow(plane, origin="lower", cmap="seismic", vmin=-vmax, vmax=vmax, interpolation="nearest")
    ax.set_xlabel(f"{labels[0]} index")
    ax.set_ylabel(f"{labels[1]} index")
    title = a.title or "fdmini snapshot"
    ax.set_title(f"{title}\nstep {meta['step']}, t = {meta['time']:.4g}, {meta['axis']} = {meta['index']} "
                 f"(grid {meta['dims']} z y x)", fontsize=9)
    fig.colorbar(im, ax=ax, label="u")
    fig.tight_layout()
    fig.savefig(a.output)
    print(f"wrote {a.output}: {meta['axis']}-slice {meta['index']} of {meta['raw']}, max |u| = {vmax:.4g}")


if __name__ == "__main__":
    main()

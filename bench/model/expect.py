#!/usr/bin/env python3
"""expect.py - the page's predictions for LUMI-G and Frontier: the tables and plots of
docs/scaling.md, "What to expect on LUMI-G and Frontier".

    expect.py            write the tables into docs/scaling.md (between its model markers)
                         and the plots into docs/scaling-model/
    expect.py --check    exit 1 where the page's tables differ from what the model gives now
    expect.py --print    print the tables, write nothing

Studies (heat, double, one step per pass, one ghost layer, one rank per GCD, 8 per node): weak
scaling with 512^3 and 256^3 per GCD, strong scaling of 1024^3 and 2048^3, on 1 to 1,024 nodes;
for each path of model.py (today: host-driven; signalled: one node only; proxy) the step and
the efficiency, where each falls below 90 % and 50 % and what the slowest rank's step is then
made of. Every parameter is the site file's (bench/model/sites/), listed with its source.
"""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import needs  # noqa: E402

if __name__ == "__main__":
    needs.require(__file__)

import inputs  # noqa: E402
import model  # noqa: E402
import predict  # noqa: E402
from inputs import ModelError  # noqa: E402

PAGE = os.path.join(inputs.ROOT, "docs", "scaling.md")
PLOTS = os.path.join(inputs.ROOT, "docs", "scaling-model")
BEGIN = "<!-- model: written by bench/model/expect.py from the site files; edit those, not this -->"
END = "<!-- /model -->"
NODES = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]
STUDIES = [("weak", 512), ("weak", 256), ("strong", 1024), ("strong", 2048)]
SITES = ["lumi-g", "frontier"]
OP = "heat"


def study_rows(site, kind, n):
    size = (n, n, n)
    return [predict.scenario(site, OP, nodes, local=size if kind == "weak" else None,
                             global_size=size if kind == "strong" else None) for nodes in NODES]


def why(res, site) -> str:
    """What the slowest rank's step is made of where its efficiency is lost: the launch floor
    (compute-bound, the block too small for the launch), or the largest part of the exchange
    chain (launches, latency, NIC bandwidth)."""
    if res["exchange_us"] <= res["compute_us"]:
        return "launch floor (F_g per pass beside a small block)"
    parts = res["parts"]
    name = max(parts, key=parts.get)
    text = {"launches": "the launch chain", "latency": "latency", "bandwidth": "NIC bandwidth",
            "measured F_p": "the link's floor F_p", "measured F_m": "the proxy's floor F_m"}[name]
    shares = ", ".join(f"{k} {v:.1f}" for k, v in sorted(parts.items(), key=lambda kv: -kv[1]) if v > 0)
    return f"{text} ({shares} us)"


def crossings(rows, path, site):
    """(nodes, why) where the path's efficiency first falls below 0.9 and 0.5 (None: never)."""
    out = []
    for limit in (0.9, 0.5):
        hit = None
        for r in rows:
            res = r["paths"][path]
            if res is not None and res["eff"] < limit:
                hit = (r["nodes"], why(res, site))
                break
        out.append(hit)
    return out


def fmt_nodes_why(hit, last_path) -> str:
    if hit is None:
        return f"not up to {NODES[-1]} nodes" if last_path else "(one node only)"
    return f"{hit[0]} nodes: {hit[1]}"


def table(rows, kind) -> list:
    lines = ["| nodes | GCDs | process grid | node box | MB leaving a node per step | today us (eff) | "
             "signalled us (eff) | proxy us (eff) |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        cells = []
        for p in model.PATHS:
            res = r["paths"][p]
            cells.append("-" if res is None else f"{res['step_us']:.1f} ({res['eff']:.3f})")
        lines.append(f"| {r['nodes']} | {r['ranks']} | {predict.fmt_grid(r['P'])} | "
                     f"{predict.fmt_grid(r['B'])} | {r['node_bytes'] / 1e6:.2f} | " + " | ".join(cells) + " |")
    return lines


def params(site) -> list:
    lines = ["| parameter | value | source |", "|---|---|---|"]
    for k, v in site.p.items():
        if k == "fused_speedup":
            v = "(T > 1 only; not used here)"
        lines.append(f"| `{k}` | {v} | {site.source[k]} |")
    return lines


def same_sites(results) -> bool:
    """Whether LUMI-G's and Frontier's predictions are equal (their site files differ in sources
    only): then the page and the plots show one set for both."""
    return all(table(results[("lumi-g",) + s][0], s[0]) == table(results[("frontier",) + s][0], s[0])
               and results[("lumi-g",) + s][1] == results[("frontier",) + s][1] for s in STUDIES)


def section(results, sites) -> str:
    """The generated part of the page: one table per study (LUMI-G's; Frontier's where it
    differs), the crossings, the parameters."""
    out = []
    same = same_sites(results)
    for kind, n in STUDIES:
        what = f"{n}^3 per GCD" if kind == "weak" else f"{n}^3 global"
        for sname in (["lumi-g"] if same else SITES):
            rows = results[(sname, kind, n)][0]
            title = "LUMI-G and Frontier" if same else sites[sname].name
            out += [f"**{kind.capitalize()} scaling, {what}, {title}** "
                    f"([plot](scaling-model/{sname}-{kind}-{n}.png)): us per step of the slowest "
                    f"rank, efficiency in brackets.", ""]
            out += table(rows, kind) + [""]
    out += ["**Where each path falls below 90 % and 50 %**, and what the slowest rank's step is "
            "made of there:", "", "| study | path | below 90 % | below 50 % |", "|---|---|---|---|"]
    for kind, n in STUDIES:
        what = f"{kind} {n}^3" + (" per GCD" if kind == "weak" else "")
        for sname in (["lumi-g"] if same else SITES):
            crosses = results[(sname, kind, n)][1]
            for p in model.PATHS:
                c90, c50 = crosses[p]
                last = p != "signalled"
                out.append(f"| {what}{'' if same else ', ' + sites[sname].name} | {p} | "
                           f"{fmt_nodes_why(c90, last)} | {fmt_nodes_why(c50, last)} |")
    out += ["", f"**Parameters** (`bench/model/sites/lumi-g.json`; `frontier.json` has the same "
            f"values{'' if same else ' except where the tables differ'}, with Frontier's sources):", ""]
    out += params(sites["lumi-g"])
    return "\n".join(out) + "\n"


def compute():
    sites = {s: inputs.load_site(s) for s in SITES}
    results = {}
    for sname in SITES:
        for kind, n in STUDIES:
            rows = study_rows(sites[sname], kind, n)
            results[(sname, kind, n)] = (rows, {p: crossings(rows, p, sites[sname]) for p in model.PATHS})
    return sites, results


def plot(results, sites, out_dir):
    needs.require(__file__, ("numpy", "matplotlib"))
    import matplotlib  # pylint: disable=import-outside-toplevel
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # pylint: disable=import-outside-toplevel
    os.makedirs(out_dir, exist_ok=True)
    written = []
    styles = {"today": ("tab:red", "o"), "signalled": ("tab:green", "s"), "proxy": ("tab:blue", "^")}
    same = same_sites(results)
    for (sname, kind, n), (rows, _) in sorted(results.items()):
        if same and sname != "lumi-g":
            continue
        title = "LUMI-G and Frontier" if same else sites[sname].name
        fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4.4))
        for p in model.PATHS:
            pts = [(r["nodes"], r["paths"][p]) for r in rows if r["paths"][p] is not None]
            if not pts:
                continue
            color, marker = styles[p]
            x = [q[0] for q in pts]
            a1.plot(x, [q[1]["step_us"] for q in pts], color=color, marker=marker, label=p)
            a2.plot(x, [q[1]["eff"] for q in pts], color=color, marker=marker, label=p)
        for ax in (a1, a2):
            ax.set_xscale("log", base=2)
            ax.set_xticks(NODES)
            ax.set_xticklabels([str(v) for v in NODES])
            ax.minorticks_off()
            ax.set_xlabel("nodes (8 GCDs each)")
            ax.grid(True, alpha=0.3)
        a1.set_yscale("log")
        a1.set_ylabel("step of the slowest rank [us] (model)")
        a2.axhline(0.9, color="0.5", linestyle="--", linewidth=1)
        a2.axhline(0.5, color="0.5", linestyle=":", linewidth=1)
        a2.set_ylim(0, 1.05)
        a2.set_ylabel("weak efficiency T_alone / T_N" if kind == "weak" else "strong efficiency T_1 / (R T_N)")
        a2.legend(title="path", loc="lower left")
        what = f"{n}^3 per GCD" if kind == "weak" else f"{n}^3 global"
        fig.suptitle(f"fdmini model, {title}: {kind} scaling, heat, {what}, double, "
                     f"T = S = 1 (bench/model/expect.py)", fontsize=11)
        fig.tight_layout()
        path = os.path.join(out_dir, f"{sname}-{kind}-{n}.png")
        fig.savefig(path, dpi=100, metadata={"Software": None})
        plt.close(fig)
        written.append(path)
    return written


def page_section(text: str, path: str) -> str:
    if BEGIN not in text or END not in text:
        raise ModelError(f"{path}: no model markers ({BEGIN} ... {END})")
    return text.split(BEGIN, 1)[1].split(END, 1)[0].strip("\n") + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0].split(" - ", 1)[1],
                                 epilog=__doc__.split("\n\n", 1)[1],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--check", action="store_true")
    g.add_argument("--print", action="store_true")
    ap.add_argument("--page", default=PAGE, help=argparse.SUPPRESS)
    ap.add_argument("--plots", default=PLOTS, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    try:
        sites, results = compute()
        text = section(results, sites)
        if a.print:
            print(text)
            return 0
        try:
            with open(a.page, encoding="utf-8") as f:
                page = f.read()
        except OSError as err:
            raise ModelError(f"{a.page}: cannot read: {err.strerror}") from None
        old = page_section(page, a.page)
        if a.check:
            if old != text:
                print(f"expect.py: {a.page}: the model's tables changed; run bench/model/expect.py",
                      file=sys.stderr)
                return 1
            print(f"expect.py: {a.page}: the tables are the model's")
            return 0
        new = page.split(BEGIN, 1)[0] + BEGIN + "\n" + text + END + page.split(END, 1)[1]
        with open(a.page, "w", encoding="utf-8") as f:
            f.write(new)
        print(f"expect.py: wrote the tables into {a.page}")
        for p in plot(results, sites, a.plots):
            print(f"expect.py: wrote {p}")
    except ModelError as err:
        print(f"expect.py: error: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""study.py - run (local) or submit (LUMI-G, Frontier) a weak or strong scaling study of fdmini.

One command runs the single-GCD baseline (1 rank) and every requested scale, each repeated,
for every variant (overlap / no-overlap, GPU-aware / staged MPI, the halo path: MPI, node-local
IPC, or across nodes today's host-driven exchange against the off-node proxy's one-launch pass;
deep halos of width S and T steps per pass). Every run writes fdmini's
JSON record (schema fdmini-run/1) into the output folder under a descriptive name, and the
folder's `study.json` manifest says what was asked for and which command made each record.
`collect.py` turns the folder into a CSV and `plot.py` into plots.

    study.py run --machine local --study weak --size 64,64,64 --scales 1,2,4,8 --repeats 3
    study.py run --machine lumi-g --study strong --size 1024,1024,1024 --nodes 1,2,4 \\
        --repeats 3 --account project_465000000

Weak scaling passes `--local NX,NY,NZ` (the size of every GCD's block); strong scaling passes
`--global NX,NY,NZ` (the whole grid, split over the ranks). On `local` the runs start here
with `mpirun -n N --oversubscribe` (or `srun -n N` with `--launcher srun`); on `lumi-g` and
`frontier` one sbatch script per node count is written into the output folder and submitted with
`sbatch` (only written with `--dry-run`), using each centre's launch conventions; the scales of
1..8 GCDs share the one-node job (each would be billed a whole node).
"""

import argparse
import datetime
import itertools
import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

if sys.version_info < (3, 8):
    sys.exit("study.py: error: needs Python 3.8 or newer "
             "(on LUMI/Frontier: module load cray-python)")

MANIFEST = "study.json"
MANIFEST_SCHEMA = "fdmini-study/1"
# The LUMI software stack the recipes pin (the default and recommended one since January 2026);
# a `module load LUMI` without a version follows the default as it moves, which LUMI advises
# against: --setup refuses it.
LUMI_STACK = "LUMI/25.03"
UNPINNED_LUMI = re.compile(r"\bmodule\s+(?:load|add|swap)\b[^;&|]*?\sLUMI(?=\s|$|;|&|\|)")
REPO_ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
# Installed (cmake --install, P/share/fdmini/bench/scaling/study.py): P/bin/fdmini.
INSTALLED_BINARY = os.path.normpath(os.path.join(REPO_ROOT, "..", "..", "bin", "fdmini"))
IN_CHECKOUT = os.path.exists(os.path.join(REPO_ROOT, "CMakeLists.txt"))
DEFAULT_BINARY = {
    "local": os.path.join(REPO_ROOT, "build", "fdmini") if IN_CHECKOUT else INSTALLED_BINARY,
    "lumi-g": os.path.join(REPO_ROOT, "build-lumi", "fdmini") if IN_CHECKOUT else INSTALLED_BINARY,
    "frontier": (os.path.join(REPO_ROOT, "build-frontier", "fdmini") if IN_CHECKOUT
                 else INSTALLED_BINARY),
}
# The launch conventions of LUMI-G and Frontier (ranks per node, CPU map, GPU wrapper or flags,
# partition, environment, sbcast from a node count up) are those of launch/lumi-g.sbatch and
# launch/frontier.sbatch: one file, launch/site-conventions.sh (installed: P/share/fdmini/launch),
# read here by sourcing it with bash; the job scripts source a copy of it and call its functions.
LAUNCH_DIR = os.path.join(REPO_ROOT, "launch")
SITE_FILE = "site-conventions.sh"
SITE_KEY = {"lumi-g": "LUMI_G", "frontier": "FRONTIER"}
_SITE: Dict[str, str] = {}


def site(name: str) -> str:
    """The value of FDMINI_SITE_<name> in launch/site-conventions.sh (read once, with bash)."""
    if not _SITE:
        path = os.path.join(LAUNCH_DIR, SITE_FILE)
        if not os.path.isfile(path):
            raise StudyError(f"{path} not found: the launch conventions of LUMI-G and Frontier "
                             "(launch/ of the checkout, or P/share/fdmini/launch installed)")
        script = ('. "$1" || exit 1; for v in "${!FDMINI_SITE_@}"; do '
                  'printf "%s=%s\\0" "$v" "${!v}"; done')
        try:
            proc = subprocess.run(["bash", "-c", script, "bash", path], capture_output=True,
                                  text=True, check=False, timeout=60)
        except (OSError, subprocess.SubprocessError) as err:
            raise StudyError(f"cannot read {path} with bash: {err}") from None
        if proc.returncode != 0:
            raise StudyError(f"cannot read {path} with bash: {proc.stderr.strip()}")
        for item in proc.stdout.split("\0"):
            if "=" in item:
                key, val = item.split("=", 1)
                _SITE[key[len("FDMINI_SITE_"):]] = val
    if name not in _SITE:
        raise StudyError(f"{os.path.join(LAUNCH_DIR, SITE_FILE)} has no FDMINI_SITE_{name}")
    return _SITE[name]


def gcds_per_node() -> int:
    """Ranks (GCDs) per node of LUMI-G and Frontier."""
    return int(site("GCDS_PER_NODE"))


def one_gcd_per_rank(machine: str) -> Optional[str]:
    """How the jobs of `machine` give each rank only its own GCD, if they do (None on local and
    under the site's default layout, where every rank sees its node's GCDs: docs/multi-gpu.md):
    a rank cannot then map another GCD's memory, so fdmini refuses --halo-path ipc there and
    the study leaves it out."""
    if machine == "lumi-g" and site("LUMI_G_SELECT_GPU") == "1":
        return f"{site('LUMI_G_GPU_WRAPPER')}: ROCR_VISIBLE_DEVICES=$SLURM_LOCALID"
    if machine == "frontier" and any(f.startswith(("--gpus-per-task", "--gpu-bind", "--ntasks-per-gpu"))
                                     for f in shlex.split(site("FRONTIER_GPU_FLAGS"))):
        return site("FRONTIER_GPU_FLAGS")
    return None


def gpu_map_args(machine: str) -> List[str]:
    """fdmini's --gpu-map of the site's layout (fdmini_site_gpu_map of site-conventions.sh,
    without its FDMINI_GPU_MAP override: a study's jobs follow the conventions)."""
    m = site(f"{SITE_KEY[machine]}_GPU_MAP")
    return ["--gpu-map", m] if m else []


class StudyError(Exception):
    """A problem the user can fix (bad option, missing file, failed run): printed, exit 1."""


@dataclass(frozen=True)
class Variant:
    """One configuration of the halo exchange that every scale is run with."""

    name: str
    overlap: bool
    mpi_gpu: Optional[str]  # None: fdmini's default (auto)
    halo_path: Optional[str] = None  # None: fdmini's default (auto)
    halo_width: Optional[int] = None  # None: fdmini's default (1)
    fuse: Optional[str] = None  # "1".."4" or "auto"; None: fdmini's default (1)

    def fdmini_args(self) -> List[str]:
        """The fdmini options that select this variant."""
        args = [] if self.overlap else ["--no-overlap"]
        if self.halo_path:
            args += ["--halo-path", self.halo_path]
        if self.mpi_gpu:
            args += ["--mpi-gpu", self.mpi_gpu]
        if self.halo_width is not None:
            args += ["--halo-width", str(self.halo_width)]
        if self.fuse is not None:
            args += ["--fuse", self.fuse]
        return args


@dataclass(frozen=True)
class Run:
    """One fdmini run of the study: a scale, a variant and a repeat."""

    ranks: int
    nodes: Optional[int]  # nodes of lumi-g/frontier, None on local
    variant: Variant
    repeat: int
    record: str  # JSON file name, relative to the output folder
    fdmini_args: Tuple[str, ...]

    @property
    def log(self) -> str:
        """File name of the run's stdout+stderr (local runs and batch jobs)."""
        return self.record[: -len(".json")] + ".log"


# ---------------------------------------------------------------------------------------------
# option parsing


def parse_size(text: str) -> Tuple[int, int, int]:
    """'NX,NY,NZ' (or NXxNYxNZ) -> three positive ints."""
    parts = text.replace("x", ",").split(",")
    try:
        vals = tuple(int(p) for p in parts)
    except ValueError:
        vals = ()
    if len(vals) != 3 or min(vals) < 1:
        raise argparse.ArgumentTypeError(
            f"expected three positive integers NX,NY,NZ, got '{text}'")
    return vals  # type: ignore[return-value]


def parse_counts(text: str) -> List[int]:
    """'1,2,4,8' -> sorted list of distinct positive ints."""
    try:
        vals = [int(p) for p in text.split(",") if p.strip()]
    except ValueError:
        vals = []
    if not vals or min(vals) < 1:
        raise argparse.ArgumentTypeError(
            f"expected a comma-separated list of positive integers such as 1,2,4,8, got '{text}'")
    return sorted(set(vals))


def parse_choices(allowed: Sequence[str]):
    """An argparse type: a comma-separated list of values from `allowed`, order kept."""

    def parse(text: str) -> List[str]:
        vals = [p.strip() for p in text.split(",") if p.strip()]
        bad = [v for v in vals if v not in allowed]
        if not vals or bad:
            raise argparse.ArgumentTypeError(
                f"expected a comma-separated list of {', '.join(allowed)}, got '{text}'")
        return list(dict.fromkeys(vals))

    return parse


# fdmini's --kernel grammar (kernels/common.c, fd_kernel_parse), with its words: a spec is
# NAME[:key=value,...], NAME baseline | reordered | zmarch, keys tile, vec, block (BXxBY),
# chunk, strips. tests/bench/test_study_kernel_spec.py holds the two to the same verdicts.
KERNEL_NAMES = ("baseline", "reordered", "zmarch")
KERNEL_MAX_BLOCK = 512


def _spec_int(text: str, lo: int, hi: int) -> Optional[int]:
    """A strict decimal integer in [lo, hi], or None (fd_kernel_parse's spec_int)."""
    if not text or not all("0" <= c <= "9" for c in text):
        return None
    val = int(text)
    return val if lo <= val <= hi else None


def kernel_spec_error(spec: str) -> Optional[str]:
    """None when fdmini's --kernel accepts `spec`, else fdmini's one-line reason."""
    def fail(what: str) -> str:
        return f"kernel spec '{spec}': {what}"

    name, colon, rest = spec.partition(":")
    if name not in KERNEL_NAMES:
        return fail("unknown kernel, expected baseline, reordered or zmarch")
    if not colon:
        return None
    if rest == "":
        return fail("nothing after ':'")
    keys: Dict[str, int] = {}
    items = rest.split(",")
    for i, item in enumerate(items):
        if item == "" and i == len(items) - 1:
            return fail("nothing after ','")
        key, eq, val = item.partition("=")
        if not eq:
            return fail("expected key=value after ':' and each ','")
        if key == "tile":
            v = _spec_int(val, 1, 16)
            if v is None or v & (v - 1):
                return fail("tile must be 1, 2, 4, 8 or 16")
        elif key == "vec":
            v = _spec_int(val, 1, 2)
            if v is None:
                return fail("vec must be 1 or 2")
        elif key == "block":
            bx, x, by = val.partition("x")
            vx = _spec_int(bx, 1, KERNEL_MAX_BLOCK) if x else None
            vy = _spec_int(by, 1, KERNEL_MAX_BLOCK) if x else None
            if vx is None or vy is None or vx * vy > KERNEL_MAX_BLOCK:
                return fail(f"block must be BXxBY with BX*BY <= {KERNEL_MAX_BLOCK} threads")
            v = vx
        elif key == "chunk":
            v = _spec_int(val, 1, 1 << 20)
            if v is None:
                return fail("chunk must be a number of planes >= 1")
        elif key == "strips":
            v = _spec_int(val, 1, 1 << 20)
            if v is None:
                return fail("strips must be >= 1")
        else:
            return fail("unknown key, expected tile, vec, block, chunk or strips")
        keys[key] = v
    if name == "baseline" and (keys.get("tile", 0) > 1 or keys.get("vec", 0) > 1
                               or "chunk" in keys or "strips" in keys):
        return fail("baseline takes only block")
    if name == "reordered" and "chunk" in keys:
        return fail("chunk applies to zmarch only")
    if name == "zmarch" and keys.get("tile", 0) > 2:
        return fail("zmarch takes tile 1 or 2")
    return None


def kernel_spec(text: str) -> str:
    """An argparse type: a spec fdmini's --kernel accepts, else its reason."""
    why = kernel_spec_error(text)
    if why:
        hint = (" (to let fdmini choose, leave --kernel out: on GPUs its start-up autotune, "
                "--tune auto, is the default)" if text.split(":")[0] == "auto" else "")
        raise argparse.ArgumentTypeError(why + hint)
    return text


def positive_int(text: str) -> int:
    """A positive integer option value."""
    try:
        val = int(text)
    except ValueError:
        val = 0
    if val < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got '{text}'")
    return val


def non_negative_int(text: str) -> int:
    """A non-negative integer option value."""
    try:
        val = int(text)
    except ValueError:
        val = -1
    if val < 0:
        raise argparse.ArgumentTypeError(f"expected a non-negative integer, got '{text}'")
    return val


def build_parser() -> argparse.ArgumentParser:
    """The command line of study.py."""
    parser = argparse.ArgumentParser(
        prog="study.py",
        description="Run or submit a weak or strong scaling study of fdmini (baseline on one "
        "GCD plus every scale, repeated), one JSON record per run and a study.json manifest.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("\n\n", 2)[2] if __doc__ else None,
    )
    sub = parser.add_subparsers(dest="command", metavar="run", required=True)
    run = sub.add_parser(
        "run", help="run or submit a study",
        description="Run (local) or write and submit sbatch scripts (lumi-g, frontier) for a "
        "scaling study. Options that take lists want comma-separated values.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=parser.epilog)
    run.add_argument("--machine", required=True, choices=["lumi-g", "frontier", "local"],
                     help="where: local runs here; lumi-g/frontier write one sbatch script "
                     "per node count (the 1..8-GCD scales share the one-node job)")
    run.add_argument("--study", required=True, choices=["weak", "strong"],
                     help="weak: --size is every GCD's block; strong: --size is the global grid")
    run.add_argument("--size", required=True, type=parse_size, metavar="NX,NY,NZ",
                     help="per-GCD size (weak) or global size (strong)")
    scales = run.add_mutually_exclusive_group(required=True)
    scales.add_argument("--scales", type=parse_counts, metavar="N,N,...",
                        help="rank (GPU/GCD) counts, e.g. 1,2,4,8; 1 (the baseline) is always run")
    scales.add_argument("--nodes", type=parse_counts, metavar="N,N,...",
                        help="lumi-g/frontier only: node counts, one rank per GCD (8 per node, "
                        "launch/site-conventions.sh)")
    run.add_argument("--repeats", type=positive_int, default=3,
                     help="runs of each scale (default 3)")
    run.add_argument("--op", default="laplacian", choices=["laplacian", "heat", "jacobi", "wave"],
                     help="operator (default laplacian)")
    run.add_argument("--variants", type=parse_choices(["overlap", "no-overlap"]),
                     default=["overlap"], metavar="LIST",
                     help="overlap, no-overlap or both (default overlap)")
    run.add_argument("--mpi-gpu", type=parse_choices(["auto", "aware", "staged"]), default=None,
                     metavar="LIST", help="aware, staged, auto or several: each is a variant "
                     "(default: fdmini's own, auto, not named in variant names)")
    run.add_argument("--halo-path", type=parse_choices(["auto", "mpi", "ipc", "mixed", "proxy"]),
                     default=None, metavar="LIST",
                     help="auto, mpi, ipc, mixed, proxy or several: each is a variant (default: "
                     "fdmini's own, auto, not named in variant names); ipc makes one variant "
                     "without --mpi-gpu (an ipc exchange sends no face through MPI) and is left "
                     "out on lumi-g and frontier only where the launch conventions give each "
                     "rank its own GCD alone; across nodes, mixed is today's host-driven exchange "
                     "and proxy the one-launch pass with the faces to other nodes through the "
                     "off-node proxy (left out with no-overlap, which fdmini refuses with it)")
    run.add_argument("--halo-width", type=parse_counts, default=None, metavar="LIST",
                     help="fdmini --halo-width S values, e.g. 1,2,4: each is a variant, named "
                     "widthS (default: fdmini's, 1, not named); heat, jacobi and wave")
    run.add_argument("--fuse", type=parse_choices(["1", "2", "3", "4", "auto"]), default=None,
                     metavar="LIST", help="fdmini --fuse T values, e.g. 1,2,4 or auto: each is a "
                     "variant with every --halo-width, named fuseT (default: fdmini's, 1, not "
                     "named); heat and jacobi. A T that does not divide S is left out (several "
                     "ranks need it)")
    run.add_argument("--iters", type=positive_int, help="fdmini --iters (default: fdmini's, 100)")
    run.add_argument("--warmup", type=non_negative_int, help="fdmini --warmup (default: fdmini's)")
    run.add_argument("--emulate-nodes", type=positive_int, metavar="K",
                     help="local only: every scale of more than K ranks (a multiple of K) runs as "
                     "ranks / K nodes of K ranks (fdmini --test-node-ranks K: no IPC or signalled "
                     "face between them, the process grid laid over them), the smaller scales on "
                     "one node; a multi-node study on one machine, e.g. with --halo-path "
                     "mixed,proxy,auto")
    run.add_argument("--kernel", type=kernel_spec, metavar="SPEC",
                     help="fdmini --kernel SPEC: baseline, reordered or zmarch, with optional "
                     ":key=value,... (tile, vec, block=BXxBY, chunk, strips), e.g. "
                     "zmarch:tile=1,vec=2,block=32x8,chunk=8; checked by fdmini's grammar")
    run.add_argument("--tile", type=positive_int, help="fdmini --tile")
    run.add_argument("--procs", action="append", type=parse_size, default=[], metavar="PX,PY,PZ",
                     help="process grid for the scale with PX*PY*PZ ranks (repeatable; scales "
                     "without one use fdmini's default)")
    run.add_argument("--baseline", action="store_true",
                     help="pass fdmini --baseline (each block alone first: efficiency vs alone "
                     "and hidden share in the records; about doubles the time)")
    run.add_argument("--fdmini-args", default="", metavar="'ARGS'",
                     help="more fdmini options, one shell-quoted string "
                     "(write --fdmini-args='...')")
    run.add_argument("--out", metavar="DIR",
                     help="output folder (default scaling-STUDY-MACHINE-DATE); must not hold "
                     "a study")
    run.add_argument("--binary", metavar="PATH",
                     help="fdmini binary (default: build/fdmini for local, build-lumi/fdmini, "
                     "build-frontier/fdmini of the checkout; installed: PREFIX/bin/fdmini)")
    run.add_argument("--launcher", choices=["mpirun", "srun"], default="mpirun",
                     help="local only: the MPI launcher (--mpiexec, default mpirun) or srun -n N")
    run.add_argument("--mpiexec", default="mpirun", metavar="PATH",
                     help="local, --launcher mpirun: the MPI launcher of the binary's MPI library "
                     "(default mpirun; e.g. mpiexec.mpich for an MPICH build); Open MPI's gets "
                     "--oversubscribe")
    run.add_argument("--launcher-args", default="", metavar="'ARGS'",
                     help="more launcher options, one shell-quoted string "
                     "(write --launcher-args='...')")
    run.add_argument("--timeout", type=positive_int, default=900,
                     help="local only: seconds a run may take before it is killed (default 900)")
    run.add_argument("--account", help="lumi-g/frontier: #SBATCH --account (project; required "
                     "unless SBATCH_ACCOUNT is set)")
    run.add_argument("--partition", help="lumi-g/frontier: #SBATCH --partition "
                     "(default that of launch/site-conventions.sh: standard-g on LUMI-G, batch "
                     "on Frontier)")
    run.add_argument("--time", default="00:30:00", metavar="HH:MM:SS",
                     help="lumi-g/frontier: #SBATCH --time of each job (default 00:30:00)")
    run.add_argument("--setup", action="append", default=[], metavar="LINE",
                     help="lumi-g/frontier: a shell line run first in each job, e.g. "
                     "'module load LUMI/25.03 partition/G rocm/6.3.4' (repeatable; a LUMI stack "
                     "without a version is refused)")
    run.add_argument("--chain", action="store_true",
                     help="lumi-g/frontier: each job depends on the previous (afterany), so "
                     "scales run one after another instead of side by side")
    run.add_argument("--dry-run", action="store_true",
                     help="print the commands (local) or write the sbatch scripts without "
                     "submitting")
    return parser


# ---------------------------------------------------------------------------------------------
# the plan


def make_variants(overlaps: Sequence[str], mpi_gpus: Optional[Sequence[str]],
                  halo_paths: Optional[Sequence[str]] = None,
                  halo_widths: Optional[Sequence[int]] = None,
                  fuses: Optional[Sequence[str]] = None) -> List[Variant]:
    """Every (overlap, halo path, mpi-gpu, halo width, fuse) combination, named e.g. 'overlap',
    'no-overlap-staged', 'overlap-mpi-aware' or 'overlap-width4-fuse2'. --mpi-gpu only shapes
    MPI faces, so the ipc path (which moves none through MPI) is one variant per overlap
    setting, without it. A fuse T > 1 that does not divide the width is left out, and so is the
    proxy path without overlap: fdmini refuses both on several ranks."""
    out = []
    for ov, hp, mg, hw, fu in itertools.product(overlaps, halo_paths or [None], mpi_gpus or [None],
                                                halo_widths or [None], fuses or [None]):
        if hp == "ipc":
            mg = None
        if fu not in (None, "auto", "1") and (hw or 1) % int(fu):
            continue
        if hp == "proxy" and ov == "no-overlap":
            continue
        parts = (ov, hp, mg, None if hw is None else f"width{hw}", None if fu is None else f"fuse{fu}")
        name = "-".join(x for x in parts if x is not None)
        if all(v.name != name for v in out):
            out.append(Variant(name=name, overlap=(ov == "overlap"), mpi_gpu=mg, halo_path=hp,
                               halo_width=hw, fuse=fu))
    return out


def rank_counts(args: argparse.Namespace) -> List[Tuple[int, Optional[int]]]:
    """(ranks, nodes) of every scale, the 1-rank baseline first; nodes is None on local, except
    with --emulate-nodes K: 1 up to K ranks, ranks / K above."""
    if args.nodes is not None:
        if args.machine == "local":
            raise StudyError("--nodes is for lumi-g and frontier; use --scales on local")
        ranks = [n * gcds_per_node() for n in args.nodes]
    else:
        ranks = list(args.scales)
    ranks = sorted(set([1] + ranks))
    out = []
    k = getattr(args, "emulate_nodes", None)
    for r in ranks:
        if args.machine == "local" and k is None:
            out.append((r, None))
        elif args.machine == "local":
            if r > k and r % k:
                raise StudyError(f"--emulate-nodes {k}: {r} ranks do not fill whole nodes of {k} "
                                 f"ranks: use scales of 1..{k} ranks or a multiple of {k}")
            out.append((r, 1 if r <= k else r // k))
        elif r <= gcds_per_node():
            out.append((r, 1))
        elif r % gcds_per_node() == 0:
            out.append((r, r // gcds_per_node()))
        else:
            g = gcds_per_node()
            raise StudyError(f"{r} ranks do not fill whole {args.machine} nodes "
                             f"({g} GCDs each): use 1..{g} or a multiple of {g}")
    return out


def procs_for(args: argparse.Namespace, scales: Sequence[int]) -> Dict[int, Tuple[int, int, int]]:
    """Map rank count -> the user's --procs grid for it; every grid must match a scale."""
    grids: Dict[int, Tuple[int, int, int]] = {}
    for grid in args.procs:
        n = grid[0] * grid[1] * grid[2]
        if n not in scales:
            raise StudyError(f"--procs {','.join(map(str, grid))} has {n} ranks, which is not "
                             f"one of the scales {','.join(map(str, scales))}")
        if n in grids and grids[n] != grid:
            raise StudyError(f"two --procs grids for {n} ranks")
        grids[n] = grid
    return grids


def size_text(size: Sequence[int]) -> str:
    """(12, 12, 12) -> '12x12x12'."""
    return "x".join(str(v) for v in size)


def common_fdmini_args(args: argparse.Namespace) -> List[str]:
    """fdmini options shared by every run of the study (size, operator, steps, kernel...)."""
    out = ["--local" if args.study == "weak" else "--global", ",".join(map(str, args.size)),
           "--op", args.op]
    if args.iters is not None:
        out += ["--iters", str(args.iters)]
    if args.warmup is not None:
        out += ["--warmup", str(args.warmup)]
    if args.kernel:
        out += ["--kernel", args.kernel]
    if args.tile:
        out += ["--tile", str(args.tile)]
    if args.baseline:
        out.append("--baseline")
    try:
        out += shlex.split(args.fdmini_args)
    except ValueError as err:
        raise StudyError(f"--fdmini-args: {err}") from None
    set_here = ["--json", "--local", "--global", "--procs", "--no-overlap", "--mpi-gpu",
                "--halo-path", "--halo-width", "--fuse"]
    if getattr(args, "emulate_nodes", None):
        set_here.append("--test-node-ranks")
    for opt in set_here:
        if any(a == opt or a.startswith(opt + "=") for a in shlex.split(args.fdmini_args)):
            raise StudyError(f"--fdmini-args must not contain {opt}: study.py sets it")
    return out


def plan_runs(args: argparse.Namespace, variants: Sequence[Variant]) -> List[Run]:
    """Every run of the study in the order it runs: repeat, then scale, then variant.

    Repeats are the outer loop on local, so a slow spell of the machine spreads over all
    scales instead of falling on one.
    """
    scales = rank_counts(args)
    grids = procs_for(args, [r for r, _ in scales])
    common = common_fdmini_args(args)
    runs = []
    for rep in range(1, args.repeats + 1):
        for ranks, nodes in scales:
            for var in variants:
                record = (f"{args.study}-{size_text(args.size)}-{args.op}-{var.name}"
                          f"-n{ranks:04d}-r{rep}.json")
                fd = list(common)
                if ranks in grids:
                    fd += ["--procs", ",".join(map(str, grids[ranks]))]
                fd += var.fdmini_args()
                if args.machine == "local" and nodes is not None and nodes > 1:
                    fd += ["--test-node-ranks", str(args.emulate_nodes)]
                runs.append(Run(ranks, nodes, var, rep, record, tuple(fd)))
    return runs


# ---------------------------------------------------------------------------------------------
# local runs


def launcher_args(args: argparse.Namespace) -> List[str]:
    """The user's extra launcher options."""
    try:
        return shlex.split(args.launcher_args)
    except ValueError as err:
        raise StudyError(f"--launcher-args: {err}") from None


_OPEN_MPI_LAUNCHER: Dict[str, bool] = {}


def is_open_mpi_launcher(path: str) -> bool:
    """Whether `path --version` says Open MPI (whose launcher needs --oversubscribe to start
    more ranks than cores; MPICH's Hydra has no such option and refuses it)."""
    if path not in _OPEN_MPI_LAUNCHER:
        try:
            out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30,
                                 check=False)
            text = out.stdout + out.stderr
        except (OSError, subprocess.SubprocessError):
            text = ""
        _OPEN_MPI_LAUNCHER[path] = "Open MPI" in text or "OpenRTE" in text
    return _OPEN_MPI_LAUNCHER[path]


def local_argv(args: argparse.Namespace, binary: str, out_dir: str, run: Run) -> List[str]:
    """The command line of one local run."""
    if args.launcher == "srun":
        launch = ["srun", "-n", str(run.ranks)]
    else:
        launch = [args.mpiexec, "-n", str(run.ranks)]
        if is_open_mpi_launcher(args.mpiexec):
            launch.append("--oversubscribe")
    return (launch + launcher_args(args) + [binary] + list(run.fdmini_args)
            + ["--json", os.path.join(out_dir, run.record)])


def summary_line(record_path: str) -> str:
    """'step 0.012 ms, PASS' from a run's JSON record, or why it could not be read."""
    try:
        with open(record_path, encoding="utf-8") as f:
            rec = json.load(f)
        step = rec["phases_ms"]["step"]["max"]
        ver = rec.get("verification", {})
        check = ver.get("status") or ("PASS" if ver.get("passed") else ("unchecked" if not ver.get("checked") else "FAIL"))
        return f"step {step:.4g} ms (max over ranks), {rec['procs']} grid, verification {check}"
    except (OSError, ValueError, KeyError, TypeError) as err:
        return f"record not readable: {err}"


def run_local(args: argparse.Namespace, binary: str, out_dir: str, runs: Sequence[Run],
              manifest: dict) -> int:
    """Run every run here, one after another; returns the number of failed runs.

    Stops at the first failure: the other runs of a study would most likely fail the same way.
    """
    env = dict(os.environ)
    if args.launcher == "mpirun" and os.geteuid() == 0 and is_open_mpi_launcher(args.mpiexec):
        # Open MPI's mpirun refuses to start as root without these.
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        print("study: running as root: OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1")
    launcher = "srun" if args.launcher == "srun" else args.mpiexec
    if shutil.which(launcher) is None:
        raise StudyError(f"'{launcher}' not found on PATH")
    for i, run in enumerate(runs, 1):
        argv = local_argv(args, binary, out_dir, run)
        cmd = shlex.join(argv)
        print(f"[{i}/{len(runs)}] {cmd}", flush=True)
        entry = manifest_entry(run, argv)
        if args.dry_run:
            continue
        t0 = time.monotonic()
        log_path = os.path.join(out_dir, run.log)
        try:
            with open(log_path, "w", encoding="utf-8") as log:
                proc = subprocess.run(argv, stdout=log, stderr=subprocess.STDOUT, env=env,
                                      timeout=args.timeout, check=False)
            rc = proc.returncode
        except subprocess.TimeoutExpired:
            rc = None
        entry["seconds"] = round(time.monotonic() - t0, 3)
        entry["exit_code"] = rc
        record = os.path.join(out_dir, run.record)
        if rc != 0 and os.path.exists(record):
            # A run that exited non-zero or timed out may have left a record behind: renamed
            # out of the *.json that collect.py and scaling_table.py read, kept to look at.
            os.replace(record, record + ".failed")
            entry["failed_record"] = run.record + ".failed"
        manifest["runs"].append(entry)
        write_manifest(out_dir, manifest)
        if rc == 0 and os.path.exists(record):
            print(f"    ok in {entry['seconds']:.1f} s: "
                  f"{summary_line(os.path.join(out_dir, run.record))}", flush=True)
            continue
        why = (f"timed out after {args.timeout} s" if rc is None
               else f"exit code {rc}" if rc != 0 else "no JSON record written")
        kept = (f"; its record renamed {entry['failed_record']}" if "failed_record" in entry
                else "")
        print(f"study: error: run {i} failed ({why}){kept}; its output ({log_path}) ends with:",
              file=sys.stderr)
        with open(log_path, encoding="utf-8", errors="replace") as log:
            for line in log.readlines()[-15:]:
                print("    | " + line.rstrip(), file=sys.stderr)
        return len(runs) - i + 1
    return 0


# ---------------------------------------------------------------------------------------------
# batch scripts (LUMI-G, Frontier)

def srun_argv(args: argparse.Namespace, binary: str, out_dir: str, run: Run) -> List[str]:
    """The srun line of one run inside a LUMI-G or Frontier job, with the site's binding
    (launch/site-conventions.sh, as launch/lumi-g.sbatch and launch/frontier.sbatch start it).
    In the job script the binary is "$FDMINI_SITE_BINARY": the sbcast copy from
    FDMINI_SITE_SBCAST_NODES nodes up (srun_line)."""
    assert run.nodes is not None
    base = ["srun", f"--nodes={run.nodes}", f"--ntasks={run.ranks}"]
    if args.machine == "lumi-g":
        base += [f"--cpu-bind={site('LUMI_G_CPU_BIND')}"] + launcher_args(args)
        if site("LUMI_G_SELECT_GPU") == "1":
            base += [os.path.join(out_dir, site("LUMI_G_GPU_WRAPPER"))]
    else:  # frontier
        base += [f"--cpus-per-task={site('FRONTIER_CPUS_PER_RANK')}"]
        base += shlex.split(site("FRONTIER_GPU_FLAGS")) + launcher_args(args)
    return (base + [binary] + gpu_map_args(args.machine) + list(run.fdmini_args)
            + ["--json", os.path.join(out_dir, run.record)])


def srun_line(args: argparse.Namespace, binary: str, out_dir: str, run: Run) -> str:
    """srun_argv as a line of the job script, the binary replaced by "$FDMINI_SITE_BINARY"
    (fdmini_site_sbcast sets it: the node-local copy, or the binary itself)."""
    argv = srun_argv(args, binary, out_dir, run)
    i = argv.index(binary, 1)
    return " ".join([shlex.join(argv[:i]), '"$FDMINI_SITE_BINARY"', shlex.join(argv[i + 1:])])


def batch_script(args: argparse.Namespace, binary: str, out_dir: str, nodes: int,
                 runs: Sequence[Run]) -> str:
    """The sbatch script that runs every scale of `nodes` nodes, every variant and repeat. The
    scales of 1..8 GCDs share one one-node job: each would be billed a whole node anyway."""
    ranks = max(r.ranks for r in runs)
    scales = sorted({r.ranks for r in runs})
    name = f"fdmini-{args.study}-N{nodes:04d}"
    per_node = min(ranks, gcds_per_node())
    lines = [
        "#!/bin/bash",
        f"# fdmini {args.study} scaling study on {args.machine}: {nodes} node(s), "
        f"{','.join(map(str, scales))} GCD(s), size {size_text(args.size)} "
        f"{'per GCD' if args.study == 'weak' else 'global'}.",
        "# Written by bench/scaling/study.py; every run writes its JSON record next to this file.",
        f"#SBATCH --job-name={name}",
        f"#SBATCH --nodes={nodes}",
    ]
    if args.machine == "lumi-g":
        lines += [f"#SBATCH --ntasks-per-node={per_node}",
                  f"#SBATCH {site('LUMI_G_SBATCH_GPUS')}",
                  # binding applies to whole-node allocations only (small-g, dev-g share nodes)
                  "#SBATCH --exclusive"]
    else:
        lines += [f"#SBATCH --ntasks={ranks}"]
    lines += [f"#SBATCH --time={args.time}",
              f'#SBATCH --output="{os.path.join(out_dir, name)}-%j.out"']
    partition = args.partition or site(f"{SITE_KEY[args.machine]}_PARTITION")
    if partition:
        lines.append(f"#SBATCH --partition={partition}")
    if args.account:
        lines.append(f"#SBATCH --account={args.account}")
    key = SITE_KEY[args.machine]
    cpus = site(f"{key}_CPUS_PER_RANK")
    # The user's setup lines (module loads) come before `set -u`: Lmod reads unset variables.
    lines += [""] + list(args.setup) + [
        "set -u",
        f"name={name}",
        "# The site's job environment and sbcast, as launch/*.sbatch set them: a copy of",
        "# launch/site-conventions.sh in this folder.",
        f". {shlex.quote(os.path.join(out_dir, SITE_FILE))}",
        f'fdmini_site_env "$name" {key} {shlex.quote(cpus)}',
        f'fdmini_site_sbcast "$name" {shlex.quote(binary)} {nodes} || exit 1',
        f"cd {shlex.quote(out_dir)}",
        "failed=0",
        "",
    ]
    for run in runs:
        cmd = srun_line(args, binary, out_dir, run)
        log = shlex.quote(os.path.join(out_dir, run.log))
        on_fail = f'{{ echo "exit $? (see {run.log})"; failed=$((failed + 1)); }}'
        pre, post = cmd.split(' "$FDMINI_SITE_BINARY" ', 1)
        shown = f'echo {shlex.quote("+ " + pre)} "$FDMINI_SITE_BINARY" {shlex.quote(post)}'
        lines += [shown, f"{cmd} >{log} 2>&1 || {on_fail}"]
    lines += ["", f"fdmini_site_sbcast_cleanup {nodes}",
              f'echo "{name}: $failed of {len(runs)} runs failed"', '[ "$failed" -eq 0 ]', ""]
    return "\n".join(lines)


def submit(script: str, after: Optional[str]) -> str:
    """sbatch SCRIPT (after job AFTER ended, if given); returns the job id."""
    argv = ["sbatch", "--parsable"]
    if after:
        argv.append(f"--dependency=afterany:{after}")
    argv.append(script)
    print("    " + shlex.join(argv), flush=True)
    proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise StudyError(f"sbatch failed (exit {proc.returncode}): {proc.stderr.strip()}")
    return proc.stdout.strip().split(";")[0]


def run_batch(args: argparse.Namespace, binary: str, out_dir: str, runs: Sequence[Run],
              manifest: dict) -> None:
    """Write one sbatch script per node count into out_dir and submit them (unless --dry-run)."""
    if not args.dry_run and shutil.which("sbatch") is None:
        raise StudyError("'sbatch' not found on PATH (use --dry-run to only write the scripts)")
    # The jobs use copies of the launch files, so the folder keeps what its jobs ran with.
    wrapper = args.machine == "lumi-g" and site("LUMI_G_SELECT_GPU") == "1"
    copies = [SITE_FILE] + ([site("LUMI_G_GPU_WRAPPER")] if wrapper else [])
    for fname in copies:
        dest = os.path.join(out_dir, fname)
        shutil.copyfile(os.path.join(LAUNCH_DIR, fname), dest)
        os.chmod(dest, 0o755 if fname != SITE_FILE else 0o644)
    by_nodes: Dict[int, List[Run]] = {}
    for run in runs:
        assert run.nodes is not None
        by_nodes.setdefault(run.nodes, []).append(run)
    # Inside a job: repeat outer, scale, then variant, as on local.
    prev_job = None
    for nodes, job_runs in sorted(by_nodes.items()):
        job_runs = sorted(job_runs, key=lambda r: (r.repeat, r.ranks))
        scales = sorted({r.ranks for r in job_runs})
        script = os.path.join(out_dir, f"job-{args.study}-N{nodes:04d}.sbatch")
        with open(script, "w", encoding="utf-8") as f:
            f.write(batch_script(args, binary, out_dir, nodes, job_runs))
        os.chmod(script, 0o755)
        print(f"study: wrote {script} ({len(job_runs)} runs on {','.join(map(str, scales))} "
              f"GCDs, {nodes} node(s))")
        for run in job_runs:
            print("    " + shlex.join(srun_argv(args, binary, out_dir, run)))
        job = None
        if not args.dry_run:
            job = submit(script, prev_job if args.chain else None)
            print(f"    submitted job {job}")
            prev_job = job
        manifest["jobs"].append({"script": os.path.basename(script), "ranks": scales,
                                 "nodes": nodes, "job_id": job,
                                 "sbcast": nodes >= int(site("SBCAST_NODES"))})
        for run in job_runs:
            entry = manifest_entry(run, srun_argv(args, binary, out_dir, run))
            entry["job_script"] = os.path.basename(script)
            manifest["runs"].append(entry)
    write_manifest(out_dir, manifest)


# ---------------------------------------------------------------------------------------------
# manifest


def manifest_entry(run: Run, argv: Sequence[str]) -> dict:
    """The manifest's description of one run."""
    return {"record": run.record, "log": run.log, "ranks": run.ranks, "nodes": run.nodes,
            "variant": run.variant.name, "repeat": run.repeat, "argv": list(argv),
            "command": shlex.join(argv)}


def new_manifest(args: argparse.Namespace, argv: Sequence[str], binary: str,
                 variants: Sequence[Variant], runs: Sequence[Run]) -> dict:
    """The study.json object before any run."""
    return {
        "schema": MANIFEST_SCHEMA,
        "study": args.study,
        "machine": args.machine,
        "host": socket.gethostname(),
        "created": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "size": list(args.size),
        "size_meaning": "local block of every GCD (--local)" if args.study == "weak"
        else "global grid (--global)",
        "scales": sorted({r.ranks for r in runs}),
        "nodes": sorted({r.nodes for r in runs if r.nodes is not None}) or None,
        "emulated_node_ranks": getattr(args, "emulate_nodes", None),
        "repeats": args.repeats,
        "op": args.op,
        "variants": [{"name": v.name, "overlap": v.overlap, "mpi_gpu": v.mpi_gpu or "auto",
                      "halo_path": v.halo_path or "auto", "halo_width": v.halo_width or 1,
                      "fuse": v.fuse or "1"}
                     for v in variants],
        "binary": binary,
        "launcher": args.launcher if args.machine == "local" else "srun (sbatch)",
        "study_command": shlex.join([os.path.abspath(sys.argv[0])] + list(argv)),
        "dry_run": args.dry_run,
        "jobs": [],
        "runs": [],
    }


def write_manifest(out_dir: str, manifest: dict) -> None:
    """Write study.json atomically (it is rewritten after every local run)."""
    path = os.path.join(out_dir, MANIFEST)
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(manifest, f, indent=2)
        f.write("\n")
    os.replace(tmp, path)


# ---------------------------------------------------------------------------------------------


def next_steps(out_dir: str) -> str:
    """The commands that turn the study's records into tables and plots, with this study.py's
    own collect.py and plot.py by absolute path (the checkout's, or an installation's
    PREFIX/share/fdmini/bench/scaling) and the absolute out_dir: they work from any folder and
    write results.csv, summary.csv and plots/ into the one they run in."""
    here = os.path.dirname(os.path.abspath(__file__))
    collect = shlex.quote(os.path.join(here, "collect.py"))
    plot = shlex.quote(os.path.join(here, "plot.py"))
    return (f"{collect} {shlex.quote(out_dir)} -o results.csv -s summary.csv && "
            f"{plot} summary.csv -o plots")


def prepare_out_dir(args: argparse.Namespace) -> str:
    """The absolute output folder, created; refuses one that already holds a study."""
    out = args.out or "scaling-{}-{}-{}".format(
        args.study, args.machine, datetime.datetime.now().strftime("%Y%m%d-%H%M%S"))
    out = os.path.abspath(out)
    if os.path.exists(os.path.join(out, MANIFEST)):
        raise StudyError(f"{out} already holds a study ({MANIFEST}); choose another --out")
    if os.path.exists(out) and not os.path.isdir(out):
        raise StudyError(f"--out {out} exists and is not a folder")
    os.makedirs(out, exist_ok=True)
    return out


def drop_ipc_where_each_rank_sees_one_gcd(args: argparse.Namespace) -> List[dict]:
    """On lumi-g and frontier with a layout that gives each rank one GCD (not the site's
    default), remove 'ipc' from --halo-path (fdmini refuses the IPC path there); returns what was left out and why, for the manifest. A study of ipc
    alone is an error there."""
    if (args.machine == "local" or not args.halo_path or "ipc" not in args.halo_path
            or one_gcd_per_rank(args.machine) is None):
        return []
    why = (f"each rank sees only its own GCD on {args.machine} ({one_gcd_per_rank(args.machine)}), "
           "so fdmini refuses --halo-path ipc: a rank cannot map another GCD's memory")
    kept = [h for h in args.halo_path if h != "ipc"]
    if not kept:
        raise StudyError(f"--halo-path ipc: {why}; use --halo-path auto or mpi (GPU-aware MPI "
                         "moves the faces)")
    print(f"study: note: --halo-path ipc left out: {why}; the faces go through MPI")
    args.halo_path = kept
    return [{"halo_path": "ipc", "why": why}]


def cmd_run(args: argparse.Namespace, argv: Sequence[str]) -> int:
    """The `run` subcommand."""
    if args.emulate_nodes is not None and args.machine != "local":
        raise StudyError(f"--emulate-nodes is for local; on {args.machine} give --nodes")
    if args.machine == "local":
        for opt in ("account", "partition"):
            if getattr(args, opt):
                raise StudyError(f"--{opt} is for lumi-g and frontier, not local")
        if args.setup or args.chain:
            raise StudyError("--setup and --chain are for lumi-g and frontier, not local")
    elif args.launcher != "mpirun" or args.mpiexec != "mpirun":
        raise StudyError(f"--launcher and --mpiexec are for local; on {args.machine} jobs use srun")
    elif not args.account and not os.environ.get("SBATCH_ACCOUNT"):
        raise StudyError(f"--account is required on {args.machine}: every job is billed to a "
                         "project (e.g. --account project_465000000 on LUMI, --account abc123 on "
                         "Frontier; or set SBATCH_ACCOUNT)")
    for line in args.setup:
        if UNPINNED_LUMI.search(line):
            raise StudyError(f"--setup '{line}' loads the LUMI stack without a version; LUMI "
                             f"says never to do that: name one, e.g. '{LUMI_STACK}'")
    binary = os.path.abspath(args.binary or DEFAULT_BINARY[args.machine])
    if not (os.path.isfile(binary) and os.access(binary, os.X_OK)):
        if args.machine == "local" and not args.dry_run:
            raise StudyError(f"fdmini binary '{binary}' not found or not executable "
                             "(--binary PATH)")
        print(f"study: warning: fdmini binary '{binary}' does not exist here; the jobs need it",
              file=sys.stderr)
    left_out = drop_ipc_where_each_rank_sees_one_gcd(args)
    if (args.halo_width or args.fuse) and args.op == "laplacian":
        raise StudyError("--halo-width and --fuse apply to operators that step in time: give "
                         "--op heat, jacobi or wave")
    if args.fuse and args.fuse != ["1"] and args.op == "wave":
        raise StudyError("--fuse applies to heat and jacobi (the wave steps one at a time)")
    variants = make_variants(args.variants, args.mpi_gpu, args.halo_path, args.halo_width,
                             args.fuse)
    for hw in args.halo_width or []:
        for fu in args.fuse or []:
            if fu not in ("auto", "1") and hw % int(fu):
                why = f"--fuse {fu} does not divide --halo-width {hw}: fdmini refuses it on several ranks"
                print(f"study: note: width {hw} with fuse {fu} left out: {why}")
                left_out.append({"halo_width": hw, "fuse": fu, "why": why})
    if "proxy" in (args.halo_path or []) and "no-overlap" in args.variants:
        why = ("fdmini refuses --halo-path proxy with --no-overlap: the proxy's passes are one "
               "launch, the exchange inside it")
        if not variants:
            raise StudyError(f"--halo-path proxy with --variants no-overlap alone: {why}")
        print(f"study: note: no-overlap with the proxy path left out: {why}")
        left_out.append({"halo_path": "proxy", "overlap": False, "why": why})
    runs = plan_runs(args, variants)
    print(f"study: {args.study} scaling on {args.machine}, size {size_text(args.size)} "
          f"{'per GCD' if args.study == 'weak' else 'global'}, op {args.op}, "
          f"ranks {','.join(str(r) for r in sorted({r.ranks for r in runs}))}, "
          f"variants {','.join(v.name for v in variants)}, {args.repeats} repeat(s): "
          f"{len(runs)} runs")
    if args.machine == "local" and args.dry_run:
        # Print what would run; write nothing.
        out_dir = os.path.abspath(args.out or "DIR")
        for i, run in enumerate(runs, 1):
            print(f"[{i}/{len(runs)}] {shlex.join(local_argv(args, binary, out_dir, run))}")
        return 0
    out_dir = prepare_out_dir(args)
    print(f"study: output folder {out_dir}")
    manifest = new_manifest(args, argv, binary, variants, runs)
    if left_out:
        manifest["left_out"] = left_out
    write_manifest(out_dir, manifest)
    if args.machine == "local":
        t0 = time.monotonic()
        failed = run_local(args, binary, out_dir, runs, manifest)
        if failed:
            print(f"study: {failed} of {len(runs)} runs not done; records so far in {out_dir}",
                  file=sys.stderr)
            return 1
        print(f"study: {len(runs)} runs done in {time.monotonic() - t0:.1f} s; records and "
              f"{MANIFEST} in {out_dir}")
        print(f"study: next: {next_steps(out_dir)}")
    else:
        run_batch(args, binary, out_dir, runs, manifest)
        what = "written (not submitted: --dry-run)" if args.dry_run else "submitted"
        print(f"study: {len(manifest['jobs'])} job script(s) {what}; records will land in "
              f"{out_dir}")
        print(f"study: next, once the jobs are done: {next_steps(out_dir)}")
    return 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point: parse the command line, run the subcommand, turn errors into exit 1."""
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    try:
        return cmd_run(args, argv)
    except StudyError as err:
        print(f"study.py: error: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("study.py: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())

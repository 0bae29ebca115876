"""grid.py - the process grid, each rank's block and node, and the faces that leave each node,
exactly as fdmini makes them. The reference is `src/model/decomp.c` (decomp_resolve_grid,
decomp_split, decomp_check and the node-aware placement of ranks on nodes); keep this module
and that file in step, and compare them with `fdmini --plan` where the binary has it.

What is replicated:

- `dims_create(n, impl)`: MPI_Dims_create(n, 3, {0,0,0}). The two libraries fdmini meets differ
  (checked against Open MPI 4.1.4 and MPICH 4.0.2 for every n up to 20000): Open MPI gives each
  prime factor, largest first, to the smallest dimension so far; MPICH takes, of all
  factorizations d1 >= d2 >= d3, the one with the least d1 - d3, a tie to the larger d1. Cray
  MPICH (LUMI, Frontier) is MPICH's.
- `resolve_grid`: the default grid (MPI_Dims_create's factors, largest to z, then y); where a
  fixed global grid is cut too thin, the least-cut thick enough grid; weak scaling (a block per
  rank) keeps the default.
- `node_blocks` and `rank_coords`: the placement of ranks on nodes. With K ranks on every node
  and more than one node, the node holds a box B = (bx, by, bz) of the process grid, bx*by*bz = K
  and P[d] % B[d] == 0, of least cost sum over d with P[d]/B[d] > 1 of (K/B[d]) A[d], A[d] the
  area of a rank's face across d (the product over e != d of N[e]/P[e], as floats); candidates
  go bx from K down to 1, then by from K/bx down to 1, and a tie keeps the first. Where none
  fits (or with one node, or K = 1), ranks go row-major, z fastest, K consecutive Cartesian
  ranks per node. Rank m*K + l (node m, node-local rank l) sits at coords = mq*B + lq with
  Q = P/B, mq = (m / (Q1 Q2), (m / Q2) % Q1, m % Q2), lq = (l / (B1 B2), (l / B2) % B1, l % B2).
- `plan`: per rank its block (decomp_split: the first N % P blocks one point larger), its
  neighbours in the 6 face directions (with --halo-width 2 also the 12 edges, from 3 the 8
  corners), which are on another node, the bytes of each message, and per node what leaves
  it. Vectorised over ranks (numpy): 8192 ranks in well under a second.
"""
import itertools
from typing import List, Optional, Sequence, Tuple

import numpy as np


class GridError(Exception):
    """A grid fdmini refuses (too thin, counts that do not match): the message says why."""


def counted(n: int, noun: str) -> str:
    """'1 rank', '2 ranks': a count and its noun, as fdmini's messages write them."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


# ---------------------------------------------------------------------------------------------
# MPI_Dims_create


def prime_factors(n: int) -> List[int]:
    """n's prime factors, smallest first, with repeats (12 -> [2, 2, 3])."""
    out, p = [], 2
    while p * p <= n:
        while n % p == 0:
            out.append(p)
            n //= p
        p += 1
    if n > 1:
        out.append(n)
    return out


def dims_create(n: int, impl: str = "mpich") -> Tuple[int, int, int]:
    """MPI_Dims_create(n, 3, {0, 0, 0}) of the MPI library `impl` ('mpich': MPICH and Cray
    MPICH; 'openmpi'), largest first."""
    if n < 1:
        raise GridError(f"MPI_Dims_create: {n} ranks")
    if impl == "openmpi":
        d = [1, 1, 1]
        for p in sorted(prime_factors(n), reverse=True):
            i = d.index(min(d))
            d[i] *= p
        return tuple(sorted(d, reverse=True))
    if impl != "mpich":
        raise GridError(f"MPI_Dims_create: unknown MPI library {impl!r} (mpich or openmpi)")
    best = None
    for a in range(1, n + 1):
        if n % a:
            continue
        for b in range(1, a + 1):
            if (n // a) % b or n // a // b > b:
                continue
            c = n // a // b
            key = (a - c, -a)
            if best is None or key < best[0]:
                best = (key, (a, b, c))
    return best[1]


def default_grid(ranks: int, impl: str = "mpich") -> Tuple[int, int, int]:
    """fdmini's default process grid (P_x, P_y, P_z): MPI_Dims_create's factors, the largest
    to z, then y (decomp.c default_grid)."""
    d = dims_create(ranks, impl)
    return (d[2], d[1], d[0])


# ---------------------------------------------------------------------------------------------
# the global grid and the process grid (decomp_resolve_grid)


def thick_enough(N: Sequence[int], P: Sequence[int], width: int) -> bool:
    """Every block at least 2 points thick, and `width` along a split dimension when width > 2."""
    for d in range(3):
        need = width if P[d] > 1 and width > 2 else 2
        if N[d] // P[d] < need:
            return False
    return True


def least_cut_grid(N: Sequence[int], ranks: int, width: int) -> Optional[Tuple[int, int, int]]:
    """The thick enough grid of `ranks` with the least cut area, sum over d of (P[d] - 1) planes
    of N[e] N[f] points; candidates largest pz first, then largest py, a tie keeps the first."""
    best, found = 0.0, None
    for pz in range(ranks, 0, -1):
        if ranks % pz:
            continue
        for py in range(ranks // pz, 0, -1):
            if (ranks // pz) % py:
                continue
            c = (ranks // pz // py, py, pz)
            if not thick_enough(N, c, width):
                continue
            area = ((c[0] - 1) * (float(N[1]) * N[2]) + (c[1] - 1) * (float(N[0]) * N[2]) +
                    (c[2] - 1) * (float(N[0]) * N[1]))
            if found is None or area < best:
                found, best = c, area
    return found


def resolve_grid(ranks: int, global_size: Optional[Sequence[int]] = None,
                 local: Optional[Sequence[int]] = None, width: int = 1, impl: str = "mpich",
                 procs: Optional[Sequence[int]] = None) -> Tuple[Tuple[int, int, int],
                                                                  Tuple[int, int, int]]:
    """(N, P) as decomp_resolve_grid makes them for a run of `ranks` ranks with --global or
    --local (one of them), --halo-width `width` and optionally --procs. GridError where fdmini
    refuses the run (decomp_resolve_grid, or plan_make's --halo-width against the blocks)."""
    if (global_size is None) == (local is None):
        raise GridError("give a global grid or a block per rank, not both or neither")
    if procs is not None:
        if procs[0] * procs[1] * procs[2] != ranks:
            raise GridError(f"--procs {procs[0]},{procs[1]},{procs[2]} has "
                            f"{counted(procs[0] * procs[1] * procs[2], 'rank')} but the job has {ranks}")
        P = tuple(int(p) for p in procs)
    else:
        P = default_grid(ranks, impl)
    if local is not None:
        N = tuple(int(local[d]) * P[d] for d in range(3))
    else:
        N = tuple(int(v) for v in global_size)
        if procs is None and not thick_enough(N, P, width):
            P = least_cut_grid(N, ranks, width)
            thin = [a for a, n in zip("xyz", N) if n < 2]
            if P is None and thin:  # no number of ranks fits an axis of 1 point: a larger grid
                axes = " and ".join([", ".join(thin[:-1]), thin[-1]] if len(thin) > 1 else thin)
                raise GridError(f"subdomain too thin: the {N[0]} x {N[1]} x {N[2]} grid has 1 point "
                                f"along {axes}, and every block needs 2 or more per dimension on "
                                f"any number of ranks; give --global 2 or more points along {axes}")
            if P is None:
                raise GridError(f"subdomain too thin: no process grid of {counted(ranks, 'rank')} "
                                f"leaves every block of {N[0]} x {N[1]} x {N[2]} 2 or more points per dimension"
                                + (f" and {width} along each split one" if width > 1 else ""))
    for d in range(3):
        if N[d] < 1 or P[d] < 1:
            raise GridError("grid and process grid must be positive")
        if N[d] // P[d] < 2:
            raise GridError(f"subdomain too thin: {counted(N[d], 'point')} over {counted(P[d], 'rank')} in "
                            f"{'xyz'[d]} leaves {N[d] // P[d]} per rank, need at least 2")
    for d in range(3):  # as fd_run refuses it (src/model/plan.c, plan_make)
        if P[d] > 1 and width > N[d] // P[d]:
            raise GridError(f"--halo-width {width}: the thinnest block along {'xyz'[d]} has "
                            f"{N[d] // P[d]} points ({N[d]} over {P[d]} ranks), fewer than the "
                            f"{width} layers a neighbour receives")
    return N, P


def split(N: int, P: int, c):
    """(extent, start) of block c of N points over P (decomp_split); c may be an array."""
    base, rem = N // P, N % P
    c = np.asarray(c)
    n = base + (c < rem)
    start = c * base + np.minimum(c, rem)
    return n, start


# ---------------------------------------------------------------------------------------------
# ranks on nodes


def node_blocks(P: Sequence[int], N: Sequence[int], K: int, nodes: int) -> Optional[Tuple[int, int, int]]:
    """The box B of the process grid every node holds (see the module's docstring), or None
    where ranks go K consecutive Cartesian ranks per node (one node, K = 1, or no box fits)."""
    if nodes <= 1 or K <= 1:
        return None
    A = [float(N[(d + 1) % 3]) / P[(d + 1) % 3] * (float(N[(d + 2) % 3]) / P[(d + 2) % 3])
         for d in range(3)]
    best, best_cost = None, 0.0
    for bx in range(K, 0, -1):
        if K % bx:
            continue
        for by in range(K // bx, 0, -1):
            if (K // bx) % by:
                continue
            B = (bx, by, K // bx // by)
            if any(P[d] % B[d] for d in range(3)):
                continue
            cost = sum((K / B[d]) * A[d] for d in range(3) if P[d] // B[d] > 1)
            if best is None or cost < best_cost:
                best, best_cost = B, cost
    return best


def rank_coords(P: Sequence[int], N: Sequence[int], K: int, nodes: int):
    """(coords, node, local, B): the Cartesian coordinates (R x 3 array) of ranks 0..R-1 (R =
    K * nodes = P_x P_y P_z), each rank's node and node-local rank, and the node box (None:
    K consecutive Cartesian ranks per node, z fastest)."""
    R = int(P[0]) * int(P[1]) * int(P[2])
    if K * nodes != R:
        raise GridError(f"{nodes} node(s) of {K} ranks are {K * nodes} ranks, the grid "
                        f"{P[0]}x{P[1]}x{P[2]} has {R}")
    r = np.arange(R)
    node, local = r // K, r % K
    B = node_blocks(P, N, K, nodes)
    if B is None:
        coords = np.stack([r // (P[1] * P[2]), (r // P[2]) % P[1], r % P[2]], axis=1)
    else:
        Q = [P[d] // B[d] for d in range(3)]
        mq = np.stack([node // (Q[1] * Q[2]), (node // Q[2]) % Q[1], node % Q[2]], axis=1)
        lq = np.stack([local // (B[1] * B[2]), (local // B[2]) % B[1], local % B[2]], axis=1)
        coords = mq * np.asarray(B) + lq
    return coords, node, local, B


# ---------------------------------------------------------------------------------------------
# what each rank sends, and what leaves each node


def regions(width: int) -> List[Tuple[int, int, int]]:
    """The directions a rank exchanges (kernels/faces.h, fd_region_used): the 6 faces at every
    width, the 12 edges from width 2, the 8 corners from width 3."""
    return [d for d in itertools.product((-1, 0, 1), repeat=3)
            if any(d) and sum(map(abs, d)) <= width]


class Plan:
    """One run's layout: per rank (arrays over R ranks) its block `n` (R x 3), node, node-local
    rank, the side mask of neighbours (`sides`, R x 3 x 2: low, high), and per direction of
    `dirs` whether the neighbour exists, is on another node, and the bytes of the message
    (`exists`, `off`, `nbytes`: R x len(dirs)); `peer_local` the node-local rank of the
    neighbour (same node only; -1 elsewhere)."""

    def __init__(self, N, P, K, nodes, width=1, fields=1, real_bytes=8):
        self.N, self.P, self.K, self.nodes = tuple(N), tuple(P), int(K), int(nodes)
        self.width, self.fields, self.real_bytes = int(width), int(fields), int(real_bytes)
        self.coords, self.node, self.local, self.B = rank_coords(P, N, K, nodes)
        R = self.coords.shape[0]
        self.n = np.stack([split(N[d], P[d], self.coords[:, d])[0] for d in range(3)], axis=1)
        # node and local rank of each Cartesian position
        at = np.empty(tuple(P), dtype=np.int64)
        at[self.coords[:, 0], self.coords[:, 1], self.coords[:, 2]] = np.arange(R)
        self.dirs = regions(self.width)
        nd = len(self.dirs)
        self.exists = np.zeros((R, nd), dtype=bool)
        self.off = np.zeros((R, nd), dtype=bool)
        self.nbytes = np.zeros((R, nd), dtype=np.float64)
        self.peer_local = np.full((R, nd), -1, dtype=np.int64)
        unit = float(self.fields * self.real_bytes)
        for j, dv in enumerate(self.dirs):
            c = self.coords + np.asarray(dv)
            inside = np.all((c >= 0) & (c < np.asarray(P)), axis=1)
            cc = np.where(inside[:, None], c, 0)
            peer = at[cc[:, 0], cc[:, 1], cc[:, 2]]
            self.exists[:, j] = inside
            self.off[:, j] = inside & (self.node[peer] != self.node)
            same = inside & ~self.off[:, j]
            self.peer_local[:, j] = np.where(same, self.local[peer], -1)
            ext = np.stack([self.n[:, d] if dv[d] == 0 else np.full(R, self.width)
                            for d in range(3)], axis=1).astype(np.float64)
            self.nbytes[:, j] = np.where(inside, ext.prod(axis=1) * unit, 0.0)
        self.sides = np.zeros((R, 3, 2), dtype=bool)
        for d in range(3):
            self.sides[:, d, 0] = self.coords[:, d] > 0
            self.sides[:, d, 1] = self.coords[:, d] < P[d] - 1

    @property
    def ranks(self) -> int:
        return self.coords.shape[0]

    def faces_off_per_rank(self) -> np.ndarray:
        """Messages each rank sends to another node per exchange."""
        return self.off.sum(axis=1)

    def node_off(self):
        """(messages, bytes) that leave each node per exchange, arrays over nodes."""
        msgs = np.bincount(self.node, weights=self.off.sum(axis=1), minlength=self.nodes)
        byts = np.bincount(self.node, weights=(self.nbytes * self.off).sum(axis=1),
                           minlength=self.nodes)
        return msgs, byts

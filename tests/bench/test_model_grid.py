#!/usr/bin/env python3
"""test_model_grid.py - bench/model/grid.py, the replica of fdmini's process grid and of its
placement of ranks on nodes (src/model/decomp.c): MPI_Dims_create as MPICH 4.0.2 and Open MPI
4.1.4 return it (values printed by both libraries on Debian 12; they differ from 432 ranks on),
the default grid (largest factor to z, then y), the least-cut grid where a fixed global grid is
cut too thin, a --halo-width wider than a block refused, the uneven split, each layout a
bijection of ranks and grid positions, the node boxes (512 ranks in nodes of 8 on 8x8x8: 2x2x2
boxes, at most 3 faces per rank leave the node; 4 per node on 2x2x2: 2x2x1; the fallback of K
consecutive Cartesian ranks where no box fits) and the faces and bytes that leave each node,
counted by hand (deep halos: edges from width 2, corners from 3); 8192 ranks in well under a
second.
Usage: tests/bench/test_model_grid.py     Exit 0 when every check passed (77: no numpy).
"""
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
MODEL = os.path.join(HERE, "..", "..", "bench", "model")
sys.path.insert(0, MODEL)
import needs  # noqa: E402

needs.reexec(__file__)
if not needs.have(("numpy",)):
    print("SKIP: numpy is not installed for this python3 or /usr/bin/python3")
    sys.exit(77)

import numpy as np  # noqa: E402

import checks  # noqa: E402 (tests/bench/checks.py, beside this file)
from checks import check  # noqa: E402
import grid  # noqa: E402

# n: (MPICH 4.0.2, Open MPI 4.1.4), MPI_Dims_create(n, 3, {0,0,0})
DIMS = {1: ((1, 1, 1), (1, 1, 1)), 2: ((2, 1, 1), (2, 1, 1)), 7: ((7, 1, 1), (7, 1, 1)),
        8: ((2, 2, 2), (2, 2, 2)), 12: ((3, 2, 2), (3, 2, 2)), 16: ((4, 2, 2), (4, 2, 2)),
        24: ((4, 3, 2), (4, 3, 2)), 36: ((4, 3, 3), (4, 3, 3)), 96: ((6, 4, 4), (6, 4, 4)),
        128: ((8, 4, 4), (8, 4, 4)), 256: ((8, 8, 4), (8, 8, 4)), 360: ((10, 6, 6), (10, 6, 6)),
        432: ((9, 8, 6), (12, 6, 6)), 504: ((9, 8, 7), (12, 7, 6)), 512: ((8, 8, 8), (8, 8, 8)),
        576: ((9, 8, 8), (12, 8, 6)), 720: ((10, 9, 8), (12, 10, 6)),
        1000: ((10, 10, 10), (10, 10, 10)), 1024: ((16, 8, 8), (16, 8, 8)),
        3696: ((22, 14, 12), (22, 14, 12)), 5040: ((21, 16, 15), (20, 18, 14)),
        6240: ((26, 16, 15), (24, 20, 13)), 8192: ((32, 16, 16), (32, 16, 16)),
        10800: ((27, 20, 20), (30, 20, 18)), 19152: ((38, 24, 21), (36, 28, 19))}

for n, (mp, om) in DIMS.items():
    check(f"MPI_Dims_create({n}) as MPICH: {mp}", grid.dims_create(n, "mpich") == mp, grid.dims_create(n, "mpich"))
    check(f"MPI_Dims_create({n}) as Open MPI: {om}", grid.dims_create(n, "openmpi") == om,
          grid.dims_create(n, "openmpi"))

# the default grid: largest factor to z, then y
check("default grid of 24 ranks is 2x3x4 (x, y, z)", grid.default_grid(24) == (2, 3, 4), grid.default_grid(24))
check("default grid of 2 ranks splits z", grid.default_grid(2) == (1, 1, 2), grid.default_grid(2))

# resolve_grid: weak keeps the default; a thin global grid takes the least cut; --procs as given
N, P = grid.resolve_grid(8, local=(16, 16, 16))
check("weak: N = local x P", (N, P) == ((32, 32, 32), (2, 2, 2)), (N, P))
N, P = grid.resolve_grid(4, global_size=(2, 2, 1000))
check("2x2x1000 on 4 ranks: the least-cut grid 1x1x4", P == (1, 1, 4), P)
N, P = grid.resolve_grid(4, global_size=(64, 64, 64))
check("64^3 on 4 ranks keeps the default 1x2x2", P == (1, 2, 2), P)
N, P = grid.resolve_grid(8, global_size=(64, 64, 6), width=4)
check("--halo-width 4: a split dimension needs 4 layers (64x64x6 on 8 ranks -> 2x4x1)",
      P == (2, 4, 1), P)
try:
    grid.resolve_grid(16, global_size=(2, 2, 2))
    check("a grid too small for the ranks is refused", False, "no error")
except grid.GridError as err:
    check("a grid too small for the ranks is refused", "too thin" in str(err), str(err))
# an axis of 1 point fits no number of ranks, one included: fdmini's line (src/model/decomp.c)
for ranks, size, axes in ((1, (1, 16, 16), "x"), (8, (1, 1, 3), "x and y"), (2, (1, 1, 1), "x, y and z")):
    try:
        grid.resolve_grid(ranks, global_size=size)
        check(f"{size} on {ranks} rank(s) is refused", False, "no error")
    except grid.GridError as err:
        want = (f"subdomain too thin: the {size[0]} x {size[1]} x {size[2]} grid has 1 point along "
                f"{axes}, and every block needs 2 or more per dimension on any number of ranks; "
                f"give --global 2 or more points along {axes}")
        check(f"{size} on {ranks} rank(s): a larger grid, not fewer ranks", str(err) == want, str(err))
# counts of 1 in the singular, as fdmini writes them
for kw, want in (({"ranks": 2, "global_size": (1, 64, 64), "procs": (1, 1, 2)},
                  "subdomain too thin: 1 point over 1 rank in x leaves 1 per rank, need at least 2"),
                 ({"ranks": 2, "global_size": (64, 64, 64), "procs": (1, 1, 1)},
                  "--procs 1,1,1 has 1 rank but the job has 2")):
    try:
        grid.resolve_grid(**kw)
        check(f"{want}: refused", False, "no error")
    except grid.GridError as err:
        check(f"{want}: refused so", str(err) == want, str(err))
N, P = grid.resolve_grid(4, global_size=(64, 64, 64), procs=(4, 1, 1))
check("--procs is taken as given", P == (4, 1, 1), P)
# fdmini refuses a --halo-width wider than a split dimension's thinnest block (src/model/plan.c)
# where the grid is not chosen for it: weak scaling (--local) and --procs
for kw in ({"ranks": 16, "local": (3, 3, 3), "width": 4},
           {"ranks": 2, "global_size": (64, 64, 6), "width": 4, "procs": (1, 1, 2)}):
    try:
        grid.resolve_grid(**kw)
        check(f"--halo-width 4 over blocks 3 thick ({kw}) is refused", False, "no error")
    except grid.GridError as err:
        check(f"--halo-width 4 over blocks 3 thick ({kw}) is refused",
              "--halo-width 4: the thinnest block along" in str(err), str(err))
N, P = grid.resolve_grid(16, local=(3, 3, 4), width=3)
check("--halo-width 3 over blocks 3 thick runs", P == (2, 2, 4), P)

# the uneven split: the first N % P blocks one point larger
n, start = grid.split(10, 4, np.arange(4))
check("10 over 4: 3,3,2,2 starting 0,3,6,8", list(n) == [3, 3, 2, 2] and list(start) == [0, 3, 6, 8],
      (list(n), list(start)))


def bijection(P, N, K, nodes):
    coords, node, local, B = grid.rank_coords(P, N, K, nodes)
    flat = coords[:, 0] * P[1] * P[2] + coords[:, 1] * P[2] + coords[:, 2]
    return sorted(flat.tolist()) == list(range(P[0] * P[1] * P[2])), coords, node, B


# 512 ranks, nodes of 8, on 8x8x8
ok, coords, node, B = bijection((8, 8, 8), (512, 512, 512), 8, 64)
check("8x8x8 in nodes of 8: a bijection", ok)
check("8x8x8 in nodes of 8: 2x2x2 node boxes", B == (2, 2, 2), B)
pl = grid.Plan((512, 512, 512), (8, 8, 8), 8, 64)
off = pl.faces_off_per_rank()
check("8x8x8 in nodes of 8: at most 3 faces of a rank leave its node", off.max() == 3, off.max())
check("8x8x8 in nodes of 8: every rank of an interior node sends 3 faces off it",
      (off[node == int(node[np.where((coords == 3).all(axis=1))[0][0]])] == 3).all())
# each node's box is 2x2x2: node m's ranks differ from its first by at most 1 in each dimension
span = [np.ptp(coords[node == m], axis=0).tolist() for m in range(64)]
check("every node holds a 2x2x2 box", all(s == [1, 1, 1] for s in span), span[:3])
# by hand: an interior node sends 4 faces across each of its 6 sides (24), 64^2 * 8 bytes each
msgs, byts = pl.node_off()
check("the busiest node sends 24 faces", msgs.max() == 24, msgs.max())
check("the busiest node sends 24 x 64 x 64 x 8 bytes", byts.max() == 24 * 64 * 64 * 8, byts.max())
corner = int(node[np.where((coords == 0).all(axis=1))[0][0]])
check("the corner node sends 12 faces (3 sides)", msgs[corner] == 12, msgs[corner])

# 4 ranks per node on 2x2x2: 2x2x1 boxes (the tie with 2x1x2 keeps the first)
ok, coords, node, B = bijection((2, 2, 2), (64, 64, 64), 4, 2)
check("2x2x2 in nodes of 4: 2x2x1 boxes", B == (2, 2, 1), B)
check("2x2x2 in nodes of 4: a bijection", ok)
check("2x2x2 in nodes of 4: node 0 holds z = 0", (coords[node == 0][:, 2] == 0).all(), coords[node == 0])
# the mapping by hand: 4x4x4 of a cube in nodes of 8: 4x2x1 (cost 4A + 8A) ties with 2x2x2
# (3 x 4A) and comes first (bx from K down); Q = (1, 2, 4); rank 43 = node 5, local 3:
# mq = (5 / 8, (5 / 4) % 2, 5 % 4) = (0, 1, 1), lq = (3 / 2, (3 / 1) % 2, 3 % 1) = (1, 1, 0),
# coords = mq * B + lq = (0, 2, 1) + (1, 1, 0) = (1, 3, 1)
coords, node, local, B = grid.rank_coords((4, 4, 4), (64, 64, 64), 8, 8)
check("4x4x4 in nodes of 8: the tie 4x2x1 / 2x2x2 keeps 4x2x1, rank 43 at (1, 3, 1)",
      B == (4, 2, 1) and coords[43].tolist() == [1, 3, 1], (B, coords[43].tolist()))
# more shapes: the box of least cost, ties to the first of bx from K down, then by from K/bx down
for P, N, K, nodes, want in [
        ((1, 1, 6), (16, 16, 60), 2, 3, (1, 1, 2)),
        ((2, 3, 5), (20, 30, 50), 5, 6, (1, 1, 5)),
        ((2, 2, 3), (20, 20, 30), 4, 3, (2, 2, 1)),
        ((1, 2, 3), (10, 20, 30), 2, 3, (1, 2, 1)),
        ((1, 3, 3), (10, 30, 30), 3, 3, (1, 3, 1)),
        ((3, 3, 1), (30, 30, 10), 3, 3, (3, 1, 1)),
        ((1, 2, 2), (10, 20, 20), 2, 2, (1, 2, 1)),
        ((3, 2, 2), (30, 20, 20), 4, 3, (1, 2, 2)),
        ((1, 4, 3), (10, 40, 30), 6, 2, (1, 2, 3)),
        ((6, 1, 2), (60, 10, 20), 4, 3, (2, 1, 2))]:
    ok, coords, node, B = bijection(P, N, K, nodes)
    check(f"{'x'.join(map(str, P))} in nodes of {K}: a {'x'.join(map(str, want))} box, a bijection",
          B == want and ok, (B, ok))
# the cost weighs face areas: on 4096x64x64 over 2x2x2 a rank's block is 2048x32x32, its faces
# across x 32x32 and across y and z 2048x32: the node cuts across x (1x2x2, cost 4 x 1024)
B = grid.node_blocks((2, 2, 2), (4096, 64, 64), 4, 2)
check("2x2x2 of 4096x64x64 in nodes of 4: cut across x, the small faces: 1x2x2", B == (1, 2, 2), B)
B = grid.node_blocks((2, 2, 2), (64, 64, 4096), 4, 2)
check("2x2x2 of 64x64x4096 in nodes of 4: cut across z: 2x2x1", B == (2, 2, 1), B)

# where K divides the ranks a box always exists (K's prime factors spread over P's), so fdmini
# falls back to K consecutive Cartesian ranks per node only on one node or with K = 1; the
# fallback itself is checked with node_blocks answering None
coords, node, local, B = grid.rank_coords((2, 2, 2), (20, 20, 20), 8, 1)
check("one node: ranks row-major, z fastest", B is None and coords[1].tolist() == [0, 0, 1]
      and coords[2].tolist() == [0, 1, 0] and coords[4].tolist() == [1, 0, 0], coords[:5].tolist())
orig = grid.node_blocks
grid.node_blocks = lambda *a: None  # no box: today's mapping
coords, node, local, B = grid.rank_coords((2, 2, 4), (20, 20, 40), 4, 4)
grid.node_blocks = orig
check("no box: node m holds Cartesian ranks 4m..4m+3 (row-major, z fastest)",
      B is None and coords[node == 1].tolist() == [[0, 1, 0], [0, 1, 1], [0, 1, 2], [0, 1, 3]],
      coords[node == 1].tolist())
check("K = 1: nothing to choose", grid.node_blocks((2, 2, 2), (20, 20, 20), 1, 8) is None)

# deep halos: 26 regions, edges and corners S deep
pl = grid.Plan((64, 64, 64), (2, 2, 2), 8, 1, width=3)
check("width 3 on 2x2x2: 7 regions per rank", (pl.exists.sum(axis=1) == 7).all(), pl.exists.sum(axis=1))
check("a corner region is S^3 values", pl.nbytes[0][pl.exists[0]].min() == 27 * 8, pl.nbytes[0][pl.exists[0]].min())
# width 2: faces and edges, no corners (kernels/faces.h, fd_region_used: corners from 3): a
# rank of 2x2x2 sends 3 faces of 32x32x2 and 3 edges of 32x2x2 values, as fdmini --plan counts
pl = grid.Plan((64, 64, 64), (2, 2, 2), 8, 1, width=2)
check("width 2 on 2x2x2: 6 regions per rank, no corner", (pl.exists.sum(axis=1) == 6).all(), pl.exists.sum(axis=1))
check("width 2 on 2x2x2: 3 x 2048 + 3 x 128 values a rank", (pl.nbytes.sum(axis=1) == (3 * 2048 + 3 * 128) * 8).all(),
      pl.nbytes.sum(axis=1))

# fast for 1,024 nodes
t = time.time()
pl = grid.Plan((4096, 4096, 4096), grid.default_grid(8192), 8, 1024)
dt = time.time() - t
check(f"8192 ranks in nodes of 8 placed and counted in {dt:.3f} s (< 2 s)", dt < 2.0, dt)
check("8192 ranks: 2x2x2 boxes, at most 3 faces of a rank off node",
      pl.B == (2, 2, 2) and pl.faces_off_per_rank().max() == 3, (pl.B, pl.faces_off_per_rank().max()))

print(f"model grid test: {'FAILED' if checks.failed else 'passed'} ({checks.failed} failed, {checks.passed} passed)")
sys.exit(1 if checks.failed else 0)

/* window.h - the steps between two exchanges of a deep halo (--halo-width S): the box each
 * step or fused pass updates, the part of the first pass that needs no ghost (it runs while
 * the regions travel) and the rest of a box as slabs. Pure index math on local indices
 * (backend.h: the interior is 1..n, ghosts 1-S..0 and n+1..n+S), no MPI, no device.
 *
 * After an exchange the ghosts hold the neighbours' points S deep (faces, edges, corners:
 * faces.h). Step s of the window (s = 0..S-1) updates 1..n extended by S-1-s into the ghosts
 * on every side that has a neighbour (never beyond a global boundary, whose ghost layer holds
 * the fixed Dirichlet values): it reads the box of step s-1, one point wider, so each step
 * finds its input valid and step S-1 updates exactly 1..n. A point of a box that the S-step
 * dependence of 1..n does not reach (some of the corners of the box, fed by ghosts no region
 * fills) gets a value nobody reads. */
#ifndef FDMINI_WINDOW_H
#define FDMINI_WINDOW_H

typedef struct {
  int lo[3], hi[3]; /* inclusive; empty when hi < lo in some dimension */
} fd_box;

/* The box of step s (0 <= s < width) of a window on extents n: 1..n extended by width-1-s on
 * the sides in `sides` (bit f for face f = 2*d + side, faces.h). Pure. */
void window_step_box(const int n[3], int width, unsigned sides, int s, fd_box *b);

/* The fix box of a fused pass (be_stencil_fused): the points a pass may update, 2-S..n+S-1 on
 * the sides in `sides` (the outermost ghost layer keeps the value received), 1..n along the
 * others (the Dirichlet layer keeps its value). Pure. */
void window_fix_box(const int n[3], int width, unsigned sides, fd_box *b);

/* The first pass's interior for a pass of `steps` steps right after an exchange: the points
 * of 1..n whose steps-deep dependence stays inside 1..n, i.e. 1+steps..n-steps along the sides
 * in `sides` and 1..n along the others. Pure. */
void window_interior(const int n[3], unsigned sides, int steps, fd_box *b);

/* b minus inner (inner within b, or empty) as at most 6 disjoint non-empty boxes in *out: the
 * z slabs below and above inner over all of b's x and y, then the y slabs within inner's z
 * range over b's x, then the x slabs within inner's y and z ranges. Returns how many. Pure. */
int window_box_minus(const fd_box *b, const fd_box *inner, fd_box out[6]);

/* Points of b (0 when empty). Pure. */
long long window_box_points(const fd_box *b);

/* 1 when b holds point (i, j, k). Pure. */
int window_box_contains(const fd_box *b, int i, int j, int k);

#endif

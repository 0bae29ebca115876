/* window.c - the boxes of the steps between two deep-halo exchanges (window.h). */
#include "window.h"

void window_step_box(const int n[3], int width, unsigned sides, int s, fd_box *b)
{
  const int ext = width - 1 - s;
  for (int d = 0; d < 3; d++) {
    b->lo[d] = 1 - (((sides >> (2 * d)) & 1u) ? ext : 0);
    b->hi[d] = n[d] + (((sides >> (2 * d + 1)) & 1u) ? ext : 0);
  }
}

void window_fix_box(const int n[3], int width, unsigned sides, fd_box *b)
{
  for (int d = 0; d < 3; d++) {
    b->lo[d] = ((sides >> (2 * d)) & 1u) ? 2 - width : 1;
    b->hi[d] = ((sides >> (2 * d + 1)) & 1u) ? n[d] + width - 1 : n[d];
  }
}

void window_interior(const int n[3], unsigned sides, int steps, fd_box *b)
{
  for (int d = 0; d < 3; d++) {
    b->lo[d] = 1 + (((sides >> (2 * d)) & 1u) ? steps : 0);
    b->hi[d] = n[d] - (((sides >> (2 * d + 1)) & 1u) ? steps : 0);
  }
}

static int empty(const fd_box *b)
{
  return b->hi[0] < b->lo[0] || b->hi[1] < b->lo[1] || b->hi[2] < b->lo[2];
}

long long window_box_points(const fd_box *b)
{
  if (empty(b)) return 0;
  return (long long)(b->hi[0] - b->lo[0] + 1) * (b->hi[1] - b->lo[1] + 1) * (b->hi[2] - b->lo[2] + 1);
}

int window_box_contains(const fd_box *b, int i, int j, int k)
{
  return i >= b->lo[0] && i <= b->hi[0] && j >= b->lo[1] && j <= b->hi[1] && k >= b->lo[2] &&
         k <= b->hi[2];
}

int window_box_minus(const fd_box *b, const fd_box *inner, fd_box out[6])
{
  int count = 0;
  if (empty(b)) return 0;
  if (empty(inner)) {
    out[0] = *b;
    return 1;
  }
  /* the part of b still to cover: shrinks dimension by dimension, z first */
  fd_box rest = *b;
  for (int d = 2; d >= 0; d--) {
    fd_box low = rest, high = rest;
    low.hi[d] = inner->lo[d] - 1;
    high.lo[d] = inner->hi[d] + 1;
    if (!empty(&low)) out[count++] = low;
    if (!empty(&high)) out[count++] = high;
    rest.lo[d] = inner->lo[d];
    rest.hi[d] = inner->hi[d];
  }
  return count;
}

/* faces.h - geometry of the halo regions of a local field with `width` (S) ghost layers: which
 * points each region sends and receives, and where each sits in the contiguous pack buffer.
 * Pure index math, shared by halo/ (buffers, messages) and every backend's pack and unpack
 * kernels (host C and device code alike).
 *
 * Region r points in direction dir(r) = (c0, c1, c2), each c in {-1, 0, +1}, not all 0:
 *   faces   r = 0..5    one c non-zero: r = 2*d + side (side 0: c_d = -1, low; 1: high)
 *   edges   r = 6..17   two non-zero: r = 6 + 4*pair + (c_a > 0) + 2*(c_b > 0), pair 0, 1, 2 for
 *                       the dimensions (a, b) = (x, y), (x, z), (y, z)
 *   corners r = 18..25  three non-zero: r = 18 + (c0 > 0) + 2*(c1 > 0) + 4*(c2 > 0)
 * Along each dimension d (extent n = n[d], width S) region r's boxes are, inclusive:
 *   send (points of 1..n next to the border):  c = -1: 1..S     c = +1: n-S+1..n   c = 0: 1..n
 *   recv (the ghost layers beyond it):          c = -1: 1-S..0   c = +1: n+1..n+S   c = 0: 1..n
 * Region r of one rank receives what region fd_region_opposite(r) (direction -dir) of its
 * neighbour in direction dir sends: the neighbour shares this rank's extents along every d with
 * c_d = 0, so the two boxes have the same shape.
 * S steps of the 7-point stencil reach a ghost point a_d layers beyond the block along each d
 * only when the sum of the a_d is at most S: faces are needed at every width, edges from S = 2,
 * corners from S = 3 (fd_region_used). A region not used at a width has no points.
 *
 * Buffer layout (one parity of a pack or receive buffer): the regions in index order, region r
 * holding `fields` boxes of count[r] points one after the other (one message per region
 * carries every field: the wave exchanges two time levels), each box x fastest: point
 * (i, j, k) of the box lo..hi at (i - lo0) + e0*((j - lo1) + e1*(k - lo2)), e = hi - lo + 1.
 * Every region has its place whether active or not, so a region's place does not depend on the
 * neighbours. A descriptor (fd_faces) describes one field's boxes: offset[r] = start of region
 * r + field*count[r]. With width 1 and one field this is the six-face layout: face f at
 * offset[f], its point (p, q) at p + n[a]*q (a < b the in-plane dimensions).
 */
#ifndef FDMINI_FACES_H
#define FDMINI_FACES_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__HIPCC__) || defined(__CUDACC__)
#define FD_FACES_HD __host__ __device__ inline
#else
#define FD_FACES_HD static inline
#endif

#define FD_FACES 6          /* regions 0..5 are the faces */
#define FD_REGIONS 26       /* faces, edges and corners */
#define FD_HALO_FIELDS_MAX 2

typedef struct {
  int n[3];                   /* interior extents of the field */
  int width;                  /* S: ghost layers exchanged (<= the grid's ghost) */
  int fields;                 /* fields each region's message carries (1 or 2) */
  int field;                  /* the one this descriptor packs and unpacks (0-based) */
  int active[FD_REGIONS];     /* 1 when the region has a neighbour (is packed/unpacked) */
  size_t count[FD_REGIONS];   /* points of region r in one field (0: not used at this width) */
  size_t offset[FD_REGIONS];  /* element offset of this field's box of region r */
  size_t total;               /* elements of the whole buffer (every region, every field) */
} fd_faces;

/* dir of region r (0 <= r < FD_REGIONS). */
FD_FACES_HD void fd_region_dir(int r, int dir[3])
{
  dir[0] = dir[1] = dir[2] = 0;
  if (r < 6) {
    dir[r / 2] = (r % 2) ? 1 : -1;
  } else if (r < 18) {
    const int e = r - 6, pair = e / 4;
    const int a = pair == 2 ? 1 : 0, b = pair == 0 ? 1 : 2;
    dir[a] = (e & 1) ? 1 : -1;
    dir[b] = (e & 2) ? 1 : -1;
  } else {
    const int e = r - 18;
    for (int d = 0; d < 3; d++) dir[d] = ((e >> d) & 1) ? 1 : -1;
  }
}

/* The region of direction -dir(r). */
FD_FACES_HD int fd_region_opposite(int r)
{
  if (r < 6) return r ^ 1;
  if (r < 18) return 6 + ((r - 6) ^ 3);
  return 18 + ((r - 18) ^ 7);
}

/* The region of direction dir (not all zero). */
FD_FACES_HD int fd_region_of_dir(const int dir[3])
{
  const int nz = (dir[0] != 0) + (dir[1] != 0) + (dir[2] != 0);
  if (nz == 1) {
    for (int d = 0; d < 3; d++)
      if (dir[d]) return 2 * d + (dir[d] > 0);
  }
  if (nz == 2) {
    const int pair = dir[2] == 0 ? 0 : (dir[1] == 0 ? 1 : 2);
    const int a = pair == 2 ? 1 : 0, b = pair == 0 ? 1 : 2;
    return 6 + 4 * pair + (dir[a] > 0) + 2 * (dir[b] > 0);
  }
  return 18 + (dir[0] > 0) + 2 * (dir[1] > 0) + 4 * (dir[2] > 0);
}

/* 1 when region r is exchanged at width S: faces always, edges from 2, corners from 3. */
FD_FACES_HD int fd_region_used(int r, int width)
{
  return r < 6 || (r < 18 ? width >= 2 : width >= 3);
}

/* Region r's send (recv = 0) or receive (recv = 1) box lo..hi for extents n and width S. */
FD_FACES_HD void fd_region_box(const int n[3], int width, int r, int recv, int lo[3], int hi[3])
{
  int dir[3];
  fd_region_dir(r, dir);
  for (int d = 0; d < 3; d++) {
    if (dir[d] == 0) {
      lo[d] = 1, hi[d] = n[d];
    } else if (dir[d] < 0) {
      lo[d] = recv ? 1 - width : 1;
      hi[d] = recv ? 0 : width;
    } else {
      lo[d] = recv ? n[d] + 1 : n[d] - width + 1;
      hi[d] = recv ? n[d] + width : n[d];
    }
  }
}

/* Points of region r in one field (0 when not used at this width). */
FD_FACES_HD size_t fd_region_count(const int n[3], int width, int r)
{
  if (!fd_region_used(r, width)) return 0;
  int lo[3], hi[3];
  fd_region_box(n, width, r, 0, lo, hi);
  return (size_t)(hi[0] - lo[0] + 1) * (size_t)(hi[1] - lo[1] + 1) * (size_t)(hi[2] - lo[2] + 1);
}

/* Element offset of field `field`'s box of region r in a buffer of `fields` fields. */
FD_FACES_HD size_t fd_region_offset(const int n[3], int width, int fields, int field, int r)
{
  size_t off = 0;
  for (int q = 0; q < r; q++) off += (size_t)fields * fd_region_count(n, width, q);
  return off + (size_t)field * fd_region_count(n, width, r);
}

/* Fills *f for extents n, width S >= 1, `fields` fields per message (1..FD_HALO_FIELDS_MAX),
 * describing field `field`; every region starts inactive. */
static inline void fd_faces_init_deep(fd_faces *f, const int n[3], int width, int fields, int field)
{
  for (int d = 0; d < 3; d++) f->n[d] = n[d];
  f->width = width;
  f->fields = fields;
  f->field = field;
  f->total = 0;
  for (int r = 0; r < FD_REGIONS; r++) {
    f->active[r] = 0;
    f->count[r] = fd_region_count(n, width, r);
    f->offset[r] = fd_region_offset(n, width, fields, field, r);
    f->total += (size_t)fields * f->count[r];
  }
}

/* The six faces of width 1, one field (the single-step exchange). */
static inline void fd_faces_init(fd_faces *f, const int n[3]) { fd_faces_init_deep(f, n, 1, 1, 0); }

/* The two in-plane dimensions a < b of faces normal to d. */
static inline void fd_face_plane_dims(int d, int *a, int *b)
{
  *a = (d == 0) ? 1 : 0;
  *b = (d == 2) ? 1 : 2;
}

/* Index along d of face `face`'s send layer nearest the border (recv = 0: 1 or n[d]) or ghost
 * layer nearest the block (recv = 1: 0 or n[d]+1). */
static inline int fd_face_layer(const fd_faces *f, int face, int recv)
{
  int d = face / 2, high = face % 2;
  if (recv) return high ? f->n[d] + 1 : 0;
  return high ? f->n[d] : 1;
}

#ifdef __cplusplus
}
#endif
#endif

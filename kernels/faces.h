/* faces.h - geometry of the six halo faces of a local field: which points each face sends
 * and receives, and where each face sits in the contiguous pack buffer. Pure index math,
 * shared by halo/ (buffers, messages) and every backend's pack/unpack kernels.
 *
 * Face f = 2*d + side: d = 0, 1, 2 for x, y, z; side 0 = low (towards coordinate -1),
 * side 1 = high. Face f of a field with interior extents n[0..2]:
 *   send layer: index 1 (low) or n[d] (high) along d       (interior points next to the border)
 *   recv layer: index 0 (low) or n[d]+1 (high) along d     (the ghost plane)
 *   in-plane:   the interior 1..n[a] x 1..n[b] of the two other dimensions a < b,
 *               stored a-fastest: element (p, q) of the face at p + n[a]*q, 0-based.
 * Edges and corners are never exchanged: the 7-point stencil does not read them.
 * Buffer layout: face f occupies offset[f] .. offset[f] + count[f] - 1 (in real_t elements)
 * for every face, active or not, so a face's place does not depend on its neighbours.
 */
#ifndef FDMINI_FACES_H
#define FDMINI_FACES_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FD_FACES 6

typedef struct {
  int n[3];              /* interior extents of the field */
  int active[FD_FACES];  /* 1 when the face has a neighbour (is packed/unpacked) */
  size_t count[FD_FACES];  /* points in face f */
  size_t offset[FD_FACES]; /* element offset of face f in the buffer */
  size_t total;            /* elements of the whole buffer (all six faces) */
} fd_faces;

/* The two in-plane dimensions a < b of faces normal to d. */
static inline void fd_face_plane_dims(int d, int *a, int *b)
{
  *a = (d == 0) ? 1 : 0;
  *b = (d == 2) ? 1 : 2;
}

/* Fills counts and offsets for extents n; all faces start inactive. */
static inline void fd_faces_init(fd_faces *f, const int n[3])
{
  size_t off = 0;
  for (int d = 0; d < 3; d++) f->n[d] = n[d];
  for (int face = 0; face < FD_FACES; face++) {
    int a, b;
    fd_face_plane_dims(face / 2, &a, &b);
    f->active[face] = 0;
    f->count[face] = (size_t)n[a] * (size_t)n[b];
    f->offset[face] = off;
    off += f->count[face];
  }
  f->total = off;
}

/* Index along d of face `face`'s send layer (recv = 0) or ghost layer (recv = 1). */
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

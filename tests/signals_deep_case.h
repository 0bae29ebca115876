/* signals_deep_case.h - one case of the deep exchange signalled on the device (backend.h,
 * be_signals_pack and be_signals_unpack), shared by the host test (test_faces_pack_unpack.c)
 * and the GPU test (gpu/test_gpu_regions.c). Test-only, header-only.
 *
 * p[0] x p[1] x p[2] blocks of one process (at most SIGD_BLOCKS) stand for the ranks of a
 * global n[0] x n[1] x n[2] grid split along each dimension (n_d / p_d points a block, the last
 * one taking the rest), with S ghost layers and `fields` fields, each block with its own words,
 * two slots and fields whose ghosts start as NaN. In each of `rounds` exchanges every block's
 * fields get that round's global field over 1..n (a value per point, field and round), every
 * block packs (stream sa), then every block unpacks (the odd blocks on sb where there is one,
 * so that their unpacks wait on the device for packs still running on sa). Then, bit for bit:
 * every ghost of a region exchanged holds the global field at its global point, every interior
 * point its own value, and every other ghost is still NaN (nothing else written). `store`: the
 * sender stores into the receiver's slots, else the receiver loads from the sender's (as
 * halo/'s signal_slots). `drop` >= 0 plants the fault: block 0 never unpacks region `drop` (its
 * ghosts keep NaN, then older rounds' values), which the comparison must see. `one`: each
 * block makes each exchange with be_signals_exchange on a stream of its own, all at once, its
 * neighbours marked remote (be_signals.remote) so that a GPU takes its one-launch kernel (each
 * launch waits on the device for the others' packs; the blocks' launches are small enough to
 * be resident together, which that kernel needs). Returns the number
 * of values that differ, or -1 where a backend call failed (*why: its message). */
#ifndef FDMINI_TEST_SIGNALS_DEEP_CASE_H
#define FDMINI_TEST_SIGNALS_DEEP_CASE_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "signals_case.h" /* SIG_TRY */

#define SIGD_BLOCKS 8

/* The global field `field` of round `round` at global point (i, j, k): a hash with a 16-bit
 * fraction (exact in float and double), distinct for neighbouring points. */
static real_t sigd_value(int field, int round, int i, int j, int k)
{
  uint32_t h = (uint32_t)i * 73856093u ^ (uint32_t)j * 19349663u ^ (uint32_t)k * 83492791u ^
               (uint32_t)field * 2654435761u ^ (uint32_t)round * 40503u;
  h ^= h >> 13;
  h *= 0x5bd1e995u;
  h ^= h >> 15;
  return (real_t)(1 + (int)(h & 0xffffu)) / (real_t)65536;
}

/* 1 when local point (i, j, k) of a block lies in the receive box of region r. */
static int sigd_in_box(const fd_faces *f, int r, int i, int j, int k)
{
  int lo[3], hi[3];
  fd_region_box(f->n, f->width, r, 1, lo, hi);
  return i >= lo[0] && i <= hi[0] && j >= lo[1] && j <= hi[1] && k >= lo[2] && k <= hi[2];
}

static long signals_deep_case(const int n[3], const int p[3], int S, int fields, int rounds, int store, int drop,
                              int one, be_stream sa, be_stream sb, char *why, size_t why_len)
{
  const int nblk = p[0] * p[1] * p[2];
  if (nblk < 1 || nblk > SIGD_BLOCKS || fields < 1 || fields > 2) {
    snprintf(why, why_len, "signals_deep_case: %d blocks, %d fields", nblk, fields);
    return -1;
  }
  long rc = 0;
  fd_grid g[SIGD_BLOCKS];
  fd_faces fa[SIGD_BLOCKS][2];
  int m[SIGD_BLOCKS][3], o[SIGD_BLOCKS][3], c[SIGD_BLOCKS][3];
  real_t *du[SIGD_BLOCKS][2], *slots[SIGD_BLOCKS];
  uint32_t *w[SIGD_BLOCKS];
  be_signals x[SIGD_BLOCKS];
  real_t *h = NULL;
  be_stream own[SIGD_BLOCKS];
  const uint32_t zero[BE_SIG_WORDS] = {0};
  memset(own, 0, sizeof own);
  memset(du, 0, sizeof du);
  memset(slots, 0, sizeof slots);
  memset(w, 0, sizeof w);
  size_t most = 0;
  for (int b = 0; b < nblk; b++) {
    c[b][0] = b % p[0], c[b][1] = b / p[0] % p[1], c[b][2] = b / (p[0] * p[1]);
    for (int d = 0; d < 3; d++) {
      const int q = n[d] / p[d];
      o[b][d] = c[b][d] * q;
      m[b][d] = c[b][d] == p[d] - 1 ? n[d] - (p[d] - 1) * q : q;
    }
    if (fd_grid_init(&g[b], m[b], S)) {
      snprintf(why, why_len, "fd_grid_init");
      return -1;
    }
    if (g[b].elems > most) most = g[b].elems;
    for (int q = 0; q < 2; q++) {
      fd_faces_init_deep(&fa[b][q], m[b], S, fields, q < fields ? q : 0);
      for (int r = 0; r < FD_REGIONS; r++) {
        int dir[3], in = 1;
        fd_region_dir(r, dir);
        for (int d = 0; d < 3; d++) in &= c[b][d] + dir[d] >= 0 && c[b][d] + dir[d] < p[d];
        fa[b][q].active[r] = in && fa[b][q].count[r] > 0;
      }
    }
  }
  h = malloc(most * sizeof(real_t));
  if (!h) {
    snprintf(why, why_len, "malloc");
    return -1;
  }
  for (size_t e = 0; e < most; e++) h[e] = (real_t)NAN;
  for (int b = 0; b < nblk; b++) {
    for (int q = 0; q < fields; q++) {
      SIG_TRY(be_malloc((void **)&du[b][q], g[b].elems * sizeof(real_t)));
      SIG_TRY(be_memcpy_async(du[b][q], h, g[b].elems * sizeof(real_t), BE_COPY_H2D, sa));
    }
    SIG_TRY(be_malloc_peer((void **)&slots[b], 2 * fa[b][0].total * sizeof(real_t)));
    SIG_TRY(be_malloc_peer((void **)&w[b], sizeof zero));
    SIG_TRY(be_memcpy_async(w[b], zero, sizeof zero, BE_COPY_H2D, sa));
  }
  SIG_TRY(be_stream_sync(sa));
  for (int b = 0; b < nblk && one; b++) SIG_TRY(be_stream_create(&own[b], BE_PRIORITY_NORMAL));
  for (int b = 0; b < nblk; b++) {
    be_signals *xb = &x[b];
    memset(xb, 0, sizeof *xb);
    xb->faces = &fa[b][0];
    xb->faces2 = fields > 1 ? &fa[b][1] : NULL;
    xb->wait_s = 10.0;
    xb->words = w[b];
    for (int r = 0; r < FD_REGIONS; r++) {
      if (!fa[b][0].active[r]) continue;
      int dir[3], nc = 0;
      fd_region_dir(r, dir);
      const int cb[3] = {c[b][0] + dir[0], c[b][1] + dir[1], c[b][2] + dir[2]};
      nc = cb[0] + p[0] * (cb[1] + p[1] * cb[2]);
      const int back = fd_region_opposite(r);
      xb->exchange |= 1u << r;
      if (one) xb->remote |= 1u << r;
      if (!(b == 0 && r == drop)) xb->unpack |= 1u << r;
      for (int s = 0; s < 2; s++) {
        real_t *mine = slots[b] + s * fa[b][0].total + fa[b][0].offset[r];
        real_t *theirs = slots[nc] + s * fa[nc][0].total + fa[nc][0].offset[back];
        xb->in[r][s] = store ? mine : theirs;
        xb->out[r][s] = store ? theirs : mine;
      }
      xb->peer_in[r] = w[nc] + back;
    }
  }
  for (int round = 0; round < rounds && rc == 0; round++) {
    /* this round's fields over 1..n (the ghosts keep what they hold) */
    for (int b = 0; b < nblk; b++)
      for (int q = 0; q < fields; q++) {
        SIG_TRY(be_memcpy_async(h, du[b][q], g[b].elems * sizeof(real_t), BE_COPY_D2H, sa));
        SIG_TRY(be_stream_sync(sa));
        for (int k = 1; k <= m[b][2]; k++)
          for (int j = 1; j <= m[b][1]; j++)
            for (int i = 1; i <= m[b][0]; i++)
              h[fd_grid_index(&g[b], i, j, k)] = sigd_value(q, round, o[b][0] + i, o[b][1] + j, o[b][2] + k);
        SIG_TRY(be_memcpy_async(du[b][q], h, g[b].elems * sizeof(real_t), BE_COPY_H2D, sa));
        SIG_TRY(be_stream_sync(sa));
      }
    be_stream su = sb ? sb : sa;
    if (one) {
      for (int b = 0; b < nblk; b++) SIG_TRY(be_signals_exchange(&g[b], &x[b], du[b][0], du[b][1], own[b]));
      for (int b = 0; b < nblk; b++) SIG_TRY(be_stream_sync(own[b]));
    } else {
      for (int b = nblk - 1; b >= 0; b--) /* the odd blocks' unpacks may start before these end */
        SIG_TRY(be_signals_pack(&g[b], &x[b], du[b][0], du[b][1], sa));
      for (int b = 0; b < nblk; b++)
        SIG_TRY(be_signals_unpack(&g[b], &x[b], du[b][0], du[b][1], b % 2 ? su : sa));
    }
    SIG_TRY(be_stream_sync(sa));
    SIG_TRY(be_stream_sync(su));
    for (int b = 0; b < nblk; b++)
      for (int q = 0; q < fields; q++) {
        SIG_TRY(be_memcpy_async(h, du[b][q], g[b].elems * sizeof(real_t), BE_COPY_D2H, sa));
        SIG_TRY(be_stream_sync(sa));
        for (int k = 1 - S; k <= m[b][2] + S; k++)
          for (int j = 1 - S; j <= m[b][1] + S; j++)
            for (int i = 1 - S; i <= m[b][0] + S; i++) {
              const real_t got = h[fd_grid_index(&g[b], i, j, k)];
              int exchanged = i >= 1 && i <= m[b][0] && j >= 1 && j <= m[b][1] && k >= 1 && k <= m[b][2];
              for (int r = 0; r < FD_REGIONS && !exchanged; r++)
                exchanged = fa[b][0].active[r] && sigd_in_box(&fa[b][0], r, i, j, k);
              if (exchanged) {
                const real_t want = sigd_value(q, round, o[b][0] + i, o[b][1] + j, o[b][2] + k);
                rc += memcmp(&got, &want, sizeof got) != 0;
              } else {
                rc += !isnan(got);
              }
            }
      }
  }
  {
    uint32_t seq = 0;
    if (rc == 0) {
      SIG_TRY(be_memcpy_async(&seq, w[nblk - 1] + BE_SIG_SEQ, sizeof seq, BE_COPY_D2H, sa));
      SIG_TRY(be_stream_sync(sa));
      if (seq != (uint32_t)rounds) {
        snprintf(why, why_len, "the last block's seq is %u after %d exchanges", seq, rounds);
        rc = -1;
      }
    }
  }
done:
  for (int b = 0; b < nblk; b++) {
    if (own[b]) (void)be_stream_destroy(own[b]);
    for (int q = 0; q < 2; q++) (void)be_free(du[b][q]);
    (void)be_free(slots[b]);
    (void)be_free(w[b]);
  }
  free(h);
  if (rc > 0) snprintf(why, why_len, "%ld values differ", rc);
  return rc;
}

#endif

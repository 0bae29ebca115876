/* proxy.c - the off-node proxy (proxy.h): the MPI traffic of the faces a signalled pass sends
 * to neighbours it cannot reach by IPC. One step of service (proxy_progress) is, for each
 * carried region r, in this order:
 *   1. send: every exchange the launches packed (hout[r]) and not yet sent leaves its slot
 *   2. post: the receives of the next exchanges whose slot no launch still reads
 *   3. test: one MPI_Testsome over every request in flight (one progress of MPI per step),
 *      each completed receive's count checked
 *   4. publish: hin[r] for each arrival, in order, whose slot-mate send has completed
 * proxy.h argues why no slot is read while written. Tags: region r leaves with tag r and is
 * region fd_region_opposite(r) of the receiver, as in halo.c; the drain's counts use
 * TAG_COUNT + r and the first contact (proxy_first_contact) TAG_FIRST + r, on the proxy's own
 * communicator.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "fd_error.h"
#include "proxy.h"

enum { TAG_COUNT = 64, TAG_FIRST = TAG_COUNT + FD_REGIONS };

/* The host's view of the words the launches and the proxy share (be_host_alloc_shared):
 * an acquire load of what a launch stored after its system-scope release, and a release store
 * after the arrived face (MPI completed it) for the launch's acquire. */
static uint32_t word_load(const uint32_t *w) { return __atomic_load_n(w, __ATOMIC_ACQUIRE); }
static void word_store(uint32_t *w, uint32_t v) { __atomic_store_n(w, v, __ATOMIC_RELEASE); }

/* Wrap-safe a >= b for exchange counts. */
static int at_least(uint32_t a, uint32_t b) { return (int32_t)(a - b) >= 0; }

static void reset_requests(fd_proxy *p)
{
  for (int r = 0; r < FD_REGIONS; r++)
    for (int s = 0; s < 2; s++) p->sreq[r][s] = p->rreq[r][s] = MPI_REQUEST_NULL;
}

/* Both slots of `slot` (p's receive or send slots) NaN. Synchronous. */
static int poison_slots(fd_proxy *p, real_t *const slot[2])
{
  const size_t bytes = (p->total ? p->total : 1) * sizeof(real_t);
  for (int q = 0; q < 2; q++) {
    if (p->host_slots) memcpy(slot[q], p->nan_h, bytes);
    else FD_BE(be_memcpy_async(slot[q], p->nan_h, bytes, BE_COPY_H2D, p->stream));
  }
  if (!p->host_slots) FD_BE(be_stream_sync(p->stream));
  return FD_OK;
}

int proxy_first_contact(fd_proxy *p)
{
  if (!p->on) return FD_OK;
  FD_CALL(poison_slots(p, p->send_slot));
  for (int q = 0; q < 2; q++) {
    MPI_Request rq[2 * FD_REGIONS];
    int n = 0;
    for (int r = 0; r < FD_REGIONS; r++) {
      if (!(p->regions >> r & 1u)) continue;
      FD_MPI(MPI_Irecv(p->recv_slot[q] + p->offset[r], p->count[r], FD_MPI_REAL, p->nbr[r],
                       TAG_FIRST + fd_region_opposite(r), p->comm, &rq[n++]));
      FD_MPI(MPI_Isend(p->send_slot[q] + p->offset[r], p->count[r], FD_MPI_REAL, p->nbr[r], TAG_FIRST + r, p->comm,
                       &rq[n++]));
    }
    for (int i = 0; i < n; i++) FD_MPI(MPI_Wait(&rq[i], MPI_STATUS_IGNORE));
  }
  return FD_OK;
}

int proxy_create(fd_proxy *p, MPI_Comm comm, unsigned regions, const int nbr[FD_REGIONS],
                 const int count[FD_REGIONS], const size_t offset[FD_REGIONS], size_t total, int host_slots,
                 be_stream s)
{
  memset(p, 0, sizeof *p);
  p->comm = MPI_COMM_NULL;
  p->short_exchange = -1;
  reset_requests(p);
  FD_MPI(MPI_Comm_dup(comm, &p->comm));
  FD_MPI(MPI_Comm_set_errhandler(p->comm, MPI_ERRORS_RETURN));
  p->on = 1;
  p->regions = regions;
  p->host_slots = host_slots;
  p->total = total;
  for (int r = 0; r < FD_REGIONS; r++) {
    p->nbr[r] = nbr[r];
    p->count[r] = count[r];
    p->offset[r] = offset[r];
  }
  int rank;
  FD_MPI(MPI_Comm_rank(comm, &rank));
  size_t bytes;
  if (fd_size_mul(total ? total : 1, sizeof(real_t), &bytes) != 0)
    return fd_set_error(FD_ERR_RUNTIME, "rank %d: the proxy's slots of %zu values do not fit in memory", rank, total);
  int rc = BE_OK;
  for (int q = 0; q < 2 && rc == BE_OK; q++) {
    rc = host_slots ? be_host_alloc_shared((void **)&p->send_slot[q], bytes)
                    : be_malloc_peer((void **)&p->send_slot[q], bytes);
    if (rc == BE_OK)
      rc = host_slots ? be_host_alloc_shared((void **)&p->recv_slot[q], bytes)
                      : be_malloc_peer((void **)&p->recv_slot[q], bytes);
  }
  if (rc == BE_OK) rc = be_host_alloc_shared((void **)&p->hin, FD_REGIONS * sizeof(uint32_t));
  if (rc == BE_OK) rc = be_host_alloc_shared((void **)&p->hout, FD_REGIONS * sizeof(uint32_t));
  if (rc != BE_OK)
    return fd_set_error(FD_ERR_RUNTIME, "rank %d: cannot allocate the proxy's slots (4 x %zu bytes) and words: %s",
                        rank, bytes, be_error_message());
  memset(p->hin, 0, FD_REGIONS * sizeof(uint32_t));
  memset(p->hout, 0, FD_REGIONS * sizeof(uint32_t));
  p->stream = s;
  if (be_host_alloc((void **)&p->nan_h, bytes) != BE_OK)
    return fd_set_error(FD_ERR_RUNTIME, "rank %d: cannot allocate the proxy's NaN slot (%zu bytes): %s", rank, bytes,
                        be_error_message());
  for (size_t e = 0; e < total; e++) p->nan_h[e] = (real_t)NAN;
  return FD_OK;
}

int proxy_destroy(fd_proxy *p)
{
  if (p->active) FD_CALL(proxy_drain(p));
  for (int s = 0; s < 2; s++) {
    if (p->host_slots) {
      FD_BE(be_host_free(p->send_slot[s]));
      FD_BE(be_host_free(p->recv_slot[s]));
    } else {
      FD_BE(be_free(p->send_slot[s]));
      FD_BE(be_free(p->recv_slot[s]));
    }
    p->send_slot[s] = p->recv_slot[s] = NULL;
  }
  FD_BE(be_host_free(p->hin));
  FD_BE(be_host_free(p->hout));
  FD_BE(be_host_free(p->nan_h));
  p->hin = p->hout = NULL;
  p->nan_h = NULL;
  if (p->comm != MPI_COMM_NULL) FD_MPI(MPI_Comm_free(&p->comm));
  p->on = 0;
  return FD_OK;
}

/* The wait hook: one step of service (proxy_progress), its failure as one line. */
static int serve_hook(void *ctx, char *why, size_t len)
{
  fd_proxy *p = ctx;
  if (proxy_progress(p) == FD_OK) return 0;
  snprintf(why, len, "%s", fd_error_message());
  return 1;
}

/* Posts the receive of exchange q of region r into receive slot q % 2. */
static int post_receive(fd_proxy *p, int r, uint32_t q)
{
  real_t *slot = p->recv_slot[q & 1u] + p->offset[r];
  FD_MPI(MPI_Irecv(slot, p->count[r], FD_MPI_REAL, p->nbr[r], fd_region_opposite(r), p->comm, &p->rreq[r][q & 1u]));
  p->rdone[r][q & 1u] = 0;
  p->posted[r] = q + 1;
  return FD_OK;
}

int proxy_start(fd_proxy *p)
{
  if (!p->on || p->active) return FD_OK;
  memset(p->hin, 0, FD_REGIONS * sizeof(uint32_t));
  memset(p->hout, 0, FD_REGIONS * sizeof(uint32_t));
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
  memset(p->sent, 0, sizeof p->sent);
  memset(p->posted, 0, sizeof p->posted);
  memset(p->recvd, 0, sizeof p->recvd);
  memset(p->rdone, 0, sizeof p->rdone);
  reset_requests(p);
  FD_CALL(poison_slots(p, p->recv_slot));
  for (int r = 0; r < FD_REGIONS; r++)
    if (p->regions >> r & 1u)
      for (uint32_t q = 0; q < 2; q++) FD_CALL(post_receive(p, r, q));
  p->active = 1;
  be_set_wait_hook(serve_hook, p);
  return FD_OK;
}

/* A completed receive of exchange q of region r: its count against the region's (the first
 * short one is kept for halo_short_message); the slot's face is in. */
static int receive_done(fd_proxy *p, int r, uint32_t q, const MPI_Status *st)
{
  int got = 0;
  FD_MPI(MPI_Get_count(st, FD_MPI_REAL, &got));
  if (got != p->count[r] && p->short_exchange < 0) {
    p->short_exchange = q;
    p->short_region = r;
    p->short_source = p->nbr[r];
    p->short_got = got;
    p->short_want = p->count[r];
  }
  p->rdone[r][q & 1u] = 1;
  return FD_OK;
}

/* Steps 1 and 2 for region r. */
static int start_region(fd_proxy *p, int r)
{
  const uint32_t packed = word_load(&p->hout[r]);
  /* 1. send each packed exchange e once the send of e - 2 from the same slot has completed
   *    (always by then, unless the launches did not wait: a test's NOWAIT, a stall) */
  while (at_least(packed, p->sent[r] + 1) && p->sreq[r][p->sent[r] & 1u] == MPI_REQUEST_NULL) {
    const uint32_t e = p->sent[r];
    const real_t *slot = p->send_slot[e & 1u] + p->offset[r];
    FD_MPI(MPI_Isend(slot, p->send_nothing ? 0 : p->count[r], FD_MPI_REAL, p->nbr[r], r, p->comm,
                     &p->sreq[r][e & 1u]));
    p->sent[r] = e + 1;
  }
  /* 2. post the receive of exchange q once the launch that read slot q % 2 last (exchange
   *    q - 2) has finished: packed >= q; exchanges 0 and 1 were posted at the start */
  while (at_least(packed, p->posted[r]) && at_least(p->recvd[r], p->posted[r] - 1))
    FD_CALL(post_receive(p, r, p->posted[r]));
  return FD_OK;
}

/* 3. One pass of MPI's progress over every request in flight (MPI_Testsome): the completed
 *    ones become MPI_REQUEST_NULL, each receive's count is checked. */
static int test_requests(fd_proxy *p)
{
  MPI_Request rq[4 * FD_REGIONS];
  int who[4 * FD_REGIONS], n = 0;
  for (int r = 0; r < FD_REGIONS; r++)
    for (int q = 0; q < 2 && (p->regions >> r & 1u); q++) {
      if (p->rreq[r][q] != MPI_REQUEST_NULL) who[n] = (r * 2 + q) * 2, rq[n++] = p->rreq[r][q];
      if (p->sreq[r][q] != MPI_REQUEST_NULL) who[n] = (r * 2 + q) * 2 + 1, rq[n++] = p->sreq[r][q];
    }
  if (n == 0) return FD_OK;
  int done = 0, idx[4 * FD_REGIONS];
  MPI_Status st[4 * FD_REGIONS];
  FD_MPI(MPI_Testsome(n, rq, &done, idx, st));
  for (int i = 0; i < done && done != MPI_UNDEFINED; i++) {
    const int w = who[idx[i]], r = w / 4, q = w / 2 % 2;
    if (w % 2) {
      p->sreq[r][q] = MPI_REQUEST_NULL;
    } else {
      p->rreq[r][q] = MPI_REQUEST_NULL;
      /* the exchange whose receive sat in slot q: the oldest one posted there not yet in */
      const uint32_t e = (p->recvd[r] & 1u) == (uint32_t)q ? p->recvd[r] : p->recvd[r] + 1;
      FD_CALL(receive_done(p, r, e, &st[i]));
    }
  }
  return FD_OK;
}

/* 4. Region r's arrivals in order: exchange e is published (hin = e + 1) once the send of
 *    e - 1 has completed, since the launch it lets go on writes that send's slot. */
static void publish_region(fd_proxy *p, int r)
{
  while (p->recvd[r] != p->posted[r]) {
    const uint32_t e = p->recvd[r];
    if (!p->rdone[r][e & 1u]) break;
    if (e >= 1 && (!at_least(p->sent[r], e) || p->sreq[r][(e - 1) & 1u] != MPI_REQUEST_NULL)) break;
    p->recvd[r] = e + 1;
    word_store(&p->hin[r], e + 1);
  }
}

int proxy_progress(fd_proxy *p)
{
  if (!p->active) return FD_OK;
  for (int r = 0; r < FD_REGIONS; r++)
    if (p->regions >> r & 1u) FD_CALL(start_region(p, r));
  FD_CALL(test_requests(p));
  for (int r = 0; r < FD_REGIONS; r++)
    if (p->regions >> r & 1u) publish_region(p, r);
  return FD_OK;
}

int proxy_ready(fd_proxy *p, unsigned regions, uint32_t e, double wait_s, int *stalled)
{
  *stalled = -1;
  if (!p->active) return FD_OK;
  const double t0 = fd_now();
  for (;;) {
    FD_CALL(proxy_progress(p));
    int missing = -1;
    for (int r = 0; r < FD_REGIONS && missing < 0; r++)
      if ((p->regions & regions) >> r & 1u && !at_least(word_load(&p->hin[r]), e + 1)) missing = r;
    if (missing < 0) return FD_OK;
    if (fd_now() - t0 > wait_s) {
      *stalled = missing;
      return FD_OK;
    }
  }
}

int proxy_drain(fd_proxy *p)
{
  if (!p->active) return FD_OK;
  be_set_wait_hook(NULL, NULL);
  p->active = 0;
  /* what the launches packed leaves (what cannot yet, no launch will read) */
  for (int r = 0; r < FD_REGIONS; r++)
    if (p->regions >> r & 1u) FD_CALL(start_region(p, r));
  /* each neighbour's count of faces sent, for each carried region */
  unsigned long long mine[FD_REGIONS], theirs[FD_REGIONS];
  MPI_Request rq[2 * FD_REGIONS];
  int n = 0;
  for (int r = 0; r < FD_REGIONS; r++) {
    if (!(p->regions >> r & 1u)) continue;
    mine[r] = p->sent[r];
    FD_MPI(MPI_Irecv(&theirs[r], 1, MPI_UNSIGNED_LONG_LONG, p->nbr[r], TAG_COUNT + fd_region_opposite(r), p->comm,
                     &rq[n++]));
    FD_MPI(MPI_Isend(&mine[r], 1, MPI_UNSIGNED_LONG_LONG, p->nbr[r], TAG_COUNT + r, p->comm, &rq[n++]));
  }
  for (int i = 0; i < n; i++) FD_MPI(MPI_Wait(&rq[i], MPI_STATUS_IGNORE));
  for (int r = 0; r < FD_REGIONS; r++) {
    if (!(p->regions >> r & 1u)) continue;
    const uint32_t want = (uint32_t)theirs[r];
    /* every face the neighbour sent, in order (at most two receives are posted at a time) */
    while (at_least(want, p->recvd[r] + 1)) {
      const uint32_t q = p->recvd[r];
      if (!at_least(p->posted[r], q + 1)) FD_CALL(post_receive(p, r, q));
      if (!p->rdone[r][q & 1u]) {
        MPI_Status st;
        FD_MPI(MPI_Wait(&p->rreq[r][q & 1u], &st));
        FD_CALL(receive_done(p, r, q, &st));
      }
      p->recvd[r] = q + 1;
    }
    /* the receives no face will match */
    for (uint32_t q = p->recvd[r]; q != p->posted[r]; q++) {
      if (p->rreq[r][q & 1u] == MPI_REQUEST_NULL) continue;
      FD_MPI(MPI_Cancel(&p->rreq[r][q & 1u]));
      FD_MPI(MPI_Wait(&p->rreq[r][q & 1u], MPI_STATUS_IGNORE));
    }
    for (int s = 0; s < 2; s++) FD_MPI(MPI_Wait(&p->sreq[r][s], MPI_STATUS_IGNORE));
  }
  reset_requests(p);
  return FD_OK;
}

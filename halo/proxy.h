/* proxy.h - the off-node proxy: the faces of a signalled pass (backend.h, be_signals) whose
 * neighbour this rank cannot reach by IPC (another node, or a device out of reach) travel
 * through MPI, driven by the host while the pass's launch waits on the device for them. The
 * launch packs a face into this rank's send slot and sets a word in host memory (hout); the
 * proxy sees it and sends the slot; it posts the receives ahead, and once a face has arrived
 * it sets the word the launch waits for (hin), also in host memory. halo.c owns one proxy per
 * halo and calls these functions; proxy.c holds the MPI calls of that traffic and calls
 * nothing of halo.c.
 *
 * Who serves it: the host thread between its launches. While the proxy is active (between
 * proxy_start and proxy_drain) it is the backend's wait hook (be_set_wait_hook): every host
 * wait for the device (a run-ahead mark, a stream sync) serves it; the solver also calls
 * proxy_progress after each launch. No other thread makes an MPI call for it, so it needs no
 * MPI thread level beyond what the program asks for. Where launches cannot wait on the device
 * (the host backend, be_info.launches_wait 0) the caller serves it before each launch until
 * the faces the launch reads have arrived (proxy_ready).
 *
 * Counters and words of region r (a face, or an edge or corner of a deep exchange), since the
 * last proxy_start (all zero then):
 *   hout[r]  set by this rank's launches: the number of exchanges packed for the neighbour
 *            (exchange e's face is in send slot e % 2 once hout[r] >= e + 1)
 *   hin[r]   set by the proxy: exchange e's face is in receive slot e % 2 once hin[r] >= e + 1
 *   sent     exchanges handed to MPI_Isend (slot e % 2, request sreq[r][e % 2])
 *   posted   receives posted (exchange q into slot q % 2, request rreq[r][q % 2])
 *   recvd    receives completed and published: hin[r] = recvd
 * Why no slot is read while written (w the launch of exchange e, which reads receive slot
 * e % 2 and writes send slot (e + 1) % 2, and sets hout[r] = e + 2 at its end):
 *   - a receive of exchange q is posted only once hout[r] >= q (or q <= 1): the launch of
 *     exchange q - 2, the last reader of slot q % 2, has finished;
 *   - hin[r] = e + 1 is set only once the send of exchange e - 1 has completed: launch e, which
 *     that setting lets go on, overwrites the slot that send reads;
 *   - a send of exchange e starts once hout[r] >= e + 1, after the launch's system-scope
 *     release: the slot holds the face.
 * The deep exchange follows the same rules (its pack of e sets hout[r] = e + 1; its unpack of e
 * reads receive slot e % 2; the pack of e + 1, which follows that unpack on the stream, sets
 * hout[r] = e + 2).
 */
#ifndef FDMINI_PROXY_H
#define FDMINI_PROXY_H

#include <mpi.h>

#include "backend.h"

typedef struct {
  int on;                   /* created with regions to carry on some rank (slots, words) */
  unsigned regions;         /* this rank's regions it carries (bit r) */
  int active;               /* serving: between proxy_start and proxy_drain */
  MPI_Comm comm;            /* a duplicate of the halo's communicator: its own tags */
  int nbr[FD_REGIONS];      /* the neighbour of each region */
  int count[FD_REGIONS];    /* elements of each region's message (every field) */
  size_t offset[FD_REGIONS]; /* the region's place in a slot (faces.h layout) */
  int host_slots;           /* 1: slots in host memory (MPI not GPU-aware), else device memory */
  size_t total;             /* elements of one slot */
  real_t *send_slot[2], *recv_slot[2]; /* by parity; receive slots NaN at each proxy_start */
  real_t *nan_h;            /* pinned host memory: one slot of NaN */
  be_stream stream;         /* the halo's, for the NaN copies */
  uint32_t *hin, *hout;     /* FD_REGIONS words each, be_host_alloc_shared */
  uint32_t sent[FD_REGIONS], posted[FD_REGIONS], recvd[FD_REGIONS];
  MPI_Request sreq[FD_REGIONS][2], rreq[FD_REGIONS][2]; /* MPI_REQUEST_NULL once complete */
  int rdone[FD_REGIONS][2]; /* the receive posted in slot s has completed (its count checked) */
  int send_nothing;         /* test only (--test-inject-fault=zero): messages carry 0 elements */
  /* the first short message received (MPI_Get_count below the region's count); -1: none */
  long long short_exchange;
  int short_region, short_source, short_got, short_want;
} fd_proxy;

/* Sets up *p for the regions `regions` of this rank (each message count[r] elements at
 * offset[r] of a slot of `total` elements, the faces.h layout; neighbours nbr[r]); slots in
 * host memory where host_slots, else device memory that MPI reads and writes (be_malloc_peer:
 * fine-grained on AMD; copies to them on stream s, synchronised). A rank may
 * carry no region (regions 0): it still takes part, since the communicator is duplicated.
 * Collective over comm; synchronous. A failed allocation is this rank's FD_ERR_RUNTIME (the
 * caller agrees it). proxy_destroy frees, after a failure too. */
int proxy_create(fd_proxy *p, MPI_Comm comm, unsigned regions, const int nbr[FD_REGIONS],
                 const int count[FD_REGIONS], const size_t offset[FD_REGIONS], size_t total, int host_slots,
                 be_stream s);
/* The first contact (call once after proxy_create succeeded on every rank, with no launch in
 * flight): each carried region's message once through each pair of slots, send slot q to the
 * neighbour's receive slot q, the send slots NaN first (the receive slots are NaN again at each
 * proxy_start). A GPU-aware MPI sets up its path between two processes' device buffers on their
 * first message (IPC handles, registrations), and that set-up can wait for the device: where a
 * launch of the receiving rank already waits for the proxy, its host thread then sits inside
 * MPI until that launch gives up waiting (the wait's limit, exit 3; bench/results/README.md,
 * "Across nodes", the first contact). Collective among the neighbours of the carried regions
 * (every rank of the communicator calls it); synchronous. */
int proxy_first_contact(fd_proxy *p);
/* Frees *p (drained first where it is active). Collective over the communicator of
 * proxy_create; synchronous. */
int proxy_destroy(fd_proxy *p);

/* Starts serving: zero words and counters, the receive slots NaN (a face that never arrives
 * poisons what reads it), the receives of exchanges 0 and 1 posted, the wait hook installed.
 * Call when no launch reads or writes the words or slots (every rank's words reset). Not
 * Collective; synchronous. */
int proxy_start(fd_proxy *p);
/* Everything that can be done now without waiting (the numbered steps of proxy.c): sends of
 * what the launches packed, receives posted, arrivals published. Not Collective; does not
 * block. */
int proxy_progress(fd_proxy *p);
/* For launches that cannot wait (be_info.launches_wait 0): serves until the face of exchange
 * e has arrived (hin >= e + 1) in each of the carried regions in `regions` (the launch's), at
 * most wait_s seconds; then *stalled = -1, or the first region still missing (the caller
 * records the stall and goes on). Not Collective; blocks. */
int proxy_ready(fd_proxy *p, unsigned regions, uint32_t e, double wait_s, int *stalled);
/* Stops serving once no launch of this rank is in flight: sends whatever the launches packed,
 * tells each neighbour how many faces it sent and takes every face it was sent, cancels the
 * receives no face will match, completes the sends, removes the wait hook. Nothing of a run
 * of passes is left in MPI after it. Collective among the neighbours of the carried regions
 * (every rank calls it at the same point); synchronous. */
int proxy_drain(fd_proxy *p);

#endif

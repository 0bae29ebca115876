/* halo.c - the halo exchange (halo.h). Every MPI call of the exchange is in this file.
 *
 * Each active face travels one of two ways, chosen once by halo_create (--halo-path):
 *   MPI  the packed face goes to MPI as a device buffer (GPU-aware MPI) or through pinned
 *        host memory (staged);
 *   IPC  the neighbour runs on this node on a device this one can reach. At set-up each rank
 *        maps the neighbour's send buffer and flag words; in every exchange it copies the
 *        neighbour's packed face into its own receive buffer on its halo stream ("pull"),
 *        ordered on the device by flags the two streams set and await (see "the exchange"):
 *        no MPI call and no host wait per exchange. Where every face of the rank goes by IPC
 *        (to a neighbour on its own device or on a peer device of the node), the solver may
 *        instead signal the exchange inside its pass's launch (halo_signals: slots 2 and 3 of
 *        send_block and words after the flags; the kernels load the faces of neighbours on
 *        their device, and store theirs into the slots of neighbours on other devices:
 *        backend.h, be_signals).
 * Exchange k uses the buffers of parity s = k % 2 and runs in numbered steps, 1-3 in
 * halo_exchange_begin, 4-6 in halo_exchange_end and 7-8 in halo_exchange_unpack.
 * "Face" means any region of faces.h (face, edge or corner); each active one is one message
 * (one IPC copy), carrying every field of the exchange.
 * TRIGGERED.md beside this file says how stream-ordered sends (Cray MPICH's MPIX_Enqueue_*,
 * MPICH 4.2's MPIX_*_enqueue) would replace the host's waits of steps 5 and 6, and how
 * kernel-triggered ones would replace the off-node proxy's host part (proxy.c).
 * Tags: face f leaves with the sender's region index f and is
 * region fd_region_opposite(f) of the receiver (the x-low face of one rank meets the x-high
 * face of the other; an edge meets the edge of the opposite direction).
 */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "fd_error.h"
#include "halo.h"
#include "mpi_gpu.h"

/* Tags of the set-up swaps (plus the region); the exchange's messages use 0..FD_REGIONS-1, and 128
 * is src/solver/floors.c's ping-pong. */
enum { TAG_CARD = 64, TAG_DECIDE = 96 };

/* Region f's message: its place in the buffers and its elements (every field). */
static size_t msg_offset(const fd_halo *h, int f) { return h->faces.offset[f]; }
static size_t msg_count(const fd_halo *h, int f) { return h->faces.count[f] * (size_t)h->fields; }

int halo_check_counts(const fd_grid *g, int fields, const int nbr[FD_REGIONS], int rank)
{
  for (int r = 0; r < FD_REGIONS; r++) {
    const size_t count = fd_region_count(g->n, g->ghost, r) * (size_t)fields;
    if (nbr[r] == MPI_PROC_NULL || count <= (size_t)INT_MAX) continue;
    int dir[3];
    fd_region_dir(r, dir);
    return fd_set_error(FD_ERR_RUNTIME, "rank %d: the halo exchange of the local block %d x %d x %d does not fit "
                        "in MPI messages: the region towards (%+d,%+d,%+d) holds %zu values, more than the %d one "
                        "message can count; use more ranks%s", rank, g->n[0], g->n[1], g->n[2], dir[0], dir[1],
                        dir[2], count, INT_MAX, g->ghost > 1 ? " or a smaller --halo-width" : "");
  }
  return FD_OK;
}

/* MPI_Waitall(n, rq, MPI_STATUSES_IGNORE), the set-up swaps' wait (the exchange keeps its
 * statuses: their counts are checked).
 * MPICH (and so Cray MPICH) declares the statuses as an array parameter and defines
 * MPI_STATUSES_IGNORE as the address 1; GCC 11+ then sees an object of size 0 passed where
 * elements are written and warns -Wstringop-overflow (pmodels/mpich#5687), which -Werror turns
 * into an error. The argument is the standard's "ignore" value and MPI writes nothing there:
 * the warning is silenced for this one call, nothing else. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstringop-overflow"
#endif
static int wait_all(int n, MPI_Request *rq) { return MPI_Waitall(n, rq, MPI_STATUSES_IGNORE); }
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

/* ---- GPU-aware or staged MPI ---- */

int halo_choose_mode(MPI_Comm comm, fd_mpi_gpu requested, const be_info *dev, int *staged)
{
  char why[256];
  int aware = mpi_gpu_aware(dev, why, sizeof why);
  int err = FD_OK;
  if (requested == FD_MPI_GPU_AWARE && !aware)
    err = fd_set_error(FD_ERR_USAGE, "--mpi-gpu aware: this MPI is not GPU-aware (%s); use --mpi-gpu staged or auto", why);
  FD_CALL(fd_agree(comm, err));
  /* auto: every rank must agree, or a message would leave as a device pointer on one side */
  int all_aware = aware;
  FD_MPI(MPI_Allreduce(MPI_IN_PLACE, &all_aware, 1, MPI_INT, MPI_MIN, comm));
  *staged = requested == FD_MPI_GPU_STAGED || !all_aware;
  return FD_OK;
}

/* ---- set-up: the transport of each face ---- */

/* What a rank tells the neighbour on face f about itself and its face towards it. */
typedef struct {
  int node;                   /* the sender's node id (fd_node.id, src/run/bind.h) */
  int can_share;              /* the sender's backend can share device memory */
  char pci[32];               /* the sender's device */
  unsigned long long total;   /* elements of one parity of the sender's send buffer */
  int slots;                  /* slots of total elements in its send_block */
  unsigned long long offset;  /* element offset of the sender's face towards the receiver */
  unsigned long long count;   /* its elements */
  be_ipc_handle mem, flags;   /* the sender's send_block and flag words */
} ipc_card;

/* Sends item f of `mine` to the neighbour on face f and receives that neighbour's item into
 * item f of `theirs`, for every active face; items are `size` bytes. Collective among
 * neighbours; synchronous. */
static int swap_with_neighbours(fd_halo *h, const void *mine, void *theirs, size_t size, int tag)
{
  MPI_Request rq[2 * FD_REGIONS];
  int n = 0;
  if (size > (size_t)INT_MAX) /* items are small structs: a count MPI takes */
    return fd_set_error(FD_ERR_RUNTIME, "swap_with_neighbours: %zu-byte items exceed one MPI message", size);
  for (int f = 0; f < FD_REGIONS; f++) {
    if (!h->faces.active[f]) continue;
    FD_MPI(MPI_Irecv((char *)theirs + f * size, (int)size, MPI_BYTE, h->nbr[f], tag + fd_region_opposite(f), h->comm, &rq[n++]));
    FD_MPI(MPI_Isend((const char *)mine + f * size, (int)size, MPI_BYTE, h->nbr[f], tag + f, h->comm, &rq[n++]));
  }
  FD_MPI(wait_all(n, rq));
  return FD_OK;
}

/* Words of h->flags (fd_halo): word FLAG_PACKED(f, s) is written only by the neighbour on face f,
 * when it has packed an exchange of parity s (its value: flag_value). */
#define FLAG_PACKED(f, s) ((s) * FD_REGIONS + (f))
/* then the signalled exchange's words (backend.h, be_signals) */
enum { SIG_WORDS_AT = 2 * FD_REGIONS, FLAG_WORDS = SIG_WORDS_AT + BE_SIG_WORDS };

/* This rank's flag words, zeroed ("nothing yet") before any neighbour learns of them (the
 * cards). Synchronous. */
static int create_flags(fd_halo *h)
{
  static const uint32_t zero[FLAG_WORDS];
  FD_BE(be_malloc_peer((void **)&h->flags, sizeof zero)); /* polled by peers */
  FD_BE(be_memcpy_async(h->flags, zero, sizeof zero, BE_COPY_H2D, h->stream));
  FD_BE(be_stream_sync(h->stream));
  return FD_OK;
}

/* This rank's card for the neighbour on face f (handles only when it can share). */
static int fill_card(const fd_halo *h, int f, int can, const be_info *dev, int node, ipc_card *c)
{
  c->node = node;
  c->can_share = can;
  snprintf(c->pci, sizeof c->pci, "%s", dev->pci_bus_id);
  c->total = h->faces.total;
  c->slots = h->slots;
  c->offset = msg_offset(h, f);
  c->count = msg_count(h, f);
  if (!can) return FD_OK;
  FD_BE(be_ipc_mem_handle(h->send_block, &c->mem));
  FD_BE(be_ipc_mem_handle(h->flags, &c->flags));
  return FD_OK;
}

/* *ok = 1 when this rank can copy face f from the neighbour whose card is c; else 0 and the
 * reason (can, why: whether this rank's backend can share, and why not). Not Collective. */
static int face_reachable(const fd_halo *h, int f, int can, const char *why, int node,
                          const ipc_card *c, int *ok, char *reason, size_t len)
{
  *ok = 0;
  if (!can) snprintf(reason, len, "%s", why);
  else if (!c->can_share) snprintf(reason, len, "its backend cannot share device memory");
  else if (c->node != node) snprintf(reason, len, "it runs on another node");
  else if (c->count != msg_count(h, f))
    snprintf(reason, len, "its face has %llu points, this one %zu", c->count, msg_count(h, f));
  else FD_BE(be_device_can_reach(c->pci, ok, reason, len));
  return FD_OK;
}

/* Releases what this rank opened of its neighbours. */
static int close_peers(fd_halo *h)
{
  for (int f = 0; f < FD_REGIONS; f++) {
    FD_BE(be_ipc_mem_close(h->peer_block[f]));
    FD_BE(be_ipc_mem_close(h->peer_flags[f]));
    h->peer_block[f] = NULL;
    h->peer_flags[f] = NULL;
    h->peer_face[f][0] = h->peer_face[f][1] = NULL;
    h->peer_sig[f][0] = h->peer_sig[f][1] = NULL;
  }
  return FD_OK;
}

/* Maps the send buffer and the flag words of the neighbour of every face with ipc_able[f]; on
 * failure one line in the error message and FD_ERR_RUNTIME. Not Collective. */
static int open_peers(fd_halo *h, const ipc_card card[FD_REGIONS], int rank)
{
  for (int f = 0; f < FD_REGIONS; f++) {
    if (!h->ipc_able[f]) continue;
    if (be_ipc_mem_open(&card[f].mem, &h->peer_block[f]) != BE_OK)
      return fd_set_error(FD_ERR_RUNTIME, "rank %d cannot map the send buffer of rank %d: %s", rank,
                          h->nbr[f], be_error_message());
    void *flags = NULL;
    if (be_ipc_mem_open(&card[f].flags, &flags) != BE_OK)
      return fd_set_error(FD_ERR_RUNTIME, "rank %d cannot map the flags of rank %d: %s", rank, h->nbr[f], be_error_message());
    h->peer_flags[f] = flags;
    for (int s = 0; s < 2; s++) {
      h->peer_face[f][s] = (real_t *)h->peer_block[f] + s * card[f].total + card[f].offset;
      if (card[f].slots == 4) h->peer_sig[f][s] = (real_t *)h->peer_block[f] + (2 + s) * card[f].total + card[f].offset;
    }
  }
  return FD_OK;
}

/* Decides ipc_able[f] and ipc[f] for every active face and maps the IPC neighbours (see
 * halo_create): a face can go by IPC when both sides can reach each other. Collective over
 * comm. */
static int choose_transport(fd_halo *h, fd_halo_path path, const be_info *dev, int node)
{
  /* every rank has the same path (options) and staged verdict (halo_choose_mode agreed it) */
  if (path == FD_HALO_PATH_MPI) return FD_OK;
  char why[256] = "", reason[FD_REGIONS][256];
  int rank, ok[FD_REGIONS] = {0}, peer_ok[FD_REGIONS] = {0};
  FD_MPI(MPI_Comm_rank(h->comm, &rank));
  const int can = be_ipc_supported(why, sizeof why);
  FD_CALL(fd_agree(h->comm, path == FD_HALO_PATH_IPC && !can
                                ? fd_set_error(FD_ERR_USAGE, "--halo-path ipc: %s; use --halo-path auto or mpi", why)
                                : FD_OK));
  if (can && !h->flags) FD_CALL(create_flags(h));
  ipc_card mine[FD_REGIONS], theirs[FD_REGIONS];
  memset(mine, 0, sizeof mine);
  memset(theirs, 0, sizeof theirs);
  for (int f = 0; f < FD_REGIONS; f++)
    if (h->faces.active[f]) FD_CALL(fill_card(h, f, can, dev, node, &mine[f]));
  FD_CALL(swap_with_neighbours(h, mine, theirs, sizeof mine[0], TAG_CARD));
  for (int f = 0; f < FD_REGIONS; f++) {
    reason[f][0] = '\0';
    if (h->faces.active[f])
      FD_CALL(face_reachable(h, f, can, why, node, &theirs[f], &ok[f], reason[f], sizeof reason[f]));
  }
  FD_CALL(swap_with_neighbours(h, ok, peer_ok, sizeof ok[0], TAG_DECIDE));
  int err = FD_OK;
  for (int f = 0; f < FD_REGIONS; f++) {
    h->ipc_able[f] = h->ipc[f] = h->faces.active[f] && ok[f] && peer_ok[f];
    h->same_device[f] = h->ipc[f] && strcmp(theirs[f].pci, dev->pci_bus_id) == 0;
    if (path == FD_HALO_PATH_IPC && h->faces.active[f] && !h->ipc[f] && err == FD_OK)
      err = fd_set_error(FD_ERR_USAGE, "--halo-path ipc: rank %d cannot reach its neighbour rank %d by IPC: %s; use --halo-path auto or mpi",
                         rank, h->nbr[f], reason[f][0] ? reason[f] : "the neighbour cannot reach this rank");
  }
  FD_CALL(fd_agree(h->comm, err));
  /* map the neighbours; where that fails anywhere, ipc refuses and auto falls back to MPI */
  if (fd_agree(h->comm, open_peers(h, theirs, rank) == FD_OK ? FD_OK : FD_ERR_USAGE) == FD_OK) return FD_OK;
  FD_CALL(close_peers(h));
  for (int f = 0; f < FD_REGIONS; f++) h->ipc_able[f] = h->ipc[f] = h->same_device[f] = 0;
  if (path == FD_HALO_PATH_IPC)
    return fd_set_error(FD_ERR_USAGE, "--halo-path ipc: %s; use --halo-path auto or mpi", fd_error_message());
  if (rank == 0) printf("fdmini: notice: IPC halo path unavailable (%s); faces go through MPI\n", fd_error_message());
  return FD_OK;
}

/* Runs of MPI faces in the buffers for the staged copies (inactive faces between them may
 * ride along). An IPC face ends a run: its region of the device receive buffer is written by
 * its copy, and a staged copy over it would overwrite the face with stale host memory. */
static void plan_staging(fd_halo *h)
{
  int open_run = 0;
  h->n_stage = 0;
  for (int f = 0; f < FD_REGIONS; f++) {
    if (!h->faces.active[f]) continue;
    if (h->ipc[f]) {
      open_run = 0;
      continue;
    }
    if (!open_run) h->stage_lo[h->n_stage++] = msg_offset(h, f);
    h->stage_n[h->n_stage - 1] = msg_offset(h, f) + msg_count(h, f) - h->stage_lo[h->n_stage - 1];
    open_run = 1;
  }
}

/* Counts this rank's active faces by transport, and all ranks' (n_ipc, n_mpi, *_faces_all,
 * ipc_able_all). Collective over comm. */
static int count_faces(fd_halo *h)
{
  long long counts[5] = {0, 0, 0, 0, 0};
  for (int f = 0; f < FD_REGIONS; f++) {
    h->proxy_on[f] = h->use_proxy && h->proxy_able[f] && !h->ipc[f];
    if (h->faces.active[f]) {
      counts[h->ipc[f] ? 0 : 1]++;
      counts[2] += h->ipc_able[f];
      counts[3] += h->proxy_on[f];
      counts[4] += h->proxy_able[f];
    }
  }
  h->n_ipc = (int)counts[0];
  h->n_mpi = (int)counts[1];
  h->n_proxy = (int)counts[3];
  FD_MPI(MPI_Allreduce(MPI_IN_PLACE, counts, 5, MPI_LONG_LONG, MPI_SUM, h->comm));
  h->ipc_faces_all = counts[0];
  h->mpi_faces_all = counts[1];
  h->ipc_able_all = counts[2];
  h->proxy_faces_all = counts[3];
  h->proxy_able_all = counts[4];
  return FD_OK;
}

/* The off-node proxy (proxy.h) for the faces that cannot go by IPC, where the path allows it
 * (auto where launches wait on the device, or proxy), the exchange may be signalled (one field
 * at width 1, any at S > 1) and the device loads every kernel at start-up (be_preinit: no launch
 * may block the host while a launch waits for it); its words need this rank's signal words
 * too. A rank without such faces takes part (the communicator is duplicated) where any rank
 * has one. --halo-path proxy where the device loads kernels lazily: an agreed usage error. The
 * proxy's first contact with each neighbour (proxy_first_contact) happens here, before any
 * launch waits for it. Collective over comm. */
static int create_proxy(fd_halo *h, fd_halo_path path, const be_info *dev)
{
  const int signalable = h->fields == 1 || h->width > 1;
  const int wanted = signalable && (path == FD_HALO_PATH_PROXY || (path == FD_HALO_PATH_AUTO && dev->launches_wait));
  FD_CALL(fd_agree(h->comm, path == FD_HALO_PATH_PROXY && !dev->eager_loading
                                ? fd_set_error(FD_ERR_USAGE, "--halo-path proxy: this program did not ask the GPU "
                                               "runtime to load every kernel at start-up (be_preinit), so a launch could "
                                               "block the host while another waits for the proxy")
                                : FD_OK));
  unsigned regions = 0;
  int count[FD_REGIONS] = {0};
  size_t offset[FD_REGIONS] = {0};
  for (int f = 0; f < FD_REGIONS; f++) {
    h->proxy_able[f] = wanted && dev->eager_loading && h->faces.active[f] && !h->ipc_able[f];
    if (h->proxy_able[f]) regions |= 1u << f;
    count[f] = (int)msg_count(h, f); /* halo_check_counts: at most INT_MAX */
    offset[f] = msg_offset(h, f);
  }
  int any = regions != 0;
  FD_MPI(MPI_Allreduce(MPI_IN_PLACE, &any, 1, MPI_INT, MPI_MAX, h->comm));
  if (!any) return FD_OK;
  if (!h->flags) FD_CALL(create_flags(h)); /* the launches' own words */
  const int rc = proxy_create(&h->proxy, h->comm, regions, h->nbr, count, offset, h->faces.total, h->staged, h->stream);
  FD_CALL(fd_agree(h->comm, rc));
  return fd_agree(h->comm, proxy_first_contact(&h->proxy));
}

/* h->poison_d: `bytes` of NaN on the device (halo_poison_ghosts unpacks it), copied once from a
 * host array. Synchronous on the halo stream. */
static int make_poison(fd_halo *h, size_t bytes, int rank)
{
  real_t *nan_h = malloc(bytes);
  if (!nan_h || be_malloc((void **)&h->poison_d, bytes) != BE_OK) {
    free(nan_h);
    return fd_set_error(FD_ERR_RUNTIME, "rank %d: cannot allocate the NaN buffer of the halo (%zu bytes)", rank, bytes);
  }
  for (size_t e = 0; e < h->faces.total; e++) nan_h[e] = (real_t)NAN;
  int ok = be_memcpy_async(h->poison_d, nan_h, bytes, BE_COPY_H2D, h->stream) == BE_OK &&
           be_stream_sync(h->stream) == BE_OK;
  free(nan_h);
  return ok ? FD_OK : fd_set_error(FD_ERR_RUNTIME, "rank %d: halo NaN buffer: %s", rank, be_error_message());
}

/* The region buffers: device send and receive blocks of both parities (the receive ones NaN),
 * in staged mode the pinned host ones, and the NaN buffer of halo_poison_ghosts; send_block has
 * the two slots of the signalled exchange only where it may be signalled (may_signal). Message
 * counts (halo_check_counts) and sizes are checked first; a failure on any rank (memory can
 * run out on some only) is agreed, with the lowest failing rank's line. Collective over comm. */
static int allocate_buffers(fd_halo *h, int may_signal)
{
  int rank;
  FD_MPI(MPI_Comm_rank(h->comm, &rank));
  const int *n = h->grid.n;
  size_t bytes = 0, two = 0, slots = 0;
  h->slots = may_signal ? 4 : 2;
  int err = halo_check_counts(&h->grid, h->fields, h->nbr, rank);
  if (err == FD_OK && (fd_size_mul(h->faces.total, sizeof(real_t), &bytes) != 0 || fd_size_mul(bytes, 2, &two) != 0 ||
                       fd_size_mul(bytes, (size_t)h->slots, &slots) != 0))
    err = fd_set_error(FD_ERR_RUNTIME, "rank %d: the halo buffers of the local block %d x %d x %d do not fit in "
                       "memory: their byte count exceeds what a size_t counts", rank, n[0], n[1], n[2]);
  /* the signalled slots are loaded and stored by peers: be_malloc_peer */
  if (err == FD_OK && ((may_signal ? be_malloc_peer((void **)&h->send_block, slots)
                                   : be_malloc((void **)&h->send_block, slots)) != BE_OK ||
                       be_malloc((void **)&h->recv_block, two) != BE_OK))
    err = fd_set_error(FD_ERR_RUNTIME, "rank %d: cannot allocate the halo buffers of the local block %d x %d x %d "
                       "(%zu and %zu bytes): %s", rank, n[0], n[1], n[2], slots, two, be_error_message());
  if (err == FD_OK && h->staged &&
      (be_host_alloc((void **)&h->send_h, bytes) != BE_OK || be_host_alloc((void **)&h->recv_h[0], bytes) != BE_OK ||
       be_host_alloc((void **)&h->recv_h[1], bytes) != BE_OK))
    err = fd_set_error(FD_ERR_RUNTIME, "rank %d: cannot allocate the staged halo buffers of the local block %d x %d x %d "
                       "(3 x %zu bytes of pinned memory): %s", rank, n[0], n[1], n[2], bytes, be_error_message());
  if (err == FD_OK && h->n_msgs > 0) err = make_poison(h, bytes, rank);
  FD_CALL(fd_agree(h->comm, err));
  for (int s = 0; s < 2; s++) {
    h->send_d[s] = h->send_block + s * h->faces.total;
    h->recv_d[s] = h->recv_block + s * h->faces.total;
  }
  FD_CALL(halo_poison_receives(h, h->stream));
  FD_BE(be_stream_sync(h->stream));
  return FD_OK;
}

int halo_create(fd_halo *h, MPI_Comm comm, const int nbr[FD_REGIONS], const fd_grid *g,
                int fields, int staged, fd_halo_path path, const be_info *dev, int node,
                be_stream halo_stream)
{
  memset(h, 0, sizeof *h);
  h->drop_region = -1;
  h->short_exchange = -1;
  h->proxy.short_exchange = -1; /* no proxy yet, no short message either */
  h->proxy.comm = MPI_COMM_NULL;
  h->sig_wait_s = HALO_SIGNAL_WAIT_S;
  h->sig_stall_face = -1;
  h->comm = comm;
  h->grid = *g;
  h->width = g->ghost;
  h->fields = fields;
  h->staged = staged;
  h->stream = halo_stream;
  fd_faces_init_deep(&h->faces, g->n, h->width, fields, 0);
  fd_faces_init_deep(&h->faces2, g->n, h->width, fields, fields > 1 ? 1 : 0);
  for (int f = 0; f < FD_REGIONS; f++) {
    h->nbr[f] = nbr[f];
    h->faces.active[f] = h->faces2.active[f] = nbr[f] != MPI_PROC_NULL && h->faces.count[f] > 0;
    if (h->faces.active[f]) {
      h->bytes_sent += msg_count(h, f) * sizeof(real_t);
      h->n_msgs++;
    }
  }
  /* the signalled exchange needs IPC (faces on this rank's device) and, at width 1, one field
   * (deeper ones take both: be_signals_exchange): without IPC (the host backend, --halo-path mpi)
   * its two slots would never be used */
  char why[256];
  const int may_signal = (fields == 1 || h->width > 1) && path != FD_HALO_PATH_MPI && be_ipc_supported(why, sizeof why);
  FD_CALL(allocate_buffers(h, may_signal));
  FD_CALL(choose_transport(h, path, dev, node));
  h->launches_wait = dev->launches_wait;
  FD_CALL(create_proxy(h, path, dev));
  FD_CALL(count_faces(h));
  plan_staging(h);
  for (int s = 0; s < 2; s++) {
    FD_BE(be_event_create_sync(&h->pack_end[s]));
    FD_BE(be_event_create(&h->pack_start[s]));
    FD_BE(be_event_create(&h->pack_stop[s]));
    FD_BE(be_event_create(&h->unpack_start[s]));
    FD_BE(be_event_create(&h->unpack_end[s]));
    FD_BE(be_event_create(&h->xfer_start[s]));
    FD_BE(be_event_create(&h->xfer_end[s]));
  }
  return FD_OK;
}

const char *halo_path_resolved(long long ipc_faces, long long mpi_faces, long long proxy_faces)
{
  if (proxy_faces) return "proxy";
  if (ipc_faces && mpi_faces) return "mixed";
  if (ipc_faces) return "ipc";
  return mpi_faces ? "mpi" : "none";
}

/* Frees the halo's graphs (they are captured again when next run). */
static int clear_graphs(fd_halo *h)
{
  return fd_graph_clear(&h->graphs) == 0 ? FD_OK : fd_set_error(FD_ERR_RUNTIME, "halo graphs: %s", be_error_message());
}

int halo_destroy(fd_halo *h)
{
  if (h->ipc_able_all > 0) {
    FD_BE(be_stream_sync(h->stream)); /* no copy of this rank reads a neighbour any more */
    FD_CALL(close_peers(h));
    FD_MPI(MPI_Barrier(h->comm)); /* nor does any neighbour read or wait on this rank */
  }
  FD_CALL(clear_graphs(h));
  if (h->proxy.on) FD_CALL(proxy_destroy(&h->proxy));
  FD_BE(be_free(h->send_block));
  FD_BE(be_free(h->recv_block));
  FD_BE(be_free(h->poison_d));
  FD_BE(be_free(h->flags));
  FD_BE(be_host_free(h->send_h));
  for (int s = 0; s < 2; s++) FD_BE(be_host_free(h->recv_h[s]));
  be_event *ev[] = {h->pack_end, h->pack_start, h->pack_stop, h->unpack_start, h->unpack_end, h->xfer_start, h->xfer_end};
  for (size_t i = 0; i < sizeof ev / sizeof ev[0]; i++)
    for (int s = 0; s < 2; s++)
      if (ev[i][s]) FD_BE(be_event_destroy(ev[i][s]));
  memset(h, 0, sizeof *h);
  return FD_OK;
}

/* ---- the exchange ----
 *
 * Why no buffer is read while it is written, and the device waits bind to the right records:
 * - Receive buffers alternate by parity: the unpack (and the staged copy to the device) runs
 *   on the halo stream after halo_exchange_end has returned, and a neighbour may already send
 *   the next exchange's faces. MPI faces of exchange k+1 land in the buffer of k-1, whose unpack ran on the halo
 *   stream before the pack of k, which step 5 of k waited for. Each face has its own region of
 *   the buffers, and the staged copies cover runs of MPI faces only (plan_staging).
 * - IPC faces are ordered by flags, not by messages or host waits: word FLAG_PACKED(f, s) of
 *   this rank says that the neighbour on face f has packed its exchange of parity s. The
 *   neighbour sees this rank on its face opposite(f) = g, so this rank writes the neighbour's
 *   word PACKED(g, s) and reads its own PACKED(f, s). The IPC exchanges of parity s are
 *   counted (uses[s]); the j-th carries the value 1 + j % 2 (flag_value: 1, 2, 1, ...; the
 *   zeroed word means "nothing yet"). Per IPC face f of exchange k, parity s, on the halo
 *   stream, in stream order:
 *     step 2: pack into send_d[s];
 *     step 3: set the neighbour's PACKED(g, s) to this exchange's value;
 *     step 4: wait until PACKED(f, s) equals it (the neighbour's pack of k is complete); copy
 *             its face out of its send_d[s] into recv_d[s].
 *   Why a wait binds to exchange k: word PACKED(f, s) has one writer, the neighbour's halo
 *   stream, which writes it once per exchange of parity s. Its write for k + 2 follows, on
 *   its stream, its wait for this rank's PACKED of k + 1, which this rank's stream sets after
 *   the wait for k. So when this rank waits for k the word holds the value of k - 2 or of k,
 *   and the two differ: the wait, for equality, is met by k alone. The set runs after the
 *   stream's earlier work has completed, behind a system-wide memory fence
 *   (be_stream_set_flag), so the data is visible before the flag is; the reader's copy is
 *   enqueued after its wait.
 *   Why no pack overwrites a face the neighbour still copies: the pack of k + 2 into send_d[s]
 *   (in begin, or ahead in the fused receive of k + 1, halo_fused_receive, which the stream
 *   runs after that exchange's wait) follows, on this rank's stream, its wait for the
 *   neighbour's PACKED of k + 1, which the neighbour sets after its pack of k + 1, which its
 *   stream runs after its copy of k out of send_d[s]. The unpack of k reads recv_d[s] after the copy (stream order); the copy of k + 2
 *   into it follows this rank's unpack of k in stream order too.
 *   No deadlock: every wait of exchange k needs the neighbour's pack of k, which its stream
 *   reaches without waiting for this rank's later work; all ranks make the same exchanges. A
 *   stream wait takes no SM, so ranks sharing one GPU work too.
 *   The values repeat (no wrap-around, no limit on the exchanges), and the work of an
 *   exchange depends only on its parity and uses[s] % 2 (halo_graph_phase): a caller's graph
 *   that holds whole exchanges replays them when the phase is again the same.
 *   halo_destroy synchronises the halo stream (no copy or set of this rank touches a
 *   neighbour any more) and meets every rank in a barrier before any rank frees what others
 *   have mapped.
 */

/* 1. Posts the receives of slot s: each MPI face into recv (device, or pinned host when
 * staged); halo_exchange_begin posts them right after it enqueued the pack, so that the host's
 * MPI calls overlap the device's pack. Appends to req[]. */
static int post_receives(fd_halo *h, int s)
{
  real_t *recv = h->staged ? h->recv_h[s] : h->recv_d[s];
  h->nrecv = 0;
  for (int f = 0; f < FD_REGIONS; f++)
    if (h->faces.active[f] && !h->ipc[f]) {
      h->recv_region[h->nrecv++] = f;
      FD_MPI(MPI_Irecv(recv + msg_offset(h, f), (int)msg_count(h, f), FD_MPI_REAL, h->nbr[f],
                       fd_region_opposite(f), h->comm, &h->req[h->nreq++]));
    }
  return FD_OK;
}

/* Copies the staged runs of slot s between device and pinned host buffers on the halo stream:
 * send_d -> send_h (to_host) or recv_h -> recv_d. Asynchronous. */
static int stage(fd_halo *h, int s, int to_host)
{
  for (int r = 0; r < h->n_stage; r++) {
    const size_t lo = h->stage_lo[r], bytes = h->stage_n[r] * sizeof(real_t);
    if (to_host) FD_BE(be_memcpy_async(h->send_h + lo, h->send_d[s] + lo, bytes, BE_COPY_D2H, h->stream));
    else FD_BE(be_memcpy_async(h->recv_d[s] + lo, h->recv_h[s] + lo, bytes, BE_COPY_H2D, h->stream));
  }
  return FD_OK;
}

/* The work of a pack and of an unpack, as graph_cache.h work: only device work on h->stream. */
typedef struct {
  fd_halo *h;
  const real_t *u, *u2;
  int s;
} pack_ctx;

static int pack_work(void *ctx, be_stream st)
{
  const pack_ctx *c = ctx;
  fd_halo *h = c->h;
  FD_BE(be_pack_faces(&h->grid, &h->faces, c->u, h->send_d[c->s], st));
  if (h->fields > 1) FD_BE(be_pack_faces(&h->grid, &h->faces2, c->u2, h->send_d[c->s], st));
  if (h->staged) FD_CALL(stage(h, c->s, 1));
  return FD_OK;
}

/* fd_graph_run on the halo stream, with the errors as fd errors. */
static int run_graph(fd_halo *h, const fd_graph_key *k, fd_graph_work work, void *ctx)
{
  if (h->direct) return work(ctx, h->stream); /* a caller captures the stream */
  if (fd_graph_run(&h->graphs, k, h->stream, work, ctx) == 0) return FD_OK;
  if (h->graphs.work_rc) return h->graphs.work_rc;
  return fd_set_error(FD_ERR_RUNTIME, "halo graphs: %s", be_error_message());
}

int halo_use_graphs(fd_halo *h, int on)
{
  h->graphs.on = on;
  return clear_graphs(h);
}

int halo_use_ipc(fd_halo *h, int on)
{
  /* nothing of the last exchanges is in flight anywhere: the flags' values go on from the
   * IPC exchanges made so far, whose copies (and the DONE flags behind them) are complete */
  FD_BE(be_stream_sync(h->stream));
  FD_MPI(MPI_Barrier(h->comm));
  for (int f = 0; f < FD_REGIONS; f++) h->ipc[f] = on && h->ipc_able[f];
  FD_CALL(count_faces(h));
  plan_staging(h);
  return clear_graphs(h); /* staged MPI: packs and unpacks copy the MPI faces' runs, just changed */
}

/* Once no launch of this rank is in flight (the caller waited for its streams; this waits for
 * the halo stream): hands what the launches packed to MPI, meets every rank (no launch of any
 * rank waits for the proxy any more), and drains the proxy (proxy_drain: nothing of the passes
 * before left in MPI, no host wait serving it). Collective over comm. */
static int quiesce(fd_halo *h)
{
  FD_BE(be_stream_sync(h->stream));
  FD_CALL(proxy_progress(&h->proxy));
  FD_MPI(MPI_Barrier(h->comm));
  return proxy_drain(&h->proxy);
}

int halo_use_proxy(fd_halo *h, int on)
{
  if (!on && h->proxy.active) FD_CALL(quiesce(h));
  h->use_proxy = on && h->proxy.on;
  return count_faces(h);
}

/* The value of this exchange's flags, parity s (see "the exchange"). */
static uint32_t flag_value(const fd_halo *h, int s) { return (uint32_t)(1 + h->uses[s] % 2); }

/* 2. The halo stream packs every active face of u (and u2) into send_d[s] once the fields are
 * ready; staged: copies the MPI faces to pinned host memory right behind; records pack_end[s],
 * which the host waits for before it sends (step 5); 3. sets each IPC neighbour's PACKED flag
 * (the host does not wait for the device). */
static int pack(fd_halo *h, const real_t *u, const real_t *u2, be_event field_ready, int s,
                int packed)
{
  const int timed = h->timing[s];
  if (field_ready) FD_BE(be_stream_wait_event(h->stream, field_ready));
  if (!packed) {
    if (timed) FD_BE(be_event_record(h->pack_start[s], h->stream));
    pack_ctx c = {h, u, u2, s};
    if (timed) {
      FD_CALL(pack_work(&c, h->stream));
    } else {
      const fd_graph_key k = {1, {s, 0, 0, 0, 0, 0}, {u, u2, NULL, NULL}};
      FD_CALL(run_graph(h, &k, pack_work, &c));
    }
    if (timed) FD_BE(be_event_record(h->pack_stop[s], h->stream));
  }
  /* the host waits for the pack before it sends (step 5): for the event pack_end where IPC
   * copies may follow on the halo stream, else for the stream itself (no record needed) */
  if (h->n_mpi && h->n_ipc) FD_BE(be_event_record(h->pack_end[s], h->stream));
  for (int f = 0; f < FD_REGIONS; f++)
    if (h->ipc[f])
      FD_BE(be_stream_set_flag(h->stream, h->peer_flags[f] + FLAG_PACKED(fd_region_opposite(f), s), flag_value(h, s)));
  return FD_OK;
}

/* 4. The halo stream waits until each IPC neighbour's PACKED flag says it has packed this
 * exchange and copies each face from the neighbour's send_d[s] into recv_d[s]; xfer_start and
 * xfer_end time the copies of a timed exchange. The host does not wait. */
static int pull_ipc_faces(fd_halo *h, int s)
{
  for (int f = 0; f < FD_REGIONS; f++)
    if (h->ipc[f]) FD_BE(be_stream_wait_flag(h->stream, &h->flags[FLAG_PACKED(f, s)], flag_value(h, s)));
  if (h->timing[s]) FD_BE(be_event_record(h->xfer_start[s], h->stream));
  /* Each copy takes exactly this rank's region size (msg_count) from the neighbour's face,
   * whose count the set-up compared with it (face_reachable): there is no element count that
   * could come up short, as an MPI message's can (exchange_mpi_faces). The test's "send
   * nothing" copies nothing: the receive buffer keeps its NaN. */
  for (int f = 0; f < FD_REGIONS; f++)
    if (h->ipc[f] && !h->send_nothing)
      FD_BE(be_memcpy_peer_async(h->recv_d[s] + msg_offset(h, f), h->peer_face[f][s],
                                 msg_count(h, f) * sizeof(real_t), h->stream));
  if (h->timing[s]) FD_BE(be_event_record(h->xfer_end[s], h->stream));
  return FD_OK;
}

/* The received messages' element counts against their regions' (statuses of the receives,
 * req[0 .. nrecv-1]): the first short one of the rank is recorded for halo_short_message. */
static int check_counts(fd_halo *h, const MPI_Status *st)
{
  for (int i = 0; i < h->nrecv && h->short_exchange < 0; i++) {
    const int f = h->recv_region[i];
    int got = 0;
    FD_MPI(MPI_Get_count(&st[i], FD_MPI_REAL, &got));
    if (got != MPI_UNDEFINED && (size_t)got == msg_count(h, f)) continue;
    h->short_exchange = h->exchanges;
    h->short_region = f;
    h->short_source = h->nbr[f];
    h->short_got = got;
    h->short_want = msg_count(h, f);
  }
  return FD_OK;
}

/* 5. The host waits for the pack (and, staged, its copy to host memory): the halo stream holds
 * nothing after it unless IPC copies (step 4) were enqueued, so it waits for the stream, or
 * for pack_end; 6. sends every MPI face and waits for all messages, whose counts it checks
 * (check_counts). host_ms[s] is the host's time from the finished pack to the arrived
 * messages. */
static int exchange_mpi_faces(fd_halo *h, int s)
{
  real_t *send = h->staged ? h->send_h : h->send_d[s];
  if (h->n_ipc) FD_BE(be_event_sync(h->pack_end[s]));
  else FD_BE(be_stream_sync(h->stream));
  double t0 = fd_now();
  for (int f = 0; f < FD_REGIONS; f++)
    if (h->faces.active[f] && !h->ipc[f])
      FD_MPI(MPI_Isend(send + msg_offset(h, f), h->send_nothing ? 0 : (int)msg_count(h, f), FD_MPI_REAL,
                       h->nbr[f], f, h->comm, &h->req[h->nreq++]));
  MPI_Status st[2 * FD_REGIONS];
  FD_MPI(MPI_Waitall(h->nreq, h->req, st));
  FD_CALL(check_counts(h, st));
  h->nreq = h->nrecv = 0;
  h->host_ms[s] = (fd_now() - t0) * 1e3;
  h->mpi_ms += h->host_ms[s];
  return FD_OK;
}

/* Adds the device timings of the timed exchange of parity s (waiting for its unpack, which
 * has long run when the next timed exchange of that parity begins). Exchange time: IPC faces
 * the device's time from this rank's finished pack to the last face in (the neighbour's pack,
 * the flags and the copies). */
static int accumulate(fd_halo *h, int s)
{
  float ms;
  FD_BE(be_event_sync(h->unpack_end[s]));
  FD_BE(be_event_elapsed_ms(&ms, h->pack_start[s], h->pack_stop[s]));
  h->pack_ms += ms;
  FD_BE(be_event_elapsed_ms(&ms, h->unpack_start[s], h->unpack_end[s]));
  h->unpack_ms += ms;
  if (h->n_ipc) {
    FD_BE(be_event_elapsed_ms(&ms, h->pack_stop[s], h->xfer_end[s]));
    h->ipc_ms += ms;
    FD_BE(be_event_elapsed_ms(&ms, h->xfer_start[s], h->xfer_end[s]));
    h->copy_ms += ms;
  }
  h->timed++;
  h->timing_pending[s] = 0;
  return FD_OK;
}

/* halo_exchange_begin, or with `packed` halo_exchange_begin_packed: the pack (unless packed)
 * goes first, the receives are posted while the device packs: a face that arrives before its
 * receive is posted is buffered by MPI, never lost. */
static int begin(fd_halo *h, const real_t *u, const real_t *u2, be_event field_ready, int timed,
                 int packed)
{
  const int s = (int)(h->exchanges % 2);
  if (timed && h->direct) return fd_set_error(FD_ERR_USAGE, "halo_exchange_begin: a timed exchange cannot be captured");
  be_range_push("halo_begin");
  if (timed && h->timing_pending[s]) FD_CALL(accumulate(h, s)); /* its events are about to be reused */
  h->timing[s] = timed;
  h->nreq = 0;
  FD_CALL(pack(h, u, u2, field_ready, s, packed));
  FD_CALL(post_receives(h, s));
  be_range_pop();
  return FD_OK;
}

int halo_exchange_begin(fd_halo *h, const real_t *u, const real_t *u2, be_event field_ready,
                        int timed)
{
  return begin(h, u, u2, field_ready, timed, 0);
}

int halo_fused_receive(fd_halo *h, halo_fused_io *io)
{
  if (h->fields != 1 || h->faces.width != 1)
    return fd_set_error(FD_ERR_USAGE, "halo_fused_receive: one field at width 1 only (%d fields, width %d)", h->fields,
                        h->faces.width);
  const int s = (int)((h->exchanges + 1) % 2); /* the exchange last ended */
  if (h->timing[s])
    return fd_set_error(FD_ERR_USAGE, "halo_fused_receive: a timed exchange unpacks with halo_exchange_unpack (its timing events)");
  if (h->staged) FD_CALL(stage(h, s, 0));
  io->faces = &h->faces;
  io->recv = h->recv_d[s];
  io->send = h->send_d[1 - s]; /* the next exchange's */
  io->unpack = io->pack = 0;
  for (int f = 0; f < FD_FACES; f++)
    if (h->faces.active[f]) {
      io->pack |= 1u << f;
      if (f != h->drop_region) io->unpack |= 1u << f;
    }
  return FD_OK;
}

int halo_fused_packed(fd_halo *h)
{
  if (h->staged) FD_CALL(stage(h, (int)(h->exchanges % 2), 1));
  return FD_OK;
}

int halo_exchange_begin_packed(fd_halo *h, be_event field_ready)
{
  return begin(h, NULL, NULL, field_ready, 0, 1);
}

/* The counters after exchange k of parity s has ended. */
static void advance(fd_halo *h, int s)
{
  h->exchanges++;
  if (h->n_ipc) h->uses[s]++;
  h->count++;
}

int halo_exchange_end(fd_halo *h)
{
  const int s = (int)(h->exchanges % 2);
  be_range_push("halo_exchange");
  if (h->n_ipc) FD_CALL(pull_ipc_faces(h, s));
  if (h->n_mpi) FD_CALL(exchange_mpi_faces(h, s));
  be_range_pop();
  if (h->timing[s]) h->timing_pending[s] = 1;
  advance(h, s);
  return FD_OK;
}

int halo_exchange_replayed(fd_halo *h)
{
  if (h->n_mpi)
    return fd_set_error(FD_ERR_USAGE, "halo_exchange_replayed: an exchange with MPI faces makes host calls, no graph replays it");
  h->timing[h->exchanges % 2] = 0;
  advance(h, (int)(h->exchanges % 2));
  return FD_OK;
}

int halo_graph_phase(const fd_halo *h)
{
  return (int)(h->exchanges % 2) | (int)(h->uses[0] % 2) << 1 | (int)(h->uses[1] % 2) << 2;
}

int halo_capture(fd_halo *h, int on)
{
  if (on && h->n_mpi)
    return fd_set_error(FD_ERR_USAGE, "halo_capture: an exchange with MPI faces makes host calls, no graph can hold it");
  h->direct = on;
  return FD_OK;
}

/* 7. staged: the halo stream copies the received faces of the exchange last ended (parity s)
 * to the device; 8. unpacks every active face of recv_d[s] into the ghosts of u (and u2), but
 * a test's dropped region (halo_test_drop_unpack). Changes nothing in *h (a graph may replay
 * it). */
int halo_exchange_unpack(fd_halo *h, real_t *u, real_t *u2)
{
  const int s = (int)((h->exchanges + 1) % 2);
  be_range_push("halo_unpack");
  if (h->timing[s]) FD_BE(be_event_record(h->unpack_start[s], h->stream));
  if (h->staged) FD_CALL(stage(h, s, 0));
  fd_faces f1 = h->faces, f2 = h->faces2;
  if (h->drop_region >= 0) f1.active[h->drop_region] = f2.active[h->drop_region] = 0;
  FD_BE(be_unpack_faces(&h->grid, &f1, h->recv_d[s], u, h->stream));
  if (h->fields > 1) FD_BE(be_unpack_faces(&h->grid, &f2, h->recv_d[s], u2, h->stream));
  if (h->timing[s]) FD_BE(be_event_record(h->unpack_end[s], h->stream));
  be_range_pop();
  return FD_OK;
}

int halo_poison_ghosts(fd_halo *h, real_t *u, be_stream s)
{
  if (h->poison_d) FD_BE(be_unpack_faces(&h->grid, &h->faces, h->poison_d, u, s));
  return FD_OK;
}

int halo_poison_receives(fd_halo *h, be_stream s)
{
  if (!h->poison_d) return FD_OK; /* no active region: nothing is received */
  const size_t bytes = h->faces.total * sizeof(real_t);
  for (int p = 0; p < 2; p++) {
    FD_BE(be_memcpy_async(h->recv_d[p], h->poison_d, bytes, BE_COPY_D2D, s));
    if (h->staged) FD_BE(be_memcpy_async(h->recv_h[p], h->poison_d, bytes, BE_COPY_D2H, s));
  }
  return FD_OK;
}

int halo_short_message(const fd_halo *h, int rank, char *why, size_t len)
{
  /* the host-driven exchange's record, else the proxy's (signalled passes) */
  const int mine = h->short_exchange >= 0, proxied = !mine && h->proxy.short_exchange >= 0;
  if (!mine && !proxied) return 0;
  const int region = mine ? h->short_region : h->proxy.short_region;
  const int got_n = mine ? h->short_got : h->proxy.short_got;
  int dir[3];
  fd_region_dir(region, dir);
  char got[32];
  if (got_n == MPI_UNDEFINED) snprintf(got, sizeof got, "no whole number of");
  else snprintf(got, sizeof got, "%d", got_n);
  snprintf(why, len, "rank %d received a short halo message in %sexchange %lld: the region towards "
           "(%+d,%+d,%+d) from rank %d held %s values, %zu expected", rank, mine ? "" : "the proxy's ",
           (mine ? h->short_exchange : h->proxy.short_exchange) + 1, dir[0], dir[1], dir[2],
           mine ? h->short_source : h->proxy.short_source, got,
           mine ? h->short_want : (size_t)h->proxy.short_want);
  return 1;
}

void halo_test_send_nothing(fd_halo *h)
{
  h->send_nothing = 1;
  h->proxy.send_nothing = 1;
}

int halo_test_drop_unpack(fd_halo *h, int region)
{
  if (region >= FD_REGIONS || (region >= 0 && !h->faces.active[region]))
    return fd_set_error(FD_ERR_USAGE, "halo_test_drop_unpack: region %d has no neighbour here", region);
  h->drop_region = region < 0 ? -1 : region;
  return FD_OK;
}

int halo_flush_timers(fd_halo *h)
{
  for (int s = 0; s < 2; s++)
    if (h->timing_pending[s]) FD_CALL(accumulate(h, s));
  return FD_OK;
}

void halo_reset_timers(fd_halo *h)
{
  h->pack_ms = h->unpack_ms = h->mpi_ms = h->ipc_ms = h->copy_ms = 0.0;
  h->timed = h->count = 0;
}

/* ---- the exchange signalled inside the pass's launch ---- */

/* Face f's slots (be_signals.in, .out; f active, its neighbour mapped): slots 2 and 3 of
 * send_block hold, at each face's region, either this rank's layer for a neighbour on this
 * device, which that neighbour loads, or the layer a neighbour on another device stores there
 * for this rank: across the link a face goes as the sender's stores (posted writes; the
 * receiver then reads its own memory), which stepped faster than the receiver's loads
 * (bench/results/README.md, "The signalled pass across GPUs"). Both sides of a face decide
 * alike (same_device is the same on both). */
static void signal_slots(const fd_halo *h, int f, be_signals *x)
{
  const int store = !h->same_device[f];
  for (int s = 0; s < 2; s++) {
    real_t *mine = h->send_block + (2 + s) * h->faces.total + h->faces.offset[f];
    x->in[f][s] = store ? mine : h->peer_sig[f][s];
    x->out[f][s] = store ? h->peer_sig[f][s] : mine;
  }
  if (!h->same_device[f]) x->remote |= 1u << f;
  x->peer_in[f] = h->peer_flags[f] + SIG_WORDS_AT + fd_region_opposite(f);
}

/* Face f through the proxy (proxy.h): this rank's own slots, which MPI sends from and
 * receives into, and the proxy's words; remote, for the launches' system-scope fences. */
static void proxy_slots(const fd_halo *h, int f, be_signals *x)
{
  for (int s = 0; s < 2; s++) {
    x->in[f][s] = h->proxy.recv_slot[s] + h->proxy.offset[f];
    x->out[f][s] = h->proxy.send_slot[s] + h->proxy.offset[f];
  }
  x->remote |= 1u << f;
  x->proxied |= 1u << f;
  x->peer_in[f] = h->proxy.hout + f;
}

/* The signalled exchange's kernel reads each neighbour's face in place, exactly this rank's
 * region (whose count the set-up compared: face_reachable), so like the IPC copies it has no
 * element count to check (halo_short_message); the test faults that need one
 * (--test-inject-fault=zero) do not signal (src/solver/step.c, step_signalled). */
/* *x with this rank's layout, words and longest wait, and no face yet. */
static void signals_init(const fd_halo *h, be_signals *x)
{
  memset(x, 0, sizeof *x);
  x->faces = &h->faces;
  x->faces2 = h->fields > 1 ? &h->faces2 : NULL;
  x->wait_s = h->sig_wait_s;
  x->words = h->flags ? h->flags + SIG_WORDS_AT : NULL;
  x->hin = h->proxy.on ? h->proxy.hin : NULL;
}

void halo_signals(const fd_halo *h, be_signals *x)
{
  signals_init(h, x);
  x->test = h->sig_test;
  for (int f = 0; f < FD_REGIONS; f++) {
    if (!h->faces.active[f]) continue;
    x->exchange |= 1u << f;
    if (f != h->drop_region) x->unpack |= 1u << f;
    if (h->proxy_on[f]) proxy_slots(h, f, x);
    else signal_slots(h, f, x);
  }
}

/* Whether the launches take *x: be_signals_pass's checks at width 1, the deep calls' beyond
 * (common.c). Pure. */
static int launches_take(const fd_halo *h, const be_signals *x, const char *who)
{
  char why[192];
  if (h->width > 1) return fd_signals_regions_check(&h->grid, x, who, why, sizeof why) == 0;
  return fd_signals_check(&h->grid, x, who, why, sizeof why) == 0;
}

int halo_signals_able(const fd_halo *h)
{
  /* every active face by IPC (into the slots of send_block) or through the proxy */
  if ((h->width == 1 && h->fields != 1) || (h->n_ipc && h->slots != 4) || h->n_mpi != h->n_proxy ||
      h->n_ipc + h->n_proxy == 0 || !h->flags)
    return 0;
  for (int f = 0; f < FD_REGIONS; f++)
    if (h->faces.active[f] && !h->ipc[f] && !h->proxy_on[f]) return 0;
  /* and what be_signals_pass (width 1) or be_signals_pack takes (the neighbours' slots
   * mapped, regions below its limit) */
  be_signals x;
  halo_signals(h, &x);
  return launches_take(h, &x, "halo_signals_able");
}

/* *x for face f alone (the floors), by IPC or through the proxy (proxied), and whether the
 * launches take it. No test bits: the floor is timed as it is. */
static int one_face(const fd_halo *h, int f, be_signals *x, int proxied, const char *who)
{
  signals_init(h, x);
  x->exchange = x->unpack = 1u << f;
  if (proxied) proxy_slots(h, f, x);
  else signal_slots(h, f, x);
  return launches_take(h, x, who);
}

int halo_signals_face(const fd_halo *h, int f, be_signals *x)
{
  memset(x, 0, sizeof *x);
  if (f < 0 || f >= FD_FACES || (h->width == 1 && h->fields != 1) || h->slots != 4 || !h->faces.active[f] ||
      !h->ipc_able[f] || h->same_device[f] || !h->peer_sig[f][0] || !h->flags)
    return 0;
  return one_face(h, f, x, 0, "halo_signals_face");
}

int halo_proxy_face(const fd_halo *h, int f, be_signals *x)
{
  memset(x, 0, sizeof *x);
  if (f < 0 || f >= FD_FACES || (h->width == 1 && h->fields != 1) || !h->proxy.on || !h->proxy_able[f] ||
      !h->flags)
    return 0;
  return one_face(h, f, x, 1, "halo_proxy_face");
}

/* Reads this rank's stall record into h (the first one sticks: the words' reset erases it).
 * Call when no launch of this rank is in flight. */
static int read_stall(fd_halo *h)
{
  if (!h->flags || (h->slots != 4 && !h->proxy.on) || h->sig_stall_face >= 0) return FD_OK;
  be_signals x;
  signals_init(h, &x);
  FD_BE(be_signals_stall(&x, &h->sig_stall_face, &h->sig_stall_at));
  h->sig_stall_epoch = h->sig_resets;
  return FD_OK;
}

int halo_signals_stalled(fd_halo *h, int rank, char *why, size_t len, unsigned long long *when)
{
  *when = ~0ULL;
  FD_BE(be_stream_sync(h->stream));
  FD_CALL(read_stall(h));
  const int face = h->sig_stall_face;
  if (face < 0) return FD_OK;
  *when = (unsigned long long)h->sig_stall_epoch << 32 | h->sig_stall_at;
  snprintf(why, len, "rank %d: the signalled exchange waited more than %g s for rank %d (region %d) at exchange %u: "
           "that neighbour stopped stepping, so this run's results are wrong", rank, h->sig_wait_s,
           face < FD_REGIONS ? h->nbr[face] : -1, face, (unsigned)h->sig_stall_at);
  return FD_ERR_RUNTIME;
}

int halo_signals_reset(fd_halo *h)
{
  static const uint32_t zero[BE_SIG_WORDS];
  FD_CALL(quiesce(h));    /* no launch of any rank reads or writes a word now */
  FD_CALL(read_stall(h)); /* before the zeroes erase it */
  h->sig_resets++;
  if (h->flags) {
    FD_BE(be_memcpy_async(h->flags + SIG_WORDS_AT, zero, sizeof zero, BE_COPY_H2D, h->stream));
    FD_BE(be_stream_sync(h->stream));
  }
  FD_MPI(MPI_Barrier(h->comm)); /* every rank's words are zero before any is set */
  /* the proxy serves the passes to come where they use it (its receives posted now) */
  h->sig_served = 0;
  h->sig_host_stalled = 0;
  if (h->use_proxy) FD_CALL(proxy_start(&h->proxy));
  return FD_OK;
}

/* The stall of a launch that cannot wait (the host backend): region r's face of exchange e did
 * not arrive within the wait; recorded as a launch records one (the first sticks), so that the
 * launches go on without waiting and the run ends with halo_signals_stalled's line. */
static int record_host_stall(fd_halo *h, int r, uint32_t e)
{
  uint32_t w[2] = {0, 0};
  FD_BE(be_memcpy_async(w, h->flags + SIG_WORDS_AT + BE_SIG_STALL, sizeof w, BE_COPY_D2H, h->stream));
  FD_BE(be_stream_sync(h->stream));
  if (w[0]) return FD_OK;
  w[0] = (uint32_t)r + 1u;
  w[1] = e;
  FD_BE(be_memcpy_async(h->flags + SIG_WORDS_AT + BE_SIG_STALL, w, sizeof w, BE_COPY_H2D, h->stream));
  FD_BE(be_stream_sync(h->stream));
  return FD_OK;
}

/* The service before a launch of x that reads the next exchange (the width-1 pass, the deep
 * exchange's unpack): counted, and where launches cannot wait, blocking until its faces have
 * arrived. */
static int serve_launch(fd_halo *h, const be_signals *x)
{
  if (!h->proxy.active) return FD_OK;
  const uint32_t e = h->sig_served++; /* the exchange the launch to come reads */
  /* after a stall the launches wait no more (as on a GPU: backend.h) */
  if (h->launches_wait || (h->sig_test & BE_SIG_TEST_NOWAIT) || h->sig_host_stalled) return proxy_progress(&h->proxy);
  int r;
  FD_CALL(proxy_ready(&h->proxy, x->proxied, e, h->sig_wait_s, &r));
  if (r < 0) return FD_OK;
  h->sig_host_stalled = 1;
  return record_host_stall(h, r, e);
}

int halo_signals_serve(fd_halo *h, const be_signals *x)
{
  if (!h->proxy.active) return FD_OK;
  /* deeper, halo_signals_exchange serves between its pack and its unpack */
  if (h->width > 1) return proxy_progress(&h->proxy);
  return serve_launch(h, x);
}

int halo_signals_progress(fd_halo *h) { return proxy_progress(&h->proxy); }

int halo_signals_served_by_host(const fd_halo *h) { return h->proxy.active && !h->launches_wait; }

int halo_signals_exchange(fd_halo *h, const be_signals *x, real_t *u, real_t *u2, be_stream s)
{
  if (!(x->proxied && halo_signals_served_by_host(h))) {
    FD_BE(be_signals_exchange(&h->grid, x, u, u2, s));
    return FD_OK;
  }
  /* a launch here cannot wait: the faces this rank packs go out and its neighbours' come in
   * between the pack and the unpack */
  FD_BE(be_signals_pack(&h->grid, x, u, u2, s));
  FD_CALL(serve_launch(h, x));
  FD_BE(be_signals_unpack(&h->grid, x, u, u2, s));
  return FD_OK;
}

void halo_signalled(fd_halo *h) { h->count++; }

void halo_test_signals(fd_halo *h, int mute, double wait_s)
{
  if (mute) h->sig_test |= BE_SIG_TEST_MUTE;
  h->sig_wait_s = wait_s;
}

void halo_test_signals_nowait(fd_halo *h) { h->sig_test |= BE_SIG_TEST_NOWAIT; }

void halo_test_signals_noshell(fd_halo *h) { h->sig_test |= BE_SIG_TEST_NOSHELL; }

/* halo.c - the halo exchange (halo.h): every MPI call of the exchange is in this file.
 *
 * Each active face travels one of two ways, chosen once by halo_create (--halo-path):
 *   MPI  the packed face goes to MPI as a device buffer (GPU-aware) or through pinned host
 *        memory (staged);
 *   IPC  the neighbour runs on the same node on a device this one can reach. At set-up each
 *        rank maps one buffer of each IPC neighbour and opens two of its interprocess events;
 *        the pack goes into this rank's send_d[s]; the neighbour copies it into its
 *        recv_d[s] on its own halo stream (a copy-engine copy).
 *
 * Events of a rank (interprocess, both parities s): packed[s], recorded after its pack;
 * consumed[s], recorded after its copies out of the neighbours' send_d[s].
 *
 * One exchange k, slot s = k % 2, in numbered steps (begin: 1-3, end: 4-8):
 *   1. prepost MPI_Irecv: MPI faces the data into recv (device or pinned host buffer); IPC
 *      faces a zero-byte note
 *   2. halo stream: wait for the field, and (IPC) for every IPC neighbour's consumed[s];
 *      pack all active faces into send_d[s] in one launch
 *   3. IPC: record packed[s] on the halo stream, then MPI_Isend the zero-byte note to every
 *      IPC neighbour (the host does not wait for the device)
 *   4. IPC: wait for the neighbours' notes; the halo stream waits for each IPC neighbour's
 *      packed[s]; copy its face from its send_d[s] into recv_d[s], record consumed[s];
 *      record xfer_end[s]
 *   5. MPI: host waits for the pack; staged: copy the MPI faces send_d -> send_h
 *   6. MPI: MPI_Isend of every MPI face, MPI_Waitall
 *   7. staged: copy the MPI faces recv_h -> recv_d on the halo stream; unpack all faces (one
 *      launch)
 *   8. record "unpacked"; the consumer stream waits for it
 * Message tags: a face is sent with the tag of the sender's face index f (notes f + 16); the
 * receiver's matching face is f^1 (x-low of the receiver meets x-high of its neighbour).
 *
 * Why the buffers are never read and written at once:
 * - Receive buffers alternate by exchange parity. Step 8 returns before the unpack (and,
 *   staged, the copy to the device) has run, and a neighbour may already send the next
 *   step's faces: receiving them into the same buffer could overwrite ghosts not yet unpacked
 *   (seen with two ranks time-sharing one GPU). MPI faces: exchange k+1 receives into the
 *   buffer of exchange k-1, whose unpack ran before the pack of exchange k on the same stream,
 *   which step 5 of exchange k waited for. Each face has its own region of the buffer, and
 *   the staged copies cover runs of MPI faces only (never an IPC face's region).
 * - IPC copies write recv_d[s] on this rank's own halo stream, before the unpack that
 *   reads it: stream order. The neighbour's copy of exchange k reads this rank's send_d[s]
 *   after this rank's pack k has run (its stream waits for packed[s], which step 3 recorded
 *   before the note was sent). The next writer of send_d[s] is pack k+2, and step 2 of k+2
 *   makes it wait on the device for the neighbour's consumed[s], recorded after that copy.
 * - Interprocess events are re-recorded every other exchange, and a stream wait binds to the
 *   latest record made before it is enqueued, so each wait must fall between the record it
 *   means and the next record of that event. The notes order the hosts (a rank's note of
 *   exchange j leaves in its begin j, and its end j
 *   does not return before the neighbour's note of j has arrived):
 *   packed[s] (both ways): the neighbour waits for packed[s] of k (step 4 of k) after this
 *   rank's note of k, sent after the record; this rank records packed[s] again in step 3 of
 *   k+2, after its step 4 of k+1 received the neighbour's note of k+1, sent after the
 *   neighbour's step 4 of k.
 *   consumed[s] (both ways): this rank waits for the neighbour's consumed[s] of k in step 2
 *   of k+2, after its end of k+1 received the neighbour's note of k+1, sent after the
 *   neighbour's end of k, where it recorded consumed[s] (step 4). The
 *   neighbour records it again in its end of k+2, after its step 4 of k+2 received this
 *   rank's note of k+2, sent after this rank enqueued the wait.
 *   Both events are recorded once at set-up, so the waits of exchanges 0 and 1 find them
 *   complete (no buffer has been written yet).
 *
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>
#if defined(OPEN_MPI) && OPEN_MPI
#include <mpi-ext.h> /* MPIX_CUDA_AWARE_SUPPORT, OMPI_HAVE_MPI_EXT_ROCM */
#endif

#include "fd_error.h"
#include "halo.h"

int halo_mpi_gpu_aware(const be_info *dev, char *why, size_t why_len)
{
  if (!dev->is_accelerator) {
    snprintf(why, why_len, "fields are in host memory");
    return 1;
  }
  const char *cray = getenv("MPICH_GPU_SUPPORT_ENABLED");
  if (cray && strcmp(cray, "1") == 0) {
    snprintf(why, why_len, "MPICH_GPU_SUPPORT_ENABLED=1");
    return 1;
  }
  int is_cuda = strcmp(dev->backend, "cuda") == 0;
#if defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
  if (is_cuda) {
    int yes = MPIX_Query_cuda_support();
    snprintf(why, why_len, "MPIX_Query_cuda_support() = %d", yes);
    return yes;
  }
#endif
#if defined(OMPI_HAVE_MPI_EXT_ROCM) && OMPI_HAVE_MPI_EXT_ROCM
  if (!is_cuda) {
    int yes = MPIX_Query_rocm_support();
    snprintf(why, why_len, "MPIX_Query_rocm_support() = %d", yes);
    return yes;
  }
#endif
#if defined(MPIX_GPU_SUPPORT_CUDA) && defined(MPIX_GPU_SUPPORT_HIP)
  {
    int yes = 0;
    if (MPIX_GPU_query_support(is_cuda ? MPIX_GPU_SUPPORT_CUDA : MPIX_GPU_SUPPORT_HIP, &yes) == MPI_SUCCESS) {
      snprintf(why, why_len, "MPIX_GPU_query_support() = %d", yes);
      return yes;
    }
  }
#endif
  (void)is_cuda;
  snprintf(why, why_len, "this MPI reports no %s support", dev->backend);
  return 0;
}

int halo_choose_mode(MPI_Comm comm, fd_mpi_gpu requested, const be_info *dev, int *staged)
{
  char why[160];
  int aware = halo_mpi_gpu_aware(dev, why, sizeof why);
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
  int node;                   /* lowest rank of comm on the sender's node */
  int can_share;              /* the sender's backend can share device memory */
  char pci[32];               /* the sender's device */
  unsigned long long total;   /* elements of one parity of the sender's send buffer */
  unsigned long long offset;  /* element offset of the sender's face towards the receiver */
  unsigned long long count;   /* its elements */
  be_ipc_handle mem, packed[2], consumed[2]; /* mem: the sender's send_block */
} ipc_card;

enum { TAG_NOTE = 16, TAG_CARD = 32, TAG_DECIDE = 48 };

/* Releases what this rank opened of its neighbours. */
static int close_peers(fd_halo *h)
{
  for (int f = 0; f < FD_FACES; f++) {
    FD_BE(be_ipc_mem_close(h->peer_block[f]));
    h->peer_block[f] = NULL;
    for (int s = 0; s < 2; s++) {
      if (h->peer_packed[f][s]) FD_BE(be_event_destroy(h->peer_packed[f][s]));
      if (h->peer_consumed[f][s]) FD_BE(be_event_destroy(h->peer_consumed[f][s]));
      h->peer_packed[f][s] = h->peer_consumed[f][s] = NULL;
      h->peer_face[f][s] = NULL;
    }
  }
  return FD_OK;
}

/* Opens the neighbour's send_block and events of every
 * face with ipc[f]; on failure one line in the error message, FD_ERR_RUNTIME. */
static int open_peers(fd_halo *h, const ipc_card card[FD_FACES], int rank)
{
  for (int f = 0; f < FD_FACES; f++) {
    if (!h->ipc[f]) continue;
    if (be_ipc_mem_open(&card[f].mem, &h->peer_block[f]) != BE_OK)
      return fd_set_error(FD_ERR_RUNTIME, "rank %d cannot map the send buffer of rank %d: %s", rank,
                          h->nbr[f], be_error_message());
    for (int s = 0; s < 2; s++) {
      h->peer_face[f][s] = (real_t *)h->peer_block[f] + s * card[f].total + card[f].offset;
      if (be_ipc_event_open(&card[f].packed[s], &h->peer_packed[f][s]) != BE_OK ||
          be_ipc_event_open(&card[f].consumed[s], &h->peer_consumed[f][s]) != BE_OK)
        return fd_set_error(FD_ERR_RUNTIME, "rank %d cannot open the events of rank %d: %s", rank, h->nbr[f], be_error_message());
    }
  }
  return FD_OK;
}

/* Decides ipc[f] for every active face (see halo_create). Collective over comm. */
static int choose_transport(fd_halo *h, fd_halo_path path, const be_info *dev, int node_id)
{
  char why[256] = "";
  int rank;
  FD_MPI(MPI_Comm_rank(h->comm, &rank));
  /* every rank has the same path and the same staged verdict (halo_choose_mode agrees it).
   * auto takes IPC only where MPI would stage faces through host memory: where MPI is
   * GPU-aware it hides behind the interior update at least as well (4x H200, 512^3 per GPU:
   * 0.983 of one GPU through MPI, 0.975 by IPC; bench/results/multigpu/README.md) */
  if (path == FD_HALO_PATH_MPI || (path == FD_HALO_PATH_AUTO && !h->staged)) return FD_OK;
  const int can = be_ipc_supported(why, sizeof why);
  FD_CALL(fd_agree(h->comm, path == FD_HALO_PATH_IPC && !can
                                ? fd_set_error(FD_ERR_USAGE, "--halo-path ipc: %s; use --halo-path auto or mpi", why)
                                : FD_OK));

  ipc_card mine[FD_FACES], theirs[FD_FACES];
  memset(mine, 0, sizeof mine);
  memset(theirs, 0, sizeof theirs);
  if (can) {
    for (int s = 0; s < 2; s++) {
      FD_BE(be_ipc_event_create(&h->packed[s]));
      FD_BE(be_ipc_event_create(&h->consumed[s]));
      /* recorded once, so that the first waits of the neighbours find them complete */
      FD_BE(be_event_record(h->packed[s], h->stream));
      FD_BE(be_event_record(h->consumed[s], h->stream));
    }
    FD_BE(be_stream_sync(h->stream));
  }
  for (int f = 0; f < FD_FACES; f++) {
    if (!h->faces.active[f]) continue;
    ipc_card *c = &mine[f];
    c->node = node_id;
    c->can_share = can;
    snprintf(c->pci, sizeof c->pci, "%s", dev->pci_bus_id);
    c->total = h->faces.total;
    c->offset = h->faces.offset[f];
    c->count = h->faces.count[f];
    if (can) {
      FD_BE(be_ipc_mem_handle(h->send_block, &c->mem));
      for (int s = 0; s < 2; s++) {
        FD_BE(be_ipc_event_handle(h->packed[s], &c->packed[s]));
        FD_BE(be_ipc_event_handle(h->consumed[s], &c->consumed[s]));
      }
    }
  }
  /* exchange the cards, then each side's verdict: a face goes by IPC when both sides can */
  MPI_Request rq[2 * FD_FACES];
  int n = 0;
  for (int f = 0; f < FD_FACES; f++) {
    if (!h->faces.active[f]) continue;
    FD_MPI(MPI_Irecv(&theirs[f], (int)sizeof theirs[f], MPI_BYTE, h->nbr[f], TAG_CARD + (f ^ 1), h->comm, &rq[n++]));
    FD_MPI(MPI_Isend(&mine[f], (int)sizeof mine[f], MPI_BYTE, h->nbr[f], TAG_CARD + f, h->comm, &rq[n++]));
  }
  FD_MPI(MPI_Waitall(n, rq, MPI_STATUSES_IGNORE));
  int ok[FD_FACES] = {0}, peer_ok[FD_FACES] = {0};
  char reason[FD_FACES][256];
  for (int f = 0; f < FD_FACES; f++) {
    reason[f][0] = '\0';
    if (!h->faces.active[f]) continue;
    const ipc_card *c = &theirs[f];
    if (!can) snprintf(reason[f], sizeof reason[f], "%s", why);
    else if (!c->can_share) snprintf(reason[f], sizeof reason[f], "its backend cannot share device memory");
    else if (c->node != node_id) snprintf(reason[f], sizeof reason[f], "it runs on another node");
    else if (c->count != h->faces.count[f])
      snprintf(reason[f], sizeof reason[f], "its face has %llu points, this one %zu", c->count, h->faces.count[f]);
    else {
      char r2[200] = "";
      FD_BE(be_device_can_reach(c->pci, &ok[f], r2, sizeof r2));
      if (!ok[f]) snprintf(reason[f], sizeof reason[f], "%s", r2);
    }
  }
  n = 0;
  for (int f = 0; f < FD_FACES; f++) {
    if (!h->faces.active[f]) continue;
    FD_MPI(MPI_Irecv(&peer_ok[f], 1, MPI_INT, h->nbr[f], TAG_DECIDE + (f ^ 1), h->comm, &rq[n++]));
    FD_MPI(MPI_Isend(&ok[f], 1, MPI_INT, h->nbr[f], TAG_DECIDE + f, h->comm, &rq[n++]));
  }
  FD_MPI(MPI_Waitall(n, rq, MPI_STATUSES_IGNORE));
  int err = FD_OK;
  for (int f = 0; f < FD_FACES; f++) {
    h->ipc[f] = h->faces.active[f] && ok[f] && peer_ok[f];
    if (path == FD_HALO_PATH_IPC && h->faces.active[f] && !h->ipc[f] && err == FD_OK)
      err = fd_set_error(FD_ERR_USAGE, "--halo-path ipc: rank %d cannot reach its neighbour rank %d by IPC: %s; use --halo-path auto or mpi",
                         rank, h->nbr[f], reason[f][0] ? reason[f] : "the neighbour cannot reach this rank");
  }
  FD_CALL(fd_agree(h->comm, err));
  /* map the neighbours; where that fails anywhere, ipc refuses and auto falls back to MPI */
  int open_err = open_peers(h, theirs, rank);
  int agreed = fd_agree(h->comm, open_err == FD_OK ? FD_OK : FD_ERR_USAGE);
  if (agreed != FD_OK) {
    FD_CALL(close_peers(h));
    for (int f = 0; f < FD_FACES; f++) h->ipc[f] = 0;
    if (path == FD_HALO_PATH_IPC)
      return fd_set_error(FD_ERR_USAGE, "--halo-path ipc: %s; use --halo-path auto or mpi", fd_error_message());
    if (rank == 0)
      printf("fdmini: notice: IPC halo path unavailable (%s); faces go through MPI\n", fd_error_message());
  }
  return FD_OK;
}

int halo_create(fd_halo *h, MPI_Comm comm, const int nbr[FD_FACES], const fd_grid *g, int staged,
                fd_halo_path path, const be_info *dev, int node, be_stream halo_stream)
{
  memset(h, 0, sizeof *h);
  h->comm = comm;
  h->grid = *g;
  h->staged = staged;
  h->stream = halo_stream;
  fd_faces_init(&h->faces, g->n);
  for (int f = 0; f < FD_FACES; f++) {
    h->nbr[f] = nbr[f];
    h->faces.active[f] = nbr[f] != MPI_PROC_NULL;
    if (h->faces.active[f]) h->bytes_sent += h->faces.count[f] * sizeof(real_t);
  }
  size_t bytes = h->faces.total * sizeof(real_t);
  FD_BE(be_malloc((void **)&h->send_block, 2 * bytes));
  FD_BE(be_malloc((void **)&h->recv_block, 2 * bytes));
  for (int s = 0; s < 2; s++) {
    h->send_d[s] = h->send_block + s * h->faces.total;
    h->recv_d[s] = h->recv_block + s * h->faces.total;
  }
  FD_CALL(choose_transport(h, path, dev, node));
  long long counts[2] = {0, 0};
  for (int f = 0; f < FD_FACES; f++)
    if (h->faces.active[f]) counts[h->ipc[f] ? 0 : 1]++;
  h->n_ipc = (int)counts[0];
  h->n_mpi = (int)counts[1];
  FD_MPI(MPI_Allreduce(MPI_IN_PLACE, counts, 2, MPI_LONG_LONG, MPI_SUM, comm));
  h->ipc_faces_all = counts[0];
  h->mpi_faces_all = counts[1];
  /* staging copies runs of MPI faces (inactive faces between them may ride along); an IPC
   * face ends a run: its region of the device receive buffer is written by the IPC path, and
   * a staged copy over it would overwrite the face with stale host memory */
  h->n_stage = 0;
  int open_run = 0;
  for (int f = 0; f < FD_FACES; f++) {
    if (!h->faces.active[f]) continue;
    if (h->ipc[f]) {
      open_run = 0;
      continue;
    }
    if (!open_run) h->stage_lo[h->n_stage++] = h->faces.offset[f];
    h->stage_n[h->n_stage - 1] = h->faces.offset[f] + h->faces.count[f] - h->stage_lo[h->n_stage - 1];
    open_run = 1;
  }
  if (staged) {
    FD_BE(be_host_alloc((void **)&h->send_h, bytes));
    for (int s = 0; s < 2; s++) FD_BE(be_host_alloc((void **)&h->recv_h[s], bytes));
  }
  for (int s = 0; s < 2; s++) {
    FD_BE(be_event_create(&h->pack_start[s]));
    FD_BE(be_event_create(&h->pack_end[s]));
    FD_BE(be_event_create(&h->unpack_start[s]));
    FD_BE(be_event_create(&h->unpack_end[s]));
    FD_BE(be_event_create(&h->xfer_start[s]));
    FD_BE(be_event_create(&h->xfer_end[s]));
  }
  return FD_OK;
}

const char *halo_path_resolved(long long ipc_faces, long long mpi_faces)
{
  if (ipc_faces && mpi_faces) return "mixed";
  if (ipc_faces) return "ipc";
  return mpi_faces ? "mpi" : "none";
}

int halo_destroy(fd_halo *h)
{
  if (h->ipc_faces_all > 0) {
    FD_BE(be_stream_sync(h->stream));
    FD_CALL(close_peers(h));
    FD_MPI(MPI_Barrier(h->comm)); /* nobody reads or waits on this rank's buffer any more */
  }
  FD_BE(be_free(h->send_block));
  FD_BE(be_free(h->recv_block));
  FD_BE(be_host_free(h->send_h));
  for (int s = 0; s < 2; s++) FD_BE(be_host_free(h->recv_h[s]));
  be_event *ev[] = {h->pack_start, h->pack_end,   h->unpack_start, h->unpack_end,
                    h->xfer_start, h->xfer_end, h->packed,       h->consumed};
  for (size_t i = 0; i < sizeof ev / sizeof ev[0]; i++)
    for (int s = 0; s < 2; s++)
      if (ev[i][s]) FD_BE(be_event_destroy(ev[i][s]));
  memset(h, 0, sizeof *h);
  return FD_OK;
}

/* ---- the exchange ---- */

int halo_exchange_begin(fd_halo *h, const real_t *u, be_event field_ready)
{
  static char none; /* the zero-byte notes' buffer */
  const int s = (int)(h->exchanges % 2);
  real_t *recv = h->staged ? h->recv_h[s] : h->recv_d[s];
  be_range_push("halo_begin");
  /* 1. prepost receives */
  h->nreq = h->nnote = 0;
  for (int f = 0; f < FD_FACES; f++) {
    if (!h->faces.active[f]) continue;
    if (h->ipc[f]) {
      FD_MPI(MPI_Irecv(&none, 0, MPI_BYTE, h->nbr[f], TAG_NOTE + (f ^ 1), h->comm, &h->note[h->nnote++]));
    } else
      FD_MPI(MPI_Irecv(recv + h->faces.offset[f], (int)h->faces.count[f], FD_MPI_REAL, h->nbr[f],
                       f ^ 1, h->comm, &h->req[h->nreq++]));
  }
  /* 2. pack once the field is ready and the IPC neighbours have copied exchange k-2 out of
   * send_d[s] */
  FD_BE(be_stream_wait_event(h->stream, field_ready));
  for (int f = 0; f < FD_FACES; f++)
    if (h->ipc[f]) FD_BE(be_stream_wait_event(h->stream, h->peer_consumed[f][s]));
  FD_BE(be_event_record(h->pack_start[s], h->stream));
  FD_BE(be_pack_faces(&h->grid, &h->faces, u, h->send_d[s], h->stream));
  FD_BE(be_event_record(h->pack_end[s], h->stream));
  /* 3. tell the IPC neighbours that packed[s] is recorded (by a note) */
  if (h->n_ipc) {
    FD_BE(be_event_record(h->packed[s], h->stream));
    for (int f = 0; f < FD_FACES; f++)
      if (h->ipc[f]) FD_MPI(MPI_Isend(&none, 0, MPI_BYTE, h->nbr[f], TAG_NOTE + f, h->comm, &h->note[h->nnote++]));
  }
  be_range_pop();
  return FD_OK;
}

/* Adds the timings of exchange slot s once its unpack is complete. Exchange time: MPI faces
 * the host's time from the finished pack to the arrived messages; IPC faces the device's time
 * from this rank's finished pack to the last face in (the neighbour's pack, the notes and the
 * copies); with both, the longer. */
static int accumulate(fd_halo *h, int s)
{
  float ms;
  FD_BE(be_event_sync(h->unpack_end[s]));
  FD_BE(be_event_elapsed_ms(&ms, h->pack_start[s], h->pack_end[s]));
  h->pack_ms += ms;
  FD_BE(be_event_elapsed_ms(&ms, h->unpack_start[s], h->unpack_end[s]));
  h->unpack_ms += ms;
  double ex = h->n_mpi ? h->host_ms[s] : 0.0;
  if (h->n_ipc) {
    FD_BE(be_event_elapsed_ms(&ms, h->pack_end[s], h->xfer_end[s]));
    ex = ms > ex ? ms : ex;
    FD_BE(be_event_elapsed_ms(&ms, h->xfer_start[s], h->xfer_end[s]));
    h->copy_ms += ms;
  }
  h->exchange_ms += ex;
  h->timed++;
  return FD_OK;
}

int halo_exchange_end(fd_halo *h, real_t *u, be_stream consumer)
{
  const int s = (int)(h->exchanges % 2);
  be_range_push("halo_exchange");
  /* 4. IPC: once the neighbours' packed[s] are recorded, copy their faces in */
  if (h->n_ipc) {
    FD_MPI(MPI_Waitall(h->nnote, h->note, MPI_STATUSES_IGNORE));
    h->nnote = 0;
    for (int f = 0; f < FD_FACES; f++)
      if (h->ipc[f]) FD_BE(be_stream_wait_event(h->stream, h->peer_packed[f][s]));
    FD_BE(be_event_record(h->xfer_start[s], h->stream));
    for (int f = 0; f < FD_FACES; f++)
      if (h->ipc[f])
        FD_BE(be_memcpy_peer_async(h->recv_d[s] + h->faces.offset[f], h->peer_face[f][s],
                                   h->faces.count[f] * sizeof(real_t), h->stream));
    FD_BE(be_event_record(h->consumed[s], h->stream));
    FD_BE(be_event_record(h->xfer_end[s], h->stream));
  }
  if (h->n_mpi) {
    real_t *send = h->staged ? h->send_h : h->send_d[s];
    /* 5. wait for the pack (and stage it) */
    FD_BE(be_event_sync(h->pack_end[s]));
    double t0 = fd_now();
    if (h->staged) {
      for (int r = 0; r < h->n_stage; r++)
        FD_BE(be_memcpy_async(h->send_h + h->stage_lo[r], h->send_d[s] + h->stage_lo[r],
                              h->stage_n[r] * sizeof(real_t), BE_COPY_D2H, h->stream));
      FD_BE(be_stream_sync(h->stream));
    }
    /* 6. send, wait */
    for (int f = 0; f < FD_FACES; f++) {
      if (!h->faces.active[f] || h->ipc[f]) continue;
      FD_MPI(MPI_Isend(send + h->faces.offset[f], (int)h->faces.count[f], FD_MPI_REAL, h->nbr[f], f,
                       h->comm, &h->req[h->nreq++]));
    }
    FD_MPI(MPI_Waitall(h->nreq, h->req, MPI_STATUSES_IGNORE));
    h->nreq = 0;
    /* 7. unstage */
    if (h->staged)
      for (int r = 0; r < h->n_stage; r++)
        FD_BE(be_memcpy_async(h->recv_d[s] + h->stage_lo[r], h->recv_h[s] + h->stage_lo[r],
                              h->stage_n[r] * sizeof(real_t), BE_COPY_H2D, h->stream));
    h->host_ms[s] = (fd_now() - t0) * 1e3;
  }
  be_range_pop();
  be_range_push("halo_unpack");
  FD_BE(be_event_record(h->unpack_start[s], h->stream));
  FD_BE(be_unpack_faces(&h->grid, &h->faces, h->recv_d[s], u, h->stream));
  FD_BE(be_event_record(h->unpack_end[s], h->stream));
  /* 8. the consumer waits for the ghosts */
  FD_BE(be_stream_wait_event(consumer, h->unpack_end[s]));
  be_range_pop();
  h->exchanges++;
  /* the previous exchange's timings: its unpack ran before this exchange's pack */
  if (h->timing_pending) FD_CALL(accumulate(h, 1 - s));
  h->timing_pending = 1;
  return FD_OK;
}

int halo_flush_timers(fd_halo *h)
{
  if (!h->timing_pending) return FD_OK;
  FD_CALL(accumulate(h, (int)((h->exchanges - 1) % 2)));
  h->timing_pending = 0;
  return FD_OK;
}

void halo_reset_timers(fd_halo *h)
{
  h->pack_ms = h->unpack_ms = h->exchange_ms = h->copy_ms = 0.0;
  h->timed = 0;
}

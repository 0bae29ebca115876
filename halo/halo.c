/* halo.c - the halo exchange (halo.h): every MPI call of the exchange is in this file.
 *
 * One exchange, in numbered steps (begin: 1-2, end: 3-7):
 *   1. prepost MPI_Irecv for every active face into recv (device or pinned host buffer)
 *   2. halo stream: wait for the field, pack all active faces into send_d (one launch)
 *   3. host: wait for the pack; staged: copy the span of active faces send_d -> send_h, wait
 *   4. MPI_Isend of every active face
 *   5. MPI_Waitall
 *   6. staged: copy recv_h -> recv_d on the halo stream; unpack into the ghosts (one launch)
 *   7. record "unpacked"; the consumer stream waits for it
 * Message tags: a face is sent with the tag of the sender's face index f; the receiver's
 * matching face is f^1 (x-low of the receiver meets x-high of its neighbour).
 *
 * Receive buffers alternate by exchange parity. Step 7 returns before the unpack (and, staged,
 * the copy to the device) has run, and a neighbour may already send the next step's faces:
 * receiving them into the same buffer could overwrite ghosts not yet unpacked (seen with two
 * ranks time-sharing one GPU). Exchange k+1 receives into the buffer of exchange k-1, whose
 * unpack ran before the pack of exchange k on the same stream, which step 3 of exchange k
 * waited for. Send buffers need no second copy: MPI_Waitall completes the sends before the
 * next pack.
 */
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

int halo_create(fd_halo *h, MPI_Comm comm, const int nbr[FD_FACES], const fd_grid *g, int staged,
                be_stream halo_stream)
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
  /* staging copies only the span from the first to the last active face */
  size_t lo = h->faces.total, hi = 0;
  for (int f = 0; f < FD_FACES; f++)
    if (h->faces.active[f]) {
      lo = h->faces.offset[f] < lo ? h->faces.offset[f] : lo;
      hi = h->faces.offset[f] + h->faces.count[f] > hi ? h->faces.offset[f] + h->faces.count[f] : hi;
    }
  h->stage_lo = hi > lo ? lo : 0;
  h->stage_n = hi > lo ? hi - lo : 0;
  size_t bytes = h->faces.total * sizeof(real_t);
  FD_BE(be_malloc((void **)&h->send_d, bytes));
  for (int s = 0; s < 2; s++) FD_BE(be_malloc((void **)&h->recv_d[s], bytes));
  if (staged) {
    FD_BE(be_host_alloc((void **)&h->send_h, bytes));
    for (int s = 0; s < 2; s++) FD_BE(be_host_alloc((void **)&h->recv_h[s], bytes));
  }
  for (int s = 0; s < 2; s++) {
    FD_BE(be_event_create(&h->pack_start[s]));
    FD_BE(be_event_create(&h->pack_end[s]));
    FD_BE(be_event_create(&h->unpack_start[s]));
    FD_BE(be_event_create(&h->unpack_end[s]));
  }
  return FD_OK;
}

int halo_destroy(fd_halo *h)
{
  FD_BE(be_free(h->send_d));
  for (int s = 0; s < 2; s++) FD_BE(be_free(h->recv_d[s]));
  FD_BE(be_host_free(h->send_h));
  for (int s = 0; s < 2; s++) FD_BE(be_host_free(h->recv_h[s]));
  for (int s = 0; s < 2; s++) {
    if (h->pack_start[s]) FD_BE(be_event_destroy(h->pack_start[s]));
    if (h->pack_end[s]) FD_BE(be_event_destroy(h->pack_end[s]));
    if (h->unpack_start[s]) FD_BE(be_event_destroy(h->unpack_start[s]));
    if (h->unpack_end[s]) FD_BE(be_event_destroy(h->unpack_end[s]));
  }
  memset(h, 0, sizeof *h);
  return FD_OK;
}

int halo_exchange_begin(fd_halo *h, const real_t *u, be_event field_ready)
{
  const int s = (int)(h->exchanges % 2);
  real_t *recv = h->staged ? h->recv_h[s] : h->recv_d[s];
  be_range_push("halo_begin");
  /* 1. prepost receives */
  h->nreq = 0;
  for (int f = 0; f < FD_FACES; f++) {
    if (!h->faces.active[f]) continue;
    FD_MPI(MPI_Irecv(recv + h->faces.offset[f], (int)h->faces.count[f], FD_MPI_REAL, h->nbr[f],
                     f ^ 1, h->comm, &h->req[h->nreq++]));
  }
  /* 2. pack once the field is ready */
  FD_BE(be_stream_wait_event(h->stream, field_ready));
  FD_BE(be_event_record(h->pack_start[s], h->stream));
  FD_BE(be_pack_faces(&h->grid, &h->faces, u, h->send_d, h->stream));
  FD_BE(be_event_record(h->pack_end[s], h->stream));
  be_range_pop();
  return FD_OK;
}

/* Adds the event timings of exchange slot s: pack of the current exchange, unpack of the
 * previous one (both complete once the current pack is). */
static int accumulate(fd_halo *h, int s, int with_unpack_of)
{
  float ms;
  FD_BE(be_event_elapsed_ms(&ms, h->pack_start[s], h->pack_end[s]));
  h->pack_ms += ms;
  if (with_unpack_of >= 0) {
    FD_BE(be_event_elapsed_ms(&ms, h->unpack_start[with_unpack_of], h->unpack_end[with_unpack_of]));
    h->unpack_ms += ms;
    h->timed++;
  }
  return FD_OK;
}

int halo_exchange_end(fd_halo *h, real_t *u, be_stream consumer)
{
  const int s = (int)(h->exchanges % 2);
  const size_t lo = h->stage_lo, bytes = h->stage_n * sizeof(real_t);
  real_t *send = h->staged ? h->send_h : h->send_d;
  be_range_push("halo_exchange");
  /* 3. wait for the pack (and stage it) */
  FD_BE(be_event_sync(h->pack_end[s]));
  FD_CALL(accumulate(h, s, h->timing_pending ? 1 - s : -1));
  h->timing_pending = 0;
  double t0 = fd_now();
  if (h->staged && bytes) {
    FD_BE(be_memcpy_async(h->send_h + lo, h->send_d + lo, bytes, BE_COPY_D2H, h->stream));
    FD_BE(be_stream_sync(h->stream));
  }
  /* 4. send */
  for (int f = 0; f < FD_FACES; f++) {
    if (!h->faces.active[f]) continue;
    FD_MPI(MPI_Isend(send + h->faces.offset[f], (int)h->faces.count[f], FD_MPI_REAL, h->nbr[f], f,
                     h->comm, &h->req[h->nreq++]));
  }
  /* 5. wait */
  FD_MPI(MPI_Waitall(h->nreq, h->req, MPI_STATUSES_IGNORE));
  h->nreq = 0;
  /* 6. unstage and unpack */
  if (h->staged && bytes)
    FD_BE(be_memcpy_async(h->recv_d[s] + lo, h->recv_h[s] + lo, bytes, BE_COPY_H2D, h->stream));
  h->exchange_ms += (fd_now() - t0) * 1e3;
  be_range_pop();
  be_range_push("halo_unpack");
  FD_BE(be_event_record(h->unpack_start[s], h->stream));
  FD_BE(be_unpack_faces(&h->grid, &h->faces, h->recv_d[s], u, h->stream));
  FD_BE(be_event_record(h->unpack_end[s], h->stream));
  /* 7. the consumer waits for the ghosts */
  FD_BE(be_stream_wait_event(consumer, h->unpack_end[s]));
  be_range_pop();
  h->exchanges++;
  h->timing_pending = 1;
  return FD_OK;
}

int halo_flush_timers(fd_halo *h)
{
  if (!h->timing_pending) return FD_OK;
  int s = (int)((h->exchanges - 1) % 2);
  float ms;
  FD_BE(be_event_sync(h->unpack_end[s]));
  FD_BE(be_event_elapsed_ms(&ms, h->unpack_start[s], h->unpack_end[s]));
  h->unpack_ms += ms;
  h->timed++;
  h->timing_pending = 0;
  return FD_OK;
}

void halo_reset_timers(fd_halo *h)
{
  h->pack_ms = h->unpack_ms = h->exchange_ms = 0.0;
  h->timed = 0;
}

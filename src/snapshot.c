/* snapshot.c - snapshots off the device and onto disk in the background (snapshot.h): pinned
 * copies on the IO stream ordered by events, collective non-blocking MPI-IO into
 * DIR/snap_STEP.raw (interior, global order, x fastest: the layout of --dump), and the XDMF 3
 * file DIR/snapshots.xmf listing every complete snapshot. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fd_error.h"
#include "state.h"

/* Opens the slot's .tmp file and sets the view: this block of the global grid. The test
 * switch --test-fail-snapshot-write K opens the K-th read-only, so that its write fails in
 * MPI (a real failed write, through the real error path). Collective. */
static int slot_open(fd_state *s, fd_snap_slot *sl)
{
  const fd_options *o = s->opt;
  snprintf(sl->path, sizeof sl->path, "%s/snap_%06lld.raw", o->snapshot_dir, sl->step);
  snprintf(sl->tmp, sizeof sl->tmp, "%s/snap_%06lld.raw.tmp", o->snapshot_dir, sl->step);
  int rc = MPI_File_open(s->dec.cart, sl->tmp, MPI_MODE_WRONLY | MPI_MODE_CREATE, MPI_INFO_NULL, &sl->fh);
  if (rc == MPI_SUCCESS && o->fail_snapshot == sl->index) {
    rc = MPI_File_close(&sl->fh);
    if (rc == MPI_SUCCESS) rc = MPI_File_open(s->dec.cart, sl->tmp, MPI_MODE_RDONLY, MPI_INFO_NULL, &sl->fh);
  }
  int err = rc == MPI_SUCCESS ? FD_OK
                              : fd_set_error(FD_ERR_IO, "snapshot %lld (step %lld): cannot open '%s'",
                                             sl->index, sl->step, sl->tmp);
  FD_CALL(fd_agree(s->dec.cart, err));
  sl->open = 1;
  FD_MPI(MPI_File_set_errhandler(sl->fh, MPI_ERRORS_RETURN));
  if (o->fail_snapshot != sl->index) FD_MPI(MPI_File_set_size(sl->fh, 0));
  FD_MPI(MPI_File_set_view(sl->fh, 0, FD_MPI_REAL, s->snap.filetype, "native", MPI_INFO_NULL));
  sl->req = MPI_REQUEST_NULL;
  sl->err = MPI_SUCCESS;
  return FD_OK;
}

/* HELD -> COPYING: the IO stream copies the buffer once the compute stream has passed the
 * point where this is called (the end of the step after the snapshot's). Not Collective. */
static int slot_copy(fd_state *s, fd_snap_slot *sl)
{
  const size_t bytes = fd_grid_points_with_ghosts(&s->grid) * sizeof(real_t);
  FD_BE(be_event_record(s->snap.taken, s->compute));
  FD_BE(be_stream_wait_event(s->snap.io, s->snap.taken));
  FD_BE(be_memcpy_async(sl->host, sl->dev, bytes, BE_COPY_D2H, s->snap.io));
  FD_BE(be_event_record(sl->done, s->snap.io));
  sl->stage = SNAP_COPYING;
  return FD_OK;
}

/* COPYING -> WRITING: waits for the copy (the buffer is free again) and posts the collective
 * non-blocking write. Collective. */
static int slot_post(fd_state *s, fd_snap_slot *sl)
{
  FD_BE(be_event_sync(sl->done));
  sl->dev = NULL;
  sl->err = MPI_File_iwrite_all(sl->fh, sl->host, 1, s->snap.memtype, &sl->req);
  if (sl->err != MPI_SUCCESS) sl->req = MPI_REQUEST_NULL;
  sl->stage = SNAP_WRITING;
  return FD_OK;
}

/* Rewrites DIR/snapshots.xmf (rank 0) listing the written snapshots: one uniform grid per
 * snapshot in a temporal collection, 3DCoRectMesh with the interior's dimensions in z y x
 * order, origin at the first interior point (global index 1: x = h), spacing h, and the raw
 * file as a Binary DataItem of the machine's endianness. Written to a .tmp and renamed, so a
 * reader never sees it half written. Not Collective (rank 0). */
static int write_xdmf(fd_state *s)
{
  const fd_snapshots *sn = &s->snap;
  const fd_problem *p = &s->prob;
  char path[FD_PATH_MAX + 16], tmp[FD_PATH_MAX + 32];
  snprintf(path, sizeof path, "%s/snapshots.xmf", s->opt->snapshot_dir);
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  FILE *fp = fopen(tmp, "w");
  if (!fp) return fd_set_error(FD_ERR_IO, "snapshots: cannot write '%s'", tmp);
  const unsigned one = 1;
  const char *endian = *(const unsigned char *)&one ? "Little" : "Big";
  const long long *N = p->N;
  fprintf(fp, "<?xml version=\"1.0\" ?>\n<!DOCTYPE Xdmf SYSTEM \"Xdmf.dtd\" []>\n"
              "<Xdmf Version=\"3.0\">\n  <Domain>\n"
              "    <Grid Name=\"fdmini_%s\" GridType=\"Collection\" CollectionType=\"Temporal\">\n",
          fd_op_name(p->op));
  for (long long q = 0; q < sn->written; q++) {
    long long st = sn->steps[q];
    fprintf(fp,
            "      <Grid Name=\"step_%06lld\" GridType=\"Uniform\">\n"
            "        <Time Value=\"%.17g\"/>\n"
            "        <Topology TopologyType=\"3DCoRectMesh\" Dimensions=\"%lld %lld %lld\"/>\n"
            "        <Geometry GeometryType=\"ORIGIN_DXDYDZ\">\n"
            "          <DataItem Name=\"Origin\" Dimensions=\"3\" NumberType=\"Float\" Precision=\"8\" Format=\"XML\">%.17g %.17g %.17g</DataItem>\n"
            "          <DataItem Name=\"Spacing\" Dimensions=\"3\" NumberType=\"Float\" Precision=\"8\" Format=\"XML\">%.17g %.17g %.17g</DataItem>\n"
            "        </Geometry>\n"
            "        <Attribute Name=\"u\" AttributeType=\"Scalar\" Center=\"Node\">\n"
            "          <DataItem Dimensions=\"%lld %lld %lld\" NumberType=\"Float\" Precision=\"%d\" Format=\"Binary\" Endian=\"%s\">snap_%06lld.raw</DataItem>\n"
            "        </Attribute>\n"
            "      </Grid>\n",
            st, (double)st * sn->time_per_step, N[2], N[1], N[0], p->h[2], p->h[1], p->h[0], p->h[2],
            p->h[1], p->h[0], N[2], N[1], N[0], (int)sizeof(real_t), endian, st);
  }
  fprintf(fp, "    </Grid>\n  </Domain>\n</Xdmf>\n");
  int bad = ferror(fp);
  bad |= fclose(fp) != 0;
  if (bad || rename(tmp, path) != 0) {
    remove(tmp);
    return fd_set_error(FD_ERR_IO, "snapshots: cannot write '%s'", path);
  }
  return FD_OK;
}

/* WRITING -> IDLE: completes the write, agrees on it, closes, renames and lists the file; on
 * failure (any rank) removes the .tmp and returns FD_ERR_IO on every rank. Collective. */
static int slot_finish(fd_state *s, fd_snap_slot *sl)
{
  fd_snapshots *sn = &s->snap;
  if (sl->req != MPI_REQUEST_NULL) {
    int rc = MPI_Wait(&sl->req, MPI_STATUS_IGNORE);
    if (sl->err == MPI_SUCCESS) sl->err = rc;
  }
  int err = FD_OK;
  if (sl->err != MPI_SUCCESS) {
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(sl->err, text, &len) != MPI_SUCCESS) snprintf(text, sizeof text, "code %d", sl->err);
    err = fd_set_error(FD_ERR_IO, "snapshot %lld (step %lld): writing '%s' failed on rank %d: %s; "
                       "the incomplete file was removed", sl->index, sl->step, sl->path, s->dec.rank, text);
  }
  err = fd_agree(s->dec.cart, err);
  int rc = MPI_File_close(&sl->fh);
  sl->open = 0;
  sl->stage = SNAP_IDLE;
  if (err == FD_OK && rc != MPI_SUCCESS)
    err = fd_set_error(FD_ERR_IO, "snapshot %lld: closing '%s' failed", sl->index, sl->tmp);
  err = fd_agree(s->dec.cart, err);
  if (s->dec.rank == 0) {
    if (err != FD_OK) remove(sl->tmp);
    else if (rename(sl->tmp, sl->path) != 0)
      err = fd_set_error(FD_ERR_IO, "snapshot %lld: cannot rename '%s'", sl->index, sl->tmp);
    if (err == FD_OK) {
      sn->steps[sn->written] = sl->step;
      sn->written++;
      err = write_xdmf(s);
    }
  }
  return fd_agree(s->dec.cart, err);
}

/* After a failure: completes or abandons every slot without presenting anything; removes the
 * .tmp files. Collective. */
static void snapshot_abandon(fd_state *s)
{
  for (int q = 0; q < 2; q++) {
    fd_snap_slot *sl = &s->snap.slot[q];
    if (sl->stage == SNAP_COPYING) be_event_sync(sl->done);
    if (sl->req != MPI_REQUEST_NULL) MPI_Wait(&sl->req, MPI_STATUS_IGNORE);
    if (sl->open) MPI_File_close(&sl->fh);
    if (sl->open && s->dec.rank == 0) remove(sl->tmp);
    sl->open = 0;
    sl->dev = NULL;
    sl->stage = SNAP_IDLE;
  }
}

/* Runs f; on error abandons the snapshots in flight and returns the error. */
#define SNAP_CALL(EXPR)                                                                        \
  do {                                                                                         \
    int sn_e_ = (EXPR);                                                                        \
    if (sn_e_ != FD_OK) {                                                                      \
      snapshot_abandon(s);                                                                     \
      return sn_e_;                                                                            \
    }                                                                                          \
  } while (0)

int snapshot_create(fd_state *s)
{
  fd_snapshots *sn = &s->snap;
  memset(sn, 0, sizeof *sn);
  sn->filetype = sn->memtype = MPI_DATATYPE_NULL;
  for (int q = 0; q < 2; q++) sn->slot[q].req = MPI_REQUEST_NULL;
  sn->every = s->opt->snapshot_every;
  if (!sn->every) return FD_OK;
  sn->time_per_step = s->prob.dt > 0 ? s->prob.dt : 1.0;
  const size_t bytes = fd_grid_points_with_ghosts(&s->grid) * sizeof(real_t);
  int err = FD_OK;
  for (int q = 0; q < 2 && err == FD_OK; q++)
    if (be_host_alloc((void **)&sn->slot[q].host, bytes) != BE_OK)
      err = fd_set_error(FD_ERR_RUNTIME, "rank %d: snapshots: cannot allocate 2 x %zu bytes of pinned memory: %s",
                         s->dec.rank, bytes, be_error_message());
  if (err == FD_OK && s->dec.rank == 0) {
    /* at most one snapshot per step */
    long long most = 1 + (long long)(s->opt->iters > 0 ? s->opt->iters : 100) +
                     (s->opt->warmup >= 0 ? s->opt->warmup : 10);
    sn->steps = malloc((size_t)(most / sn->every + 2) * sizeof *sn->steps);
    if (!sn->steps) err = fd_set_error(FD_ERR_RUNTIME, "snapshots: out of memory");
  }
  FD_CALL(fd_agree(s->dec.cart, err));
  FD_BE(be_stream_create(&sn->io, BE_PRIORITY_NORMAL));
  FD_BE(be_event_create(&sn->taken));
  for (int q = 0; q < 2; q++) FD_BE(be_event_create(&sn->slot[q].done));

  /* file: this block of the global interior; memory: the interior of the ghosted block
   * (MPI subarrays in C order: z first) - the types of dump.c */
  int gsizes[3], lsizes[3], gstarts[3], msizes[3], mstarts[3];
  for (int d = 0; d < 3; d++) {
    int r = 2 - d;
    gsizes[r] = (int)s->dec.N[d];
    lsizes[r] = s->grid.n[d];
    gstarts[r] = (int)s->dec.start[d];
    msizes[r] = s->grid.n[d] + 2;
    mstarts[r] = 1;
  }
  FD_MPI(MPI_Type_create_subarray(3, gsizes, lsizes, gstarts, MPI_ORDER_C, FD_MPI_REAL, &sn->filetype));
  FD_MPI(MPI_Type_commit(&sn->filetype));
  FD_MPI(MPI_Type_create_subarray(3, msizes, lsizes, mstarts, MPI_ORDER_C, FD_MPI_REAL, &sn->memtype));
  FD_MPI(MPI_Type_commit(&sn->memtype));
  return FD_OK;
}

int snapshot_destroy(fd_state *s)
{
  fd_snapshots *sn = &s->snap;
  for (int q = 0; q < 2; q++) {
    FD_BE(be_host_free(sn->slot[q].host));
    if (sn->slot[q].done) FD_BE(be_event_destroy(sn->slot[q].done));
  }
  if (sn->taken) FD_BE(be_event_destroy(sn->taken));
  if (sn->io) FD_BE(be_stream_destroy(sn->io));
  if (sn->filetype != MPI_DATATYPE_NULL) FD_MPI(MPI_Type_free(&sn->filetype));
  if (sn->memtype != MPI_DATATYPE_NULL) FD_MPI(MPI_Type_free(&sn->memtype));
  free(sn->steps);
  memset(sn, 0, sizeof *sn);
  return FD_OK;
}

int snapshot_holds(const fd_state *s, const real_t *buf)
{
  for (int q = 0; q < 2; q++)
    if (s->snap.slot[q].dev == buf && buf) return 1;
  return 0;
}

int snapshot_release(fd_state *s, const real_t *buf)
{
  for (int q = 0; q < 2; q++) {
    fd_snap_slot *sl = &s->snap.slot[q];
    if (sl->dev != buf || sl->stage != SNAP_COPYING) continue;
    FD_BE(be_stream_wait_event(s->compute, sl->done));
    sl->dev = NULL;
  }
  return FD_OK;
}

int snapshot_after_step(fd_state *s, const real_t *out)
{
  fd_snapshots *sn = &s->snap;
  if (!sn->every || s->alone) return FD_OK;
  double t0 = fd_now();
  /* 1. a snapshot held since the previous step: its ghosts were exchanged in this step, which
   *    has been enqueued in full; copy it now */
  for (int q = 0; q < 2; q++)
    if (sn->slot[q].stage == SNAP_HELD && sn->slot[q].step < s->steps) SNAP_CALL(slot_copy(s, &sn->slot[q]));
  /* 2. MPI progress for the writes in flight */
  for (int q = 0; q < 2; q++) {
    fd_snap_slot *sl = &sn->slot[q];
    if (sl->stage == SNAP_WRITING && sl->req != MPI_REQUEST_NULL) {
      int flag = 0;
      int rc = MPI_Test(&sl->req, &flag, MPI_STATUS_IGNORE);
      if (rc != MPI_SUCCESS) {
        sl->err = rc;
        sl->req = MPI_REQUEST_NULL;
      }
    }
  }
  if (s->steps % sn->every == 0) {
    fd_snap_slot *sl = &sn->slot[sn->begun % 2], *prev = &sn->slot[(sn->begun + 1) % 2];
    /* 3. the previous snapshot's copy has had a whole interval: write it */
    if (prev->stage == SNAP_COPYING) SNAP_CALL(slot_post(s, prev));
    /* 4. this slot's last snapshot (two ago) must be on disk before its host buffer is reused */
    if (sl->stage == SNAP_COPYING) SNAP_CALL(slot_post(s, sl));
    if (sl->stage == SNAP_WRITING) SNAP_CALL(slot_finish(s, sl));
    /* 5. take this one */
    sl->index = ++sn->begun;
    sl->step = s->steps;
    SNAP_CALL(slot_open(s, sl));
    sl->dev = out;
    sl->stage = SNAP_HELD;
  }
  sn->wait_ms += (fd_now() - t0) * 1e3;
  return FD_OK;
}

int snapshot_drain(fd_state *s)
{
  fd_snapshots *sn = &s->snap;
  if (!sn->every) return FD_OK;
  double t0 = fd_now();
  /* oldest first: the slot of the snapshot begun first */
  for (int n = 0; n < 2; n++) {
    fd_snap_slot *sl = &sn->slot[(sn->begun + n) % 2];
    if (sl->stage == SNAP_HELD) SNAP_CALL(slot_copy(s, sl));
  }
  for (int n = 0; n < 2; n++) {
    fd_snap_slot *sl = &sn->slot[(sn->begun + n) % 2];
    if (sl->stage == SNAP_COPYING) SNAP_CALL(slot_post(s, sl));
  }
  for (int n = 0; n < 2; n++) {
    fd_snap_slot *sl = &sn->slot[(sn->begun + n) % 2];
    if (sl->stage == SNAP_WRITING) SNAP_CALL(slot_finish(s, sl));
  }
  sn->wait_ms += (fd_now() - t0) * 1e3;
  return FD_OK;
}

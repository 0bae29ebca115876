/* halo.h - the halo exchange: the regions of a local field (the six faces; with S ghost layers,
 * S >= 2, also the edges and, S >= 3, the corners: faces.h) travel to the neighbours in their
 * directions, device to device between ranks of a node (IPC: a copy from the neighbour's send
 * buffer, ordered by flags that the streams set and await), or through MPI as device buffers (GPU-aware MPI) or staged through pinned host
 * memory, one message per region. Every MPI call of the exchange lives in halo.c.
 *
 * The exchange is split so that the solver computes between its halves:
 *   halo_exchange_begin   prepost receives; the halo stream waits for the field and packs
 *   ... interior update on the compute stream ...
 *   halo_exchange_end     copy IPC faces in (the device waits); MPI faces: wait for the pack,
 *                         send, wait for the messages;
 *                         the halo stream unpacks; the consumer stream waits for the unpack
 */
#ifndef FDMINI_HALO_H
#define FDMINI_HALO_H

#include <mpi.h>

#include "backend.h"
#include "graph_cache.h"
#include "proxy.h"

/* The longest a signalled launch waits for a neighbour's word, seconds: far beyond any step a
 * neighbour can take (a host that stalls a minute between two launches), short enough that a
 * neighbour that died ends the run with an error instead of a hang. */
#define HALO_SIGNAL_WAIT_S 60.0

/* --mpi-gpu: device buffers to MPI (aware), through pinned host memory (staged), or whichever
 * this MPI supports (auto). Names in src/run/options.c. */
typedef enum { FD_MPI_GPU_AUTO = 0, FD_MPI_GPU_AWARE, FD_MPI_GPU_STAGED } fd_mpi_gpu;
/* --halo-path: how faces reach a neighbour (see halo_create). Names in src/run/options.c. */
typedef enum {
  FD_HALO_PATH_AUTO = 0, /* a start-up trial picks among the others that apply */
  FD_HALO_PATH_MPI,      /* every face through MPI, driven by the host */
  FD_HALO_PATH_IPC,      /* every face by IPC (an error where one cannot) */
  FD_HALO_PATH_MIXED,    /* faces by IPC where the neighbour is in reach, the rest through MPI:
                            the exchange driven by the host, never signalled */
  FD_HALO_PATH_PROXY,    /* the pass in one launch: faces by IPC signalled where in reach, the
                            rest through the off-node proxy (proxy.h) */
} fd_halo_path;

/* One exchange of a field's ghosts (or of two fields' together: the wave's two time levels),
 * set up by halo_create, freed by halo_destroy. "Face" below means any region (face, edge or
 * corner). Buffers hold the regions in the layout of faces.h (region r's message at
 * faces.offset[r], faces.count[r] * fields elements; faces.total elements per parity). */
typedef struct {
  MPI_Comm comm;          /* the Cartesian communicator (the caller's) */
  int nbr[FD_REGIONS];    /* neighbour rank in each region's direction, MPI_PROC_NULL beyond a
                             global edge */
  fd_grid grid;           /* the field's layout: interior extents, ghost layers = the width */
  int width;              /* S: ghost layers exchanged (grid.ghost) */
  int fields;             /* fields per exchange (1, or 2) */
  fd_faces faces;         /* field 0's boxes: geometry, active regions, buffer layout */
  fd_faces faces2;        /* field 1's boxes (fields == 2) */
  int staged;             /* 1: MPI messages go through the pinned host buffers */
  /* transport of each active face: ipc[f] = 1 copies it on the device from the neighbour's
   * send buffer mapped into this process (node-local), 0 sends it through MPI */
  int ipc[FD_REGIONS];
  int ipc_able[FD_REGIONS]; /* the faces that can go by IPC (mapped): halo_use_ipc's choice */
  int n_ipc, n_mpi;       /* this rank's active faces by transport */
  long long ipc_faces_all, mpi_faces_all, ipc_able_all; /* the same, summed over the ranks */
  /* the off-node proxy (proxy.h): the faces of a signalled pass that cannot go by IPC
   * (proxy_able[f]: halo_create's choice, where the path allows it and the device loads every
   * kernel at start-up); proxy[f] = 1 while halo_use_proxy is on and f is not by IPC. MPI
   * faces (n_mpi) stay MPI faces of the host-driven exchange: the proxy carries them only
   * inside signalled passes. */
  fd_proxy proxy;
  int proxy_able[FD_REGIONS];
  int proxy_on[FD_REGIONS];
  int use_proxy;          /* halo_use_proxy */
  int n_proxy;            /* this rank's faces through the proxy now */
  long long proxy_faces_all, proxy_able_all; /* summed over the ranks */
  int launches_wait;      /* the backend's launches wait on the device (be_info.launches_wait) */
  uint32_t sig_served;    /* signalled launches served since the last halo_signals_reset: the
                             exchange the next one reads (halo_signals_serve) */
  int sig_host_stalled;   /* ... and one of them stalled (launches that cannot wait) */
  long long uses[2];      /* exchanges made with IPC faces, by parity: the flags' values (halo.c) */
  int direct;             /* halo_capture: the work goes straight to the stream (no graph of
                             the halo's own), for a caller that captures it */
  int slots;              /* send_block's slots of faces.total: 2, or 4 where the exchange may
                             be signalled (one field at width 1, any at S > 1; slots 2 and 3:
                             halo_signals): IPC is
                             possible (be_ipc_supported, a path other than mpi); never on the
                             host backend */
  int same_device[FD_REGIONS]; /* IPC faces whose neighbour uses this rank's device */
  real_t *send_block;     /* device, slots x faces.total: the send buffers of both parities */
  real_t *send_d[2];      /* device pack buffers, by exchange parity (halves of send_block) */
  real_t *recv_block;     /* device, 2 x faces.total: the receive buffers of both parities;
                             NaN when created (halo_poison_receives) */
  real_t *recv_d[2];      /* device receive buffers, by exchange parity (halves of recv_block) */
  real_t *send_h, *recv_h[2]; /* pinned host buffers (staged mode only), the same way (recv_h
                             NaN when created) */
  real_t *poison_d;       /* device, faces.total elements of NaN (halo_poison_ghosts); NULL
                             without active regions */
  int drop_region;        /* test only (halo_test_drop_unpack): the region whose unpack every
                             exchange skips, -1 none */
  int send_nothing;       /* test only (halo_test_send_nothing): MPI messages carry 0 elements,
                             IPC faces are not copied */
  MPI_Request req[2 * FD_REGIONS];  /* MPI faces: data messages of the exchange in flight, the
                             receives first (req[0 .. nrecv-1], of regions recv_region[]) */
  int nreq, nrecv;
  int recv_region[FD_REGIONS];
  /* The first short message this rank received (MPI faces: MPI_Get_count below the region's
   * count), for halo_short_message; short_exchange = -1: none */
  long long short_exchange;
  int short_region, short_source, short_got;
  size_t short_want;
  be_stream stream;       /* the halo stream (high priority), owned by the caller */
  /* by exchange parity: pack_end (host waits for it before MPI_Isend; an ordering event),
   * and the timing events of the exchanges asked to be timed (halo_exchange_begin) */
  be_event pack_end[2];
  be_event pack_start[2], pack_stop[2], unpack_start[2], unpack_end[2], xfer_start[2], xfer_end[2];
  /* IPC path (halo.c, "the exchange"): this rank's flag words, 2 x FD_REGIONS of them in
   * device memory (word s * FD_REGIONS + f: the neighbour on face f has packed its exchange of
   * parity s; which one, the value says), which only that neighbour writes; and each IPC
   * neighbour's words, mapped here */
  uint32_t *flags;
  uint32_t *peer_flags[FD_REGIONS];
  void *peer_block[FD_REGIONS];     /* neighbour's send_block, mapped here */
  real_t *peer_face[FD_REGIONS][2]; /* in it, the neighbour's face towards this rank, by parity */
  real_t *peer_sig[FD_REGIONS][2];  /* ... and in its signalled slots (halo_signals) */
  /* the signalled exchange (halo_signals): a launch waits for a word at most sig_wait_s
   * seconds (HALO_SIGNAL_WAIT_S, or a test's); sig_test: backend.h's BE_SIG_TEST_* bits of the
   * tests; the first stall this rank's launches recorded (face, -1 none; exchange; the
   * words' resets before it: sig_resets counts them) */
  double sig_wait_s;
  unsigned sig_test;
  int sig_stall_face;
  uint32_t sig_stall_at;
  uint32_t sig_resets, sig_stall_epoch;
  long long exchanges;    /* completed exchanges (halo_exchange_unpack); parity = exchanges % 2 */
  int timing[2];          /* the exchange of parity s is timed (its events are recorded) */
  int timing_pending[2];  /* ... and its timings are not yet added to the sums */
  double host_ms[2];      /* MPI faces: host time of the exchange, by parity */
  /* Sums since halo_reset_timers. Every exchange: count, mpi_ms (MPI faces: the host's time
   * from the finished pack to the arrived messages). The timed exchanges only: timed, pack_ms,
   * unpack_ms (device events), ipc_ms (IPC faces: the device's time from this rank's finished
   * pack to the last face copied in), copy_ms (the IPC copies alone). */
  long long count, timed;
  double mpi_ms, pack_ms, unpack_ms, ipc_ms, copy_ms;
  fd_graph_cache graphs;  /* the packs replayed
                             from graphs, by parity and fields, when on (halo_use_graphs) */
  size_t bytes_sent;      /* bytes one exchange sends (all active faces, every field) */
  int n_msgs;             /* messages one exchange sends: its active faces (MPI or IPC) */
  int n_stage;            /* staged mode: runs of adjacent MPI faces in the buffers, */
  size_t stage_lo[FD_REGIONS], stage_n[FD_REGIONS]; /* first element and length of each */
} fd_halo;

/* Resolves --mpi-gpu against the MPI in use (mpi_gpu_aware, base/mpi_gpu.h) into *staged (the same on every rank): auto picks
 * aware where every rank's MPI supports it, else staged; aware where MPI is not GPU-aware is a
 * usage error agreed by all ranks, before any device pointer reaches MPI. Collective over
 * comm. */
int halo_choose_mode(MPI_Comm comm, fd_mpi_gpu requested, const be_info *dev, int *staged);

/* FD_OK when every message of an exchange of `fields` fields of layout g (width g->ghost) to the
 * neighbours nbr (one per region, MPI_PROC_NULL where there is none) holds at most INT_MAX
 * elements, the largest count MPI's C interface takes; else FD_ERR_RUNTIME with one line for
 * rank `rank` naming the region and its count ("does not fit"). Pure: Not Collective, allocates
 * nothing. halo_create checks it (agreed); a caller that allocates fields first calls it before
 * them, so that a block too large to exchange is refused before anything is allocated. */
int halo_check_counts(const fd_grid *g, int fields, const int nbr[FD_REGIONS], int rank);

/* Sets up *h for `fields` fields (1 or 2) of layout g on the Cartesian communicator comm with
 * neighbours nbr (one per region direction, faces.h): the width S is g->ghost, the active
 * regions those with a neighbour that S needs (fd_region_used; g->ghost must not exceed any
 * extent along which a neighbour exists). Device send and receive buffers of both parities
 * (pinned host ones too when staged, from halo_choose_mode), events, and each face's transport
 * (path):
 * FD_HALO_PATH_MPI every face through MPI; IPC every face on the device, a usage error
 * (agreed) where a neighbour is on another node or its device is out of reach; AUTO, MIXED and
 * PROXY: IPC where possible, MPI elsewhere (halo_use_ipc then switches every face to MPI, where
 * a caller's trial found that faster); with PROXY, and with AUTO where launches wait on the
 * device (dev->launches_wait), the faces that cannot go by IPC may also go through the
 * off-node proxy inside signalled passes (halo_use_proxy; made where the device loads every
 * kernel at start-up, dev->eager_loading: PROXY without it is an agreed usage error). dev is this rank's device; node identifies its node (equal on the ranks of one
 * node, different between nodes: fd_node.id of src/run/bind.h). halo_stream (high priority) stays
 * the caller's. Collective over comm; synchronous. Buffers that do not fit (a byte count that
 * overflows, a message of more than INT_MAX elements, an allocation that fails on any rank)
 * are an agreed FD_ERR_RUNTIME. halo_destroy frees *h, after a failure too. */
int halo_create(fd_halo *h, MPI_Comm comm, const int nbr[FD_REGIONS], const fd_grid *g,
                int fields, int staged, fd_halo_path path, const be_info *dev, int node,
                be_stream halo_stream);
/* Packs replayed from graphs (on = 1) or launched
 * directly (0, the default); a timed exchange is always direct. Frees the graphs kept so far.
 * Not Collective. */
int halo_use_graphs(fd_halo *h, int on);
/* on = 1: every face that can go by IPC does (ipc_able; halo_create's choice), 0: every face
 * through MPI. Waits for the halo stream and meets every rank of comm first, so that no
 * exchange is in flight when the transports change, and frees the halo's graphs (staged MPI
 * copies only the MPI faces' runs); a caller's graphs that hold halo_exchange_unpack must be
 * captured again too. Collective over comm; synchronous. */
int halo_use_ipc(fd_halo *h, int on);
/* on = 1: the signalled passes carry every face that cannot go by IPC through the off-node
 * proxy (proxy_able: halo_create made a proxy), so that a pass with such faces can be one
 * launch; 0: none (the host-driven exchange, whatever the setting, sends them through MPI),
 * and a proxy still serving is drained (call it when no launch of any rank is in flight).
 * Takes effect at the next halo_signals_reset. Collective over comm. */
int halo_use_proxy(fd_halo *h, int on);
/* Frees what halo_create allocated and closes the neighbours' mappings. Collective over comm
 * when any rank uses the IPC path (a neighbour may still read this rank's buffers until all
 * have synchronised); synchronous. */
int halo_destroy(fd_halo *h);
/* "ipc", "mpi", "mixed" (some faces each way, over all ranks), "proxy" (signalled passes whose
 * faces out of IPC reach go through the off-node proxy: proxy_faces of the mpi_faces) or "none"
 * (no neighbours). Pure. */
const char *halo_path_resolved(long long ipc_faces, long long mpi_faces, long long proxy_faces);

/* One exchange of the ghosts of u (and of u2 when h has two fields, else NULL: device fields
 * of h's grid, with ghosts) is three calls:
 *   halo_exchange_begin   prepost receives; once `field_ready` (recorded on the producing
 *                         stream; NULL: the halo stream's own order suffices, the fields' last
 *                         writes being on it) has happened the halo stream packs the regions (staged: and
 *                         copies them to pinned host memory); IPC faces: it then sets the
 *                         neighbours' "packed" flags
 *   halo_exchange_end     the host part: IPC faces are copied in on the halo stream once the
 *                         neighbours' flags say they have packed (the host does not wait); MPI
 *                         faces: the host waits for the pack (the one host wait of the
 *                         exchange), sends, and waits for every message
 *   halo_exchange_unpack  the device part left: (staged) copies to the device and the unpack
 *                         of every region into the ghosts, on the halo stream; only
 *                         asynchronous work on that stream, so a caller may capture it in a
 *                         graph (be_graph_begin) with work of its own
 * The consumer of the ghosts orders itself after the unpack (an event recorded on h->stream).
 * `timed` (begin) records timing events for this exchange; such an exchange must not be
 * captured. Its timings are added to the sums (pack_ms, ...) later, without a host wait for
 * it: at the next timed exchange of the same parity or at halo_flush_timers. None of the three
 * is Collective, but every neighbour must make the same calls for the same exchange. u and u2
 * must not change until the pack has run. */
int halo_exchange_begin(fd_halo *h, const real_t *u, const real_t *u2, be_event field_ready,
                        int timed);
/* The fused receive, for one field at width 1: the caller's one launch unpacks the exchange
 * last ended, updates the shell and packs the next exchange from the layers it just wrote
 * (be_shell_exchange), on the halo stream. halo_fused_receive enqueues what comes before that
 * launch (staged: the copies of the received faces to the device) and fills *io with its
 * arguments; the caller enqueues be_shell_exchange(..., io->faces, io->recv, io->unpack,
 * io->send, io->pack, h->stream); halo_fused_packed enqueues what follows (staged: the copies of
 * the packed MPI faces to pinned host memory). Neither changes *h, so a caller's graph may hold
 * the three. halo_exchange_begin_packed then begins the next exchange without a pack of its own:
 * once `field_ready` has happened (NULL: the halo stream's order suffices) it sets the IPC
 * neighbours' flags and posts the receives, and halo_exchange_end's host wait covers the pack.
 * The field must not change in between; a begin that must be timed, or that follows anything
 * else written into the field, calls halo_exchange_begin, which packs again (the same values).
 * FD_ERR_USAGE for two fields, a width above 1 or a timed exchange (halo_exchange_unpack
 * records its timing events). Asynchronous; not Collective. */
typedef struct {
  const fd_faces *faces; /* the regions (width 1, one field): h's */
  const real_t *recv;    /* the received faces of the exchange last ended (device) */
  unsigned unpack;       /* bit f: face f's ghosts come from recv (a test's dropped face is not) */
  real_t *send;          /* the next exchange's send buffer (device) */
  unsigned pack;         /* bit f: face f is packed into send (every active face) */
} halo_fused_io;
int halo_fused_receive(fd_halo *h, halo_fused_io *io);
int halo_fused_packed(fd_halo *h);
int halo_exchange_begin_packed(fd_halo *h, be_event field_ready);
/* Blocks the host until the MPI messages have arrived (IPC faces only: never; the device
 * orders the data). Each received MPI message's element count (MPI_Get_count) is compared with
 * its region's: the first short one is recorded (halo_short_message), not agreed here, so that
 * no exchange pays for an allreduce. */
int halo_exchange_end(fd_halo *h);
/* 1 when a message this rank received since halo_create held fewer elements than its region
 * (the first such: exchange number, region, source rank, elements got and expected, one line
 * into why[len], naming rank `rank`), else 0. IPC faces copy exactly their region's size from
 * the neighbour's buffer, and the signalled exchange reads it in place: neither has a count to
 * check. The caller agrees the verdict over the ranks (once, at the end of a run). Pure; Not
 * Collective. */
int halo_short_message(const fd_halo *h, int rank, char *why, size_t len);
/* Asynchronous on the halo stream. */
int halo_exchange_unpack(fd_halo *h, real_t *u, real_t *u2);
/* Whole exchanges in a caller's graph, where every face goes by IPC (no MPI call, no host
 * wait: the device orders everything). halo_capture(h, 1) makes begin, end and unpack enqueue
 * their work straight on the halo stream (no graph of the halo's own), so that a caller's
 * capture of that stream (joined to its own by events) holds it; 0 undoes it. FD_ERR_USAGE
 * where this rank has MPI faces, and for a timed exchange while on. The work captured for an
 * exchange depends on the buffers and on halo_graph_phase(h) at its begin (the parity and the
 * flags' values), nothing else: a graph of whole exchanges replays them when the phase (and
 * the buffers) are again those of its capture. The caller saves *h before the capture and puts
 * it back after (the capture advanced the counters; nothing ran). Each replayed exchange then
 * takes one halo_exchange_replayed, which advances the counters as begin and end do (no MPI
 * faces: FD_ERR_USAGE). Not Collective; no device work. */
int halo_capture(fd_halo *h, int on);
int halo_graph_phase(const fd_halo *h);
int halo_exchange_replayed(fd_halo *h);

/* Writes NaN into the receive boxes (the ghosts an exchange fills) of every active region of u,
 * a device field of h's grid: faces, and with width S >= 2 edges, S >= 3 corners; ghosts at a
 * global edge (no neighbour) keep their values. Called after a field is (re)filled, so that any
 * read of a ghost the exchange did not write poisons the result and its check fails. One unpack
 * launch. Call when no exchange is in flight (the halo stream has run the last unpack into u)
 * and synchronise s before the next halo_exchange_begin. Not Collective; asynchronous on s. */
int halo_poison_ghosts(fd_halo *h, real_t *u, be_stream s);

/* Test only (--test-inject-fault=exchange): from now on every exchange skips the unpack of
 * region `region` of this rank (an active one), as if its message never arrived: its ghosts
 * keep what they held (NaN after halo_poison_ghosts). -1 undoes it. FD_ERR_USAGE for a region
 * that is not active here. Not Collective. */
int halo_test_drop_unpack(fd_halo *h, int region);

/* Writes NaN into both parities' receive buffers (device, and pinned host when staged), so
 * that a message or copy that delivers nothing leaves NaN there, which the unpack copies into
 * the ghosts. halo_create calls it; a caller that fills its fields again may too. Call when no
 * exchange is in flight and synchronise s before the next halo_exchange_begin. Not
 * Collective; asynchronous on s. */
int halo_poison_receives(fd_halo *h, be_stream s);

/* Test only (--test-inject-fault=zero): from now on every MPI message this rank sends carries 0
 * elements (its receives still expect their full count: halo_short_message reports them) and
 * its IPC faces are not copied in (its receive buffers keep their NaN). Not Collective. */
void halo_test_send_nothing(fd_halo *h);

/* Adds the timings of every timed exchange not yet added to the sums (waiting for them); call
 * after the halo stream's work is complete or about to be. Not Collective; synchronous. */
int halo_flush_timers(fd_halo *h);
/* Zeroes the sums. Not Collective. */
void halo_reset_timers(fd_halo *h);

/* The exchange signalled inside the pass's launch (backend.h, be_signals_pass), for the solver's
 * passes of one field at width 1, and at width S > 1 in a launch of its own that packs and
 * unpacks (be_signals_exchange: every region, both fields where there are two), where
 * every face goes by IPC, to a neighbour on this rank's
 * own device (ranks sharing one GPU, under MPS) or on another device of the node that this one
 * reaches as a peer: no halo stream, no host call per exchange; the slots are the halo's
 * (send_block's slots 2 and 3, mapped by the neighbours) and so are the words (after the IPC
 * flags). halo_signals_able says whether this rank could (Pure; the caller agrees over the
 * ranks, since all must exchange the same way); halo_signals fills *x (the unpack leaves out a
 * test's dropped region, halo_test_drop_unpack); halo_signals_reset zeroes this rank's words
 * once no device work of any rank is in flight: it waits for the halo stream (the caller has
 * waited for its own), meets every rank, keeps the words' stall record (below), zeroes, meets
 * every rank again, so that any rank may then prime (Collective over comm; synchronous);
 * halo_signalled counts an exchange made that way (bytes and messages per step).
 * halo_signals_face fills *x for face f alone, where its neighbour is on another device and
 * mapped (the floor F_p: src/solver/floors.c), and returns 1; else 0 (Pure). The neighbour
 * must use the opposite face in the same way.
 * halo_signals_stalled: FD_ERR_RUNTIME with one line naming this rank, the neighbour and the
 * exchange when a launch of this rank waited for a neighbour's word longer than sig_wait_s
 * since halo_create (backend.h: it then went on, with wrong results), else FD_OK; *when orders
 * the stalls of all ranks in time (the words' resets before it, then its exchange; ~0 none:
 * a stalled rank makes its other neighbours wait in turn, so the first stall names the rank that
 * stopped). Waits for the halo stream; the caller has waited for its own and agrees the verdict
 * (fd_agree_first with *when). Not Collective. */
int halo_signals_able(const fd_halo *h);
void halo_signals(const fd_halo *h, be_signals *x);
int halo_signals_face(const fd_halo *h, int f, be_signals *x);
int halo_signals_reset(fd_halo *h);
void halo_signalled(fd_halo *h);
int halo_signals_stalled(fd_halo *h, int rank, char *why, size_t len, unsigned long long *when);
/* Faces through the off-node proxy (halo_use_proxy on; proxy.h) inside signalled passes:
 * halo_signals gives them the proxy's slots and words (be_signals.proxied), halo_signals_reset
 * drains the proxy of the passes before (Collective among neighbours, as the reset is over
 * comm) and starts it for the passes to come. The caller serves it around its launches:
 * halo_signals_serve before each signalled launch of x (where launches wait on the device, one
 * step that does not block, proxy_progress; where they cannot, the host backend, it blocks
 * until the faces the launch reads have arrived, at most sig_wait_s, and otherwise records the
 * stall as a launch would, for halo_signals_stalled; with the order fault's NOWAIT it does not
 * wait), halo_signals_progress (one step that never blocks) after it. Every other host wait for the device serves it too while it is active (the
 * backend's wait hook). halo_signals_served_by_host: 1 where launches cannot wait and the proxy
 * serves (the caller then must not replay signalled launches from graphs: each needs the host
 * before it). halo_signals_exchange: the deep exchange (be_signals_exchange), with the host's
 * service between its pack and its unpack where launches cannot wait. halo_proxy_face fills *x
 * for face f alone through the proxy (the floor F_m: src/solver/floors.c) and returns 1 where
 * it can carry f, else 0 (Pure); its neighbour must do the same. Not Collective but the reset. */
int halo_signals_serve(fd_halo *h, const be_signals *x);
int halo_signals_progress(fd_halo *h);
int halo_signals_served_by_host(const fd_halo *h);
int halo_signals_exchange(fd_halo *h, const be_signals *x, real_t *u, real_t *u2, be_stream s);
int halo_proxy_face(const fd_halo *h, int f, be_signals *x);

/* Test only (--test-stall): from now on this rank's signalled launches never set their
 * neighbours' words (mute = 1) and every wait of this rank ends after wait_s seconds. Not
 * Collective; every rank calls it with the same wait_s. */
void halo_test_signals(fd_halo *h, int mute, double wait_s);
/* Test only (--test-inject-fault=order on signalled passes): the launches do not wait for the
 * neighbours' words. Not Collective. */
void halo_test_signals_nowait(fd_halo *h);
/* Test only (--test-inject-fault=shell on signalled passes): the width-1 launches leave the
 * shell's points unwritten (BE_SIG_TEST_NOSHELL). Not Collective. */
void halo_test_signals_noshell(fd_halo *h);

#endif

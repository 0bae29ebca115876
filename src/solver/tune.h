/* tune.h - start-up measurements on each rank's own block: the device copy bandwidth (the
 * reference of the report's "% of memcpy") and the autotunes of the stencil configuration and
 * of the fused passes (--fuse). */
#ifndef FDMINI_TUNE_H
#define FDMINI_TUNE_H

#include <mpi.h>

#include "backend.h"

#define FD_TUNE_MAX 32

/* The autotune's trial as every rank saw it. */
typedef struct {
  int ran;                  /* 1 when the autotune ran (0: --tune off, --kernel, host) */
  int n;                    /* candidates timed */
  fd_kernel cand[FD_TUNE_MAX];
  double ms[FD_TUNE_MAX];   /* median ms per update of each candidate on the slowest rank */
  /* The loop trial of the finalists (tune_kernel_finalists; on a device, when the run takes
   * single steps): ms per step of the run's own loop with one step per pass, graphs as the
   * run would take them (loop_graphs), on the slowest rank, the fastest of `rounds` trials; 0
   * where not run. The choice is the fastest of these. */
  double loop_ms[FD_TUNE_MAX];
  int loop_rounds[FD_TUNE_MAX]; /* rounds each ran: `rounds`, 1 for a family shape that left
                                   after the first, 0 for no loop trial */
  int rounds;               /* rounds of loop trials (0: none ran) */
  int loop_graphs;          /* the graphs setting of the loop trials */
  int loop_family;          /* the kernel family every candidate of which also ran loop trials
                               (tune_family_finalists; passes signalled), -1 none */
  int chosen;               /* index of the one every rank uses */
  int chosen_plain;         /* with loop_family: the fastest loop trial of the closest
                               (tune_kernel_finalists), the kernel of passes not signalled */
  double seconds;           /* wall time of the trial and the loop trials, slowest rank */
} fd_tune;

#define FD_FUSE_TUNE_MAX 64

/* Several steps per pass (--fuse): T and the fused kernel's configuration, and the trial that
 * chose them when one ran. */
typedef struct {
  int steps;                 /* T, steps per pass */
  fd_fused config;           /* the fused kernel's configuration (T > 1), resolved */
  int ran;                   /* 1: chosen by a timing trial (the autotune or --fuse auto) */
  int n;                     /* candidates timed */
  fd_fused cand[FD_FUSE_TUNE_MAX]; /* cand[i].steps == 1: the single-step kernel, one step per
                                      pass; > 1: a fused configuration */
  double ms[FD_FUSE_TUNE_MAX]; /* median ms per step (a pass / its steps) on the slowest rank */
  /* The loop trial of the finalists (the fastest one or two configurations of each T by ms):
   * ms per step of the run's own loop (its passes, exchanges, sampled timing) on the slowest
   * rank, with graphs off [0] and on [1], the fastest of `rounds` trials; 0 where not run.
   * The choice is the fastest of these. */
  double loop_ms[FD_FUSE_TUNE_MAX][2];
  int rounds;                /* loop trials of each finalist (0: none ran) */
  /* The sustained trial (devices): the finalists within sustain_margin (a fraction) of the
   * fastest loop trial, each sustain_warm_s untimed then sustain_s timed: ms per step on the
   * slowest rank, graphs off [0] and on [1]; 0 where not run. It decides where it ran. */
  double sustain_ms[FD_FUSE_TUNE_MAX][2];
  int sustained;             /* finalists it ran (0: none) */
  double sustain_warm_s, sustain_s, sustain_margin;
  int chosen;                /* index of the one every rank uses */
  int chosen_graphs;         /* the graphs setting of the chosen loop trial */
  double seconds;            /* wall time of the trial, slowest rank */
} fd_fuse_tune;

/* Bandwidth of a device-to-device copy of `bytes` from src to dst (two buffers of this
 * rank's device) on stream s, counting bytes read plus bytes written: the median of 5 timed
 * batches of back-to-back copies (1 copy of a large field, up to 64 of a small one) after one
 * untimed copy. Not Collective; synchronous. */
int tune_memcpy_gbs(void *dst, const void *src, size_t bytes, be_stream s, double *gbs);

/* The agreement of the autotune: ms[0..n-1] holds this rank's times on entry and the
 * maximum over the ranks of comm on return; *chosen = the index of the smallest (the first
 * of equals), the same on every rank. Collective over comm. */
int tune_agree(MPI_Comm comm, double *ms, int n, int *chosen);

/* Times every candidate of be_kernel_candidates on trial t (this rank's block, the update
 * the run will do; t->out is overwritten) on every rank of comm at once and fills *out with
 * the candidates, their times on the slowest rank and the choice (tune_agree). Collective
 * over comm: every rank gets the same *out. */
int tune_kernel(MPI_Comm comm, const fd_kernel_trial *t, fd_tune *out);

/* The autotune's finalists, which the run's own loop then times (a kernel timed alone ranks
 * candidates within a few percent of each other in whatever order the device's state of the
 * moment gives, and with ranks sharing a device the alone ranking can differ from the loop's by
 * a kernel family): the indices of t's candidates whose t->ms lies within `margin` (a fraction)
 * of the fastest, at most `most`: first the fastest of each kernel family (fd_kernel.id), then
 * the fastest of the others, each part fastest first (the earlier of equals first), into
 * idx[0..most-1]. Returns how many (at least 1 when t->n > 0). Pure. */
int tune_kernel_finalists(const fd_tune *t, double margin, int most, int *idx);

/* Appends to idx[0..n-1] every candidate of t of kernel family `family` (an fd_kernel_id) not
 * yet in it, fastest alone first, whatever its time; returns the new count (at most
 * FD_TUNE_MAX; idx holds that many). For a family whose loop runs what timing it alone does not
 * show: zmarch shares a signalled pass's launch with the exchange, and which of its shapes is
 * fastest there the kernel alone does not tell. Pure. */
int tune_family_finalists(const fd_tune *t, int family, int *idx, int n);

/* The configurations of ft's finalists that ran loop trials (ft->loop_ms > 0 with either
 * graphs setting) other than cand[except], in the order of ft->cand, into idx[0..]: those a
 * path the loop trials did not run may run fastest with (the host-driven exchange where they
 * ran the proxy's one-launch pass), since which T and which configuration of it win depends on
 * how the exchange overlaps. Returns how many (none where no loop trial ran). Pure. */
int tune_fuse_others(const fd_fuse_tune *ft, int except, int *idx);

/* The fused trial: for every T of steps[0..nsteps-1], T = 1 times the single-step
 * configuration `single` on trial t1 (the update the run does), T > 1 every configuration of
 * be_fused_candidates(T, tf) on trial tf (a pass over the block; tf->out is overwritten), on every
 * rank of comm at once; all ranks take the fastest per step on the slowest rank (tune_agree).
 * Fills *out (steps, config, candidates). Collective over comm: every rank gets the same *out,
 * whatever candidates each rank's device allows (tune_fused_list). */
int tune_fused(MPI_Comm comm, const fd_kernel_trial *t1, fd_kernel single,
               const fd_fused_trial *tf, const int *steps, int nsteps, fd_fuse_tune *out);

/* tune_fused on this rank's candidates cand[0..ncand-1] (entries of steps 1: the single-step
 * configuration), which may differ between ranks (devices with less shared memory per block
 * offer fewer): the ranks first agree on one list (tune_fused_common) and time only that.
 * first_steps names T in the error when no candidate runs on every rank (agreed
 * FD_ERR_RUNTIME). Collective over comm. */
int tune_fused_list(MPI_Comm comm, const fd_kernel_trial *t1, fd_kernel single,
                    const fd_fused_trial *tf, const fd_fused *cand, int ncand, int first_steps,
                    fd_fuse_tune *out);

/* Replaces cand[0..*n-1], this rank's list, with the candidates every rank of comm runs: the
 * union of the ranks' lists in rank order without repeats (at most FD_FUSE_TUNE_MAX), less any
 * that be_fused_resolve refuses or changes on some rank (steps 1 always stays). The same list
 * and *n on every rank on return. Collective over comm. */
int tune_fused_common(MPI_Comm comm, fd_fused *cand, int *n);

#endif

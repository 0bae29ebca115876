/* summary.c - the short report at the end of a run (summary.h). */
#include <stdio.h>
#include <string.h>

#include "report.h"
#include "summary.h"

/* One line of at most SUMMARY_COLUMNS columns: a longer one ends in "...". */
static void put_line(FILE *out, const char *line)
{
  const size_t n = strlen(line);
  if (n <= SUMMARY_COLUMNS) fprintf(out, "%s\n", line);
  else fprintf(out, "%.*s...\n", SUMMARY_COLUMNS - 3, line);
}

/* A row of the table: label, min/avg/max (or the one value of a one-rank run) in `fmt`, and a
 * note. */
static void row(FILE *out, const fd_result *r, const char *label, const char *fmt, double scale, const fd_stat *s,
                const char *note)
{
  char line[256], v[3][32];
  const double x[3] = {s->min * scale, s->avg * scale, s->max * scale};
  for (int k = 0; k < 3; k++) snprintf(v[k], sizeof v[k], fmt, x[k]);
  if (r->ranks == 1) snprintf(line, sizeof line, "  %-18s %11s%s%s", label, v[0], note[0] ? "   " : "", note);
  else snprintf(line, sizeof line, "  %-18s %11s %11s %11s%s%s", label, v[0], v[1], v[2], note[0] ? "   " : "", note);
  put_line(out, line);
}

/* The kernel line: the configuration that ran and how it was chosen, the fused one if any. */
static void kernel_line(FILE *out, const fd_options *o, const be_info *dev, const fd_result *r)
{
  char spec[FD_KERNEL_SPEC_MAX], line[320];
  if (r->fuse.steps > 1) {
    fd_fused_format(&r->fuse.config, spec, sizeof spec);
    snprintf(line, sizeof line, "  kernel      %s (%d steps per pass, %s)", spec, r->fuse.steps,
             r->fuse.ran ? "autotuned" : (dev->is_accelerator ? "the rule" : "host loop"));
  } else {
    fd_kernel_format(&r->kernel, spec, sizeof spec);
    snprintf(line, sizeof line, "  kernel      %s (%s)", spec,
             r->tune.ran ? "autotuned"
                         : (o->have_kernel ? "--kernel" : (dev->is_accelerator ? "the rule, --tune off" : "host loop")));
  }
  put_line(out, line);
}

/* The halo line: the path the faces took, how many each way, the MPI, overlap, width. */
static void halo_line(FILE *out, const be_info *dev, const fd_result *r)
{
  char line[320];
  const char *path = halo_path_resolved(r->ipc_faces, r->mpi_faces, r->proxy_faces);
  if (!r->ipc_faces && !r->mpi_faces) {
    put_line(out, "  halo        path none (one rank: no neighbour)");
    return;
  }
  char faces[96] = "";
  const long long all = r->ipc_faces + r->mpi_faces;
  /* deeper than one layer the exchange sends edges and corners too: regions */
  const char *unit = r->halo_width > 1 ? "region" : "face";
  if (r->ipc_faces && r->mpi_faces)
    snprintf(faces, sizeof faces, "%lld %ss by IPC, %lld through MPI%s", r->ipc_faces, unit, r->mpi_faces,
             r->proxy_faces ? " by the proxy" : "");
  else
    snprintf(faces, sizeof faces, "%lld %s%s %s%s", all, unit, all == 1 ? "" : "s", r->ipc_faces ? "by IPC" : "through MPI",
             r->proxy_faces ? " by the proxy" : "");
  char width[32] = "";
  if (r->halo_width > 1) snprintf(width, sizeof width, ", width %d", r->halo_width);
  snprintf(line, sizeof line, "  halo        path %s (%s%s), %s, overlap %s%s", path, faces,
           r->sig_passes ? ", signalled" : "",
           !dev->is_accelerator ? "host memory" : (r->staged ? "MPI staged through host memory" : "GPU-aware MPI"),
           r->overlap ? "on" : "off", width);
  put_line(out, line);
}

/* The phases line: each phase's average over the ranks, ms per step, the zero ones (one rank:
 * no exchange) left out; the longest form that fits. How many windows they sampled is on the
 * table's first line. */
static void phases_line(FILE *out, const fd_result *r)
{
  char line[3][320];
  for (int form = 0; form < 3; form++) {
    int at = snprintf(line[form], sizeof line[form], "  phases      ");
    int first = 1;
    for (int k = 0; k < PH_STEP; k++) {
      if (r->phase[k].max <= 0) continue;
      at += snprintf(line[form] + at, sizeof line[form] - (size_t)at, "%s%s %.3g",
                     first ? "" : (form == 0 ? ", " : " "), fd_phase_name(k), r->phase[k].avg);
      first = 0;
    }
    snprintf(line[form] + at, sizeof line[form] - (size_t)at, "%s", form == 0 ? " ms per step" : (form == 1 ? " ms" : ""));
    if (strlen(line[form]) <= SUMMARY_COLUMNS) {
      put_line(out, line[form]);
      return;
    }
  }
  put_line(out, line[2]);
}

/* The verification: the verdict and each check in a word (its numbers where it is the only
 * one); --report full and the JSON have every number. */
static void verdict_line(FILE *out, const fd_result *r)
{
  char line[1400];
  const fd_verify *v = &r->verify;
  if (!v->checked) {
    put_line(out, "  verification: SKIPPED (--no-check)");
    return;
  }
  int at = snprintf(line, sizeof line, "  verification: %s  %s: ", verify_verdict_name(v->verdict), report_check_label(r));
  if (v->nchecks == 0) {
    snprintf(line + at, sizeof line - (size_t)at, "%s", v->detail);
  } else if (v->nchecks == 1 && v->check[0].applies) {
    const fd_check *c = &v->check[0];
    snprintf(line + at, sizeof line - (size_t)at, "%s %s (error %.3g, tolerance %.3g)", c->name,
             c->passed ? "ok" : "FAILED", c->error, c->tolerance);
  } else {
    for (int q = 0; q < v->nchecks; q++) {
      const fd_check *c = &v->check[q];
      at += snprintf(line + at, sizeof line - (size_t)at, "%s%s %s", q ? ", " : "", c->name,
                     !c->applies ? "not applied" : (c->passed ? "ok" : "FAILED"));
    }
  }
  put_line(out, line);
}

void summary_result_line(const fd_options *o, const be_info *dev, const fd_result *r, char *buf, size_t len)
{
  char spec[FD_KERNEL_SPEC_MAX], extra[96] = "";
  if (r->fuse.steps > 1) fd_fused_format(&r->fuse.config, spec, sizeof spec);
  else fd_kernel_format(&r->kernel, spec, sizeof spec);
  if (r->baseline)
    snprintf(extra, sizeof extra, " hidden=%.4f eff_alone=%.4f", r->hidden.avg, r->efficiency.avg);
  snprintf(buf, len,
           "RESULT op=%s backend=%s precision=%s ranks=%d nodes=%d procs=%dx%dx%d global=%lldx%lldx%lld "
           "step_ms=%.6g step_ms_avg=%.6g gbs_rank=%.4g gbs_total=%.4g pct_memcpy=%.4g exchange_ms=%.6g%s "
           "path=%s kernel=%s steps_per_pass=%d verdict=%s",
           fd_op_name(r->op), dev->backend, FDMINI_REAL_NAME, r->ranks, r->nodes, r->procs[0], r->procs[1], r->procs[2],
           r->global[0], r->global[1], r->global[2], r->phase[PH_STEP].max, r->phase[PH_STEP].avg, r->bw_rank.avg,
           r->bw_total, r->pct_memcpy.avg, r->phase[PH_EXCHANGE].avg, extra,
           halo_path_resolved(r->ipc_faces, r->mpi_faces, r->proxy_faces), spec, r->fuse.steps,
           r->verify.checked ? verify_verdict_name(r->verify.verdict) : "SKIPPED");
  (void)o;
}

void summary_print(FILE *out, const fd_options *o, const be_info *dev, const fd_result *r)
{
  char line[FD_PATH_MAX + 256], note[96] = "", samples[80];
  /* the table's first line says what the phases sampled (step_sample_plan) */
  if (r->windows_sampled == r->windows)
    snprintf(samples, sizeof samples, "phases: all %lld window%s timed", r->windows, r->windows == 1 ? "" : "s");
  else snprintf(samples, sizeof samples, "phases: %lld of %lld windows timed", r->windows_sampled, r->windows);
  if (r->ranks == 1) snprintf(line, sizeof line, "\n  %-18s %11s   %s", "one rank", "", samples);
  else {
    char over[32];
    snprintf(over, sizeof over, "over %d ranks", r->ranks);
    snprintf(line, sizeof line, "\n  %-18s %11s %11s %11s   %s", over, "min", "avg", "max", samples);
  }
  fprintf(out, "%s\n", line);
  snprintf(note, sizeof note, "%d timed steps, %.3g s", r->iters, r->total_s);
  row(out, r, "step, ms", "%.4f", 1.0, &r->phase[PH_STEP], note);
  row(out, r, "GB/s per rank", "%.2f", 1.0, &r->bw_rank, "");
  /* a fused pass reads and writes once for T steps, while the figure counts every step's bytes */
  note[0] = '\0';
  if (r->fuse.steps > 1) snprintf(note, sizeof note, "counts the bytes of all %d fused steps", r->fuse.steps);
  row(out, r, "% of memcpy", "%.1f", 1.0, &r->pct_memcpy, note);
  if (r->phase[PH_EXCHANGE].max > 0) row(out, r, "exchange, ms", "%.4f", 1.0, &r->phase[PH_EXCHANGE], "");
  if (r->baseline) { /* a rank alone has no exchange to hide */
    if (r->ipc_faces || r->mpi_faces) row(out, r, "exchange hidden, %", "%.1f", 100.0, &r->hidden, "");
    row(out, r, "vs block alone, %", "%.1f", 100.0, &r->efficiency, "T_alone / T_step, --baseline");
  }
  kernel_line(out, o, dev, r);
  halo_line(out, dev, r);
  phases_line(out, r);
  for (int k = 0; k < PH_STEP; k++) /* sampled windows can outweigh the step: say so */
    if (r->windows_sampled < r->windows && r->phase[k].max > 1.05 * r->phase[PH_STEP].max) {
      put_line(out, "              (a phase exceeds the step: too few windows timed on a busy machine; more --iters)");
      break;
    }
  if (r->restarted) {
    snprintf(line, sizeof line, "  restart     from %s: %lld steps done before", r->restart_from, r->restart_step);
    put_line(out, line);
  }
  if (r->snapshot_every) {
    snprintf(line, sizeof line, "  snapshots   every %d steps: %lld written; the step lost %.4f ms to them",
             r->snapshot_every, r->snapshots, r->snapshot_lost_ms.max);
    put_line(out, line);
  }
  if (r->checkpoints_on) {
    if (r->checkpoint_every)
      snprintf(line, sizeof line, "  checkpoints every %d steps: %lld written; the step lost %.4f ms to them",
               r->checkpoint_every, r->checkpoints, r->ckpt_lost_ms.max);
    else snprintf(line, sizeof line, "  checkpoints on a stop signal (SIGTERM, SIGUSR1) only");
    put_line(out, line);
  }
  fputc('\n', out);
  verdict_line(out, r);
  summary_result_line(o, dev, r, line, sizeof line);
  fprintf(out, "%s\n", line);
}

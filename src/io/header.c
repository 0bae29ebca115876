/* header.c - the start-up header and the --plan text (header.h). */
#include <stdio.h>

#include "header.h"
#include "provenance.h"

/* The lines both print: operator, ranks, nodes, grids, steps. */
static void layout_lines(FILE *out, const fd_options *o, const fd_plan *p)
{
  fprintf(out, "  operator    %s%s\n", fd_op_name(o->op), o->op == FD_OP_HEAT ? " (explicit step, dt = h^2/12 on a cube)" : "");
  fprintf(out, "  ranks       %d as %d x %d x %d on %d node%s\n", p->ranks, p->P[0], p->P[1], p->P[2], p->nodes,
          p->nodes == 1 ? "" : "s");
  if (p->nodes > 1 || o->test_node_ranks)
    header_print_nodes(out, p->nodes, p->node_min, p->node_max, o->test_node_ranks != 0, p->layout_words);
  fprintf(out, "  global      %lld x %lld x %lld\n", p->N[0], p->N[1], p->N[2]);
  fprintf(out, "  local       %d x %d x %d (smallest) .. %d x %d x %d (largest)\n", p->nmin[0], p->nmin[1], p->nmin[2],
          p->nmax[0], p->nmax[1], p->nmax[2]);
}

void header_print_nodes(FILE *out, int nodes, int min, int max, int emulated, const char *grid)
{
  char per[64];
  if (min == max) snprintf(per, sizeof per, "%d x %d rank%s", nodes, min, min == 1 ? "" : "s");
  else snprintf(per, sizeof per, "%d of %d to %d ranks", nodes, min, max);
  fprintf(out, "  nodes       %s%s: %s\n", per, emulated ? " (emulated)" : "", grid);
}

void header_print(FILE *out, const fd_options *o, const be_info *dev, const fd_plan *p)
{
  fprintf(out, "fdmini %s (%s): %s backend, %s, device %s\n", FDMINI_VERSION, fdmini_git_commit, dev->backend,
          FDMINI_REAL_NAME, dev->name);
  layout_lines(out, o, p);
  fprintf(out, "  steps       %d timed after %d warm-up%s\n", p->iters, p->warmup,
          o->restart != FD_RESTART_NONE ? " (the whole run's: a restart runs what is left)" : "");
  fflush(out);
}

/* bytes as "12.3 MB" (decimal units), into buf. */
static const char *mb(double bytes, char *buf, size_t len)
{
  if (bytes >= 1e9) snprintf(buf, len, "%.3g GB", bytes / 1e9);
  else if (bytes >= 1e6) snprintf(buf, len, "%.3g MB", bytes / 1e6);
  else snprintf(buf, len, "%.3g kB", bytes / 1e3);
  return buf;
}

void header_print_plan(FILE *out, const fd_options *o, const fd_plan *p, int accelerator)
{
  char a[32], b[32], c[32], d[32];
  fprintf(out, "fdmini %s (%s): plan, %s backend, %s (nothing runs, no device touched)\n",
          FDMINI_VERSION, fdmini_git_commit, FDMINI_BACKEND_NAME, FDMINI_REAL_NAME);
  layout_lines(out, o, p);
  fprintf(out, "  steps       %d timed after %d warm-up\n", p->iters, p->warmup);
  /* memory of the rank with the largest block */
  const double fields = p->field_buffers * p->field_bytes;
  fprintf(out, "  memory      per rank, %s: fields %d x %s = %s, halo buffers up to %s\n",
          accelerator ? "device" : "host memory", p->field_buffers, mb(p->field_bytes, a, sizeof a),
          mb(fields, b, sizeof b), mb(p->halo_device_bytes, c, sizeof c));
  if (accelerator || p->dump_bytes > 0) {
    fprintf(out, "              host:");
    if (accelerator) fprintf(out, " %s pinned where MPI is not GPU-aware (staged)%s", mb(p->halo_staged_bytes, a, sizeof a),
                             p->dump_bytes > 0 ? ";" : "");
    if (p->dump_bytes > 0) fprintf(out, " %s for --dump", mb(p->dump_bytes, d, sizeof d));
    fputc('\n', out);
  }
  if (p->msgs_exchange_max == 0) {
    fprintf(out, "  halo        none: one rank\n");
  } else {
    fprintf(out, "  halo        per step, the rank that sends most: %s in %.3g messages%s\n",
            mb(p->bytes_step_max, a, sizeof a), p->msgs_step_max,
            p->width > 1 ? " (one exchange every --halo-width steps)" : "");
    fprintf(out, "  faces       %lld with a neighbour over all ranks; off node per rank, min/avg/max: %g/%.2f/%g\n",
            p->faces_total, p->faces_off_rank.min, p->faces_off_rank.avg, p->faces_off_rank.max);
    if (p->nodes > 1)
      fprintf(out, "  off node    per node, min/avg/max: %g/%.1f/%g faces leave it, %s / %s / %s per step\n",
              p->faces_off_node.min, p->faces_off_node.avg, p->faces_off_node.max, mb(p->bytes_off_node.min, a, sizeof a),
              mb(p->bytes_off_node.avg, b, sizeof b), mb(p->bytes_off_node.max, c, sizeof c));
  }
  /* for scripts: the figures above, exact */
  fprintf(out, "PLAN ranks=%d nodes=%d ranks_per_node=%d procs=%dx%dx%d global=%lldx%lldx%lld grid=%s node_block=%dx%dx%d "
               "local_min=%dx%dx%d local_max=%dx%dx%d device_bytes=%.0f halo_bytes_step_max=%.0f "
               "halo_msgs_step_max=%g faces=%lld faces_off_node_rank_max=%g faces_off_node_rank_avg=%.4f "
               "node_faces_off_max=%g node_bytes_off_step_max=%.0f\n",
          p->ranks, p->nodes, p->node_max, p->P[0], p->P[1], p->P[2], p->N[0], p->N[1], p->N[2],
          decomp_nodes_mode_name(p->layout.mode), p->layout.block[0], p->layout.block[1], p->layout.block[2], p->nmin[0],
          p->nmin[1], p->nmin[2], p->nmax[0], p->nmax[1], p->nmax[2], fields + p->halo_device_bytes, p->bytes_step_max,
          p->msgs_step_max, p->faces_total, p->faces_off_rank.max, p->faces_off_rank.avg, p->faces_off_node.max,
          p->bytes_off_node.max);
}

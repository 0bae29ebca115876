/* report.c - the report and the JSON record (schema in docs/report.md, "JSON record"). */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "header.h"
#include "json.h"
#include "provenance.h"
#include "report.h"

/* The spec of the fused autotune's candidate i: its fused configuration, or with one step per
 * pass the single-step kernel the run uses. */
static void fuse_cand_spec(const fd_result *r, int i, char *spec, size_t size)
{
  if (r->fuse.cand[i].steps > 1) fd_fused_format(&r->fuse.cand[i], spec, size);
  else fd_kernel_format(&r->kernel, spec, size);
}

const char *report_check_label(const fd_result *r)
{
  /* "heat mode decay" before "mode decay: ...": the operator says it once */
  const char *op = fd_op_name(r->op);
  return strncmp(r->verify.name, op, strlen(op)) == 0 ? op : r->verify.name;
}

void report_print(FILE *out, const fd_options *o, const be_info *dev, const fd_result *r,
                  const fd_provenance *prov)
{
  fprintf(out, "fdmini %s (%s): %s backend, %s, device %s\n", FDMINI_VERSION, fdmini_git_commit,
          dev->backend, FDMINI_REAL_NAME, dev->name);
  prov_print(out, prov);
  fprintf(out, "  operator    %s%s\n", fd_op_name(r->op),
          r->op == FD_OP_HEAT ? " (explicit step, dt = h^2/12 on a cube)" : "");
  if (r->op == FD_OP_WAVE) {
    const fd_problem *p = &r->prob;
    if (p->vel[0] == p->vel[1])
      fprintf(out, "  medium      uniform, V = %g\n", p->vel[0]);
    else
      fprintf(out, "  medium      two layers: V = %g for global z index <= %lld, V = %g above\n",
              p->vel[0], p->iface, p->vel[1]);
    fprintf(out, "  time step   dt = %.6g (C = %g of the CFL limit h / (Vmax sqrt 3)), t = %.4g at the end\n",
            p->dt, p->courant, p->dt * (double)r->total_steps);
    fprintf(out, "  source      Ricker, peak %g, delay %.4g, at global index %lld,%lld,%lld\n",
            p->ricker_hz, p->t0, p->src[0], p->src[1], p->src[2]);
  }
  fprintf(out, "  ranks       %d as %d x %d x %d\n", r->ranks, r->procs[0], r->procs[1], r->procs[2]);
  if (r->nodes > 1 || o->test_node_ranks) {
    /* the nodes and the grid over them, then where each rank's faces lead */
    header_print_nodes(out, r->nodes, r->node_ranks_min, r->node_ranks_max, o->test_node_ranks != 0, r->node_grid);
    const fd_stat *f[3] = {&r->faces_other_node, &r->faces_other_gpu, &r->faces_same_gpu};
    fprintf(out, "  faces       per rank, min/avg/max: off node %g/%.2f/%g, other device of the node %g/%.2f/%g, "
                 "own device %g/%.2f/%g\n",
            f[0]->min, f[0]->avg, f[0]->max, f[1]->min, f[1]->avg, f[1]->max, f[2]->min, f[2]->avg, f[2]->max);
  }
  fprintf(out, "  global      %lld x %lld x %lld\n", r->global[0], r->global[1], r->global[2]);
  fprintf(out, "  local       %d x %d x %d (smallest) .. %d x %d x %d (largest)\n", r->local_min[0],
          r->local_min[1], r->local_min[2], r->local_max[0], r->local_max[1], r->local_max[2]);
  char spec[FD_KERNEL_SPEC_MAX];
  fd_kernel_format(&r->kernel, spec, sizeof spec);
  fprintf(out, "  kernel      %s (%s)\n", spec,
          r->tune.ran ? "autotuned" : (o->have_kernel ? "--kernel" : (dev->is_accelerator ? "the rule, --tune off" : "host loop")));
  if (r->tune.ran) {
    fprintf(out, "  autotune    %d candidates on each rank's block in %.3f s, ms per update on the slowest rank:\n",
            r->tune.n, r->tune.seconds);
    if (r->tune.rounds)
      fprintf(out, "              the kernel alone; the finalists' loop trials (the run's own loop, one step per pass, "
                   "graphs %s, best of %d rounds%s%s%s)\n", r->tune.loop_graphs ? "on" : "off", r->tune.rounds,
              r->tune.loop_family >= 0 ? "; passes signalled: every " : "",
              r->tune.loop_family >= 0 ? fd_kernel_name((fd_kernel_id)r->tune.loop_family) : "",
              r->tune.loop_family >= 0 ? " shape, \"1 round\": left behind after the first" : "");
    for (int i = 0; i < r->tune.n; i++) {
      fd_kernel_format(&r->tune.cand[i], spec, sizeof spec);
      char loop[32] = "";
      if (r->tune.rounds) {
        if (r->tune.loop_ms[i] > 0)
          snprintf(loop, sizeof loop, " %9.5f%s", r->tune.loop_ms[i],
                   r->tune.loop_rounds[i] < r->tune.rounds ? " 1 round" : "");
        else snprintf(loop, sizeof loop, " %9s", "-");
      }
      fprintf(out, "              %-48s %9.4f%s%s\n", spec, r->tune.ms[i], loop, i == r->tune.chosen ? "  <- chosen" : "");
    }
  }
  if (r->fuse.steps > 1 || r->fuse.ran) {
    fd_fused_format(&r->fuse.config, spec, sizeof spec);
    fprintf(out, "  fuse        %d step%s per pass: %s (%s)\n", r->fuse.steps, r->fuse.steps > 1 ? "s" : "",
            r->fuse.steps > 1 ? spec : "the single-step kernel",
            r->fuse.ran ? (o->fuse == 0 ? "--fuse auto, autotuned" : "autotuned")
                        : (dev->is_accelerator ? "the rule, --tune off" : "host reference: T single steps"));
  }
  if (r->fuse.ran) {
    fprintf(out, "  fuse tune   %d candidates on each rank's block in %.3f s, ms per step on the slowest rank:\n"
                 "              the pass alone; the finalists' loop trials (the run's own loop, best of %d rounds), graphs off / on\n",
            r->fuse.n, r->fuse.seconds, r->fuse.rounds);
    for (int i = 0; i < r->fuse.n; i++) {
      fuse_cand_spec(r, i, spec, sizeof spec);
      char loop[2][16];
      for (int g = 0; g < 2; g++) {
        if (r->fuse.loop_ms[i][g] > 0) snprintf(loop[g], sizeof loop[g], "%9.5f", r->fuse.loop_ms[i][g]);
        else snprintf(loop[g], sizeof loop[g], "%9s", "-");
      }
      fprintf(out, "              %-48s %9.5f %s %s%s\n", spec, r->fuse.ms[i], loop[0], loop[1],
              i == r->fuse.chosen ? (r->fuse.chosen_graphs ? "  <- chosen, graphs on" : "  <- chosen, graphs off") : "");
    }
  }
  if (r->fuse.sustained) {
    fprintf(out, "  sustained   the %d finalist configurations within %.0f %% of the fastest loop trial, each %.1f s untimed then %.1f s "
                 "timed (a clock at the power limit), ms per step:\n",
            r->fuse.sustained, 100.0 * r->fuse.sustain_margin, r->fuse.sustain_warm_s, r->fuse.sustain_s);
    for (int i = 0; i < r->fuse.n; i++)
      for (int g = 0; g < 2; g++) {
        if (r->fuse.sustain_ms[i][g] <= 0) continue;
        fuse_cand_spec(r, i, spec, sizeof spec);
        fprintf(out, "              %-48s graphs %-3s %9.5f%s\n", spec, g ? "on" : "off", r->fuse.sustain_ms[i][g],
                i == r->fuse.chosen && g == r->fuse.chosen_graphs ? "  <- chosen" : "");
      }
  }
  if (r->graphs_on) {
    fprintf(out, "  graphs      on (%s): each pass's device work replayed from graphs, %lld captured in the timed loop%s%s%s\n",
            o->graphs == FD_GRAPHS_ON ? "--graphs on" : "--graphs auto, faster in the trial",
            r->graph_captures, r->graphs_failed ? "; capture failed, eager on " : "",
            r->graphs_failed ? (r->graphs_failed == 1 ? "1 rank: " : "some ranks: ") : "", r->graphs_failed ? r->graphs_why : "");
    if (r->xchain_passes)
      fprintf(out, "              %lld of the timed passes ran in chains that hold their exchanges (no host call inside: faces by IPC or the proxy)\n",
              r->xchain_passes);
    if (r->xchains_failed)
      fprintf(out, "              chains with exchanges not captured on %d rank%s, passes replayed one by one: %s\n",
              r->xchains_failed, r->xchains_failed == 1 ? "" : "s", r->xchains_why);
  } else {
    fprintf(out, "  graphs      off (%s)\n",
            o->graphs == FD_GRAPHS_OFF ? "--graphs off"
                                       : (dev->is_accelerator ? "--graphs auto, eager was faster in the trial"
                                                              : "--graphs auto: the host backend runs calls to completion"));
  }
  if (!r->fuse.ran && r->fuse.loop_ms[0][0] > 0)
    fprintf(out, "  graph trial %.5f ms per step eager, %.5f with graphs (the run's own loop, slowest rank, best of %d rounds%s)\n",
            r->fuse.loop_ms[0][0], r->fuse.loop_ms[0][1], r->fuse.rounds, r->path_trial_own ? ", the proxy's pass" : "");
  /* the counts are of the regions an exchange sends to: with deep halos edges and corners too */
  const char *unit = r->halo_width > 1 ? "faces, edges and corners" : "faces";
  char mpi_faces[96];
  if (r->proxy_faces) snprintf(mpi_faces, sizeof mpi_faces, "%lld through MPI by the proxy", r->mpi_faces);
  else snprintf(mpi_faces, sizeof mpi_faces, "%lld through MPI", r->mpi_faces);
  /* the host backend has no device copy between ranks: its faces all go through MPI */
  char ipc_faces[96] = "";
  if (dev->is_accelerator) snprintf(ipc_faces, sizeof ipc_faces, "%lld %s by device copy between ranks, ", r->ipc_faces, unit);
  else snprintf(mpi_faces, sizeof mpi_faces, "%lld %s through MPI%s", r->mpi_faces, unit, r->proxy_faces ? " by the proxy" : "");
  fprintf(out, "  halo        path %s (%s%s, over all ranks);"
          " MPI %s; overlap %s\n",
          halo_path_resolved(r->ipc_faces, r->mpi_faces, r->proxy_faces), ipc_faces, mpi_faces,
          !dev->is_accelerator ? "host memory" : (r->staged ? "staged through pinned host memory" : "GPU-aware MPI"),
          r->overlap ? "on" : "off");
  if (r->sig_passes && r->halo_width > 1)
    fprintf(out, "  signalled   %lld of the timed passes exchanged on the device before their update: the faces packed,\n"
                 "              then unpacked once the neighbours' words (on this GPU or others) say theirs are, in one launch\n"
                 "              where the rank is alone on its GPU and every neighbour on another, else in two; phases: the\n"
                 "              exchange counts as the boundary, the update of the window's box as the interior\n",
            r->sig_passes);
  else if (r->sig_passes)
    fprintf(out, "  signalled   %lld of the timed passes exchanged inside their one launch (the kernel waits on the\n"
                 "              device for its neighbours' words, on this GPU or others); phases: the launch counts as the interior\n",
            r->sig_passes);
  if (r->sig_passes && r->proxy_faces)
    fprintf(out, "  proxy       faces out of IPC reach (other nodes): packed by the launch into the proxy's slots, sent\n"
                 "              and received through MPI by the host between its launches, the word the launch waits for\n"
                 "              set on arrival (halo/proxy.c)\n");
  if (r->path_trial_rounds) {
    /* the candidates that ran (0: not tried) */
    char flags[80] = "", sig[112] = "", mpi[64] = "";
    const int proxy = r->proxy_able > 0;
    if (r->path_trial_us[1] > 0) snprintf(flags, sizeof flags, " %.2f with the faces that can go by IPC (flags),", r->path_trial_us[1]);
    if (r->path_trial_us[2] > 0)
      snprintf(sig, sizeof sig, " %.2f %s %s,", r->path_trial_us[2], proxy ? "signalled (IPC and the proxy)" : "by IPC signalled",
               r->halo_width > 1 ? "on the device" : "inside the launch");
    if (r->path_trial_us[0] > 0) snprintf(mpi, sizeof mpi, " %.2f with every face through MPI,", r->path_trial_us[0]);
    fprintf(out, "  path trial  step us:%s%s%s the run's loop, slowest rank, best of %d rounds%s: took %s\n", flags, sig,
            mpi, r->path_trial_rounds,
            r->path_trial_own == 2 ? " (the paths without the proxy with their own kernel, steps per pass and graphs setting too)"
            : r->path_trial_own    ? " (the paths without the proxy with their own kernel and graphs setting too)"
                                   : "",
            r->sig_passes ? (r->proxy_faces ? "the proxy" : "IPC signalled") : (r->ipc_faces ? "IPC with flags" : "MPI"));
  }
  if (r->halo_width > 1)
    fprintf(out, "  deep halo   width %d: one exchange every %d steps of the faces%s with a neighbour%s, %d messages and %zu bytes per exchange (largest rank)\n",
            r->halo_width, r->halo_width, r->halo_width >= 3 ? ", edges and corners" : " and edges",
            r->halo_fields > 1 ? " (both time levels)" : "", r->halo_msgs_exchange_max,
            r->halo_bytes_exchange_max);
  fprintf(out, "  steps       %d timed after %d warm-up, %.3f s", r->iters, r->warmup, r->total_s);
  if (r->restarted)
    fprintf(out, " (steps %lld..%lld of the run's %lld)", r->restart_step + 1, r->total_steps, r->total_steps);
  fprintf(out, "\n");
  if (r->restarted) {
    fprintf(out, "  restart     from %s: %lld steps done before (written by %lld ranks, commit %s, %s); read %.4g MB in "
            "%.3f s, %.3g GB/s (slowest rank)\n", r->restart_from, r->restart_step, r->restart_writers, r->restart_commit,
            r->restart_created, r->restart_bytes / 1e6, r->restart_read_s,
            r->restart_read_s > 0 ? r->restart_bytes / r->restart_read_s / 1e9 : 0.0);
    if (r->restart_skipped)
      fprintf(out, "              %d newer checkpoint%s skipped: incomplete or corrupt (notices above)\n", r->restart_skipped,
              r->restart_skipped > 1 ? "s" : "");
    if (r->restart_hist_lost)
      fprintf(out, "              the checkpoint kept no record of the source: the energy check does not apply\n");
  }
  char samples[64];
  if (r->windows_sampled == r->windows) snprintf(samples, sizeof samples, "all %lld windows timed", r->windows);
  else snprintf(samples, sizeof samples, "%lld of %lld windows timed", r->windows_sampled, r->windows);
  fprintf(out, "\n  %-10s %12s %12s %12s   (ms per step, over ranks; %s)\n", "phase", "min", "avg", "max", samples);
  for (int k = 0; k < PH_COUNT; k++) /* one rank exchanges nothing: no rows of zeros */
    if (k == PH_STEP || r->phase[k].max > 0)
      fprintf(out, "  %-10s %12.4f %12.4f %12.4f\n", fd_phase_name(k), r->phase[k].min,
              r->phase[k].avg, r->phase[k].max);
  for (int k = 0; k < PH_STEP; k++)
    if (r->windows_sampled < r->windows && r->phase[k].max > 1.05 * r->phase[PH_STEP].max) {
      fprintf(out, "  (a phase exceeds the step: too few windows timed on a busy machine; run more --iters)\n");
      break;
    }
  if (r->sig_passes && r->halo_width == 1)
    fprintf(out, "  (signalled passes: one launch holds the exchange, the interior and the shell; its time is the\n"
                 "  interior's, and X below is the exchange alone)\n");
  fprintf(out, "\n  effective bandwidth  %.2f / %.2f / %.2f GB/s per rank (min/avg/max), %.2f GB/s total\n",
          r->bw_rank.min, r->bw_rank.avg, r->bw_rank.max, r->bw_total);
  fprintf(out, "                       (%d bytes per point and step: one read and one write%s)\n",
          r->bytes_per_point, r->op == FD_OP_JACOBI ? ", plus the right-hand side"
                                               : (r->op == FD_OP_WAVE ? ", plus the previous level" : ""));
  /* a fused pass moves the field once for T steps: the figure counts the bytes of all T */
  char fused[64] = "";
  if (r->fuse.steps > 1) snprintf(fused, sizeof fused, "; it counts the bytes of all %d fused steps", r->fuse.steps);
  fprintf(out, "                       %.1f / %.1f / %.1f %% of each rank's memcpy (min/avg/max%s)\n",
          r->pct_memcpy.min, r->pct_memcpy.avg, r->pct_memcpy.max, fused);
  fprintf(out, "  memcpy               %.2f / %.2f / %.2f GB/s per rank (a %s copy of the rank's field\n"
               "                       at start-up, bytes read + written)\n",
          r->memcpy_gbs.min, r->memcpy_gbs.avg, r->memcpy_gbs.max, dev->is_accelerator ? "device-to-device" : "host memory");
  fprintf(out, "  points updated       %.4g per second\n", r->points_per_s);
  /* the floors: what a step cannot go below on this device and network */
  char fg[48], fls[48];
  snprintf(fg, sizeof fg, "%.2f / %.2f / %.2f", r->floor_graph_us.min, r->floor_graph_us.avg, r->floor_graph_us.max);
  snprintf(fls, sizeof fls, "%.2f / %.2f / %.2f", r->floor_launch_sync_us.min, r->floor_launch_sync_us.avg,
           r->floor_launch_sync_us.max);
  if (r->floors_device)
    fprintf(out, "  floors               us, min / avg / max over ranks: F_g %s (a one-kernel graph, back to back);\n"
                 "                       F_ls %s (a launch and a host wait); F_c %.2f / %.2f / %.2f (the copy of the field)\n",
            fg, fls, r->floor_copy_us.min, r->floor_copy_us.avg, r->floor_copy_us.max);
  else /* no launches on the host backend: F_g and F_ls do not exist there */
    fprintf(out, "  floors               us, min / avg / max over ranks: F_c %.2f / %.2f / %.2f (the copy of the field)\n",
            r->floor_copy_us.min, r->floor_copy_us.avg, r->floor_copy_us.max);
  if (r->floors_neighbours)
    fprintf(out, "                       L %.2f / %.2f / %.2f (one small message to a neighbour); X %.2f / %.2f / %.2f (an exchange\n"
                 "                       alone: pack, %s, unpack)%s",
            r->latency_us.min, r->latency_us.avg, r->latency_us.max, r->exchange_alone_us.min, r->exchange_alone_us.avg,
            r->exchange_alone_us.max, r->ipc_faces && !r->mpi_faces ? "IPC copies" : "MPI", r->floors_device ? "" : "\n");
  if (r->floors_neighbours && r->floors_device)
    fprintf(out, " = %.2f / %.2f / %.2f x (F_ls + L + 2 F_g)\n", r->exchange_over_floor.min, r->exchange_over_floor.avg,
            r->exchange_over_floor.max);
  if (r->floors_peer)
    fprintf(out, "                       F_p %.2f / %.2f / %.2f (the largest face alone to a neighbour on another GPU,\n"
                 "                       device-ordered; %d ranks); X = %.2f / %.2f / %.2f x F_p\n",
            r->floor_peer_us.min, r->floor_peer_us.avg, r->floor_peer_us.max, r->floors_peer,
            r->exchange_over_peer.min, r->exchange_over_peer.avg, r->exchange_over_peer.max);
  if (r->floors_proxy)
    fprintf(out, "                       F_m %.2f / %.2f / %.2f (the largest face alone through the proxy and MPI,\n"
                 "                       %s; %d ranks); X = %.2f / %.2f / %.2f x F_m\n",
            r->floor_proxy_us.min, r->floor_proxy_us.avg, r->floor_proxy_us.max,
            r->floors_device ? "device-ordered" : "ordered as the pass sends it", r->floors_proxy,
            r->exchange_over_proxy.min, r->exchange_over_proxy.avg, r->exchange_over_proxy.max);
  fprintf(out, "  step / F1            %.2f / %.2f / %.2f (the step per time step over F1 = %s)\n",
          r->step_over_f1.min, r->step_over_f1.avg, r->step_over_f1.max, r->floors_device ? "max(F_g, F_c)" : "F_c");
  fprintf(out, "  halo                 %zu bytes sent per step (largest rank), %.3f GB/s avg; %.3g messages per step\n",
          r->halo_bytes_max, r->halo_gbs.avg, r->halo_msgs_step_max);
  if (r->halo_width > 1)
    fprintf(out, "  redundant points     %.0f / %.0f / %.0f per step per rank (min/avg/max) updated beyond the block: %.2f %% of the grid\n",
            r->redundant.min, r->redundant.avg, r->redundant.max, 100 * r->redundant_share);
  if (r->ipc_faces && r->sig_passes)
    fprintf(out, "  IPC faces            %s; ordered on the device by\n"
                 "                       words the launches set and await\n",
            r->halo_width > 1 ? "unpacked from the slots the neighbours' packs filled" : "read inside the pass's launch from the neighbours' slots");
  else if (r->ipc_faces)
    fprintf(out, "  IPC faces            pulled: copies %.4f / %.4f / %.4f ms per step (the copies alone); ordered on the device by flags\n",
            r->ipc_copy_ms.min, r->ipc_copy_ms.avg, r->ipc_copy_ms.max);
  if (r->snapshot_every) {
    fprintf(out, "  snapshots            every %d steps: %lld written, %.4g MB each; the step lost %.4f ms to them (%.4f ms per step, %.4f without snapshots over %d steps)\n",
            r->snapshot_every, r->snapshots, r->snapshot_bytes / 1e6, r->snapshot_lost_ms.max,
            r->phase[PH_STEP].max, r->snapshot_ref_ms.max, r->snapshot_ref_steps);
    fprintf(out, "                       work %.4f ms per step: solver thread %.4f (of it waiting %.4f), copies %.4f, writer thread %.4f: %.1f %% hidden (max over ranks; hidden: min)\n",
            r->snapshot_work_ms.max, r->snapshot_host_ms.max, r->snapshot_stall_ms.max, r->snapshot_copy_ms.max,
            r->snapshot_writer_ms.max, 100 * r->snapshot_hidden.min);
  }
  if (r->checkpoints_on && r->checkpoint_every) {
    fprintf(out, "  checkpoints          every %d steps into %s: %lld written", r->checkpoint_every, r->checkpoint_dir,
            r->checkpoints);
    if (r->checkpoints)
      fprintf(out, " (steps %lld..%lld, the last %s)", r->checkpoint_first, r->checkpoint_last, r->checkpoint_last_path);
    fprintf(out, ", %.4g MB each; the step lost %.4f ms to them%s (%.4f ms per step, %.4f without over %d steps)\n",
            r->checkpoint_bytes / 1e6, r->ckpt_lost_ms.max, r->snapshot_every ? " and the snapshots" : "",
            r->phase[PH_STEP].max, r->ckpt_ref_ms.max, r->snapshot_ref_steps);
    fprintf(out, "                       work %.4f ms per step: solver thread %.4f (of it waiting %.4f), copies %.4f, writer thread %.4f (of it fsync %.4f): %.1f %% hidden (max over ranks; hidden: min)\n",
            r->ckpt_work_ms.max, r->ckpt_host_ms.max, r->ckpt_stall_ms.max, r->ckpt_copy_ms.max, r->ckpt_writer_ms.max,
            r->ckpt_sync_ms.max, 100 * r->ckpt_hidden.min);
    if (r->ckpt_keep_up_every > 0) {
      /* the interval the file system allows: one checkpoint's writing against the steps */
      const int keeps_up = r->checkpoint_every >= r->ckpt_keep_up_every;
      fprintf(out, "                       writing one took up to %.3f s (slowest rank), as long as %lld steps without "
                   "them: every %d steps %s\n", r->ckpt_writer_max_ms.max / 1e3, r->ckpt_keep_up_every,
              r->checkpoint_every, keeps_up ? "keeps up" : "falls behind (each checkpoint waits for the one before)");
      if (!keeps_up)
        fprintf(out, "                       --checkpoint-every %lld or more keeps up with this file system\n",
                r->ckpt_keep_up_every);
    }
  } else if (r->checkpoints_on) {
    fprintf(out, "  checkpoints          on a stop signal (SIGTERM, SIGUSR1) only, into %s\n", r->checkpoint_dir);
  }
  if (r->baseline) {
    fprintf(out, "  alone (--baseline)   %.4f / %.4f / %.4f ms per step (each rank's block, no exchange)\n",
            r->alone_ms.min, r->alone_ms.avg, r->alone_ms.max);
    fprintf(out, "  efficiency           %.1f / %.1f / %.1f %% against each rank's block alone (T_alone / T_step, min/avg/max)\n",
            100 * r->efficiency.min, 100 * r->efficiency.avg, 100 * r->efficiency.max);
    fprintf(out, "  exchange hidden      %.1f / %.1f / %.1f %% (1 - (T_step - T_alone) / %s)\n",
            100 * r->hidden.min, 100 * r->hidden.avg, 100 * r->hidden.max,
            r->sig_passes ? "X, the exchange alone (signalled)" : "(pack + exchange + unpack)");
  }
  if (!r->verify.checked)
    fprintf(out, "\n  verification: SKIPPED (--no-check)\n");
  else
    fprintf(out, "\n  verification: %s  %s: %s\n", verify_verdict_name(r->verify.verdict),
            report_check_label(r), r->verify.detail);
  (void)o;
}

static void triple_ll(fd_json *j, const char *key, const long long v[3])
{
  json_array(j, key);
  for (int d = 0; d < 3; d++) json_int(j, NULL, v[d]);
  json_end(j);
}

static void triple_i(fd_json *j, const char *key, const int v[3])
{
  long long w[3] = {v[0], v[1], v[2]};
  triple_ll(j, key, w);
}

static void stat(fd_json *j, const char *key, const fd_stat *s)
{
  json_object(j, key);
  json_num(j, "min", s->min);
  json_num(j, "avg", s->avg);
  json_num(j, "max", s->max);
  json_end(j);
}

void report_json(FILE *out, const fd_options *o, const be_info *dev, const fd_result *r,
                 const fd_binding *binding, int nbinding, const fd_provenance *prov)
{
  fd_json j;
  char when[32];
  time_t now = time(NULL);
  strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
  json_open(&j, out);
  json_str(&j, "schema", "fdmini-run/1");
  json_str(&j, "version", FDMINI_VERSION);
  json_str(&j, "git_commit", fdmini_git_commit);
  json_str(&j, "date", when);
  prov_json(&j, prov);
  if (dev->mps < 0) json_null(&j, "gpu_mps"); /* the host backend, AMD, a runtime that does not say */
  else json_bool(&j, "gpu_mps", dev->mps);
  json_str(&j, "backend", dev->backend);
  json_str(&j, "device", dev->name);
  json_str(&j, "precision", FDMINI_REAL_NAME);
  json_str(&j, "op", fd_op_name(r->op));
  char spec[FD_KERNEL_SPEC_MAX];
  fd_kernel_format(&r->kernel, spec, sizeof spec);
  json_str(&j, "kernel", fd_kernel_name(r->kernel.id));
  json_int(&j, "tile", r->kernel.tile);
  json_str(&j, "kernel_config", spec);
  json_object(&j, "tune");
  json_str(&j, "mode", r->tune.ran ? "auto" : (o->have_kernel ? "forced" : (dev->is_accelerator ? "off" : "host")));
  if (r->tune.ran) {
    json_num(&j, "seconds", r->tune.seconds);
    json_int(&j, "trial_rounds", r->tune.rounds);
    if (r->tune.rounds) json_bool(&j, "trial_graphs", r->tune.loop_graphs);
    else json_null(&j, "trial_graphs");
    if (r->tune.rounds && r->tune.loop_family >= 0)
      json_str(&j, "trial_family", fd_kernel_name((fd_kernel_id)r->tune.loop_family));
    else json_null(&j, "trial_family");
    json_array(&j, "candidates");
    for (int i = 0; i < r->tune.n; i++) {
      json_object(&j, NULL);
      fd_kernel_format(&r->tune.cand[i], spec, sizeof spec);
      json_str(&j, "kernel", spec);
      json_num(&j, "ms", r->tune.ms[i]);
      if (r->tune.loop_ms[i] > 0) json_num(&j, "loop_ms_per_step", r->tune.loop_ms[i]);
      else json_null(&j, "loop_ms_per_step");
      json_int(&j, "loop_rounds", r->tune.loop_rounds[i]);
      json_bool(&j, "chosen", i == r->tune.chosen);
      json_end(&j);
    }
    json_end(&j);
  }
  json_end(&j);
  json_int(&j, "ranks", r->ranks);
  triple_i(&j, "procs", r->procs);
  triple_ll(&j, "global", r->global);
  triple_i(&j, "local_min", r->local_min);
  triple_i(&j, "local_max", r->local_max);
  /* the nodes, the grid over them, each rank's faces by where the neighbour runs */
  json_object(&j, "nodes");
  json_int(&j, "count", r->nodes);
  if (r->node_ranks_min == r->node_ranks_max) json_int(&j, "ranks_per_node", r->node_ranks_min);
  else json_null(&j, "ranks_per_node");
  json_bool(&j, "emulated", o->test_node_ranks > 0);
  json_str(&j, "grid", r->node_mode);
  if (r->node_block[0]) triple_i(&j, "node_block", r->node_block);
  else json_null(&j, "node_block");
  json_str(&j, "layout", r->node_grid);
  json_end(&j);
  json_object(&j, "faces_by_neighbour");
  const fd_stat *fs[3] = {&r->faces_same_gpu, &r->faces_other_gpu, &r->faces_other_node};
  static const char *const fk[3] = {"same_gpu", "other_gpu", "other_node"};
  for (int q = 0; q < 3; q++) {
    json_object(&j, fk[q]);
    json_num(&j, "min", fs[q]->min);
    json_num(&j, "avg", fs[q]->avg);
    json_num(&j, "max", fs[q]->max);
    json_int(&j, "total", (long long)llround(fs[q]->avg * r->ranks));
    json_end(&j);
  }
  json_end(&j);
  json_int(&j, "iters", r->iters);
  json_int(&j, "warmup", r->warmup);
  json_str(&j, "mpi_gpu", dev->is_accelerator ? (r->staged ? "staged" : "aware") : "host");
  json_str(&j, "halo_path", halo_path_resolved(r->ipc_faces, r->mpi_faces, r->proxy_faces));
  json_int(&j, "halo_faces_ipc", r->ipc_faces);
  json_int(&j, "halo_faces_mpi", r->mpi_faces);
  json_int(&j, "halo_faces_proxy", r->proxy_faces);
  if (r->path_trial_rounds) {
    json_object(&j, "halo_path_trial_us");
    if (r->path_trial_us[1] > 0) json_num(&j, "ipc", r->path_trial_us[1]);
    else json_null(&j, "ipc");
    if (r->path_trial_us[2] > 0) json_num(&j, "ipc_signalled", r->path_trial_us[2]);
    else json_null(&j, "ipc_signalled");
    if (r->path_trial_us[0] > 0) json_num(&j, "mpi", r->path_trial_us[0]);
    else json_null(&j, "mpi");
    json_end(&j);
  } else {
    json_null(&j, "halo_path_trial_us");
  }
  json_bool(&j, "halo_path_trial_own", r->path_trial_own);
  stat(&j, "ipc_copy_ms", &r->ipc_copy_ms);
  json_bool(&j, "overlap", r->overlap);
  json_num(&j, "total_s", r->total_s);
  json_object(&j, "phases_ms");
  for (int k = 0; k < PH_COUNT; k++) stat(&j, fd_phase_name(k), &r->phase[k]);
  json_end(&j);
  json_object(&j, "phases_sampled");
  json_int(&j, "windows", r->windows_sampled);
  json_int(&j, "of_windows", r->windows);
  json_int(&j, "steps", r->steps_sampled);
  json_end(&j);
  json_int(&j, "bytes_per_point", r->bytes_per_point);
  stat(&j, "bandwidth_per_rank_GBs", &r->bw_rank);
  stat(&j, "memcpy_GBs", &r->memcpy_gbs);
  stat(&j, "bandwidth_pct_memcpy", &r->pct_memcpy);
  json_num(&j, "bandwidth_total_GBs", r->bw_total);
  json_num(&j, "points_per_s", r->points_per_s);
  json_int(&j, "halo_bytes_per_step_max", (long long)r->halo_bytes_max);
  json_int(&j, "halo_width", r->halo_width);
  json_num(&j, "halo_messages_per_step_max", r->halo_msgs_step_max);
  json_int(&j, "halo_messages_per_exchange_max", r->halo_msgs_exchange_max);
  json_int(&j, "halo_bytes_per_exchange_max", (long long)r->halo_bytes_exchange_max);
  stat(&j, "redundant_points_per_step", &r->redundant);
  json_num(&j, "redundant_share", r->redundant_share);
  json_object(&j, "fuse");
  json_int(&j, "steps", r->fuse.steps);
  fd_fused_format(&r->fuse.config, spec, sizeof spec);
  if (r->fuse.steps > 1) json_str(&j, "config", spec);
  else json_null(&j, "config");
  json_str(&j, "mode", o->fuse == 0 ? "auto" : (r->fuse.ran ? "autotuned" : (r->fuse.steps > 1 ? (dev->is_accelerator ? "rule" : "host") : "off")));
  if (r->fuse.ran) {
    json_num(&j, "seconds", r->fuse.seconds);
    json_int(&j, "trial_rounds", r->fuse.rounds);
    json_int(&j, "sustained_trials", r->fuse.sustained);
    json_array(&j, "candidates");
    for (int i = 0; i < r->fuse.n; i++) {
      json_object(&j, NULL);
      json_int(&j, "steps", r->fuse.cand[i].steps);
      fuse_cand_spec(r, i, spec, sizeof spec);
      json_str(&j, "config", spec);
      json_num(&j, "ms_per_step", r->fuse.ms[i]);
      if (r->fuse.loop_ms[i][0] > 0) json_num(&j, "loop_ms_per_step", r->fuse.loop_ms[i][0]);
      else json_null(&j, "loop_ms_per_step");
      if (r->fuse.loop_ms[i][1] > 0) json_num(&j, "loop_ms_per_step_graphs", r->fuse.loop_ms[i][1]);
      else json_null(&j, "loop_ms_per_step_graphs");
      if (r->fuse.sustain_ms[i][0] > 0) json_num(&j, "sustained_ms_per_step", r->fuse.sustain_ms[i][0]);
      else json_null(&j, "sustained_ms_per_step");
      if (r->fuse.sustain_ms[i][1] > 0) json_num(&j, "sustained_ms_per_step_graphs", r->fuse.sustain_ms[i][1]);
      else json_null(&j, "sustained_ms_per_step_graphs");
      json_bool(&j, "chosen", i == r->fuse.chosen);
      json_end(&j);
    }
    json_end(&j);
  }
  json_end(&j);
  json_object(&j, "graphs");
  json_str(&j, "mode", fd_graphs_name(o->graphs));
  json_bool(&j, "on", r->graphs_on);
  json_int(&j, "captured", r->graph_captures);
  json_int(&j, "failed_ranks", r->graphs_failed);
  if (r->graphs_failed) json_str(&j, "failure", r->graphs_why);
  else json_null(&j, "failure");
  json_int(&j, "exchange_chain_passes", r->xchain_passes);
  json_int(&j, "exchange_signalled_passes", r->sig_passes);
  json_int(&j, "exchange_chains_failed_ranks", r->xchains_failed);
  if (r->xchains_failed) json_str(&j, "exchange_chains_failure", r->xchains_why);
  else json_null(&j, "exchange_chains_failure");
  if (!r->fuse.ran && r->fuse.loop_ms[0][0] > 0) {
    json_num(&j, "trial_ms_per_step_off", r->fuse.loop_ms[0][0]);
    json_num(&j, "trial_ms_per_step_on", r->fuse.loop_ms[0][1]);
    json_int(&j, "trial_rounds", r->fuse.rounds);
  }
  json_end(&j);
  /* the floors (docs/small-blocks.md, "The floors"), microseconds; null where n/a */
  json_object(&j, "floors_us");
  if (r->floors_device) {
    stat(&j, "graph", &r->floor_graph_us);
    stat(&j, "launch_sync", &r->floor_launch_sync_us);
  } else {
    json_null(&j, "graph");
    json_null(&j, "launch_sync");
  }
  stat(&j, "copy", &r->floor_copy_us);
  if (r->floors_neighbours) {
    stat(&j, "latency", &r->latency_us);
    stat(&j, "exchange_alone", &r->exchange_alone_us);
  } else {
    json_null(&j, "latency");
    json_null(&j, "exchange_alone");
  }
  if (r->floors_neighbours && r->floors_device) stat(&j, "exchange_over_floor", &r->exchange_over_floor);
  else json_null(&j, "exchange_over_floor");
  /* F_p: ranks with a neighbour on another device (floors_peer of them) */
  if (r->floors_peer) {
    stat(&j, "Fp", &r->floor_peer_us);
    stat(&j, "exchange_over_Fp", &r->exchange_over_peer);
  } else {
    json_null(&j, "Fp");
    json_null(&j, "exchange_over_Fp");
  }
  /* F_m: ranks with a face through the off-node proxy (floors_proxy of them) */
  if (r->floors_proxy) {
    stat(&j, "Fm", &r->floor_proxy_us);
    stat(&j, "exchange_over_Fm", &r->exchange_over_proxy);
  } else {
    json_null(&j, "Fm");
    json_null(&j, "exchange_over_Fm");
  }
  stat(&j, "step_over_f1", &r->step_over_f1);
  json_end(&j);
  stat(&j, "halo_GBs", &r->halo_gbs);
  if (r->op == FD_OP_WAVE) {
    json_object(&j, "wave");
    json_num(&j, "dt", r->prob.dt);
    json_num(&j, "courant", r->prob.courant);
    json_num(&j, "velocity_layer1", r->prob.vel[0]);
    json_num(&j, "velocity_layer2", r->prob.vel[1]);
    json_int(&j, "interface_k", r->prob.iface);
    json_num(&j, "ricker_peak", r->prob.ricker_hz);
    triple_ll(&j, "source", r->prob.src);
    json_end(&j);
  }
  if (r->snapshot_every) {
    json_object(&j, "snapshots");
    json_int(&j, "every", r->snapshot_every);
    json_int(&j, "written", r->snapshots);
    json_num(&j, "bytes_each", r->snapshot_bytes);
    json_int(&j, "reference_steps", r->snapshot_ref_steps);
    stat(&j, "reference_step_ms", &r->snapshot_ref_ms);
    stat(&j, "lost_ms_per_step", &r->snapshot_lost_ms);
    stat(&j, "work_ms_per_step", &r->snapshot_work_ms);
    stat(&j, "host_ms_per_step", &r->snapshot_host_ms);
    stat(&j, "stall_ms_per_step", &r->snapshot_stall_ms);
    stat(&j, "copy_ms_per_step", &r->snapshot_copy_ms);
    stat(&j, "writer_ms_per_step", &r->snapshot_writer_ms);
    stat(&j, "hidden_share", &r->snapshot_hidden);
    json_str(&j, "dir", o->snapshot_dir);
    json_end(&j);
  }
  json_int(&j, "total_steps", r->total_steps);
  if (r->checkpoints_on) {
    json_object(&j, "checkpoints");
    json_int(&j, "every", r->checkpoint_every);
    json_str(&j, "dir", r->checkpoint_dir);
    json_int(&j, "written", r->checkpoints);
    if (r->checkpoints) {
      json_int(&j, "first_step", r->checkpoint_first);
      json_int(&j, "last_step", r->checkpoint_last);
      json_str(&j, "last", r->checkpoint_last_path);
      json_num(&j, "bytes_each", r->checkpoint_bytes);
    }
    if (r->checkpoint_every) {
      json_int(&j, "reference_steps", r->snapshot_ref_steps);
      stat(&j, "reference_step_ms", &r->ckpt_ref_ms);
      stat(&j, "lost_ms_per_step", &r->ckpt_lost_ms);
      stat(&j, "work_ms_per_step", &r->ckpt_work_ms);
      stat(&j, "host_ms_per_step", &r->ckpt_host_ms);
      stat(&j, "stall_ms_per_step", &r->ckpt_stall_ms);
      stat(&j, "copy_ms_per_step", &r->ckpt_copy_ms);
      stat(&j, "writer_ms_per_step", &r->ckpt_writer_ms);
      stat(&j, "fsync_ms_per_step", &r->ckpt_sync_ms);
      stat(&j, "hidden_share", &r->ckpt_hidden);
      stat(&j, "writer_max_ms_per_checkpoint", &r->ckpt_writer_max_ms);
      json_int(&j, "keep_up_every", r->ckpt_keep_up_every);
    }
    json_int(&j, "stop_polls", r->ckpt_polls);
    json_end(&j);
  }
  if (r->restarted) {
    json_object(&j, "restart");
    json_str(&j, "from", r->restart_from);
    json_int(&j, "steps_before", r->restart_step);
    json_int(&j, "writers", r->restart_writers);
    json_str(&j, "commit", r->restart_commit);
    json_str(&j, "created", r->restart_created);
    json_int(&j, "skipped", r->restart_skipped);
    json_num(&j, "read_s", r->restart_read_s);
    json_num(&j, "bytes", r->restart_bytes);
    json_num(&j, "read_GBs", r->restart_read_s > 0 ? r->restart_bytes / r->restart_read_s / 1e9 : 0.0);
    json_bool(&j, "source_record_lost", r->restart_hist_lost);
    json_end(&j);
  } else {
    json_null(&j, "restart");
  }
  json_bool(&j, "baseline", r->baseline);
  if (r->baseline) {
    stat(&j, "alone_step_ms", &r->alone_ms);
    stat(&j, "efficiency", &r->efficiency);
    stat(&j, "hidden_share", &r->hidden);
  }
  json_object(&j, "verification");
  json_bool(&j, "checked", r->verify.checked);
  json_bool(&j, "passed", r->verify.checked && r->verify.passed);
  json_str(&j, "status", verify_verdict_name(r->verify.verdict));
  json_bool(&j, "verified", r->verify.verdict == FD_VERDICT_PASS);
  json_str(&j, "check", r->verify.name);
  json_array(&j, "checks");
  for (int q = 0; q < r->verify.nchecks; q++) {
    const fd_check *c = &r->verify.check[q];
    json_object(&j, NULL);
    json_str(&j, "name", c->name);
    json_bool(&j, "applies", c->applies);
    json_bool(&j, "passed", c->applies && c->passed);
    json_num(&j, "error", c->error);
    json_num(&j, "tolerance", c->tolerance);
    json_str(&j, "note", c->note);
    json_end(&j);
  }
  json_end(&j);
  json_num(&j, "error_max", r->verify.error_max);
  json_num(&j, "error_rms", r->verify.error_rms);
  json_num(&j, "tolerance", r->verify.tolerance);
  if (r->op == FD_OP_JACOBI) {
    json_num(&j, "residual_initial", r->verify.residual0);
    json_num(&j, "residual_final", r->verify.residual);
    json_bool(&j, "converged", r->verify.converged);
    json_num(&j, "error_over_sum_h2", r->verify.error_h2);
  }
  json_str(&j, "detail", r->verify.detail);
  json_end(&j);
  bind_json(&j, binding, nbinding);
  json_close(&j);
  (void)o;
}

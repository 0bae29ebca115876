/* header.h - what a run is, printed before it runs: the start-up header (flushed before any
 * trial, so that a job killed at its time limit still says what ran) and the --plan text. Both
 * read a plan (src/model/plan.h). Rank 0 prints; Not Collective. */
#ifndef FDMINI_HEADER_H
#define FDMINI_HEADER_H

#include <stdio.h>

#include "backend.h"
#include "options.h"
#include "plan.h"

/* The start-up header of run o on device dev, laid out as plan p says: version and commit,
 * backend, precision and device; the operator; the ranks as the process grid and nodes (with
 * several nodes, or emulated ones, a `nodes` line); the global grid and the blocks; the steps.
 * The lines read as the full report's (report.c), so that a search finds either. Flushes out. */
void header_print(FILE *out, const fd_options *o, const be_info *dev, const fd_plan *p);

/* The `nodes` line of the header and of the full report: `nodes` nodes of min to max ranks
 * ("(emulated)" where emulated), then grid, how the nodes tile the process grid. */
void header_print_nodes(FILE *out, int nodes, int min, int max, int emulated, const char *grid);

/* The --plan text of plan p for run o (backend: the build's, FDMINI_BACKEND_NAME): the header's
 * lines, then memory per rank, the halo per step, the faces between nodes, and one line
 * `PLAN key=value ...` for scripts (docs/report.md, "The plan"). */
void header_print_plan(FILE *out, const fd_options *o, const fd_plan *p, int accelerator);

#endif

/* summary.h - the short report at the end of a run (the default; --report full prints
 * report.c's): one table of the figures a user compares, min/avg/max over the ranks, the
 * kernel and the halo path in a line each, one line of phases, the verdict and one line
 * `RESULT key=value ...` for scripts. Every line but RESULT within SUMMARY_COLUMNS. */
#ifndef FDMINI_SUMMARY_H
#define FDMINI_SUMMARY_H

#include <stdio.h>

#include "backend.h"
#include "options.h"
#include "result.h"

#define SUMMARY_COLUMNS 100

/* The short report of run r (o, dev: as report_print takes them) on out, after the start-up
 * header (header.h) printed the run's layout: docs/report.md, "The short report". Rank 0 calls
 * it; Not Collective. */
void summary_print(FILE *out, const fd_options *o, const be_info *dev, const fd_result *r);

/* The RESULT line of run r, without its newline, into buf[len] ("RESULT op=heat ranks=2
 * step_ms=... verdict=PASS"; keys in docs/report.md). Pure. */
void summary_result_line(const fd_options *o, const be_info *dev, const fd_result *r, char *buf, size_t len);

#endif

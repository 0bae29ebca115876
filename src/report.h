/* report.h - the human-readable report (rank 0) and the JSON record of a run. */
#ifndef FDMINI_REPORT_H
#define FDMINI_REPORT_H

#include <stdio.h>

#include "backend.h"
#include "bind.h"
#include "options.h"
#include "solver.h"

/* The report of run r on out (README "Reading the report"). Rank 0 calls it; Not Collective. */
void report_print(FILE *out, const fd_options *o, const be_info *dev, const fd_result *r);
/* The JSON record (schema fdmini-run/1, README "JSON record") on out; binding (rank 0's
 * gathered records, may be NULL) goes in "binding". Rank 0 calls it; Not Collective. */
void report_json(FILE *out, const fd_options *o, const be_info *dev, const fd_result *r,
                 const fd_binding *binding, int nbinding);

#endif

/* report.h - the human-readable report (rank 0) and the JSON record of a run. */
#ifndef FDMINI_REPORT_H
#define FDMINI_REPORT_H

#include <stdio.h>

#include "backend.h"
#include "bind.h"
#include "options.h"
#include "provenance.h"
#include "result.h"

/* The report of run r on out (docs/report.md); its header carries the provenance
 * (build, MPI, GPU, job, MPI environment). Rank 0 calls it; Not Collective. */
void report_print(FILE *out, const fd_options *o, const be_info *dev, const fd_result *r,
                  const fd_provenance *prov);
/* The name the verification line gives the checks of run r: the operator ("heat", whose
 * checks' own name "heat mode decay" would repeat the check's "mode decay"), or what failed
 * before any check ("halo exchange"). A static string or r's own. Pure. */
const char *report_check_label(const fd_result *r);

/* The JSON record (schema fdmini-run/1, docs/report.md, "JSON record") on out; binding (rank 0's
 * gathered records, may be NULL) goes in "binding", the provenance in its own keys
 * (provenance.h). Rank 0 calls it; Not Collective. */
void report_json(FILE *out, const fd_options *o, const be_info *dev, const fd_result *r,
                 const fd_binding *binding, int nbinding, const fd_provenance *prov);

#endif

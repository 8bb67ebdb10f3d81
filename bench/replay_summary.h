/* replay_summary.h - the replay tables: one per trace, and the summary
 * over all traces per allocator (also recorded as "replay-summary" rows). */
#ifndef BENCH_REPLAY_SUMMARY_H
#define BENCH_REPLAY_SUMMARY_H

#include "bench.h"
#include "trace.h"

#include <stdio.h>

void replay_table(FILE *f, const trace_t *t, const bench_opts_t *o, const char *scen);
void replay_summary(FILE *f, const char *const *names, size_t n, const bench_opts_t *o, const char *scen);

#endif

/* report_table.h - the human-readable tables. */
#ifndef BENCH_REPORT_TABLE_H
#define BENCH_REPORT_TABLE_H

#include "bench.h"
#include "results.h"

#include <stdio.h>

/* Prints the rows of (scenario, case) for every allocator of o: median,
 * min..max, runtime calls per operation and the ratio of each cca
 * configuration's time to this allocator's time. */
void table_case(FILE *f, const char *scenario, const char *case_name, const char *what,
                const bench_opts_t *o);
/* Compact number: 3-4 significant digits. */
const char *fmt_num(char *buf, size_t len, double v);
/* Ratio of a cca row's time to row x's time (throughput rows inverted). */
double time_ratio(const bench_row_t *cca, const bench_row_t *x);

#endif

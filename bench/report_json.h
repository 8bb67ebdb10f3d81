/* report_json.h - every recorded figure as JSON, for machines. */
#ifndef BENCH_REPORT_JSON_H
#define BENCH_REPORT_JSON_H

#include "bench.h"
#include "machine.h"

/* 0, or -1 when the file cannot be written. */
/* summary: the text the run opened with (summary_print), one string per line in "summary". */
int report_json(const char *path, const machine_t *m, const bench_opts_t *o, const char *summary);

#endif

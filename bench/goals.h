/* goals.h - the targets cca is measured against, checked from the
 * recorded figures and printed next to them (also recorded as "goal" rows). */
#ifndef BENCH_GOALS_H
#define BENCH_GOALS_H

#include "bench.h"

#include <stdio.h>

void goals_report(FILE *f, const bench_opts_t *o);

#endif

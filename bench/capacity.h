/* capacity.h - the smallest device capacity on which a trace replays
 * without an out-of-memory, found by bisection on the simulated device
 * (each try stops at its first OOM). Assumes that a larger device never
 * hurts. */
#ifndef BENCH_CAPACITY_H
#define BENCH_CAPACITY_H

#include "alloc_ops.h"
#include "trace.h"

typedef struct capacity_result {
    int ok;                 /* 0: could not search (real runtime, or an error) */
    char error[256];
    double min_ratio;       /* smallest capacity / peak live bytes that fits */
    int above_bound;        /* does not fit even at bound x peak live */
    int oom_at_105;         /* OOM on a device of 1.05 x peak live */
    int oom_at_110;         /* ... of 1.10 x peak live */
    int replays;            /* replays the search took */
} capacity_result_t;

/* precision: relative width at which the bisection stops (0.005 = 0.5%). */
capacity_result_t capacity_search(const trace_t *t, const bench_alloc_ops_t *ops,
                                  const char *conf, double bound, double precision);

#endif

/* bench.h - options shared by the benchmark's scenarios. */
#ifndef BENCH_BENCH_H
#define BENCH_BENCH_H

#include "alloc_ops.h"

#include <stddef.h>

#define BENCH_MAX_ALLOCS 28
#define BENCH_MAX_PATHS 64

typedef struct bench_opts {
    int reps;                  /* repetitions of every figure */
    int quick;                 /* fast smoke run */
    double target_ns;          /* time one measurement aims for */
    const char *json_path;     /* --json FILE, or NULL */
    const char *traces_dir;    /* default trace folder */
    const char *trace_paths[BENCH_MAX_PATHS];   /* --trace (files or folders) */
    size_t n_trace_paths;
    bench_alloc_t allocs[BENCH_MAX_ALLOCS];     /* what runs, in order */
    size_t n_allocs;
    size_t count;              /* --count N (0: each use's default) */
} bench_opts_t;

/* Scenarios; each measures every allocator of o and records its rows. */
void scen_runtime_cost(const bench_opts_t *o);
void scen_pingpong(const bench_opts_t *o);
void scen_mixed(const bench_opts_t *o);
void scen_threads(const bench_opts_t *o);
void scen_streams(const bench_opts_t *o);
void scen_recording(const bench_opts_t *o);
void scen_replay(const bench_opts_t *o);
int  scen_replay_failed(void);         /* a trace named with --trace could not be read or loaded */
void scen_multistream(const bench_opts_t *o);
void scen_xfree(const bench_opts_t *o);
void scen_hooks(const bench_opts_t *o);
void scen_instructions(const bench_opts_t *o);
/* One untimed run of an xfree variant (for callgrind); 0 on success. */
int xfree_count(const bench_alloc_t *a, const char *variant, size_t n);
/* N operations of a workload, untimed (for callgrind); 0 on success. */
int count_ops(const bench_alloc_t *a, const char *work, size_t n);

#endif

/* measure.h - the measurement driver: runs one case for every allocator,
 * interleaved within each repetition (A B C A B C ...), with the number of
 * iterations calibrated per allocator, and reduces the samples to median,
 * min and max. */
#ifndef BENCH_MEASURE_H
#define BENCH_MEASURE_H

#include "bench.h"
#include "results.h"

typedef struct bench_sample {
    double ns;                /* elapsed time of the timed part */
    double value;             /* the figure (ns per op, or ops per second) */
    int have_calls;
    simctl_calls_t calls;     /* runtime calls per operation */
    int failed;
    char msg[200];
} bench_sample_t;

/* Runs `iters` iterations of the case for allocator a; fills out. */
typedef void (*bench_run_fn)(const bench_alloc_t *a, void *arg, size_t iters, bench_sample_t *out);

typedef struct bench_case {
    const char *scenario;
    char name[64];
    const char *unit;         /* "ns/pair", "ns/op", "Mops/s" */
    int higher_is_better;
    bench_run_fn run;
    void *arg;
    size_t calib_iters;       /* iterations of the calibration run */
    size_t max_iters;
} bench_case_t;

/* Measures c for every allocator of o; figs has o->n_allocs entries. */
void measure_case(const bench_case_t *c, const bench_opts_t *o, bench_figure_t *figs);
/* Measures n variants, each an allocator with its own argument for c->run
 * (c->arg is ignored), interleaved within each repetition. */
void measure_variants(const bench_case_t *c, const bench_alloc_t *allocs, void *const *args,
                      size_t n, const bench_opts_t *o, bench_figure_t *figs);
/* Records the figures as result rows (ratios are derived when printing). */
void record_case(const bench_case_t *c, const bench_opts_t *o, const bench_figure_t *figs);

/* Helpers for run functions: the runtime-call snapshot and the clock. */
typedef struct bench_timer { simctl_calls_t calls; unsigned long long t0; } bench_timer_t;
void timer_start(bench_timer_t *t);
/* Fills out->ns, ->value (ns per op) and ->calls (per op). */
void timer_stop(const bench_timer_t *t, double ops, bench_sample_t *out);
void sample_fail(bench_sample_t *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The pingpong case's run (arg: the size_t size) and the mixed case's
 * (arg: the mixed_seq_t), for scenarios that measure them under other
 * configurations (scen_recording.c). */
void scen_pingpong_run(const bench_alloc_t *a, void *arg, size_t iters, bench_sample_t *out);
void scen_mixed_run(const bench_alloc_t *a, void *arg, size_t iters, bench_sample_t *out);

/* Median, min and max of n values (v is reordered). */
void reduce(double *v, size_t n, double *median, double *min, double *max);
/* Keeps the n samples (in repetition order) in g and reduces them. */
void figure_set(bench_figure_t *g, const double *v, size_t n);

#endif

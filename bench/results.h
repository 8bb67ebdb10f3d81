/* results.h - every figure the benchmark measured, kept for the goals
 * check and the JSON output. */
#ifndef BENCH_RESULTS_H
#define BENCH_RESULTS_H

#include "sim_ctl.h"

#include <stddef.h>

#define RESULT_MAX_EXTRA 16
#define BENCH_MAX_REPS 64

typedef struct bench_figure {
    double median, min, max;     /* over the repetitions */
    int reps;
    double samples[BENCH_MAX_REPS];  /* per repetition, in order (for paired ratios) */
    int have_calls;              /* calls is meaningful (simulated device) */
    simctl_calls_t calls;        /* runtime calls per operation */
    int failed;
    char msg[200];
} bench_figure_t;

typedef struct bench_extra { char key[40]; double value; } bench_extra_t;

typedef struct bench_row {
    char scenario[24];
    char case_name[64];
    char alloc[48];
    char unit[16];
    int is_cca, modelled, higher_is_better;
    bench_figure_t fig;
    size_t n_extra;
    bench_extra_t extra[RESULT_MAX_EXTRA];
} bench_row_t;

bench_row_t *results_add(const char *scenario, const char *case_name, const char *alloc,
                         const char *unit);
void results_extra(bench_row_t *r, const char *key, double value);
size_t results_count(void);
const bench_row_t *results_get(size_t i);
/* The row of (scenario, case, alloc), or NULL. */
const bench_row_t *results_find(const char *scenario, const char *case_name, const char *alloc);
/* The extra value of key in r, or NaN. */
double results_extra_get(const bench_row_t *r, const char *key);
void results_clear(void);

#endif

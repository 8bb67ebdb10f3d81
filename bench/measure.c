/* measure.c - see measure.h. */
#include "measure.h"
#include "clock.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void timer_start(bench_timer_t *t)
{
    simctl_snapshot(&t->calls);
    t->t0 = bench_now_ns();
}

void timer_stop(const bench_timer_t *t, double ops, bench_sample_t *out)
{
    unsigned long long t1 = bench_now_ns();
    simctl_calls_t c1;
    simctl_snapshot(&c1);
    out->ns = (double)(t1 - t->t0);
    out->value = out->ns / (ops > 0 ? ops : 1);
    out->have_calls = simctl_is_sim();
    simctl_per_op(&t->calls, &c1, ops, &out->calls);
}

void sample_fail(bench_sample_t *out, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out->msg, sizeof out->msg, fmt, ap);
    va_end(ap);
    out->failed = 1;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void reduce(double *v, size_t n, double *median, double *min, double *max)
{
    if (n == 0) {
        *median = *min = *max = 0;
        return;
    }
    qsort(v, n, sizeof *v, cmp_double);
    *min = v[0];
    *max = v[n - 1];
    *median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

void figure_set(bench_figure_t *g, const double *v, size_t n)
{
    double sorted[BENCH_MAX_REPS];
    if (n > BENCH_MAX_REPS)
        n = BENCH_MAX_REPS;
    memcpy(g->samples, v, n * sizeof *v);
    memcpy(sorted, v, n * sizeof *v);
    reduce(sorted, n, &g->median, &g->min, &g->max);
    g->reps = (int)n;
}

static void run_one(const bench_case_t *c, const bench_alloc_t *a, void *arg, size_t iters,
                    bench_sample_t *s)
{
    memset(s, 0, sizeof *s);
    simctl_model(a->modelled);
    c->run(a, arg, iters, s);
    simctl_model(0);
}

/* One calibration run (also the warm-up) picks the iterations that make a
 * measurement last about target_ns. */
static size_t calibrate(const bench_case_t *c, const bench_opts_t *o, const bench_alloc_t *a,
                        void *arg, bench_figure_t *fig)
{
    bench_sample_t s;
    size_t iters = c->calib_iters ? c->calib_iters : 100;
    run_one(c, a, arg, iters, &s);
    if (s.failed) {
        fig->failed = 1;
        snprintf(fig->msg, sizeof fig->msg, "%s", s.msg);
        return 0;
    }
    double per_iter = s.ns / (double)iters;
    double want = per_iter > 0 ? o->target_ns / per_iter : (double)c->max_iters;
    if (want < (double)iters)
        want = (double)iters;
    if (c->max_iters && want > (double)c->max_iters)
        want = (double)c->max_iters;
    return (size_t)want;
}

static void keep_sample(bench_figure_t *fig, const bench_sample_t *s, double *vals, int *n)
{
    if (s->failed) {
        fig->failed = 1;
        snprintf(fig->msg, sizeof fig->msg, "%s", s->msg);
        return;
    }
    vals[(*n)++] = s->value;
    fig->have_calls = s->have_calls;
    fig->calls = s->calls;
}

void measure_variants(const bench_case_t *c, const bench_alloc_t *allocs, void *const *args,
                      size_t n, const bench_opts_t *o, bench_figure_t *figs)
{
    size_t reps = (size_t)o->reps, *iters = calloc(n + 1, sizeof *iters);
    double *vals = calloc(n * reps + 1, sizeof *vals);
    int *nv = calloc(n + 1, sizeof *nv);
    if (!iters || !vals || !nv) {
        fprintf(stderr, "cca-bench: out of memory\n");
        exit(1);
    }
    for (size_t i = 0; i < n; i++) {
        memset(&figs[i], 0, sizeof figs[i]);
        iters[i] = calibrate(c, o, &allocs[i], args[i], &figs[i]);
    }
    for (size_t rep = 0; rep < reps; rep++)
        for (size_t i = 0; i < n; i++) {
            bench_sample_t s;
            if (figs[i].failed)
                continue;
            run_one(c, &allocs[i], args[i], iters[i], &s);
            keep_sample(&figs[i], &s, vals + i * reps, &nv[i]);
        }
    for (size_t i = 0; i < n; i++)
        figure_set(&figs[i], vals + i * reps, (size_t)nv[i]);
    free(iters);
    free(vals);
    free(nv);
}

void measure_case(const bench_case_t *c, const bench_opts_t *o, bench_figure_t *figs)
{
    void *args[BENCH_MAX_ALLOCS];
    fprintf(stderr, "  %s %s ...\n", c->scenario, c->name);
    for (size_t i = 0; i < o->n_allocs; i++)
        args[i] = c->arg;
    measure_variants(c, o->allocs, args, o->n_allocs, o, figs);
}

void record_case(const bench_case_t *c, const bench_opts_t *o, const bench_figure_t *figs)
{
    for (size_t i = 0; i < o->n_allocs; i++) {
        const bench_alloc_t *a = &o->allocs[i];
        bench_row_t *r = results_add(c->scenario, c->name, a->label, c->unit);
        r->is_cca = a->is_cca;
        r->modelled = a->modelled;
        r->higher_is_better = c->higher_is_better;
        r->fig = figs[i];
    }
}

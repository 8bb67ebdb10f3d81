/* report_table.c - see report_table.h. */
#include "report_table.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *fmt_num(char *buf, size_t len, double v)
{
    double a = fabs(v);
    if (isnan(v))
        snprintf(buf, len, "-");
    else if (a >= 1e9)
        snprintf(buf, len, "%.3g", v);
    else if (v == floor(v) && a < 1e6)
        snprintf(buf, len, "%.0f", v);
    else if (a >= 1000)
        snprintf(buf, len, "%.0f", v);
    else if (a >= 100)
        snprintf(buf, len, "%.1f", v);
    else if (a >= 10)
        snprintf(buf, len, "%.2f", v);
    else
        snprintf(buf, len, "%.3f", v);
    return buf;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median of the ratios of samples taken side by side in each repetition:
 * robust to a machine that gets faster or slower during the run. */
static double paired_ratio(const bench_figure_t *c, const bench_figure_t *x, int inverse)
{
    double r[BENCH_MAX_REPS];
    int n = c->reps;
    for (int i = 0; i < n; i++) {
        if (c->samples[i] <= 0 || x->samples[i] <= 0)
            return NAN;
        r[i] = inverse ? x->samples[i] / c->samples[i] : c->samples[i] / x->samples[i];
    }
    qsort(r, (size_t)n, sizeof *r, by_value);
    return n % 2 ? r[n / 2] : (r[n / 2 - 1] + r[n / 2]) / 2;
}

double time_ratio(const bench_row_t *cca, const bench_row_t *x)
{
    if (!cca || !x || cca->fig.failed || x->fig.failed || x->fig.median <= 0 ||
        cca->fig.median <= 0)
        return NAN;
    if (cca->fig.reps > 0 && cca->fig.reps == x->fig.reps)
        return paired_ratio(&cca->fig, &x->fig, x->higher_is_better);
    if (x->higher_is_better)
        return x->fig.median / cca->fig.median;
    return cca->fig.median / x->fig.median;
}

static void header(FILE *f, const bench_opts_t *o)
{
    fprintf(f, "  %-22s %10s %21s %8s %8s %8s %8s", "allocator", "median", "min..max",
            "calls", "malloc", "free", "evrec");
    for (size_t i = 0; i < o->n_allocs; i++)
        if (o->allocs[i].is_cca && !o->allocs[i].modelled)
            fprintf(f, " %12.12s/x", o->allocs[i].label);
    fprintf(f, "\n");
}

static void calls_cols(FILE *f, const bench_figure_t *g)
{
    char b[4][24];
    if (!g->have_calls) {
        fprintf(f, " %8s %8s %8s %8s", "n/a", "n/a", "n/a", "n/a");
        return;
    }
    fprintf(f, " %8s %8s %8s %8s", fmt_num(b[0], 24, g->calls.total),
            fmt_num(b[1], 24, g->calls.malloc), fmt_num(b[2], 24, g->calls.free),
            fmt_num(b[3], 24, g->calls.event_record));
}

static void row(FILE *f, const bench_row_t *r, const char *scenario, const char *case_name,
                const bench_opts_t *o)
{
    char b[3][24], range[48];
    fprintf(f, "  %-22s", r->alloc);
    if (r->fig.failed) {
        fprintf(f, " FAILED: %s\n", r->fig.msg);
        return;
    }
    snprintf(range, sizeof range, "%s..%s", fmt_num(b[1], 24, r->fig.min),
             fmt_num(b[2], 24, r->fig.max));
    fprintf(f, " %10s %21s", fmt_num(b[0], 24, r->fig.median), range);
    calls_cols(f, &r->fig);
    for (size_t i = 0; i < o->n_allocs; i++) {
        const bench_alloc_t *a = &o->allocs[i];
        if (!a->is_cca || a->modelled)
            continue;
        const bench_row_t *c = results_find(scenario, case_name, a->label);
        if (c == r || r->modelled)                    /* a modelled row is not timed: no ratio */
            fprintf(f, " %14s", "-");
        else
            fprintf(f, " %13sx", fmt_num(b[0], 24, time_ratio(c, r)));
    }
    fprintf(f, "\n");
}

void table_case(FILE *f, const char *scenario, const char *case_name, const char *what,
                const bench_opts_t *o)
{
    fprintf(f, "\n%s %s: %s\n", scenario, case_name, what);
    header(f, o);
    for (size_t i = 0; i < o->n_allocs; i++) {
        const bench_row_t *r = results_find(scenario, case_name, o->allocs[i].label);
        if (r)
            row(f, r, scenario, case_name, o);
    }
}

/* goals.c - see goals.h. */
#include "goals.h"
#include "report_table.h"
#include "results.h"

#include <math.h>
#include <string.h>

#define PEER "cub-all"

typedef struct goal {
    const char *scenario, *case_name;  /* row the figure comes from */
    const char *what;                  /* "ratio", "calls", or an extra's key */
    const char *text;                  /* shown */
    int at_least;                      /* 1: value >= target; 0: value <= target */
    double target;
} goal_t;

static const goal_t goals[] = {
    {"pingpong", "512B", "ratio", "pingpong 512B time / " PEER, 0, 0.25},
    {"pingpong", "64KiB", "ratio", "pingpong 64KiB time / " PEER, 0, 0.25},
    {"pingpong", "4MiB", "ratio", "pingpong 4MiB time / " PEER, 0, 0.25},
    {"pingpong", "64MiB", "ratio", "pingpong 64MiB time / " PEER, 0, 0.25},
    {"pingpong", "512B", "calls", "pingpong 512B CUDA calls/pair", 0, 0},
    {"pingpong", "64KiB", "calls", "pingpong 64KiB CUDA calls/pair", 0, 0},
    {"pingpong", "4MiB", "calls", "pingpong 4MiB CUDA calls/pair", 0, 0},
    {"pingpong", "64MiB", "calls", "pingpong 64MiB CUDA calls/pair", 0, 0},
    {"mixed", "1000-live", "ratio", "mixed time / " PEER, 0, 1.0 / 3},
    {"threads", "pingpong-64KiB/2-threads-own-streams", "ratio_to_one_thread",
     "threads pingpong 2 own streams / 1 thread", 1, 1.0},
    {"threads", "pingpong-64KiB/2-threads-shared-stream", "ratio_to_one_thread",
     "threads pingpong 2 shared stream / 1 thread", 1, 1.0},
    {"threads", "mixed-1000-live/2-threads-own-streams", "ratio_to_one_thread",
     "threads mixed 2 own streams / 1 thread", 1, 1.0},
    {"threads", "mixed-1000-live/2-threads-shared-stream", "ratio_to_one_thread",
     "threads mixed 2 shared stream / 1 thread", 1, 1.0},
    {"xfree", "cross-thread-1000-exited", "ratio_to_no_exited",
     "xfree after 1,000 exited threads / none", 0, 1.2},
    {"replay-summary", "all-traces", "geomean_reserved_over_live",
     "replay gmean peak reserved / peak live", 0, 1.03},
    {"replay-summary", "all-traces", "max_reserved_over_live",
     "replay max peak reserved / peak live", 0, 1.15},
    {"replay-summary", "all-traces", "cudaMalloc_per_1k_events",
     "replay cudaMalloc per 1,000 events", 0, 30},
    {"replay-summary", "all-traces", "cudaFree_per_1k_events",
     "replay cudaFree per 1,000 events", 0, 5},
    {"replay-summary", "all-traces", "traces_oom_at_1.05x",
     "replay traces that OOM at 1.05x peak live", 0, 0},
};

static double goal_value(const goal_t *g, const char *label)
{
    const bench_row_t *r = results_find(g->scenario, g->case_name, label);
    if (!r || r->fig.failed)
        return NAN;
    if (!strcmp(g->what, "ratio"))
        return time_ratio(r, results_find(g->scenario, g->case_name, PEER));
    if (!strcmp(g->what, "calls"))
        return r->fig.have_calls ? r->fig.calls.total : NAN;
    return results_extra_get(r, g->what);
}

static void print_value(FILE *f, const goal_t *g, const char *label)
{
    char b[24], cell[40];
    double v = goal_value(g, label);
    int met = g->at_least ? v >= g->target - 1e-12 : v <= g->target + 1e-12;
    bench_row_t *r = results_add("goal", g->text, label, "");
    r->is_cca = 1;
    r->fig.median = r->fig.min = r->fig.max = v;
    r->fig.failed = isnan(v);
    results_extra(r, "target", g->target);
    results_extra(r, "at_least", g->at_least);
    results_extra(r, "met", isnan(v) ? NAN : met);
    if (isnan(v))
        snprintf(cell, sizeof cell, "not measured");
    else
        snprintf(cell, sizeof cell, "%s %s", fmt_num(b, sizeof b, v), met ? "met" : "MISSED");
    fprintf(f, " %20s", cell);
}

void goals_report(FILE *f, const bench_opts_t *o)
{
    char b[24];
    fprintf(f, "\n== goals (ratios: cca time / %s time) ==\n", PEER);
    fprintf(f, "  %-44s %8s", "goal", "target");
    for (size_t i = 0; i < o->n_allocs; i++)
        if (o->allocs[i].is_cca && !o->allocs[i].modelled)
            fprintf(f, " %20s", o->allocs[i].label);
    fprintf(f, "\n");
    for (size_t k = 0; k < sizeof goals / sizeof goals[0]; k++) {
        const goal_t *g = &goals[k];
        fprintf(f, "  %-44s %s %5s", g->text, g->at_least ? ">=" : "<=",
                fmt_num(b, sizeof b, g->target));
        for (size_t i = 0; i < o->n_allocs; i++)
            if (o->allocs[i].is_cca && !o->allocs[i].modelled)
                print_value(f, g, o->allocs[i].label);
        fprintf(f, "\n");
    }
}

/* summary.c - the lines cca-bench opens with: for each question (the hot
 * path, threads, memory on real traces, device calls) the run's answer -
 * cca's default against the best peer (not cca, not raw cudaMalloc, not
 * modelled), by how much, and the spread (min..max over the repetitions)
 * - and how to read the tables below. From the same figures the JSON
 * report has (results.h); tests/test_bench_summary.py checks them. */
#include "summary.h"
#include "results.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define CCA "cca:default"
#define WIDE 0.25                                     /* spread above this share of the median: not to trust */

static int is_peer(const bench_row_t *r)
{
    return !r->is_cca && !r->modelled && strncmp(r->alloc, "raw", 3) != 0 && !r->fig.failed;
}

/* The best peer's row of (scenario, case): fastest, or highest where higher is better. */
static const bench_row_t *best_peer(const char *scenario, const char *case_name)
{
    const bench_row_t *best = NULL;
    for (size_t i = 0; i < results_count(); i++) {
        const bench_row_t *r = results_get(i);
        if (strcmp(r->scenario, scenario) || strcmp(r->case_name, case_name) || !is_peer(r))
            continue;
        if (!best || (r->higher_is_better ? r->fig.median > best->fig.median : r->fig.median < best->fig.median))
            best = r;
    }
    return best;
}

static int wide(const bench_figure_t *f)
{
    return f->median > 0 && (f->max - f->min) / f->median > WIDE;
}

/* One timed question: cca's default against the best peer. */
static int timed(FILE *out, const char *question, const char *scenario, const char *case_name)
{
    const bench_row_t *c = results_find(scenario, case_name, CCA), *p = best_peer(scenario, case_name);
    if (!c || c->fig.failed || !p)
        return 0;
    double ratio = c->higher_is_better ? c->fig.median / p->fig.median : p->fig.median / c->fig.median;
    fprintf(out, "  %-22s %s %.4g %s (%.4g..%.4g), best peer %s %.4g (%.4g..%.4g): %s wins by %.2fx%s\n",
            question, CCA, c->fig.median, c->unit, c->fig.min, c->fig.max, p->alloc, p->fig.median, p->fig.min,
            p->fig.max, ratio >= 1 ? CCA : p->alloc, ratio >= 1 ? ratio : 1 / ratio,
            wide(&c->fig) || wide(&p->fig) ? "  [spread too wide to trust: rerun with more --reps]" : "");
    return 1;
}

/* A figure of the replay summaries: the extra `key`, plus `key2` where
 * given (a device call counted under two names: cudaMalloc and cuMemCreate). */
static double figure(const bench_row_t *r, const char *key, const char *key2)
{
    double v = results_extra_get(r, key);
    return key2 && !isnan(v) ? v + results_extra_get(r, key2) : v;
}

/* cca's default, its best configuration, and the best peer; lower wins. */
static int traces(FILE *out, const char *question, const char *scenario, const char *key, const char *key2,
                  const char *worst_key)
{
    const bench_row_t *c = results_find(scenario, "all-traces", CCA);
    if (!c || c->fig.failed || isnan(figure(c, key, key2)))
        return 0;
    const bench_row_t *bc = NULL, *bp = NULL;
    for (size_t i = 0; i < results_count(); i++) {
        const bench_row_t *r = results_get(i);
        double v = figure(r, key, key2);
        if (strcmp(r->scenario, scenario) || strcmp(r->case_name, "all-traces") || r->fig.failed || isnan(v))
            continue;
        if (r->is_cca && (!bc || v < figure(bc, key, key2)))
            bc = r;
        if (is_peer(r) && (!bp || v < figure(bp, key, key2)))
            bp = r;
    }
    double vc = figure(c, key, key2);
    fprintf(out, "  %-22s %s %.4g", question, CCA, vc);
    if (worst_key)
        fprintf(out, " (worst %.4g)", results_extra_get(c, worst_key));
    if (bc && bc != c)
        fprintf(out, ", best cca %s %.4g", bc->alloc, figure(bc, key, key2));
    if (bp) {
        double vp = figure(bp, key, key2), vb = bc ? figure(bc, key, key2) : vc;
        fprintf(out, ", best peer %s %.4g", bp->alloc, vp);
        if (worst_key)                                /* memory: what the peer pays for it in device calls */
            fprintf(out, " (worst %.4g; %.4g allocs, %.4g frees per 1k events)", results_extra_get(bp, worst_key),
                    figure(bp, "cudaMalloc_per_1k_events", "cuMemCreate_per_1k_events"),
                    figure(bp, "cudaFree_per_1k_events", "cuMemUnmap_per_1k_events"));
        fprintf(out, ": %s", vb < vp ? "cca wins" : vb > vp ? "the peer wins" : "even");
    }
    fprintf(out, " [%.0f traces]\n", results_extra_get(c, "traces"));
    return 1;
}

void summary_print(FILE *out)
{
    fprintf(out, "\n== summary: each question's answer in this run (median, min..max over the repetitions) ==\n");
    int n = 0;
    n += timed(out, "hot path, 64KiB pair", "pingpong", "64KiB");
    n += timed(out, "hot path, 12 sizes", "pingpong", "12sizes");
    n += timed(out, "hot path, mixed step", "mixed", "1000-live");
    n += timed(out, "2 threads, own stream", "threads", "mixed-1000-live/2-threads-own-streams");
    n += timed(out, "2 threads, one stream", "threads", "mixed-1000-live/2-threads-shared-stream");
    n += traces(out, "memory, real traces", "replay-summary", "geomean_reserved_over_live", NULL,
                "max_reserved_over_live");
    n += traces(out, "memory, multistream", "multistream-summary", "geomean_reserved_over_live", NULL,
                "max_reserved_over_live");
    n += traces(out, "device allocs/1k ev.", "replay-summary", "cudaMalloc_per_1k_events", "cuMemCreate_per_1k_events",
                NULL);
    n += traces(out, "device frees/1k ev.", "replay-summary", "cudaFree_per_1k_events", "cuMemUnmap_per_1k_events",
                NULL);
    if (!n)
        fprintf(out, "  (no scenario this run answers a question: run the defaults)\n");
    fprintf(out,
        "  memory: peak reserved / peak live bytes, geometric mean over the traces (1.0 is the floor); lower wins\n"
        "  device allocs, frees: cudaMalloc + cuMemCreate, cudaFree + cuMemUnmap per 1,000 trace events\n"
        "\n== how to read the tables below ==\n"
        "  ns/pair, ns/op, ns/event: median time over the repetitions, min..max after it; Mops/s: throughput\n"
        "  calls/pair: CUDA runtime calls per operation (the simulated device counts them)\n"
        "  cca:default/x: the median of the per-repetition ratios of cca:default to that row (paired: each\n"
        "    repetition ran both), so it can differ from the ratio of the medians beside it; < 1: cca faster\n"
        "  (modelled) rows add the real runtime's latencies to each call: not timed, no ratios ('-')\n"
        "  goals: cca's targets; MISSED says this run did not meet one (a figure of the simulated device,\n"
        "    2 cores here: a goal is met or missed on the machine it is measured on)\n");
}

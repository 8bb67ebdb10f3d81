/* scen_replay.c - replays every trace against every allocator: time per
 * event (interleaved repetitions), peak reserved over peak live bytes,
 * runtime calls, OOMs, and the smallest device that fits (bisection). */
#include "bench.h"
#include "capacity.h"
#include "measure.h"
#include "multistream.h"
#include "replay.h"
#include "replay_summary.h"
#include "report_table.h"
#include "trace_files.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BOUND 4.0                       /* bisection bound, x peak live */
#define MODELLED_MAX_REPS 3             /* modelled replays are slow: fewer repetitions */

static void measure_pass(const trace_t *t, const bench_alloc_t *a, bench_row_t *row)
{
    replay_opts_t ro = {.capacity = replay_big_capacity(t), .track_peak = 1, .check = 1, .progress = 1};
    replay_result_t r = replay(t, a->ops, a->conf, &ro);
    double ev = r.events ? (double)r.events : 1;
    if (!r.ok) {
        row->fig.failed = 1;
        snprintf(row->fig.msg, sizeof row->fig.msg, "%.190s", r.error);
        return;
    }
    row->fig.have_calls = simctl_is_sim();
    simctl_per_op(&(simctl_calls_t){0}, &r.calls, ev, &row->fig.calls);
    results_extra(row, "events", (double)r.events);
    results_extra(row, "peak_reserved_bytes", (double)r.peak_reserved);
    results_extra(row, "peak_live_bytes", (double)t->peak_live_bytes);
    results_extra(row, "reserved_over_live", (double)r.peak_reserved / (double)t->peak_live_bytes);
    results_extra(row, "cudaMalloc_per_1k_events", r.calls.malloc * 1000.0 / ev);
    results_extra(row, "cudaFree_per_1k_events", r.calls.free * 1000.0 / ev);
    results_extra(row, "cuMemCreate_per_1k_events", r.calls.create * 1000.0 / ev);
    results_extra(row, "cuMemUnmap_per_1k_events", r.calls.unmap * 1000.0 / ev);
    results_extra(row, "ooms", (double)r.ooms);
    results_extra(row, "check_failed", r.check_failed);
    if (r.check_failed) {
        printf("  !!! %s on %s: CHECK FAILED: %s\n", a->label, t->name, r.check_msg);
        fprintf(stderr, "cca-bench: %s on %s: CHECK FAILED: %s\n", a->label, t->name, r.check_msg);
    }
}

static void bisection(const trace_t *t, const bench_alloc_t *a, double precision, bench_row_t *row)
{
    capacity_result_t c = capacity_search(t, a->ops, a->conf, BOUND, precision);
    if (!c.ok)
        return;
    results_extra(row, "min_capacity_over_live", c.min_ratio);
    results_extra(row, "min_capacity_above_bound", c.above_bound);
    results_extra(row, "oom_at_1.05x", c.oom_at_105);
    results_extra(row, "oom_at_1.10x", c.oom_at_110);
}

static int timed_reps(const bench_opts_t *o, const bench_alloc_t *a)
{
    return a->modelled && o->reps > MODELLED_MAX_REPS ? MODELLED_MAX_REPS : o->reps;
}

static void timing(const trace_t *t, const bench_opts_t *o, bench_row_t **rows)
{
    size_t n = o->n_allocs, reps = (size_t)o->reps;
    double *v = calloc(n * reps + 1, sizeof *v);
    int nv[BENCH_MAX_ALLOCS] = {0};
    for (int rep = 0; v && rep < o->reps; rep++)
        for (size_t i = 0; i < n; i++) {
            const bench_alloc_t *a = &o->allocs[i];
            if (rows[i]->fig.failed || rep >= timed_reps(o, a))
                continue;
            replay_opts_t ro = {.capacity = replay_big_capacity(t), .modelled = a->modelled};
            replay_result_t r = replay(t, a->ops, a->conf, &ro);
            if (r.ok && r.events)
                v[i * reps + (size_t)nv[i]++] = (double)r.ns / (double)r.events;
        }
    for (size_t i = 0; v && i < n; i++) {
        figure_set(&rows[i]->fig, v + i * reps, (size_t)nv[i]);
    }
    free(v);
}

static void one_trace(const trace_t *t, const bench_opts_t *o, double precision, const char *scen)
{
    bench_row_t *rows[BENCH_MAX_ALLOCS];
    for (size_t i = 0; i < o->n_allocs; i++) {
        const bench_alloc_t *a = &o->allocs[i];
        rows[i] = results_add(scen, t->name, a->label, "ns/event");
        rows[i]->is_cca = a->is_cca;
        rows[i]->modelled = a->modelled;
        if (!a->modelled)
            measure_pass(t, a, rows[i]);
        else
            results_extra(rows[i], "events", (double)t->n_events);
    }
    timing(t, o, rows);
    for (size_t i = 0; i < o->n_allocs; i++)
        if (!o->allocs[i].modelled && !rows[i]->fig.failed)
            bisection(t, &o->allocs[i], precision, rows[i]);
    replay_table(stdout, t, o, scen);
}

static int replay_failed;

int scen_replay_failed(void) { return replay_failed; }

void scen_replay(const bench_opts_t *o)
{
    trace_files_t files = {0};
    double precision = o->quick ? 0.02 : 0.005;
    printf("\n== replay: allocation traces (RMM log CSV) ==\n");
    if (trace_files_add(&files, o->traces_dir, o->quick ? 3 : 0) != 0)
        printf("  no traces in %s (absent or unreadable): skipped; use --traces-dir or --trace\n",
               o->traces_dir);
    size_t n_default = files.n;                        /* the rest were named with --trace */
    for (size_t i = 0; i < o->n_trace_paths; i++)
        if (trace_files_add(&files, o->trace_paths[i], 0) != 0) {   /* checked when parsed: gone since */
            fprintf(stderr, "cca-bench: --trace %s: cannot read it\n", o->trace_paths[i]);
            replay_failed = 1;
        }
    char **names = calloc(files.n + 1, sizeof *names);
    size_t n_names = 0;
    for (size_t k = 0; names && k < files.n; k++) {
        trace_t t;
        fprintf(stderr, "  replay [%zu/%zu] %s\n", k + 1, files.n, files.paths[k]);
        if (trace_load(files.paths[k], &t) != 0) {
            printf("  %s: not loaded: %s\n", files.paths[k], t.error);
            if (k >= n_default) {                     /* one the caller named: an error */
                fprintf(stderr, "cca-bench: --trace %s: not a trace: %s\n", files.paths[k], t.error);
                replay_failed = 1;
            }
            continue;
        }
        one_trace(&t, o, precision, "replay");
        names[n_names++] = strdup(t.name);
        trace_free(&t);
    }
    if (n_names)
        replay_summary(stdout, (const char *const *)names, n_names, o, "replay");
    for (size_t k = 0; k < n_names; k++)
        free(names[k]);
    free(names);
    trace_files_free(&files);
}

void scen_multistream(const bench_opts_t *o)
{
    unsigned steps = o->quick ? 3 : 12;
    printf("\n== multistream: synthetic training steps on several streams (compute on the default stream;\n"
           "   weights prefetched on four streams, gradient buckets on two communication streams, or ten\n"
           "   streams: weights prefetched on eight, activations offloaded and brought back on one;\n"
           "   used by the compute stream through record_stream), %u steps each ==\n", steps);
    size_t n = multistream_count();
    char **names = calloc(n + 1, sizeof *names);
    size_t n_names = 0;
    for (size_t k = 0; names && k < n; k++) {
        trace_t t;
        if (multistream_trace(k, steps, &t) != 0) {
            printf("  workload %zu: not made: %s\n", k, t.error);
            continue;
        }
        fprintf(stderr, "  multistream [%zu/%zu] %s\n", k + 1, n, t.name);
        one_trace(&t, o, o->quick ? 0.02 : 0.005, "multistream");
        names[n_names++] = strdup(t.name);
        trace_free(&t);
    }
    if (n_names)
        replay_summary(stdout, (const char *const *)names, n_names, o, "multistream");
    for (size_t k = 0; k < n_names; k++)
        free(names[k]);
    free(names);
}

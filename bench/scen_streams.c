/* scen_streams.c - blocks used on a second stream before they are freed:
 * cca_record_stream marks the use and the free records an event on that
 * stream. Allocators without record_stream (CUB, raw) get what their user
 * has to do instead: record an event on the second stream and make the
 * allocation stream wait for it before the free. */
#include "bench.h"
#include "measure.h"
#include "report_table.h"

#include <stdio.h>

#define STREAMS_SIZE (64u << 10)

typedef struct streams_env {
    cudaStream_t s1, s2;
    cudaEvent_t ev;          /* the caller's event, for allocators without record_stream */
} streams_env_t;

static int one(const bench_alloc_t *a, void *ctx, const streams_env_t *e)
{
    void *p;
    int r = a->ops->malloc(ctx, &p, STREAMS_SIZE, e->s1);
    if (r != BENCH_OK)
        return r;
    if (a->ops->record_stream)
        r = a->ops->record_stream(ctx, p, e->s2);
    else if (cudaEventRecord(e->ev, e->s2) != cudaSuccess ||
             cudaStreamWaitEvent(e->s1, e->ev, 0) != cudaSuccess)
        r = BENCH_ERR;
    int f = a->ops->free(ctx, p);
    return r != BENCH_OK ? r : f;
}

static int loop(const bench_alloc_t *a, void *ctx, const streams_env_t *e, size_t iters)
{
    for (size_t i = 0; i < iters; i++)
        if (one(a, ctx, e) != BENCH_OK)
            return -1;
    return 0;
}

static void timed(const bench_alloc_t *a, const streams_env_t *e, size_t iters,
                  bench_sample_t *out)
{
    char err[160] = "";
    bench_timer_t t;
    void *ctx = a->ops->init(a->conf, err, sizeof err);
    if (!ctx) {
        sample_fail(out, "init: %s", err);
        return;
    }
    if (loop(a, ctx, e, 1) == 0) {
        timer_start(&t);
        if (loop(a, ctx, e, iters) == 0)
            timer_stop(&t, (double)iters, out);
        else
            sample_fail(out, "alloc/record/free failed");
    } else
        sample_fail(out, "alloc/record/free failed");
    a->ops->fini(ctx);
}

static void run(const bench_alloc_t *a, void *arg, size_t iters, bench_sample_t *out)
{
    streams_env_t e = {0};
    (void)arg;
    if (cudaStreamCreate(&e.s1) != cudaSuccess || cudaStreamCreate(&e.s2) != cudaSuccess ||
        cudaEventCreateWithFlags(&e.ev, cudaEventDisableTiming) != cudaSuccess)
        sample_fail(out, "cannot create streams and event");
    else
        timed(a, &e, iters, out);
    if (e.ev)
        cudaEventDestroy(e.ev);
    if (e.s2)
        cudaStreamDestroy(e.s2);
    if (e.s1)
        cudaStreamDestroy(e.s1);
}

static void event_table(const bench_opts_t *o)
{
    char b[2][24];
    printf("\n  events per operation (created, recorded):\n");
    for (size_t i = 0; i < o->n_allocs; i++) {
        const bench_row_t *r = results_find("streams", "record-64KiB", o->allocs[i].label);
        if (!r || r->fig.failed || !r->fig.have_calls)
            continue;
        printf("  %-22s %8s %8s%s\n", r->alloc, fmt_num(b[0], 24, r->fig.calls.event_create),
               fmt_num(b[1], 24, r->fig.calls.event_record),
               o->allocs[i].ops->record_stream ? "" : "   (caller: event record + stream wait)");
    }
}

void scen_streams(const bench_opts_t *o)
{
    printf("\n== streams: alloc on s1, use on s2 (record_stream), free ==\n");
    bench_case_t c = {.scenario = "streams", .name = "record-64KiB", .unit = "ns/op",
                      .run = run, .calib_iters = 64, .max_iters = 2000000};
    bench_figure_t figs[BENCH_MAX_ALLOCS];
    measure_case(&c, o, figs);
    record_case(&c, o, figs);
    for (size_t i = 0; i < o->n_allocs; i++) {
        bench_row_t *r = (bench_row_t *)results_find("streams", c.name, o->allocs[i].label);
        if (r && r->fig.have_calls) {
            results_extra(r, "events_created_per_op", r->fig.calls.event_create);
            results_extra(r, "events_recorded_per_op", r->fig.calls.event_record);
        }
    }
    table_case(stdout, c.scenario, c.name,
               "ns per alloc + record_stream + free (one operation); calls per operation", o);
    event_table(o);
}

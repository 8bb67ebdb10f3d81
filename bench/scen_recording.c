/* scen_recording.c - what recording a trace file costs (cca_trace_start,
 * the trace_file key): cca's default with and without recording, on the
 * 64 KiB pingpong and the mixed workload. The rows go to /dev/null, so
 * the figure is cca's own work (formatting, buffering, one write per
 * 64 KiB) without the disk's. Off, recording costs nothing: the hot path
 * only tests the hook word it tested before (scripts/instructions.sh). */
#include "bench.h"
#include "measure.h"
#include "report_table.h"
#include "workload.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REC_SIZE (64u << 10)
#define REC_LIVE 1000
#define REC_STEPS 65536

static void pingpong(const bench_alloc_t *a, void *arg, size_t iters, bench_sample_t *out)
{
    (void)arg;
    char err[160] = "";
    bench_timer_t t;
    void *ctx = a->ops->init(a->conf, err, sizeof err);
    if (!ctx) {
        sample_fail(out, "init: %s", err);
        return;
    }
    if (pingpong_loop(a->ops, ctx, REC_SIZE, NULL, 12, err, sizeof err) == 0) {
        timer_start(&t);
        if (pingpong_loop(a->ops, ctx, REC_SIZE, NULL, iters, err, sizeof err) == 0)
            timer_stop(&t, (double)iters, out);
        else
            sample_fail(out, "%s", err);
    } else
        sample_fail(out, "%s", err);
    a->ops->fini(ctx);
}

static void mixed(const bench_alloc_t *a, void *arg, size_t iters, bench_sample_t *out)
{
    const mixed_seq_t *m = arg;
    char err[160] = "";
    void **ptrs = calloc(m->live, sizeof *ptrs);
    void *ctx = ptrs ? a->ops->init(a->conf, err, sizeof err) : NULL;
    bench_timer_t t;
    if (!ctx) {
        sample_fail(out, "init: %s", ptrs ? err : "out of host memory");
        free(ptrs);
        return;
    }
    if (mixed_fill(a->ops, ctx, m, ptrs, NULL, err, sizeof err) == 0) {
        timer_start(&t);
        if (mixed_steps(a->ops, ctx, m, ptrs, NULL, iters, err, sizeof err) == 0)
            timer_stop(&t, 2.0 * (double)iters, out);
        else
            sample_fail(out, "%s", err);
    } else
        sample_fail(out, "%s", err);
    mixed_drain(a->ops, ctx, m, ptrs);
    a->ops->fini(ctx);
    free(ptrs);
}

void scen_recording(const bench_opts_t *o)
{
    const bench_alloc_t *base = NULL;
    for (size_t i = 0; i < o->n_allocs && !base; i++)
        if (!strcmp(o->allocs[i].label, "cca:default"))
            base = &o->allocs[i];
    printf("\n== recording: cca's default with a trace file written (to /dev/null) and without ==\n");
    if (!base) {
        printf("  skipped: cca:default is not among the allocators run (--alloc)\n");
        return;
    }
    bench_opts_t two = *o;
    two.allocs[0] = *base;
    two.allocs[1] = *base;
    snprintf(two.allocs[1].label, sizeof two.allocs[1].label, "cca:recording");
    two.allocs[1].conf = "trace_file:/dev/null";
    two.n_allocs = 2;
    mixed_seq_t m;
    if (mixed_seq_make(&m, REC_LIVE, REC_STEPS, 7) != 0) {
        printf("  skipped: out of host memory\n");
        return;
    }
    bench_case_t cases[2] = {
        {.scenario = "recording", .name = "pingpong-64KiB", .unit = "ns/pair", .run = pingpong,
         .calib_iters = 64, .max_iters = 2000000},
        {.scenario = "recording", .name = "mixed-1000-live", .unit = "ns/op", .run = mixed, .arg = &m,
         .calib_iters = 64, .max_iters = REC_STEPS},
    };
    for (int k = 0; k < 2; k++) {
        bench_figure_t figs[BENCH_MAX_ALLOCS];
        measure_case(&cases[k], &two, figs);
        record_case(&cases[k], &two, figs);
        table_case(stdout, cases[k].scenario, cases[k].name,
                   k ? "ns per operation (a free or an allocation)" : "ns per alloc+free pair", &two);
    }
    mixed_seq_free(&m);
}

/* scen_pingpong.c - alloc+free of one size on one stream, and of twelve
 * sizes in turn (512 B << i % 12), the general path. */
#include "bench.h"
#include "measure.h"
#include "report_table.h"
#include "workload.h"

#include <stdio.h>

static const struct { const char *name; size_t size; } sizes[] = {
    {"512B", 512},
    {"64KiB", 64u << 10},
    {"4MiB", 4u << 20},
    {"64MiB", 64u << 20},
    {"12sizes", PINGPONG_12_SIZES},
};

void scen_pingpong_run(const bench_alloc_t *a, void *arg, size_t iters, bench_sample_t *out)
{
    size_t size = *(const size_t *)arg;
    char err[160] = "";
    void *ctx = a->ops->init(a->conf, err, sizeof err);
    bench_timer_t t;
    if (!ctx) {
        sample_fail(out, "init: %s", err);
        return;
    }
    /* Warm-up pairs: the first allocation of a size may go to the device. */
    if (pingpong_loop(a->ops, ctx, size, NULL, 12, err, sizeof err) == 0) {
        timer_start(&t);
        if (pingpong_loop(a->ops, ctx, size, NULL, iters, err, sizeof err) == 0)
            timer_stop(&t, (double)iters, out);
        else
            sample_fail(out, "%s", err);
    } else
        sample_fail(out, "%s", err);
    a->ops->fini(ctx);
}

void scen_pingpong(const bench_opts_t *o)
{
    printf("\n== pingpong: alloc+free of one size on one stream (12sizes: 512 B << i %% 12 in turn) ==\n");
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        bench_case_t c = {.scenario = "pingpong", .unit = "ns/pair", .run = scen_pingpong_run,
                          .arg = (void *)&sizes[i].size, .calib_iters = 64,
                          .max_iters = 2000000};
        bench_figure_t figs[BENCH_MAX_ALLOCS];
        snprintf(c.name, sizeof c.name, "%s", sizes[i].name);
        measure_case(&c, o, figs);
        record_case(&c, o, figs);
        table_case(stdout, c.scenario, c.name, "ns per alloc+free pair; calls per pair", o);
    }
}

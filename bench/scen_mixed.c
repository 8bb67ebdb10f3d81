/* scen_mixed.c - a working set of 1,000 live blocks of log-uniform sizes
 * (512 B .. 64 MiB) with random frees; the same seeded sequence for every
 * allocator. */
#include "bench.h"
#include "measure.h"
#include "report_table.h"
#include "workload.h"

#include <stdio.h>
#include <stdlib.h>

#define MIXED_LIVE 1000
#define MIXED_STEPS 65536
#define MIXED_SEED 0x5eed5eedu

void scen_mixed_run(const bench_alloc_t *a, void *arg, size_t iters, bench_sample_t *out)
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

void scen_mixed(const bench_opts_t *o)
{
    mixed_seq_t m;
    printf("\n== mixed: %d live blocks, sizes log-uniform 512 B..64 MiB, random frees ==\n",
           MIXED_LIVE);
    if (mixed_seq_make(&m, MIXED_LIVE, MIXED_STEPS, MIXED_SEED) != 0) {
        printf("  skipped: out of host memory\n");
        return;
    }
    bench_case_t c = {.scenario = "mixed", .name = "1000-live", .unit = "ns/op", .run = scen_mixed_run,
                      .arg = &m, .calib_iters = 256, .max_iters = 4000000};
    bench_figure_t figs[BENCH_MAX_ALLOCS];
    measure_case(&c, o, figs);
    record_case(&c, o, figs);
    table_case(stdout, c.scenario, c.name,
               "ns per operation (a free or an allocation); calls per operation", o);
    mixed_seq_free(&m);
}

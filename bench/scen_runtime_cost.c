/* scen_runtime_cost.c - what the runtime itself costs per call (the
 * simulator's own cost without its latency model, or the real runtime's),
 * so that a reader sees how much of a peer's time is the runtime's. */
#include "bench.h"
#include "clock.h"
#include "measure.h"
#include "report_table.h"

#include <stdio.h>
#include <stdlib.h>

typedef struct rt_env { cudaStream_t s; cudaEvent_t ev; } rt_env_t;

typedef int (*rt_loop_fn)(const rt_env_t *e, size_t iters);

static int loop_get_device(const rt_env_t *e, size_t iters)
{
    int dev, bad = 0;
    (void)e;
    for (size_t i = 0; i < iters; i++)
        bad |= cudaGetDevice(&dev) != cudaSuccess;
    return bad;
}

static int loop_event_record(const rt_env_t *e, size_t iters)
{
    int bad = 0;
    for (size_t i = 0; i < iters; i++)
        bad |= cudaEventRecord(e->ev, e->s) != cudaSuccess;
    return bad;
}

static int loop_event_query(const rt_env_t *e, size_t iters)
{
    int bad = 0;
    for (size_t i = 0; i < iters; i++)
        bad |= cudaEventQuery(e->ev) != cudaSuccess;
    return bad;
}

static int loop_malloc_free(const rt_env_t *e, size_t iters)
{
    int bad = 0;
    (void)e;
    for (size_t i = 0; i < iters; i++) {
        void *p = NULL;
        bad |= cudaMalloc(&p, 512) != cudaSuccess;
        bad |= cudaFree(p) != cudaSuccess;
    }
    return bad;
}

static const struct { const char *name; rt_loop_fn fn; } loops[] = {
    {"cudaGetDevice", loop_get_device},
    {"cudaEventRecord", loop_event_record},
    {"cudaEventQuery(recorded)", loop_event_query},
    {"cudaMalloc+cudaFree(512B)", loop_malloc_free},
};

static double time_loop(rt_loop_fn fn, const rt_env_t *e, size_t iters, int *bad)
{
    unsigned long long t0 = bench_now_ns();
    *bad |= fn(e, iters);
    return (double)(bench_now_ns() - t0) / (double)iters;
}

static void measure_loop(size_t k, const rt_env_t *e, const bench_opts_t *o)
{
    int bad = 0, n = o->reps;
    double per = time_loop(loops[k].fn, e, 100, &bad);
    double want = per > 0 ? o->target_ns / per : 1e6;
    size_t iters = want < 100 ? 100 : want > 1e7 ? 10000000 : (size_t)want;
    double *v = calloc((size_t)n, sizeof *v);
    for (int r = 0; v && r < n; r++)
        v[r] = time_loop(loops[k].fn, e, iters, &bad);
    bench_row_t *row = results_add("runtime", loops[k].name, "runtime", "ns/call");
    if (bad || !v) {
        row->fig.failed = 1;
        snprintf(row->fig.msg, sizeof row->fig.msg, "a call failed");
    } else
        figure_set(&row->fig, v, (size_t)n);
    free(v);
}

static void print_rows(void)
{
    char b[3][24];
    printf("  %-28s %12s %21s\n", "call", "ns/call", "min..max");
    for (size_t k = 0; k < sizeof loops / sizeof loops[0]; k++) {
        const bench_row_t *r = results_find("runtime", loops[k].name, "runtime");
        if (r->fig.failed) {
            printf("  %-28s FAILED: %s\n", loops[k].name, r->fig.msg);
            continue;
        }
        printf("  %-28s %12s %10s..%-10s\n", loops[k].name, fmt_num(b[0], 24, r->fig.median),
               fmt_num(b[1], 24, r->fig.min), fmt_num(b[2], 24, r->fig.max));
    }
}

void scen_runtime_cost(const bench_opts_t *o)
{
    rt_env_t e = {0};
    printf("\n== runtime: cost of the runtime's own calls (%s, no latency model) ==\n",
           simctl_is_sim() ? "simulator" : "real libcudart");
    if (cudaStreamCreate(&e.s) != cudaSuccess ||
        cudaEventCreateWithFlags(&e.ev, cudaEventDisableTiming) != cudaSuccess ||
        cudaEventRecord(e.ev, e.s) != cudaSuccess) {
        printf("  skipped: cannot create a stream and an event\n");
        return;
    }
    fprintf(stderr, "  runtime cost ...\n");
    for (size_t k = 0; k < sizeof loops / sizeof loops[0]; k++)
        measure_loop(k, &e, o);
    print_rows();
    cudaEventDestroy(e.ev);
    cudaStreamDestroy(e.s);
}

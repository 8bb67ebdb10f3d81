/* scen_xfree.c - the cost of a free made by another thread than the one
 * that allocated (autograd's device thread, a DataLoader pin thread), with
 * no other thread having used the allocator and after 1,000 threads used
 * cudaStreamPerThread with it and exited, against a free by the allocating
 * thread. Only the frees are timed: 4 KiB blocks on one created stream.
 * xfree_count() runs one variant untimed, for counting instructions with
 * callgrind (scripts/instructions.sh). */
#include "bench.h"
#include "clock.h"
#include "measure.h"
#include "report_table.h"
#include "sim_ctl.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define XF_SIZE 4096u
#define XF_EXITED 1000

typedef enum { XF_SAME, XF_CROSS, XF_CROSS_EXITED, XF_N } xf_kind_t;
static const char *const kind_names[XF_N] = { "same-thread", "cross-thread", "cross-thread-1000-exited" };

typedef struct xf_job { const bench_alloc_ops_t *ops; void *ctx; void **ptrs; size_t n; cudaStream_t s; int failed; } xf_job_t;

static void *alloc_all(void *p)
{
    xf_job_t *j = p;
    for (size_t i = 0; i < j->n && !j->failed; i++)
        j->failed = j->ops->malloc(j->ctx, &j->ptrs[i], XF_SIZE, j->s) != BENCH_OK;
    return NULL;
}

static void *touch_and_exit(void *p)
{
    xf_job_t *j = p;
    void *q = NULL;
    if (j->ops->malloc(j->ctx, &q, 512, cudaStreamPerThread) == BENCH_OK) j->ops->free(j->ctx, q);
    return NULL;
}

/* Sets up one variant: the allocator, the exited threads, `n` blocks
 * allocated by this thread (same) or another one (cross). */
static int prepare(const bench_alloc_t *a, xf_kind_t kind, xf_job_t *j, size_t n, char *err, size_t len)
{
    *j = (xf_job_t){ .ops = a->ops, .n = n };
    if (cudaStreamCreate(&j->s) != cudaSuccess) {
        snprintf(err, len, "cudaStreamCreate failed");
        return -1;
    }
    if (!(j->ctx = a->ops->init(a->conf, err, len))) return -1;
    if (kind == XF_CROSS_EXITED)
        for (int i = 0; i < XF_EXITED; i++) {
            pthread_t t;
            if (pthread_create(&t, NULL, touch_and_exit, j) == 0) pthread_join(t, NULL);
        }
    if (!(j->ptrs = calloc(n ? n : 1, sizeof *j->ptrs))) {
        snprintf(err, len, "out of host memory");
        return -1;
    }
    if (kind == XF_SAME) alloc_all(j);
    else {
        pthread_t t;
        pthread_create(&t, NULL, alloc_all, j);
        pthread_join(t, NULL);
    }
    if (j->failed) snprintf(err, len, "allocation failed: %s", bench_ops_error());
    return j->failed ? -1 : 0;
}

static void teardown(const bench_alloc_t *a, xf_job_t *j)
{
    if (j->ctx) a->ops->fini(j->ctx);
    free(j->ptrs);
    if (j->s) cudaStreamDestroy(j->s);
}

typedef struct xf_arg { xf_kind_t kind; } xf_arg_t;

static void run(const bench_alloc_t *a, void *arg, size_t iters, bench_sample_t *out)
{
    const xf_arg_t *x = arg;
    xf_job_t j;
    char err[200] = "";
    if (prepare(a, x->kind, &j, iters, err, sizeof err) != 0) {
        sample_fail(out, "%s", err);
        teardown(a, &j);
        return;
    }
    bench_timer_t t;
    timer_start(&t);
    for (size_t i = 0; i < iters; i++)
        if (a->ops->free(j.ctx, j.ptrs[i]) != BENCH_OK) {
            sample_fail(out, "free failed: %s", bench_ops_error());
            break;
        }
    timer_stop(&t, (double)iters, out);
    teardown(a, &j);
}

int xfree_count(const bench_alloc_t *a, const char *kind, size_t n)
{
    xf_kind_t k = XF_N;
    for (int i = 0; i < XF_N; i++)
        if (!strcmp(kind, kind_names[i])) k = (xf_kind_t)i;
    if (k == XF_N) {
        fprintf(stderr, "xfree: unknown variant '%s' (same-thread, cross-thread, cross-thread-1000-exited)\n", kind);
        return 2;
    }
    xf_job_t j;
    char err[200] = "";
    int rc = prepare(a, k, &j, n, err, sizeof err);
    for (size_t i = 0; rc == 0 && i < n; i++) rc = a->ops->free(j.ctx, j.ptrs[i]) == BENCH_OK ? 0 : 1;
    if (rc) fprintf(stderr, "xfree: %s%s\n", err, bench_ops_error());
    teardown(a, &j);
    printf("xfree %s: %zu frees of %u B by %s\n", kind_names[k], n, XF_SIZE, a->label);
    return rc;
}

void scen_xfree(const bench_opts_t *o)
{
    printf("\n== xfree: frees by another thread than the allocating one (4 KiB blocks, one stream) ==\n");
    size_t n = (size_t)XF_N * o->n_allocs;
    xf_arg_t args[XF_N];
    bench_alloc_t allocs[BENCH_MAX_ALLOCS * XF_N];
    void *argv[BENCH_MAX_ALLOCS * XF_N];
    bench_figure_t figs[BENCH_MAX_ALLOCS * XF_N], per[BENCH_MAX_ALLOCS];
    bench_case_t c = { .scenario = "xfree", .unit = "ns/free", .run = run, .calib_iters = 2000,
                       .max_iters = o->quick ? 20000 : 200000 };
    for (int k = 0; k < XF_N; k++) args[k].kind = (xf_kind_t)k;
    for (size_t i = 0; i < n; i++) {
        allocs[i] = o->allocs[i / XF_N];
        argv[i] = &args[i % XF_N];
    }
    fprintf(stderr, "  xfree ...\n");
    measure_variants(&c, allocs, argv, n, o, figs);
    for (int k = 0; k < XF_N; k++) {
        for (size_t i = 0; i < o->n_allocs; i++) per[i] = figs[i * XF_N + (size_t)k];
        snprintf(c.name, sizeof c.name, "%s", kind_names[k]);
        record_case(&c, o, per);
        table_case(stdout, c.scenario, c.name, "ns per free; runtime calls per free", o);
    }
    printf("\n  cross-thread free / same-thread free, and after 1,000 exited threads / none (goal for cca: <= 1.2x)\n");
    printf("  %-22s %16s %22s\n", "allocator", "cross / same", "1000-exited / none");
    for (size_t i = 0; i < o->n_allocs; i++) {
        const char *label = o->allocs[i].label;
        const bench_row_t *same = results_find("xfree", kind_names[XF_SAME], label);
        bench_row_t *cross = (bench_row_t *)results_find("xfree", kind_names[XF_CROSS], label);
        bench_row_t *exited = (bench_row_t *)results_find("xfree", kind_names[XF_CROSS_EXITED], label);
        double r1 = time_ratio(cross, same), r2 = time_ratio(exited, cross);
        char b1[24], b2[24];
        if (cross) results_extra(cross, "ratio_to_same_thread", r1);
        if (exited) results_extra(exited, "ratio_to_no_exited", r2);
        printf("  %-22s %15sx %21sx\n", label, fmt_num(b1, 24, r1), fmt_num(b2, 24, r2));
    }
}

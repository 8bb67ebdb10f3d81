/* scen_threads.c - pingpong and mixed on two threads sharing one allocator,
 * each thread on its own stream or both on one shared stream, against the
 * same work on one thread: aggregate operations per second; and, where the
 * allocator tells them (cca), its all-locked entries and lock waits per
 * 1,000 operations of the last repetition. */
#include "bench.h"
#include "clock.h"
#include "measure.h"
#include "report_table.h"
#include "workload.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_THREADS 2
#define PP_SIZE (64u << 10)
#define MIXED_LIVE 1000
#define MIXED_STEPS 65536
#define MIXED_SEED 0x5eed5eedu

/* The last repetition's profile of one allocator in one layout. */
typedef struct threads_profile {
    char label[48];
    bench_profile_t d;            /* over the timed work (the second reading's own stream acquisitions included) */
    double ops;
    int have;
} threads_profile_t;

typedef struct threads_arg {
    int mixed;                    /* 0: pingpong of PP_SIZE */
    int n_threads;
    int shared_stream;
    const mixed_seq_t *seqs;      /* [MAX_THREADS], one per thread */
    threads_profile_t prof[BENCH_MAX_ALLOCS];
} threads_arg_t;

static threads_profile_t *profile_slot(threads_arg_t *ta, const char *label)
{
    for (int i = 0; i < BENCH_MAX_ALLOCS; i++)
        if (!ta->prof[i].label[0] || !strcmp(ta->prof[i].label, label)) {
            snprintf(ta->prof[i].label, sizeof ta->prof[i].label, "%s", label);
            return &ta->prof[i];
        }
    return NULL;
}

static void profile_delta(bench_profile_t *d, const bench_profile_t *p0, const bench_profile_t *p1)
{
    d->all_locked = p1->all_locked - p0->all_locked - 1;   /* less the second reading's own entry */
    for (int k = 0; k < BENCH_LOCK_CLASSES; k++) {
        d->acquisitions[k] = p1->acquisitions[k] - p0->acquisitions[k] - (k == 0);
        d->contended[k] = p1->contended[k] - p0->contended[k];
        d->wait_ns_total[k] = p1->wait_ns_total[k] - p0->wait_ns_total[k];
        d->wait_ns_max[k] = p1->wait_ns_max[k];   /* the longest since the allocator began */
    }
}

typedef struct worker {
    const threads_arg_t *arg;
    const bench_alloc_ops_t *ops;
    void *ctx;
    cudaStream_t stream;
    const mixed_seq_t *seq;
    size_t iters;
    pthread_barrier_t *bar;
    unsigned long long t0, t1;
    int failed;
    char msg[160];
} worker_t;

static int prepare(worker_t *w, void **ptrs)
{
    if (w->arg->mixed)
        return mixed_fill(w->ops, w->ctx, w->seq, ptrs, w->stream, w->msg, sizeof w->msg);
    return pingpong_loop(w->ops, w->ctx, PP_SIZE, w->stream, 1, w->msg, sizeof w->msg);
}

static int work(worker_t *w, void **ptrs)
{
    if (w->arg->mixed)
        return mixed_steps(w->ops, w->ctx, w->seq, ptrs, w->stream, w->iters, w->msg,
                           sizeof w->msg);
    return pingpong_loop(w->ops, w->ctx, PP_SIZE, w->stream, w->iters, w->msg, sizeof w->msg);
}

/* Barriers: prepared | go | done. The main thread takes the runtime-call
 * snapshots between them. */
static void *worker_main(void *p)
{
    worker_t *w = p;
    void **ptrs = w->arg->mixed ? calloc(w->seq->live, sizeof *ptrs) : NULL;
    if (w->arg->mixed && !ptrs) {
        snprintf(w->msg, sizeof w->msg, "out of host memory");
        w->failed = 1;
    } else if (prepare(w, ptrs) != 0)
        w->failed = 1;
    pthread_barrier_wait(w->bar);
    pthread_barrier_wait(w->bar);
    w->t0 = bench_now_ns();
    if (!w->failed && work(w, ptrs) != 0)
        w->failed = 1;
    w->t1 = bench_now_ns();
    pthread_barrier_wait(w->bar);
    if (ptrs)
        mixed_drain(w->ops, w->ctx, w->seq, ptrs);
    free(ptrs);
    return NULL;
}

static void finish(worker_t *w, int n, const simctl_calls_t *c0, bench_sample_t *out)
{
    unsigned long long t0 = w[0].t0, t1 = w[0].t1;
    double ops_per_iter = 2.0, ops = 0;
    simctl_calls_t c1;
    simctl_snapshot(&c1);
    for (int i = 0; i < n; i++) {
        if (w[i].failed)
            sample_fail(out, "thread %d: %s", i, w[i].msg);
        t0 = w[i].t0 < t0 ? w[i].t0 : t0;
        t1 = w[i].t1 > t1 ? w[i].t1 : t1;
        ops += ops_per_iter * (double)w[i].iters;
    }
    out->ns = (double)(t1 - t0);
    out->value = out->ns > 0 ? ops / out->ns * 1e3 : 0; /* Mops/s */
    out->have_calls = simctl_is_sim();
    simctl_per_op(c0, &c1, ops, &out->calls);
}

static void run_threads(const bench_alloc_t *a, threads_arg_t *ta, void *ctx,
                        cudaStream_t *streams, size_t iters, bench_sample_t *out)
{
    bench_profile_t p0, p1;
    int profiled = 0;
    worker_t w[MAX_THREADS];
    pthread_t tid[MAX_THREADS];
    pthread_barrier_t bar;
    simctl_calls_t c0;
    int n = ta->n_threads;
    pthread_barrier_init(&bar, NULL, (unsigned)n + 1);
    for (int i = 0; i < n; i++) {
        w[i] = (worker_t){.arg = ta, .ops = a->ops, .ctx = ctx, .seq = &ta->seqs[i],
                          .stream = streams[ta->shared_stream ? 0 : i], .iters = iters,
                          .bar = &bar};
        pthread_create(&tid[i], NULL, worker_main, &w[i]);
    }
    pthread_barrier_wait(&bar);
    simctl_snapshot(&c0);
    if (a->ops->profile)
        profiled = a->ops->profile(ctx, &p0) == BENCH_OK;
    pthread_barrier_wait(&bar);
    pthread_barrier_wait(&bar);
    finish(w, n, &c0, out);
    threads_profile_t *slot = profile_slot(ta, a->label);
    if (profiled && slot && a->ops->profile(ctx, &p1) == BENCH_OK) {
        profile_delta(&slot->d, &p0, &p1);
        slot->ops = 2.0 * (double)iters * n;
        slot->have = 1;
    }
    for (int i = 0; i < n; i++)
        pthread_join(tid[i], NULL);
    pthread_barrier_destroy(&bar);
}

static void run(const bench_alloc_t *a, void *arg, size_t iters, bench_sample_t *out)
{
    threads_arg_t *ta = arg;
    cudaStream_t streams[MAX_THREADS] = {0};
    char err[160] = "";
    for (int i = 0; i < ta->n_threads; i++)
        if (cudaStreamCreate(&streams[i]) != cudaSuccess) {
            sample_fail(out, "cudaStreamCreate failed");
            return;
        }
    void *ctx = a->ops->init(a->conf, err, sizeof err);
    if (ctx) {
        run_threads(a, ta, ctx, streams, iters, out);
        a->ops->fini(ctx);
    } else
        sample_fail(out, "init: %s", err);
    for (int i = 0; i < ta->n_threads; i++)
        cudaStreamDestroy(streams[i]);
}

static const struct { const char *name; int n, shared; } layouts[] = {
    {"1-thread", 1, 0},
    {"2-threads-own-streams", 2, 0},
    {"2-threads-shared-stream", 2, 1},
};

static void ratio_table(const char *work, const bench_opts_t *o)
{
    char base[64], two[64], b1[24], b2[24];
    snprintf(base, sizeof base, "%s/%s", work, layouts[0].name);
    printf("\n  %s: 2-thread aggregate / 1-thread (goal for cca: >= 1.0x)\n", work);
    printf("  %-22s %14s %16s\n", "allocator", "own streams", "shared stream");
    for (size_t i = 0; i < o->n_allocs; i++) {
        const char *label = o->allocs[i].label;
        const bench_row_t *r1 = results_find("threads", base, label);
        double v[2];
        for (int k = 0; k < 2; k++) {
            snprintf(two, sizeof two, "%s/%s", work, layouts[k + 1].name);
            bench_row_t *r2 = (bench_row_t *)results_find("threads", two, label);
            v[k] = time_ratio(r1, r2);   /* r2 ops/s over r1 ops/s */
            if (r2)
                results_extra(r2, "ratio_to_one_thread", v[k]);
        }
        printf("  %-22s %13sx %15sx\n", label, fmt_num(b1, 24, v[0]), fmt_num(b2, 24, v[1]));
    }
}

#define N_LAYOUTS (sizeof layouts / sizeof layouts[0])

/* The allocators' own account of the last repetition, per 1,000 ops. */
static void profile_table(const char *work, const bench_opts_t *o, threads_arg_t *ta)
{
    int any = 0;
    for (size_t l = 0; l < N_LAYOUTS && !any; l++)
        for (int i = 0; i < BENCH_MAX_ALLOCS; i++) any |= ta[l].prof[i].have;
    if (!any)
        return;
    printf("\n  %s: locks, last repetition (per 1,000 operations; waits: acquisitions that waited; longest: since the allocator began)\n", work);
    printf("  %-18s %-24s %10s %12s %12s %13s %12s %12s\n", "allocator", "layout", "all-locked", "stream waits",
           "segment waits", "headroom waits", "waited ms", "longest us");
    for (size_t i = 0; i < o->n_allocs; i++)
        for (size_t l = 0; l < N_LAYOUTS; l++) {
            const threads_profile_t *p = profile_slot(&ta[l], o->allocs[i].label);
            if (!p || !p->have || p->ops <= 0)
                continue;
            double per = 1000.0 / p->ops, waited = 0, longest = 0;
            for (int k = 0; k < BENCH_LOCK_CLASSES; k++) {
                waited += p->d.wait_ns_total[k];
                if (p->d.wait_ns_max[k] > longest) longest = p->d.wait_ns_max[k];
            }
            printf("  %-18s %-24s %10.3f %12.3f %12.3f %13.3f %12.3f %12.1f\n", o->allocs[i].label, layouts[l].name,
                   p->d.all_locked * per, p->d.contended[1] * per, p->d.contended[2] * per, p->d.contended[3] * per,
                   waited / 1e6, longest / 1e3);
            char name[64];
            snprintf(name, sizeof name, "%s/%s", work, layouts[l].name);
            bench_row_t *r = (bench_row_t *)results_find("threads", name, o->allocs[i].label);
            if (r) {
                results_extra(r, "all_locked_per_1000_ops", p->d.all_locked * per);
                results_extra(r, "stream_lock_waits_per_1000_ops", p->d.contended[1] * per);
                results_extra(r, "segment_lock_waits_per_1000_ops", p->d.contended[2] * per);
                results_extra(r, "headroom_lock_waits_per_1000_ops", p->d.contended[3] * per);
                results_extra(r, "allocator_lock_waits_per_1000_ops", p->d.contended[0] * per);
                results_extra(r, "lock_wait_ns_total", waited);
                results_extra(r, "lock_wait_ns_max", longest);
            }
        }
}

/* The three layouts of every allocator are interleaved in each repetition,
 * so that the ratio to one thread compares neighbouring measurements. */
static void measure_work(const mixed_seq_t *seqs, const char *work, const bench_opts_t *o)
{
    size_t n = o->n_allocs * N_LAYOUTS;
    static threads_arg_t ta[N_LAYOUTS];                /* static: the profiles are large */
    static bench_alloc_t allocs[BENCH_MAX_ALLOCS * N_LAYOUTS];
    void *args[BENCH_MAX_ALLOCS * N_LAYOUTS];
    bench_figure_t figs[BENCH_MAX_ALLOCS * N_LAYOUTS], per_layout[BENCH_MAX_ALLOCS];
    bench_case_t c = {.scenario = "threads", .unit = "Mops/s", .higher_is_better = 1,
                      .run = run, .calib_iters = seqs ? 256 : 64, .max_iters = 4000000};
    for (size_t l = 0; l < N_LAYOUTS; l++)
        ta[l] = (threads_arg_t){.mixed = seqs != NULL, .n_threads = layouts[l].n,
                                .shared_stream = layouts[l].shared, .seqs = seqs};   /* no profiles yet */
    for (size_t i = 0; i < n; i++) {
        allocs[i] = o->allocs[i / N_LAYOUTS];
        args[i] = &ta[i % N_LAYOUTS];
    }
    fprintf(stderr, "  threads %s ...\n", work);
    measure_variants(&c, allocs, args, n, o, figs);
    for (size_t l = 0; l < N_LAYOUTS; l++) {
        for (size_t i = 0; i < o->n_allocs; i++)
            per_layout[i] = figs[i * N_LAYOUTS + l];
        snprintf(c.name, sizeof c.name, "%s/%s", work, layouts[l].name);
        record_case(&c, o, per_layout);
        table_case(stdout, c.scenario, c.name,
                   "aggregate million operations (allocations + frees) per second; calls per op",
                   o);
    }
    ratio_table(work, o);
    profile_table(work, o, ta);
}

void scen_threads(const bench_opts_t *o)
{
    mixed_seq_t seqs[MAX_THREADS];
    printf("\n== threads: one allocator, 1 thread vs 2 threads (own streams / one shared stream) ==\n");
    measure_work(NULL, "pingpong-64KiB", o);
    for (int i = 0; i < MAX_THREADS; i++)
        if (mixed_seq_make(&seqs[i], MIXED_LIVE, MIXED_STEPS, MIXED_SEED + (uint64_t)i) != 0) {
            printf("  mixed skipped: out of host memory\n");
            return;
        }
    measure_work(seqs, "mixed-1000-live", o);
    for (int i = 0; i < MAX_THREADS; i++)
        mixed_seq_free(&seqs[i]);
}

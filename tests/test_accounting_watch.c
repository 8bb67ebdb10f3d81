/* test_accounting_watch.c - threshold watches (crossings counted exactly,
 * in order, on the causing thread, outside the lock) and measurement scopes
 * (nested, overlapping across threads), and the hooks flag they leave. */
#include <pthread.h>
#include <sched.h>
#include "acct_util.h"
#include "internal.h"

static void setup(void) { cca_sim_reset(); }
TestSuite(watch, .init = setup, .timeout = 30);

typedef struct event { int tag; cca_watch_kind_t which; size_t now; int rising; pthread_t thread; } event_t;

typedef struct log {
    cca_allocator_t *a;
    event_t ev[64];
    int n;
    void *extra;                                      /* allocated from inside a callback */
} log_t;

typedef struct tag { log_t *log; int tag; } tag_t;

static void on_cross(void *arg, cca_watch_kind_t which, size_t now, int rising)
{
    tag_t *t = arg;
    cr_assert_lt(t->log->n, 64);
    t->log->ev[t->log->n++] = (event_t){ t->tag, which, now, rising, pthread_self() };
    cca_stats_t s;
    cr_assert_eq(cca_get_stats(t->log->a, &s), CCA_OK, "the lock is not held in the callback");
}

static void expect(const log_t *l, int i, int tag, int rising, size_t now)
{
    cr_assert_lt(i, l->n, "event %d missing (%d events)", i, l->n);
    cr_assert_eq(l->ev[i].tag, tag, "event %d: tag %d, expected %d", i, l->ev[i].tag, tag);
    cr_assert_eq(l->ev[i].rising, rising, "event %d: rising %d", i, l->ev[i].rising);
    cr_assert_eq(l->ev[i].now, now, "event %d: now %zu, expected %zu", i, l->ev[i].now, now);
}

Test(watch, threshold_crossings_counted_exactly)
{
    cca_allocator_t *a = make_alloc("");
    log_t l = { .a = a };
    tag_t t = { &l, 1 };
    uint64_t id;
    cr_assert_eq(cca_watch_threshold(a, CCA_WATCH_ALLOCATED, 10 * MiB, on_cross, &t, &id), CCA_OK);
    void *p[3];
    for (int i = 0; i < 3; i++) p[i] = alloc_ok(a, 4 * MiB, NULL);   /* 4, 8, 12 MiB */
    cr_assert_eq(l.n, 1);
    expect(&l, 0, 1, 1, 12 * MiB);
    cr_assert_eq(l.ev[0].which, CCA_WATCH_ALLOCATED);
    free_ok(a, p[2]);                                 /* 8 MiB */
    expect(&l, 1, 1, 0, 8 * MiB);
    p[2] = alloc_ok(a, 2 * MiB, NULL);                /* exactly 10 MiB: not above */
    cr_assert_eq(l.n, 2);
    void *q = alloc_ok(a, 512, NULL);
    expect(&l, 2, 1, 1, 10 * MiB + 512);
    free_ok(a, q);
    for (int i = 0; i < 3; i++) free_ok(a, p[i]);
    cr_assert_eq(l.n, 4);
    expect(&l, 3, 1, 0, 10 * MiB);
    cr_assert_eq(cca_unwatch(a, id), CCA_OK);
    free_ok(a, alloc_ok(a, 20 * MiB, NULL));
    cr_assert_eq(l.n, 4, "nothing after cca_unwatch");
    finish(a);
}

Test(watch, crossings_delivered_in_the_order_they_happened)
{
    cca_allocator_t *a = make_alloc("");
    log_t l = { .a = a };
    tag_t t[4] = { { &l, 3 }, { &l, 5 }, { &l, 1 }, { &l, 10 } };
    size_t at[4] = { 3 * MiB, 5 * MiB, 1 * MiB, 10 * MiB };
    uint64_t id[4];
    for (int i = 0; i < 3; i++) cr_assert_eq(cca_watch_threshold(a, CCA_WATCH_ALLOCATED, at[i], on_cross, &t[i], &id[i]), CCA_OK);
    cr_assert_eq(cca_watch_threshold(a, CCA_WATCH_RESERVED, at[3], on_cross, &t[3], &id[3]), CCA_OK);
    void *p = alloc_ok(a, 6 * MiB, NULL);             /* a 20 MiB segment first, then the block */
    cr_assert_eq(l.n, 4);
    expect(&l, 0, 10, 1, 20 * MiB);
    cr_assert_eq(l.ev[0].which, CCA_WATCH_RESERVED);
    expect(&l, 1, 1, 1, 6 * MiB);
    expect(&l, 2, 3, 1, 6 * MiB);
    expect(&l, 3, 5, 1, 6 * MiB);
    free_ok(a, p);
    expect(&l, 4, 5, 0, 0);
    expect(&l, 5, 3, 0, 0);
    expect(&l, 6, 1, 0, 0);
    cr_assert_eq(cca_empty_cache(a), CCA_OK);
    cr_assert_eq(l.n, 8);
    expect(&l, 7, 10, 0, 0);
    for (int i = 0; i < 4; i++) cr_assert_eq(cca_unwatch(a, id[i]), CCA_OK);
    finish(a);
}

/* cca_watch: the callback takes its argument last; mixed with
 * cca_watch_threshold's, the crossings come in one order. */
static void on_cross_last(cca_watch_kind_t which, size_t now, int rising, void *arg)
{
    on_cross(arg, which, now, rising);
}

Test(watch, cca_watch_takes_the_argument_last_in_the_same_order)
{
    cca_allocator_t *a = make_alloc("");
    log_t l = { .a = a };
    tag_t t[2] = { { &l, 3 }, { &l, 5 } };
    uint64_t id[2];
    cr_assert_eq(cca_watch(a, CCA_WATCH_ALLOCATED, 3 * MiB, on_cross_last, &t[0], &id[0]), CCA_OK);
    cr_assert_eq(cca_watch_threshold(a, CCA_WATCH_ALLOCATED, 5 * MiB, on_cross, &t[1], &id[1]), CCA_OK);
    cr_assert_eq(cca_watch(NULL, CCA_WATCH_ALLOCATED, 1, on_cross_last, NULL, &id[0]), CCA_ERROR_INVALID_ARGUMENT);
    cr_assert_eq(cca_watch(a, CCA_WATCH_ALLOCATED, 1, NULL, NULL, &id[0]), CCA_ERROR_INVALID_ARGUMENT);
    cr_assert_eq(cca_watch(a, CCA_WATCH_ALLOCATED, 1, on_cross_last, NULL, NULL), CCA_ERROR_INVALID_ARGUMENT);
    cr_assert(strstr(cca_last_error_string(), "cca_watch: id is NULL") != NULL, "%s", cca_last_error_string());
    cr_assert_eq(cca_watch(a, (cca_watch_kind_t)7, 1, on_cross_last, NULL, &id[0]), CCA_ERROR_INVALID_ARGUMENT);
    void *p = alloc_ok(a, 6 * MiB, NULL);
    cr_assert_eq(l.n, 2);
    expect(&l, 0, 3, 1, 6 * MiB);
    expect(&l, 1, 5, 1, 6 * MiB);
    free_ok(a, p);
    expect(&l, 2, 5, 0, 0);
    expect(&l, 3, 3, 0, 0);
    for (int i = 0; i < 2; i++) cr_assert_eq(cca_unwatch(a, id[i]), CCA_OK);
    free_ok(a, alloc_ok(a, 6 * MiB, NULL));
    cr_assert_eq(l.n, 4, "nothing after cca_unwatch");
    finish(a);
}

static void allocate_more(void *arg, cca_watch_kind_t which, size_t now, int rising)
{
    on_cross(arg, which, now, rising);
    tag_t *t = arg;
    if (rising && !t->log->extra) t->log->extra = alloc_ok(t->log->a, 4 * MiB, NULL);
}

Test(watch, callback_may_allocate_and_cross_again)
{
    cca_allocator_t *a = make_alloc("");
    log_t l = { .a = a };
    tag_t first = { &l, 1 }, second = { &l, 2 };
    uint64_t id1, id2;
    cr_assert_eq(cca_watch_threshold(a, CCA_WATCH_ALLOCATED, 1 * MiB, allocate_more, &first, &id1), CCA_OK);
    cr_assert_eq(cca_watch_threshold(a, CCA_WATCH_ALLOCATED, 5 * MiB, on_cross, &second, &id2), CCA_OK);
    void *p = alloc_ok(a, 2 * MiB, NULL);
    cr_assert_eq(l.n, 2);
    expect(&l, 0, 1, 1, 2 * MiB);
    expect(&l, 1, 2, 1, 6 * MiB);
    free_ok(a, l.extra);
    free_ok(a, p);
    cr_assert_eq(l.n, 4);
    expect(&l, 2, 2, 0, 2 * MiB);
    expect(&l, 3, 1, 0, 0);
    finish(a);
}

/* A stream that dies between a crossing and its delivery: a thread caches
 * a 20 MiB segment on its per-thread stream; the main thread's allocation
 * crosses x (25 MiB) and w (30 MiB); x's callback lets the thread exit, so
 * the liveness check before w's delivery returns the thread's segment and
 * queues both falling crossings. They come after w's rising one (not from
 * a delivery nested inside that check), so each watch sees its crossings
 * in order. */
typedef struct exiter { cca_allocator_t *a; pthread_t t; pthread_mutex_t mu; pthread_cond_t cv; bool go; } exiter_t;
static exiter_t ex = { .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER };

static void *cache_then_exit(void *arg)
{
    exiter_t *e = arg;
    free_ok(e->a, alloc_ok(e->a, 20 * MiB, cudaStreamPerThread));
    pthread_mutex_lock(&e->mu);
    while (!e->go) pthread_cond_wait(&e->cv, &e->mu);
    pthread_mutex_unlock(&e->mu);
    return NULL;                                      /* its stream dies with it */
}

static void let_it_exit(void *arg, cca_watch_kind_t which, size_t now, int rising)
{
    on_cross(arg, which, now, rising);
    if (!rising) return;
    pthread_mutex_lock(&ex.mu);
    ex.go = true;
    pthread_cond_signal(&ex.cv);
    pthread_mutex_unlock(&ex.mu);
    pthread_join(ex.t, NULL);                         /* its key destructors ran: the stream is dying */
}

Test(watch, a_stream_dying_before_a_delivery_keeps_the_crossings_in_order)
{
    cca_allocator_t *a = make_alloc("");
    ex.a = a;
    ex.go = false;
    cr_assert_eq(pthread_create(&ex.t, NULL, cache_then_exit, &ex), 0);
    while (stats_of(a).reserved_bytes[CCA_POOL_ALL].current != (int64_t)(20 * MiB)) sched_yield();
    log_t l = { .a = a };
    tag_t x = { &l, 1 }, w = { &l, 2 };
    uint64_t ix, iw;
    cr_assert_eq(cca_watch_threshold(a, CCA_WATCH_RESERVED, 25 * MiB, let_it_exit, &x, &ix), CCA_OK);
    cr_assert_eq(cca_watch_threshold(a, CCA_WATCH_RESERVED, 30 * MiB, on_cross, &w, &iw), CCA_OK);
    void *p = alloc_ok(a, 20 * MiB, NULL);            /* 40 MiB: both rise */
    cr_assert_eq(l.n, 4, "%d crossings", l.n);
    expect(&l, 0, 1, 1, 40 * MiB);
    expect(&l, 1, 2, 1, 40 * MiB);
    expect(&l, 2, 2, 0, 20 * MiB);                   /* falling: down through the higher threshold first */
    expect(&l, 3, 1, 0, 20 * MiB);
    cr_assert_eq(stats_of(a).reserved_bytes[CCA_POOL_ALL].current, (int64_t)(20 * MiB));
    free_ok(a, p);
    cr_assert_eq(cca_unwatch(a, ix), CCA_OK);
    cr_assert_eq(cca_unwatch(a, iw), CCA_OK);
    finish(a);
}

static void *alloc_30(void *arg)
{
    log_t *l = arg;
    free_ok(l->a, alloc_ok(l->a, 30 * MiB, NULL));
    return NULL;
}

Test(watch, delivered_on_the_thread_that_crossed)
{
    cca_allocator_t *a = make_alloc("");
    log_t l = { .a = a };
    tag_t t = { &l, 7 };
    uint64_t id;
    cr_assert_eq(cca_watch_threshold(a, CCA_WATCH_ALLOCATED, 16 * MiB, on_cross, &t, &id), CCA_OK);
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, alloc_30, &l), 0);
    cr_assert_eq(pthread_join(th, NULL), 0);
    cr_assert_eq(l.n, 2);
    cr_assert(pthread_equal(l.ev[0].thread, th) && pthread_equal(l.ev[1].thread, th));
    cr_assert_eq(cca_unwatch(a, id), CCA_OK);
    finish(a);
}

Test(watch, nested_scopes_peaks_and_totals)
{
    cca_allocator_t *a = make_alloc("");
    uint64_t outer, inner;
    cr_assert_eq(cca_scope_begin(a, &outer), CCA_OK);
    void *p8 = alloc_ok(a, 8 * MiB, NULL);            /* allocated 8, reserved 20 */
    cr_assert_eq(cca_scope_begin(a, &inner), CCA_OK);
    cr_assert_neq(inner, outer);
    void *p16 = alloc_ok(a, 16 * MiB, NULL);          /* allocated 24, reserved 36 */
    free_ok(a, p16);
    cca_scope_result_t r;
    cr_assert_eq(cca_scope_end(a, inner, &r), CCA_OK);
    cr_assert_eq(r.peak_allocated, 24 * MiB);
    cr_assert_eq(r.peak_reserved, 36 * MiB);
    cr_assert_eq(r.allocated_bytes, 16 * MiB);
    cr_assert_eq(r.allocations, 1);
    cr_assert_eq(r.freed_bytes, 16 * MiB);
    cr_assert_eq(r.frees, 1);
    cr_assert_eq(cca_reset_accumulated_stats(a), CCA_OK);   /* scopes keep their own totals */
    cr_assert_eq(cca_empty_cache(a), CCA_OK);               /* reserved 20 */
    void *p1 = alloc_ok(a, 1 * MiB, NULL);                  /* small: reserved 22, allocated 9 */
    uint64_t late;
    cr_assert_eq(cca_scope_begin(a, &late), CCA_OK);
    free_ok(a, p1);
    cr_assert_eq(cca_scope_end(a, outer, &r), CCA_OK);
    cr_assert_eq(r.peak_allocated, 24 * MiB);
    cr_assert_eq(r.peak_reserved, 36 * MiB);
    cr_assert_eq(r.allocated_bytes, 25 * MiB);
    cr_assert_eq(r.allocations, 3);
    cr_assert_eq(r.freed_bytes, 17 * MiB);
    cr_assert_eq(r.frees, 2);
    cr_assert_eq(cca_scope_end(a, late, &r), CCA_OK);
    cr_assert_eq(r.peak_allocated, 9 * MiB, "a scope's peak starts at the figures of its begin");
    cr_assert_eq(r.peak_reserved, 22 * MiB);
    cr_assert_eq(r.allocations, 0);
    cr_assert_eq(r.frees, 1);
    cr_assert_eq(cca_scope_end(a, outer, &r), CCA_ERROR_INVALID_ARGUMENT, "closed already");
    free_ok(a, p8);
    finish(a);
}

typedef struct overlap { cca_allocator_t *a; uint64_t token; pthread_barrier_t *go; } overlap_t;

static void *scope_thread(void *arg)
{
    overlap_t *o = arg;
    cr_assert_eq(cca_scope_begin(o->a, &o->token), CCA_OK);
    pthread_barrier_wait(o->go);                      /* the main thread allocates now */
    pthread_barrier_wait(o->go);
    return NULL;
}

Test(watch, scopes_overlap_across_threads)
{
    cca_allocator_t *a = make_alloc("");
    pthread_barrier_t go;
    pthread_barrier_init(&go, NULL, 2);
    overlap_t o = { a, 0, &go };
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, scope_thread, &o), 0);
    pthread_barrier_wait(&go);
    uint64_t mine;
    cr_assert_eq(cca_scope_begin(a, &mine), CCA_OK);
    void *p = alloc_ok(a, 30 * MiB, NULL);
    cca_scope_result_t r;
    cr_assert_eq(cca_scope_end(a, mine, &r), CCA_OK);
    free_ok(a, p);
    pthread_barrier_wait(&go);
    cr_assert_eq(pthread_join(th, NULL), 0);
    cr_assert_eq(r.peak_allocated, 30 * MiB);
    cr_assert_eq(cca_scope_end(a, o.token, &r), CCA_OK, "a scope may end on another thread");
    cr_assert_eq(r.peak_allocated, 30 * MiB, "the peak counts every thread");
    cr_assert_eq(r.peak_reserved, 30 * MiB);
    cr_assert_eq(r.allocations, 1);
    cr_assert_eq(r.frees, 1);
    pthread_barrier_destroy(&go);
    finish(a);
}

static int hooks_of(cca_allocator_t *a) { return atomic_load(&a->hooks); }

static void noop(void *arg, cca_watch_kind_t which, size_t now, int rising) { (void)arg; (void)which; (void)now; (void)rising; }
static void noop_oom(const cca_oom_report_t *r, void *arg) { (void)r; (void)arg; }

Test(watch, hooks_flag_only_while_something_watches)
{
    cca_allocator_t *a = make_alloc("");
    cr_assert_eq(hooks_of(a), 0);
    uint64_t id, tok;
    cr_assert_eq(cca_watch_threshold(a, CCA_WATCH_RESERVED, 1, noop, NULL, &id), CCA_OK);
    cr_assert_eq(cca_scope_begin(a, &tok), CCA_OK);
    cr_assert_eq(cca_set_oom_callback(a, noop_oom, NULL), CCA_OK);
    cr_assert_neq(hooks_of(a), 0);
    cr_assert_eq(cca_unwatch(a, id), CCA_OK);
    cr_assert_eq(cca_scope_end(a, tok, NULL), CCA_OK);
    cr_assert_eq(hooks_of(a), 0, "an OOM callback needs no hook: the OOM path delivers it");
    cr_assert_eq(cca_set_oom_callback(a, NULL, NULL), CCA_OK);
    cr_assert_eq(hooks_of(a), 0);
    finish(a);
}

Test(watch, bad_input_leaves_allocator_usable)
{
    cca_allocator_t *a = make_alloc("");
    uint64_t id;
    cr_assert_eq(cca_watch_threshold(NULL, CCA_WATCH_ALLOCATED, 1, noop, NULL, &id), CCA_ERROR_INVALID_ARGUMENT);
    cr_assert_eq(cca_watch_threshold(a, CCA_WATCH_ALLOCATED, 1, NULL, NULL, &id), CCA_ERROR_INVALID_ARGUMENT);
    cr_assert_eq(cca_watch_threshold(a, CCA_WATCH_ALLOCATED, 1, noop, NULL, NULL), CCA_ERROR_INVALID_ARGUMENT);
    cr_assert_eq(cca_watch_threshold(a, (cca_watch_kind_t)7, 1, noop, NULL, &id), CCA_ERROR_INVALID_ARGUMENT);
    cr_assert_eq(cca_unwatch(a, 12345), CCA_ERROR_INVALID_ARGUMENT);
    cr_assert_eq(cca_unwatch(NULL, 1), CCA_ERROR_INVALID_ARGUMENT);
    cr_assert_eq(cca_scope_begin(a, NULL), CCA_ERROR_INVALID_ARGUMENT);
    cr_assert_eq(cca_scope_begin(NULL, &id), CCA_ERROR_INVALID_ARGUMENT);
    cr_assert_eq(cca_scope_end(a, 99, NULL), CCA_ERROR_INVALID_ARGUMENT);
    uint64_t tok;
    cr_assert_eq(cca_scope_begin(a, &tok), CCA_OK);
    cr_assert_eq(cca_unwatch(a, tok), CCA_ERROR_INVALID_ARGUMENT, "a scope token is not a watch id");
    cr_assert_eq(cca_scope_end(a, tok, NULL), CCA_OK);
    cr_assert_eq(hooks_of(a), 0);
    free_ok(a, alloc_ok(a, 100, NULL));
    finish(a);
}

typedef struct churn { cca_allocator_t *a; uint64_t seed; int mallocs, frees; } churn_t;

static void *churn_thread(void *arg)
{
    churn_t *c = arg;
    void *live[16] = { 0 };
    for (int i = 0; i < 4000; i++) {
        c->seed = c->seed * 6364136223846793005ull + 1442695040888963407ull;
        int slot = (int)(c->seed >> 60);
        if (live[slot]) {
            free_ok(c->a, live[slot]);
            live[slot] = NULL;
            c->frees++;
        } else {
            live[slot] = alloc_ok(c->a, ((c->seed >> 20) % 4096 + 1) * 1024, NULL);
            c->mallocs++;
        }
    }
    for (int i = 0; i < 16; i++)
        if (live[i]) { free_ok(c->a, live[i]); c->frees++; }
    return NULL;
}

static _Atomic int rises, falls;
static void count_cross(void *arg, cca_watch_kind_t which, size_t now, int rising)
{
    (void)arg; (void)which; (void)now;
    if (rising) rises++;
    else falls++;
}

Test(watch, threads_churning_keep_exact_counts)
{
    cca_allocator_t *a = make_alloc("");
    uint64_t id, tok;
    cr_assert_eq(cca_watch_threshold(a, CCA_WATCH_ALLOCATED, 24 * MiB, count_cross, NULL, &id), CCA_OK);
    cr_assert_eq(cca_scope_begin(a, &tok), CCA_OK);
    churn_t c[4];
    pthread_t th[4];
    for (int i = 0; i < 4; i++) {
        c[i] = (churn_t){ a, (uint64_t)i + 1, 0, 0 };
        cr_assert_eq(pthread_create(&th[i], NULL, churn_thread, &c[i]), 0);
    }
    int mallocs = 0;
    for (int i = 0; i < 4; i++) {
        cr_assert_eq(pthread_join(th[i], NULL), 0);
        mallocs += c[i].mallocs;
        cr_assert_eq(c[i].mallocs, c[i].frees);
    }
    cca_scope_result_t r;
    cr_assert_eq(cca_scope_end(a, tok, &r), CCA_OK);
    cr_assert_eq(r.allocations, (uint64_t)mallocs);
    cr_assert_eq(r.frees, (uint64_t)mallocs);
    cr_assert_eq(r.allocated_bytes, r.freed_bytes);
    cca_stats_t s = stats_of(a);
    cr_assert_eq((int64_t)r.peak_allocated, s.allocated_bytes[CCA_POOL_ALL].peak, "opened before any allocation");
    cr_assert_eq((int64_t)r.peak_reserved, s.reserved_bytes[CCA_POOL_ALL].peak);
    cr_assert_gt(rises, 0);
    cr_assert_eq(rises, falls, "every rise fell back: all memory was freed");
    cr_assert_eq(cca_unwatch(a, id), CCA_OK);
    finish(a);
}

/* ---- notices: queued watches and OOM reports for a delivery thread ---- */

static void drain_notices(void)
{
    while (cca_notice_wait(0, NULL, NULL, NULL, NULL, NULL, NULL) != CCA_NOTICE_NONE) {}
}

static void expect_notice(uint64_t id, int rising, size_t bytes, size_t threshold, cca_watch_kind_t which)
{
    int device = -1, r = -1;
    uint64_t got = 0;
    cca_watch_kind_t w = (cca_watch_kind_t)-1;
    size_t th = 0, now = 0;
    cr_assert_eq(cca_notice_wait(1000, &device, &got, &w, &th, &now, &r), CCA_NOTICE_WATCH, "a notice is queued");
    cr_assert_eq(device, 0);
    cr_assert_eq(got, id, "watch id %llu, expected %llu", (unsigned long long)got, (unsigned long long)id);
    cr_assert_eq(r, rising);
    cr_assert_eq(now, bytes, "bytes %zu, expected %zu", now, bytes);
    cr_assert_eq(th, threshold);
    cr_assert_eq(w, which);
}

Test(watch, queued_crossings_become_notices_in_order)
{
    drain_notices();
    cca_allocator_t *a = make_alloc("");
    uint64_t lo, hi;
    cr_assert_eq(cca_watch_threshold_queued(a, CCA_WATCH_ALLOCATED, 6 * MiB, &lo), CCA_OK);
    cr_assert_eq(cca_watch_threshold_queued(a, CCA_WATCH_ALLOCATED, 3 * MiB, &hi), CCA_OK);
    cr_assert_eq(cca_notice_pending(NULL, NULL), 0u);
    void *p = alloc_ok(a, 8 * MiB, NULL);             /* crosses 3 MiB, then 6 MiB, in one call */
    cr_assert_eq(cca_notice_pending(NULL, NULL), 2u, "queued by the allocating call, nothing called");
    expect_notice(hi, 1, 8 * MiB, 3 * MiB, CCA_WATCH_ALLOCATED);
    expect_notice(lo, 1, 8 * MiB, 6 * MiB, CCA_WATCH_ALLOCATED);
    cr_assert_eq(cca_unwatch(a, lo), CCA_OK);
    free_ok(a, p);                                    /* only the remaining watch falls back */
    expect_notice(hi, 0, 0, 3 * MiB, CCA_WATCH_ALLOCATED);
    cr_assert_eq(cca_notice_wait(0, NULL, NULL, NULL, NULL, NULL, NULL), CCA_NOTICE_NONE, "nothing more");
    uint64_t queued = 0, dropped = 1;
    cca_notice_pending(&queued, &dropped);
    cr_assert_geq(queued, 3u);
    cr_assert_eq(dropped, 0u);
    cr_assert_eq(cca_watch_threshold_queued(a, (cca_watch_kind_t)7, 1, &lo), CCA_ERROR_INVALID_ARGUMENT);
    cr_assert_eq(cca_watch_threshold_queued(NULL, CCA_WATCH_ALLOCATED, 1, &lo), CCA_ERROR_INVALID_ARGUMENT);
    cr_assert_eq(cca_watch_threshold_queued(a, CCA_WATCH_ALLOCATED, 1, NULL), CCA_ERROR_INVALID_ARGUMENT);
    finish(a);
}

/* Two allocators on one device number their watches alike: a notice
 * names its allocator (cca_notice_take), and the old call still works. */
Test(watch, notices_name_their_allocator)
{
    drain_notices();
    cca_allocator_t *a = make_alloc(""), *b = make_alloc("");
    cr_assert_neq(cca_allocator_id(a), cca_allocator_id(b));
    cr_assert_neq(cca_allocator_id(a), 0u);
    cr_assert_eq(cca_allocator_id(NULL), 0u);
    uint64_t ia, ib;
    cr_assert_eq(cca_watch_threshold_queued(a, CCA_WATCH_ALLOCATED, 1 * MiB, &ia), CCA_OK);
    cr_assert_eq(cca_watch_threshold_queued(b, CCA_WATCH_ALLOCATED, 1 * MiB, &ib), CCA_OK);
    cr_assert_eq(ia, ib, "each allocator numbers its own watches");
    void *pb = alloc_ok(b, 2 * MiB, NULL), *pa = alloc_ok(a, 3 * MiB, NULL);
    cr_assert_eq(cca_oom_notices(a, 1), CCA_OK);
    cca_sim_set_capacity(0, 64 * MiB);
    void *big = NULL;
    cr_assert_eq(cca_malloc(a, &big, 100 * MiB, NULL), CCA_ERROR_OUT_OF_MEMORY);
    cca_notice_t n;
    memset(&n, 0xAB, sizeof n);
    cr_assert_eq(cca_notice_take(0, &n), CCA_NOTICE_WATCH);
    cr_assert_eq(n.kind, CCA_NOTICE_WATCH);
    cr_assert_eq(n.allocator, cca_allocator_id(b), "b's crossing came first");
    cr_assert_eq((n.device == 0) + (n.id == ib) + (n.which == CCA_WATCH_ALLOCATED) + (n.rising == 1), 4);
    cr_assert_eq((n.threshold == 1 * MiB) + (n.bytes == 2 * MiB), 2);
    cr_assert_eq(cca_notice_take(0, &n), CCA_NOTICE_WATCH);
    cr_assert_eq(n.allocator, cca_allocator_id(a));
    cr_assert_eq((n.id == ia) + (n.bytes == 3 * MiB), 2);
    cr_assert_eq(cca_notice_take(0, &n), CCA_NOTICE_OOM);
    cr_assert_eq(n.allocator, cca_allocator_id(a));
    cr_assert_eq(n.id, 1u, "the report's seq");
    memset(&n, 0xAB, sizeof n);
    cr_assert_eq(cca_notice_take(0, &n), CCA_NOTICE_NONE);
    cr_assert_eq((n.kind == CCA_NOTICE_NONE) + (n.allocator == 0) + (n.bytes == 0), 3, "none: all zero");
    cr_assert_eq(cca_notice_take_sized(0, &n, 8), CCA_NOTICE_NONE, "too small to be one: nothing taken");
    cr_assert_eq(cca_notice_take(0, NULL), CCA_NOTICE_NONE);
    free_ok(a, pa);                                   /* both fall back: the old call reads them */
    free_ok(b, pb);
    uint64_t id = 9;
    int rising = 9;
    cr_assert_eq(cca_notice_wait(0, NULL, &id, NULL, NULL, NULL, &rising), CCA_NOTICE_WATCH);
    cr_assert_eq((id == ia) + (rising == 0), 2);
    cr_assert_eq(cca_notice_wait(0, NULL, &id, NULL, NULL, NULL, &rising), CCA_NOTICE_WATCH);
    cr_assert_eq(cca_oom_notices(a, 0), CCA_OK);
    check_ok(b);
    cca_destroy(b);
    finish(a);
}

static void *notice_waiter(void *arg)
{
    int *kind = arg;
    *kind = (int)cca_notice_wait(-1, NULL, NULL, NULL, NULL, NULL, NULL);
    return NULL;
}

Test(watch, notice_wait_blocks_until_a_crossing_and_times_out)
{
    drain_notices();
    cca_allocator_t *a = make_alloc("");
    cr_assert_eq(cca_notice_wait(30, NULL, NULL, NULL, NULL, NULL, NULL), CCA_NOTICE_NONE, "times out empty");
    uint64_t id;
    cr_assert_eq(cca_watch_threshold_queued(a, CCA_WATCH_RESERVED, 1 * MiB, &id), CCA_OK);
    int kind = -1;
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, notice_waiter, &kind), 0);
    void *p = alloc_ok(a, 512, NULL);                 /* reserves a 2 MiB segment: crosses 1 MiB */
    pthread_join(t, NULL);
    cr_assert_eq(kind, CCA_NOTICE_WATCH);
    free_ok(a, p);
    cr_assert_eq(cca_empty_cache(a), CCA_OK);          /* reserved falls back to 0 */
    expect_notice(id, 0, 0, 1 * MiB, CCA_WATCH_RESERVED);
    finish(a);
}

Test(watch, oom_reports_become_notices)
{
    drain_notices();
    cca_sim_set_capacity(0, 64 * MiB);
    cca_allocator_t *a = make_alloc("");
    cr_assert_eq(cca_oom_notices(NULL, 1), CCA_ERROR_INVALID_ARGUMENT);
    cr_assert_eq(cca_oom_notices(a, 1), CCA_OK);
    void *p = NULL;
    cr_assert_eq(cca_malloc(a, &p, 128 * MiB, NULL), CCA_ERROR_OUT_OF_MEMORY);
    int device = -1;
    uint64_t seq = 0;
    cr_assert_eq(cca_notice_wait(1000, &device, &seq, NULL, NULL, NULL, NULL), CCA_NOTICE_OOM);
    cca_oom_report_t r;
    cr_assert_eq(cca_last_oom_report(a, &r), CCA_OK);
    cr_assert_eq(seq, r.seq, "the notice names the report");
    cr_assert_eq(device, 0);
    cr_assert_eq(cca_oom_notices(a, 0), CCA_OK);
    cr_assert_eq(cca_malloc(a, &p, 128 * MiB, NULL), CCA_ERROR_OUT_OF_MEMORY);
    cr_assert_eq(cca_notice_pending(NULL, NULL), 0u, "off again");
    finish(a);
}

/* Threads racing across one queued threshold: the notices alternate
 * rising and falling, as the figure did, whichever thread crossed. */
static cca_allocator_t *race_a;

static void *race_worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < 20000; i++) {
        void *p = NULL;
        if (cca_malloc(race_a, &p, 512, NULL) != CCA_OK || cca_free(race_a, p) != CCA_OK) return arg ? arg : (void *)1;
    }
    return NULL;
}

Test(watch, queued_crossings_of_racing_threads_stay_in_order)
{
    race_a = make_alloc("");
    while (cca_notice_wait(0, NULL, NULL, NULL, NULL, NULL, NULL) != CCA_NOTICE_NONE) {}
    uint64_t id = 0;
    cr_assert_eq(cca_watch_threshold_queued(race_a, CCA_WATCH_ALLOCATED, 256, &id), CCA_OK);
    pthread_t t[4];
    for (int i = 0; i < 4; i++) pthread_create(&t[i], NULL, race_worker, NULL);
    for (int i = 0; i < 4; i++) {
        void *r = NULL;
        pthread_join(t[i], &r);
        cr_assert_null(r);
    }
    int rising = 0, expect_rising = 1;
    size_t n = 0, bytes = 0;
    uint64_t got = 0;
    while (cca_notice_wait(0, NULL, &got, NULL, NULL, &bytes, &rising) == CCA_NOTICE_WATCH) {
        cr_assert_eq(got, id);
        cr_assert_eq(rising, expect_rising, "notice %zu: %s twice in a row", n, rising ? "rising" : "falling");
        cr_assert_eq(bytes, rising ? (size_t)512 : (size_t)0);
        expect_rising = !expect_rising;
        n++;
    }
    cr_assert_gt(n, 0u);
    cr_assert_eq(n % 2, 0u, "ends below, as the figure does");
    cr_assert_eq(cca_unwatch(race_a, id), CCA_OK);
    finish(race_a);
}

/* What a scope left allocated: the blocks allocated while it was open and
 * not freed by its end - not the net of allocations and frees, which
 * frees of older blocks would drive below zero. */
Test(watch, scope_left_allocated_follows_its_own_blocks)
{
    cca_allocator_t *a = make_alloc("");
    void *old = alloc_ok(a, 64 * MiB, NULL);          /* before the scope */
    uint64_t outer = 0, inner = 0;
    cr_assert_eq(cca_scope_begin(a, &outer), CCA_OK);
    void *p[300];
    for (int i = 0; i < 300; i++) p[i] = alloc_ok(a, 512 * (size_t)(i % 5 + 1), NULL);
    cr_assert_eq(cca_scope_begin(a, &inner), CCA_OK);
    void *late = alloc_ok(a, 3000, NULL);             /* rounded to 3072 */
    size_t kept = 0;
    for (int i = 0; i < 300; i++) {
        if (i % 3) { free_ok(a, p[i]); p[i] = NULL; }
        else kept += 512 * (size_t)(i % 5 + 1);
    }
    free_ok(a, old);
    cca_scope_result_t ri, ro;
    cr_assert_eq(cca_scope_end(a, inner, &ri), CCA_OK);
    cr_assert_eq(ri.left_allocated, 3072u);
    cr_assert_eq(ri.left_allocations, 1u);
    cr_assert_eq(ri.left_untracked, 0u);
    cr_assert_gt(ri.freed_bytes, ri.allocated_bytes, "it freed older blocks: the net is below zero");
    cr_assert_eq(cca_scope_end(a, outer, &ro), CCA_OK);
    cr_assert_eq(ro.left_allocated, kept + 3072);
    cr_assert_eq(ro.left_allocations, 100u + 1u);
    cr_assert_eq(ro.allocations, 301u);
    /* a caller built before the left_* fields gets the first ones only */
    uint64_t t = 0;
    cr_assert_eq(cca_scope_begin(a, &t), CCA_OK);
    unsigned char small[offsetof(cca_scope_result_t, left_allocated) + 8];
    memset(small, 0xAB, sizeof small);
    cr_assert_eq(cca_scope_end_sized(a, t, (cca_scope_result_t *)(void *)small, offsetof(cca_scope_result_t, left_allocated)),
                 CCA_OK);
    for (size_t i = offsetof(cca_scope_result_t, left_allocated); i < sizeof small; i++)
        cr_assert_eq(small[i], 0xAB, "written past the caller's struct");
    for (int i = 0; i < 300; i++)
        if (p[i]) free_ok(a, p[i]);
    free_ok(a, late);
    finish(a);
}

/* A retired stream whose last block is pending on another stream: the
 * stream is retired while the block is live (retiring waits for the
 * device, which would finish any pending work), the other stream's work
 * is held, the block freed (pending: the segment stays), and then the
 * work is let go. */
typedef struct retired { cudaStream_t s2, s3; } retired_t;

static retired_t retired_segment_pending(cca_allocator_t *a, size_t bytes)
{
    retired_t r;
    cr_assert_eq(cudaStreamCreate(&r.s2), cudaSuccess);
    cr_assert_eq(cudaStreamCreate(&r.s3), cudaSuccess);
    void *b = alloc_ok(a, bytes, r.s2);
    cr_assert_eq(cca_record_stream(a, b, r.s3), CCA_OK);
    cr_assert_eq(cca_stream_retire(a, r.s2), CCA_OK);
    cca_sim_stream_hold(r.s3);
    free_ok(a, b);                                    /* pending until s3's work is done */
    cca_stats_t s = stats_of(a);
    cr_assert_eq(s.reserved_bytes[CCA_POOL_ALL].current, (int64_t)bytes, "kept while its block is pending");
    cr_assert_eq(s.active_bytes[CCA_POOL_ALL].current, (int64_t)bytes);
    cca_sim_stream_release(r.s3);                     /* done, but nothing has looked yet */
    return r;
}

static void retired_destroy(retired_t r)
{
    cr_assert_eq(cudaStreamDestroy(r.s2), cudaSuccess);
    cr_assert_eq(cudaStreamDestroy(r.s3), cudaSuccess);
}

/* The cca_malloc that finds the retired stream's last block came back
 * returns its segment before it grows: its watch sees the figure it leaves
 * (reserved never passed the threshold: no crossing, neither a rising one
 * no longer true when delivered nor a falling one left for a later call). */
Test(watch, a_retired_streams_segment_returned_inside_a_call_is_seen_by_it)
{
    cca_allocator_t *a = make_alloc("");
    retired_t r = retired_segment_pending(a, 20 * MiB);
    log_t l = { .a = a };
    tag_t t = { &l, 1 };
    uint64_t id;
    cr_assert_eq(cca_watch_threshold(a, CCA_WATCH_RESERVED, 30 * MiB, on_cross, &t, &id), CCA_OK);
    void *p = alloc_ok(a, 20 * MiB, NULL);
    cr_assert_eq(stats_of(a).reserved_bytes[CCA_POOL_ALL].current, (int64_t)(20 * MiB), "the retired stream's segment went back");
    cr_assert_eq(l.n, 0, "reserved never passed 30 MiB, yet %d crossing(s) came, the first rising=%d at %zu", l.n,
                 l.n ? l.ev[0].rising : -1, l.n ? l.ev[0].now : 0);
    free_ok(a, p);
    cr_assert_eq(l.n, 0);
    cr_assert_eq(cca_unwatch(a, id), CCA_OK);
    retired_destroy(r);
    finish(a);
}

/* The same with an out-of-memory: the report's figures are those the call
 * leaves, after the retired stream's segment went back. */
Test(watch, oom_figures_after_a_retired_streams_segment_went_back)
{
    cca_sim_set_capacity(0, 64 * MiB);
    cca_allocator_t *a = make_alloc("expandable_segments:True");
    retired_t r = retired_segment_pending(a, 20 * MiB);
    void *p = NULL;
    cr_assert_eq(cca_malloc(a, &p, 100 * MiB, NULL), CCA_ERROR_OUT_OF_MEMORY);
    cca_oom_report_t rep;
    cr_assert_eq(cca_last_oom_report(a, &rep), CCA_OK);
    cca_stats_t s = stats_of(a);
    cr_assert_eq(rep.reserved, (size_t)s.reserved_bytes[CCA_POOL_ALL].current, "report %zu, after the call %lld", rep.reserved,
                 (long long)s.reserved_bytes[CCA_POOL_ALL].current);
    cr_assert_eq(rep.reserved, 0, "reserved %zu (%zu free on the device)", rep.reserved, rep.device_free);
    cr_assert_eq(rep.device_free, 64 * MiB);
    retired_destroy(r);
    finish(a);
}

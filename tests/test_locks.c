/* test_locks.c - the ticket lock (allocator/lock.h): waiters served in the
 * order they came, sleepers woken, trylock refused while anyone holds or
 * waits; and the figures it gives in cca_stats_t (acquisitions exact,
 * waits counted only when a thread waited, num_all_locked, resets). */
#include <pthread.h>
#include <time.h>
#include "common.h"
#include "acct_util.h"
#include "internal.h"

static void setup(void) { cca_sim_reset(); }
TestSuite(locks, .init = setup);

static void sleep_ms(int ms)
{
    struct timespec t = { ms / 1000, (long)(ms % 1000) * 1000000L };
    nanosleep(&t, NULL);
}

/* ---- the lock itself ---------------------------------------------------- */

typedef struct fifo {
    cca_lock_t lock;
    int order[8], n;                                  /* who got the lock, in turn (written under it) */
} fifo_t;

typedef struct waiter { fifo_t *f; int id; } waiter_t;

static void *fifo_waiter(void *arg)
{
    waiter_t *w = arg;
    _cca_lock(&w->f->lock);
    w->f->order[w->f->n++] = w->id;
    _cca_unlock(&w->f->lock);
    return NULL;
}

/* Waits until `tickets` tickets are out (the holder's and the waiters'). */
static void wait_tickets(cca_lock_t *l, uint64_t tickets)
{
    for (int i = 0; i < 5000 && atomic_load(&l->next) < tickets; i++) sleep_ms(1);
    cr_assert_eq(atomic_load(&l->next), tickets);
}

Test(locks, waiters_are_served_in_the_order_they_came_and_sleepers_wake)
{
    fifo_t f = { .n = 0 };
    _cca_lock_init(&f.lock);
    _cca_lock(&f.lock);
    pthread_t t[6];
    waiter_t w[6];
    for (int i = 0; i < 6; i++) {                     /* each takes its ticket before the next starts */
        w[i] = (waiter_t){ &f, i };
        cr_assert_eq(pthread_create(&t[i], NULL, fifo_waiter, &w[i]), 0);
        wait_tickets(&f.lock, (uint64_t)i + 2);
    }
    cr_assert(!_cca_trylock(&f.lock), "held, with waiters");
    sleep_ms(30);                                     /* past their spins: asleep */
    cr_assert_gt(atomic_load(&f.lock.sleepers), 0u, "no waiter went to sleep");
    cr_assert_eq(f.n, 0);
    _cca_unlock(&f.lock);
    for (int i = 0; i < 6; i++) pthread_join(t[i], NULL);
    cr_assert_eq(f.n, 6);
    for (int i = 0; i < 6; i++) cr_assert_eq(f.order[i], i, "turn %d went to waiter %d", i, f.order[i]);
    cr_assert_eq(atomic_load(&f.lock.sleepers), 0u);
    cr_assert(_cca_trylock(&f.lock), "free again");
    cr_assert(!_cca_trylock(&f.lock), "trylock of a held lock");
    _cca_unlock(&f.lock);
    cca_lock_figures_t g = { 0 };
    _cca_lock_figures_add(&g, &f.lock, false);
    cr_assert_eq(g.acquisitions, 8, "1 + 6 waiters + 1 trylock");
    cr_assert_eq(g.contended, 6);
    cr_assert_geq(g.wait_ns_max, 25000000u, "the last waiter waited the 30 ms: %llu ns", (unsigned long long)g.wait_ns_max);
    cr_assert_geq(g.wait_ns_total, 6 * 25000000ull);
    _cca_lock_figures_reset(&f.lock, false);
    g = (cca_lock_figures_t){ 0 };
    _cca_lock_figures_add(&g, &f.lock, false);
    cr_assert_eq(g.acquisitions + g.contended + g.wait_ns_total + g.wait_ns_max, 0);
}

typedef struct counter { cca_lock_t lock; uint64_t n; } counter_t;

static void *count_up(void *arg)
{
    counter_t *c = arg;
    for (int i = 0; i < 200000; i++) {
        _cca_lock(&c->lock);
        c->n++;
        _cca_unlock(&c->lock);
    }
    return NULL;
}

Test(locks, four_threads_lose_no_increment)
{
    counter_t c = { .n = 0 };
    _cca_lock_init(&c.lock);
    pthread_t t[4];
    for (int i = 0; i < 4; i++) pthread_create(&t[i], NULL, count_up, &c);
    for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
    cr_assert_eq(c.n, 800000);
    cca_lock_figures_t g = { 0 };
    _cca_lock_figures_add(&g, &c.lock, false);
    cr_assert_eq(g.acquisitions, 800000);
    cr_assert_leq(g.contended, 800000);
    cr_assert_geq(g.wait_ns_total, g.wait_ns_max);
}

/* ---- the figures in cca_stats_t ------------------------------------------ */

Test(locks, acquisitions_and_all_locked_entries_are_exact)
{
    cca_allocator_t *a = make_alloc("");
    free_ok(a, alloc_ok(a, 4 * KiB, NULL));           /* the stream exists */
    cr_assert_eq(cca_reset_accumulated_stats(a), CCA_OK);
    cca_stats_t s = stats_of(a);                      /* the reading call: one entry, each lock once */
    cr_assert_eq(s.num_all_locked, 1);
    cr_assert_eq(s.lock_allocator_acquisitions, 1);
    cr_assert_eq(s.lock_streams_acquisitions, 1);
    cr_assert_eq(s.lock_allocator_contended + s.lock_streams_contended, 0);
    cr_assert_eq(s.lock_allocator_wait_ns_total + s.lock_streams_wait_ns_max, 0);
    for (int i = 0; i < 100; i++) free_ok(a, alloc_ok(a, 4 * KiB, NULL));   /* the hot path: the stream's lock, twice */
    s = stats_of(a);
    cr_assert_eq(s.num_all_locked, 2, "the hot path took the all-locked path");
    cr_assert_eq(s.lock_allocator_acquisitions, 2);
    cr_assert_eq(s.lock_streams_acquisitions, 1 + 200 + 1);
    cudaStream_t st2;
    cr_assert_eq(cudaStreamCreate(&st2), cudaSuccess);
    free_ok(a, alloc_ok(a, 4 * KiB, st2));            /* a new stream: all locked, each record then */
    s = stats_of(a);
    cr_assert_eq(s.num_all_locked, 4);
    cr_assert_eq(s.lock_allocator_acquisitions, 4);
    /* malloc: the first record all locked, the new one made locked; the
     * free on the hot path; the reading call: both records */
    cr_assert_eq(s.lock_streams_acquisitions, 202 + 1 + 1 + 1 + 2);
    check_ok(a);
    cca_destroy(a);
    cudaStreamDestroy(st2);
}

typedef struct mallocer { cca_allocator_t *a; void *p; } mallocer_t;

static void *malloc_on_legacy(void *arg)
{
    mallocer_t *m = arg;
    cr_assert_eq(cca_malloc(m->a, &m->p, 4 * KiB, NULL), CCA_OK);
    return NULL;
}

Test(locks, a_wait_for_a_stream_lock_is_counted_and_timed)
{
    cca_allocator_t *a = make_alloc("");
    free_ok(a, alloc_ok(a, 4 * KiB, NULL));
    cca_stream_t *st = _cca_stream_cached(a, 0);
    cr_assert_not_null(st);
    cr_assert_eq(cca_reset_accumulated_stats(a), CCA_OK);
    _cca_lock(&st->lock);                             /* as a thread in the middle of a call would */
    mallocer_t m = { a, NULL };
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, malloc_on_legacy, &m), 0);
    /* the other thread finds the record in the table (its cache is empty)
     * and waits for its lock */
    for (int i = 0; i < 5000 && atomic_load(&st->lock.next) < atomic_load(&st->lock.served) + 2; i++) sleep_ms(1);
    sleep_ms(20);
    _cca_unlock(&st->lock);
    pthread_join(t, NULL);
    cr_assert_not_null(m.p);
    cca_stats_t s = stats_of(a);
    cr_assert_eq(s.lock_streams_contended, 1);
    cr_assert_geq(s.lock_streams_wait_ns_max, 15000000, "waited %lld ns", (long long)s.lock_streams_wait_ns_max);
    cr_assert_eq(s.lock_streams_wait_ns_total, s.lock_streams_wait_ns_max);
    cr_assert_eq(s.lock_allocator_contended, 0);
    sink_t k = { 0 };
    cr_assert_eq(cca_memory_summary(a, sink_write, &k), CCA_OK);
    ASSERT_HAS(k.s, "| Lock          | Acquisitions | Waited       | Wait total   | Longest wait |");
    ASSERT_HAS(k.s, "| streams       | ");
    ASSERT_HAS(k.s, " |            1 | ");
    ASSERT_HAS(k.s, "| all-locked path entered ");
    free(k.s);
    cr_assert_eq(cca_reset_accumulated_stats(a), CCA_OK);
    s = stats_of(a);
    cr_assert_eq(s.lock_streams_contended + s.lock_streams_wait_ns_total + s.lock_streams_wait_ns_max, 0, "reset");
    cr_assert_eq(s.num_all_locked, 1);
    free_ok(a, m.p);
    finish(a);
}

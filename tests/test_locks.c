/* test_locks.c - the lock (allocator/lock.h): sleepers woken, every
 * waiter served, trylock refused while it is held; the figures it gives in
 * cca_stats_t (acquisitions exact, waits counted only when a thread
 * waited, num_all_locked, resets); growth off the all-locked path; room
 * passed between streams through the shared headroom; and a thread's own
 * record of a stream it shares (shards). */
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

/* Waits until a waiter sleeps on l (or 5 s pass). */
static void wait_sleeper(cca_lock_t *l)
{
    for (int i = 0; i < 5000 && atomic_load(&l->state) != CCA_LOCK_SLEEPERS; i++) sleep_ms(1);
    cr_assert_eq(atomic_load(&l->state), CCA_LOCK_SLEEPERS, "no waiter went to sleep");
}

/* ---- the lock itself ---------------------------------------------------- */

typedef struct waiters {
    cca_lock_t lock;
    int served[8], n;                                 /* who got the lock, in turn (written under it) */
} waiters_t;

typedef struct waiter { waiters_t *f; int id; } waiter_t;

static void *take_once(void *arg)
{
    waiter_t *w = arg;
    _cca_lock(&w->f->lock);
    w->f->served[w->f->n++] = w->id;
    _cca_unlock(&w->f->lock);
    return NULL;
}

Test(locks, sleepers_are_woken_and_every_waiter_is_served)
{
    waiters_t f = { .n = 0 };
    _cca_lock_init(&f.lock);
    _cca_lock(&f.lock);
    pthread_t t[6];
    waiter_t w[6];
    for (int i = 0; i < 6; i++) {
        w[i] = (waiter_t){ &f, i };
        cr_assert_eq(pthread_create(&t[i], NULL, take_once, &w[i]), 0);
    }
    wait_sleeper(&f.lock);
    sleep_ms(30);                                     /* the others past their spins too */
    cr_assert(!_cca_trylock(&f.lock), "trylock of a held lock");
    cr_assert_eq(f.n, 0);
    _cca_unlock(&f.lock);
    for (int i = 0; i < 6; i++) pthread_join(t[i], NULL);
    cr_assert_eq(f.n, 6);
    int seen = 0;
    for (int i = 0; i < 6; i++) seen |= 1 << f.served[i];
    cr_assert_eq(seen, 0x3f, "each waiter once");
    cr_assert_eq(atomic_load(&f.lock.state), CCA_LOCK_FREE);
    cr_assert(_cca_trylock(&f.lock), "free again");
    cr_assert(!_cca_trylock(&f.lock));
    _cca_unlock(&f.lock);
    cca_lock_figures_t g = { 0 };
    _cca_lock_figures_add(&g, &f.lock);
    cr_assert_eq(g.acquisitions, 8, "1 + 6 waiters + 1 trylock");
    cr_assert_eq(g.contended, 6);
    cr_assert_geq(g.wait_ns_max, 25000000u, "the last waiter waited the 30 ms: %llu ns", (unsigned long long)g.wait_ns_max);
    cr_assert_geq(g.wait_ns_total, 6 * 25000000ull);
    _cca_lock_figures_reset(&f.lock);
    g = (cca_lock_figures_t){ 0 };
    _cca_lock_figures_add(&g, &f.lock);
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
    _cca_lock_figures_add(&g, &c.lock);
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
    wait_sleeper(&st->lock);
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

/* ---- growth off the all-locked path -------------------------------------- */

Test(locks, a_new_segment_is_made_under_the_stream_and_segment_list_locks)
{
    cca_allocator_t *a = make_alloc("");
    void *small = alloc_ok(a, 4 * KiB, NULL);         /* the stream's first call: all locked */
    uint64_t entries = a->lock_all_count;
    unsigned long mallocs = cca_sim_calls(CCA_SIM_MALLOC);
    void *big = alloc_ok(a, 30 * MiB, NULL);          /* a 30 MiB segment */
    void *mid = alloc_ok(a, 4 * MiB, NULL);           /* a 20 MiB segment */
    cr_assert_eq(a->lock_all_count, entries, "growth took the all-locked path");
    cr_assert_eq(cca_sim_calls(CCA_SIM_MALLOC), mallocs + 2);
    cca_stats_t s = stats_of(a);
    cr_assert_eq(s.num_device_alloc, 3);
    ASSERT_STAT(s, segment, CCA_POOL_LARGE, 2);
    ASSERT_STAT(s, reserved_bytes, CCA_POOL_ALL, (int64_t)(2 * MiB + 30 * MiB + 20 * MiB));
    cr_assert_eq(s.reserved_bytes[CCA_POOL_ALL].peak, (int64_t)(52 * MiB));
    cr_assert_eq(s.lock_segments_acquisitions, 2);
    check_ok(a);
    free_ok(a, big);
    free_ok(a, mid);
    free_ok(a, small);
    finish(a);
}

Test(locks, a_segment_the_device_refused_is_not_asked_for_again_all_locked)
{
    cca_sim_set_capacity(0, 64 * MiB);
    cca_allocator_t *a = make_alloc("");
    void *p = alloc_ok(a, 30 * MiB, NULL);
    free_ok(a, alloc_ok(a, 20 * MiB, NULL));          /* cached: 50 MiB of 64 reserved */
    unsigned long mallocs = cca_sim_calls(CCA_SIM_MALLOC), frees = cca_sim_calls(CCA_SIM_FREE);
    void *q = alloc_ok(a, 30 * MiB, NULL);            /* refused (14 MiB free), the cache released, asked again */
    cr_assert_eq(cca_sim_calls(CCA_SIM_MALLOC), mallocs + 2, "PyTorch's calls: the segment, then after the release");
    cr_assert_eq(cca_sim_calls(CCA_SIM_FREE), frees + 1);
    cca_stats_t s = stats_of(a);
    cr_assert_eq(s.num_alloc_retries, 1);
    cr_assert_eq(s.num_ooms, 0);
    mallocs = cca_sim_calls(CCA_SIM_MALLOC);
    void *r = NULL;
    cr_assert_eq(cca_malloc(a, &r, 30 * MiB, NULL), CCA_ERROR_OUT_OF_MEMORY);   /* refused, nothing to release, refused */
    cr_assert_eq(cca_sim_calls(CCA_SIM_MALLOC), mallocs + 2);
    cca_oom_report_t o;
    cr_assert_eq(cca_last_oom_report(a, &o), CCA_OK);
    cr_assert(o.device_refused, "the report says the device refused");
    cr_assert(!o.cap_refused);
    cr_assert_eq(o.requested, 30 * MiB);
    s = stats_of(a);
    cr_assert_eq(s.num_alloc_retries, 2);
    cr_assert_eq(s.num_ooms, 1);
    check_ok(a);
    free_ok(a, p);
    free_ok(a, q);
    finish(a);
}

typedef struct grower { cca_allocator_t *a; cudaStream_t s; int id; } grower_t;

static void *grow_and_free(void *arg)
{
    grower_t *g = arg;
    void *p[24];
    for (int round = 0; round < 30; round++) {
        for (int i = 0; i < 24; i++)
            cr_assert_eq(cca_malloc(g->a, &p[i], (size_t)(1 + (i + g->id) % 5) * MiB + (size_t)i * 4096, g->s), CCA_OK);
        for (int i = 0; i < 24; i++) cr_assert_eq(cca_free(g->a, p[i]), CCA_OK);
        if (round % 7 == g->id) cr_assert_eq(cca_empty_cache(g->a), CCA_OK);
    }
    return NULL;
}

Test(locks, threads_growing_their_own_streams_at_once_keep_every_figure, .timeout = 120)
{
    cca_allocator_t *a = make_alloc("");
    grower_t g[3];
    pthread_t t[3];
    for (int i = 0; i < 3; i++) {
        g[i] = (grower_t){ a, NULL, i };
        cr_assert_eq(cudaStreamCreate(&g[i].s), cudaSuccess);
        cr_assert_eq(pthread_create(&t[i], NULL, grow_and_free, &g[i]), 0);
    }
    for (int i = 0; i < 3; i++) pthread_join(t[i], NULL);
    check_ok(a);
    cca_stats_t s = stats_of(a);
    ASSERT_STAT(s, allocation, CCA_POOL_ALL, 0);
    cr_assert_eq(s.segment[CCA_POOL_ALL].current, s.num_device_alloc - s.num_device_free);
    cr_assert_eq((size_t)s.reserved_bytes[CCA_POOL_ALL].current, cca_sim_used_bytes(0));
    cr_assert_gt(s.lock_segments_acquisitions, 0);
    cr_assert_eq(cca_empty_cache(a), CCA_OK);
    cr_assert_eq(cca_sim_live_allocations(0), 0);
    for (int i = 0; i < 3; i++) cudaStreamDestroy(g[i].s);
    finish(a);
}

Test(locks, a_segment_made_off_the_all_locked_path_serves_the_request_the_counters_sent_there)
{
    cca_allocator_t *a = make_alloc("max_split_size_mb:128");
    free_ok(a, alloc_ok(a, 4 * KiB, NULL));           /* the stream exists */
    a->refuse_admit = true;                           /* every passed lease goes all locked */
    unsigned long mallocs = cca_sim_calls(CCA_SIM_MALLOC);
    void *p = alloc_ok(a, 127 * MiB, NULL);           /* a 128 MiB segment: oversize, so best fit would not pick it */
    cr_assert_eq(cca_sim_calls(CCA_SIM_MALLOC), mallocs + 1, "a second segment was made for the same request");
    cca_stats_t s = stats_of(a);
    ASSERT_STAT(s, reserved_bytes, CCA_POOL_LARGE, (int64_t)(128 * MiB));
    ASSERT_STAT(s, allocated_bytes, CCA_POOL_LARGE, (int64_t)(128 * MiB));   /* a 1 MiB rest is not split off */
    a->refuse_admit = false;
    check_ok(a);
    free_ok(a, p);
    finish(a);
}

static void *cache_20_mib_and_exit(void *arg)
{
    cca_allocator_t *a = arg;
    void *p = NULL;
    cr_assert_eq(cca_malloc(a, &p, 20 * MiB, cudaStreamPerThread), CCA_OK);
    cr_assert_eq(cca_free(a, p), CCA_OK);             /* cached in this thread's stream, which dies with it */
    return NULL;
}

Test(locks, a_refusal_is_not_trusted_once_memory_went_back_to_the_device)
{
    cca_sim_set_capacity(0, 64 * MiB);
    cca_allocator_t *a = make_alloc("");
    void *p = alloc_ok(a, 30 * MiB, NULL);
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, cache_20_mib_and_exit, a), 0);
    pthread_join(t, NULL);                            /* its stream is dying: reaped on the next all-locked call */
    unsigned long mallocs = cca_sim_calls(CCA_SIM_MALLOC);
    /* refused on the hot path (14 MiB free); all locked, the dead stream's
     * 20 MiB go back first, so the segment is asked for again, no retry */
    void *q = alloc_ok(a, 30 * MiB, NULL);
    cr_assert_eq(cca_sim_calls(CCA_SIM_MALLOC), mallocs + 2);
    cca_stats_t s = stats_of(a);
    cr_assert_eq(s.num_device_free, 1, "the dead stream's segment");
    cr_assert_eq(s.num_alloc_retries, 0, "the cache was emptied for a request the device could serve");
    check_ok(a);
    free_ok(a, p);
    free_ok(a, q);
    finish(a);
}

Test(locks, cca_check_refuses_more_waits_than_acquisitions)
{
    cca_allocator_t *a = make_alloc("");
    check_ok(a);
    uint64_t saved = a->seg_lock.fig.contended;
    a->seg_lock.fig.contended = 5;                    /* five waits, no acquisition */
    cr_assert_eq(cca_check(a), CCA_ERROR_CORRUPTED);
    cr_assert(strstr(cca_last_error_string(), "the segments locks: 5 waits of 0 acquisitions") != NULL, "%s",
              cca_last_error_string());
    a->seg_lock.fig.contended = saved;
    finish(a);
}

/* ---- the shared headroom ------------------------------------------------ */

/* One thread, 4 KiB pairs on 16 streams in turn: the allocation peak is one
 * block, so the lease of it must pass to the next stream every pair. Through
 * the headroom that takes no other stream's lock: each pair takes its own
 * stream's lock twice and nothing else (without frees giving their room
 * back, every pair swept the other 15 streams: 27,216 acquisitions), no
 * pass holds every stream, and the peaks are one block's. */
Test(locks, room_passes_between_streams_through_the_headroom)
{
    cca_allocator_t *a = make_alloc("");
    cudaStream_t st[16];
    for (int i = 0; i < 16; i++) cr_assert_eq(cudaStreamCreate(&st[i]), cudaSuccess);
    for (int i = 0; i < 32; i++) free_ok(a, alloc_ok(a, 4 * KiB, st[i % 16]));   /* every stream has its segment */
    cca_stats_t s0 = stats_of(a);
    uint64_t takeovers = a->lease_takeovers;
    for (int i = 0; i < 1600; i++) free_ok(a, alloc_ok(a, 4 * KiB, st[i % 16]));
    uint64_t passes = a->lease_takeovers - takeovers;
    cca_stats_t s = stats_of(a);
    cr_assert_leq(passes, 2, "%llu of 1,600 pairs took every stream's lock", (unsigned long long)passes);
    cr_assert_eq(s.lock_streams_acquisitions - s0.lock_streams_acquisitions, 2 * 1600 + 16,
                 "each pair its own stream's lock (the stats call: all 16), no other stream's");
    cr_assert_eq(s.num_all_locked - s0.num_all_locked, 1, "only the stats call itself");
    cr_assert_geq(s.lock_headroom_acquisitions - s0.lock_headroom_acquisitions, 2 * 1600 - 32,
                  "a take and a give per pair");
    ASSERT_STAT(s, allocation, CCA_POOL_ALL, 0);
    cr_assert_eq(s.allocation[CCA_POOL_ALL].peak, 1);
    cr_assert_eq(s.allocated_bytes[CCA_POOL_ALL].peak, (int64_t)(4 * KiB));
    cr_assert_eq(s.requested_bytes[CCA_POOL_SMALL].peak, (int64_t)(4 * KiB));
    check_ok(a);
    for (int i = 0; i < 16; i++) cudaStreamDestroy(st[i]);
    finish(a);
}

/* Room that lies idle in another stream is not pulled into the headroom for
 * a stream that keeps to itself: a side stream used once, then one stream
 * raising its figures, never starts the giving back (each pass would cost
 * the busy stream a lock). */
Test(locks, a_stream_alone_at_its_peak_does_not_start_the_giving_back)
{
    cca_allocator_t *a = make_alloc("");
    cudaStream_t side;
    cr_assert_eq(cudaStreamCreate(&side), cudaSuccess);
    free_ok(a, alloc_ok(a, 4 * KiB, side));
    void *p[64];
    for (int i = 0; i < 64; i++) p[i] = alloc_ok(a, 4 * KiB, NULL);   /* a new peak at every call */
    cr_assert(!atomic_load(&a->spare_wanted), "frees give their room back");
    for (int i = 0; i < 64; i++) free_ok(a, p[i]);
    cca_stats_t s = stats_of(a);
    cr_assert_eq(s.allocation[CCA_POOL_ALL].peak, 64);
    check_ok(a);
    cudaStreamDestroy(side);
    finish(a);
}

static void *per_thread_pair(void *arg)
{
    cca_allocator_t *a = arg;
    void *p = NULL;
    cr_assert_eq(cca_malloc(a, &p, 4 * KiB, cudaStreamPerThread), CCA_OK);
    cr_assert_eq(cca_free(a, p), CCA_OK);             /* its stream dies with the thread, holding a segment */
    return NULL;
}

/* The all-locked path reaps a dying stream on entry, which settles pending
 * frees there: a stream's figure may pass its lease until the leases are
 * dealt on unlocking. cca_check, run in that call, accepts it (it reported
 * corruption before; found by a reviewer). */
Test(locks, cca_check_accepts_a_lease_passed_by_the_reaping_on_entry)
{
    cca_allocator_t *a = make_alloc("");
    cudaStream_t s1, s2;
    cr_assert_eq(cudaStreamCreate(&s1), cudaSuccess);
    cr_assert_eq(cudaStreamCreate(&s2), cudaSuccess);
    void *x = alloc_ok(a, 4 * KiB, s1), *b = alloc_ok(a, 4 * KiB, s1), *c = alloc_ok(a, 4 * KiB, s1);
    void *d = alloc_ok(a, 4 * KiB, s2);
    cca_sim_stream_hold(s2);
    cr_assert_eq(cca_record_stream(a, b, s2), CCA_OK);
    free_ok(a, b);                                    /* pending between x and c */
    check_ok(a);                                      /* leases dealt: s1 has no split room */
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, per_thread_pair, a), 0);
    pthread_join(t, NULL);
    cca_sim_stream_release(s2);
    check_ok(a);                                      /* the reaping settles b: a split block on s1 */
    cca_stats_t s = stats_of(a);
    cr_assert_eq(s.inactive_split[CCA_POOL_ALL].current, 3, "b's hole and the rests of s1's and s2's segments");
    check_ok(a);
    free_ok(a, x);
    free_ok(a, c);
    free_ok(a, d);
    cudaStreamDestroy(s1);
    cudaStreamDestroy(s2);
    finish(a);
}

/* Two streams taking turns at one block each (as two threads on their own
 * streams do) settle with a lease of a block each: once a stream found the
 * headroom short, frees give their room back until a take finds it
 * plentiful, and that take takes only what it lacks (taking a share of the
 * rest besides left the other stream short, which swept it and started the
 * giving back again: every pair took the other stream's lock and the
 * headroom's, and two threads on their own streams ran at 0.2x one thread). */
Test(locks, two_streams_taking_turns_settle_at_a_block_each)
{
    cca_allocator_t *a = make_alloc("");
    cudaStream_t s1, s2;
    cr_assert_eq(cudaStreamCreate(&s1), cudaSuccess);
    cr_assert_eq(cudaStreamCreate(&s2), cudaSuccess);
    for (int i = 0; i < 8; i++) {
        void *x = alloc_ok(a, 64 * KiB, s1), *y = alloc_ok(a, 64 * KiB, s2);
        free_ok(a, x);
        free_ok(a, y);
    }
    void *x1 = alloc_ok(a, 64 * KiB, s1), *x2 = alloc_ok(a, 64 * KiB, s1);   /* s1 takes s2's room */
    cr_assert(atomic_load(&a->spare_wanted), "s1 found s2's room idle");
    free_ok(a, x1);
    free_ok(a, x2);
    for (int i = 0; i < 8; i++) {                     /* settling */
        void *x = alloc_ok(a, 64 * KiB, s1), *y = alloc_ok(a, 64 * KiB, s2);
        free_ok(a, x);
        free_ok(a, y);
    }
    cca_stats_t s0 = stats_of(a);
    for (int i = 0; i < 1000; i++) {
        void *x = alloc_ok(a, 64 * KiB, s1), *y = alloc_ok(a, 64 * KiB, s2);
        free_ok(a, x);
        free_ok(a, y);
    }
    cca_stats_t s = stats_of(a);
    cr_assert(!atomic_load(&a->spare_wanted), "frees still give their room back");
    cr_assert_eq(s.lock_streams_acquisitions - s0.lock_streams_acquisitions, 4 * 1000 + 2,
                 "each call its own stream's lock (the stats call: both), no sweep");
    cr_assert_eq(s.lock_headroom_acquisitions, s0.lock_headroom_acquisitions, "no take, no give");
    cr_assert_eq(s.num_all_locked - s0.num_all_locked, 1, "only the stats call itself");
    cr_assert_eq(s.allocated_bytes[CCA_POOL_ALL].peak, (int64_t)(128 * KiB));
    check_ok(a);
    cudaStreamDestroy(s1);
    cudaStreamDestroy(s2);
    finish(a);
}

/* ---- shards: a thread's own record of a stream it shares ------------------ */

/* A second thread's calls on stream s: call i (of n, sizes[i]) once go > i;
 * then it remembers its record of s and stays until stay is cleared. */
typedef struct crowd {
    cca_allocator_t *a;
    cudaStream_t s;
    int n;
    size_t sizes[16];
    void *p[16];
    cca_status_t rc[16];
    _Atomic int go, done, stay, after_done;
    cca_stream_t *rec;                                /* its record of s after its calls */
    void (*after)(struct crowd *);                    /* run then, if set */
} crowd_t;

static void *crowd_calls(void *arg)
{
    crowd_t *c = arg;
    for (int i = 0; i < c->n; i++) {
        while (atomic_load(&c->go) <= i) sleep_ms(1);
        c->rc[i] = cca_malloc(c->a, &c->p[i], c->sizes[i], c->s);
        atomic_store(&c->done, i + 1);
    }
    c->rec = _cca_stream_cached(c->a, _cca_stream_key(c->a->cfg.device, c->s));
    if (c->after) c->after(c);
    atomic_store(&c->after_done, 1);
    while (atomic_load(&c->stay)) sleep_ms(1);
    return NULL;
}

static void crowd_after(crowd_t *c)
{
    for (int i = 0; i < 5000 && !atomic_load(&c->after_done); i++) sleep_ms(1);
    cr_assert(atomic_load(&c->after_done), "the other thread did not finish");
}

static void crowd_until(crowd_t *c, int done)
{
    for (int i = 0; i < 5000 && atomic_load(&c->done) < done; i++) sleep_ms(1);
    cr_assert_eq(atomic_load(&c->done), done, "the other thread's calls did not end");
}

/* Runs the other thread's first `crowded` calls each against a holder of
 * base's lock - another hot path (this thread, taking it as one does), or
 * an all-locked caller - then the rest unhindered; it stays. */
static void crowd_run(crowd_t *c, pthread_t *t, cca_stream_t *base, int crowded, bool all_locked)
{
    atomic_store(&c->stay, 1);
    cr_assert_eq(pthread_create(t, NULL, crowd_calls, c), 0);
    for (int i = 0; i < crowded; i++) {
        if (all_locked) _cca_alloc_lock_all(c->a);
        else _cca_lock(&base->lock);
        atomic_store(&c->go, i + 1);
        wait_sleeper(&base->lock);                    /* its hot path waits for base's lock */
        if (all_locked) _cca_alloc_unlock_all(c->a, NULL);
        else _cca_unlock(&base->lock);
        crowd_until(c, i + 1);
    }
    atomic_store(&c->go, c->n);
    crowd_until(c, c->n);
}

/* A new stream with its record (one call made on it). */
static cca_stream_t *stream_with_record(cca_allocator_t *a, cudaStream_t *s)
{
    cr_assert_eq(cudaStreamCreate(s), cudaSuccess);
    free_ok(a, alloc_ok(a, 4 * KiB, *s));
    cca_stream_t *base = _cca_stream_lookup(a, _cca_stream_key(a->cfg.device, *s));
    cr_assert_not_null(base);
    return base;
}

static int records_of(const cca_allocator_t *a, cudaStream_t s)
{
    uint64_t key = _cca_stream_key(a->cfg.device, s);
    int n = 0;
    for (const cca_stream_t *st = a->streams; st; st = st->next) n += st->key == key && !st->dead;
    return n;
}

/* Eight waits for another hot path on one stream's record give the waiting
 * thread its own record of the stream, made by the eighth call, which it
 * serves: same handle and key, its own lock and blocks, not in the table;
 * a block from it is freed by another thread; it dies with its thread,
 * its free segment going to the stream's own record (no device-wide wait,
 * nothing freed). */
Test(locks, a_thread_crowding_another_on_one_stream_gets_its_own_record)
{
    cca_allocator_t *a = make_alloc("");
    cudaStream_t s;
    cca_stream_t *base = stream_with_record(a, &s);
    uint64_t key = base->key;
    crowd_t c = { .a = a, .s = s, .n = 10 };
    for (int i = 0; i < 10; i++) c.sizes[i] = 4 * KiB;
    pthread_t t;
    crowd_run(&c, &t, base, 8, false);
    for (int i = 0; i < 10; i++) cr_assert_eq(c.rc[i], CCA_OK);
    cr_assert_neq(c.rec, base, "no record of its own");
    cr_assert_neq(c.rec->shard, 0);
    cr_assert_eq(c.rec->handle, s);
    cr_assert_eq(c.rec->key, key);
    cr_assert(base->shared && c.rec->shared);
    cr_assert_eq(_cca_stream_lookup(a, key), base, "the table keeps the stream's own record");
    cr_assert_eq(records_of(a, s), 2);
    check_ok(a);
    cr_assert_eq(_cca_counters_cur(&c.rec->ctr, CCA_POOL_ALL, CCA_K_allocation), 3,
                 "the eighth call (all locked) and the two after it");
    cr_assert_eq(_cca_counters_cur(&base->ctr, CCA_POOL_ALL, CCA_K_allocation), 7);
    cr_assert_not_null(_cca_ptrmap_get(&c.rec->live, (uintptr_t)c.p[7]));
    cr_assert_not_null(_cca_ptrmap_get(&c.rec->live, (uintptr_t)c.p[9]));
    cca_stats_t s1 = stats_of(a);
    ASSERT_STAT(s1, allocation, CCA_POOL_ALL, 10);
    cr_assert_eq(s1.reserved_bytes[CCA_POOL_ALL].current, (int64_t)(4 * MiB), "a small segment each");
    for (int i = 0; i < 10; i++) free_ok(a, c.p[i]);  /* this thread frees both records' blocks */
    check_ok(a);
    cca_stats_t s15 = stats_of(a);
    atomic_store(&c.stay, 0);
    pthread_join(t, NULL);
    check_ok(a);                                      /* reaps the dead thread's record */
    cr_assert_eq(records_of(a, s), 1);
    cca_stats_t s2 = stats_of(a);
    ASSERT_STAT(s2, allocation, CCA_POOL_ALL, 0);
    cr_assert_eq(s2.reserved_bytes[CCA_POOL_ALL].current, (int64_t)(4 * MiB), "its free segment went to the stream");
    cr_assert_eq(s2.num_sync_all_streams, s15.num_sync_all_streams, "a device-wide wait for it");
    cr_assert_eq(s2.num_device_free, s15.num_device_free);
    for (const cca_segment_t *g = a->segments; g; g = g->next) cr_assert_eq(g->stream, base);
    cr_assert_eq(s2.allocation[CCA_POOL_ALL].peak, 10);
    free_ok(a, alloc_ok(a, 4 * KiB, s));              /* the stream goes on */
    cudaStreamDestroy(s);
    finish(a);
}

/* Waits for an all-locked caller are no crowding: no record of its own
 * (two threads on their own streams wait so for each other's sweeps and
 * growth, and each had got a second record of its own stream). */
Test(locks, waits_for_an_all_locked_caller_make_no_record)
{
    cca_allocator_t *a = make_alloc("");
    cudaStream_t s;
    cca_stream_t *base = stream_with_record(a, &s);
    crowd_t c = { .a = a, .s = s, .n = 12 };
    for (int i = 0; i < 12; i++) c.sizes[i] = 4 * KiB;
    pthread_t t;
    crowd_run(&c, &t, base, 12, true);
    cr_assert_eq(c.rec, base);
    cr_assert(!base->shared);
    cr_assert_eq(records_of(a, s), 1);
    for (int i = 0; i < 12; i++) free_ok(a, c.p[i]);
    atomic_store(&c.stay, 0);
    pthread_join(t, NULL);
    cudaStreamDestroy(s);
    finish(a);
}

/* Retiring a stream retires every record of it, a thread's own too. */
Test(locks, retiring_a_stream_retires_the_threads_records_of_it)
{
    cca_allocator_t *a = make_alloc("");
    cudaStream_t s;
    cca_stream_t *base = stream_with_record(a, &s);
    crowd_t c = { .a = a, .s = s, .n = 9 };
    for (int i = 0; i < 9; i++) c.sizes[i] = 4 * KiB;
    pthread_t t;
    crowd_run(&c, &t, base, 8, false);
    cr_assert_neq(c.rec, base);
    for (int i = 0; i < 9; i++) free_ok(a, c.p[i]);
    cr_assert_eq(cca_stream_retire(a, s), CCA_OK);
    cr_assert_eq(records_of(a, s), 0, "a record of the retired stream lives");
    cca_stats_t st = stats_of(a);
    cr_assert_eq(st.reserved_bytes[CCA_POOL_ALL].current, 0, "their segments went back");
    check_ok(a);
    atomic_store(&c.stay, 0);
    pthread_join(t, NULL);
    cudaStreamDestroy(s);
    finish(a);
}

/* A 4 MiB device: the stream's own record keeps a 2 MiB segment by a live
 * 4 KiB block (*keep); the other thread's first ten calls (n in all) make
 * its own record (the eighth) and fill its 2 MiB segment: the device full. */
static cca_stream_t *full_device_crowd(crowd_t *c, cudaStream_t *s, void **keep, int n)
{
    cca_allocator_t *a = make_alloc("");
    cr_assert_eq(cudaStreamCreate(s), cudaSuccess);
    *keep = alloc_ok(a, 4 * KiB, *s);
    cca_stream_t *base = _cca_stream_lookup(a, _cca_stream_key(a->cfg.device, *s));
    *c = (crowd_t){ .a = a, .s = *s, .n = n };
    for (int i = 0; i < 8; i++) c->sizes[i] = 4 * KiB;
    c->sizes[8] = 1 * MiB, c->sizes[9] = 1 * MiB - 4 * KiB;
    return base;
}

/* With the device full, a request on a thread's own record of a stream
 * takes a free block of the stream's other record (whose segment a live
 * block keeps on the device) before it fails. */
Test(locks, a_full_device_serves_a_threads_record_from_its_stream_other_record)
{
    cca_sim_set_capacity(0, 4 * MiB);
    cudaStream_t s;
    void *keep;
    crowd_t c;
    cca_stream_t *base = full_device_crowd(&c, &s, &keep, 11);
    cca_allocator_t *a = c.a;
    c.sizes[10] = 1 * MiB;                            /* the device full: from base's free block */
    pthread_t t;
    crowd_run(&c, &t, base, 8, false);
    cr_assert_neq(c.rec, base);
    for (int i = 0; i < 11; i++) cr_assert_eq(c.rc[i], CCA_OK, "call %d: %s", i, cca_status_string(c.rc[i]));
    cr_assert_not_null(_cca_ptrmap_get(&c.rec->live, (uintptr_t)c.p[9]));
    cr_assert_not_null(_cca_ptrmap_get(&base->live, (uintptr_t)c.p[10]), "not served by base's free block");
    cca_stats_t st = stats_of(a);
    cr_assert_eq(st.reserved_bytes[CCA_POOL_ALL].current, (int64_t)(4 * MiB));
    check_ok(a);
    for (int i = 0; i < 11; i++) free_ok(a, c.p[i]);
    free_ok(a, keep);
    atomic_store(&c.stay, 0);
    pthread_join(t, NULL);
    cudaStreamDestroy(s);
    finish(a);
}

/* A cached block of another record of the stream serves an all-locked
 * request before the growth ladder: no release-and-retry, no segment
 * freed (found by a reviewer: the sibling was tried only after the
 * release-all rung). */
Test(locks, a_siblings_cached_block_comes_before_the_ladder)
{
    cca_sim_set_capacity(0, 6 * MiB);
    cca_allocator_t *a = make_alloc("");
    cudaStream_t s, s2;
    cr_assert_eq(cudaStreamCreate(&s), cudaSuccess);
    cr_assert_eq(cudaStreamCreate(&s2), cudaSuccess);
    void *keep = alloc_ok(a, 4 * KiB, s);
    free_ok(a, alloc_ok(a, 4 * KiB, s2));             /* s2 caches a free 2 MiB segment: the device is full */
    cca_stream_t *base = _cca_stream_lookup(a, _cca_stream_key(a->cfg.device, s));
    crowd_t c = { .a = a, .s = s, .n = 11 };
    for (int i = 0; i < 8; i++) c.sizes[i] = 4 * KiB;
    c.sizes[8] = 1 * MiB, c.sizes[9] = 1 * MiB - 4 * KiB;   /* its own segment full */
    c.sizes[10] = 512 * KiB;                          /* base has ~2 MiB free */
    pthread_t t;
    crowd_run(&c, &t, base, 8, false);
    for (int i = 0; i < 11; i++) cr_assert_eq(c.rc[i], CCA_OK, "call %d", i);
    cr_assert_not_null(_cca_ptrmap_get(&base->live, (uintptr_t)c.p[10]), "not from base's cached block");
    cca_stats_t st = stats_of(a);
    cr_assert_eq(st.num_alloc_retries, 0);
    cr_assert_eq(st.num_device_free, 0, "a segment was freed to make room");
    check_ok(a);
    for (int i = 0; i < 11; i++) free_ok(a, c.p[i]);
    free_ok(a, keep);
    atomic_store(&c.stay, 0);
    pthread_join(t, NULL);
    cudaStreamDestroy(s);
    cudaStreamDestroy(s2);
    finish(a);
}

/* The OOM report on a thread's own record counts the stream's other
 * records' cached blocks: largest_fit is what the next request gets. */
Test(locks, the_oom_report_on_a_threads_record_counts_its_siblings_blocks)
{
    cca_sim_set_capacity(0, 4 * MiB);
    cudaStream_t s;
    void *keep;
    crowd_t c;
    cca_stream_t *base = full_device_crowd(&c, &s, &keep, 12);
    cca_allocator_t *a = c.a;
    c.sizes[10] = 2 * MiB;                            /* large pool, the device full: out of memory */
    c.sizes[11] = 1 * MiB;                            /* base's cached block */
    pthread_t t;
    crowd_run(&c, &t, base, 8, false);
    cr_assert_eq(c.rc[10], CCA_ERROR_OUT_OF_MEMORY);
    cr_assert_eq(c.rc[11], CCA_OK);
    cca_oom_report_t r;
    cr_assert_eq(cca_last_oom_report(a, &r), CCA_OK);
    cr_assert_eq(r.largest_fit, 1 * MiB, "largest_fit %zu: base's small block serves up to 1 MiB", r.largest_fit);
    for (int i = 0; i < 12; i++)
        if (c.rc[i] == CCA_OK) free_ok(a, c.p[i]);
    free_ok(a, keep);
    atomic_store(&c.stay, 0);
    pthread_join(t, NULL);
    cudaStreamDestroy(s);
    finish(a);
}

/* The thread keeps its own record past its 4-entry stream cache: after
 * calls on four other streams, its next call on s is its record's (found
 * by a reviewer: the round robin dropped it, and the call went to the
 * stream's own record). */
static void four_streams_then_s(crowd_t *c)
{
    cudaStream_t o[4];
    for (int i = 0; i < 4; i++) {
        cr_assert_eq(cudaStreamCreate(&o[i]), cudaSuccess);
        free_ok(c->a, alloc_ok(c->a, 4 * KiB, o[i]));
    }
    c->p[c->n] = alloc_ok(c->a, 4 * KiB, c->s);
    for (int i = 0; i < 4; i++) cudaStreamDestroy(o[i]);
}

Test(locks, a_thread_keeps_its_record_past_its_stream_cache)
{
    cca_allocator_t *a = make_alloc("");
    cudaStream_t s;
    cca_stream_t *base = stream_with_record(a, &s);
    crowd_t c = { .a = a, .s = s, .n = 8, .after = four_streams_then_s };
    for (int i = 0; i < 8; i++) c.sizes[i] = 4 * KiB;
    pthread_t t;
    crowd_run(&c, &t, base, 8, false);
    crowd_after(&c);
    cr_assert_neq(c.rec, base, "no record of its own");
    cr_assert_not_null(_cca_ptrmap_get(&c.rec->live, (uintptr_t)c.p[8]), "served by another record");
    cr_assert_eq(records_of(a, s), 2);
    check_ok(a);
    for (int i = 0; i < 9; i++) free_ok(a, c.p[i]);
    atomic_store(&c.stay, 0);
    pthread_join(t, NULL);
    cudaStreamDestroy(s);
    finish(a);
}

/* A thread that allocates on a stream while another frees its blocks
 * waits for the frees' holds of the lock: no crowding - a record of its
 * own would not part them (the frees follow the blocks to it). */
#define HANDOFFS 20000
typedef struct handoff { cca_allocator_t *a; cudaStream_t s; void *_Atomic ring[64]; _Atomic int made; } handoff_t;

static void *produce(void *arg)
{
    handoff_t *h = arg;
    for (int i = 0; i < HANDOFFS; i++) {
        void *p = alloc_ok(h->a, 4 * KiB, h->s);
        void *_Atomic *slot = &h->ring[i % 64];
        while (atomic_load(slot)) {}                  /* the consumer's turn */
        atomic_store(slot, p);
        atomic_store(&h->made, i + 1);
    }
    return NULL;
}

Test(locks, frees_from_another_thread_make_no_record, .timeout = 60)
{
    cca_allocator_t *a = make_alloc("");
    handoff_t h = { .a = a };
    cca_stream_t *base = stream_with_record(a, &h.s);
    cca_stats_t s0 = stats_of(a);
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, produce, &h), 0);
    for (int i = 0; i < HANDOFFS; i++) {
        void *_Atomic *slot = &h.ring[i % 64];
        void *p;
        while (!(p = atomic_exchange(slot, NULL))) {}
        free_ok(a, p);
    }
    pthread_join(t, NULL);
    cca_stats_t s1 = stats_of(a);
    cr_assert_eq(records_of(a, h.s), 1, "the producer got a record of its own (%lld waits)",
                 (long long)(s1.lock_streams_contended - s0.lock_streams_contended));
    cr_assert(!base->shared);
    cudaStreamDestroy(h.s);
    finish(a);
}

/* The stream table, filled anew as it grows, keeps the stream's own
 * record under its key, never a thread's. */
Test(locks, the_stream_table_grown_keeps_the_streams_own_record)
{
    cca_allocator_t *a = make_alloc("");
    cudaStream_t s, more[40];
    cca_stream_t *base = stream_with_record(a, &s);
    crowd_t c = { .a = a, .s = s, .n = 9 };
    for (int i = 0; i < 9; i++) c.sizes[i] = 4 * KiB;
    pthread_t t;
    crowd_run(&c, &t, base, 8, false);
    cr_assert_neq(c.rec, base);
    const cca_stream_table_t *t0 = atomic_load(&a->stab);
    for (int i = 0; i < 40; i++) {
        cr_assert_eq(cudaStreamCreate(&more[i]), cudaSuccess);
        free_ok(a, alloc_ok(a, 4 * KiB, more[i]));
    }
    cr_assert_neq(atomic_load(&a->stab), t0, "the table did not grow");
    cr_assert_eq(_cca_stream_lookup(a, base->key), base);
    check_ok(a);
    for (int i = 0; i < 9; i++) free_ok(a, c.p[i]);
    atomic_store(&c.stay, 0);
    pthread_join(t, NULL);
    for (int i = 0; i < 40; i++) cudaStreamDestroy(more[i]);
    cudaStreamDestroy(s);
    finish(a);
}

/* cudaStreamPerThread is one thread's stream already: no record of its
 * own besides, nor for a stream cca has no record of. */
Test(locks, no_thread_record_of_a_per_thread_stream)
{
    cca_allocator_t *a = make_alloc("");
    free_ok(a, alloc_ok(a, 4 * KiB, cudaStreamPerThread));
    uint64_t key = _cca_stream_key(a->cfg.device, cudaStreamPerThread);
    cr_assert(_cca_stream_is_per_thread_key(key));
    cudaStream_t never;
    cr_assert_eq(cudaStreamCreate(&never), cudaSuccess);
    _cca_alloc_lock_all(a);
    cca_stream_t *own = _cca_stream_shard(a, key);
    cca_stream_t *none = _cca_stream_shard(a, _cca_stream_key(a->cfg.device, never));
    _cca_alloc_unlock_all(a, NULL);
    cr_assert_null(own);
    cr_assert_null(none);
    cr_assert_eq(a->n_streams, 1);
    cudaStreamDestroy(never);
    finish(a);
}

/* A thread's record about to grow takes over a wholly free segment of the
 * stream's own record instead (the stream's cache is shared, not
 * multiplied): a second generation of threads makes no new segment. */
Test(locks, a_threads_record_takes_over_the_streams_free_segment_before_growing)
{
    cca_allocator_t *a = make_alloc("");
    cudaStream_t s;
    cca_stream_t *base = stream_with_record(a, &s);
    void *big = alloc_ok(a, 4 * MiB, s);              /* base: a 20 MiB large segment */
    free_ok(a, big);
    crowd_t c = { .a = a, .s = s, .n = 10 };
    for (int i = 0; i < 8; i++) c.sizes[i] = 4 * KiB;
    c.sizes[8] = c.sizes[9] = 4 * MiB;                /* large: base's free 20 MiB segment, taken over */
    unsigned long mallocs = cca_sim_calls(CCA_SIM_MALLOC);
    pthread_t t;
    crowd_run(&c, &t, base, 8, false);
    cr_assert_neq(c.rec, base);
    cr_assert_eq(cca_sim_calls(CCA_SIM_MALLOC) - mallocs, 1, "the thread's record made more than its small segment");
    const cca_segment_t *g = NULL;
    for (const cca_segment_t *x = a->segments; x; x = x->next)
        if (x->pool == CCA_POOL_LARGE) g = x;
    cr_assert_not_null(g);
    cr_assert_eq(g->stream, c.rec, "the large segment is still base's");
    cr_assert_not_null(_cca_ptrmap_get(&c.rec->live, (uintptr_t)c.p[9]));
    check_ok(a);
    for (int i = 0; i < 10; i++) free_ok(a, c.p[i]);
    atomic_store(&c.stay, 0);
    pthread_join(t, NULL);
    check_ok(a);
    cr_assert_eq(g->stream, base, "not handed back at thread exit");
    cca_stats_t st = stats_of(a);
    cr_assert_eq(st.num_device_free, 0);
    cudaStreamDestroy(s);
    finish(a);
}

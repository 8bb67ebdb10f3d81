/* test_contracts.c - the core's contracts with callers on other threads
 * and with bindings: pointers found from any thread through the address
 * map, per-thread streams retired when their thread exits, explicit
 * retirement, oversize figures, the cap changed at run time. Reads a few
 * internal counters (what a call visited and locked) through internal.h. */
#include <malloc.h>
#include <pthread.h>
#include "common.h"
#include "abi_v1.h"
#include "internal.h"

static void setup(void) { cca_sim_reset(); }
TestSuite(contracts, .init = setup, .timeout = 120);

/* ---- pointer -> block from any thread ----------------------------------- */

static void *alloc_free_per_thread(void *arg)
{
    cca_allocator_t *a = arg;
    void *p = NULL;
    if (cca_malloc(a, &p, 512, cudaStreamPerThread) != CCA_OK) return (void *)1;
    return cca_free(a, p) == CCA_OK ? NULL : (void *)1;
}

static void run_threads(cca_allocator_t *a, int n, void *(*fn)(void *))
{
    for (int i = 0; i < n; i++) {
        pthread_t t;
        void *ret = (void *)1;
        cr_assert_eq(pthread_create(&t, NULL, fn, a), 0);
        pthread_join(t, &ret);
        cr_assert_null(ret, "thread %d failed: %s", i, cca_last_error_string());
    }
}

typedef struct cross { cca_allocator_t *a; void *p; cca_status_t s; } cross_t;

static void *free_elsewhere(void *arg)
{
    cross_t *c = arg;
    c->s = cca_free(c->a, c->p);
    return NULL;
}

static uint64_t lookups_total(cca_allocator_t *a)
{
    uint64_t n = 0;
    for (cca_stream_t *st = a->streams; st; st = st->next) n += st->lookups;
    return n;
}

/* The block's own stream record, found through the map. */
static cca_stream_t *owner_of(cca_allocator_t *a, void *p)
{
    cca_segment_t *seg = _cca_segmap_find(a, (uintptr_t)p);
    cr_assert_not_null(seg);
    return seg->stream;
}

Test(contracts, cross_thread_free_after_1000_exited_threads_visits_one_record_and_locks_one)
{
    cca_allocator_t *a = make_alloc("");
    run_threads(a, 1000, alloc_free_per_thread);
    cudaStream_t s;
    cr_assert_eq(cudaStreamCreate(&s), cudaSuccess);
    void *p = alloc_ok(a, 4096, s);
    cca_stream_t *own = owner_of(a, p);
    uint64_t locks = a->lock_all_count, total = lookups_total(a), mine = own->lookups;
    cross_t c = { a, p, CCA_ERROR_CUDA };
    pthread_t t;
    pthread_create(&t, NULL, free_elsewhere, &c);
    pthread_join(t, NULL);
    cr_assert_eq(c.s, CCA_OK, "%s", cca_last_error_string());
    cr_assert_eq(a->lock_all_count, locks, "the free took the all-locked path");
    cr_assert_eq(own->lookups, mine + 1, "the owner's record was not the one visited");
    cr_assert_eq(lookups_total(a), total + 1, "another record was visited");
    /* the same from the allocating thread, and record_stream from another */
    void *q = alloc_ok(a, 4096, s);
    locks = a->lock_all_count;
    free_ok(a, q);
    cr_assert_eq(a->lock_all_count, locks);
    cr_assert_eq(cudaStreamDestroy(s), cudaSuccess);
    finish(a);
}

typedef struct rec { cca_allocator_t *a; void *p; cudaStream_t s; cca_status_t st; } rec_t;

static void *record_elsewhere(void *arg)
{
    rec_t *r = arg;
    r->st = cca_record_stream(r->a, r->p, r->s);
    return NULL;
}

Test(contracts, record_stream_from_another_thread_finds_the_owner_without_the_all_locked_path)
{
    cca_allocator_t *a = make_alloc("");
    cudaStream_t s1, s2;
    cudaStreamCreate(&s1);
    cudaStreamCreate(&s2);
    void *p = alloc_ok(a, 1 * MiB + 512, s1);
    uint64_t locks = a->lock_all_count;
    rec_t r = { a, p, s2, CCA_ERROR_CUDA };
    pthread_t t;
    pthread_create(&t, NULL, record_elsewhere, &r);
    pthread_join(t, NULL);
    cr_assert_eq(r.st, CCA_OK);
    cr_assert_eq(a->lock_all_count, locks);
    cca_sim_stream_hold(s2);
    free_ok(a, p);                                   /* an event on s2 holds the block */
    cca_stats_t st = stats_of(a);
    ASSERT_STAT(st, active, CCA_POOL_LARGE, 1);
    cca_sim_stream_release(s2);
    cudaStreamDestroy(s1);
    cudaStreamDestroy(s2);
    finish(a);
}

Test(contracts, bad_pointers_are_refused_on_every_path)
{
    cca_allocator_t *a = make_alloc("");
    void *p = alloc_ok(a, 4096, 0);
    char *in = (char *)p + 512;
    cr_assert_eq(cca_free(a, in), CCA_ERROR_INVALID_POINTER, "interior pointer");
    cr_assert_eq(cca_record_stream(a, in, 0), CCA_ERROR_INVALID_POINTER);
    int host;
    cr_assert_eq(cca_free(a, &host), CCA_ERROR_INVALID_POINTER, "foreign pointer");
    cr_assert_eq(cca_free(a, (void *)UINTPTR_MAX), CCA_ERROR_INVALID_POINTER, "top of the address space");
    free_ok(a, p);
    cr_assert_eq(cca_free(a, p), CCA_ERROR_INVALID_POINTER, "double free");
    cr_assert_eq(cca_empty_cache(a), CCA_OK);
    cr_assert_eq(cca_free(a, p), CCA_ERROR_INVALID_POINTER, "pointer into a released segment");
    cr_assert_eq(cca_record_stream(a, p, 0), CCA_ERROR_INVALID_POINTER);
    finish(a);
}

/* Segments at addresses that share a 2 MiB chunk (the simulator carves at
 * 512 B alignment): each pointer still finds its own segment. */
Test(contracts, segments_sharing_a_chunk_are_told_apart)
{
    cca_allocator_t *a = make_alloc("");
    void *gap = NULL;
    cr_assert_eq(cudaMalloc(&gap, 1 * MiB), cudaSuccess);   /* shifts the next segments off 2 MiB boundaries */
    void *p[12];
    for (int i = 0; i < 12; i++) p[i] = alloc_ok(a, 1 * MiB, 0);   /* two per 2 MiB segment */
    int unaligned = 0;
    for (int i = 0; i < 12; i++) {
        cca_segment_t *s = _cca_segmap_find(a, (uintptr_t)p[i]);
        cr_assert(s && s->addr <= (uintptr_t)p[i] && (uintptr_t)p[i] < s->addr + s->size, "pointer %d", i);
        cr_assert_eq(_cca_segmap_find(a, s->addr + s->size - 1), s);
        cr_assert_eq(owner_of(a, p[i]), s->stream);
        unaligned += (s->addr & (2 * MiB - 1)) != 0;
    }
    cr_assert_gt(unaligned, 0, "no segment straddles a chunk boundary: the test shows nothing");
    for (int i = 0; i < 12; i++) free_ok(a, p[i]);
    cr_assert_eq(cudaFree(gap), cudaSuccess);
    finish(a);
}

/* ---- retiring per-thread streams ---------------------------------------- */

static size_t heap_in_use(void) { return mallinfo2().uordblks; }

#if defined(__SANITIZE_ADDRESS__)
#define HEAP_MEASURED 0                               /* ASan's allocator does not answer mallinfo2 */
#else
#define HEAP_MEASURED 1
#endif

/* Keep its name last in the suite (tests run in name order): Criterion
 * leaks 48 bytes, which LeakSanitizer reports, when a test that sets its own
 * .timeout is followed by another (seen with Debian 12's Criterion). */
Test(contracts, ten_thousand_short_lived_threads_leave_no_stream_records_behind, .timeout = 300)
{
    cca_allocator_t *a = make_alloc("");
    free_ok(a, alloc_ok(a, 512, 0));                 /* the main thread's stream exists */
    run_threads(a, 10, alloc_free_per_thread);        /* warm: thread stacks, key tables */
    free_ok(a, alloc_ok(a, 512, 0));
    size_t heap0 = heap_in_use();
    int64_t host0 = stats_of(a).host_bytes;
    run_threads(a, 10000, alloc_free_per_thread);
    free_ok(a, alloc_ok(a, 512, cudaStreamPerThread));   /* one more all-locked call on the main thread */
    cr_assert_leq(a->n_streams, 8, "%zu stream records", a->n_streams);
    cca_stats_t s = stats_of(a);
    cr_assert_leq(s.reserved_bytes[CCA_POOL_ALL].current, (int64_t)(16 * MiB), "%lld bytes reserved",
                  (long long)s.reserved_bytes[CCA_POOL_ALL].current);
    cr_assert_geq(s.num_sync_all_streams, 10000, "one device-wide wait per retirement");
    cr_assert_leq(s.host_bytes, host0 + (int64_t)(64 * KiB), "host_bytes %lld, was %lld",
                  (long long)s.host_bytes, (long long)host0);
    if (HEAP_MEASURED) {
        size_t heap1 = heap_in_use();
        cr_assert_leq(heap1, heap0 + 1 * MiB, "heap in use went from %zu to %zu bytes", heap0, heap1);
    }
    finish(a);
}

typedef struct keep { cca_allocator_t *a; void *p; } keep_t;

static void *alloc_keep_per_thread(void *arg)
{
    keep_t *k = arg;
    void *tmp = NULL;
    if (cca_malloc(k->a, &k->p, 4096, cudaStreamPerThread) != CCA_OK) return (void *)1;
    if (cca_malloc(k->a, &tmp, 4 * MiB, cudaStreamPerThread) != CCA_OK) return (void *)1;   /* a large segment */
    return cca_free(k->a, tmp) == CCA_OK ? NULL : (void *)1;
}

Test(contracts, a_dead_threads_live_block_is_freed_later_and_its_record_goes_then)
{
    cca_allocator_t *a = make_alloc("");
    keep_t k = { a, NULL };
    pthread_t t;
    void *ret = (void *)1;
    pthread_create(&t, NULL, alloc_keep_per_thread, &k);
    pthread_join(t, &ret);
    cr_assert_null(ret);
    cca_stats_t s = stats_of(a);                      /* all locked: the thread's stream is retired */
    ASSERT_STAT(s, segment, CCA_POOL_ALL, 1);         /* its fully free large segment went back */
    ASSERT_STAT(s, segment, CCA_POOL_SMALL, 1);       /* the live block keeps its small one */
    cr_assert_eq(s.num_device_free, 1);
    cr_assert_eq(s.num_sync_all_streams, 1);
    cr_assert_eq(a->n_streams, 1, "the dead record stays while it holds a segment");
    check_ok(a);
    free_ok(a, k.p);                                  /* from the main thread */
    s = stats_of(a);
    ASSERT_STAT(s, segment, CCA_POOL_ALL, 0);
    cr_assert_eq(s.num_device_free, 2);
    cr_assert_eq(s.num_sync_all_streams, 1, "no second wait: the stream's work was waited for");
    cr_assert_eq(a->n_streams, 0);
    ASSERT_STAT(s, allocation, CCA_POOL_ALL, 0);
    cr_assert_eq(s.allocation[CCA_POOL_ALL].allocated, 2, "a retired stream's totals stay counted");
    cr_assert_eq(s.allocation[CCA_POOL_ALL].freed, 2);
    finish(a);
}

Test(contracts, retire_returns_cached_segments_and_a_reused_handle_is_a_new_stream)
{
    cca_allocator_t *a = make_alloc("");
    cudaStream_t s;
    cr_assert_eq(cudaStreamCreate(&s), cudaSuccess);
    void *live = alloc_ok(a, 1 * KiB, s);
    free_ok(a, alloc_ok(a, 4 * MiB, s));             /* a fully free 20 MiB segment */
    cca_stats_t st = stats_of(a);
    ASSERT_STAT(st, segment, CCA_POOL_ALL, 2);
    cr_assert_eq(cca_stream_retire(a, s), CCA_OK);
    st = stats_of(a);
    ASSERT_STAT(st, segment, CCA_POOL_ALL, 1);
    cr_assert_eq(st.num_device_free, 1);
    cr_assert_eq(st.num_sync_all_streams, 1);
    cr_assert_eq(cudaStreamDestroy(s), cudaSuccess);
    cudaStream_t s2;
    cr_assert_eq(cudaStreamCreate(&s2), cudaSuccess);
    cr_assert_eq(s2, s, "the simulator reuses the handle");
    void *q = alloc_ok(a, 1 * KiB, s2);
    cr_assert_neq(owner_of(a, q), owner_of(a, live), "the reused handle got the old stream's record");
    st = stats_of(a);
    ASSERT_STAT(st, segment, CCA_POOL_SMALL, 2);      /* not carved from the retired stream's segment */
    free_ok(a, live);
    st = stats_of(a);
    ASSERT_STAT(st, segment, CCA_POOL_SMALL, 1);
    cr_assert_eq(a->n_streams, 1);
    free_ok(a, q);
    cr_assert_eq(cca_stream_retire(a, NULL), CCA_ERROR_INVALID_ARGUMENT);
    cr_assert_eq(cca_stream_retire(a, (cudaStream_t)0x12345600), CCA_OK, "a stream cca never saw");
    cr_assert_eq(cca_stream_retire(NULL, s2), CCA_ERROR_INVALID_ARGUMENT);
    cudaStreamDestroy(s2);
    finish(a);
}

/* The thread cache of another thread still names the retired record:
 * its next allocation on the handle must not use it. */
typedef struct twice { cca_allocator_t *a; cudaStream_t s; void *p[2]; pthread_barrier_t *b; } twice_t;

static void *alloc_twice(void *arg)
{
    twice_t *w = arg;
    if (cca_malloc(w->a, &w->p[0], 512, w->s) != CCA_OK) return (void *)1;
    pthread_barrier_wait(w->b);                      /* main retires the stream */
    pthread_barrier_wait(w->b);
    return cca_malloc(w->a, &w->p[1], 512, w->s) == CCA_OK ? NULL : (void *)1;
}

Test(contracts, a_retired_record_in_another_threads_cache_is_not_used)
{
    cca_allocator_t *a = make_alloc("");
    cudaStream_t s;
    cudaStreamCreate(&s);
    pthread_barrier_t b;
    pthread_barrier_init(&b, NULL, 2);
    twice_t w = { a, s, { NULL, NULL }, &b };
    pthread_t t;
    pthread_create(&t, NULL, alloc_twice, &w);
    pthread_barrier_wait(&b);
    cca_stream_t *old = owner_of(a, w.p[0]);
    cr_assert_eq(cca_stream_retire(a, s), CCA_OK);
    pthread_barrier_wait(&b);
    void *ret = (void *)1;
    pthread_join(t, &ret);
    cr_assert_null(ret);
    cr_assert_neq(owner_of(a, w.p[1]), old);
    cr_assert_eq(owner_of(a, w.p[1])->key, (uint64_t)(uintptr_t)s);
    free_ok(a, w.p[0]);
    free_ok(a, w.p[1]);
    pthread_barrier_destroy(&b);
    cudaStreamDestroy(s);
    finish(a);
}

/* ---- oversize figures and max_split_size -------------------------------- */

Test(contracts, oversize_allocations_and_segments_as_pytorch_counts_them)
{
    cca_allocator_t *a = make_alloc("max_split_size_mb:64");
    void *big = alloc_ok(a, 100 * MiB, 0);           /* oversize block, oversize segment */
    void *mid = alloc_ok(a, 30 * MiB, 0);            /* neither */
    cca_stats_t s = stats_of(a);
    cr_assert_eq(s.max_split_size, (int64_t)(64 * MiB));
    cr_assert_eq(s.oversize_allocations.current, 1);
    cr_assert_eq(s.oversize_segments.current, 1);
    free_ok(a, big);
    s = stats_of(a);
    cr_assert_eq(s.oversize_allocations.current, 0);
    cr_assert_eq(s.oversize_allocations.peak, 1);
    cr_assert_eq(s.oversize_allocations.allocated, 1);
    cr_assert_eq(s.oversize_allocations.freed, 1);
    cr_assert_eq(s.oversize_segments.current, 1, "the cached segment is still oversize");
    void *again = alloc_ok(a, 100 * MiB, 0);          /* the cached oversize block, no new segment */
    cr_assert_eq(again, big);
    s = stats_of(a);
    cr_assert_eq(s.oversize_allocations.allocated, 2);
    cr_assert_eq(s.oversize_segments.allocated, 1);
    free_ok(a, again);
    free_ok(a, mid);
    cr_assert_eq(cca_empty_cache(a), CCA_OK);
    s = stats_of(a);
    cr_assert_eq(s.oversize_segments.current, 0);
    cr_assert_eq(s.oversize_segments.freed, 1);
    cr_assert_eq(cca_reset_peak_stats(a), CCA_OK);
    s = stats_of(a);
    cr_assert_eq(s.oversize_allocations.peak, 0);
    cr_assert_eq(cca_reset_accumulated_stats(a), CCA_OK);
    s = stats_of(a);
    cr_assert_eq(s.oversize_allocations.allocated, 0);
    cr_assert_eq(s.oversize_segments.freed, 0);
    finish(a);
}

Test(contracts, no_split_limit_reports_minus_one_and_no_oversize)
{
    cca_allocator_t *a = make_alloc("");
    void *p = alloc_ok(a, 300 * MiB, 0);
    cca_stats_t s = stats_of(a);
    cr_assert_eq(s.max_split_size, -1);
    cr_assert_eq(s.oversize_allocations.current, 0);
    cr_assert_eq(s.oversize_segments.current, 0);
    cr_assert_gt(s.host_bytes, 0);
    free_ok(a, p);
    finish(a);
}

/* ---- the cap at run time ------------------------------------------------ */

Test(contracts, cap_set_at_run_time_applies_to_the_next_growth)
{
    cca_sim_set_capacity(0, 64 * MiB);
    cca_allocator_t *a = make_alloc("");
    size_t cap = 1, limit = 1;
    double frac = 1;
    cr_assert_eq(cca_get_memory_cap(a, &cap, &frac, &limit), CCA_OK);
    cr_assert_eq(cap, 0);
    cr_assert_eq(frac, 0.0);
    cr_assert_eq(limit, 0);
    void *p = alloc_ok(a, 40 * MiB, 0);
    cr_assert_eq(cca_set_memory_fraction(a, 0.5), CCA_OK);
    cr_assert_eq(cca_get_memory_cap(a, &cap, &frac, NULL), CCA_OK);
    cr_assert_eq(cap, 32 * MiB);
    cr_assert_eq(frac, 0.5);
    cca_stats_t s = stats_of(a);
    ASSERT_STAT(s, reserved_bytes, CCA_POOL_ALL, 40 * MiB);   /* stays above the new cap */
    void *q = NULL;
    cr_assert_eq(cca_malloc(a, &q, 1 * MiB, 0), CCA_ERROR_OUT_OF_MEMORY, "the cap refuses the next segment");
    cca_oom_report_t r;
    cr_assert_eq(cca_last_oom_report(a, &r), CCA_OK);
    cr_assert_eq(r.cap, 32 * MiB);
    cr_assert(r.cap_refused);
    free_ok(a, p);
    q = alloc_ok(a, 1 * MiB, 0);                     /* release-and-retry made room */
    s = stats_of(a);
    ASSERT_STAT(s, reserved_bytes, CCA_POOL_ALL, 2 * MiB);
    cr_assert_eq(cca_set_memory_limit(a, 8 * MiB), CCA_OK);   /* smaller than the fraction's: it wins */
    cr_assert_eq(cca_get_memory_cap(a, &cap, NULL, &limit), CCA_OK);
    cr_assert_eq(cap, 8 * MiB);
    cr_assert_eq(limit, 8 * MiB);
    cr_assert_eq(cca_set_memory_limit(a, 0), CCA_OK);
    cr_assert_eq(cca_set_memory_fraction(a, 0.0), CCA_OK);
    cr_assert_eq(cca_get_memory_cap(a, &cap, NULL, NULL), CCA_OK);
    cr_assert_eq(cap, 0, "both removed: no cap");
    free_ok(a, q);
    finish(a);
}

Test(contracts, bad_run_time_caps_are_refused_and_change_nothing)
{
    cca_sim_set_capacity(0, 64 * MiB);
    cca_allocator_t *a = make_alloc("memory_limit_mb:32");
    const double fr[] = { -0.1, 1.5, __builtin_nan(""), __builtin_inf(), 1e-300, 0.01 };   /* 0.01 of 64 MiB < 2 MiB */
    for (size_t i = 0; i < sizeof fr / sizeof fr[0]; i++) {
        cr_assert_eq(cca_set_memory_fraction(a, fr[i]), CCA_ERROR_INVALID_ARGUMENT, "fraction %g", fr[i]);
        cr_assert_neq(cca_last_error_string()[0], 0);
    }
    cr_assert_eq(cca_set_memory_limit(a, 2 * MiB - 1), CCA_ERROR_INVALID_ARGUMENT);
    cr_assert_eq(cca_set_memory_limit(a, 1), CCA_ERROR_INVALID_ARGUMENT);
    size_t cap = 0, limit = 0;
    double frac = 1;
    cr_assert_eq(cca_get_memory_cap(a, &cap, &frac, &limit), CCA_OK);
    cr_assert_eq(cap, 32 * MiB);
    cr_assert_eq(limit, 32 * MiB);
    cr_assert_eq(frac, 0.0);
    cr_assert_eq(cca_set_memory_limit(a, 2 * MiB), CCA_OK, "one small segment is enough");
    cr_assert_eq(cca_set_memory_fraction(NULL, 0.5), CCA_ERROR_INVALID_ARGUMENT);
    cr_assert_eq(cca_set_memory_limit(NULL, 0), CCA_ERROR_INVALID_ARGUMENT);
    cr_assert_eq(cca_get_memory_cap(NULL, &cap, NULL, NULL), CCA_ERROR_INVALID_ARGUMENT);
    finish(a);
}

/* ---- structs that can grow ---------------------------------------------- */

#define PAD 0xAB

static bool all_bytes(const void *p, size_t n, unsigned char v)
{
    for (size_t i = 0; i < n; i++)
        if (((const unsigned char *)p)[i] != v) return false;
    return true;
}

Test(contracts, an_older_programs_stats_struct_is_not_written_past)
{
    cca_allocator_t *a = make_alloc("");
    free_ok(a, alloc_ok(a, 4096, 0));
    size_t v1 = offsetof(cca_stats_t, oversize_allocations);   /* the struct before the appended fields */
    unsigned char buf[sizeof(cca_stats_t) + 64];
    memset(buf, PAD, sizeof buf);
    cr_assert_eq(cca_get_stats_sized(a, (cca_stats_t *)(void *)buf, v1), CCA_OK);
    cr_assert(all_bytes(buf + v1, sizeof buf - v1, PAD), "written past the caller's struct");
    cca_stats_t full = stats_of(a);
    cr_assert_eq(memcmp(buf, &full, v1), 0, "the fields that fit are the same figures");
    memset(buf, PAD, sizeof buf);
    cr_assert_eq(v1_cca_get_stats(a, (cca_stats_t *)(void *)buf), CCA_OK, "the plain symbol, as an old binary calls it");
    cr_assert(all_bytes(buf + v1, sizeof buf - v1, PAD));
    memset(buf, PAD, sizeof buf);                     /* a newer program: zeros past what we know */
    cr_assert_eq(cca_get_stats_sized(a, (cca_stats_t *)(void *)buf, sizeof buf), CCA_OK);
    cr_assert(all_bytes(buf + sizeof(cca_stats_t), 64, 0));
    cr_assert_eq(cca_get_stats_sized(a, (cca_stats_t *)(void *)buf, v1 - 8), CCA_ERROR_INVALID_ARGUMENT);
    finish(a);
}

/* The first versions' sizes are numbers, not sizeofs: appending a field
 * never moves them. Each is the offset of the first field appended after
 * it; a struct nothing was appended to yet is still its own size (when
 * one grows, its line here names the first new field instead). */
Test(contracts, first_version_sizes_are_frozen_numbers)
{
    cr_assert_eq(CCA_V1_STATS, 904);
    cr_assert_eq(offsetof(cca_stats_t, oversize_allocations), CCA_V1_STATS);
    cr_assert_eq(CCA_V1_CONFIG, 120);
    cr_assert_eq(offsetof(cca_config_t, expandable_segments), CCA_V1_CONFIG);
    cr_assert_eq(CCA_V1_FRAG, 3168);
    cr_assert_eq(offsetof(cca_frag_t, unmapped), CCA_V1_FRAG);
    cr_assert_eq(CCA_V1_SEG, 64);
    cr_assert_eq(offsetof(cca_segment_info_t, is_expandable), CCA_V1_SEG);
    cr_assert_eq(CCA_V1_BLOCK, 56);
    cr_assert_eq(offsetof(cca_block_info_t, tag), CCA_V1_BLOCK);
    cr_assert_eq(CCA_V1_OOM, 496);
    cr_assert_eq(offsetof(cca_oom_report_t, need_cap), CCA_V1_OOM);
    cr_assert_eq(CCA_V1_SCOPE, 48);
    cr_assert_eq(offsetof(cca_scope_result_t, left_allocated), CCA_V1_SCOPE);
    cr_assert_eq(CCA_V1_HISTORY, 56);
    cr_assert_eq(offsetof(cca_history_entry_t, context), CCA_V1_HISTORY);
    cr_assert_eq(CCA_V1_NOTICE, 48);
    cr_assert_eq(sizeof(cca_notice_t), CCA_V1_NOTICE, "cca_notice_t grew: pin CCA_V1_NOTICE to its first new field");
}

/* A program built when cca_config_t ended at segment_growth_percent (120
 * bytes): its config is read and filled, and a key whose field it lacks is
 * refused with the reason instead of being dropped. */
Test(contracts, a_first_version_config_is_used_and_keys_it_cannot_hold_are_refused)
{
    cca_sim_set_capacity(0, 1 * GiB);
    unsigned char cb[sizeof(cca_config_t) + 16];      /* room for the whole struct: the compiler sees it; the test checks the bytes past 120 */
    memset(cb, PAD, sizeof cb);
    cca_config_t *c = (cca_config_t *)(void *)cb;
    v1_cca_config_init(c);
    cr_assert(all_bytes(cb + CCA_V1_CONFIG, 16, PAD), "written past the caller's struct");
    char err[256] = "";
    cr_assert_eq(v1_cca_config_parse(c, "max_split_size_mb:64,release_before_grow:True", err, sizeof err), CCA_OK, "%s", err);
    cr_assert_eq(c->max_split_size, 64 * MiB);
    cr_assert_eq(c->release_before_grow, 1);
    cr_assert(all_bytes(cb + CCA_V1_CONFIG, 16, PAD));
    const char *refused[] = { "expandable_segments:True", "preset:expandable", "max_split_size_mb:32,expandable_segments:1" };
    for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
        cr_assert_eq(cca_config_parse_sized(c, CCA_V1_CONFIG, refused[i], err, sizeof err), CCA_ERROR_INVALID_CONFIG, "%s", refused[i]);
        cr_assert(strstr(err, "expandable_segments") && strstr(err, "120-byte"), "%s", err);
        cr_assert_str_eq(cca_last_error_string(), err);
        cr_assert_eq(c->max_split_size, 64 * MiB, "a refused string changes nothing");
    }
    cr_assert_eq(cca_config_parse_sized(c, CCA_V1_CONFIG, "expandable_segments:False,preset:pytorch", err, sizeof err),
                 CCA_ERROR_INVALID_CONFIG, "preset:pytorch after the key: given before a preset that sets it");
    cr_assert_eq(cca_config_parse_sized(c, CCA_V1_CONFIG, "expandable_segments:False", err, sizeof err), CCA_OK,
                 "the default the program cannot hold anyway: %s", err);
    cr_assert(all_bytes(cb + CCA_V1_CONFIG, 16, PAD));
    cca_allocator_t *a = NULL;
    cr_assert_eq(v1_cca_create(c, &a), CCA_OK, "%s", cca_last_error_string());
    cca_config_t now;
    cr_assert_eq(cca_get_config(a, &now), CCA_OK);
    cr_assert_eq(now.max_split_size, 64 * MiB);
    cr_assert_eq(now.expandable_segments, 0, "the field it lacks keeps its default");
    memset(cb, PAD, sizeof cb);
    cr_assert_eq(v1_cca_get_config(a, c), CCA_OK);
    cr_assert_eq(c->max_split_size, 64 * MiB);
    cr_assert(all_bytes(cb + CCA_V1_CONFIG, 16, PAD));
    cca_allocator_t *b = NULL;
    cr_assert_eq(cca_create_sized(c, CCA_V1_CONFIG - 8, &b), CCA_ERROR_INVALID_ARGUMENT);
    finish(a);
}

Test(contracts, sized_reports_fragmentation_scopes_and_configs)
{
    cca_sim_set_capacity(0, 64 * MiB);
    cca_allocator_t *a = make_alloc("");
    unsigned char buf[sizeof(cca_frag_t) + sizeof(cca_oom_report_t) + 32];
    /* fragmentation and the OOM report into a larger (newer) struct */
    memset(buf, PAD, sizeof buf);
    cr_assert_eq(cca_get_fragmentation_sized(a, (cca_frag_t *)(void *)buf, sizeof(cca_frag_t) + 16), CCA_OK);
    cr_assert(all_bytes(buf + sizeof(cca_frag_t), 16, 0));
    void *p = NULL;
    cr_assert_eq(cca_malloc(a, &p, 100 * MiB, 0), CCA_ERROR_OUT_OF_MEMORY);
    memset(buf, PAD, sizeof buf);
    cr_assert_eq(cca_last_oom_report_sized(a, (cca_oom_report_t *)(void *)buf, sizeof(cca_oom_report_t) + 32), CCA_OK);
    cr_assert(all_bytes(buf + sizeof(cca_oom_report_t), 32, 0));
    cr_assert(all_bytes(buf + sizeof(cca_oom_report_t) + 32, 8, PAD));
    cr_assert_eq(((cca_oom_report_t *)(void *)buf)->requested, 100 * MiB);
    char t1[512], t2[512];
    size_t n1 = cca_oom_report_format((cca_oom_report_t *)(void *)buf, t1, sizeof t1);
    size_t n2 = cca_oom_report_format_sized((cca_oom_report_t *)(void *)buf, sizeof(cca_oom_report_t) + 32, t2, sizeof t2);
    cr_assert_eq(n1, n2);
    cr_assert_str_eq(t1, t2);
    cr_assert_eq(cca_oom_report_format_sized((cca_oom_report_t *)(void *)buf, 8, t2, sizeof t2), 0);
    cr_assert_eq(cca_last_oom_report_sized(a, (cca_oom_report_t *)(void *)buf, 8), CCA_ERROR_INVALID_ARGUMENT);
    /* a scope's result into a smaller struct than ours is refused; ours exactly is filled */
    uint64_t tok;
    cr_assert_eq(cca_scope_begin(a, &tok), CCA_OK);
    free_ok(a, alloc_ok(a, 4096, 0));
    memset(buf, PAD, sizeof buf);
    cr_assert_eq(cca_scope_end_sized(a, tok, (cca_scope_result_t *)(void *)buf, 4), CCA_ERROR_INVALID_ARGUMENT);
    cr_assert_eq(cca_scope_end_sized(a, tok, (cca_scope_result_t *)(void *)buf, sizeof(cca_scope_result_t)), CCA_OK);
    cr_assert_eq(((cca_scope_result_t *)(void *)buf)->allocations, 1);
    cr_assert(all_bytes(buf + sizeof(cca_scope_result_t), 8, PAD));
    /* configs: init fills what fits, parse keeps the caller's unknown tail, create reads only the caller's size */
    unsigned char cb[sizeof(cca_config_t) + 16];
    memset(cb, PAD, sizeof cb);
    cca_config_init_sized((cca_config_t *)(void *)cb, sizeof(cca_config_t));
    cr_assert(all_bytes(cb + sizeof(cca_config_t), 16, PAD));
    cr_assert_eq(((cca_config_t *)(void *)cb)->max_split_size, SIZE_MAX);
    cr_assert_eq(cca_config_parse_sized((cca_config_t *)(void *)cb, sizeof(cca_config_t), "max_split_size_mb:64", NULL, 0),
                 CCA_OK);
    cr_assert_eq(((cca_config_t *)(void *)cb)->max_split_size, 64 * MiB);
    cr_assert(all_bytes(cb + sizeof(cca_config_t), 16, PAD));
    cca_allocator_t *b = NULL;
    cr_assert_eq(cca_create_sized((cca_config_t *)(void *)cb, sizeof cb, &b), CCA_OK, "a newer program's bigger config");
    cca_stats_t s = stats_of(b);
    cr_assert_eq(s.max_split_size, (int64_t)(64 * MiB));
    cca_destroy(b);
    cr_assert_eq(cca_create_sized((cca_config_t *)(void *)cb, 4, &b), CCA_ERROR_INVALID_ARGUMENT);
    cr_assert_eq(cca_config_parse_sized((cca_config_t *)(void *)cb, 4, "", NULL, 0), CCA_ERROR_INVALID_ARGUMENT);
    finish(a);
}

typedef struct big_seg { cca_segment_info_t info; size_t extra[4]; } big_seg_t;
typedef struct big_block { cca_block_info_t info; size_t extra[4]; } big_block_t;

static int seg_extra_zero(const cca_segment_info_t *s, void *arg)
{
    const big_seg_t *b = (const big_seg_t *)(const void *)s;
    for (int i = 0; i < 4; i++) *(int *)arg |= b->extra[i] != 0;
    return 0;
}

static int block_extra_zero(const cca_block_info_t *s, void *arg)
{
    const big_block_t *b = (const big_block_t *)(const void *)s;
    for (int i = 0; i < 4; i++) *(int *)arg |= b->extra[i] != 0;
    return 0;
}

static int oom_extra;
static void oom_big(const cca_oom_report_t *r, void *arg)
{
    (void)arg;
    const unsigned char *p = (const unsigned char *)r;
    oom_extra = r->requested == 100 * MiB && all_bytes(p + sizeof *r, 24, 0) ? 1 : 2;
}

/* A program built before need_* were appended to the OOM report. */
Test(contracts, an_older_programs_oom_report_is_not_written_past)
{
    cca_sim_set_capacity(0, 64 * MiB);
    cca_allocator_t *a = make_alloc("");
    void *p = NULL;
    cr_assert_eq(cca_malloc(a, &p, 100 * MiB, 0), CCA_ERROR_OUT_OF_MEMORY);
    size_t v1 = offsetof(cca_oom_report_t, need_cap);
    unsigned char buf[sizeof(cca_oom_report_t) + 16];
    memset(buf, PAD, sizeof buf);
    cr_assert_eq(v1_cca_last_oom_report(a, (cca_oom_report_t *)(void *)buf), CCA_OK);
    cr_assert(all_bytes(buf + v1, sizeof buf - v1, PAD));
    char t1[600], t2[600];
    cr_assert_gt(v1_cca_oom_report_format((cca_oom_report_t *)(void *)buf, t1, sizeof t1), 0);
    cca_oom_report_t full;
    cr_assert_eq(cca_last_oom_report(a, &full), CCA_OK);
    cca_oom_report_format(&full, t2, sizeof t2);
    cr_assert_str_eq(t1, t2, "the old struct formats the same text");
    finish(a);
}

Test(contracts, callbacks_get_structs_of_the_callers_size)
{
    cca_sim_set_capacity(0, 64 * MiB);
    cca_allocator_t *a = make_alloc("");
    void *p = alloc_ok(a, 4096, 0);
    int nonzero = 0;
    cr_assert_eq(cca_snapshot_walk_sized(a, seg_extra_zero, block_extra_zero, &nonzero, sizeof(big_seg_t),
                                         sizeof(big_block_t)), CCA_OK);
    cr_assert_eq(nonzero, 0, "a newer caller's fields must read as zero");
    cr_assert_eq(cca_snapshot_walk_sized(a, NULL, NULL, NULL, 3, sizeof(cca_block_info_t)), CCA_ERROR_INVALID_ARGUMENT);
    cr_assert_eq(cca_set_oom_callback_sized(a, oom_big, NULL, sizeof(cca_oom_report_t) + 24), CCA_OK);
    void *q = NULL;
    cr_assert_eq(cca_malloc(a, &q, 100 * MiB, 0), CCA_ERROR_OUT_OF_MEMORY);
    cr_assert_eq(oom_extra, 1);
    cr_assert_eq(cca_set_oom_callback_sized(a, oom_big, NULL, 16), CCA_ERROR_INVALID_ARGUMENT);
    free_ok(a, p);
    finish(a);
}

Test(contracts, struct_layouts_describe_every_public_struct)
{
    size_t n = 0;
    const cca_struct_layout_t *all = cca_struct_layouts(&n);
    cr_assert_eq(n, 11);
    for (size_t i = 0; i < n; i++) {
        const cca_struct_layout_t *l = &all[i];
        cr_assert_eq(cca_struct_layout(l->name), l);
        size_t end = 0;
        for (size_t f = 0; f < l->n_fields; f++) {
            const cca_field_layout_t *x = &l->fields[f];
            cr_assert_geq(x->offset, end, "%s.%s overlaps the field before", l->name, x->name);
            cr_assert_lt(x->offset - end, 8, "%s.%s: a gap of more than padding", l->name, x->name);
            cr_assert(x->count >= 1 && x->size % x->count == 0, "%s.%s", l->name, x->name);
            cr_assert(x->doc && x->doc[0] && x->type && x->type[0]);
            end = x->offset + x->size;
        }
        cr_assert_leq(end, l->size);
        cr_assert_lt(l->size - end, 8, "%s: the fields do not cover it", l->name);
    }
    /* spot checks, written by hand */
    const cca_struct_layout_t *s = cca_struct_layout("cca_stats_t");
    cr_assert_eq(s->size, sizeof(cca_stats_t));
    cr_assert_str_eq(s->fields[0].name, "allocation");
    cr_assert_str_eq(s->fields[0].type, "cca_stat_t");
    cr_assert_eq(s->fields[0].count, 3);
    cr_assert_str_eq(s->fields[s->n_fields - 1].name, "lock_headroom_wait_ns_max");
    cr_assert_eq(s->fields[s->n_fields - 1].offset, offsetof(cca_stats_t, lock_headroom_wait_ns_max));
    const cca_struct_layout_t *o = cca_struct_layout("cca_oom_report_t");
    const cca_field_layout_t *adv = NULL;
    for (size_t f = 0; f < o->n_fields; f++)
        if (!strcmp(o->fields[f].name, "advice")) adv = &o->fields[f];
    cr_assert_not_null(adv);
    cr_assert_eq(adv->offset, offsetof(cca_oom_report_t, advice));
    cr_assert_eq(adv->count, 320);
    const cca_struct_layout_t *c = cca_struct_layout("cca_config_t");
    cr_assert_str_eq(c->fields[2].name, "roundup_power2_divisions");
    cr_assert_eq(c->fields[2].count, CCA_ROUNDUP_INTERVALS);
    const cca_struct_layout_t *nt = cca_struct_layout("cca_notice_t");
    cr_assert_str_eq(nt->fields[2].name, "allocator");
    cr_assert_eq(nt->fields[2].offset, offsetof(cca_notice_t, allocator));
    cr_assert_null(cca_struct_layout("nope"));
    cr_assert_null(cca_struct_layout(NULL));
}

/* A dead stream's last block comes back through an event (it was used on
 * another stream): its segment and record must still go. */
typedef struct used_elsewhere { cca_allocator_t *a; cudaStream_t other; void *p; } used_elsewhere_t;

static void *alloc_record_exit(void *arg)
{
    used_elsewhere_t *u = arg;
    if (cca_malloc(u->a, &u->p, 30 * MiB, cudaStreamPerThread) != CCA_OK) return (void *)1;
    return cca_record_stream(u->a, u->p, u->other) == CCA_OK ? NULL : (void *)1;
}

Test(contracts, a_dead_streams_block_freed_through_an_event_still_goes_back)
{
    cca_allocator_t *a = make_alloc("");
    cudaStream_t other;
    cudaStreamCreate(&other);
    used_elsewhere_t u = { a, other, NULL };
    pthread_t t;
    void *ret = (void *)1;
    pthread_create(&t, NULL, alloc_record_exit, &u);
    pthread_join(t, &ret);
    cr_assert_null(ret);
    cca_stats_t s = stats_of(a);                      /* the stream is retired; its block still live */
    cca_sim_stream_hold(other);
    free_ok(a, u.p);                                  /* pending on the other stream's event */
    s = stats_of(a);
    ASSERT_STAT(s, active, CCA_POOL_ALL, 1);
    cca_sim_stream_release(other);
    free_ok(a, alloc_ok(a, 4096, NULL));              /* an all-locked call sees the event done */
    s = stats_of(a);                                  /* and the next one reaps */
    ASSERT_STAT(s, segment, CCA_POOL_LARGE, 0);
    cr_assert_eq(a->n_streams, 1, "%zu stream records: the dead one lingers", a->n_streams);
    cudaStreamDestroy(other);
    finish(a);
}

Test(contracts, an_out_of_memory_without_a_report_forgets_the_threads_last_one)
{
    cca_allocator_t *a = make_alloc("memory_limit_mb:40");
    void *p;
    cr_assert_eq(cca_malloc(a, &p, 50 * MiB, NULL), CCA_ERROR_OUT_OF_MEMORY);
    cca_oom_report_t r;
    cr_assert_eq(cca_thread_last_oom_report(&r), CCA_OK);
    cr_assert_eq(r.verdict, CCA_OOM_CAP);
    cr_assert_eq(r.requested, 50 * MiB);
    /* what cca_malloc returns when host memory for its bookkeeping runs out
     * (fail_host), and every other call's out-of-memory */
    cr_assert_eq(_cca_errors_fail(CCA_ERROR_OUT_OF_MEMORY, "cca_malloc: out of host memory"), CCA_ERROR_OUT_OF_MEMORY);
    cr_assert_eq(cca_thread_last_oom_report(&r), CCA_OK);
    cr_assert_eq(r.verdict, CCA_OOM_NONE, "no stale report for an OOM that made none");
    cr_assert_eq(_cca_errors_fail(CCA_ERROR_INVALID_ARGUMENT, "x"), CCA_ERROR_INVALID_ARGUMENT);
    cr_assert_eq(cca_malloc(a, &p, 45 * MiB, NULL), CCA_ERROR_OUT_OF_MEMORY);
    cr_assert_eq(cca_thread_last_oom_report(&r), CCA_OK);
    cr_assert_eq(r.requested, 45 * MiB, "the next allocation's report replaces it");
    finish(a);
}

/* cca_mem_get_info and cca_current_device, as cca.h says. */
Test(contracts, mem_get_info_names_a_bad_device_an_invalid_argument)
{
    cca_sim_set_device_count(2);
    cca_sim_set_capacity(1, 3 * GiB);
    cr_assert_eq(cudaSetDevice(0), cudaSuccess);
    size_t f = 1, t = 1;
    cr_assert_eq(cca_mem_get_info(1, &f, &t), CCA_OK);
    cr_assert_eq(t, 3 * GiB);
    cr_assert_eq(f, 3 * GiB);
    int cur = -1;
    cr_assert_eq(cca_current_device(&cur), CCA_OK);
    cr_assert_eq(cur, 0, "the caller's device is left as it was");
    cr_assert_eq(cca_mem_get_info(7, &f, &t), CCA_ERROR_INVALID_ARGUMENT);
    cr_assert(strstr(cca_last_error_string(), "cca_mem_get_info(7)"), "%s", cca_last_error_string());
    cr_assert_eq(cca_mem_get_info(-1, &f, &t), CCA_ERROR_INVALID_ARGUMENT);
    cr_assert_eq(cca_mem_get_info(0, NULL, &t), CCA_ERROR_INVALID_ARGUMENT);
    cr_assert_eq(cca_current_device(NULL), CCA_ERROR_INVALID_ARGUMENT);
    cr_assert_eq(cudaGetLastError(), cudaSuccess, "no error left in the runtime's slot");
    cr_assert_eq(cca_current_device(&cur), CCA_OK);
    cr_assert_eq(cur, 0);
}

/* ---- cca_check's verdicts ------------------------------------------------ */

/* A figure that no longer matches the walk is corruption, said as such
 * (not as a bad argument), naming the figure; put back, the check passes. */
Test(contracts, a_corrupted_allocator_is_its_own_status)
{
    cca_allocator_t *a = make_alloc(NULL);
    void *p = alloc_ok(a, 3 << 20, 0);
    cr_assert_eq(cca_check(a), CCA_OK);
    a->stats.segment[CCA_POOL_LARGE].current += 1;
    cr_assert_eq(cca_check(a), CCA_ERROR_CORRUPTED, "%s", cca_last_error_string());
    cr_assert(strstr(cca_last_error_string(), "segment") != NULL, "%s", cca_last_error_string());
    cr_assert_str_eq(cca_status_string(CCA_ERROR_CORRUPTED), "CCA_ERROR_CORRUPTED");
    a->stats.segment[CCA_POOL_LARGE].current -= 1;
    cr_assert_eq(cca_check(a), CCA_OK, "%s", cca_last_error_string());
    cr_assert_eq(cca_check(NULL), CCA_ERROR_INVALID_ARGUMENT);
    free_ok(a, p);
    cca_destroy(a);
}

/* cca_stats_t's one list: the kinds table, the layout and the struct agree,
 * and each kind is what its fields are. */
Test(contracts, stats_list_gives_every_field_a_kind)
{
    size_t n = 0;
    const cca_stats_field_t *k = cca_stats_fields(&n);
    const cca_struct_layout_t *s = cca_struct_layout("cca_stats_t");
    cr_assert_eq(n, s->n_fields);
    cr_assert_eq(n, 38);
    size_t pooled = 0;
    for (size_t i = 0; i < n; i++) {
        const cca_field_layout_t *f = &s->fields[i];
        cr_assert_str_eq(k[i].name, f->name);
        cr_assert(k[i].doc && k[i].doc[0]);
        if (!strcmp(k[i].kind, "CCA_POOLED")) {
            pooled++;
            cr_assert(!strcmp(f->type, "cca_stat_t") && f->count == CCA_POOL_COUNT, "%s", f->name);
        } else if (!strcmp(k[i].kind, "CCA_STAT")) {
            cr_assert(!strcmp(f->type, "cca_stat_t") && f->count == 1, "%s", f->name);
        } else {
            cr_assert(!strcmp(k[i].kind, "CCA_COUNTER") || !strcmp(k[i].kind, "CCA_GAUGE") || !strcmp(k[i].kind, "CCA_SETTING") ||
                      !strcmp(k[i].kind, "CCA_PROFILE"),
                      "%s: kind %s", f->name, k[i].kind);
            cr_assert(!strcmp(f->type, "int64_t") && f->count == 1, "%s", f->name);
        }
    }
    cr_assert_eq(pooled, 9);
    cr_assert_str_eq(k[9].name, "num_alloc_retries");
    cr_assert_str_eq(k[9].kind, "CCA_COUNTER");
    cr_assert_str_eq(k[16].name, "max_split_size");
    cr_assert_str_eq(k[16].kind, "CCA_SETTING");
    cr_assert_str_eq(k[17].kind, "CCA_GAUGE");
    cr_assert_str_eq(k[20].name, "unmapped_bytes");
    cr_assert_str_eq(k[20].kind, "CCA_STAT");
    cr_assert_str_eq(k[21].name, "num_all_locked");
    cr_assert_str_eq(k[21].kind, "CCA_PROFILE");
    cr_assert_str_eq(k[22].name, "lock_allocator_acquisitions");
    cr_assert_str_eq(k[29].name, "lock_streams_wait_ns_max");
    cr_assert_str_eq(k[33].name, "lock_segments_wait_ns_max");
    cr_assert_str_eq(k[33].kind, "CCA_PROFILE");
    cr_assert_str_eq(k[37].name, "lock_headroom_wait_ns_max");
    size_t views = 0;
#define COUNT_(name, doc) views++;
    CCA_STAT_FIELDS(COUNT_) CCA_COUNTER_FIELDS(COUNT_)
#undef COUNT_
    cr_assert_eq(views, 9 + 7);
    cr_assert_not_null(cca_stats_fields(NULL));
}

/* The resets follow the kinds: oversize_segments (a STAT) keeps its current
 * through both; a COUNTER goes to 0; cca_check holds each kind's invariant. */
Test(contracts, resets_and_check_follow_each_fields_kind)
{
    cca_allocator_t *a = make_alloc("max_split_size_mb:64");
    void *p = alloc_ok(a, 80 << 20, 0), *q = alloc_ok(a, 90 << 20, 0);
    free_ok(a, q);
    cr_assert_eq(cca_empty_cache(a), CCA_OK);
    cca_stats_t s;
    cr_assert_eq(cca_get_stats(a, &s), CCA_OK);
    cr_assert(s.oversize_segments.current == 1 && s.oversize_segments.peak == 2 && s.oversize_segments.allocated == 2 &&
              s.oversize_segments.freed == 1);
    cr_assert_eq(s.num_device_alloc, 2);
    cr_assert_eq(cca_reset_peak_stats(a), CCA_OK);
    cr_assert_eq(cca_reset_accumulated_stats(a), CCA_OK);
    cr_assert_eq(cca_get_stats(a, &s), CCA_OK);
    cr_assert(s.oversize_segments.current == 1 && s.oversize_segments.peak == 1 && s.oversize_segments.allocated == 0 &&
              s.oversize_segments.freed == 0);
    cr_assert_eq(s.num_device_alloc, 0);
    cr_assert_eq(s.max_split_size, 64 << 20, "a setting is never reset");
    cr_assert_eq(cca_check(a), CCA_OK, "%s", cca_last_error_string());
    a->stats.unmapped_bytes.peak = -1;                /* no walk counts it: the kind's invariant must */
    cr_assert_eq(cca_check(a), CCA_ERROR_CORRUPTED);
    cr_assert(strstr(cca_last_error_string(), "unmapped_bytes") != NULL, "%s", cca_last_error_string());
    a->stats.unmapped_bytes.peak = 0;
    a->stats.num_handle_create = -3;
    cr_assert_eq(cca_check(a), CCA_ERROR_CORRUPTED);
    cr_assert(strstr(cca_last_error_string(), "num_handle_create") != NULL, "%s", cca_last_error_string());
    a->stats.num_handle_create = 0;
    cr_assert_eq(cca_check(a), CCA_OK, "%s", cca_last_error_string());
    free_ok(a, p);
    cca_destroy(a);
}

/* A segment across the address map's leaves (1 GiB of 2 MiB chunks each):
 * its blocks in every leaf are found, and the map is cleared leaf by leaf. */
Test(contracts, a_segment_across_the_address_maps_leaves_is_found_in_each)
{
    cca_allocator_t *a = make_alloc(NULL);
    void *big = alloc_ok(a, (size_t)3 << 30, 0), *p[3];
    free_ok(a, big);
    for (int i = 0; i < 3; i++) p[i] = alloc_ok(a, (size_t)1 << 30, 0);   /* carved out of the cached 3 GiB */
    cca_stats_t s = stats_of(a);
    cr_assert_eq(s.segment[CCA_POOL_ALL].current, 1, "served by the one segment");
    cr_assert_eq(s.num_device_alloc, 1);
    for (int i = 2; i >= 0; i--) free_ok(a, p[i]);   /* each found through the map, in its leaf */
    cr_assert_eq(cca_check(a), CCA_OK, "%s", cca_last_error_string());
    cr_assert_eq(cca_empty_cache(a), CCA_OK);
    void *q = (void *)1;
    cr_assert_eq(cca_free(a, (char *)p[1]), CCA_ERROR_INVALID_POINTER, "the released segment is out of the map");
    cr_assert_eq(cca_malloc(a, &q, (size_t)1 << 30, 0), CCA_OK);
    free_ok(a, q);
    finish(a);
}

/* A thread on more streams than its cache holds (16 against 4) finds each
 * in the allocator's table: after one all-locked first use per stream, its
 * allocations and frees stay off the all-locked path. */
Test(contracts, a_thread_on_many_streams_stays_off_the_all_locked_path)
{
    cca_allocator_t *a = make_alloc(NULL);
    cudaStream_t st[16];
    void *keep[16];
    for (int i = 0; i < 16; i++) {
        cr_assert_eq(cudaStreamCreateWithFlags(&st[i], cudaStreamNonBlocking), cudaSuccess);
        keep[i] = alloc_ok(a, 4096, st[i]);           /* first use: the record is made, all locked */
    }
    void *warm[16];
    for (int i = 0; i < 16; i++) warm[i] = alloc_ok(a, 4096, st[i]);
    for (int i = 0; i < 16; i++) free_ok(a, warm[i]);
    uint64_t locks = a->lock_all_count;
    for (int k = 0; k < 1600; k++) {
        void *p = alloc_ok(a, 4096, st[k % 16]);      /* the cache misses on every call */
        free_ok(a, p);
    }
    cr_assert_eq(a->lock_all_count, locks, "%llu all-locked entries in 3,200 calls",
                 (unsigned long long)(a->lock_all_count - locks));
    cr_assert_eq(cca_check(a), CCA_OK, "%s", cca_last_error_string());
    for (int i = 0; i < 16; i++) {
        free_ok(a, keep[i]);
        cr_assert_eq(cca_stream_retire(a, st[i]), CCA_OK);
        cr_assert_eq(cudaStreamDestroy(st[i]), cudaSuccess);
    }
    void *p = alloc_ok(a, 4096, 0);                   /* the retirements happen all locked */
    free_ok(a, p);
    cr_assert_eq(cca_check(a), CCA_OK, "%s", cca_last_error_string());
    finish(a);
}

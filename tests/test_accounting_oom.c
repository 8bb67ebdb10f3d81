/* test_accounting_oom.c - the OOM report on constructed states of a small
 * simulated device: each verdict with its exact figures and advice, the
 * cache state as the request found it, the callback (outside the lock, on
 * the failing thread) and the text. */
#include <pthread.h>
#include "acct_util.h"

static void setup(void) { cca_sim_reset(); }
TestSuite(oom_report, .init = setup, .timeout = 30);

static cca_oom_report_t oom_of(cca_allocator_t *a, size_t size)
{
    void *p = (void *)1;
    cr_assert_eq(cca_malloc(a, &p, size, NULL), CCA_ERROR_OUT_OF_MEMORY);
    cr_assert_null(p);
    cca_oom_report_t r;
    cr_assert_eq(cca_last_oom_report(a, &r), CCA_OK);
    return r;
}

static char *text_of(const cca_oom_report_t *r)
{
    static char buf[1024];
    size_t n = cca_oom_report_format(r, buf, sizeof buf);
    cr_assert_lt(n, sizeof buf);
    cr_assert_eq(strlen(buf), n);
    return buf;
}

static int lines(const char *s)
{
    int n = 0;
    for (; *s; s++) n += *s == '\n';
    return n;
}

/* 61 MiB device; three 20 MiB segments cut into 2 MiB blocks, every other
 * one freed: 30 MiB cached in 15 separate 2 MiB holes, 1 MiB left on the device. */
static void **fragment(cca_allocator_t *a)
{
    cca_sim_set_capacity(0, 61 * MiB);
    void **p = calloc(30, sizeof *p);
    for (int i = 0; i < 30; i++) p[i] = alloc_ok(a, 2 * MiB, NULL);
    for (int i = 0; i < 30; i += 2) free_ok(a, p[i]);
    return p;
}

Test(oom_report, none_before_the_first_oom)
{
    cca_allocator_t *a = make_alloc("");
    cca_oom_report_t r;
    cr_assert_eq(cca_last_oom_report(a, &r), CCA_OK);
    cr_assert_eq(r.verdict, CCA_OOM_NONE);
    cr_assert_str_eq(text_of(&r), "cca: no out-of-memory on device 0\n");
    cr_assert_eq(cca_last_oom_report(a, NULL), CCA_ERROR_INVALID_ARGUMENT);
    cr_assert_eq(cca_last_oom_report(NULL, &r), CCA_ERROR_INVALID_ARGUMENT);
    cr_assert_eq(cca_set_oom_callback(NULL, NULL, NULL), CCA_ERROR_INVALID_ARGUMENT);
    cr_assert_eq(cca_oom_report_format(NULL, NULL, 0), 0);
    cr_assert_str_eq(cca_oom_verdict_string(CCA_OOM_FRAGMENTED), "fragmented");
    cr_assert_str_eq(cca_oom_verdict_string((cca_oom_verdict_t)99), "unknown");
    finish(a);
}

Test(oom_report, scattered_holes_are_fragmented)
{
    cca_allocator_t *a = make_alloc("");
    void **p = fragment(a);
    cca_oom_report_t r = oom_of(a, 4 * MiB);
    cr_assert_eq(r.verdict, CCA_OOM_FRAGMENTED, "verdict %s", cca_oom_verdict_string(r.verdict));
    cr_assert_eq(r.requested, 4 * MiB);
    cr_assert_eq(r.rounded, 4 * MiB);
    cr_assert_eq(r.segment_size, 20 * MiB);
    cr_assert_eq(r.pool, CCA_POOL_LARGE);
    cr_assert_eq(r.device_total, 61 * MiB);
    cr_assert_eq(r.device_free, 1 * MiB);
    cr_assert_eq(r.external, 0);
    cr_assert_eq(r.cap, 0);
    cr_assert_eq(r.reserved, 60 * MiB);
    cr_assert_eq(r.allocated, 30 * MiB);
    cr_assert_eq(r.free_cached_before, 30 * MiB);
    cr_assert_eq(r.largest_free_before, 2 * MiB);
    cr_assert_eq(r.free_cached, 30 * MiB);
    cr_assert_eq(r.largest_free, 2 * MiB);
    cr_assert_eq(r.largest_fit, 0, "a 512 B request needs a new 2 MiB segment, and 1 MiB is free");
    cr_assert_eq(r.shortfall, 0);
    cr_assert_eq(r.need_cached, 19 * MiB);
    cr_assert_eq(r.need_cap + r.need_external + r.need_live, 0);
    cr_assert(r.device_refused && !r.cap_refused);
    cr_assert_eq(r.seq, 1);
    cr_assert_str_eq(r.advice, "needs a new 20.00 MiB segment, 1.00 MiB free on the device: 30.00 MiB cached free, "
                               "largest block 2.00 MiB; largest request that fits now: 0 B; expandable_segments:True would fit it "
                     "(30.00 MiB free in whole 2 MiB pages); "
                               "free the allocations between free blocks, or allocate long-lived buffers first");
    cr_assert_eq(r.free_pages, 30 * MiB);
    cr_assert_eq(r.expandable_fits, 1);
    char *t = text_of(&r);
    cr_assert_eq(lines(t), 3, "%s", t);
    ASSERT_HAS(t, "cca: out of memory on device 0: 4.00 MiB requested (4.00 MiB rounded, large pool, stream 0): fragmented\n");
    ASSERT_HAS(t, "device 61.00 MiB total, 1.00 MiB free, 0 B outside cca; cap none; reserved 60.00 MiB, allocated 30.00 MiB; "
                  "at the request 30.00 MiB cached free, largest free block 2.00 MiB\n");
    ASSERT_HAS(t, "advice: needs a new 20.00 MiB segment");
    free_ok(a, alloc_ok(a, 2 * MiB, NULL));          /* a cached hole serves exactly 2 MiB */
    r = oom_of(a, 2 * MiB + 512);
    cr_assert_eq(r.seq, 2);
    for (int i = 1; i < 30; i += 2) free_ok(a, p[i]);
    free(p);
    cca_stats_t s = stats_of(a);
    cr_assert_eq(s.num_ooms, 2);
    finish(a);
}

Test(oom_report, lean_preset_reports_the_smallest_segment_tried)
{
    cca_allocator_t *a = make_alloc("preset:lean");
    void **p = fragment(a);
    cca_oom_report_t r = oom_of(a, 4 * MiB);
    cr_assert_eq(r.verdict, CCA_OOM_FRAGMENTED);
    cr_assert_eq(r.segment_size, 4 * MiB, "the core fell back to a segment of the request's size");
    cr_assert_eq(r.device_free, 1 * MiB);
    cr_assert_eq(r.largest_free_before, 2 * MiB);
    cr_assert_eq(r.need_cached, 3 * MiB);
    cr_assert_eq(r.largest_fit, 0);
    for (int i = 1; i < 30; i += 2) free_ok(a, p[i]);
    free(p);
    finish(a);
}

Test(oom_report, new_segment_larger_than_device_free_is_exhausted_when_nothing_is_cached)
{
    cca_sim_set_capacity(0, 30 * MiB);
    cca_allocator_t *a = make_alloc("");
    void *p = alloc_ok(a, 12 * MiB, NULL);           /* a segment of its own: 18 MiB stay free */
    cca_oom_report_t r = oom_of(a, 8 * MiB);          /* takes a 20 MiB segment */
    cr_assert_eq(r.verdict, CCA_OOM_EXHAUSTED, "nothing is cached: only freeing live memory helps");
    cr_assert_eq(r.device_free, 18 * MiB);
    cr_assert_eq(r.free_cached_before, 0);
    cr_assert_eq(r.shortfall, 2 * MiB);
    cr_assert_eq(r.need_live, 2 * MiB);
    cr_assert_eq(r.largest_fit, 1 * MiB, "1 MiB + 512 B takes a 20 MiB segment too");
    cr_assert_str_eq(r.advice, "needs a new 20.00 MiB segment, 18.00 MiB free on the device: free 2.00 MiB of live "
                               "allocations or lower the batch size; largest request that fits now: 1.00 MiB; "
                     "expandable_segments:True would fit it");
    free_ok(a, alloc_ok(a, 18 * MiB, NULL));
    free_ok(a, p);
    finish(a);
}

Test(oom_report, live_allocations_fill_the_device_exhausted)
{
    cca_sim_set_capacity(0, 64 * MiB);
    cca_allocator_t *a = make_alloc("");
    void *p[3];
    for (int i = 0; i < 3; i++) p[i] = alloc_ok(a, 20 * MiB, NULL);
    cca_oom_report_t r = oom_of(a, 8 * MiB);
    cr_assert_eq(r.verdict, CCA_OOM_EXHAUSTED);
    cr_assert_eq(r.device_free, 4 * MiB);
    cr_assert_eq(r.reserved, 60 * MiB);
    cr_assert_eq(r.allocated, 60 * MiB);
    cr_assert_eq(r.free_cached_before, 0);
    cr_assert_eq(r.external, 0);
    cr_assert_eq(r.shortfall, 16 * MiB, "the whole 20 MiB segment counts");
    cr_assert_eq(r.need_live, 16 * MiB);
    cr_assert_eq(r.largest_fit, 1 * MiB, "a 1 MiB request gets a 2 MiB small segment");
    cr_assert_str_eq(r.advice, "needs a new 20.00 MiB segment, 4.00 MiB free on the device: free 16.00 MiB of live "
                               "allocations or lower the batch size; largest request that fits now: 1.00 MiB");
    free_ok(a, alloc_ok(a, 1 * MiB, NULL));
    for (int i = 0; i < 3; i++) free_ok(a, p[i]);
    finish(a);
}

Test(oom_report, figures_before_release_and_retry)
{
    cca_sim_set_capacity(0, 41 * MiB);
    cca_allocator_t *a = make_alloc("");
    free_ok(a, alloc_ok(a, 8 * MiB, NULL));          /* leaves a free 20 MiB segment cached */
    cca_oom_report_t r = oom_of(a, 42 * MiB);
    cr_assert_eq(r.verdict, CCA_OOM_EXHAUSTED);
    cr_assert_eq(r.free_cached_before, 20 * MiB, "as the request found the cache");
    cr_assert_eq(r.largest_free_before, 20 * MiB);
    cr_assert_eq(r.reserved_before, 20 * MiB);
    cr_assert_eq(r.free_cached, 0, "release-and-retry emptied it");
    cr_assert_eq(r.reserved, 0);
    cr_assert_eq(r.device_free, 41 * MiB);
    cr_assert_eq(r.shortfall, 1 * MiB);
    cr_assert_eq(r.largest_fit, 40 * MiB);
    cr_assert_str_eq(r.advice, "the request needs a 42.00 MiB segment, more than the device's total 41.00 MiB: "
                               "split it or lower the batch size");
    cca_stats_t s = stats_of(a);
    cr_assert_eq(s.num_alloc_retries, 1);
    finish(a);
}

Test(oom_report, cap_refuses_while_device_has_room)
{
    cca_allocator_t *a = make_alloc("memory_limit_mb:40");
    void *p = alloc_ok(a, 30 * MiB, NULL);
    cca_oom_report_t r = oom_of(a, 12 * MiB);
    cr_assert_eq(r.verdict, CCA_OOM_CAP);
    cr_assert(r.cap_refused && !r.device_refused);
    cr_assert_eq(r.cap, 40 * MiB);
    cr_assert_eq(r.segment_size, 12 * MiB);
    cr_assert_eq(r.device_free, 80 * GiB - 30 * MiB);
    cr_assert_eq(r.shortfall, 2 * MiB);
    cr_assert_eq(r.need_cap, 2 * MiB);
    cr_assert_eq(r.largest_fit, 1 * MiB, "under the cap 10 MiB are left: a 2 MiB request would need 20 MiB");
    cr_assert_str_eq(r.advice, "needs a new 12.00 MiB segment, 79.97 GiB free on the device, 10.00 MiB under the cap: "
                               "raise the cap by 2.00 MiB (memory_limit_mb:42); largest request that fits now: 1.00 MiB");
    free_ok(a, alloc_ok(a, 10 * MiB, NULL));
    free_ok(a, p);
    finish(a);
}

Test(oom_report, memory_outside_cca_is_external)
{
    cca_sim_set_capacity(0, 64 * MiB);
    void *outside = NULL;
    cr_assert_eq(cudaMalloc(&outside, 60 * MiB), cudaSuccess);
    cca_allocator_t *a = make_alloc("");
    cca_oom_report_t r = oom_of(a, 8 * MiB);
    cr_assert_eq(r.verdict, CCA_OOM_EXTERNAL);
    cr_assert_eq(r.external, 60 * MiB);
    cr_assert_eq(r.device_free, 4 * MiB);
    cr_assert_eq(r.reserved, 0);
    cr_assert_eq(r.shortfall, 16 * MiB);
    cr_assert_eq(r.need_external, 16 * MiB);
    cr_assert_eq(r.largest_fit, 1 * MiB);
    cr_assert_str_eq(r.advice, "needs a new 20.00 MiB segment, 4.00 MiB free on the device: free 16.00 MiB of the "
                               "60.00 MiB held outside cca; largest request that fits now: 1.00 MiB");
    cr_assert_eq(cudaGetLastError(), cudaSuccess, "the report's cudaMemGetInfo left no error");
    cr_assert_eq(cudaFree(outside), cudaSuccess);
    free_ok(a, alloc_ok(a, 8 * MiB, NULL));
    finish(a);
}

Test(oom_report, huge_request_is_exhausted_not_overflow)
{
    cca_allocator_t *a = make_alloc("");
    cca_oom_report_t r = oom_of(a, SIZE_MAX - 10);
    cr_assert_eq(r.verdict, CCA_OOM_EXHAUSTED);
    ASSERT_HAS(r.advice, "more than the device's total 80.00 GiB");
    finish(a);
}

typedef struct cb_state {
    cca_allocator_t *a;
    int calls;
    cca_oom_report_t last;
    pthread_t thread;
    int64_t ooms_seen;
} cb_state_t;

static void on_oom(const cca_oom_report_t *r, void *arg)
{
    cb_state_t *c = arg;
    c->calls++;
    c->last = *r;
    c->thread = pthread_self();
    cca_stats_t s;
    cr_assert_eq(cca_get_stats(c->a, &s), CCA_OK, "the lock is not held in the callback");
    c->ooms_seen = s.num_ooms;
}

static void *oom_in_thread(void *arg)
{
    cb_state_t *c = arg;
    void *p;
    cr_assert_eq(cca_malloc(c->a, &p, 12 * MiB, NULL), CCA_ERROR_OUT_OF_MEMORY);
    cr_assert_eq(c->calls, 2, "delivered before cca_malloc returns");
    cr_assert(pthread_equal(c->thread, pthread_self()), "delivered on the failing thread");
    return NULL;
}

Test(oom_report, callback_runs_outside_the_lock_on_the_failing_thread)
{
    cca_allocator_t *a = make_alloc("memory_limit_mb:40");
    cb_state_t c = { .a = a };
    cr_assert_eq(cca_set_oom_callback(a, on_oom, &c), CCA_OK);
    void *p = alloc_ok(a, 30 * MiB, NULL);
    cr_assert_eq(c.calls, 0);
    void *q;
    cr_assert_eq(cca_malloc(a, &q, 12 * MiB, NULL), CCA_ERROR_OUT_OF_MEMORY);
    cr_assert_eq(c.calls, 1);
    cr_assert_eq(c.last.verdict, CCA_OOM_CAP);
    cr_assert_eq(c.last.seq, 1);
    cr_assert_eq(c.ooms_seen, 1);
    cr_assert(pthread_equal(c.thread, pthread_self()));
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, oom_in_thread, &c), 0);
    cr_assert_eq(pthread_join(th, NULL), 0);
    cr_assert_eq(c.last.seq, 2);
    cr_assert_eq(cca_set_oom_callback(a, NULL, NULL), CCA_OK);
    cr_assert_eq(cca_malloc(a, &q, 12 * MiB, NULL), CCA_ERROR_OUT_OF_MEMORY);
    cr_assert_eq(c.calls, 2, "no callback once removed");
    cca_oom_report_t r;
    cr_assert_eq(cca_last_oom_report(a, &r), CCA_OK);
    cr_assert_eq(r.seq, 3, "still kept as the last report");
    free_ok(a, p);
    finish(a);
}

Test(oom_report, format_truncates_like_snprintf)
{
    cca_allocator_t *a = make_alloc("memory_limit_mb:40");
    cca_oom_report_t r = oom_of(a, 50 * MiB);
    char full[1024], small[40];
    size_t n = cca_oom_report_format(&r, full, sizeof full);
    cr_assert_eq(cca_oom_report_format(&r, small, sizeof small), n);
    cr_assert_eq(strlen(small), sizeof small - 1);
    cr_assert_eq(strncmp(small, full, sizeof small - 1), 0);
    cr_assert_eq(cca_oom_report_format(&r, NULL, 0), n);
    ASSERT_HAS(full, "): cap\n");
    finish(a);
}

typedef struct {
    cca_allocator_t *a;
    size_t size;
    pthread_barrier_t *after_fail, *after_other;
    cca_oom_report_t mine;
} own_report_t;

static void *fail_then_read(void *arg)
{
    own_report_t *o = arg;
    void *p;
    cca_oom_report_t r;
    cr_assert_eq(cca_thread_last_oom_report(&r), CCA_OK);
    cr_assert_eq(r.verdict, CCA_OOM_NONE, "a new thread has no report");
    cr_assert_eq(cca_malloc(o->a, &p, o->size, NULL), CCA_ERROR_OUT_OF_MEMORY);
    pthread_barrier_wait(o->after_fail);              /* both have failed ... */
    pthread_barrier_wait(o->after_other);             /* ... and neither reads before */
    cr_assert_eq(cca_thread_last_oom_report(&o->mine), CCA_OK);
    return NULL;
}

Test(oom_report, each_thread_reads_its_own_report)
{
    cca_allocator_t *a = make_alloc("memory_limit_mb:40");
    void *p = alloc_ok(a, 30 * MiB, NULL);
    pthread_barrier_t b1, b2;
    pthread_barrier_init(&b1, NULL, 2);
    pthread_barrier_init(&b2, NULL, 2);
    own_report_t o[2] = { { a, 12 * MiB, &b1, &b2, { 0 } }, { a, 20 * MiB, &b1, &b2, { 0 } } };
    pthread_t th[2];
    for (int i = 0; i < 2; i++) cr_assert_eq(pthread_create(&th[i], NULL, fail_then_read, &o[i]), 0);
    for (int i = 0; i < 2; i++) cr_assert_eq(pthread_join(th[i], NULL), 0);
    cr_assert_eq(o[0].mine.requested, 12 * MiB);
    cr_assert_eq(o[1].mine.requested, 20 * MiB);
    cr_assert_eq(o[0].mine.verdict, CCA_OOM_CAP);
    cr_assert_eq(o[1].mine.verdict, CCA_OOM_CAP);
    cca_oom_report_t last;
    cr_assert_eq(cca_last_oom_report(a, &last), CCA_OK);
    cr_assert_eq(last.seq, 2, "the allocator's report is the later of the two");
    cr_assert(last.requested == o[last.seq == o[0].mine.seq ? 0 : 1].mine.requested);
    cr_assert_neq(o[0].mine.seq, o[1].mine.seq);
    cr_assert_eq(cca_thread_last_oom_report(NULL), CCA_ERROR_INVALID_ARGUMENT);
    cr_assert_eq(cca_thread_last_oom_report_sized(&last, 8), CCA_ERROR_INVALID_ARGUMENT);
    pthread_barrier_destroy(&b1);
    pthread_barrier_destroy(&b2);
    free_ok(a, p);
    finish(a);
}

static void on_oom_fail_again(const cca_oom_report_t *r, void *arg)
{
    cca_allocator_t *a = arg;
    void *p;
    if (r->requested == 12 * MiB)                     /* the callback's own failure, of another size */
        cr_assert_eq(cca_malloc(a, &p, 20 * MiB, NULL), CCA_ERROR_OUT_OF_MEMORY);
}

Test(oom_report, a_callbacks_own_failure_leaves_the_threads_report_alone)
{
    cca_allocator_t *a = make_alloc("memory_limit_mb:40");
    void *p = alloc_ok(a, 30 * MiB, NULL);
    cr_assert_eq(cca_set_oom_callback(a, on_oom_fail_again, a), CCA_OK);
    void *q;
    cr_assert_eq(cca_malloc(a, &q, 12 * MiB, NULL), CCA_ERROR_OUT_OF_MEMORY);
    cca_oom_report_t mine, last;
    cr_assert_eq(cca_thread_last_oom_report(&mine), CCA_OK);
    cr_assert_eq(mine.requested, 12 * MiB, "the report of the allocation this thread made");
    cr_assert_eq(cca_last_oom_report(a, &last), CCA_OK);
    cr_assert_eq(last.requested, 20 * MiB, "the allocator's latest is the callback's");
    cr_assert_eq(cca_set_oom_callback(a, NULL, NULL), CCA_OK);
    free_ok(a, p);
    finish(a);
}

/* cca_malloc_try: an out-of-memory the caller will ask about again (after
 * freeing memory of its own) is not counted, delivered or recorded; the
 * cca_malloc after it is, once. */
static int tries_seen;
static void count_oom(const cca_oom_report_t *r, void *arg)
{
    (void)r;
    (void)arg;
    tries_seen++;
}

static int history_ooms(const cca_history_entry_t *e, void *arg)
{
    if (e->action == CCA_HISTORY_OOM) ++*(int *)arg;
    return 0;
}

Test(oom_report, a_tentative_failure_is_not_an_oom)
{
    cca_sim_set_capacity(0, 64 * MiB);
    cca_allocator_t *a = make_alloc("");
    tries_seen = 0;
    cr_assert_eq(cca_set_oom_callback(a, count_oom, NULL), CCA_OK);
    cr_assert_eq(cca_record_history(a, 100), CCA_OK);
    void *p = NULL;
    cr_assert_eq(cca_malloc_try(a, &p, 128 * MiB, NULL), CCA_ERROR_OUT_OF_MEMORY);
    cr_assert_null(p);
    cr_assert(strstr(cca_last_error_string(), "out of memory allocating 134217728 bytes") != NULL, "%s",
              cca_last_error_string());
    cca_oom_report_t r;
    cr_assert_eq(cca_thread_last_oom_report(&r), CCA_OK);
    cr_assert_eq(r.verdict, CCA_OOM_NONE, "no report for a tentative failure");
    cca_stats_t s = stats_of(a);
    cr_assert_eq(s.num_ooms, 0);
    cr_assert_eq(tries_seen, 0);
    int ooms_in_history = 0;
    cr_assert_eq(cca_history_walk(a, history_ooms, &ooms_in_history, NULL), CCA_OK);
    cr_assert_eq(ooms_in_history, 0, "no OOM in the history");
    char *q = alloc_ok(a, 8 * MiB, NULL);             /* the allocator serves on */
    cr_assert_eq(cca_malloc(a, &p, 128 * MiB, NULL), CCA_ERROR_OUT_OF_MEMORY);
    cr_assert_eq(stats_of(a).num_ooms, 1, "the real attempt counts, once");
    cr_assert_eq(tries_seen, 1);
    ooms_in_history = 0;
    cr_assert_eq(cca_history_walk(a, history_ooms, &ooms_in_history, NULL), CCA_OK);
    cr_assert_eq(ooms_in_history, 1);
    cr_assert_eq(cca_thread_last_oom_report(&r), CCA_OK);
    cr_assert_neq(r.verdict, CCA_OOM_NONE);
    cr_assert_eq(cca_malloc_try(a, &p, 4 * MiB, NULL), CCA_OK, "a tentative success is a success");
    free_ok(a, p);
    free_ok(a, q);
    check_ok(a);
    finish(a);
}

/* A callback that cca_malloc_try runs (a watch, as its release-and-retry
 * gives cached memory back) and that allocates: that allocation is not
 * tentative - its out-of-memory counts and is reported. */
static cca_allocator_t *nested_a;
static cca_status_t nested_status;
static int nested_calls;
static void nested_watch(void *arg, cca_watch_kind_t w, size_t now, int rising)
{
    (void)arg;
    (void)w;
    (void)now;
    if (!rising && nested_calls++ == 0) {
        void *q = NULL;
        nested_status = cca_malloc(nested_a, &q, 512 * MiB, NULL);
    }
}

Test(oom_report, what_a_tentative_call_runs_is_not_tentative)
{
    cca_sim_set_capacity(0, 64 * MiB);
    cca_allocator_t *a = nested_a = make_alloc("");
    tries_seen = 0;
    nested_calls = 0;
    nested_status = CCA_OK;
    cr_assert_eq(cca_set_oom_callback(a, count_oom, NULL), CCA_OK);
    void *p = alloc_ok(a, 30 * MiB, NULL);
    free_ok(a, p);                                    /* 30 MiB cached: the try's release-and-retry gives it back */
    uint64_t id = 0;
    cr_assert_eq(cca_watch_threshold(a, CCA_WATCH_RESERVED, 1 * MiB, nested_watch, NULL, &id), CCA_OK);
    cr_assert_eq(cca_malloc_try(a, &p, 128 * MiB, NULL), CCA_ERROR_OUT_OF_MEMORY);
    cr_assert_eq(nested_calls, 1, "the watch ran inside the tentative call");
    cr_assert_eq(nested_status, CCA_ERROR_OUT_OF_MEMORY);
    cr_assert_eq(stats_of(a).num_ooms, 1, "the callback's own failure counts, the tentative one does not");
    cr_assert_eq(tries_seen, 1);
    cca_oom_report_t r;
    cr_assert_eq(cca_thread_last_oom_report(&r), CCA_OK);
    cr_assert_neq(r.verdict, CCA_OOM_NONE);
    cr_assert_eq(r.requested, 512 * MiB, "the thread's last report is the callback's (delivered after the try failed)");
    check_ok(a);
    finish(a);
}

Test(oom_report, a_tentative_failure_after_a_real_one_clears_its_report)
{
    cca_sim_set_capacity(0, 64 * MiB);
    cca_allocator_t *a = make_alloc("");
    void *p = NULL;
    cr_assert_eq(cca_malloc(a, &p, 128 * MiB, NULL), CCA_ERROR_OUT_OF_MEMORY);
    cca_oom_report_t r;
    cr_assert_eq(cca_thread_last_oom_report(&r), CCA_OK);
    cr_assert_neq(r.verdict, CCA_OOM_NONE);
    cr_assert_eq(cca_malloc_try(a, &p, 96 * MiB, NULL), CCA_ERROR_OUT_OF_MEMORY);
    cr_assert_eq(cca_thread_last_oom_report(&r), CCA_OK);
    cr_assert_eq(r.verdict, CCA_OOM_NONE, "no report stands for the tentative failure");
    cr_assert_eq(stats_of(a).num_ooms, 1);
    cr_assert_eq(cca_malloc_try(NULL, &p, 1, NULL), CCA_ERROR_INVALID_ARGUMENT);
    cr_assert(strstr(cca_last_error_string(), "cca_malloc_try") != NULL, "%s", cca_last_error_string());
    finish(a);
}

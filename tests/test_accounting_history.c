/* test_accounting_history.c - the allocation history (cca_record_history):
 * what each call records, in order and with exact figures; pending frees
 * completing later; out-of-memory entries; the ring's bound, re-bounding
 * and stopping; every call all locked while it records, and the hot path
 * back after; many threads; sized entries and bad input; the default
 * allocators. */
#include <pthread.h>
#include <json-c/json.h>
#include <stdio.h>
#include <sys/resource.h>
#include <unistd.h>
#include "acct_util.h"
#include "internal.h"

static void setup(void)
{
    cca_sim_reset();
    cca_tag_thread(0);
    cca_tag_shared(0);
}
TestSuite(history, .init = setup, .timeout = 60);

#define MAXE 64
typedef struct got { cca_history_entry_t e[MAXE]; size_t n; size_t stop_at; } got_t;

static int collect(const cca_history_entry_t *e, void *arg)
{
    got_t *g = arg;
    if (g->n < MAXE) g->e[g->n] = *e;
    g->n++;
    return g->stop_at && g->n == g->stop_at;
}

static got_t *walk(cca_allocator_t *a, uint64_t *dropped)
{
    static got_t g;
    memset(&g, 0, sizeof g);
    cr_assert_eq(cca_history_walk(a, collect, &g, dropped), CCA_OK, "%s", cca_last_error_string());
    return &g;
}

static void expect(const cca_history_entry_t *e, int action, void *addr, size_t size, cudaStream_t s, uint32_t tag)
{
    cr_assert_eq(e->action, action, "action %s, expected %s", cca_history_action_string(e->action),
                 cca_history_action_string(action));
    cr_assert_eq(e->addr, (uintptr_t)addr, "%s: addr", cca_history_action_string(action));
    cr_assert_eq(e->size, size, "%s: size %zu, expected %zu", cca_history_action_string(action), e->size, size);
    cr_assert_eq(e->stream, s, "%s: stream", cca_history_action_string(action));
    cr_assert_eq(e->tag, tag, "%s: tag", cca_history_action_string(action));
}

Test(history, off_records_nothing)
{
    cca_allocator_t *a = make_alloc("");
    free_ok(a, alloc_ok(a, 1000, NULL));
    uint64_t dropped = 9;
    cr_assert_eq(walk(a, &dropped)->n, 0u);
    cr_assert_eq(dropped, 0u);
    finish(a);
}

Test(history, each_call_in_order_with_its_figures)
{
    cca_allocator_t *a = make_alloc("");
    cudaStream_t s2;
    cudaStreamCreate(&s2);
    uint32_t opt = 0;
    cr_assert_eq(cca_tag_id("optimizer", &opt), CCA_OK);
    cr_assert_eq(cca_record_history(a, 1000), CCA_OK);
    uint64_t t0 = 0;
    {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        t0 = (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
    }
    void *p = alloc_ok(a, 1000, NULL);                /* a new 2 MiB small segment */
    void *q = alloc_ok(a, 3000, NULL);                /* the same segment */
    cca_tag_thread(opt);
    void *r = alloc_ok(a, 5 * MiB, s2);               /* a large segment on s2 */
    cca_tag_thread(0);
    free_ok(a, q);
    free_ok(a, r);
    got_t *g = walk(a, NULL);
    cr_assert_eq(g->n, 9u);
    expect(&g->e[0], CCA_HISTORY_SEGMENT_ALLOC, p, 2 * MiB, NULL, 0);
    expect(&g->e[1], CCA_HISTORY_ALLOC, p, 1000, NULL, 0);
    expect(&g->e[2], CCA_HISTORY_ALLOC, q, 3000, NULL, 0);
    cr_assert_eq(g->e[3].action, CCA_HISTORY_SEGMENT_ALLOC);
    cr_assert_eq(g->e[3].stream, s2);
    cr_assert_eq(g->e[3].addr, (uintptr_t)r);
    cr_assert_geq(g->e[3].size, 5 * MiB);
    size_t rseg = g->e[3].size;
    expect(&g->e[4], CCA_HISTORY_ALLOC, r, 5 * MiB, s2, opt);
    expect(&g->e[5], CCA_HISTORY_FREE_REQUESTED, q, 3000, NULL, 0);
    expect(&g->e[6], CCA_HISTORY_FREE_COMPLETED, q, 3000, NULL, 0);
    expect(&g->e[7], CCA_HISTORY_FREE_REQUESTED, r, 5 * MiB, s2, opt);
    expect(&g->e[8], CCA_HISTORY_FREE_COMPLETED, r, 5 * MiB, s2, opt);
    cr_assert_eq(cca_empty_cache(a), CCA_OK);         /* r's segment goes; p's stays */
    g = walk(a, NULL);
    cr_assert_eq(g->n, 10u, "empty_cache's cudaFree recorded");
    expect(&g->e[9], CCA_HISTORY_SEGMENT_FREE, r, rseg, s2, 0);
    for (size_t i = 0; i < g->n; i++) {
        cr_assert_geq(g->e[i].time_us, t0, "entry %zu: time since the epoch", i);
        if (i) cr_assert_geq(g->e[i].time_us, g->e[i - 1].time_us, "entry %zu: in order", i);
        cr_assert_eq(g->e[i].device_free, 0u);
    }
    free_ok(a, p);
    finish(a);
    cudaStreamDestroy(s2);
}

Test(history, a_pending_free_completes_when_its_events_do)
{
    cca_allocator_t *a = make_alloc("");
    cudaStream_t s2;
    cudaStreamCreate(&s2);
    void *p = alloc_ok(a, 3 * MiB, NULL);
    cr_assert_eq(cca_record_history(a, 100), CCA_OK);
    cr_assert_eq(cca_record_stream(a, p, s2), CCA_OK);
    cca_sim_stream_hold(s2);
    free_ok(a, p);
    got_t *g = walk(a, NULL);
    cr_assert_eq(g->n, 1u, "requested, not completed: s2 may still use it");
    expect(&g->e[0], CCA_HISTORY_FREE_REQUESTED, p, 3 * MiB, NULL, 0);
    void *o = alloc_ok(a, 100, NULL);                 /* processes events: still pending */
    cr_assert_eq(walk(a, NULL)->n, 3u);               /* segment_alloc, alloc */
    cca_sim_stream_release(s2);
    void *o2 = alloc_ok(a, 200, NULL);                /* the event completed */
    g = walk(a, NULL);
    cr_assert_eq(g->n, 5u);
    expect(&g->e[3], CCA_HISTORY_FREE_COMPLETED, p, 3 * MiB, NULL, 0);
    expect(&g->e[4], CCA_HISTORY_ALLOC, o2, 200, NULL, 0);
    free_ok(a, o);
    free_ok(a, o2);
    finish(a);
    cudaStreamDestroy(s2);
}

Test(history, out_of_memory_with_the_devices_free_bytes)
{
    cca_sim_set_capacity(0, 64 * MiB);
    cca_allocator_t *a = make_alloc("");
    uint32_t big = 0;
    cr_assert_eq(cca_tag_id("big", &big), CCA_OK);
    void *p = alloc_ok(a, 40 * MiB, NULL);
    cr_assert_eq(cca_record_history(a, 100), CCA_OK);
    void *q = NULL;
    cca_tag_thread(big);
    cr_assert_eq(cca_malloc(a, &q, 50 * MiB, NULL), CCA_ERROR_OUT_OF_MEMORY);
    cca_tag_thread(0);
    cca_oom_report_t r;
    cr_assert_eq(cca_last_oom_report(a, &r), CCA_OK);
    got_t *g = walk(a, NULL);
    cr_assert_eq(g->n, 1u);
    expect(&g->e[0], CCA_HISTORY_OOM, NULL, 50 * MiB, NULL, big);
    cr_assert_eq(g->e[0].device_free, r.device_free);
    cr_assert_eq(g->e[0].device_free, 64 * MiB - cca_sim_used_bytes(0), "cudaMemGetInfo's free");
    free_ok(a, p);
    finish(a);
}

Test(history, the_newest_entries_within_the_bound)
{
    cca_allocator_t *a = make_alloc("");
    void *keep = alloc_ok(a, 512, NULL);              /* the segment, before recording */
    cr_assert_eq(cca_record_history(a, 4), CCA_OK);
    void *p[10];
    for (int i = 0; i < 10; i++) p[i] = alloc_ok(a, 512 * (size_t)(i + 1), NULL);
    uint64_t dropped = 0;
    got_t *g = walk(a, &dropped);
    cr_assert_eq(g->n, 4u);
    cr_assert_eq(dropped, 6u);
    for (int i = 0; i < 4; i++) expect(&g->e[i], CCA_HISTORY_ALLOC, p[6 + i], 512 * (size_t)(7 + i), NULL, 0);

    cr_assert_eq(cca_record_history(a, 2), CCA_OK, "a smaller bound keeps the newest");
    g = walk(a, &dropped);
    cr_assert_eq(g->n, 2u);
    cr_assert_eq(dropped, 8u);
    expect(&g->e[0], CCA_HISTORY_ALLOC, p[8], 512 * 9, NULL, 0);
    expect(&g->e[1], CCA_HISTORY_ALLOC, p[9], 512 * 10, NULL, 0);

    cr_assert_eq(cca_record_history(a, 1000), CCA_OK, "a larger bound grows again");
    for (int i = 0; i < 10; i++) free_ok(a, p[i]);
    g = walk(a, &dropped);
    cr_assert_eq(g->n, 22u);
    cr_assert_eq(dropped, 8u);
    expect(&g->e[2], CCA_HISTORY_FREE_REQUESTED, p[0], 512, NULL, 0);
    expect(&g->e[21], CCA_HISTORY_FREE_COMPLETED, p[9], 5120, NULL, 0);

    got_t stop = { .stop_at = 3 };
    cr_assert_eq(cca_history_walk(a, collect, &stop, NULL), CCA_OK);
    cr_assert_eq(stop.n, 3u, "the callback's nonzero stops the walk");

    cr_assert_eq(cca_record_history(a, 0), CCA_OK, "stops and drops");
    cr_assert_eq(walk(a, &dropped)->n, 0u);
    cr_assert_eq(dropped, 0u);
    free_ok(a, keep);
    cr_assert_eq(walk(a, NULL)->n, 0u);
    check_ok(a);
    finish(a);
}

Test(history, every_call_all_locked_while_recording_and_the_hot_path_after)
{
    cca_allocator_t *a = make_alloc("");
    free_ok(a, alloc_ok(a, 4096, NULL));              /* a cached block: the hot path serves it */
    uint64_t locks = a->lock_all_count;
    free_ok(a, alloc_ok(a, 4096, NULL));
    cr_assert_eq(a->lock_all_count, locks, "the hot path, before recording");
    cr_assert_eq(cca_record_history(a, 10000), CCA_OK);
    for (int i = 0; i < 100; i++) free_ok(a, alloc_ok(a, 4096, NULL));
    cr_assert_eq(walk(a, NULL)->n, 300u, "alloc, free_requested, free_completed for each");
    cr_assert_geq(a->lock_all_count, locks + 200);
    cr_assert_eq(cca_record_history(a, 0), CCA_OK);
    locks = a->lock_all_count;
    free_ok(a, alloc_ok(a, 4096, NULL));
    cr_assert_eq(a->lock_all_count, locks, "the hot path again once stopped");
    finish(a);
}

Test(history, watches_and_history_keep_their_own_hooks)
{
    cca_allocator_t *a = make_alloc("");
    uint64_t w = 0;
    cr_assert_eq(cca_watch_threshold_queued(a, CCA_WATCH_ALLOCATED, 1 * GiB, &w), CCA_OK);
    cr_assert_eq(cca_record_history(a, 100), CCA_OK);
    cr_assert_eq(cca_unwatch(a, w), CCA_OK);
    free_ok(a, alloc_ok(a, 1000, NULL));
    cr_assert_eq(walk(a, NULL)->n, 4u, "still recording after the watch went");
    cr_assert_eq(cca_watch_threshold_queued(a, CCA_WATCH_ALLOCATED, 1 * GiB, &w), CCA_OK);
    cr_assert_eq(cca_record_history(a, 0), CCA_OK);
    cr_assert_neq(atomic_load(&a->hooks) & CCA_HOOK_WATCH, 0, "the watch's hook stays");
    cr_assert_eq(atomic_load(&a->hooks) & CCA_HOOK_HISTORY, 0);
    cr_assert_eq(cca_unwatch(a, w), CCA_OK);
    cr_assert_eq(atomic_load(&a->hooks), 0);
    finish(a);
}

#define THREADS 4
#define PER_THREAD 500
static cca_allocator_t *shared;

static void *worker(void *arg)
{
    cudaStream_t s = arg;
    for (int i = 0; i < PER_THREAD; i++) {
        void *p = NULL;
        if (cca_malloc(shared, &p, 256 * (size_t)(1 + i % 7), s) != CCA_OK || cca_free(shared, p) != CCA_OK) return arg;
    }
    return NULL;
}

typedef struct counts { size_t n[8]; uintptr_t open[THREADS * 8]; size_t bad; } counts_t;

static int count(const cca_history_entry_t *e, void *arg)
{
    counts_t *c = arg;
    if (e->action > 0 && e->action < 8) c->n[e->action]++;
    return 0;
}

Test(history, threads_record_every_call)
{
    shared = make_alloc("");
    cr_assert_eq(cca_record_history(shared, 100000), CCA_OK);
    pthread_t t[THREADS];
    cudaStream_t s[THREADS];
    for (int i = 0; i < THREADS; i++) {
        cudaStreamCreate(&s[i]);
        pthread_create(&t[i], NULL, worker, i % 2 ? s[i] : NULL);
    }
    for (int i = 0; i < THREADS; i++) {
        void *r = NULL;
        pthread_join(t[i], &r);
        cr_assert_null(r);
    }
    counts_t c = { 0 };
    uint64_t dropped = 1;
    cr_assert_eq(cca_history_walk(shared, count, &c, &dropped), CCA_OK);
    cr_assert_eq(dropped, 0u);
    cr_assert_eq(c.n[CCA_HISTORY_ALLOC], (size_t)THREADS * PER_THREAD);
    cr_assert_eq(c.n[CCA_HISTORY_FREE_REQUESTED], (size_t)THREADS * PER_THREAD);
    cr_assert_eq(c.n[CCA_HISTORY_FREE_COMPLETED], (size_t)THREADS * PER_THREAD);
    cca_stats_t st = stats_of(shared);
    cr_assert_eq(c.n[CCA_HISTORY_SEGMENT_ALLOC], (size_t)st.num_device_alloc);
    check_ok(shared);
    finish(shared);
    for (int i = 0; i < THREADS; i++) cudaStreamDestroy(s[i]);
}

static int big_entry(const cca_history_entry_t *e, void *arg)
{
    const unsigned char *tail = (const unsigned char *)(e + 1);
    for (int i = 0; i < 16; i++)
        if (tail[i]) ++*(int *)arg;
    return 0;
}

Test(history, sized_entries_and_bad_input)
{
    cca_allocator_t *a = make_alloc("");
    cr_assert_eq(cca_record_history(NULL, 10), CCA_ERROR_INVALID_ARGUMENT);
    cr_assert_eq(cca_history_walk(NULL, collect, NULL, NULL), CCA_ERROR_INVALID_ARGUMENT);
    uint64_t dropped = 5;
    cr_assert_eq(cca_history_walk(a, NULL, NULL, &dropped), CCA_ERROR_INVALID_ARGUMENT);
    cr_assert_eq(dropped, 0u);
    cr_assert_eq(cca_history_walk_sized(a, collect, NULL, NULL, CCA_V1_HISTORY - 8), CCA_ERROR_INVALID_ARGUMENT);
    cr_assert(strstr(cca_last_error_string(), "entry size") != NULL, "%s", cca_last_error_string());
    cr_assert_eq(cca_record_history(a, 10), CCA_OK);
    free_ok(a, alloc_ok(a, 100, NULL));
    int nonzero = 0;
    cr_assert_eq(cca_history_walk_sized(a, big_entry, &nonzero, NULL, sizeof(cca_history_entry_t) + 16), CCA_OK);
    cr_assert_eq(nonzero, 0, "a later caller's fields past ours are zero");
    got_t g1 = { 0 };                                 /* a caller built against the first version (no context) */
    cr_assert_eq(cca_history_walk_sized(a, collect, &g1, NULL, CCA_V1_HISTORY), CCA_OK, "%s", cca_last_error_string());
    cr_assert_eq(g1.n, 4u);
    cr_assert_str_eq(cca_history_action_string(CCA_HISTORY_ALLOC), "alloc");
    cr_assert_str_eq(cca_history_action_string(CCA_HISTORY_FREE_REQUESTED), "free_requested");
    cr_assert_str_eq(cca_history_action_string(CCA_HISTORY_FREE_COMPLETED), "free_completed");
    cr_assert_str_eq(cca_history_action_string(CCA_HISTORY_SEGMENT_ALLOC), "segment_alloc");
    cr_assert_str_eq(cca_history_action_string(CCA_HISTORY_SEGMENT_FREE), "segment_free");
    cr_assert_str_eq(cca_history_action_string(CCA_HISTORY_OOM), "oom");
    cr_assert_str_eq(cca_history_action_string(CCA_HISTORY_SNAPSHOT), "snapshot");
    cr_assert_str_eq(cca_history_action_string(0), "unknown");
    cr_assert_str_eq(cca_history_action_string(99), "unknown");
    const cca_struct_layout_t *l = cca_struct_layout("cca_history_entry_t");
    cr_assert_not_null(l);
    cr_assert_eq(l->size, sizeof(cca_history_entry_t));
    cr_assert_eq(l->n_fields, 8u);
    finish(a);
}

Test(history, the_default_allocators_now_and_later)
{
    cca_sim_set_device_count(2);
    cca_allocator_t *d0 = NULL, *d1 = NULL;
    cr_assert_eq(cca_default(0, &d0), CCA_OK);
    cr_assert_eq(cca_default_record_history(50), CCA_OK);
    free_ok(d0, alloc_ok(d0, 100, NULL));
    cr_assert_geq(walk(d0, NULL)->n, 3u);
    cr_assert_eq(cca_default(1, &d1), CCA_OK, "made after: records too");
    cr_assert_eq(cudaSetDevice(1), cudaSuccess);
    free_ok(d1, alloc_ok(d1, 100, NULL));
    cr_assert_eq(cudaSetDevice(0), cudaSuccess);
    cr_assert_geq(walk(d1, NULL)->n, 3u);
    cr_assert_eq(cca_default_record_history(0), CCA_OK);
    cr_assert_eq(walk(d0, NULL)->n, 0u);
    cr_assert_eq(walk(d1, NULL)->n, 0u);
}

/* A caller built against the cca.h before block info had its tag. */
static int old_block(const cca_block_info_t *b, void *arg)
{
    (void)b;
    ++*(int *)arg;
    return 0;
}

Test(history, snapshot_walk_takes_the_first_block_info_size)
{
    cca_allocator_t *a = make_alloc("");
    void *p = alloc_ok(a, 100, NULL);
    int n = 0;
    cr_assert_eq(cca_snapshot_walk_sized(a, NULL, old_block, &n, sizeof(cca_segment_info_t),
                                         offsetof(cca_block_info_t, tag)), CCA_OK, "%s", cca_last_error_string());
    cr_assert_eq(n, 2);
    free_ok(a, p);
    finish(a);
}

Test(history, a_free_requested_before_recording_completes_with_its_size)
{
    cca_allocator_t *a = make_alloc("");
    cudaStream_t s2;
    cudaStreamCreate(&s2);
    void *p = alloc_ok(a, 3 * MiB + 1000, NULL);      /* rounded: 3 MiB + 1024 */
    cr_assert_eq(cca_record_stream(a, p, s2), CCA_OK);
    cca_sim_stream_hold(s2);
    free_ok(a, p);
    cr_assert_eq(cca_record_history(a, 100), CCA_OK);
    cca_sim_stream_release(s2);
    void *q = alloc_ok(a, 100, NULL);
    got_t *g = walk(a, NULL);
    cr_assert_geq(g->n, 2u);
    expect(&g->e[0], CCA_HISTORY_FREE_COMPLETED, p, 3 * MiB + 1000, NULL, 0);
    free_ok(a, q);
    finish(a);
    cudaStreamDestroy(s2);
}

static json_object *get(json_object *o, const char *key)
{
    json_object *v = NULL;
    cr_assert(json_object_object_get_ex(o, key, &v), "no \"%s\"", key);
    return v;
}

Test(history, the_snapshot_json_with_the_history_of_the_same_moment)
{
    cca_allocator_t *a = make_alloc("");
    uint32_t t = 0;
    cr_assert_eq(cca_tag_id("say \"hi\"", &t), CCA_OK);
    cr_assert_eq(cca_record_history(a, 3), CCA_OK);
    void *p = alloc_ok(a, 1000, NULL);
    cca_tag_thread(t);
    void *q = alloc_ok(a, 2000, NULL);
    cca_tag_thread(0);
    free_ok(a, p);                                    /* 5 entries, the ring keeps 3 */
    sink_t k = { 0 };
    cr_assert_eq(cca_snapshot_json_history(a, sink_write, &k), CCA_OK, "%s", cca_last_error_string());
    json_object *o = json_tokener_parse(k.s);
    cr_assert_not_null(o, "not JSON:\n%s", k.s);
    cr_assert_eq(json_object_array_length(get(o, "segments")), 1u);
    cr_assert_eq(json_object_get_int64(get(o, "trace_dropped")), 2);
    json_object *tr = get(o, "trace");
    cr_assert_eq(json_object_array_length(tr), 3u);
    json_object *e0 = json_object_array_get_idx(tr, 0), *e2 = json_object_array_get_idx(tr, 2);
    cr_assert_str_eq(json_object_get_string(get(e0, "action")), "alloc");
    cr_assert_eq((uintptr_t)json_object_get_int64(get(e0, "addr")), (uintptr_t)q);
    cr_assert_eq(json_object_get_int64(get(e0, "size")), 2000);
    cr_assert_str_eq(json_object_get_string(get(e0, "tag")), "say \"hi\"");
    cr_assert_eq(json_object_get_int64(get(e0, "stream")), 0);
    cr_assert(json_object_get_int64(get(e0, "time_us")) > 0);
    cr_assert_eq(json_object_array_length(get(e0, "frames")), 0u);
    cr_assert_str_eq(json_object_get_string(get(e2, "action")), "free_completed");
    cr_assert(!json_object_object_get_ex(e2, "tag", NULL), "untagged: no tag key");
    cr_assert(!json_object_object_get_ex(e2, "device_free", NULL), "device_free only for oom");
    json_object_put(o);
    free(k.s);
    k = (sink_t){ 0 };
    cr_assert_eq(cca_snapshot_json(a, sink_write, &k), CCA_OK);
    cr_assert_null(strstr(k.s, "trace"), "the plain snapshot has no trace");
    free(k.s);
    cr_assert_eq(cca_snapshot_json_history(NULL, sink_write, NULL), CCA_ERROR_INVALID_ARGUMENT);
    cr_assert_eq(cca_snapshot_json_history(a, NULL, NULL), CCA_ERROR_INVALID_ARGUMENT);
    size_t left = 10;
    cr_assert_eq(cca_snapshot_json_history(a, (cca_write_fn)failing_write, &left), CCA_ERROR_INVALID_ARGUMENT);
    free_ok(a, q);
    finish(a);
}

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define HISTORY_NO_RLIMIT 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define HISTORY_NO_RLIMIT 1
#endif
#endif

static int keep_last(const cca_history_entry_t *e, void *arg)
{
    *(cca_history_entry_t *)arg = *e;
    return 0;
}

/* Host memory runs out as the ring would grow (an address-space limit in
 * this test's own process): it keeps the size it has and drops the oldest
 * entries, not the newest. Sanitizers reserve address space of their own:
 * skipped there. */
Test(history, a_ring_that_cannot_grow_keeps_the_newest)
{
#ifdef HISTORY_NO_RLIMIT
    cr_skip_test("an address-space limit and a sanitizer do not mix");
#else
    cca_allocator_t *a = make_alloc("");
    free_ok(a, alloc_ok(a, 4096, NULL));              /* a cached block: no host memory per call */
    cr_assert_eq(cca_record_history(a, SIZE_MAX / 2), CCA_OK);
    for (int i = 0; i < 21845; i++) free_ok(a, alloc_ok(a, 4096, NULL));   /* 65,535 entries */
    void *last = alloc_ok(a, 4096, NULL);             /* 65,536: the ring's size */
    struct rlimit old, lim;
    cr_assert_eq(getrlimit(RLIMIT_AS, &old), 0);
    unsigned long pages = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    cr_assert_not_null(f);
    cr_assert_eq(fscanf(f, "%lu", &pages), 1);
    fclose(f);
    lim = old;
    lim.rlim_cur = pages * (rlim_t)sysconf(_SC_PAGESIZE) + (1u << 20);   /* 1 MiB more: not 3.5 MiB more ring */
    cr_assert_eq(setrlimit(RLIMIT_AS, &lim), 0);
    free_ok(a, last);
    void *p = NULL;
    for (int i = 0; i < 10; i++) free_ok(a, p = alloc_ok(a, 4096, NULL));
    cr_assert_eq(setrlimit(RLIMIT_AS, &old), 0);
    uint64_t dropped = 0;
    got_t *g = walk(a, &dropped);
    cr_assert_eq(g->n, 65536u, "the size it had became its bound");
    cr_assert_eq(dropped, 32u, "the 32 oldest went");
    cca_history_entry_t newest = { 0 };
    cr_assert_eq(cca_history_walk(a, keep_last, &newest, NULL), CCA_OK);
    expect(&newest, CCA_HISTORY_FREE_COMPLETED, p, 4096, NULL, 0);   /* the newest survived */
    check_ok(a);
    cr_assert_eq(cca_record_history(a, 0), CCA_OK);
    finish(a);
#endif
}

/* ---- contexts (cca_history_set_context) and skipped actions ---- */

static uint64_t ctx_next = 100;
static int ctx_calls[8];
static cca_allocator_t *ctx_alloc;                    /* the context function allocates from it, nested */

static uint64_t give_context(int action)
{
    ctx_calls[action]++;
    if (ctx_alloc) {                                  /* no lock of cca's is held: a nested call works */
        cca_allocator_t *a = ctx_alloc;
        ctx_alloc = NULL;
        free_ok(a, alloc_ok(a, 512, NULL));
        ctx_alloc = a;
    }
    return ++ctx_next;
}

static uint64_t blocks_context[8];
static int block_context(const cca_block_info_t *b, void *arg)
{
    size_t *n = arg;
    if (b->state != CCA_STATE_INACTIVE && *n < 8) blocks_context[(*n)++] = b->context;
    return 0;
}

Test(history, each_event_carries_its_calls_context)
{
    cca_allocator_t *a = make_alloc("");
    memset(ctx_calls, 0, sizeof ctx_calls);
    ctx_next = 100;
    cca_history_set_context(give_context, 1u << CCA_HISTORY_ALLOC | 1u << CCA_HISTORY_FREE_REQUESTED);
    void *before = alloc_ok(a, 1000, NULL);           /* not recording: fn is not called */
    cr_assert_eq(ctx_calls[CCA_HISTORY_ALLOC], 0);
    cr_assert_eq(cca_record_history(a, 100), CCA_OK);
    void *p = alloc_ok(a, 5 * MiB, NULL);             /* context 101: its segment's event too */
    void *q = alloc_ok(a, 2000, NULL);                /* 102 */
    free_ok(a, q);                                    /* 103: requested and completed */
    cr_assert_eq(ctx_calls[CCA_HISTORY_ALLOC], 2);
    cr_assert_eq(ctx_calls[CCA_HISTORY_FREE_REQUESTED], 1);
    got_t *g = walk(a, NULL);
    cr_assert_eq(g->n, 5u);
    uint64_t want[] = { 101, 101, 102, 103, 103 };
    int act[] = { CCA_HISTORY_SEGMENT_ALLOC, CCA_HISTORY_ALLOC, CCA_HISTORY_ALLOC, CCA_HISTORY_FREE_REQUESTED,
                  CCA_HISTORY_FREE_COMPLETED };
    for (size_t i = 0; i < 5; i++) {
        cr_assert_eq(g->e[i].action, act[i], "entry %zu", i);
        cr_assert_eq(g->e[i].context, want[i], "entry %zu: context %" PRIu64 ", expected %" PRIu64, i,
                     g->e[i].context, want[i]);
    }
    size_t n = 0;                                     /* the live blocks keep their allocation's context */
    cr_assert_eq(cca_snapshot_walk(a, NULL, block_context, &n), CCA_OK);
    cr_assert_eq(n, 2u);
    cr_assert_eq(blocks_context[0], 0u, "allocated before recording: none");
    cr_assert_eq(blocks_context[1], 101u);
    /* the JSON says it */
    sink_t k = { 0 };
    cr_assert_eq(cca_snapshot_json_history(a, sink_write, &k), CCA_OK, "%s", cca_last_error_string());
    json_object *root = json_tokener_parse(k.s);
    cr_assert_not_null(root, "%s", k.s);
    cr_assert_eq(json_object_get_int64(get(json_object_array_get_idx(get(root, "trace"), 2), "context")), 102);
    json_object *blocks = get(json_object_array_get_idx(get(root, "segments"), 0), "blocks");
    cr_assert(!json_object_object_get_ex(json_object_array_get_idx(blocks, 0), "context", NULL), "none: no key");
    json_object_put(root);
    free(k.s);
    /* an out-of-memory carries the failing call's context */
    cr_assert_eq(cca_malloc(a, &q, (size_t)1 << 50, NULL), CCA_ERROR_OUT_OF_MEMORY);
    g = walk(a, NULL);
    cr_assert_eq(g->e[g->n - 1].action, CCA_HISTORY_OOM);
    cr_assert_eq(g->e[g->n - 1].context, 104u);
    /* only the actions asked for; a bad pointer's free calls fn and records nothing */
    cca_history_set_context(give_context, 1u << CCA_HISTORY_ALLOC);
    free_ok(a, p);
    g = walk(a, NULL);
    cr_assert_eq(g->e[g->n - 2].action, CCA_HISTORY_FREE_REQUESTED);
    cr_assert_eq(g->e[g->n - 2].context, 0u, "frees were not asked for");
    cr_assert_eq(ctx_calls[CCA_HISTORY_FREE_REQUESTED], 1);
    cca_history_set_context(NULL, ~0u);
    free_ok(a, before);
    finish(a);
}

Test(history, a_context_function_that_allocates_nests)
{
    cca_allocator_t *a = make_alloc("");
    cr_assert_eq(cca_record_history(a, 100), CCA_OK);
    ctx_next = 0;
    ctx_alloc = a;
    cca_history_set_context(give_context, 1u << CCA_HISTORY_ALLOC | 1u << CCA_HISTORY_FREE_REQUESTED);
    void *p = alloc_ok(a, 3000, NULL);                /* fn allocates 512 B and frees it first */
    ctx_alloc = NULL;
    cca_history_set_context(NULL, 0);
    got_t *g = walk(a, NULL);
    /* the nested malloc asked fn too (1) and so did its free (2), each
     * within the outer call's fn, which returned 3 after them */
    cr_assert_eq(g->n, 5u);
    int act[] = { CCA_HISTORY_SEGMENT_ALLOC, CCA_HISTORY_ALLOC, CCA_HISTORY_FREE_REQUESTED,
                  CCA_HISTORY_FREE_COMPLETED, CCA_HISTORY_ALLOC };
    uint64_t want[] = { 1, 1, 2, 2, 3 };
    for (size_t i = 0; i < 5; i++) {
        cr_assert_eq(g->e[i].action, act[i], "entry %zu", i);
        cr_assert_eq(g->e[i].context, want[i], "entry %zu: context %" PRIu64, i, g->e[i].context);
    }
    cr_assert_eq(g->e[4].addr, (uintptr_t)p);
    free_ok(a, p);
    cr_assert_eq(cca_check(a), CCA_OK, "%s", cca_last_error_string());
    finish(a);
}

Test(history, a_block_keeps_its_context_after_recording_and_a_reused_one_has_none)
{
    cca_allocator_t *a = make_alloc("");
    ctx_next = 500;
    cca_history_set_context(give_context, 1u << CCA_HISTORY_ALLOC);
    cr_assert_eq(cca_record_history(a, 100), CCA_OK);
    void *p = alloc_ok(a, 3000, NULL);                /* 501 */
    void *q = alloc_ok(a, 5000, NULL);                /* 502 */
    cr_assert_eq(cca_record_history(a, 0), CCA_OK);
    free_ok(a, q);                                    /* on the hot path now */
    void *r = alloc_ok(a, 5000, NULL);                /* q's block again, not recording */
    cr_assert_eq(r, q);
    size_t n = 0;
    cr_assert_eq(cca_snapshot_walk(a, NULL, block_context, &n), CCA_OK);
    cr_assert_eq(n, 2u);
    cr_assert_eq(blocks_context[0], 501u, "allocated while recording: kept");
    cr_assert_eq(blocks_context[1], 0u, "allocated after: none, though its block had 502");
    cr_assert_eq(cca_record_history(a, 100), CCA_OK);
    free_ok(a, r);
    r = alloc_ok(a, 5000, NULL);                      /* all locked again: 503 */
    n = 0;
    cr_assert_eq(cca_snapshot_walk(a, NULL, block_context, &n), CCA_OK);
    cr_assert_eq(blocks_context[0], 501u, "recording again keeps what it had");
    cr_assert_eq(blocks_context[1], 503u);
    cca_history_set_context(NULL, 0);
    cr_assert_eq(cca_record_history(a, 0), CCA_OK);
    free_ok(a, p);
    free_ok(a, r);
    finish(a);
}

Test(history, skipped_actions_are_not_recorded)
{
    cca_allocator_t *a = make_alloc("");
    cr_assert_eq(cca_record_history(a, 100), CCA_OK);
    cca_history_set_skip(1u << CCA_HISTORY_FREE_REQUESTED | 1u << CCA_HISTORY_SEGMENT_ALLOC);
    free_ok(a, alloc_ok(a, 3000, NULL));
    cca_history_set_skip(0);
    got_t *g = walk(a, NULL);
    cr_assert_eq(g->n, 2u);
    cr_assert_eq(g->e[0].action, CCA_HISTORY_ALLOC);
    cr_assert_eq(g->e[1].action, CCA_HISTORY_FREE_COMPLETED);
    finish(a);
}

Test(history, a_snapshot_mark_with_the_allocated_bytes)
{
    cca_allocator_t *a = make_alloc("");
    cr_assert_eq(cca_history_mark_snapshot(a), CCA_OK, "not recording: nothing");
    cr_assert_eq(cca_history_mark_snapshot(NULL), CCA_ERROR_INVALID_ARGUMENT);
    cr_assert_eq(cca_record_history(a, 100), CCA_OK);
    void *p = alloc_ok(a, 3000, NULL);                /* 3072 allocated */
    cca_history_set_context(give_context, 1u << CCA_HISTORY_ALLOC);
    cr_assert_eq(cca_history_mark_snapshot(a), CCA_OK);
    cca_history_set_context(NULL, 0);
    got_t *g = walk(a, NULL);
    cr_assert_eq(g->n, 3u);
    expect(&g->e[2], CCA_HISTORY_SNAPSHOT, NULL, 3072, NULL, 0);
    cr_assert_eq(g->e[2].context, 0u, "a snapshot has no caller's context");
    cca_history_set_skip(1u << CCA_HISTORY_SNAPSHOT);
    cr_assert_eq(cca_history_mark_snapshot(a), CCA_OK);
    cca_history_set_skip(0);
    cr_assert_eq(walk(a, NULL)->n, 3u, "skipped");
    free_ok(a, p);
    finish(a);
}

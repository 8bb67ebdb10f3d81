/* test_core.c - the caching core on the simulated device: exact counters
 * through splits and merges, reuse, streams, OOM, cap, GC, empty cache. */
#include <pthread.h>
#include "common.h"

static void setup(void) { cca_sim_reset(); }
TestSuite(core, .init = setup);

Test(core, small_pool_split_and_merge_counters)
{
    cca_allocator_t *a = make_alloc("");
    char *p1 = alloc_ok(a, 1000, NULL);
    cca_stats_t s = stats_of(a);
    ASSERT_STAT(s, allocation, CCA_POOL_SMALL, 1);
    ASSERT_STAT(s, allocation, CCA_POOL_LARGE, 0);
    ASSERT_STAT(s, segment, CCA_POOL_ALL, 1);
    ASSERT_STAT(s, reserved_bytes, CCA_POOL_SMALL, 2 * MiB);
    ASSERT_STAT(s, allocated_bytes, CCA_POOL_ALL, 1024);
    ASSERT_STAT(s, requested_bytes, CCA_POOL_ALL, 1000);
    ASSERT_STAT(s, active_bytes, CCA_POOL_ALL, 1024);
    ASSERT_STAT(s, inactive_split, CCA_POOL_SMALL, 1);
    ASSERT_STAT(s, inactive_split_bytes, CCA_POOL_SMALL, 2 * MiB - 1024);

    char *p2 = alloc_ok(a, 512, NULL);
    cr_assert_eq(p2, p1 + 1024, "best fit splits the remainder in address order");
    s = stats_of(a);
    ASSERT_STAT(s, allocated_bytes, CCA_POOL_SMALL, 1536);
    ASSERT_STAT(s, requested_bytes, CCA_POOL_SMALL, 1512);
    ASSERT_STAT(s, inactive_split, CCA_POOL_SMALL, 1);
    ASSERT_STAT(s, inactive_split_bytes, CCA_POOL_SMALL, 2 * MiB - 1536);
    check_ok(a);

    free_ok(a, p1);
    s = stats_of(a);
    ASSERT_STAT(s, allocation, CCA_POOL_ALL, 1);
    ASSERT_STAT(s, allocated_bytes, CCA_POOL_ALL, 512);
    ASSERT_STAT(s, requested_bytes, CCA_POOL_ALL, 512);
    ASSERT_STAT(s, active, CCA_POOL_ALL, 1);
    ASSERT_STAT(s, inactive_split, CCA_POOL_SMALL, 2);
    ASSERT_STAT(s, inactive_split_bytes, CCA_POOL_SMALL, 2 * MiB - 512);
    check_ok(a);

    free_ok(a, p2);
    s = stats_of(a);
    ASSERT_STAT(s, inactive_split, CCA_POOL_ALL, 0);
    ASSERT_STAT(s, inactive_split_bytes, CCA_POOL_ALL, 0);
    ASSERT_STAT(s, allocated_bytes, CCA_POOL_ALL, 0);
    ASSERT_STAT(s, active_bytes, CCA_POOL_ALL, 0);
    ASSERT_STAT(s, reserved_bytes, CCA_POOL_ALL, 2 * MiB);
    ASSERT_PEAK(s, allocation, CCA_POOL_ALL, 2);
    ASSERT_PEAK(s, allocated_bytes, CCA_POOL_SMALL, 1536);
    ASSERT_PEAK(s, inactive_split, CCA_POOL_SMALL, 2);
    cr_assert_eq(s.allocated_bytes[CCA_POOL_ALL].allocated, 1536);
    cr_assert_eq(s.allocated_bytes[CCA_POOL_ALL].freed, 1536);
    cr_assert_eq(s.num_device_alloc, 1);

    char *p3 = alloc_ok(a, 512, NULL);
    cr_assert_eq(p3, p1, "the coalesced segment is reused from its start");
    free_ok(a, p3);
    finish(a);
}

Test(core, large_pool_split_rules_and_segment_sizes)
{
    cca_allocator_t *a = make_alloc("");
    char *p1 = alloc_ok(a, 3 * MiB, NULL);
    cca_stats_t s = stats_of(a);
    ASSERT_STAT(s, reserved_bytes, CCA_POOL_LARGE, 20 * MiB);
    ASSERT_STAT(s, inactive_split_bytes, CCA_POOL_LARGE, 17 * MiB);

    /* 16.5 MiB from the 17 MiB remainder: 0.5 MiB left is not > 1 MiB, no split */
    char *p2 = alloc_ok(a, 16 * MiB + 512 * KiB, NULL);
    cr_assert_eq(p2, p1 + 3 * MiB);
    s = stats_of(a);
    ASSERT_STAT(s, segment, CCA_POOL_LARGE, 1);
    ASSERT_STAT(s, allocated_bytes, CCA_POOL_LARGE, 20 * MiB);
    ASSERT_STAT(s, requested_bytes, CCA_POOL_LARGE, 19 * MiB + 512 * KiB);
    ASSERT_STAT(s, inactive_split, CCA_POOL_LARGE, 0);

    /* >= 10 MiB: a segment of the size rounded up to 2 MiB; 1 MiB left stays */
    void *p3 = alloc_ok(a, 11 * MiB, NULL);
    s = stats_of(a);
    ASSERT_STAT(s, segment, CCA_POOL_LARGE, 2);
    ASSERT_STAT(s, reserved_bytes, CCA_POOL_ALL, 32 * MiB);
    ASSERT_STAT(s, allocated_bytes, CCA_POOL_ALL, 32 * MiB);
    ASSERT_STAT(s, reserved_bytes, CCA_POOL_SMALL, 0);

    free_ok(a, p2);
    s = stats_of(a);
    ASSERT_STAT(s, inactive_split, CCA_POOL_LARGE, 1);
    ASSERT_STAT(s, inactive_split_bytes, CCA_POOL_LARGE, 17 * MiB);
    free_ok(a, p1);
    s = stats_of(a);
    ASSERT_STAT(s, inactive_split, CCA_POOL_LARGE, 0);
    cr_assert_eq(alloc_ok(a, 3 * MiB, NULL), p1);
    s = stats_of(a);
    cr_assert_eq(s.num_device_alloc, 2);
    cr_assert_eq(cca_sim_calls(CCA_SIM_MALLOC), 2);
    free_ok(a, p1);
    free_ok(a, p3);
    finish(a);
}

Test(core, peak_and_reset_semantics)
{
    cca_allocator_t *a = make_alloc("");
    void *x = alloc_ok(a, 4096, NULL), *y = alloc_ok(a, 8192, NULL);
    free_ok(a, x);
    cca_stats_t s = stats_of(a);
    ASSERT_PEAK(s, allocated_bytes, CCA_POOL_ALL, 12288);
    ASSERT_STAT(s, allocated_bytes, CCA_POOL_ALL, 8192);
    cr_assert_eq(cca_reset_peak_stats(a), CCA_OK);
    s = stats_of(a);
    ASSERT_PEAK(s, allocated_bytes, CCA_POOL_ALL, 8192);
    ASSERT_PEAK(s, allocation, CCA_POOL_ALL, 1);
    ASSERT_PEAK(s, reserved_bytes, CCA_POOL_ALL, 2 * MiB);
    cr_assert_eq(s.allocated_bytes[CCA_POOL_ALL].allocated, 12288);
    cr_assert_eq(cca_reset_accumulated_stats(a), CCA_OK);
    s = stats_of(a);
    cr_assert_eq(s.allocated_bytes[CCA_POOL_ALL].allocated, 0);
    cr_assert_eq(s.allocated_bytes[CCA_POOL_ALL].freed, 0);
    cr_assert_eq(s.num_device_alloc, 0);
    ASSERT_STAT(s, allocated_bytes, CCA_POOL_ALL, 8192);
    free_ok(a, y);
    s = stats_of(a);
    cr_assert_eq(s.allocated_bytes[CCA_POOL_ALL].freed, 8192);
    ASSERT_PEAK(s, allocated_bytes, CCA_POOL_ALL, 8192);
    finish(a);
}

Test(core, same_stream_reuse_makes_no_cuda_call)
{
    cca_allocator_t *a = make_alloc("");
    cudaStream_t st;
    cr_assert_eq(cudaStreamCreate(&st), cudaSuccess);
    const size_t sizes[] = { 512, 64 * KiB, 4 * MiB, 64 * MiB };
    void *first[4];
    for (int i = 0; i < 4; i++) { first[i] = alloc_ok(a, sizes[i], st); free_ok(a, first[i]); }
    unsigned long before[CCA_SIM_API_COUNT];
    for (int api = 0; api < CCA_SIM_API_COUNT; api++) before[api] = cca_sim_calls((cca_sim_api_t)api);
    for (int n = 0; n < 1000; n++)
        for (int i = 0; i < 4; i++) {
            void *p = alloc_ok(a, sizes[i], st);
            cr_assert_eq(p, first[i], "a freed block is reused at once on its own stream");
            free_ok(a, p);
        }
    for (int api = 0; api < CCA_SIM_API_COUNT; api++)
        cr_assert_eq(cca_sim_calls((cca_sim_api_t)api), before[api], "%s called in steady state",
                     cca_sim_api_name((cca_sim_api_t)api));
    cca_stats_t s = stats_of(a);
    cr_assert_eq(s.num_device_alloc, 3, "512 B and 64 KiB share a small segment");
    cr_assert_eq(s.allocation[CCA_POOL_ALL].allocated, 4004);
    finish(a);
    cudaStreamDestroy(st);
}

Test(core, blocks_are_not_shared_across_streams)
{
    cca_allocator_t *a = make_alloc("");
    cudaStream_t s1, s2;
    cudaStreamCreate(&s1);
    cudaStreamCreate(&s2);
    void *p = alloc_ok(a, 1 * KiB, s1);
    free_ok(a, p);
    void *q = alloc_ok(a, 1 * KiB, s2);
    cr_assert_neq(p, q);
    cca_stats_t s = stats_of(a);
    ASSERT_STAT(s, segment, CCA_POOL_SMALL, 2);
    free_ok(a, q);
    /* the legacy stream has two names */
    void *l1 = alloc_ok(a, 1 * KiB, NULL);
    free_ok(a, l1);
    void *l2 = alloc_ok(a, 1 * KiB, cudaStreamLegacy);
    cr_assert_eq(l1, l2);
    free_ok(a, l2);
    finish(a);
    cudaStreamDestroy(s1);
    cudaStreamDestroy(s2);
}

Test(core, record_stream_holds_block_until_other_stream_completes)
{
    cca_allocator_t *a = make_alloc("");
    cudaStream_t s2;
    cr_assert_eq(cudaStreamCreate(&s2), cudaSuccess);
    char *p = alloc_ok(a, 1 * MiB, NULL);
    cr_assert_eq(cca_record_stream(a, p, s2), CCA_OK);
    cr_assert_eq(cca_record_stream(a, p, s2), CCA_OK);
    cr_assert_eq(cca_record_stream(a, p, NULL), CCA_OK, "its own stream is not a use");
    cca_sim_stream_hold(s2);
    unsigned long rec = cca_sim_calls(CCA_SIM_EVENT_RECORD);
    free_ok(a, p);
    cr_assert_eq(cca_sim_calls(CCA_SIM_EVENT_RECORD), rec + 1, "one event for one other stream");
    cca_stats_t s = stats_of(a);
    ASSERT_STAT(s, allocation, CCA_POOL_ALL, 0);
    ASSERT_STAT(s, allocated_bytes, CCA_POOL_ALL, 0);
    ASSERT_STAT(s, requested_bytes, CCA_POOL_ALL, 1 * MiB);   /* as active: until s2's use completes (PyTorch) */
    ASSERT_STAT(s, active, CCA_POOL_ALL, 1);
    ASSERT_STAT(s, active_bytes, CCA_POOL_SMALL, 1 * MiB);
    check_ok(a);

    /* while s2 is held, the block stays out of the pool */
    char *q = alloc_ok(a, 1 * MiB, NULL);
    cr_assert_eq(q, p + MiB);
    free_ok(a, q);
    cr_assert_eq(alloc_ok(a, 1 * MiB, NULL), q);
    free_ok(a, q);
    cr_assert_eq(cudaGetLastError(), cudaSuccess, "cudaErrorNotReady from the event query is not left behind");
    s = stats_of(a);
    ASSERT_STAT(s, active, CCA_POOL_ALL, 1);
    ASSERT_STAT(s, inactive_split, CCA_POOL_SMALL, 1);
    check_ok(a);

    cca_sim_stream_release(s2);
    char *r = alloc_ok(a, 512, NULL);    /* processes the completed event */
    cr_assert_eq(r, p, "the block came back and merged with its neighbour");
    s = stats_of(a);
    ASSERT_STAT(s, active, CCA_POOL_ALL, 1);
    ASSERT_STAT(s, active_bytes, CCA_POOL_ALL, 512);
    free_ok(a, r);

    /* events are pooled: a second cross-stream free creates no event */
    unsigned long created = cca_sim_calls(CCA_SIM_EVENT_CREATE);
    p = alloc_ok(a, 4 * KiB, NULL);
    cca_record_stream(a, p, s2);
    free_ok(a, p);
    cr_assert_eq(alloc_ok(a, 4 * KiB, NULL), p);
    cr_assert_eq(cca_sim_calls(CCA_SIM_EVENT_CREATE), created);
    free_ok(a, p);
    finish(a);
    cudaStreamDestroy(s2);
}

Test(core, oom_releases_cache_and_retries_once)
{
    cca_sim_set_capacity(0, 64 * MiB);
    cca_allocator_t *a = make_alloc("");
    void *p[5];
    for (int i = 0; i < 5; i++) p[i] = alloc_ok(a, 12 * MiB, NULL);
    free_ok(a, p[0]);
    free_ok(a, p[1]);
    void *x = alloc_ok(a, 14 * MiB, NULL);
    cca_stats_t s = stats_of(a);
    cr_assert_eq(s.num_alloc_retries, 1);
    cr_assert_eq(s.num_device_free, 2);
    cr_assert_eq(s.num_device_alloc, 6);
    cr_assert_eq(s.num_sync_all_streams, 1);
    cr_assert_eq(s.num_ooms, 0);
    ASSERT_STAT(s, reserved_bytes, CCA_POOL_ALL, 50 * MiB);
    ASSERT_STAT(s, segment, CCA_POOL_ALL, 4);
    cr_assert_eq(cudaGetLastError(), cudaSuccess, "the recovered cudaMalloc error is cleared");
    check_ok(a);

    void *y = (void *)1;
    cr_assert_eq(cca_malloc(a, &y, 40 * MiB, NULL), CCA_ERROR_OUT_OF_MEMORY);
    cr_assert_null(y);
    cr_assert(strstr(cca_last_error_string(), "out of memory") != NULL);
    s = stats_of(a);
    cr_assert_eq(s.num_ooms, 1);
    cr_assert_eq(s.num_alloc_retries, 2);
    ASSERT_STAT(s, reserved_bytes, CCA_POOL_ALL, 50 * MiB);
    ASSERT_STAT(s, allocation, CCA_POOL_ALL, 4);
    ASSERT_STAT(s, allocated_bytes, CCA_POOL_ALL, 50 * MiB);
    cr_assert_eq(cca_sim_calls(CCA_SIM_MALLOC), 9);
    cr_assert_eq(cudaGetLastError(), cudaSuccess);
    check_ok(a);
    for (int i = 2; i < 5; i++) free_ok(a, p[i]);
    free_ok(a, x);
    void *z = alloc_ok(a, 40 * MiB, NULL);   /* usable after the OOM */
    free_ok(a, z);
    finish(a);
}

Test(core, cap_in_bytes_refuses_without_calling_cudaMalloc)
{
    cca_allocator_t *a = make_alloc("memory_limit_mb:30");
    void *p1 = alloc_ok(a, 12 * MiB, NULL), *p2 = alloc_ok(a, 12 * MiB, NULL), *p3 = NULL;
    cr_assert_eq(cca_malloc(a, &p3, 12 * MiB, NULL), CCA_ERROR_OUT_OF_MEMORY);
    cr_assert_eq(cca_sim_calls(CCA_SIM_MALLOC), 2);
    cca_stats_t s = stats_of(a);
    cr_assert_eq(s.num_ooms, 1);
    free_ok(a, p1);
    p3 = alloc_ok(a, 12 * MiB, NULL);
    cr_assert_eq(p3, p1);
    free_ok(a, p2);
    free_ok(a, p3);
    /* 24 cached + 14 new would pass 30: the cache is released first */
    void *p4 = alloc_ok(a, 14 * MiB, NULL);
    s = stats_of(a);
    ASSERT_STAT(s, reserved_bytes, CCA_POOL_ALL, 14 * MiB);
    cr_assert_eq(s.num_device_free, 2);
    cr_assert_eq(cca_sim_calls(CCA_SIM_MALLOC), 3);
    free_ok(a, p4);
    finish(a);
}

Test(core, cap_as_fraction_of_device)
{
    cca_sim_set_capacity(0, 100 * MiB);
    cca_allocator_t *a = make_alloc("memory_fraction:0.5");
    void *p[4];
    for (int i = 0; i < 4; i++) p[i] = alloc_ok(a, 12 * MiB, NULL);
    void *q = NULL;
    cr_assert_eq(cca_malloc(a, &q, 12 * MiB, NULL), CCA_ERROR_OUT_OF_MEMORY);
    cr_assert_eq(cca_sim_calls(CCA_SIM_MALLOC), 4);
    q = alloc_ok(a, 1 * MiB, NULL);       /* a 2 MiB small segment still fits: 50 MiB */
    cca_stats_t s = stats_of(a);
    ASSERT_STAT(s, reserved_bytes, CCA_POOL_ALL, 50 * MiB);
    free_ok(a, q);
    for (int i = 0; i < 4; i++) free_ok(a, p[i]);
    finish(a);
}

Test(core, garbage_collection_releases_oldest_unused_segments)
{
    cca_allocator_t *a = make_alloc("memory_limit_mb:100,garbage_collection_threshold:0.5");
    void *p[4];
    for (int i = 0; i < 4; i++) p[i] = alloc_ok(a, 12 * MiB, NULL);
    for (int i = 0; i < 4; i++) free_ok(a, p[i]);
    void *x = alloc_ok(a, 14 * MiB, NULL);     /* 48 MiB reserved: under 50, no GC */
    cca_stats_t s = stats_of(a);
    cr_assert_eq(s.num_device_free, 0);
    free_ok(a, x);
    void *y = alloc_ok(a, 16 * MiB, NULL);     /* 62 MiB > 50: the four older segments go */
    s = stats_of(a);
    cr_assert_eq(s.num_device_free, 4);
    ASSERT_STAT(s, reserved_bytes, CCA_POOL_ALL, 30 * MiB);
    ASSERT_STAT(s, segment, CCA_POOL_ALL, 2);
    cr_assert_eq(s.num_sync_all_streams, 0, "GC does not synchronize");
    void *z = alloc_ok(a, 14 * MiB, NULL);
    cr_assert_eq(z, x, "the recently used segment was kept");
    free_ok(a, y);
    free_ok(a, z);
    finish(a);
}

Test(core, gc_needs_a_cap)
{
    cca_allocator_t *a = make_alloc("garbage_collection_threshold:0.5");
    void *p[4];
    for (int i = 0; i < 4; i++) p[i] = alloc_ok(a, 12 * MiB, NULL);
    for (int i = 0; i < 4; i++) free_ok(a, p[i]);
    void *y = alloc_ok(a, 16 * MiB, NULL);
    cca_stats_t s = stats_of(a);
    cr_assert_eq(s.num_device_free, 0);
    free_ok(a, y);
    finish(a);
}

Test(core, empty_cache_returns_fully_free_segments)
{
    cca_allocator_t *a = make_alloc("");
    /* r first: 12 MiB would otherwise fit in the rest of q's 20 MiB segment */
    void *p = alloc_ok(a, 1 * KiB, NULL), *r = alloc_ok(a, 12 * MiB, NULL), *q = alloc_ok(a, 3 * MiB, NULL);
    free_ok(a, q);
    free_ok(a, r);
    cr_assert_eq(cca_empty_cache(a), CCA_OK);
    cca_stats_t s = stats_of(a);
    ASSERT_STAT(s, reserved_bytes, CCA_POOL_ALL, 2 * MiB);
    ASSERT_STAT(s, segment, CCA_POOL_ALL, 1);
    cr_assert_eq(s.num_device_free, 2);
    cr_assert_eq(s.num_sync_all_streams, 1);
    check_ok(a);
    free_ok(a, p);
    cr_assert_eq(cca_empty_cache(a), CCA_OK);
    s = stats_of(a);
    ASSERT_STAT(s, reserved_bytes, CCA_POOL_ALL, 0);
    ASSERT_STAT(s, segment, CCA_POOL_ALL, 0);
    ASSERT_PEAK(s, reserved_bytes, CCA_POOL_ALL, 34 * MiB);
    cr_assert_eq(cca_sim_used_bytes(0), 0);
    finish(a);
}

Test(core, empty_cache_waits_for_pending_frees)
{
    cca_allocator_t *a = make_alloc("");
    cudaStream_t s2;
    cudaStreamCreate(&s2);
    void *p = alloc_ok(a, 3 * MiB, NULL);
    cca_record_stream(a, p, s2);
    cca_sim_stream_hold(s2);
    free_ok(a, p);
    cr_assert_eq(cca_empty_cache(a), CCA_OK);
    cca_stats_t s = stats_of(a);
    ASSERT_STAT(s, reserved_bytes, CCA_POOL_ALL, 0);
    ASSERT_STAT(s, active, CCA_POOL_ALL, 0);
    cca_sim_stream_release(s2);
    finish(a);
    cudaStreamDestroy(s2);
}

Test(core, destroy_returns_live_allocations)
{
    cca_allocator_t *a = make_alloc("");
    alloc_ok(a, 5 * MiB, NULL);
    alloc_ok(a, 100, NULL);
    cr_assert_eq(cca_sim_live_allocations(0), 2);
    finish(a);
    cr_assert_eq(cca_sim_used_bytes(0), 0);
}

Test(core, several_devices)
{
    cca_sim_set_device_count(2);
    cca_sim_set_capacity(1, 64 * MiB);
    cca_config_t c1;
    cca_config_init(&c1);
    c1.device = 1;
    cca_allocator_t *a1, *a0;
    cr_assert_eq(cca_create(&c1, &a1), CCA_OK);
    cr_assert_eq(cca_create(NULL, &a0), CCA_OK);
    void *p = alloc_ok(a1, 12 * MiB, NULL);
    cr_assert_eq(cca_sim_used_bytes(1), 12 * MiB);
    cr_assert_eq(cca_sim_used_bytes(0), 0);
    int dev = -1;
    cudaGetDevice(&dev);
    cr_assert_eq(dev, 0, "the caller's current device is left as it was");
    void *q = alloc_ok(a0, 1 * KiB, NULL);
    cr_assert_eq(cca_sim_used_bytes(0), 2 * MiB);
    void *r = NULL;
    cr_assert_eq(cca_malloc(a1, &r, 60 * MiB, NULL), CCA_ERROR_OUT_OF_MEMORY);
    cr_assert_eq(cca_free(a0, p), CCA_ERROR_INVALID_POINTER, "another device's pointer");
    free_ok(a1, p);
    free_ok(a0, q);
    check_ok(a1);
    cca_destroy(a1);
    cca_config_t bad;
    cca_config_init(&bad);
    bad.device = 2;
    cca_allocator_t *none = (cca_allocator_t *)1;
    cr_assert_eq(cca_create(&bad, &none), CCA_ERROR_INVALID_ARGUMENT);
    cr_assert_null(none);
    finish(a0);
}

static void *per_thread_alloc(void *arg)
{
    cca_allocator_t *a = arg;
    void *p = NULL;
    if (cca_malloc(a, &p, 1 * KiB, cudaStreamPerThread) != CCA_OK) return (void *)1;
    cca_free(a, p);
    void *q = NULL;
    if (cca_malloc(a, &q, 1 * KiB, cudaStreamPerThread) != CCA_OK || q != p) return (void *)1;
    cca_free(a, q);
    return NULL;
}

Test(core, per_thread_stream_is_a_different_stream_in_each_thread)
{
    cca_allocator_t *a = make_alloc("");
    for (int i = 0; i < 2; i++) {
        pthread_t t;
        void *ret = (void *)1;
        pthread_create(&t, NULL, per_thread_alloc, a);
        pthread_join(t, &ret);
        cr_assert_null(ret);
    }
    cr_assert_null(per_thread_alloc(a));
    /* each exited thread's stream was retired on the next all-locked call:
     * one device-wide wait, its cached segment back to the device */
    cca_stats_t s = stats_of(a);
    ASSERT_STAT(s, segment, CCA_POOL_SMALL, 1);
    cr_assert_eq(s.num_device_alloc, 3);
    cr_assert_eq(s.num_device_free, 2);
    cr_assert_eq(s.num_sync_all_streams, 2);
    unsigned long ids = cca_sim_calls(CCA_SIM_STREAM_GET_ID);
    cr_assert_null(per_thread_alloc(a));
    cr_assert_eq(cca_sim_calls(CCA_SIM_STREAM_GET_ID), ids, "the per-thread id is cached");
    finish(a);
}

/* A block parked in one pool, a rise in the other, then the parked block
 * handed back: the all-pools peak must see the sum of both. */
Test(core, peaks_across_pools_with_parked_blocks)
{
    cca_allocator_t *a = make_alloc("");
    void *s1 = alloc_ok(a, 1 * KiB, NULL);
    void *l1 = alloc_ok(a, 3 * MiB, NULL), *l2 = alloc_ok(a, 3 * MiB, NULL);
    cca_stats_t s = stats_of(a);
    ASSERT_STAT(s, inactive_split, CCA_POOL_ALL, 2);
    free_ok(a, s1);                        /* merges its segment whole: small 0 */
    free_ok(a, l1);                        /* becomes a free block between allocated ones: large 2 */
    void *s2 = alloc_ok(a, 1 * KiB, NULL); /* the small remainder counts again: 3 in all */
    cr_assert_eq(s2, s1);
    s = stats_of(a);
    ASSERT_STAT(s, inactive_split, CCA_POOL_ALL, 3);
    ASSERT_PEAK(s, inactive_split, CCA_POOL_ALL, 3);
    ASSERT_PEAK(s, inactive_split, CCA_POOL_LARGE, 2);
    ASSERT_PEAK(s, inactive_split, CCA_POOL_SMALL, 1);
    check_ok(a);
    free_ok(a, s2);
    free_ok(a, l2);
    finish(a);
}

/* A free waiting for another stream: every malloc asks about it, on any
 * stream, as PyTorch's processes every stream's completed events per
 * malloc (one query each, nothing else called); once it completed, the
 * next malloc on a third stream takes the block back into its pool. */
Test(core, pending_events_are_handled_by_every_malloc)
{
    cca_allocator_t *a = make_alloc("");
    cudaStream_t s1, s2, s3;
    cudaStreamCreate(&s1);
    cudaStreamCreate(&s2);
    cudaStreamCreate(&s3);
    void *p = alloc_ok(a, 8 * KiB, s1);
    cca_record_stream(a, p, s2);
    cca_sim_stream_hold(s2);
    free_ok(a, p);                                     /* pending on s2 */
    void *q = alloc_ok(a, 8 * KiB, s3);
    free_ok(a, q);
    unsigned long before[CCA_SIM_API_COUNT];
    for (int api = 0; api < CCA_SIM_API_COUNT; api++) before[api] = cca_sim_calls((cca_sim_api_t)api);
    for (int i = 0; i < 100; i++) free_ok(a, alloc_ok(a, 8 * KiB, s3));
    for (int api = 0; api < CCA_SIM_API_COUNT; api++)
        cr_assert_eq(cca_sim_calls((cca_sim_api_t)api),
                     before[api] + (api == CCA_SIM_EVENT_QUERY || api == CCA_SIM_GET_LAST_ERROR ? 100 : 0),
                     "%s called", cca_sim_api_name((cca_sim_api_t)api));   /* a query, and clearing its NotReady */
    before[CCA_SIM_EVENT_QUERY] += 100;
    cca_stats_t s = stats_of(a);
    ASSERT_STAT(s, active, CCA_POOL_ALL, 1);
    ASSERT_STAT(s, requested_bytes, CCA_POOL_ALL, 8 * KiB);
    void *r = alloc_ok(a, 8 * KiB, s1);                /* s1 asks about its event: still pending */
    cr_assert_neq(r, p);
    cr_assert_eq(cca_sim_calls(CCA_SIM_EVENT_QUERY), before[CCA_SIM_EVENT_QUERY] + 1);
    free_ok(a, r);
    cca_sim_stream_release(s2);
    free_ok(a, alloc_ok(a, 8 * KiB, s3));              /* a malloc on s3 brings s1's block back */
    s = stats_of(a);
    ASSERT_STAT(s, active, CCA_POOL_ALL, 0);
    ASSERT_STAT(s, requested_bytes, CCA_POOL_ALL, 0);
    cr_assert_eq(cca_sim_calls(CCA_SIM_EVENT_QUERY), before[CCA_SIM_EVENT_QUERY] + 2);
    r = alloc_ok(a, 8 * KiB, s1);                      /* in s1's pool again */
    cr_assert_eq(r, p);
    s = stats_of(a);
    ASSERT_STAT(s, active, CCA_POOL_ALL, 1);
    free_ok(a, r);
    finish(a);
    cudaStreamDestroy(s1);
    cudaStreamDestroy(s2);
    cudaStreamDestroy(s3);
}

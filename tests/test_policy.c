/* test_policy.c - the policies beyond PyTorch's rules (release_before_grow,
 * segment_growth_percent, the lean preset), with exact figures. */
#include "common.h"

static void setup(void) { cca_sim_reset(); }
TestSuite(policy, .init = setup);

Test(policy, release_before_grow_keeps_the_reserved_peak)
{
    cca_allocator_t *a = make_alloc("release_before_grow:true");
    void *x = alloc_ok(a, 12 * MiB, NULL), *y = alloc_ok(a, 12 * MiB, NULL), *c = alloc_ok(a, 12 * MiB, NULL);
    free_ok(a, x);
    free_ok(a, c);
    void *z = alloc_ok(a, 14 * MiB, NULL);      /* 36 + 14 would pass the 36 MiB peak: both cached segments go */
    cca_stats_t s = stats_of(a);
    cr_assert_eq(s.num_device_free, 2);
    ASSERT_STAT(s, reserved_bytes, CCA_POOL_ALL, 26 * MiB);
    ASSERT_PEAK(s, reserved_bytes, CCA_POOL_ALL, 36 * MiB);
    cr_assert_eq(s.num_sync_all_streams, 0, "not the OOM path");
    free_ok(a, y);
    free_ok(a, z);
    void *w = alloc_ok(a, 30 * MiB, NULL);      /* 20 over the peak: the 14 MiB segment, then the 12 MiB one */
    s = stats_of(a);
    cr_assert_eq(s.num_device_free, 4);
    ASSERT_STAT(s, reserved_bytes, CCA_POOL_ALL, 30 * MiB);
    free_ok(a, w);
    void *v = alloc_ok(a, 20 * MiB, NULL);      /* under the peak: the cache is reused, nothing released */
    s = stats_of(a);
    cr_assert_eq(s.num_device_free, 4);
    cr_assert_eq(s.num_device_alloc, 5);
    free_ok(a, v);
    void *u = alloc_ok(a, 40 * MiB, NULL);      /* 34 over the peak, 30 cached: the peak rises anyway, nothing released */
    s = stats_of(a);
    cr_assert_eq(s.num_device_free, 4);
    ASSERT_STAT(s, reserved_bytes, CCA_POOL_ALL, 70 * MiB);
    ASSERT_PEAK(s, reserved_bytes, CCA_POOL_ALL, 70 * MiB);
    free_ok(a, u);
    finish(a);
}

/* Only the growing stream's own cache goes: another stream's is what that
 * stream needs again next step, and moving it would cost a cudaFree and a
 * cudaMalloc every time. */
Test(policy, release_before_grow_leaves_other_streams_cache)
{
    cca_allocator_t *a = make_alloc("release_before_grow:true");
    cudaStream_t s2;
    cr_assert_eq(cudaStreamCreate(&s2), cudaSuccess);
    void *y1 = alloc_ok(a, 12 * MiB, NULL), *y2 = alloc_ok(a, 12 * MiB, NULL), *x = alloc_ok(a, 16 * MiB, s2);
    free_ok(a, x);                              /* 16 MiB cached on s2: alone, it would cover the excess best */
    free_ok(a, y1);
    free_ok(a, y2);                             /* 24 MiB cached on the default stream */
    void *z = alloc_ok(a, 14 * MiB, NULL);      /* 14 over the 40 MiB peak: the default stream's two go, not s2's */
    cca_stats_t s = stats_of(a);
    cr_assert_eq(s.num_device_free, 2);
    cr_assert_eq(s.num_device_alloc, 4);
    ASSERT_STAT(s, reserved_bytes, CCA_POOL_ALL, 30 * MiB);
    void *v = alloc_ok(a, 16 * MiB, s2);        /* s2's cache serves s2 */
    s = stats_of(a);
    cr_assert_eq(s.num_device_alloc, 4);
    cr_assert_eq(v, x);
    free_ok(a, v);
    free_ok(a, z);
    finish(a);
    cr_assert_eq(cudaStreamDestroy(s2), cudaSuccess);
}

/* It trims only while memory is plentiful: the device's free memory (or
 * the cap's room) at least 4x what cca holds. Past that, the OOM path
 * decides (release everything, retry), as in PyTorch. */
static void trim_on(const char *conf, size_t capacity, int64_t frees, int64_t reserved)
{
    cca_sim_reset();
    cca_sim_set_capacity(0, capacity);
    cca_allocator_t *a = make_alloc(conf);
    void *x = alloc_ok(a, 12 * MiB, NULL), *y = alloc_ok(a, 12 * MiB, NULL), *c = alloc_ok(a, 12 * MiB, NULL);
    free_ok(a, x);
    free_ok(a, c);
    void *z = alloc_ok(a, 14 * MiB, NULL);      /* past the 36 MiB peak, 24 cached */
    cca_stats_t s = stats_of(a);
    cr_assert_eq(s.num_device_free, frees, "%s on %zu MiB", conf, capacity / MiB);
    ASSERT_STAT(s, reserved_bytes, CCA_POOL_ALL, reserved);
    free_ok(a, y);
    free_ok(a, z);
    finish(a);
}

Test(policy, release_before_grow_only_while_memory_is_plentiful)
{
    trim_on("release_before_grow:true", 180 * MiB, 2, 26 * MiB);    /* 144 MiB free: 4 x 36 */
    trim_on("release_before_grow:true", 178 * MiB, 0, 50 * MiB);    /* 142 MiB free */
    trim_on("release_before_grow:true,memory_limit_mb:178", 1024 * MiB, 0, 50 * MiB);   /* the cap's room */
    trim_on("release_before_grow:true,memory_limit_mb:180", 1024 * MiB, 2, 26 * MiB);
}

Test(policy, without_the_policy_the_cache_is_kept)
{
    cca_allocator_t *a = make_alloc("");
    void *x = alloc_ok(a, 12 * MiB, NULL), *y = alloc_ok(a, 12 * MiB, NULL);
    free_ok(a, x);
    void *z = alloc_ok(a, 14 * MiB, NULL);
    cca_stats_t s = stats_of(a);
    cr_assert_eq(s.num_device_free, 0);
    ASSERT_STAT(s, reserved_bytes, CCA_POOL_ALL, 38 * MiB);
    free_ok(a, y);
    free_ok(a, z);
    finish(a);
}

Test(policy, segment_growth_makes_fewer_larger_segments)
{
    cca_allocator_t *a = make_alloc("segment_growth_percent:50");
    void *big = alloc_ok(a, 40 * MiB, NULL);
    void *p = alloc_ok(a, 12 * MiB, NULL);      /* segment: 50% of 40 MiB = 20 MiB */
    cca_stats_t s = stats_of(a);
    ASSERT_STAT(s, reserved_bytes, CCA_POOL_LARGE, 60 * MiB);
    void *q = alloc_ok(a, 6 * MiB, NULL);       /* from the 8 MiB rest */
    s = stats_of(a);
    cr_assert_eq(s.num_device_alloc, 2);
    ASSERT_STAT(s, inactive_split_bytes, CCA_POOL_LARGE, 2 * MiB);
    free_ok(a, q);
    free_ok(a, p);
    free_ok(a, big);
    finish(a);
}

Test(policy, segment_growth_leaves_room_on_a_small_device)
{
    cca_sim_set_capacity(0, 64 * MiB);
    cca_allocator_t *a = make_alloc("segment_growth_percent:50");
    void *big = alloc_ok(a, 40 * MiB, NULL);
    /* 20 MiB wanted; room 64 - 40 - 12 = 12 MiB, a quarter of it as slack: 15 -> 14 MiB */
    void *p = alloc_ok(a, 12 * MiB, NULL);
    cca_stats_t s = stats_of(a);
    ASSERT_STAT(s, reserved_bytes, CCA_POOL_LARGE, 54 * MiB);
    free_ok(a, p);
    free_ok(a, big);
    finish(a);
}

Test(policy, lean_falls_back_to_the_smallest_segment)
{
    cca_sim_set_capacity(0, 30 * MiB);
    cca_allocator_t *a = make_alloc("preset:lean");
    void *x = alloc_ok(a, 12 * MiB, NULL), *y = alloc_ok(a, 12 * MiB, NULL);
    void *z = alloc_ok(a, 3 * MiB, NULL);       /* no room for 20 MiB: a 4 MiB segment */
    cca_stats_t s = stats_of(a);
    ASSERT_STAT(s, reserved_bytes, CCA_POOL_ALL, 28 * MiB);
    cr_assert_eq(s.num_ooms, 0);
    cr_assert_eq(cudaGetLastError(), cudaSuccess);
    free_ok(a, x);
    free_ok(a, y);
    free_ok(a, z);
    finish(a);
}

Test(policy, pytorch_rules_fail_where_lean_falls_back)
{
    cca_sim_set_capacity(0, 30 * MiB);
    cca_allocator_t *a = make_alloc("");
    void *x = alloc_ok(a, 12 * MiB, NULL), *y = alloc_ok(a, 12 * MiB, NULL), *z = NULL;
    cr_assert_eq(cca_malloc(a, &z, 3 * MiB, NULL), CCA_ERROR_OUT_OF_MEMORY);
    free_ok(a, x);
    free_ok(a, y);
    finish(a);
}

Test(policy, preset_parsing)
{
    cca_config_t c;
    char err[256];
    cca_config_init(&c);
    cr_assert_eq(cca_config_parse(&c, "preset:lean", err, sizeof err), CCA_OK, "%s", err);
    cr_assert_eq(c.release_before_grow, 1);
    cr_assert_eq(c.max_split_size, 128 * MiB);
    cr_assert_eq(c.segment_growth_percent, 0);
    cr_assert_eq(cca_config_parse(&c, "preset:lean,max_split_size_mb:256,release_before_grow:False", err, sizeof err), CCA_OK);
    cr_assert_eq(c.max_split_size, 256 * MiB);
    cr_assert_eq(c.release_before_grow, 0);
    cr_assert_eq(cca_config_parse(&c, "preset:pytorch", err, sizeof err), CCA_OK);
    cr_assert_eq(c.max_split_size, SIZE_MAX);
    cr_assert_eq(c.segment_growth_percent, 0);
    cr_assert_eq(cca_config_parse(&c, "preset:fast", err, sizeof err), CCA_ERROR_INVALID_CONFIG);
    cr_assert(strstr(err, "fast") && strstr(err, "lean"), "%s", err);
    cr_assert_eq(cca_config_parse(&c, "release_before_grow:maybe", err, sizeof err), CCA_ERROR_INVALID_CONFIG);
    cr_assert_eq(cca_config_parse(&c, "segment_growth_percent:5000", err, sizeof err), CCA_ERROR_INVALID_CONFIG);
}

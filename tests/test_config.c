/* test_config.c - CCA_CONF / cca_config_parse, rounding, and the default
 * per-device allocators. */
#include <stdlib.h>
#include "common.h"

static void setup(void) { cca_sim_reset(); }
TestSuite(config, .init = setup);

Test(config, defaults_follow_pytorch)
{
    cca_config_t c;
    cca_config_init(&c);
    cr_assert_eq(c.device, 0);
    cr_assert_eq(c.max_split_size, SIZE_MAX);
    cr_assert_eq(c.garbage_collection_threshold, 0.0);
    cr_assert_eq(c.memory_fraction, 0.0);
    cr_assert_eq(c.memory_limit, 0);
    for (int i = 0; i < CCA_ROUNDUP_INTERVALS; i++) cr_assert_eq(c.roundup_power2_divisions[i], 0);
}

Test(config, good_strings)
{
    cca_config_t c;
    char err[256];
    cca_config_init(&c);
    cr_assert_eq(cca_config_parse(&c, "", err, sizeof err), CCA_OK);
    cr_assert_eq(cca_config_parse(&c, NULL, err, sizeof err), CCA_OK);
    cr_assert_eq(cca_config_parse(&c, " max_split_size_mb : 64 , memory_limit_mb:1024,", err, sizeof err), CCA_OK, "%s", err);
    cr_assert_eq(c.max_split_size, 64 * MiB);
    cr_assert_eq(c.memory_limit, 1024 * MiB);
    cr_assert_eq(cca_config_parse(&c, "garbage_collection_threshold:0.6,memory_fraction:0.5", err, sizeof err), CCA_OK);
    cr_assert_float_eq(c.garbage_collection_threshold, 0.6, 1e-12);
    cr_assert_float_eq(c.memory_fraction, 0.5, 1e-12);
    cr_assert_eq(cca_config_parse(&c, "roundup_power2_divisions:4", err, sizeof err), CCA_OK);
    for (int i = 0; i < CCA_ROUNDUP_INTERVALS; i++) cr_assert_eq(c.roundup_power2_divisions[i], 4);
    cr_assert_eq(cca_config_parse(&c, "roundup_power2_divisions:[256:1,512:2,>:8]", err, sizeof err), CCA_OK, "%s", err);
    for (int i = 0; i <= 8; i++) cr_assert_eq(c.roundup_power2_divisions[i], 1, "interval %d", i);
    cr_assert_eq(c.roundup_power2_divisions[9], 2);
    for (int i = 10; i < CCA_ROUNDUP_INTERVALS; i++) cr_assert_eq(c.roundup_power2_divisions[i], 8);
}

static void expect_bad(const char *conf, const char *mention)
{
    cca_config_t c, orig;
    char err[256];
    cca_config_init(&c);
    c.memory_limit = 12345;
    orig = c;
    cr_assert_eq(cca_config_parse(&c, conf, err, sizeof err), CCA_ERROR_INVALID_CONFIG, "'%s' accepted", conf);
    cr_assert(strstr(err, mention) != NULL, "'%s': error '%s' does not mention '%s'", conf, err, mention);
    cr_assert_str_eq(cca_last_error_string(), err);
    cr_assert_eq(memcmp(&c, &orig, sizeof c), 0, "'%s' changed the config", conf);
}

Test(config, bad_strings_name_the_problem)
{
    expect_bad("foo:1", "foo");
    expect_bad("foo:1", "max_split_size_mb");       /* lists what is accepted */
    expect_bad("max_split_size_mb:10", "max_split_size_mb");
    expect_bad("max_split_size_mb:abc", "abc");
    expect_bad("max_split_size_mb:-5", "-5");
    expect_bad("max_split_size_mb", "no value");
    expect_bad("memory_limit_mb:64,bogus_key:3", "bogus_key");
    expect_bad("roundup_power2_divisions:3", "roundup_power2_divisions");
    expect_bad("roundup_power2_divisions:[256:3]", "divisions");
    expect_bad("roundup_power2_divisions:[300:2]", "300");
    expect_bad("roundup_power2_divisions:[256:2", "]");
    expect_bad("garbage_collection_threshold:1.5", "garbage_collection_threshold");
    expect_bad("garbage_collection_threshold:0", "garbage_collection_threshold");
    expect_bad("memory_fraction:0", "memory_fraction");
    expect_bad("memory_fraction:1.01", "memory_fraction");
    expect_bad("memory_fraction:nan", "memory_fraction");
    expect_bad("memory_limit_mb:", "memory_limit_mb");
    expect_bad("memory_limit_mb:99999999999999999999999", "memory_limit_mb");
    expect_bad("memory_limit_mb:5 6", "6");
}

Test(config, roundup_power2_divisions_round_requests)
{
    cca_allocator_t *a = make_alloc("roundup_power2_divisions:4");
    void *p = alloc_ok(a, 1228800, NULL);       /* 1.17 MiB -> 1.25 MiB */
    cca_stats_t s = stats_of(a);
    ASSERT_STAT(s, allocated_bytes, CCA_POOL_LARGE, 1310720);
    ASSERT_STAT(s, requested_bytes, CCA_POOL_LARGE, 1228800);
    void *q = alloc_ok(a, 1000, NULL);          /* not above 512 * 4: 512-B rounding */
    s = stats_of(a);
    ASSERT_STAT(s, allocated_bytes, CCA_POOL_SMALL, 1024);
    void *r = alloc_ok(a, 3 * MiB, NULL);       /* a power of two stays */
    s = stats_of(a);
    ASSERT_STAT(s, allocated_bytes, CCA_POOL_LARGE, 1310720 + 3 * MiB);
    free_ok(a, p);
    free_ok(a, q);
    free_ok(a, r);
    finish(a);
    a = make_alloc("");
    p = alloc_ok(a, 1228800 + 1, NULL);
    s = stats_of(a);
    ASSERT_STAT(s, allocated_bytes, CCA_POOL_LARGE, 1228800 + 512);
    free_ok(a, p);
    finish(a);
}

Test(config, max_split_size_keeps_oversize_blocks_whole)
{
    cca_allocator_t *a = make_alloc("max_split_size_mb:40");
    void *big = alloc_ok(a, 60 * MiB, NULL);
    free_ok(a, big);
    void *small = alloc_ok(a, 3 * MiB, NULL);   /* may not take the 60 MiB block */
    cca_stats_t s = stats_of(a);
    ASSERT_STAT(s, segment, CCA_POOL_LARGE, 2);
    ASSERT_STAT(s, inactive_split, CCA_POOL_LARGE, 1);   /* 17 MiB of the new 20 MiB segment */
    void *b2 = alloc_ok(a, 50 * MiB, NULL);     /* 60 < 50 + 20: takes it, unsplit */
    s = stats_of(a);
    ASSERT_STAT(s, allocated_bytes, CCA_POOL_LARGE, 63 * MiB);
    free_ok(a, b2);
    void *b3 = alloc_ok(a, 40 * MiB, NULL);     /* 60 >= 40 + 20: a new segment instead */
    s = stats_of(a);
    ASSERT_STAT(s, segment, CCA_POOL_LARGE, 3);
    free_ok(a, b3);
    free_ok(a, small);
    finish(a);
}

Test(config, max_split_size_release_on_oom)
{
    cca_sim_set_capacity(0, 130 * MiB);
    cca_allocator_t *a = make_alloc("max_split_size_mb:40");
    void *b1 = alloc_ok(a, 60 * MiB, NULL), *b2 = alloc_ok(a, 50 * MiB, NULL);
    free_ok(a, b1);
    free_ok(a, b2);
    /* 45 MiB: the 50 MiB block fits (50 < 45 + 20) */
    void *c = alloc_ok(a, 45 * MiB, NULL);
    cca_stats_t s = stats_of(a);
    cr_assert_eq(s.num_device_alloc, 2);
    free_ok(a, c);
    /* 100 MiB: no block fits; the oversize blocks are released, largest first */
    void *d = alloc_ok(a, 100 * MiB, NULL);
    s = stats_of(a);
    cr_assert_eq(s.num_device_free, 2);
    cr_assert_eq(s.num_alloc_retries, 0, "released without the full retry");
    ASSERT_STAT(s, reserved_bytes, CCA_POOL_ALL, 100 * MiB);
    free_ok(a, d);
    finish(a);
}

Test(config, default_allocator_reads_cca_conf_once)
{
    setenv("CCA_CONF", "memory_limit_mb:64", 1);
    cca_allocator_t *a = NULL, *b = NULL;
    cr_assert_eq(cca_default(0, &a), CCA_OK);
    setenv("CCA_CONF", "bogus:1", 1);
    cr_assert_eq(cca_default(0, &b), CCA_OK);
    cr_assert_eq(a, b);
    void *p = NULL;
    cr_assert_eq(cca_malloc(a, &p, 70 * MiB, NULL), CCA_ERROR_OUT_OF_MEMORY);
    cr_assert_eq(cca_sim_calls(CCA_SIM_MALLOC), 0, "the cap came from CCA_CONF");
    check_ok(a);
}

Test(config, default_allocator_with_bad_cca_conf_fails)
{
    setenv("CCA_CONF", "max_split_size_mb:1,", 1);
    cca_allocator_t *a = (cca_allocator_t *)1;
    cr_assert_eq(cca_default(0, &a), CCA_ERROR_INVALID_CONFIG);
    cr_assert_null(a);
    cr_assert(strstr(cca_last_error_string(), "CCA_CONF") != NULL);
    cr_assert(strstr(cca_last_error_string(), "max_split_size_mb") != NULL);
    cr_assert_eq(cca_default(0, &a), CCA_ERROR_INVALID_CONFIG, "still refused");
}

/* test_config.c - CCA_CONF / cca_config_parse, rounding, and the default
 * per-device allocators. */
#include <math.h>
#include <string.h>
#include <stdbool.h>
#include <stdio.h>
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
    char err[512];                                    /* the accepted keys' list whole */
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

/* ---- configuration that never lies ---------------------------------------- */

static char *repeat(const char *head, char c, int n, const char *tail)
{
    size_t hl = strlen(head), tl = strlen(tail);
    char *s = malloc(hl + (size_t)n + tl + 1);
    cr_assert_not_null(s);
    memcpy(s, head, hl);
    memset(s + hl, c, (size_t)n);
    memcpy(s + hl + (size_t)n, tail, tl + 1);
    return s;
}

Test(config, long_values_are_read_whole)
{
    cca_config_t c;
    cca_config_init(&c);
    char err[256];
    char *s = repeat("memory_limit_mb:", '0', 62, "15");
    cr_assert_eq(cca_config_parse(&c, s, err, sizeof err), CCA_OK, "%s", err);
    cr_assert_eq(c.memory_limit, 15 * MiB, "read as %zu", c.memory_limit);
    free(s);
    s = repeat("roundup_power2_divisions:", '0', 70, "4");
    cr_assert_eq(cca_config_parse(&c, s, err, sizeof err), CCA_OK, "%s", err);
    for (int i = 0; i < CCA_ROUNDUP_INTERVALS; i++) cr_assert_eq(c.roundup_power2_divisions[i], 4);
    free(s);
    s = repeat("max_split_size_mb:", ' ', 200, "64   ");           /* padding is only padding */
    cr_assert_eq(cca_config_parse(&c, s, err, sizeof err), CCA_OK, "%s", err);
    cr_assert_eq(c.max_split_size, 64 * MiB);
    free(s);
}

/* Each bad string: CCA_ERROR_INVALID_CONFIG, a text naming the problem, the config unchanged. */
Test(config, the_bad_string_table)
{
    char *pad_garbage = repeat("memory_limit_mb:100", ' ', 70, "garbage");
    char *pad_junk = repeat("preset:lean", ' ', 70, "junk");
    char *long_key = repeat("memory_limit_mb", 'x', 70, ":100");
    char *long_val = repeat("max_split_size_mb:", '9', 100, "");
    struct { const char *conf, *mention; } bad[] = {
        { pad_garbage, "memory_limit_mb" }, { pad_garbage, "must be an integer" },
        { pad_junk, "preset" }, { pad_junk, "chars" },
        { long_key, "unknown key 'memory_limit_mbxxxxxxxxx" },
        { long_val, "max_split_size_mb" },
        { "roundup_power2_divisions:[>:2,>:4]", "'>'" },
        { "roundup_power2_divisions:[64:2,64:4]", "repeated" },
        { "roundup_power2_divisions:[64:2,32:4]", "increasing" },
        { "roundup_power2_divisions:[64:2,>:4,128:8]", "after '>'" },
        { "roundup_power2_divisions:[]", "empty" },
        { "roundup_power2_divisions:[64:2", "missing ']'" },
        { "roundup_power2_divisions:[64:2,", "missing ']'" },
        { "roundup_power2_divisions:[64:2,,>:4]", "MB:divisions" },
        { "roundup_power2_divisions:2097152", "1048576" },
        { "roundup_power2_divisions:[32768:2,65536:4]", "past the last one" },
        { "memory_fraction:0x1p-1", "memory_fraction" },
        { "garbage_collection_threshold:nan", "garbage_collection_threshold" },
        { "memory_fraction:1e-300", "2^-40" },
        { "memory_fraction:nan", "memory_fraction" },
        { "memory_fraction:inf", "memory_fraction" },
        { "memory_fraction:-0.5", "memory_fraction" },
        { "garbage_collection_threshold:-inf", "garbage_collection_threshold" },
        { "max_split_size_mb:-64", "-64" },
        { "max_split_size_mb:18446744073709551616", "max_split_size_mb" },
        { "memory_limit_mb:1", "2 .. 8796093022207 (MiB)" },
        { "memory_limit_mb:17592186044416", "memory_limit_mb" },
        { "memory_limit_mb:8796093022208", "memory_limit_mb" },
        { "max_split_size_mb:8796093022208", "max_split_size_mb" },
        { "segment_growth_percent:1001", "segment_growth_percent" },
        { "segment_growth_percent:99999999999999999999999999", "segment_growth_percent" },
        { ":64", "no key" },
        { " : ", "no key" },
        { "max_split_size_mb:", "empty" },
        { "max_split_size_mb", "no value" },
        { "max_split_size_mb:64,max_split_size_mb:128", "given twice" },
        { "preset:lean,preset:lean", "given twice" },
        { "max_split_size_mb:256,preset:lean", "before preset:lean" },
        { "memory_limit_mb:64,preset:pytorch", "before preset:pytorch" },
        { "release_before_grow:yes", "True or False" },
        { "memory_limit_mb:[64]", "not a value" },
        { "preset:lean]", "not a value" },
        { "MAX_SPLIT_SIZE_MB:64", "unknown key" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) expect_bad(bad[i].conf, bad[i].mention);
    free(pad_garbage);
    free(pad_junk);
    free(long_key);
    free(long_val);
}

Test(config, the_largest_split_limit_reads_back_positive)
{
    cca_allocator_t *a = make_alloc("max_split_size_mb:8796093022207");
    cca_stats_t s = stats_of(a);
    cr_assert_eq(s.max_split_size, (int64_t)8796093022207 * (int64_t)MiB);
    finish(a);
}

Test(config, presets_are_refined_by_later_keys)
{
    cca_config_t c;
    cca_config_init(&c);
    char err[256];
    cr_assert_eq(cca_config_parse(&c, "preset:lean,max_split_size_mb:256", err, sizeof err), CCA_OK, "%s", err);
    cr_assert_eq(c.max_split_size, 256 * MiB);
    cr_assert_eq(c.release_before_grow, 1);
    cr_assert_eq(c.segment_growth_percent, 0);
    cr_assert_eq(cca_config_parse(&c, "preset:lean,segment_growth_percent:10", err, sizeof err), CCA_OK,
                 "lean does not set the growth: %s", err);
    cr_assert_eq(c.segment_growth_percent, 10);
    cr_assert_eq(cca_config_parse(&c, "memory_limit_mb:64,preset:lean", err, sizeof err), CCA_OK,
                 "lean does not set the cap: %s", err);
    cr_assert_eq(cca_config_parse(&c, "preset:pytorch,memory_fraction:0.5,roundup_power2_divisions:[64:2,>:4]", err,
                                  sizeof err), CCA_OK, "%s", err);
    cr_assert_eq(c.max_split_size, SIZE_MAX);
    cr_assert_eq(c.memory_fraction, 0.5);
}

Test(config, the_struct_path_checks_every_field)
{
    cca_sim_set_capacity(0, 64 * MiB);
    cca_config_t c;
    cca_allocator_t *a = (cca_allocator_t *)1;
#define EXPECT_REFUSED(stmt, mention) do { \
        cca_config_init(&c); stmt; a = (cca_allocator_t *)1; \
        cr_assert_eq(cca_create(&c, &a), CCA_ERROR_INVALID_ARGUMENT, #stmt " accepted"); \
        cr_assert_null(a); \
        cr_assert(strstr(cca_last_error_string(), mention), #stmt ": '%s'", cca_last_error_string()); \
    } while (0)
    EXPECT_REFUSED(c.segment_growth_percent = SIZE_MAX, "segment_growth_percent");
    EXPECT_REFUSED(c.segment_growth_percent = 1001, "segment_growth_percent");
    EXPECT_REFUSED(c.max_split_size = 20 * MiB, "max_split_size");
    EXPECT_REFUSED(c.max_split_size = (size_t)1 << 63, "max_split_size");
    EXPECT_REFUSED(c.memory_limit = SIZE_MAX - 1, "memory_limit");
    EXPECT_REFUSED(c.roundup_power2_divisions[3] = 3, "roundup_power2_divisions");
    EXPECT_REFUSED(c.roundup_power2_divisions[0] = 1u << 21, "roundup_power2_divisions");
    EXPECT_REFUSED(c.garbage_collection_threshold = 1.0, "garbage_collection_threshold");
    EXPECT_REFUSED(c.garbage_collection_threshold = __builtin_nan(""), "garbage_collection_threshold");
    EXPECT_REFUSED(c.memory_fraction = 1e-300, "memory_fraction");
    EXPECT_REFUSED(c.memory_fraction = __builtin_inf(), "memory_fraction");
    EXPECT_REFUSED(c.memory_fraction = 0.01, "memory_fraction");   /* 0.64 MiB of this 64 MiB device */
    EXPECT_REFUSED(c.memory_limit = 1 * MiB, "memory_limit");
    EXPECT_REFUSED(c.release_before_grow = 2, "release_before_grow");
    EXPECT_REFUSED(c.device = -1, "device");
#undef EXPECT_REFUSED
    cca_config_init(&c);
    c.memory_fraction = 1.0 / 32;                     /* exactly 2 MiB of 64 MiB: enough */
    cr_assert_eq(cca_create(&c, &a), CCA_OK, "%s", cca_last_error_string());
    cca_destroy(a);
}

Test(config, a_bad_cca_conf_is_refused_with_its_reason)
{
    char *s = repeat("memory_limit_mb:100", ' ', 70, "garbage");
    setenv("CCA_CONF", s, 1);
    free(s);
    cca_allocator_t *a = (cca_allocator_t *)1;
    cr_assert_eq(cca_default(0, &a), CCA_ERROR_INVALID_CONFIG);
    cr_assert_null(a);
    cr_assert(strstr(cca_last_error_string(), "CCA_CONF: memory_limit_mb"), "%s", cca_last_error_string());
}

/* README's configuration table is the key table: one row per key, in its
 * order, each cell (backticks aside) the table's range, default and meaning. */
static void readme_cell(char **at, char *out, size_t len)
{
    char *end = strstr(*at, " | ");
    if (!end) end = *at + strcspn(*at, "|\n") - 1;
    size_t n = 0;
    for (char *p = *at; p < end && n + 1 < len; p++)
        if (*p != '`') out[n++] = *p;
    out[n] = 0;
    *at = end + 3;
}

Test(config, readme_table_is_the_key_table)
{
    const char *root = getenv("CCA_SOURCE_ROOT");
    if (!root) cr_skip_test("CCA_SOURCE_ROOT is not set");
    char path[1024];
    snprintf(path, sizeof path, "%s/README.md", root);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "cannot read %s", path);
    char line[2048];
    bool in = false;
    size_t n_keys = 0, row = 0;
    const cca_config_key_t *keys = cca_config_keys(&n_keys);
    while (fgets(line, sizeof line, f)) {
        if (!strncmp(line, "## ", 3)) in = strstr(line, "Configuration") != NULL;
        if (!in || strncmp(line, "| `", 3) != 0) continue;
        cr_assert_lt(row, n_keys, "README's table has more rows than the %zu keys", n_keys);
        const cca_config_key_t *k = &keys[row++];
        char cell[4][512], *at = line + 2;
        for (int c = 0; c < 4; c++) readme_cell(&at, cell[c], sizeof cell[c]);
        cr_assert_str_eq(cell[0], k->name, "README's row %zu", row);
        cr_assert_str_eq(cell[1], k->range, "README's value of %s", k->name);
        cr_assert_str_eq(cell[2], k->default_value, "README's default of %s", k->name);
        cr_assert_str_eq(cell[3], k->doc, "README's meaning of %s", k->name);
    }
    fclose(f);
    cr_assert_eq(row, n_keys, "README's table has %zu rows for %zu keys", row, n_keys);
}

static bool parses(const char *key, const char *value)
{
    cca_config_t c;
    cca_config_init(&c);
    char conf[256], err[512];
    snprintf(conf, sizeof conf, "%s:%s", key, value);
    return cca_config_parse(&c, conf, err, sizeof err) == CCA_OK;
}

/* Each key's range text says exactly what the parser takes: its ends in,
 * the values just past them out (integers, open and closed intervals). */
Test(config, every_range_text_is_what_the_parser_takes)
{
    size_t n = 0;
    const cca_config_key_t *keys = cca_config_keys(&n);
    int checked = 0;
    for (size_t i = 0; i < n; i++) {
        const char *key = keys[i].name, *r = keys[i].range;
        unsigned long long lo, hi;
        char a[64], b[64], v[80];
        if (sscanf(r, "%llu .. %llu", &lo, &hi) == 2) {
            snprintf(v, sizeof v, "%llu", lo);
            cr_assert(parses(key, v), "%s:%s (%s)", key, v, r);
            snprintf(v, sizeof v, "%llu", hi);
            cr_assert(parses(key, v), "%s:%s (%s)", key, v, r);
            snprintf(v, sizeof v, "%llu", hi + 1);
            cr_assert(!parses(key, v), "%s:%s (%s)", key, v, r);
            if (lo) {
                snprintf(v, sizeof v, "%llu", lo - 1);
                cr_assert(!parses(key, v), "%s:%s (%s)", key, v, r);
            }
            checked++;
        } else if ((r[0] == '(' || r[0] == '[') && sscanf(r + 1, "%63[^,], %63[^])]", a, b) == 2) {
            double l = !strcmp(a, "2^-40") ? 0x1p-40 : strtod(a, NULL), h = strtod(b, NULL);
            bool closed = r[0] == '[';
            snprintf(v, sizeof v, "%.17g", l);
            cr_assert_eq(parses(key, v), closed, "%s:%s (%s)", key, v, r);
            snprintf(v, sizeof v, "%.17g", h);
            cr_assert_eq(parses(key, v), closed, "%s:%s (%s)", key, v, r);
            snprintf(v, sizeof v, "%.17g", nextafter(l, -1.0));
            cr_assert(!parses(key, v), "%s:%s (%s)", key, v, r);
            snprintf(v, sizeof v, "%.17g", nextafter(h, 2.0));
            cr_assert(!parses(key, v), "%s:%s (%s)", key, v, r);
            snprintf(v, sizeof v, "%.17g", (l + h) / 2);
            cr_assert(parses(key, v), "%s:%s (%s)", key, v, r);
            checked++;
        } else if (!strcmp(r, "True, False, 1, 0")) {
            cr_assert(parses(key, "True") && parses(key, "false") && parses(key, "1") && parses(key, "0"), "%s", key);
            cr_assert(!parses(key, "2") && !parses(key, "yes"), "%s", key);
            checked++;
        }
    }
    cr_assert_eq(checked, 7, "the integer, number and boolean keys");
}

/* The preset key's range and meaning are CCA_CONFIG_PRESETS's, and each
 * preset sets what its settings say. */
Test(config, the_preset_key_says_what_the_presets_are)
{
    char names[256] = "", doc[512] = "";
#define NAME_(name, settings) snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", *names ? ", " : "", #name);
#define DOC_(name, settings) \
    if (*settings) snprintf(doc + strlen(doc), sizeof doc - strlen(doc), "%s%s = %s", *doc ? "; " : "", #name, settings);
    CCA_CONFIG_PRESETS(NAME_)
    CCA_CONFIG_PRESETS(DOC_)
#undef NAME_
#undef DOC_
    size_t n = 0;
    const cca_config_key_t *keys = cca_config_keys(&n), *k = NULL;
    for (size_t i = 0; i < n; i++)
        if (!strcmp(keys[i].name, "preset")) k = &keys[i];
    cr_assert_not_null(k);
    cr_assert_str_eq(k->range, names);
    cr_assert_str_eq(k->doc, doc);
#define SAME_(name, settings) { \
        cca_config_t a, b; \
        cca_config_init(&a); \
        cca_config_init(&b); \
        cr_assert_eq(cca_config_parse(&a, "preset:" #name, NULL, 0), CCA_OK); \
        cr_assert_eq(cca_config_parse(&b, settings, NULL, 0), CCA_OK); \
        cr_assert(!memcmp(&a, &b, sizeof a), "preset:%s is not its settings '%s'", #name, settings); }
    CCA_CONFIG_PRESETS(SAME_)
#undef SAME_
    cca_config_t c;
    cca_config_init(&c);
    char err[256];
    cr_assert_eq(cca_config_parse(&c, "release_before_grow:True,preset:lean", err, sizeof err), CCA_ERROR_INVALID_CONFIG);
    cr_assert(strstr(err, "release_before_grow is given before preset:lean") != NULL, "%s", err);
    cr_assert_eq(cca_config_parse(&c, "max_split_size_mb:64,preset:expandable", err, sizeof err), CCA_OK, "%s", err);
    cr_assert_eq(c.max_split_size, 64 * MiB);
    cr_assert_eq(c.expandable_segments, 1);
}

/* Both validation paths and the cap setters read the same bounds. */
Test(config, the_struct_path_and_the_setters_keep_the_tables_bounds)
{
    cca_config_t c;
    cca_config_init(&c);
    cr_assert_eq(c.max_split_size, SIZE_MAX, "the table's off value is the default");
    c.max_split_size = 20 * MiB;
    cca_allocator_t *a = NULL;
    cr_assert_eq(cca_create(&c, &a), CCA_ERROR_INVALID_ARGUMENT);
    cr_assert(strstr(cca_last_error_string(), "max_split_size_mb (max_split_size) is 20971520") != NULL, "%s",
              cca_last_error_string());
    c.max_split_size = 20 * MiB + 1;
    cr_assert_eq(cca_create(&c, &a), CCA_OK, "%s", cca_last_error_string());
    cr_assert_eq(cca_set_memory_limit(a, SIZE_MAX), CCA_OK, "past 2^63 bytes: no cap in effect, as always");
    size_t cap = 1;
    cr_assert_eq(cca_get_memory_cap(a, &cap, NULL, NULL), CCA_OK);
    cr_assert_eq(cap, 0);
    cr_assert_eq(cca_set_memory_limit(a, MiB), CCA_ERROR_INVALID_ARGUMENT);
    cr_assert(strstr(cca_last_error_string(), "cca_set_memory_limit: memory_limit_mb (memory_limit) is 1048576") != NULL,
              "%s", cca_last_error_string());
    cr_assert_eq(cca_set_memory_limit(a, 0), CCA_OK);
    cr_assert_eq(cca_set_memory_fraction(a, 0x1p-41), CCA_ERROR_INVALID_ARGUMENT);
    cr_assert(strstr(cca_last_error_string(), "[2^-40, 1]") != NULL, "%s", cca_last_error_string());
    cr_assert_eq(cca_set_memory_fraction(a, 0.5), CCA_OK, "%s", cca_last_error_string());
    cr_assert_eq(cca_set_memory_fraction(a, 0.0), CCA_OK);
    cca_destroy(a);
    cca_config_init(&c);
    c.garbage_collection_threshold = 1.0;
    cr_assert_eq(cca_create(&c, &a), CCA_ERROR_INVALID_ARGUMENT);
    cr_assert(strstr(cca_last_error_string(), "garbage_collection_threshold is 1: it must be in (0, 1)") != NULL, "%s",
              cca_last_error_string());
}

Test(config, default_allocators_configured_from_code_before_first_use)
{
    setenv("CCA_CONF", "max_split_size_mb:64", 1);
    cr_assert_eq(cca_default_configure("max_split_size_mb:,"), CCA_ERROR_INVALID_CONFIG);
    cr_assert_eq(cca_default_configure("preset:lean"), CCA_OK, "%s", cca_last_error_string());
    cca_allocator_t *none = (cca_allocator_t *)1;
    cr_assert_eq(cca_default_existing(0, &none), CCA_OK);
    cr_assert_null(none, "existing does not create");
    cca_allocator_t *a = NULL, *b = NULL;
    cr_assert_eq(cca_default(0, &a), CCA_OK);
    cr_assert_eq(cca_default(0, &b), CCA_OK);
    cr_assert_eq(a, b);
    cca_stats_t s = stats_of(a);
    cr_assert_eq(s.max_split_size, (int64_t)(128 * MiB), "the code's configuration, not CCA_CONF's");
    cr_assert_eq(cca_default_configure("preset:pytorch"), CCA_ERROR_INVALID_ARGUMENT, "too late");
    cr_assert(strstr(cca_last_error_string(), "in use"));
    cr_assert_eq(cca_default_existing(0, &none), CCA_OK);
    cr_assert_eq(none, a);
}

/* Messages that say how to fix it: '=' for ':', a near miss of a key, the
 * accepted spellings of a boolean; and a device the runtime lacks. */
Test(config, messages_say_how_to_fix_it)
{
    cca_config_t c;
    char err[512];
    cca_config_init(&c);
    cr_assert_eq(cca_config_parse(&c, "max_split_size_mb=128", err, sizeof err), CCA_ERROR_INVALID_CONFIG);
    cr_assert(strstr(err, "unknown key 'max_split_size_mb=128': a key and its value are separated by ':' "
                          "(max_split_size_mb:128)") != NULL, "%s", err);
    cr_assert_eq(cca_config_parse(&c, "max_split_sise_mb:128", err, sizeof err), CCA_ERROR_INVALID_CONFIG);
    cr_assert(strstr(err, "unknown key 'max_split_sise_mb' (did you mean 'max_split_size_mb'?)") != NULL, "%s", err);
    cr_assert_eq(cca_config_parse(&c, "expandable_segment:True", err, sizeof err), CCA_ERROR_INVALID_CONFIG);
    cr_assert(strstr(err, "(did you mean 'expandable_segments'?)") != NULL, "%s", err);
    cr_assert_eq(cca_config_parse(&c, "zzz:1", err, sizeof err), CCA_ERROR_INVALID_CONFIG);
    cr_assert(strstr(err, "did you mean") == NULL && strstr(err, "unknown key 'zzz'; accepted keys: ") != NULL, "%s",
              err);
    cr_assert_eq(cca_config_parse(&c, "expandable_segments:yes", err, sizeof err), CCA_ERROR_INVALID_CONFIG);
    cr_assert(strstr(err, "expandable_segments: 'yes' must be True or False: True, False, 1, 0") != NULL, "%s", err);
    cr_assert_eq(cca_config_parse(&c, "expandable_segments:tRuE", err, sizeof err), CCA_OK, "what the message says");

    cca_sim_set_device_count(1);
    cca_config_init(&c);
    c.device = 20;
    cca_allocator_t *a = NULL;
    cr_assert_eq(cca_create(&c, &a), CCA_ERROR_INVALID_ARGUMENT);
    cr_assert_str_eq(cca_last_error_string(), "cca_create: device 20 not available: the runtime has 1 device (0)");
    cca_sim_set_device_count(3);
    cr_assert_eq(cca_create(&c, &a), CCA_ERROR_INVALID_ARGUMENT);
    cr_assert_str_eq(cca_last_error_string(), "cca_create: device 20 not available: the runtime has 3 devices (0..2)");
}

/* test_verdicts.c - the OOM verdict as a pure function of figures, on a
 * table at every boundary; the cases found by careful users, end to end;
 * and largest_fit acted on: after each OOM, the same calls replayed in a
 * fresh allocator must serve L and every rounding and segment edge below
 * it, and refuse L + 1. */
#include "common.h"
#include "abi_v1.h"

static void setup(void) { cca_sim_reset(); }
TestSuite(verdicts, .init = setup, .timeout = 120);

/* ---- the pure function, on figures ---------------------------------------- */

typedef struct row {
    const char *what;
    size_t S, T, D, R, F, E, C;                       /* segment, total, free, reserved, cached free, outside, cap */
    cca_oom_verdict_t v;
    size_t cap, ext, cached, live, shortfall;         /* expected needs */
} row_t;

#define M MiB
static const row_t rows[] = {
    /* a new 2 MiB small segment */
    { "2M: device free just below", 2*M, 64*M, 2*M-512, 62*M-512, 0, 0, 0, CCA_OOM_EXHAUSTED, 0, 0, 0, 512, 512 },
    { "2M: outside memory covers it", 2*M, 64*M, 1*M, 0, 0, 63*M, 0, CCA_OOM_EXTERNAL, 0, 1*M, 0, 0, 1*M },
    { "2M: cached free covers it", 2*M, 64*M, 1*M, 63*M, 1*M, 0, 0, CCA_OOM_FRAGMENTED, 0, 0, 1*M, 0, 0 },
    { "2M: cached free one byte short", 2*M, 64*M, 1*M, 63*M, 1*M-512, 0, 0, CCA_OOM_EXHAUSTED, 0, 0, 0, 1*M, 1*M },
    /* a new 20 MiB segment */
    { "20M: outside, exactly enough", 20*M, 64*M, 4*M, 0, 0, 60*M, 0, CCA_OOM_EXTERNAL, 0, 16*M, 0, 0, 16*M },
    { "20M: outside, one step short", 20*M, 64*M, 4*M, 44*M+512, 0, 16*M-512, 0, CCA_OOM_EXHAUSTED, 0, 0, 0, 16*M, 16*M },
    { "20M: cached in the other pool", 20*M, 64*M, 4*M, 60*M, 30*M, 0, 0, CCA_OOM_FRAGMENTED, 0, 0, 16*M, 0, 0 },
    { "20M: outside preferred to cached", 20*M, 64*M, 4*M, 30*M, 20*M, 30*M, 0, CCA_OOM_EXTERNAL, 0, 16*M, 0, 0, 16*M },
    { "20M: live only", 20*M, 64*M, 4*M, 60*M, 0, 0, 0, CCA_OOM_EXHAUSTED, 0, 0, 0, 16*M, 16*M },
    /* an oversize segment of the request's own size */
    { "300M: larger than the device", 300*M, 256*M, 256*M, 0, 0, 0, 0, CCA_OOM_EXHAUSTED, 0, 0, 0, 0, 44*M },
    { "256M: exactly the device, all free", 256*M, 256*M, 250*M, 6*M, 6*M, 0, 0, CCA_OOM_FRAGMENTED, 0, 0, 6*M, 0, 0 },
    /* the cap */
    { "cap: device has room", 12*M, 80*M, 50*M, 30*M, 0, 0, 40*M, CCA_OOM_CAP, 2*M, 0, 0, 0, 2*M },
    { "cap: just fits", 10*M, 80*M, 50*M, 30*M, 0, 0, 40*M, CCA_OOM_FRAGMENTED, 0, 0, 0, 0, 0 },
    { "cap: smaller than the segment", 42*M, 80*M, 80*M, 0, 0, 0, 40*M, CCA_OOM_CAP, 2*M, 0, 0, 0, 2*M },
    { "cap and device bind, cached covers both", 20*M, 64*M, 4*M, 40*M, 30*M, 20*M, 50*M, CCA_OOM_FRAGMENTED, 0, 0, 16*M, 0, 0 },
    { "cap and device bind, live covers both", 20*M, 64*M, 4*M, 40*M, 0, 20*M, 50*M, CCA_OOM_EXHAUSTED, 0, 0, 0, 16*M, 16*M },
    /* several changes */
    { "several: live then outside", 20*M, 64*M, 2*M, 10*M, 0, 52*M, 25*M, CCA_OOM_EXTERNAL, 0, 8*M, 0, 10*M, 8*M },
    { "cap alone though cca holds bytes", 40*M, 100*M, 50*M, 10*M, 4*M, 40*M, 20*M, CCA_OOM_CAP, 30*M, 0, 0, 0, 30*M },
    { "several: cached, live, then the cap", 40*M, 100*M, 30*M, 10*M, 4*M, 60*M, 20*M, CCA_OOM_CAP, 20*M, 0, 4*M, 6*M, 20*M },
    { "live alone, just enough", 20*M, 30*M, 2*M, 28*M, 10*M, 0, 0, CCA_OOM_EXHAUSTED, 0, 0, 0, 18*M, 18*M },
    { "several: cached then live", 20*M, 30*M, 2*M, 28*M, 14*M, 0, 0, CCA_OOM_FRAGMENTED, 0, 0, 14*M, 4*M, 0 },
};
#undef M

Test(verdicts, the_verdict_table_at_every_boundary)
{
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        const row_t *w = &rows[i];
        cca_oom_report_t r = { .segment_size = w->S, .rounded = w->S, .device_total = w->T, .device_free = w->D,
                               .reserved = w->R, .free_cached = w->F, .external = w->E, .cap = w->C,
                               .largest_fit = 4096 };
        cca_oom_judge(&r);
        cr_assert_eq(r.verdict, w->v, "%s: verdict %s", w->what, cca_oom_verdict_string(r.verdict));
        cr_assert_eq(r.need_cap, w->cap, "%s: need_cap %zu", w->what, r.need_cap);
        cr_assert_eq(r.need_external, w->ext, "%s: need_external %zu", w->what, r.need_external);
        cr_assert_eq(r.need_cached, w->cached, "%s: need_cached %zu", w->what, r.need_cached);
        cr_assert_eq(r.need_live, w->live, "%s: need_live %zu", w->what, r.need_live);
        cr_assert_eq(r.shortfall, w->shortfall, "%s: shortfall %zu", w->what, r.shortfall);
        cr_assert(r.advice[0] && strlen(r.advice) < sizeof r.advice - 1, "%s: advice '%s'", w->what, r.advice);
        /* every needed change is in the advice, with its bytes */
        if (r.need_cap) cr_assert(strstr(r.advice, "raise the cap"), "%s: %s", w->what, r.advice);
        if (r.need_external) cr_assert(strstr(r.advice, "outside cca"), "%s: %s", w->what, r.advice);
        if (r.need_live) cr_assert(strstr(r.advice, "of live allocations"), "%s: %s", w->what, r.advice);
        if (r.need_cached) cr_assert(strstr(r.advice, "cached free"), "%s: %s", w->what, r.advice);
    }
    cca_oom_judge(NULL);
}

/* Stranded: cca's free bytes would do, but they are cached on other streams
 * (O of F), between external and fragmented in precedence. */
typedef struct srow {
    const char *what;
    size_t S, T, D, R, F, O, E, C;
    cca_oom_verdict_t v;
    size_t cached, stranded, live, shortfall;
} srow_t;

#define M MiB
static const srow_t srows[] = {
    { "20M: all cached free on other streams", 20*M, 64*M, 4*M, 60*M, 30*M, 30*M, 0, 0, CCA_OOM_STRANDED, 16*M, 16*M, 0, 16*M },
    { "20M: own stream holds just enough", 20*M, 64*M, 4*M, 60*M, 30*M, 14*M, 0, 0, CCA_OOM_FRAGMENTED, 16*M, 0, 0, 0 },
    { "20M: own stream one step short", 20*M, 64*M, 4*M, 60*M, 30*M, 14*M+512, 0, 0, CCA_OOM_STRANDED, 16*M, 512, 0, 512 },
    { "outside preferred to stranded", 20*M, 64*M, 4*M, 30*M, 20*M, 20*M, 30*M, 0, CCA_OOM_EXTERNAL, 0, 0, 0, 16*M },
    { "cap preferred to stranded", 12*M, 80*M, 50*M, 30*M, 10*M, 10*M, 0, 40*M, CCA_OOM_CAP, 0, 0, 0, 2*M },
    { "not enough even with other streams", 20*M, 64*M, 4*M, 60*M, 10*M, 10*M, 0, 0, CCA_OOM_EXHAUSTED, 0, 0, 16*M, 16*M },
    { "several: stranded then live", 20*M, 30*M, 2*M, 28*M, 14*M, 10*M, 0, 0, CCA_OOM_STRANDED, 14*M, 10*M, 4*M, 10*M },
    { "several: own cached then live", 20*M, 30*M, 2*M, 28*M, 14*M, 0, 0, 0, CCA_OOM_FRAGMENTED, 14*M, 0, 4*M, 0 },
};
#undef M

Test(verdicts, stranded_on_other_streams_at_every_boundary)
{
    for (size_t i = 0; i < sizeof srows / sizeof srows[0]; i++) {
        const srow_t *w = &srows[i];
        cca_oom_report_t r = { .segment_size = w->S, .rounded = w->S, .device_total = w->T, .device_free = w->D,
                               .reserved = w->R, .free_cached = w->F, .free_cached_other = w->O, .external = w->E,
                               .cap = w->C, .largest_fit = 4096, .n_stranded = 1,
                               .stranded_streams = { (cudaStream_t)0x1234 }, .stranded_bytes = { w->O } };
        cca_oom_judge(&r);
        cr_assert_eq(r.verdict, w->v, "%s: verdict %s", w->what, cca_oom_verdict_string(r.verdict));
        cr_assert_eq(r.need_cached, w->cached, "%s: need_cached %zu", w->what, r.need_cached);
        cr_assert_eq(r.need_stranded, w->stranded, "%s: need_stranded %zu", w->what, r.need_stranded);
        cr_assert_eq(r.need_live, w->live, "%s: need_live %zu", w->what, r.need_live);
        cr_assert_eq(r.shortfall, w->shortfall, "%s: shortfall %zu", w->what, r.shortfall);
        if (r.need_stranded) cr_assert(strstr(r.advice, "cached on other streams, unusable on this one"), "%s: %s", w->what, r.advice);
        cr_assert(strlen(r.advice) < sizeof r.advice - 1, "%s: advice cut: %s", w->what, r.advice);
        cr_assert(strstr(r.advice, "largest request that fits now"), "%s: advice cut: %s", w->what, r.advice);
        char text[2048];
        cr_assert_lt(cca_oom_report_format(&r, text, sizeof text), sizeof text);
        if (r.need_stranded)
            cr_assert(strstr(text, "\ncached on other streams: stream 0x1234 "), "%s: %s", w->what, text);
        else
            cr_assert_null(strstr(text, "cached on other streams:"), "%s: %s", w->what, text);
    }
    cr_assert_str_eq(cca_oom_verdict_string(CCA_OOM_STRANDED), "stranded");
}

/* Stream B keeps free blocks in segments that also hold its live blocks; a
 * request on the default stream finds the device short of a new segment. */
Test(verdicts, memory_cached_on_another_stream_is_stranded)
{
    cca_sim_set_capacity(0, 48 * MiB);
    cca_allocator_t *a = make_alloc("");
    cudaStream_t sb;
    cudaStreamCreate(&sb);
    void *x[6];
    for (int i = 0; i < 6; i++) x[i] = alloc_ok(a, 6 * MiB, sb);   /* two 20 MiB segments of B's */
    for (int i = 0; i < 6; i += 2) free_ok(a, x[i]);
    free_ok(a, x[5]);                                 /* B: 2 x 6 MiB live, 28 MiB cached free */
    void *p = (void *)1;
    cr_assert_eq(cca_malloc(a, &p, 8 * MiB, NULL), CCA_ERROR_OUT_OF_MEMORY);
    cca_oom_report_t r;
    cr_assert_eq(cca_last_oom_report(a, &r), CCA_OK);
    cr_assert_eq(r.verdict, CCA_OOM_STRANDED, "%s: %s", cca_oom_verdict_string(r.verdict), r.advice);
    cr_assert_eq(r.free_cached, 28 * MiB);
    cr_assert_eq(r.free_cached_other, 28 * MiB);
    cr_assert_eq(r.need_stranded, 12 * MiB, "a 20 MiB segment, 8 MiB free on the device");
    cr_assert_eq(r.n_stranded, 1);
    cr_assert_eq(r.stranded_streams[0], sb);
    cr_assert_eq(r.stranded_bytes[0], 28 * MiB);
    cr_assert(strstr(r.advice, "on other streams"), "%s", r.advice);
    /* a program built before the stranded figures never sees the verdict */
    size_t older = offsetof(cca_oom_report_t, free_cached_other);
    cca_oom_report_t o;
    memset(&o, 0xAB, sizeof o);
    cr_assert_eq(cca_last_oom_report_sized(a, &o, older), CCA_OK);
    cr_assert_eq(o.verdict, CCA_OOM_FRAGMENTED, "%s", cca_oom_verdict_string(o.verdict));
    cr_assert_eq(o.need_cached, 12 * MiB);
    cr_assert_eq(((unsigned char *)&o)[older], 0xAB, "nothing written past its struct");
    memset(&o, 0, sizeof o);
    cr_assert_eq(cca_thread_last_oom_report_sized(&o, older), CCA_OK);
    cr_assert_eq(o.verdict, CCA_OOM_FRAGMENTED);
    void *q = alloc_ok(a, 8 * MiB, sb);               /* on B it is served from B's cache */
    free_ok(a, q);
    free_ok(a, x[1]);
    free_ok(a, x[3]);
    finish(a);
    cudaStreamDestroy(sb);
}

/* A retired stream whose segments still hold live blocks: its free bytes
 * count as other streams', but it is no stream to name (its handle may be
 * a new stream's already). */
Test(verdicts, a_retired_stream_is_counted_not_named)
{
    cca_sim_set_capacity(0, 48 * MiB);
    cca_allocator_t *a = make_alloc("");
    cudaStream_t sb, sc;
    cudaStreamCreate(&sb);
    void *x[6];
    for (int i = 0; i < 6; i++) x[i] = alloc_ok(a, 6 * MiB, sb);
    for (int i = 0; i < 6; i += 2) free_ok(a, x[i]);
    free_ok(a, x[5]);
    cr_assert_eq(cca_stream_retire(a, sb), CCA_OK);
    cudaStreamDestroy(sb);
    cudaStreamCreate(&sc);                            /* may get sb's handle */
    void *p = (void *)1;
    cr_assert_eq(cca_malloc(a, &p, 8 * MiB, sc), CCA_ERROR_OUT_OF_MEMORY);
    cca_oom_report_t r;
    cr_assert_eq(cca_last_oom_report(a, &r), CCA_OK);
    cr_assert_eq(r.verdict, CCA_OOM_STRANDED, "%s", cca_oom_verdict_string(r.verdict));
    cr_assert_eq(r.free_cached_other, 28 * MiB);
    cr_assert_eq(r.n_stranded, 0, "the retired stream is not named");
    char text[2048];
    cca_oom_report_format(&r, text, sizeof text);
    cr_assert_null(strstr(text, "cached on other streams:"), "%s", text);
    free_ok(a, x[1]);
    free_ok(a, x[3]);
    finish(a);
    cudaStreamDestroy(sc);
}

/* ---- the cases found, end to end ----------------------------------------- */

static cca_oom_report_t oom_of(cca_allocator_t *a, size_t size)
{
    void *p = (void *)1;
    cr_assert_eq(cca_malloc(a, &p, size, NULL), CCA_ERROR_OUT_OF_MEMORY, "malloc(%zu)", size);
    cca_oom_report_t r;
    cr_assert_eq(cca_last_oom_report(a, &r), CCA_OK);
    return r;
}

Test(verdicts, memory_held_outside_by_cudamalloc_is_external_not_fragmented)
{
    cca_sim_set_capacity(0, 64 * MiB);
    void *outside = NULL;
    cr_assert_eq(cudaMalloc(&outside, 63 * MiB), cudaSuccess);
    cca_allocator_t *a = make_alloc("");
    cca_oom_report_t r = oom_of(a, 1 * MiB);
    cr_assert_eq(r.verdict, CCA_OOM_EXTERNAL, "%s", cca_oom_verdict_string(r.verdict));
    cr_assert_eq(r.need_external, 1 * MiB);
    cr_assert(strstr(r.advice, "free 1.00 MiB of the 63.00 MiB held outside cca"), "%s", r.advice);
    cudaFree(outside);
    finish(a);
}

Test(verdicts, the_verdict_does_not_flip_on_the_request_size)
{
    cca_sim_set_capacity(0, 64 * MiB);
    void *outside = NULL;
    cr_assert_eq(cudaMalloc(&outside, 60 * MiB), cudaSuccess);
    cca_allocator_t *a = make_alloc("");
    cca_oom_report_t r4 = oom_of(a, 4 * MiB), r8 = oom_of(a, 8 * MiB);
    cr_assert_eq(r4.verdict, CCA_OOM_EXTERNAL);
    cr_assert_eq(r8.verdict, CCA_OOM_EXTERNAL);
    cr_assert_eq(r4.need_external, 16 * MiB);
    cr_assert_eq(r8.need_external, 16 * MiB);
    cudaFree(outside);
    finish(a);
}

Test(verdicts, live_memory_filling_the_device_is_exhausted)
{
    cca_sim_set_capacity(0, 63 * MiB + 512 * KiB);
    cca_allocator_t *a = make_alloc("");
    void *p[62];
    for (int i = 0; i < 62; i++) p[i] = alloc_ok(a, 1 * MiB, NULL);   /* 31 full 2 MiB segments */
    cca_oom_report_t r = oom_of(a, 1 * MiB);
    cr_assert_eq(r.verdict, CCA_OOM_EXHAUSTED, "%s", cca_oom_verdict_string(r.verdict));
    cr_assert_eq(r.need_live, 512 * KiB);
    cr_assert_eq(r.largest_fit, 0);
    for (int i = 0; i < 62; i++) free_ok(a, p[i]);
    finish(a);
}

/* ---- largest_fit, acted on -------------------------------------------------
 * A scenario builds a state and provokes an OOM; the probe replays it from
 * a reset simulator (the same calls give the same addresses) and tries one
 * size. */

typedef struct scenario {
    const char *conf;
    size_t capacity, outside;                         /* simulated device, bytes held by a bare cudaMalloc */
    size_t keep[8], drop[8];                          /* allocated keep[0], drop[0], keep[1], ...; drop[] freed then */
    size_t oom;                                       /* the failing request */
} scenario_t;

static cca_allocator_t *build(const scenario_t *sc, cca_oom_report_t *r)
{
    cca_sim_reset();
    cca_sim_set_capacity(0, sc->capacity);
    void *out = NULL;
    if (sc->outside) cr_assert_eq(cudaMalloc(&out, sc->outside), cudaSuccess);
    cca_allocator_t *a = make_alloc(sc->conf);
    void *d[8] = { 0 };
    for (int i = 0; i < 8; i++) {
        if (sc->keep[i]) alloc_ok(a, sc->keep[i], NULL);
        if (sc->drop[i]) d[i] = alloc_ok(a, sc->drop[i], NULL);
    }
    for (int i = 0; i < 8; i++)
        if (d[i]) free_ok(a, d[i]);
    void *p = NULL;
    cr_assert_eq(cca_malloc(a, &p, sc->oom, NULL), CCA_ERROR_OUT_OF_MEMORY, "the scenario's OOM (%zu)", sc->oom);
    if (r) cr_assert_eq(cca_last_oom_report(a, r), CCA_OK);
    return a;
}

static cca_status_t probe(const scenario_t *sc, size_t size)
{
    cca_allocator_t *a = build(sc, NULL);
    void *p = NULL;
    cca_status_t s = cca_malloc(a, &p, size, NULL);
    cr_assert_eq(cca_check(a), CCA_OK, "%s", cca_last_error_string());
    cca_destroy(a);
    return s;
}

static void act_on_largest_fit(const scenario_t *sc, size_t expect)
{
    cca_oom_report_t r;
    cca_destroy(build(sc, &r));
    cr_assert_eq(r.largest_fit, expect, "largest_fit %zu, expected %zu", r.largest_fit, expect);
    size_t L = r.largest_fit;
    const size_t edges[] = { 1, 511, 512, 513, 4096, 1 * MiB - 1, 1 * MiB, 1 * MiB + 1, 2 * MiB, 2 * MiB + 1,
                             10 * MiB - 1, 10 * MiB, 10 * MiB + 1, 20 * MiB, 32 * MiB, 33 * MiB, 64 * MiB,
                             128 * MiB, L / 2, L > 512 ? L - 512 : 0, L > 0 ? L - 1 : 0, L };
    for (size_t i = 0; i < sizeof edges / sizeof edges[0]; i++)
        if (edges[i] && edges[i] <= L)
            cr_assert_eq(probe(sc, edges[i]), CCA_OK, "a request of %zu <= largest_fit %zu failed", edges[i], L);
    cr_assert_eq(probe(sc, L + 1), CCA_ERROR_OUT_OF_MEMORY, "largest_fit %zu is not the largest", L);
}

Test(verdicts, largest_fit_follows_roundup_power2_divisions)
{
    /* 100 MiB device holding 64 MiB: a 40 MiB request fails; 36 MiB rounds
     * to 48 MiB with two divisions, so 32 MiB is the largest that fits */
    scenario_t sc = { .conf = "roundup_power2_divisions:2", .capacity = 100 * MiB, .keep = { 64 * MiB }, .oom = 40 * MiB };
    act_on_largest_fit(&sc, 32 * MiB);
}

#define FIVE(x) { x, x, x, x, x }

Test(verdicts, largest_fit_is_zero_when_a_small_request_needs_a_segment_that_does_not_fit)
{
    /* five cached 2 MiB holes in a 20 MiB segment serve up to 2 MiB, but
     * 512 B needs a new 2 MiB segment and 1 MiB is free on the device */
    scenario_t sc = { .capacity = 21 * MiB, .keep = FIVE(2 * MiB), .drop = FIVE(2 * MiB), .oom = 4 * MiB };
    act_on_largest_fit(&sc, 0);
    /* with 3 MiB free, small requests get a segment and the holes serve up
     * to 2 MiB; above that a 20 MiB segment is needed */
    scenario_t holes = { .capacity = 23 * MiB, .keep = FIVE(2 * MiB), .drop = FIVE(2 * MiB), .oom = 4 * MiB };
    act_on_largest_fit(&holes, 2 * MiB);
}

Test(verdicts, largest_fit_under_the_cap_and_with_outside_memory)
{
    scenario_t cap = { .conf = "memory_limit_mb:40", .capacity = 1 * GiB, .keep = { 30 * MiB }, .oom = 12 * MiB };
    act_on_largest_fit(&cap, 1 * MiB);
    scenario_t ext = { .capacity = 64 * MiB, .outside = 60 * MiB, .oom = 8 * MiB };
    act_on_largest_fit(&ext, 1 * MiB);
    scenario_t roomy = { .capacity = 41 * MiB, .drop = { 8 * MiB }, .oom = 42 * MiB };
    act_on_largest_fit(&roomy, 40 * MiB);
}

Test(verdicts, largest_fit_with_max_split_size_and_the_lean_preset)
{
    /* an oversize cached block serves only requests within 20 MiB below it */
    scenario_t msz = { .conf = "max_split_size_mb:64", .capacity = 220 * MiB, .keep = { 90 * MiB, 20 * MiB },
                       .drop = { 100 * MiB }, .oom = 150 * MiB };
    cca_oom_report_t r;
    cca_destroy(build(&msz, &r));
    act_on_largest_fit(&msz, r.largest_fit);
    cr_assert_geq(r.largest_fit, 10 * MiB);
    scenario_t lean = { .conf = "preset:lean", .capacity = 61 * MiB, .keep = { 20 * MiB, 20 * MiB, 20 * MiB },
                        .oom = 4 * MiB };
    act_on_largest_fit(&lean, 0);
}

Test(verdicts, cap_advice_names_the_setting_that_binds)
{
    cca_sim_set_capacity(0, 1 * GiB);
    cca_allocator_t *a = make_alloc("memory_fraction:0.25");
    cca_oom_report_t r = oom_of(a, 300 * MiB);
    cr_assert_eq(r.verdict, CCA_OOM_CAP);
    cr_assert(strstr(r.advice, "memory_fraction:0.293"), "%s", r.advice);   /* 300 MiB of 1 GiB */
    cr_assert_null(strstr(r.advice, "memory_limit_mb"), "%s", r.advice);
    finish(a);
    cca_sim_reset();
    cca_sim_set_capacity(0, 1 * GiB);
    a = make_alloc("memory_fraction:0.5,memory_limit_mb:256");
    r = oom_of(a, 300 * MiB);
    cr_assert(strstr(r.advice, "memory_limit_mb:300"), "%s", r.advice);
    finish(a);
}

Test(verdicts, judging_an_older_programs_report_stays_inside_it)
{
    size_t v1 = offsetof(cca_oom_report_t, need_cap);
    unsigned char buf[sizeof(cca_oom_report_t) + 16];
    memset(buf, 0xAB, sizeof buf);
    cca_oom_report_t *r = (cca_oom_report_t *)(void *)buf;
    memset(buf, 0, v1);
    r->segment_size = r->rounded = 20 * MiB;
    r->device_total = 64 * MiB, r->device_free = 4 * MiB, r->reserved = 60 * MiB;
    v1_cca_oom_judge(r);                              /* as a binary built before need_* existed */
    cr_assert_eq(r->verdict, CCA_OOM_EXHAUSTED);
    cr_assert_eq(r->shortfall, 16 * MiB);
    for (size_t i = v1; i < sizeof buf; i++) cr_assert_eq(buf[i], 0xAB, "byte %zu written", i);
    cca_oom_judge_sized(r, 8);                        /* too small to be one: nothing */
    cca_oom_judge(NULL);
}

/* ---- expandable segments: growth in place ---------------------------------
 * A segment grows by mapping handles at its end (its free last block
 * counts), right below its start (its free first block counts), or into a
 * gap up to another of its ranges; a retry maps handles freed anywhere,
 * other streams and pools included. segment_size is what the growth must
 * map at the spot the allocator picks; largest_fit counts all of it. */

#define X_CONF "expandable_segments:True"

Test(verdicts, largest_fit_counts_an_expandable_segments_free_last_block)
{
    /* 8 MiB device: 3 MiB live in two 2 MiB handles, 1 MiB free at the
     * end, 4 MiB free on the device: 1 + 4 = 5 MiB fits at the end */
    scenario_t tail = { .conf = X_CONF, .capacity = 8 * MiB, .keep = { 3 * MiB }, .oom = 6 * MiB };
    act_on_largest_fit(&tail, 5 * MiB);
}

Test(verdicts, largest_fit_of_expandable_growth_under_the_cap_and_with_outside_memory)
{
    /* cap 16 MiB: 5 MiB live + 5 MiB free at the end in 10 MiB of handles;
     * the failing 12 MiB mapped the unmapped free handles back (4 MiB) and
     * found 6 MiB under the cap for the rest: 5 + 6 = 11 MiB fits */
    scenario_t cap = { .conf = X_CONF ",memory_limit_mb:16", .capacity = 1 * GiB, .keep = { 5 * MiB },
                       .drop = { 4 * MiB }, .oom = 12 * MiB };
    act_on_largest_fit(&cap, 11 * MiB);
    /* 56 MiB held outside: 5 MiB live in 6 MiB, 2 MiB free on the device */
    scenario_t ext = { .conf = X_CONF, .capacity = 64 * MiB, .outside = 56 * MiB, .keep = { 5 * MiB }, .oom = 4 * MiB };
    act_on_largest_fit(&ext, 3 * MiB);
}

Test(verdicts, largest_fit_of_expandable_growth_in_the_small_pool_and_below_a_segment)
{
    /* the small pool's range has 424 KiB free at its end and the device
     * nothing; the large pool's 8 MiB free handles are unmapped by a retry
     * and mapped into the small pool: every small request fits, and in the
     * large pool up to the 8 MiB block */
    scenario_t small = { .conf = X_CONF, .capacity = 16 * MiB, .keep = { 1 * MiB, 600 * KiB, 6 * MiB },
                         .drop = { 0, 0, 8 * MiB }, .oom = 10 * MiB };
    act_on_largest_fit(&small, 8 * MiB);
    /* a large range with a free first block of 1.5 MiB (part of a handle)
     * and 2 MiB free on the device: a new 2 MiB range right below it joins
     * it, 1.5 + 2 = 3.5 MiB */
    scenario_t below = { .conf = X_CONF, .capacity = 16 * MiB, .keep = { 1 * MiB, 5 * MiB / 2, 8 * MiB },
                         .drop = { 3 * MiB / 2 }, .oom = 4 * MiB };
    act_on_largest_fit(&below, 7 * MiB / 2);
}

/* The verdict's S with expandable segments: the bytes the growth maps at
 * the spot, the free last block subtracted. */
Test(verdicts, expandable_segment_size_counts_the_free_last_block)
{
    /* the device: 3 MiB live in 4 MiB of handles (1 MiB free at the end),
     * 4 MiB free on the device, a 7 MiB request: S = 7 - 1 rounded up to
     * 2 MiB = 6 MiB; dev_need = S - D = 2 MiB, not cached (F = 1 MiB), in
     * live bytes (A = 3 MiB): exhausted, 2 MiB short. (Counting the whole
     * request, 8 MiB, would need 4 MiB: cached 1 + live 3, fragmented.) */
    cca_sim_set_capacity(0, 8 * MiB);
    cca_allocator_t *a = make_alloc(X_CONF);
    void *live = alloc_ok(a, 3 * MiB, NULL);
    cca_oom_report_t r = oom_of(a, 7 * MiB);
    cr_assert_eq(r.rounded, 7 * MiB);
    cr_assert_eq(r.segment_size, 6 * MiB, "segment_size %zu", r.segment_size);
    cr_assert_eq(r.device_total, 8 * MiB);
    cr_assert_eq(r.device_free, 4 * MiB);
    cr_assert_eq(r.reserved, 4 * MiB);
    cr_assert_eq(r.free_cached, 1 * MiB);
    cr_assert_eq(r.external, 0);
    cr_assert_eq(r.verdict, CCA_OOM_EXHAUSTED, "%s: %s", cca_oom_verdict_string(r.verdict), r.advice);
    cr_assert_eq(r.shortfall, 2 * MiB, "shortfall %zu", r.shortfall);
    cr_assert_eq(r.need_live, 2 * MiB);
    cr_assert_eq(r.need_cached, 0);
    cr_assert_eq(r.need_cap, 0);
    cr_assert_eq(r.need_external, 0);
    cr_assert_eq(r.largest_fit, 5 * MiB, "largest_fit %zu", r.largest_fit);
    cr_assert_str_eq(r.advice, "needs 6.00 MiB more mapped, 4.00 MiB free on the device: free 2.00 MiB of live "
                               "allocations or lower the batch size; largest request that fits now: 5.00 MiB");
    free_ok(a, live);
    finish(a);

    /* the cap, 16 MiB: 5 MiB live and 5 MiB free at the end (the failing
     * request mapped its unmapped free handles back), 10 MiB reserved, a
     * 12 MiB request: S = 12 - 5 rounded = 8 MiB, cap_need = R + S - C =
     * 2 MiB: cap, 2 MiB short (the whole request would say 6 MiB) */
    cca_sim_reset();
    cca_sim_set_capacity(0, 1 * GiB);
    a = make_alloc(X_CONF ",memory_limit_mb:16");
    live = alloc_ok(a, 5 * MiB, NULL);
    free_ok(a, alloc_ok(a, 4 * MiB, NULL));
    r = oom_of(a, 12 * MiB);
    cr_assert_eq(r.segment_size, 8 * MiB, "segment_size %zu", r.segment_size);
    cr_assert_eq(r.reserved, 10 * MiB);
    cr_assert_eq(r.free_cached, 5 * MiB);
    cr_assert_eq(r.cap, 16 * MiB);
    cr_assert_eq(r.verdict, CCA_OOM_CAP, "%s: %s", cca_oom_verdict_string(r.verdict), r.advice);
    cr_assert_eq(r.shortfall, 2 * MiB, "shortfall %zu", r.shortfall);
    cr_assert_eq(r.need_cap, 2 * MiB);
    cr_assert_eq(r.largest_fit, 11 * MiB, "largest_fit %zu", r.largest_fit);
    cr_assert(strstr(r.advice, "raise the cap by 2.00 MiB (memory_limit_mb:18)"), "%s", r.advice);
    /* acted on: a cap 2 MiB higher serves it, 1 MiB higher does not */
    for (size_t limit = 17; limit <= 18; limit++) {
        cr_assert_eq(cca_set_memory_limit(a, limit * MiB), CCA_OK);
        void *p = NULL;
        cr_assert_eq(cca_malloc(a, &p, 12 * MiB, NULL), limit == 18 ? CCA_OK : CCA_ERROR_OUT_OF_MEMORY,
                     "cap %zu MiB", limit);
        if (p) free_ok(a, p);
    }
    free_ok(a, live);
    finish(a);
}

/* common.h - helpers shared by the allocator suites: exact stat checks,
 * the consistency walk and a leak check inside the test body. */
#ifndef CCA_TEST_COMMON_H
#define CCA_TEST_COMMON_H

#include "crit.h"
#include <string.h>
#include "cca.h"
#include "cca_sim.h"

#define KiB ((size_t)1 << 10)
#define MiB ((size_t)1 << 20)
#define GiB ((size_t)1 << 30)

int __lsan_do_recoverable_leak_check(void) __attribute__((weak));

static inline void check_ok(cca_allocator_t *a)
{
    cca_status_t s = cca_check(a);
    cr_assert_eq(s, CCA_OK, "cca_check: %s", cca_last_error_string());
}

static inline cca_allocator_t *make_alloc(const char *conf)
{
    cca_config_t cfg;
    cca_config_init(&cfg);
    char err[256];
    cr_assert_eq(cca_config_parse(&cfg, conf, err, sizeof err), CCA_OK, "%s", err);
    cca_allocator_t *a = NULL;
    cr_assert_eq(cca_create(&cfg, &a), CCA_OK, "%s", cca_last_error_string());
    return a;
}

static inline cca_stats_t stats_of(cca_allocator_t *a)
{
    cca_stats_t s;
    cr_assert_eq(cca_get_stats(a, &s), CCA_OK);
    return s;
}

/* The memory figures: stats_of with the CCA_PROFILE fields (how the
 * allocator ran: every call counts) set to 0, for comparing two moments. */
static inline cca_stats_t figures_of(cca_allocator_t *a)
{
    cca_stats_t s = stats_of(a);
#define FIGURES_ZERO_CCA_PROFILE(f) (f) = 0;
#define FIGURES_ZERO_CCA_POOLED(f)
#define FIGURES_ZERO_CCA_STAT(f)
#define FIGURES_ZERO_CCA_COUNTER(f)
#define FIGURES_ZERO_CCA_GAUGE(f)
#define FIGURES_ZERO_CCA_SETTING(f)
#define FIGURES_ZERO_(kind, name, doc) FIGURES_ZERO_##kind(s.name)
    CCA_STATS_FIELDS(FIGURES_ZERO_)
#undef FIGURES_ZERO_
    return s;
}

static inline void *alloc_ok(cca_allocator_t *a, size_t size, cudaStream_t s)
{
    void *p = NULL;
    cca_status_t st = cca_malloc(a, &p, size, s);
    cr_assert_eq(st, CCA_OK, "cca_malloc(%zu): %s", size, cca_last_error_string());
    cr_assert_not_null(p);
    return p;
}

static inline void free_ok(cca_allocator_t *a, void *p)
{
    cr_assert_eq(cca_free(a, p), CCA_OK, "cca_free: %s", cca_last_error_string());
}

/* Checks the allocator, destroys it, and checks that the device got every
 * byte back and that the host leaked nothing. */
static inline void finish(cca_allocator_t *a)
{
    check_ok(a);
    cca_destroy(a);
#if CCA_TEST_SIM                                          /* the real runtime cannot tell */
    for (int d = 0; d < 4; d++) cr_assert_eq(cca_sim_live_allocations(d), 0, "device %d still holds memory", d);
#endif
    cr_assert_eq(cudaGetLastError(), cudaSuccess, "cca left an error in the runtime's last-error slot");
    if (__lsan_do_recoverable_leak_check) cr_assert_eq(__lsan_do_recoverable_leak_check(), 0, "host memory leaked");
}

/* Asserts current (and optionally peak) of one stat in one pool. */
#define ASSERT_STAT(st, field, pool, cur) \
    cr_assert_eq((st).field[pool].current, (int64_t)(cur), #field "[" #pool "].current = %lld, expected %lld", \
                 (long long)(st).field[pool].current, (long long)(cur))
#define ASSERT_PEAK(st, field, pool, pk) \
    cr_assert_eq((st).field[pool].peak, (int64_t)(pk), #field "[" #pool "].peak = %lld, expected %lld", \
                 (long long)(st).field[pool].peak, (long long)(pk))

#endif

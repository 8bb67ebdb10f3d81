/* test_faults.c - a fault swept over every runtime call of a scenario: for
 * each k, the k-th call (cca_sim_fail_nth) fails once, with
 * cudaErrorMemoryAllocation and with a non-sticky generic error; whatever
 * cca returns, afterwards cca_check is clean, the allocator serves and
 * frees, the runtime's error slot is clean, and the device and the host
 * got everything back. One scenario per area: the core, errors and OOM,
 * policies, the OOM report, record_stream with per-thread streams, several
 * devices. */
#include <pthread.h>
#include <stdbool.h>
#include "acct_util.h"

static void setup(void) { cca_sim_reset(); }
TestSuite(faults, .init = setup, .timeout = 600);

#define MAX_LIVE 128

typedef struct run {
    cca_allocator_t *a;
    void *live[MAX_LIVE];
    cudaStream_t s1, s2;
} run_t;

/* An allocation whose failure is allowed (an injected fault may cause it):
 * on failure the pointer is NULL and the status one a caller can act on. */
static void *r_alloc(run_t *r, size_t size, cudaStream_t s)
{
    void *p = (void *)1;
    cca_status_t st = cca_malloc(r->a, &p, size, s);
    cr_assert(st == CCA_OK || st == CCA_ERROR_OUT_OF_MEMORY || st == CCA_ERROR_CUDA, "cca_malloc(%zu): %s", size,
              cca_status_string(st));
    if (st != CCA_OK) {
        cr_assert_null(p);
        return NULL;
    }
    for (int i = 0; i < MAX_LIVE; i++)
        if (!r->live[i]) {
            r->live[i] = p;
            return p;
        }
    cr_assert_fail("too many live blocks");
    return NULL;
}

/* A free of what the caller owns never fails, whatever the runtime did. */
static void r_free(run_t *r, void *p)
{
    if (!p) return;
    cr_assert_eq(cca_free(r->a, p), CCA_OK, "cca_free: %s", cca_last_error_string());
    for (int i = 0; i < MAX_LIVE; i++)
        if (r->live[i] == p) r->live[i] = NULL;
}

typedef void (*scenario_fn)(run_t *r);

typedef struct sweep {
    const char *conf;
    int devices, device;
    size_t capacity;
    scenario_fn fn;
} sweep_t;

static unsigned long failable_calls(void)
{
    unsigned long n = 0;
    for (int api = 0; api < CCA_SIM_API_COUNT; api++)
        if (api != CCA_SIM_GET_ERROR_STRING && api != CCA_SIM_GET_ERROR_NAME && api != CCA_SIM_GET_LAST_ERROR &&
            api != CCA_SIM_PEEK_AT_LAST_ERROR)
            n += cca_sim_calls((cca_sim_api_t)api);
    return n;
}

/* One run: k = 0 arms nothing. Returns the failable calls the scenario made. */
static unsigned long run_once(const sweep_t *sw, unsigned long k, cudaError_t err)
{
    cca_sim_reset();
    cca_sim_set_device_count(sw->devices);
    for (int d = 0; d < sw->devices; d++) cca_sim_set_capacity(d, sw->capacity);
    run_t r = { 0 };
    cr_assert_eq(cudaStreamCreate(&r.s1), cudaSuccess);
    cr_assert_eq(cudaStreamCreate(&r.s2), cudaSuccess);
    cca_config_t cfg;
    cca_config_init(&cfg);
    cr_assert_eq(cca_config_parse(&cfg, sw->conf, NULL, 0), CCA_OK);
    cfg.device = sw->device;
    unsigned long before = failable_calls();
    cca_sim_fail_nth(k, err);
    cca_status_t cs = cca_create(&cfg, &r.a);
    if (cs == CCA_OK) sw->fn(&r);
    bool fired = k && cca_sim_fail_nth_left() == 0;
    cca_sim_fail_nth(0, cudaSuccess);
    unsigned long made = failable_calls() - before;
    if (k) cr_assert_eq(fired, k <= made, "k=%lu of %lu calls: the fault %s", k, made, fired ? "fired" : "did not fire");
    cr_assert_eq(cudaGetLastError(), cudaSuccess, "k=%lu: cca left an error in the runtime's slot", k);
    int dev = -1;
    cr_assert_eq(cudaGetDevice(&dev), cudaSuccess);
    cr_assert_eq(dev, 0, "k=%lu: the caller's device changed", k);
    if (cs != CCA_OK) {
        cr_assert(cs == CCA_ERROR_CUDA || cs == CCA_ERROR_INVALID_ARGUMENT, "k=%lu: cca_create: %s", k, cca_status_string(cs));
        cr_assert_eq(cca_create(&cfg, &r.a), CCA_OK, "k=%lu: a second cca_create", k);
    }
    cr_assert_eq(cca_check(r.a), CCA_OK, "k=%lu err=%d: %s", k, (int)err, cca_last_error_string());
    void *small = r_alloc(&r, 4096, r.s1), *large = r_alloc(&r, 12 * MiB, NULL);
    cr_assert(small && large, "k=%lu: the allocator does not serve after the fault", k);
    for (int i = 0; i < MAX_LIVE; i++) r_free(&r, r.live[i]);
    cr_assert_eq(cca_check(r.a), CCA_OK, "k=%lu: %s", k, cca_last_error_string());
    cca_destroy(r.a);
    for (int d = 0; d < sw->devices; d++)
        cr_assert_eq(cca_sim_live_allocations(d), 0, "k=%lu: device %d still holds memory", k, d);
    cudaStreamDestroy(r.s1);
    cudaStreamDestroy(r.s2);
    return made;
}

static void sweep(const sweep_t *sw)
{
    unsigned long n = run_once(sw, 0, cudaSuccess);
    cr_assert_gt(n, 10);
    cr_assert_leq(n, 500, "the scenario makes %lu runtime calls", n);
    cr_log_info("%lu runtime calls, each failed in turn with two errors", n);
    const cudaError_t errs[] = { cudaErrorMemoryAllocation, cudaErrorInvalidValue };
    for (size_t e = 0; e < 2; e++)
        for (unsigned long k = 1; k <= n + 1; k++) run_once(sw, k, errs[e]);
    if (__lsan_do_recoverable_leak_check) cr_assert_eq(__lsan_do_recoverable_leak_check(), 0, "host memory leaked");
}

/* ---- scenarios ------------------------------------------------------------- */

static void core_ops(run_t *r)
{
    const size_t sizes[] = { 512, 4096, 1 * MiB, 1 * MiB + 1, 12 * MiB, 30 * MiB };
    for (int round = 0; round < 6; round++) {         /* segments come and go: cudaMalloc, cudaFree */
        void *q[6];
        for (int i = 0; i < 6; i++) q[i] = r_alloc(r, sizes[i] + (size_t)round * 2 * MiB, round % 2 ? r->s1 : NULL);
        for (int i = 0; i < 6; i++) r_free(r, q[i]);
        cr_assert_eq(cca_empty_cache(r->a), CCA_OK);
    }
    void *p[12];
    for (int i = 0; i < 12; i++) p[i] = r_alloc(r, sizes[i % 6], i % 2 ? r->s1 : NULL);
    for (int i = 0; i < 12; i += 2) r_free(r, p[i]);
    cca_stats_t s;
    cr_assert_eq(cca_get_stats(r->a, &s), CCA_OK);
    cr_assert_eq(cca_empty_cache(r->a), CCA_OK);
    cr_assert_eq(cca_reset_peak_stats(r->a), CCA_OK);
    for (int i = 0; i < 12; i += 2) p[i] = r_alloc(r, sizes[(i + 1) % 6], r->s2);
    for (int i = 0; i < 12; i++) r_free(r, p[i]);
    cr_assert_eq(cca_reset_accumulated_stats(r->a), CCA_OK);
}

static void oom_ops(run_t *r)
{
    for (int round = 0; round < 4; round++) {         /* OOMs that release and retry */
        void *x = r_alloc(r, 30 * MiB, NULL), *y = r_alloc(r, 30 * MiB, r->s1);
        r_free(r, x);
        void *z = r_alloc(r, 40 * MiB, NULL);
        r_free(r, y);
        r_free(r, z);
    }
    void *p[4];
    for (int i = 0; i < 4; i++) p[i] = r_alloc(r, 20 * MiB, NULL);   /* the fourth does not fit in 64 MiB */
    r_free(r, p[1]);
    void *q = r_alloc(r, 8 * MiB, NULL);
    void *huge = r_alloc(r, 1 * GiB, NULL);
    cr_assert_null(huge);
    r_free(r, q);
    cr_assert_eq(cca_empty_cache(r->a), CCA_OK);
    r_free(r, p[0]);
}

static void policy_ops(run_t *r)
{
    for (int round = 0; round < 4; round++) {         /* growth, release before growing, GC under the cap */
        void *x[5];
        for (int i = 0; i < 5; i++) x[i] = r_alloc(r, (size_t)(round * 5 + i + 1) * MiB + 512, NULL);
        for (int i = 0; i < 5; i++) r_free(r, x[i]);
    }
    void *p[10];
    for (int i = 0; i < 10; i++) p[i] = r_alloc(r, (size_t)(i + 1) * 3 * MiB, i % 2 ? r->s1 : NULL);
    for (int i = 0; i < 10; i += 3) r_free(r, p[i]);
    for (int i = 0; i < 10; i += 3) p[i] = r_alloc(r, 5 * MiB, NULL);
    for (int i = 0; i < 10; i++) r_free(r, p[i]);
}

static void on_oom(const cca_oom_report_t *rep, void *arg)
{
    char buf[1024];
    cca_oom_report_format(rep, buf, sizeof buf);
    ++*(int *)arg;
}

static void report_ops(run_t *r)
{
    int calls = 0;
    cr_assert_eq(cca_set_oom_callback(r->a, on_oom, &calls), CCA_OK);
    void *p[30];
    for (int i = 0; i < 30; i++) p[i] = r_alloc(r, 2 * MiB, NULL);
    for (int i = 0; i < 30; i += 2) r_free(r, p[i]);
    cr_assert_null(r_alloc(r, 6 * MiB, NULL));
    cca_oom_report_t rep;
    cr_assert_eq(cca_last_oom_report(r->a, &rep), CCA_OK);
    sink_t k = { 0 };
    cca_status_t st = cca_memory_summary(r->a, sink_write, &k);
    cr_assert(st == CCA_OK || st == CCA_ERROR_OUT_OF_MEMORY);
    st = cca_snapshot_json(r->a, sink_write, &k);
    cr_assert(st == CCA_OK || st == CCA_ERROR_OUT_OF_MEMORY);
    free(k.s);
    cca_frag_t f;
    cr_assert_eq(cca_get_fragmentation(r->a, &f), CCA_OK);
    for (int i = 1; i < 30; i += 2) r_free(r, p[i]);
    cr_assert_eq(cca_set_oom_callback(r->a, NULL, NULL), CCA_OK);
}

static void *per_thread(void *arg)
{
    run_t *r = arg;
    void *p = NULL;
    if (cca_malloc(r->a, &p, 4096, cudaStreamPerThread) == CCA_OK) {
        cca_status_t st = cca_record_stream(r->a, p, r->s2);
        if (st != CCA_OK && st != CCA_ERROR_CUDA && st != CCA_ERROR_OUT_OF_MEMORY) return (void *)1;
        if (cca_free(r->a, p) != CCA_OK) return (void *)1;
    }
    return NULL;
}

static void streams_ops(run_t *r)
{
    for (int round = 0; round < 8; round++) {         /* events recorded, queried, synchronized */
        void *u = r_alloc(r, 4096 << round, r->s1);
        if (u) {
            cca_status_t st = cca_record_stream(r->a, u, round % 2 ? r->s2 : NULL);
            cr_assert(st == CCA_OK || st == CCA_ERROR_OUT_OF_MEMORY, "%s", cca_status_string(st));
        }
        r_free(r, u);
        if (round % 3 == 2) cr_assert_eq(cca_empty_cache(r->a), CCA_OK);
    }
    void *p = r_alloc(r, 1 * MiB + 512, r->s1), *q = r_alloc(r, 4096, r->s1);
    if (p) {
        cca_status_t st = cca_record_stream(r->a, p, r->s2);
        cr_assert(st == CCA_OK || st == CCA_ERROR_CUDA || st == CCA_ERROR_OUT_OF_MEMORY, "%s", cca_status_string(st));
    }
    if (q) cr_assert(cca_record_stream(r->a, q, cudaStreamPerThread) != CCA_ERROR_INVALID_POINTER);
    cca_sim_stream_hold(r->s2);
    r_free(r, p);
    r_free(r, q);
    void *again = r_alloc(r, 1 * MiB + 512, r->s1);   /* queries the pending event */
    cca_sim_stream_release(r->s2);
    r_free(r, again);
    cca_stats_t s;
    for (int i = 0; i < 4; i++) {
        pthread_t t;
        void *ret = NULL;
        pthread_create(&t, NULL, per_thread, r);
        pthread_join(t, &ret);
        cr_assert_null(ret);
        cr_assert_eq(cca_get_stats(r->a, &s), CCA_OK);   /* retires the thread's stream */
    }
    cr_assert_eq(cca_stream_retire(r->a, r->s2), CCA_OK);
    cr_assert_eq(cca_empty_cache(r->a), CCA_OK);
}

static void devices_ops(run_t *r)
{
    for (int round = 0; round < 5; round++) {         /* every device call switches and restores */
        void *x = r_alloc(r, (size_t)(round + 1) * 5 * MiB, NULL);
        r_free(r, x);
        cr_assert_eq(cca_empty_cache(r->a), CCA_OK);
    }
    void *p[6];
    for (int i = 0; i < 6; i++) p[i] = r_alloc(r, (size_t)1 << (12 + 3 * i), i % 2 ? r->s1 : NULL);
    for (int i = 0; i < 6; i += 2) r_free(r, p[i]);
    cr_assert_eq(cca_empty_cache(r->a), CCA_OK);
    for (int i = 1; i < 6; i += 2) r_free(r, p[i]);
}

/* ---- the sweeps ------------------------------------------------------------ */

Test(faults, core)
{
    sweep(&(sweep_t){ "", 1, 0, 256 * MiB, core_ops });
}

Test(faults, errors_and_oom)
{
    sweep(&(sweep_t){ "", 1, 0, 64 * MiB, oom_ops });
}

Test(faults, policy)
{
    sweep(&(sweep_t){ "preset:lean,memory_limit_mb:160,garbage_collection_threshold:0.5", 1, 0, 1 * GiB, policy_ops });
}

Test(faults, oom_report)
{
    sweep(&(sweep_t){ "", 1, 0, 61 * MiB, report_ops });
}

Test(faults, record_stream_and_per_thread_streams)
{
    sweep(&(sweep_t){ "", 1, 0, 256 * MiB, streams_ops });
}

Test(faults, several_devices)
{
    sweep(&(sweep_t){ "", 2, 1, 256 * MiB, devices_ops });
}

/* ---- cca_destroy: every cudaFree tried 4 times (the call and 3 retries);
 * what still fails is named in cca_last_error_string(), "" otherwise. ---- */

/* Segments of 40 MiB, 20 MiB and 2 MiB, all with live blocks; cca_destroy
 * walks them newest first: 40, 20, 2. A failed call leaves a text behind. */
static cca_allocator_t *three_live_segments(void)
{
    cca_allocator_t *a = make_alloc("");
    alloc_ok(a, 1000, NULL);
    alloc_ok(a, 8 * MiB, NULL);
    alloc_ok(a, 40 * MiB, NULL);
    cr_assert_eq(cca_sim_live_allocations(0), 3);
    cr_assert_eq(cca_sim_used_bytes(0), 62 * MiB);
    cr_assert_eq(cca_free(a, (void *)(uintptr_t)0x1000), CCA_ERROR_INVALID_POINTER);
    cr_assert_neq(cca_last_error_string()[0], 0);
    return a;
}

Test(faults, destroy_retries_a_cudafree_that_fails_once)
{
    for (unsigned long after = 0; after < 3; after++) {
        cca_sim_reset();
        cca_allocator_t *a = three_live_segments();
        unsigned long frees = cca_sim_calls(CCA_SIM_FREE);
        cca_sim_fail(CCA_SIM_FREE, after, cudaErrorMemoryAllocation);
        cca_destroy(a);
        cr_assert_eq(cca_sim_used_bytes(0), 0, "after %lu: %zu bytes kept", after, cca_sim_used_bytes(0));
        cr_assert_eq(cca_sim_live_allocations(0), 0);
        cr_assert_eq(cca_sim_calls(CCA_SIM_FREE) - frees, 4, "after %lu: three frees and one retry", after);
        cr_assert_str_eq(cca_last_error_string(), "", "after %lu: everything went back", after);
        cr_assert_eq(cudaGetLastError(), cudaSuccess);
    }
}

Test(faults, destroy_names_the_segments_it_could_not_free)
{
    cca_allocator_t *a = three_live_segments();
    cca_sim_fail_times(CCA_SIM_FREE, 1, 4, cudaErrorMemoryAllocation);   /* the 20 MiB segment, every try */
    cca_destroy(a);
    cr_assert_eq(cca_sim_used_bytes(0), 20 * MiB, "the other segments went back");
    cr_assert_eq(cca_sim_live_allocations(0), 1);
    cr_assert_eq(cca_sim_calls(CCA_SIM_FREE), 6);
    cr_assert_str_eq(cca_last_error_string(),
                     "cca_destroy: device 0 kept 20971520 bytes (20.00 MiB) of device memory after 4 tries per call: "
                     "cudaFree failed for 1 segment (20971520 bytes): cudaErrorMemoryAllocation");
    cr_assert_eq(cudaGetLastError(), cudaSuccess);
    cca_sim_reset();

    a = three_live_segments();
    cca_sim_fail_times(CCA_SIM_FREE, 0, 8, cudaErrorLaunchFailure);      /* 40 and 20 MiB, every try */
    cca_destroy(a);
    cr_assert_eq(cca_sim_used_bytes(0), 60 * MiB);
    cr_assert_eq(cca_sim_live_allocations(0), 2);
    cr_assert_str_eq(cca_last_error_string(),
                     "cca_destroy: device 0 kept 62914560 bytes (60.00 MiB) of device memory after 4 tries per call: "
                     "cudaFree failed for 2 segments (62914560 bytes): cudaErrorLaunchFailure");
    cr_assert_eq(cudaGetLastError(), cudaSuccess);
}

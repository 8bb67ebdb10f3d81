/* test_expandable.c - expandable_segments:True on the simulated device's
 * virtual memory calls: exact figures (reserved = handles, maps and unmaps
 * in num_device_alloc/free, segments = contiguous mapped ranges, nothing in
 * inactive_split), growth in place and joins, unmapping before failing and
 * across streams, empty_cache, reservations per device, max_split_size
 * (pytorch issue 123548's pattern), injected faults in every driver call,
 * and the OOM report's advice for a cache without them. */
#include "common.h"
#include <cuda.h>
#include <stdio.h>

static void setup(void) { cca_sim_reset(); }

TestSuite(expandable, .init = setup);

/* Every live block mapped read-write (the simulator's own view), on top of cca_check. */
static int walk_block(const cca_block_info_t *b, void *arg)
{
    (void)arg;
    if (b->state == CCA_STATE_ACTIVE_ALLOCATED)
        cr_assert(cca_sim_accessible((const void *)b->address, b->size), "block %#lx (%zu B) is not mapped read-write",
                  (unsigned long)b->address, b->size);
    return 0;
}

typedef struct segs { int n; size_t bytes; int expandable; } segs_t;
static int walk_seg(const cca_segment_info_t *s, void *arg)
{
    segs_t *c = arg;
    c->n++;
    c->bytes += s->total_size;
    c->expandable += s->is_expandable;
    return 0;
}

static void check_x(cca_allocator_t *a)
{
    check_ok(a);
    segs_t c = { 0 };
    cr_assert_eq(cca_snapshot_walk(a, walk_seg, walk_block, &c), CCA_OK);
    cca_stats_t s = stats_of(a);
    cr_assert_eq(c.n, s.segment[CCA_POOL_ALL].current, "the snapshot's segments are the counted ones");
    cr_assert_eq(c.expandable, c.n);
    cr_assert_eq((int64_t)c.bytes + s.unmapped_bytes.current, s.reserved_bytes[CCA_POOL_ALL].current);
    cr_assert_eq(cca_sim_used_bytes(0), (size_t)s.reserved_bytes[CCA_POOL_ALL].current, "the device's view of reserved");
}

static void finish_x(cca_allocator_t *a)
{
    check_x(a);
    finish(a);
    cr_assert_eq(cca_sim_live_handles(0), 0);
    cr_assert_eq(cca_sim_va_reserved(), 0);
}

Test(expandable, grows_in_place_with_exact_figures)
{
    cca_allocator_t *a = make_alloc("expandable_segments:True");
    void *p1 = alloc_ok(a, 30 * MiB, 0);              /* a new range: one 30 MiB handle */
    cca_stats_t s = stats_of(a);
    ASSERT_STAT(s, segment, CCA_POOL_LARGE, 1);
    ASSERT_STAT(s, reserved_bytes, CCA_POOL_LARGE, 30 * MiB);
    cr_assert_eq(s.num_device_alloc, 1);
    cr_assert_eq(s.num_handle_create, 1);
    cr_assert_eq(cca_sim_calls(CCA_SIM_MALLOC), 0, "no cudaMalloc");
    void *p2 = alloc_ok(a, 30 * MiB, 0);              /* mapped right above: the same segment */
    cr_assert_eq((char *)p2, (char *)p1 + 30 * MiB);
    s = stats_of(a);
    ASSERT_STAT(s, segment, CCA_POOL_LARGE, 1);
    ASSERT_STAT(s, reserved_bytes, CCA_POOL_LARGE, 60 * MiB);
    cr_assert_eq(s.num_device_alloc, 2);
    void *q = alloc_ok(a, 1000, 0);                   /* the small pool: its own range, a 2 MiB handle */
    s = stats_of(a);
    ASSERT_STAT(s, segment, CCA_POOL_SMALL, 1);
    ASSERT_STAT(s, reserved_bytes, CCA_POOL_SMALL, 2 * MiB);
    ASSERT_STAT(s, inactive_split, CCA_POOL_SMALL, 0);   /* the rest of the page is free, not counted */
    ASSERT_STAT(s, inactive_split_bytes, CCA_POOL_ALL, 0);
    check_x(a);
    free_ok(a, p1);
    free_ok(a, p2);
    free_ok(a, q);
    s = stats_of(a);
    cr_assert_eq(s.num_device_free, 0, "a free unmaps nothing");
    ASSERT_STAT(s, reserved_bytes, CCA_POOL_ALL, 62 * MiB);
    void *big = alloc_ok(a, 60 * MiB, 0);             /* the merged range serves it */
    cr_assert_eq(big, p1);
    free_ok(a, big);
    cr_assert_eq(cca_empty_cache(a), CCA_OK);
    s = stats_of(a);
    ASSERT_STAT(s, reserved_bytes, CCA_POOL_ALL, 0);
    ASSERT_STAT(s, segment, CCA_POOL_ALL, 0);
    cr_assert_eq(s.num_device_free, 3, "every handle unmapped");
    cr_assert_eq(s.num_handle_release, 3);
    cr_assert_eq(s.unmapped_bytes.current, 0);
    finish_x(a);
}

/* Under a cap of 64 MiB handles are 2 MiB (1/64 of the room left is
 * below the granularity); a free block in the middle is unmapped when the
 * cap would refuse, which splits the range in two. */
Test(expandable, unmaps_before_failing)
{
    cca_allocator_t *a = make_alloc("expandable_segments:True,memory_limit_mb:64");
    void *A = alloc_ok(a, 20 * MiB, 0), *B = alloc_ok(a, 20 * MiB, 0), *C = alloc_ok(a, 20 * MiB, 0);
    cca_stats_t s = stats_of(a);
    cr_assert_eq(s.num_handle_create, 30);
    ASSERT_STAT(s, segment, CCA_POOL_ALL, 1);
    free_ok(a, B);
    void *D = alloc_ok(a, 24 * MiB, 0);               /* 4 MiB under the cap: B's 10 handles are unmapped and reused */
    s = stats_of(a);
    cr_assert_eq(s.num_alloc_retries, 1);
    cr_assert_eq(s.num_device_free, 10);
    cr_assert_eq(s.num_handle_create, 32);
    cr_assert_eq(s.num_handle_release, 0);
    ASSERT_STAT(s, reserved_bytes, CCA_POOL_ALL, 64 * MiB);
    cr_assert_eq(s.unmapped_bytes.current, 0);
    ASSERT_STAT(s, segment, CCA_POOL_ALL, 2);        /* [A] hole [C D] */
    cr_assert_eq((char *)D, (char *)C + 20 * MiB);
    check_x(a);
    void *F = NULL;
    cr_assert_eq(cca_malloc(a, &F, 2 * MiB, 0), CCA_ERROR_OUT_OF_MEMORY);   /* nothing free at all */
    s = stats_of(a);
    cr_assert_eq(s.num_ooms, 1);
    cr_assert_eq(s.num_alloc_retries, 2);
    check_x(a);
    free_ok(a, A);
    free_ok(a, C);
    free_ok(a, D);
    finish_x(a);
}

/* Handles held unmapped count in the fragmentation figures as they do in
 * reserved_bytes. Under a 64 MiB cap, full (A, B, C of 20 MiB, E of 4 MiB,
 * in 2 MiB handles), B freed: a small request needs a 2 MiB small-pool
 * range, which the cap refuses, so B's 10 handles are unmapped; one maps
 * the small range and 9 (18 MiB) stay held. */
Test(expandable, fragmentation_counts_unmapped_handles)
{
    cca_allocator_t *a = make_alloc("expandable_segments:True,memory_limit_mb:64");
    void *A = alloc_ok(a, 20 * MiB, 0), *B = alloc_ok(a, 20 * MiB, 0), *C = alloc_ok(a, 20 * MiB, 0);
    void *E = alloc_ok(a, 4 * MiB, 0);
    free_ok(a, B);
    void *q = alloc_ok(a, 1000, 0);
    cca_stats_t s = stats_of(a);
    ASSERT_STAT(s, reserved_bytes, CCA_POOL_ALL, 64 * MiB);
    cr_assert_eq(s.unmapped_bytes.current, (int64_t)(18 * MiB));
    cr_assert_eq(s.num_device_free, 10);
    cca_frag_t f;
    cr_assert_eq(cca_get_fragmentation(a, &f), CCA_OK);
    cr_assert_eq(f.reserved, 64 * MiB, "reserved %zu, as reserved_bytes", f.reserved);
    cr_assert_eq(f.unmapped, 18 * MiB);
    cr_assert_eq(f.allocated, 44 * MiB + 1024);
    cr_assert_eq(f.active, 44 * MiB + 1024);
    cr_assert_eq(f.free_cached, 20 * MiB - 1024, "free_cached %zu: the small range's rest and the held handles", f.free_cached);
    cr_assert_eq(f.largest_free, 2 * MiB - 1024);
    cr_assert_eq(f.segments, 3, "[A] hole [C E], the small range");
    double util = (44.0 * MiB + 1024) / (64.0 * MiB), ext = 1.0 - 18.0 * MiB / (20.0 * MiB - 1024);
    cr_assert(f.utilization > util - 1e-12 && f.utilization < util + 1e-12, "utilization %g, expected %g", f.utilization, util);
    cr_assert(f.external_fragmentation > ext - 1e-12 && f.external_fragmentation < ext + 1e-12,
              "external_fragmentation %g, expected %g: the held handles map as one piece", f.external_fragmentation, ext);
    check_x(a);
    free_ok(a, A);
    free_ok(a, C);
    free_ok(a, E);
    free_ok(a, q);
    finish_x(a);
}

/* Plenty of memory: empty_cache unmaps a free handle in the middle (two
 * ranges); growing fills the hole and joins them, and a new range right
 * below one (when that needs fewer new bytes than growing above) joins it. */
Test(expandable, holes_fill_and_join)
{
    cca_allocator_t *a = make_alloc("expandable_segments:True");
    void *A = alloc_ok(a, 20 * MiB, 0), *B = alloc_ok(a, 20 * MiB, 0), *C = alloc_ok(a, 20 * MiB, 0);
    cca_stats_t s = stats_of(a);
    cr_assert_eq(s.num_handle_create, 3, "one handle per growth while memory is plentiful");
    free_ok(a, B);
    cr_assert_eq(cca_empty_cache(a), CCA_OK);
    s = stats_of(a);
    ASSERT_STAT(s, segment, CCA_POOL_ALL, 2);
    ASSERT_STAT(s, reserved_bytes, CCA_POOL_ALL, 40 * MiB);
    cr_assert_eq(s.num_device_free, 1);
    cr_assert_eq(s.num_handle_release, 1);
    check_x(a);
    void *E = alloc_ok(a, 20 * MiB, 0);               /* into the hole: one range again */
    cr_assert_eq(E, B);
    s = stats_of(a);
    ASSERT_STAT(s, segment, CCA_POOL_ALL, 1);
    check_x(a);
    free_ok(a, A);
    cr_assert_eq(cca_empty_cache(a), CCA_OK);
    s = stats_of(a);
    ASSERT_STAT(s, segment, CCA_POOL_ALL, 1);
    ASSERT_STAT(s, reserved_bytes, CCA_POOL_ALL, 40 * MiB);
    free_ok(a, E);                                    /* [hole][E free][C]: 10 MiB below E's block make 30 */
    void *G = alloc_ok(a, 30 * MiB, 0);
    cr_assert_eq((char *)G, (char *)A + 10 * MiB);
    s = stats_of(a);
    ASSERT_STAT(s, segment, CCA_POOL_ALL, 1);
    ASSERT_STAT(s, reserved_bytes, CCA_POOL_ALL, 50 * MiB);
    check_x(a);
    free_ok(a, G);
    free_ok(a, C);
    finish_x(a);
}

/* Memory freed on one stream serves another once memory is short: its
 * handles are unmapped there and mapped here (a cache without expandable
 * segments says "stranded"). */
Test(expandable, memory_moves_between_streams)
{
    cca_sim_set_capacity(0, 64 * MiB);
    cudaStream_t s1, s2;
    cr_assert_eq(cudaStreamCreate(&s1), cudaSuccess);
    cr_assert_eq(cudaStreamCreate(&s2), cudaSuccess);
    cca_allocator_t *a = make_alloc("expandable_segments:True");
    void *p = alloc_ok(a, 40 * MiB, s1);
    free_ok(a, p);
    void *q = alloc_ok(a, 40 * MiB, s2);
    cca_stats_t s = stats_of(a);
    ASSERT_STAT(s, reserved_bytes, CCA_POOL_ALL, 40 * MiB);
    cr_assert_eq(s.num_handle_create, s.num_handle_release + (int64_t)cca_sim_live_handles(0));
    cr_assert_eq(s.num_alloc_retries, 1);
    check_x(a);
    free_ok(a, q);
    finish_x(a);
    cudaStreamDestroy(s1);
    cudaStreamDestroy(s2);

    cca_sim_reset();                                  /* the same without: stranded */
    cca_sim_set_capacity(0, 64 * MiB);
    cr_assert_eq(cudaStreamCreate(&s1), cudaSuccess);
    cr_assert_eq(cudaStreamCreate(&s2), cudaSuccess);
    a = make_alloc("");
    p = alloc_ok(a, 40 * MiB, s1);
    free_ok(a, p);
    q = alloc_ok(a, 40 * MiB, s2);                    /* the default releases the cached segment and retries */
    free_ok(a, q);
    finish(a);
}

/* release_before_grow unmaps the growing stream's own holes (free handles
 * between live blocks) before the reserved peak would grow: never another
 * stream's (moving them would cost an unmap and a map on both sides every
 * step: thrash), nor a free end of a range, where the growth maps next. */
Test(expandable, release_before_grow_unmaps_the_streams_own)
{
    cudaStream_t s1;
    cr_assert_eq(cudaStreamCreate(&s1), cudaSuccess);
    cca_allocator_t *a = make_alloc("expandable_segments:True,release_before_grow:True");
    void *p = alloc_ok(a, 20 * MiB, s1);
    void *q1 = alloc_ok(a, 20 * MiB, 0), *q2 = alloc_ok(a, 20 * MiB, 0), *q3 = alloc_ok(a, 20 * MiB, 0);
    free_ok(a, p);                                    /* 20 MiB free on s1 */
    free_ok(a, q2);                                   /* a 20 MiB hole on the default stream; 80 the peak */
    void *r = alloc_ok(a, 30 * MiB, 0);
    cca_stats_t s = stats_of(a);
    cr_assert_eq(s.num_device_free, 1, "the default stream's hole, not s1's free range");
    cr_assert_eq(s.num_handle_release, 0);
    ASSERT_STAT(s, reserved_bytes, CCA_POOL_ALL, 90 * MiB);
    cr_assert_eq(s.unmapped_bytes.current, 0, "the unmapped handle is mapped again");
    check_x(a);
    void *t = alloc_ok(a, 20 * MiB, s1);              /* s1's cache is still there */
    cr_assert_eq(t, p);
    free_ok(a, q3);                                   /* a free end: kept mapped, the growth uses it */
    void *u = alloc_ok(a, 60 * MiB, 0);
    s = stats_of(a);
    cr_assert_eq(s.num_device_free, 1);
    check_x(a);
    free_ok(a, u);
    free_ok(a, t);
    free_ok(a, q1);
    free_ok(a, r);
    finish_x(a);
    cudaStreamDestroy(s1);

    cca_sim_reset();                                  /* memory not plentiful (free < 4x held): nothing unmapped */
    cca_sim_set_capacity(0, 150 * MiB);
    a = make_alloc("expandable_segments:True,release_before_grow:True");
    q1 = alloc_ok(a, 20 * MiB, 0);
    q2 = alloc_ok(a, 20 * MiB, 0);
    q3 = alloc_ok(a, 20 * MiB, 0);
    free_ok(a, q2);                                   /* a hole, as above */
    r = alloc_ok(a, 30 * MiB, 0);
    s = stats_of(a);
    cr_assert_eq(s.num_device_free, 0);
    check_x(a);
    free_ok(a, q1);
    free_ok(a, q3);
    free_ok(a, r);
    finish_x(a);
}

/* Reservations are per device: 16 streams x 2 pools share one. */
Test(expandable, one_reservation_for_many_streams)
{
    cca_sim_set_capacity(0, 8 * GiB);
    cca_sim_set_va_limit(32 * GiB);                  /* room for two reservations of 2 x 8 GiB, not for 32 */
    cca_allocator_t *a = make_alloc("expandable_segments:True");
    cudaStream_t st[16];
    void *p[16][2];
    for (int i = 0; i < 16; i++) {
        cr_assert_eq(cudaStreamCreate(&st[i]), cudaSuccess);
        p[i][0] = alloc_ok(a, 4096, st[i]);
        p[i][1] = alloc_ok(a, 64 * MiB, st[i]);
    }
    cr_assert_eq(cca_sim_va_reserved(), 16 * GiB);
    cca_stats_t s = stats_of(a);
    ASSERT_STAT(s, segment, CCA_POOL_ALL, 32);
    check_x(a);
    for (int i = 0; i < 16; i++) {                    /* each stream grows in place, above or below its range */
        void *more = alloc_ok(a, 64 * MiB, st[i]);
        cr_assert((char *)more == (char *)p[i][1] + 64 * MiB || (char *)more + 64 * MiB == (char *)p[i][1]);
        free_ok(a, more);
    }
    s = stats_of(a);
    ASSERT_STAT(s, segment, CCA_POOL_ALL, 32);
    for (int i = 0; i < 16; i++) {
        free_ok(a, p[i][0]);
        free_ok(a, p[i][1]);
    }
    finish_x(a);
    for (int i = 0; i < 16; i++) cudaStreamDestroy(st[i]);
    cca_sim_set_va_limit(64ull << 40);
}

/* pytorch issue 123548: with max_split_size_mb and expandable segments,
 * A (91 MiB) and B (45.5 MiB), a 2 MiB block that stays, then A and B
 * freed - 100 cycles. PyTorch's reserved grows by ~140 MiB a cycle; here
 * the free blocks are reused (max_split_size does not apply inside
 * expandable segments). */
Test(expandable, pytorch_123548_stays_bounded)
{
    cca_allocator_t *a = make_alloc("preset:expandable,max_split_size_mb:128");
    void *keep[100];
    for (int i = 0; i < 100; i++) {
        void *A = alloc_ok(a, 91 * MiB, 0), *B = alloc_ok(a, 91 * MiB / 2, 0);
        keep[i] = alloc_ok(a, 2 * MiB, 0);
        free_ok(a, A);
        free_ok(a, B);
    }
    cca_stats_t s = stats_of(a);
    cr_assert_lt(s.reserved_bytes[CCA_POOL_ALL].peak, 500 * (int64_t)MiB, "reserved peak %lld",
                 (long long)s.reserved_bytes[CCA_POOL_ALL].peak);
    ASSERT_STAT(s, allocated_bytes, CCA_POOL_ALL, 200 * MiB);
    check_x(a);
    for (int i = 0; i < 100; i++) free_ok(a, keep[i]);
    finish_x(a);
}

/* cca_destroy gives everything back, live blocks included. */
Test(expandable, destroy_returns_everything)
{
    cca_allocator_t *a = make_alloc("expandable_segments:True");
    cudaStream_t s1;
    cr_assert_eq(cudaStreamCreate(&s1), cudaSuccess);
    for (int i = 0; i < 20; i++) alloc_ok(a, (size_t)(i + 1) * 3 * MiB + 512, i % 2 ? s1 : 0);
    alloc_ok(a, 100, 0);
    check_x(a);
    finish_x(a);
    cudaStreamDestroy(s1);
}

/* One-shot faults in every driver call leave the allocator usable and
 * consistent, and lose nothing. */
static const cca_sim_api_t vmm_apis[] = { CCA_SIM_MEM_CREATE, CCA_SIM_MEM_MAP, CCA_SIM_MEM_SET_ACCESS, CCA_SIM_MEM_UNMAP,
                                          CCA_SIM_MEM_RELEASE, CCA_SIM_MEM_ADDRESS_RESERVE, CCA_SIM_MEM_GET_ACCESS };
static const cudaError_t fault_codes[] = { cudaErrorMemoryAllocation, cudaErrorInvalidValue };

Test(expandable, faults_in_every_driver_call)
{
    for (size_t f = 0; f < sizeof vmm_apis / sizeof vmm_apis[0]; f++)
        for (size_t c = 0; c < 2; c++)
            for (int nth = 1; nth <= 3; nth++) {
                cca_sim_reset();
                cca_allocator_t *a = make_alloc("expandable_segments:True,memory_limit_mb:48");
                void *keep = alloc_ok(a, 10 * MiB, 0);
                void *gone = alloc_ok(a, 20 * MiB, 0);
                free_ok(a, gone);
                cca_sim_fail(vmm_apis[f], (unsigned long)nth - 1, fault_codes[c]);
                void *p = NULL;                       /* needs the free handles unmapped: every call on the way */
                cca_status_t st = cca_malloc(a, &p, 30 * MiB, 0);
                cr_assert(st == CCA_OK || st == CCA_ERROR_OUT_OF_MEMORY || st == CCA_ERROR_CUDA, "api %d: %s",
                          vmm_apis[f], cca_status_string(st));
                cr_assert_eq(cudaGetLastError(), cudaSuccess);
                cca_status_t chk = cca_check(a);      /* cuMemGetAccess may be the faulted call */
                if (chk != CCA_OK) {                  /* the driver's failure said as one, not as corruption */
                    cr_assert_eq(vmm_apis[f], CCA_SIM_MEM_GET_ACCESS, "%s", cca_last_error_string());
                    cr_assert_eq(chk, CCA_ERROR_CUDA, "%s", cca_status_string(chk));
                }
                cca_sim_fail(vmm_apis[f], 0, cudaSuccess);   /* disarm, if it did not fire */
                if (p) free_ok(a, p);
                cr_assert_eq(cca_empty_cache(a), CCA_OK);
                void *again = alloc_ok(a, 30 * MiB, 0);   /* usable */
                free_ok(a, again);
                free_ok(a, keep);
                cr_assert_eq(cca_empty_cache(a), CCA_OK);
                check_x(a);
                cca_destroy(a);
                cr_assert_eq(cca_sim_live_handles(0), 0, "api %d nth %d: a handle was lost", vmm_apis[f], nth);
                cr_assert_eq(cca_sim_va_reserved(), 0);
                cr_assert_eq(cca_sim_used_bytes(0), 0);
            }
}

Test(expandable, create_fails_cleanly_without_the_driver_calls)
{
    cca_sim_fail(CCA_SIM_GET_DRIVER_ENTRY_POINT, 0, cudaErrorInvalidValue);
    cca_config_t cfg;
    cca_config_init(&cfg);
    cfg.expandable_segments = 1;
    cca_allocator_t *a = NULL;
    cr_assert_eq(cca_create(&cfg, &a), CCA_ERROR_CUDA);
    cr_assert_null(a);
    cr_assert(strstr(cca_last_error_string(), "expandable_segments"), "%s", cca_last_error_string());
    cr_assert_eq(cudaGetLastError(), cudaSuccess);
    cr_assert_eq(cca_create(&cfg, &a), CCA_OK);       /* the fault was one-shot */
    finish_x(a);
}

/* ---- cca_destroy: every cuMemUnmap, cuMemRelease and cuMemAddressFree
 * tried 4 times (the call and 3 retries); what still fails is named in
 * cca_last_error_string(), "" otherwise. ---- */

/* On the default 80 GiB device: one reservation of 160 GiB, one range of a
 * 10 MiB handle (live) and a 20 MiB one above it (free), which
 * cca_destroy unmaps first. A failed call leaves a text behind. */
#define X_RES ((size_t)160 * GiB)
static cca_allocator_t *two_handles(void)
{
    cca_allocator_t *a = make_alloc("expandable_segments:True");
    alloc_ok(a, 10 * MiB, 0);
    free_ok(a, alloc_ok(a, 20 * MiB, 0));
    cca_stats_t s = stats_of(a);
    cr_assert_eq(s.num_handle_create, 2);
    cr_assert_eq(cca_sim_va_reserved(), X_RES);
    cr_assert_eq(cca_free(a, (void *)(uintptr_t)0x1000), CCA_ERROR_INVALID_POINTER);
    cr_assert_neq(cca_last_error_string()[0], 0);
    return a;
}

static const cca_sim_api_t release_apis[] = { CCA_SIM_MEM_RELEASE, CCA_SIM_MEM_ADDRESS_FREE, CCA_SIM_MEM_UNMAP };

Test(expandable, destroy_retries_each_release_call_that_fails_once)
{
    for (size_t f = 0; f < sizeof release_apis / sizeof release_apis[0]; f++)
        for (unsigned long after = 0; after < (release_apis[f] == CCA_SIM_MEM_ADDRESS_FREE ? 1 : 2); after++) {
            cca_sim_reset();
            cca_allocator_t *a = two_handles();
            unsigned long calls = cca_sim_calls(release_apis[f]);
            cca_sim_fail(release_apis[f], after, cudaErrorMemoryAllocation);
            cca_destroy(a);
            const char *name = cca_sim_api_name(release_apis[f]);
            cr_assert_eq(cca_sim_live_handles(0), 0, "%s after %lu: a handle was kept", name, after);
            cr_assert_eq(cca_sim_used_bytes(0), 0, "%s after %lu", name, after);
            cr_assert_eq(cca_sim_va_reserved(), 0, "%s after %lu: address space was kept", name, after);
            cr_assert_eq(cca_sim_calls(release_apis[f]) - calls, release_apis[f] == CCA_SIM_MEM_ADDRESS_FREE ? 2 : 3,
                         "%s after %lu: the calls (one reservation, two handles) and one retry", name, after);
            cr_assert_str_eq(cca_last_error_string(), "", "%s after %lu: everything went back", name, after);
            cr_assert_eq(cudaGetLastError(), cudaSuccess);
        }
}

/* A fault on every try of the first such call: the text names the call and
 * the bytes, and everything else went back. A mapping that cannot be
 * unmapped keeps its reservation (freeing address space that is still
 * mapped would let a later reservation overlap it). */
Test(expandable, destroy_names_what_it_could_not_give_back)
{
    cca_allocator_t *a = two_handles();
    cca_sim_fail_times(CCA_SIM_MEM_UNMAP, 0, 4, cudaErrorMemoryAllocation);
    cca_destroy(a);
    cr_assert_eq(cca_sim_calls(CCA_SIM_MEM_UNMAP), 5, "4 tries of the 20 MiB mapping, 1 of the 10 MiB one");
    cr_assert_eq(cca_sim_calls(CCA_SIM_MEM_RELEASE), 2, "both handles released (the mapped one frees at its unmap)");
    cr_assert_eq(cca_sim_calls(CCA_SIM_MEM_ADDRESS_FREE), 0, "the reservation still holds a mapping");
    cr_assert_eq(cca_sim_live_handles(0), 1);
    cr_assert_eq(cca_sim_used_bytes(0), 20 * MiB, "the 10 MiB handle went back");
    cr_assert_eq(cca_sim_va_reserved(), X_RES);
    cr_assert_str_eq(cca_last_error_string(),
                     "cca_destroy: device 0 kept 20971520 bytes (20.00 MiB) of device memory and 171798691840 bytes "
                     "of address space after 4 tries per call: cuMemUnmap failed for 1 mapping (20971520 bytes): "
                     "CUDA_ERROR_OUT_OF_MEMORY; 1 reservation (171798691840 bytes) not freed: mappings remain in it");
    cca_sim_reset();

    a = two_handles();
    cca_sim_fail_times(CCA_SIM_MEM_RELEASE, 0, 4, cudaErrorInvalidValue);
    cca_destroy(a);
    cr_assert_eq(cca_sim_calls(CCA_SIM_MEM_RELEASE), 5);
    cr_assert_eq(cca_sim_live_handles(0), 1);
    cr_assert_eq(cca_sim_used_bytes(0), 20 * MiB);
    cr_assert_eq(cca_sim_va_reserved(), 0, "nothing is mapped: the reservation went back");
    cr_assert_str_eq(cca_last_error_string(),
                     "cca_destroy: device 0 kept 20971520 bytes (20.00 MiB) of device memory after 4 tries per call: "
                     "cuMemRelease failed for 1 handle (20971520 bytes): CUDA_ERROR_INVALID_VALUE");
    cca_sim_reset();

    a = two_handles();
    cca_sim_fail_times(CCA_SIM_MEM_ADDRESS_FREE, 0, 4, cudaErrorMemoryAllocation);
    cca_destroy(a);
    cr_assert_eq(cca_sim_calls(CCA_SIM_MEM_ADDRESS_FREE), 4);
    cr_assert_eq(cca_sim_live_handles(0), 0);
    cr_assert_eq(cca_sim_used_bytes(0), 0);
    cr_assert_eq(cca_sim_va_reserved(), X_RES);
    cr_assert_str_eq(cca_last_error_string(),
                     "cca_destroy: device 0 kept 171798691840 bytes of address space after 4 tries per call: "
                     "cuMemAddressFree failed for 1 reservation (171798691840 bytes): CUDA_ERROR_OUT_OF_MEMORY");
    cr_assert_eq(cudaGetLastError(), cudaSuccess);
}

/* test_errors.c - bad input and injected CUDA faults: a clear status, and
 * the allocator stays consistent and usable. */
#include <stdio.h>

#include "common.h"

static void setup(void) { cca_sim_reset(); }
TestSuite(errors, .init = setup);

Test(errors, bad_pointers_are_reported_and_change_nothing)
{
    cca_allocator_t *a = make_alloc("");
    char *p = alloc_ok(a, 4 * KiB, NULL);
    cca_stats_t before = figures_of(a);
    cr_assert_eq(cca_free(a, (void *)0x1000), CCA_ERROR_INVALID_POINTER);
    cr_assert(strlen(cca_last_error_string()) > 0);
    cr_assert_eq(cca_free(a, p + 512), CCA_ERROR_INVALID_POINTER, "interior pointer");
    cr_assert_eq(cca_record_stream(a, (void *)0x1000, NULL), CCA_ERROR_INVALID_POINTER);
    cca_stats_t after = figures_of(a);
    cr_assert_eq(memcmp(&before, &after, sizeof before), 0);
    check_ok(a);
    free_ok(a, p);
    cr_assert_eq(cca_free(a, p), CCA_ERROR_INVALID_POINTER, "double free");
    cr_assert_eq(cca_record_stream(a, p, NULL), CCA_ERROR_INVALID_POINTER, "use after free");
    cca_stats_t s = stats_of(a);
    ASSERT_STAT(s, allocation, CCA_POOL_ALL, 0);
    cr_assert_eq(s.allocation[CCA_POOL_ALL].freed, 1);
    cr_assert_eq(cca_free(a, NULL), CCA_OK);
    finish(a);
}

Test(errors, null_arguments)
{
    cca_allocator_t *a = make_alloc("");
    void *p = NULL;
    cca_stats_t s;
    cr_assert_eq(cca_malloc(NULL, &p, 16, NULL), CCA_ERROR_INVALID_ARGUMENT);
    cr_assert_eq(cca_malloc(a, NULL, 16, NULL), CCA_ERROR_INVALID_ARGUMENT);
    cr_assert_eq(cca_free(NULL, p), CCA_ERROR_INVALID_ARGUMENT);
    cr_assert_eq(cca_record_stream(NULL, p, NULL), CCA_ERROR_INVALID_ARGUMENT);
    cr_assert_eq(cca_get_stats(a, NULL), CCA_ERROR_INVALID_ARGUMENT);
    cr_assert_eq(cca_get_stats(NULL, &s), CCA_ERROR_INVALID_ARGUMENT);
    cr_assert_eq(cca_empty_cache(NULL), CCA_ERROR_INVALID_ARGUMENT);
    cr_assert_eq(cca_reset_peak_stats(NULL), CCA_ERROR_INVALID_ARGUMENT);
    cr_assert_eq(cca_reset_accumulated_stats(NULL), CCA_ERROR_INVALID_ARGUMENT);
    cr_assert_eq(cca_check(NULL), CCA_ERROR_INVALID_ARGUMENT);
    cr_assert_eq(cca_create(NULL, NULL), CCA_ERROR_INVALID_ARGUMENT);
    cr_assert_eq(cca_config_parse(NULL, "", NULL, 0), CCA_ERROR_INVALID_ARGUMENT);
    cr_assert_eq(cca_default(0, NULL), CCA_ERROR_INVALID_ARGUMENT);
    cca_destroy(NULL);
    cr_assert_eq(cca_malloc(a, &p, 0, NULL), CCA_OK);
    cr_assert_null(p);
    s = stats_of(a);
    ASSERT_STAT(s, allocation, CCA_POOL_ALL, 0);
    cr_assert_eq(s.allocation[CCA_POOL_ALL].allocated, 0, "size 0 counts nothing");
    cr_assert_str_eq(cca_status_string(CCA_ERROR_OUT_OF_MEMORY), "CCA_ERROR_OUT_OF_MEMORY");
    finish(a);
}

Test(errors, huge_sizes_are_out_of_memory_without_overflow)
{
    cca_allocator_t *a = make_alloc("roundup_power2_divisions:4");
    const size_t sizes[] = { SIZE_MAX, SIZE_MAX - 511, SIZE_MAX / 2 + 1, ((size_t)1 << 62) + 1 };
    for (int i = 0; i < 4; i++) {
        void *p = (void *)1;
        cr_assert_eq(cca_malloc(a, &p, sizes[i], NULL), CCA_ERROR_OUT_OF_MEMORY, "size %zu", sizes[i]);
        cr_assert_null(p);
    }
    cr_assert_eq(cca_sim_calls(CCA_SIM_MALLOC), 0, "nothing that large is asked of the device");
    cca_stats_t s = stats_of(a);
    cr_assert_eq(s.num_ooms, 4);
    ASSERT_STAT(s, reserved_bytes, CCA_POOL_ALL, 0);
    void *p = NULL;
    cr_assert_eq(cca_malloc(a, &p, (size_t)1 << 40, NULL), CCA_ERROR_OUT_OF_MEMORY, "1 TiB on an 80 GiB device");
    cr_assert_eq(cudaGetLastError(), cudaSuccess);
    p = alloc_ok(a, 100, NULL);
    free_ok(a, p);
    finish(a);
}

Test(errors, bad_config_struct)
{
    cca_config_t c;
    cca_allocator_t *a = NULL;
    cca_config_init(&c);
    c.garbage_collection_threshold = 1.5;
    cr_assert_eq(cca_create(&c, &a), CCA_ERROR_INVALID_ARGUMENT);
    cca_config_init(&c);
    c.memory_fraction = -0.1;
    cr_assert_eq(cca_create(&c, &a), CCA_ERROR_INVALID_ARGUMENT);
    cca_config_init(&c);
    c.roundup_power2_divisions[3] = 3;
    cr_assert_eq(cca_create(&c, &a), CCA_ERROR_INVALID_ARGUMENT);
    cca_config_init(&c);
    c.device = -1;
    cr_assert_eq(cca_create(&c, &a), CCA_ERROR_INVALID_ARGUMENT);
    cr_assert_null(a);
}

Test(errors, injected_malloc_faults)
{
    cca_allocator_t *a = make_alloc("");
    void *p = NULL;
    cca_sim_fail(CCA_SIM_MALLOC, 0, cudaErrorInvalidValue);
    cr_assert_eq(cca_malloc(a, &p, 1 * KiB, NULL), CCA_ERROR_CUDA);
    cr_assert(strstr(cca_last_error_string(), "cudaMalloc") != NULL);
    cr_assert_eq(cudaGetLastError(), cudaSuccess);
    cca_stats_t s = stats_of(a);
    ASSERT_STAT(s, reserved_bytes, CCA_POOL_ALL, 0);
    cr_assert_eq(s.num_ooms, 0);
    check_ok(a);
    /* a transient out-of-memory is recovered by the retry */
    cca_sim_fail(CCA_SIM_MALLOC, 0, cudaErrorMemoryAllocation);
    p = alloc_ok(a, 1 * KiB, NULL);
    s = stats_of(a);
    cr_assert_eq(s.num_alloc_retries, 1);
    cr_assert_eq(s.num_ooms, 0);
    free_ok(a, p);
    finish(a);
}

Test(errors, injected_free_fault_keeps_segment_cached)
{
    cca_allocator_t *a = make_alloc("");
    void *p = alloc_ok(a, 3 * MiB, NULL);
    free_ok(a, p);
    cca_sim_fail(CCA_SIM_FREE, 0, cudaErrorInvalidValue);
    cr_assert_eq(cca_empty_cache(a), CCA_OK);
    cca_stats_t s = stats_of(a);
    ASSERT_STAT(s, reserved_bytes, CCA_POOL_ALL, 20 * MiB);
    cr_assert_eq(s.num_device_free, 0);
    cr_assert_eq(cudaGetLastError(), cudaSuccess);
    check_ok(a);
    cr_assert_eq(cca_empty_cache(a), CCA_OK);
    s = stats_of(a);
    ASSERT_STAT(s, reserved_bytes, CCA_POOL_ALL, 0);
    finish(a);
}

static void cross_stream_free_with_fault(cca_sim_api_t api)
{
    cca_allocator_t *a = make_alloc("");
    cudaStream_t s2;
    cudaStreamCreate(&s2);
    void *p = alloc_ok(a, 8 * KiB, NULL);
    cr_assert_eq(cca_record_stream(a, p, s2), CCA_OK);
    cca_sim_stream_hold(s2);
    cca_sim_fail(api, 0, cudaErrorInvalidValue);
    free_ok(a, p);
    /* without an event the free waited for s2 instead: nothing pending */
    cca_stats_t s = stats_of(a);
    ASSERT_STAT(s, active, CCA_POOL_ALL, 0);
    cr_assert_eq(cudaGetLastError(), cudaSuccess);
    check_ok(a);
    cca_sim_stream_release(s2);
    finish(a);
    cudaStreamDestroy(s2);
}

Test(errors, injected_event_create_fault) { cross_stream_free_with_fault(CCA_SIM_EVENT_CREATE); }
Test(errors, injected_event_record_fault) { cross_stream_free_with_fault(CCA_SIM_EVENT_RECORD); }

Test(errors, injected_event_query_fault_frees_the_block)
{
    cca_allocator_t *a = make_alloc("");
    cudaStream_t s2;
    cudaStreamCreate(&s2);
    void *p = alloc_ok(a, 8 * KiB, NULL);
    cca_record_stream(a, p, s2);
    cca_sim_stream_hold(s2);
    free_ok(a, p);
    cca_sim_fail(CCA_SIM_EVENT_QUERY, 0, cudaErrorInvalidValue);
    unsigned long syncs = cca_sim_calls(CCA_SIM_DEVICE_SYNCHRONIZE);
    void *q = alloc_ok(a, 8 * KiB, NULL);
    cr_assert_eq(q, p, "a failed query is not left pending forever");
    cr_assert_eq(cca_sim_calls(CCA_SIM_DEVICE_SYNCHRONIZE), syncs + 1, "the device was waited for first");
    cr_assert_eq(cudaGetLastError(), cudaSuccess);
    free_ok(a, q);
    cca_sim_stream_release(s2);
    finish(a);
    cudaStreamDestroy(s2);
}

Test(errors, injected_faults_in_every_api_leave_allocator_usable)
{
    cca_allocator_t *a = make_alloc("memory_limit_mb:200");
    cudaStream_t s2;
    cudaStreamCreate(&s2);
    for (int api = 0; api < CCA_SIM_API_COUNT; api++) {
        for (unsigned long after = 0; after < 3; after++) {
            cca_sim_fail((cca_sim_api_t)api, after, cudaErrorInvalidValue);
            void *p[3] = { 0 };
            const size_t sizes[3] = { 1 * KiB, 3 * MiB, 12 * MiB };
            for (int i = 0; i < 3; i++) {
                cca_status_t s = cca_malloc(a, &p[i], sizes[i], i == 1 ? s2 : NULL);
                cr_assert(s == CCA_OK || s == CCA_ERROR_CUDA || s == CCA_ERROR_OUT_OF_MEMORY);
                if (p[i]) cca_record_stream(a, p[i], i == 1 ? NULL : s2);
            }
            for (int i = 0; i < 3; i++) cr_assert_eq(cca_free(a, p[i]), CCA_OK);
            cca_empty_cache(a);
            check_ok(a);
            cudaGetLastError();
            cca_sim_fail((cca_sim_api_t)api, 1000000, cudaErrorInvalidValue);   /* disarm */
        }
    }
    cr_assert_eq(cca_empty_cache(a), CCA_OK);
    cca_stats_t s = stats_of(a);
    ASSERT_STAT(s, reserved_bytes, CCA_POOL_ALL, 0);
    ASSERT_STAT(s, active, CCA_POOL_ALL, 0);
    finish(a);
    cudaStreamDestroy(s2);
}

Test(errors, mem_get_info_fault_fails_create)
{
    cca_allocator_t *a = NULL;
    cca_sim_fail(CCA_SIM_MEM_GET_INFO, 0, cudaErrorInvalidValue);
    cr_assert_eq(cca_create(NULL, &a), CCA_ERROR_CUDA);
    cr_assert_null(a);
    cr_assert_eq(cudaGetLastError(), cudaSuccess);
    cr_assert_eq(cca_create(NULL, &a), CCA_OK);
    finish(a);
}

/* A machine without a CUDA driver or GPU (the real libcudart answers every
 * call with cudaErrorInsufficientDriver there): each cca call that reaches
 * the runtime fails with CCA_ERROR_CUDA and says so in one phrase; the
 * allocator made before the driver went away keeps what it holds. */
static void assert_no_driver_text(const char *what)
{
    const char *t = cca_last_error_string();
    static const char lead[] = "no CUDA driver or GPU found (or a driver older than, or not matching, this CUDA runtime): ";
    cr_assert(strncmp(t, lead, sizeof lead - 1) == 0, "%s: \"%s\"", what, t);
    cr_assert(strstr(t, "cudaErrorInsufficientDriver") != NULL, "%s names the runtime's error: \"%s\"", what, t);
}

Test(errors, no_driver_or_gpu_says_so)
{
    cca_allocator_t *before = make_alloc("");
    char *kept = alloc_ok(before, 4 * MiB, NULL);
    cca_sim_set_no_driver(1);
    cudaError_t sticky = cudaGetLastError();
    cr_assert_eq(sticky, cudaErrorInsufficientDriver, "the simulator's error is sticky, as the runtime's");

    cca_config_t c;
    cca_config_init(&c);
    cca_allocator_t *a = NULL;
    cr_assert_eq(cca_create(&c, &a), CCA_ERROR_CUDA);
    cr_assert_null(a);
    assert_no_driver_text("cca_create");
    cr_assert_eq(cca_default(0, &a), CCA_ERROR_CUDA);
    assert_no_driver_text("cca_default");
    int dev = 7;
    cr_assert_eq(cca_current_device(&dev), CCA_ERROR_CUDA);
    assert_no_driver_text("cca_current_device");
    size_t f = 1, t = 1;
    cr_assert_eq(cca_mem_get_info(0, &f, &t), CCA_ERROR_CUDA);
    assert_no_driver_text("cca_mem_get_info");
    void *p = NULL;
    cr_assert_eq(cca_malloc(before, &p, 64 * MiB, NULL), CCA_ERROR_CUDA, "a new segment needs the driver");
    assert_no_driver_text("cca_malloc");
    cr_assert_null(p);

    cca_sim_set_no_driver(0);
    (void)cudaGetLastError();                         /* the last failure's error, recorded before */
    cr_assert_eq(cudaGetLastError(), cudaSuccess, "not sticky once the driver is back");
    cca_stats_t s = stats_of(before);
    cr_assert_eq(s.allocated_bytes[CCA_POOL_ALL].current, 4 * MiB, "nothing the caller held was lost");
    check_ok(before);
    free_ok(before, kept);
    char *q = alloc_ok(before, 64 * MiB, NULL);
    free_ok(before, q);
    finish(before);
}

/* A bad pointer's text says which kind it is, where cca can tell. */
Test(errors, bad_pointer_texts_say_which_kind)
{
    cca_allocator_t *a = make_alloc("");
    char *p = alloc_ok(a, 4 * KiB, NULL);
    char *q = alloc_ok(a, 4 * KiB, NULL);
    cr_assert_eq(cca_free(a, (void *)0x1000), CCA_ERROR_INVALID_POINTER);
    cr_assert(strstr(cca_last_error_string(), "cca_free: 0x1000 is not from this allocator") != NULL, "%s",
              cca_last_error_string());
    cr_assert_eq(cca_free(a, p + 512), CCA_ERROR_INVALID_POINTER);
    char want[128];
    snprintf(want, sizeof want, "is inside the block at %p (", (void *)p);
    cr_assert(strstr(cca_last_error_string(), want) != NULL, "%s", cca_last_error_string());
    cr_assert(strstr(cca_last_error_string(), ", 512 in): pass the address cca_malloc gave") != NULL, "%s",
              cca_last_error_string());
    free_ok(a, p);
    cr_assert_eq(cca_free(a, p), CCA_ERROR_INVALID_POINTER);
    cr_assert(strstr(cca_last_error_string(), "is not handed out: freed already, or never given") != NULL, "%s",
              cca_last_error_string());
    cr_assert_eq(cca_record_stream(a, p, NULL), CCA_ERROR_INVALID_POINTER);
    cr_assert(strncmp(cca_last_error_string(), "cca_record_stream: ", 19) == 0, "%s", cca_last_error_string());
    cr_assert(strstr(cca_last_error_string(), "freed already") != NULL, "%s", cca_last_error_string());
    free_ok(a, q);
    check_ok(a);
    finish(a);
}

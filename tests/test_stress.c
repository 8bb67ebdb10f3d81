/* test_stress.c - many threads on own and shared streams; the counters and
 * the consistency walk must still agree at the end. */
#include "common.h"
#include "stress.h"
#include <pthread.h>

Test(stress, threads_on_own_and_shared_streams, .timeout = 120)
{
    cca_sim_reset();
    cr_assert_eq(run_stress(4, 20000), 0);
    cr_assert_eq(cca_sim_live_allocations(0), 0);
    if (__lsan_do_recoverable_leak_check) cr_assert_eq(__lsan_do_recoverable_leak_check(), 0);
}

typedef struct peak_arg {
    cca_allocator_t *a;
    pthread_barrier_t *bar;
    int failures;
} peak_arg_t;

static void *peak_worker(void *p)
{
    peak_arg_t *w = p;
    cudaStream_t s;
    cudaStreamCreate(&s);
    void *x = NULL;
    for (int i = 0; i < 20000; i++) {
        w->failures += cca_malloc(w->a, &x, 3 * MiB, s) != CCA_OK;
        w->failures += cca_free(w->a, x) != CCA_OK;
    }
    w->failures += cca_malloc(w->a, &x, 3 * MiB, s) != CCA_OK;
    pthread_barrier_wait(w->bar);          /* both hold one block */
    pthread_barrier_wait(w->bar);          /* the main thread has looked */
    w->failures += cca_free(w->a, x) != CCA_OK;
    pthread_barrier_wait(w->bar);
    cudaStreamDestroy(s);
    return NULL;
}

/* Each thread counts on its own stream, but peaks are of the sum: exact. */
Test(stress, peaks_are_exact_across_streams, .timeout = 120)
{
    cca_sim_reset();
    cca_allocator_t *a = make_alloc("");
    pthread_barrier_t bar;
    pthread_barrier_init(&bar, NULL, 3);
    peak_arg_t w[2] = { { a, &bar, 0 }, { a, &bar, 0 } };
    pthread_t t[2];
    for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, peak_worker, &w[i]);
    pthread_barrier_wait(&bar);
    cca_stats_t s = stats_of(a);
    ASSERT_STAT(s, allocated_bytes, CCA_POOL_LARGE, 6 * MiB);
    ASSERT_PEAK(s, allocated_bytes, CCA_POOL_LARGE, 6 * MiB);
    ASSERT_PEAK(s, allocation, CCA_POOL_ALL, 2);
    ASSERT_PEAK(s, requested_bytes, CCA_POOL_ALL, 6 * MiB);
    ASSERT_PEAK(s, inactive_split, CCA_POOL_LARGE, 2);
    cr_assert_eq(s.allocation[CCA_POOL_ALL].allocated, 40002);
    check_ok(a);
    pthread_barrier_wait(&bar);
    pthread_barrier_wait(&bar);
    for (int i = 0; i < 2; i++) {
        pthread_join(t[i], NULL);
        cr_assert_eq(w[i].failures, 0);
    }
    s = stats_of(a);
    ASSERT_STAT(s, allocated_bytes, CCA_POOL_ALL, 0);
    ASSERT_PEAK(s, allocated_bytes, CCA_POOL_ALL, 6 * MiB);
    cr_assert_eq(s.allocation[CCA_POOL_ALL].freed, 40002);
    cr_assert_eq(cca_reset_peak_stats(a), CCA_OK);
    s = stats_of(a);
    ASSERT_PEAK(s, allocated_bytes, CCA_POOL_ALL, 0);
    pthread_barrier_destroy(&bar);
    finish(a);
}

/* Blocks of exiting threads' per-thread streams freed by other threads
 * while a janitor empties the cache: nothing lost, nothing left. */
Test(stress, handoff_across_exiting_threads_and_empty_cache, .timeout = 120)
{
    cr_assert_eq(run_handoff(10, 4, 200), 0);
    cr_assert_eq(cca_sim_live_allocations(0), 0);
}

/* The stress threads while history, watches, scopes and tags come and go. */
Test(stress, accounting_churn_under_allocating_threads)
{
    cr_assert_eq(run_accounting_churn(3, 8000), 0);
    cr_assert_eq(cca_sim_live_allocations(0), 0);
}


/* Threads going round a common set of streams: room passing through the
 * shared headroom while others give theirs back and sweep. */
Test(stress, threads_round_a_common_set_of_streams, .timeout = 120)
{
    cr_assert_eq(run_round_robin(3, 8, 40000), 0);
    cr_assert_eq(cca_sim_live_allocations(0), 0);
}

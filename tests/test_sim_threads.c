/* test_sim_threads.c - the simulated device used from several threads at once. */
#include <cca_sim.h>

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "test_sim_util.h"

static void setup(void) { cca_sim_reset(); }

TestSuite(sim_threads, .init = setup);

enum { THREADS = 4, ITERS = 5000, KEEP = 64 };

struct worker { int id; long errors; long not_ready; long misaligned; };

static void *mixed_worker(void *p)
{
    struct worker *w = p;
    cudaStream_t s;
    cudaEvent_t e;
    void *live[KEEP] = { 0 };
    if (cudaStreamCreateWithFlags(&s, w->id % 2 ? cudaStreamNonBlocking : 0) != cudaSuccess) w->errors++;
    if (cudaEventCreateWithFlags(&e, cudaEventDisableTiming) != cudaSuccess) w->errors++;
    for (int i = 0; i < ITERS; i++) {
        int slot = i % KEEP;
        if (live[slot]) {
            if (cudaFree(live[slot]) != cudaSuccess) w->errors++;
            live[slot] = NULL;
        }
        size_t size = (size_t)((i * 7 + w->id) % 13 + 1) * 4096 + (size_t)(i % 3);
        if (cudaMalloc(&live[slot], size) != cudaSuccess) w->errors++;
        if ((uintptr_t)live[slot] % 512) w->misaligned++;
        cudaStream_t on = (i % 3 == 0) ? s : (i % 3 == 1) ? cudaStreamPerThread : NULL;
        if (cudaEventRecord(e, on) != cudaSuccess) w->errors++;
        cudaError_t q = cudaEventQuery(e);
        if (q == cudaErrorNotReady) w->not_ready++;
        else if (q != cudaSuccess) w->errors++;
        if (cudaStreamQuery(s) != cudaSuccess) w->errors++;
        unsigned long long id;
        if (cudaStreamGetId(cudaStreamPerThread, &id) != cudaSuccess) w->errors++;
    }
    for (int k = 0; k < KEEP; k++)
        if (live[k] && cudaFree(live[k]) != cudaSuccess) w->errors++;
    if (cudaEventDestroy(e) != cudaSuccess) w->errors++;
    if (cudaStreamDestroy(s) != cudaSuccess) w->errors++;
    if (cudaGetLastError() != cudaSuccess) w->errors++;
    return NULL;
}

Test(sim_threads, malloc_free_record_query_from_four_threads, .timeout = 60)
{
    cca_sim_set_capacity(0, GiB);
    pthread_t th[THREADS];
    struct worker w[THREADS];
    for (int i = 0; i < THREADS; i++) {
        w[i] = (struct worker){ .id = i };
        cr_assert_eq(pthread_create(&th[i], NULL, mixed_worker, &w[i]), 0);
    }
    for (int i = 0; i < THREADS; i++) pthread_join(th[i], NULL);
    for (int i = 0; i < THREADS; i++) {
        cr_assert_eq(w[i].errors, 0, "thread %d: %ld errors", i, w[i].errors);
        cr_assert_eq(w[i].not_ready, 0, "nothing is held");
        cr_assert_eq(w[i].misaligned, 0);
    }
    cr_assert_eq(cca_sim_live_allocations(0), 0);
    cr_assert_eq(cca_sim_used_bytes(0), 0);
    size_t f, t;
    CUDA_OK(cudaMemGetInfo(&f, &t));
    cr_assert_eq(f, GiB);
    cr_assert_eq(t, GiB);
    cr_assert_eq(cca_sim_calls(CCA_SIM_MALLOC), (unsigned long)THREADS * ITERS);
    cr_assert_eq(cca_sim_calls(CCA_SIM_FREE), (unsigned long)THREADS * ITERS);
    cr_assert_eq(cca_sim_calls(CCA_SIM_EVENT_RECORD), (unsigned long)THREADS * ITERS);
    cr_assert_eq(cca_sim_calls(CCA_SIM_EVENT_QUERY), (unsigned long)THREADS * ITERS);
    cr_assert_eq(cca_sim_calls(CCA_SIM_STREAM_CREATE), THREADS);
    cca_sim_reset();
    NO_LEAKS();
}

struct oom_worker { int ok, refused, other; void *p[32]; };

static void *oom_thread(void *arg)
{
    struct oom_worker *w = arg;
    for (int i = 0; i < 32; i++) {
        void *q = NULL;
        cudaError_t e = cudaMalloc(&q, MiB);
        if (e == cudaSuccess) w->p[w->ok++] = q;
        else if (e == cudaErrorMemoryAllocation) w->refused++;
        else w->other++;
    }
    (void)cudaGetLastError();
    return NULL;
}

Test(sim_threads, capacity_is_exact_under_contention)
{
    cca_sim_set_capacity(0, 64 * MiB);
    pthread_t th[THREADS];
    struct oom_worker w[THREADS];
    memset(w, 0, sizeof w);
    for (int i = 0; i < THREADS; i++) cr_assert_eq(pthread_create(&th[i], NULL, oom_thread, &w[i]), 0);
    for (int i = 0; i < THREADS; i++) pthread_join(th[i], NULL);
    int ok = 0, refused = 0;
    for (int i = 0; i < THREADS; i++) {
        ok += w[i].ok;
        refused += w[i].refused;
        cr_assert_eq(w[i].other, 0);
    }
    cr_assert_eq(ok, 64);
    cr_assert_eq(refused, THREADS * 32 - 64);
    size_t f, t;
    CUDA_OK(cudaMemGetInfo(&f, &t));
    cr_assert_eq(f, 0);
    for (int i = 0; i < THREADS; i++)
        for (int k = 0; k < w[i].ok; k++) CUDA_OK(cudaFree(w[i].p[k]));
    CUDA_OK(cudaMemGetInfo(&f, &t));
    cr_assert_eq(f, 64 * MiB);
}

struct hold_shared {
    cudaStream_t s;
    cudaEvent_t e;
    atomic_int stop;
    atomic_long errors, not_ready, ready;
};

static void *holder_thread(void *p)
{
    struct hold_shared *h = p;
    for (int i = 0; i < 3000; i++) {
        cca_sim_stream_hold(h->s);
        if (cudaEventRecord(h->e, h->s) != cudaSuccess) atomic_fetch_add(&h->errors, 1);
        if (i % 5 == 0 && cudaStreamSynchronize(h->s) != cudaSuccess) atomic_fetch_add(&h->errors, 1);
        cca_sim_stream_release(h->s);
    }
    atomic_store(&h->stop, 1);
    return NULL;
}

static void *querier_thread(void *p)
{
    struct hold_shared *h = p;
    while (!atomic_load(&h->stop)) {
        cudaError_t e = cudaEventQuery(h->e);
        if (e == cudaErrorNotReady) atomic_fetch_add(&h->not_ready, 1);
        else if (e == cudaSuccess) atomic_fetch_add(&h->ready, 1);
        else atomic_fetch_add(&h->errors, 1);
        cudaStream_t own;
        cudaEvent_t ev;
        if (cudaStreamCreate(&own) != cudaSuccess || cudaEventCreate(&ev) != cudaSuccess) {
            atomic_fetch_add(&h->errors, 1);
            continue;
        }
        if (cudaStreamWaitEvent(own, h->e, 0) != cudaSuccess) atomic_fetch_add(&h->errors, 1);
        if (cudaEventRecord(ev, own) != cudaSuccess) atomic_fetch_add(&h->errors, 1);
        (void)cudaEventQuery(ev);
        if (cudaEventDestroy(ev) != cudaSuccess || cudaStreamDestroy(own) != cudaSuccess)
            atomic_fetch_add(&h->errors, 1);
    }
    return NULL;
}

Test(sim_threads, holds_and_queries_from_several_threads, .timeout = 60)
{
    struct hold_shared h = { 0 };
    CUDA_OK(cudaStreamCreate(&h.s));
    CUDA_OK(cudaEventCreate(&h.e));
    pthread_t q[3], hd;
    for (int i = 0; i < 3; i++) cr_assert_eq(pthread_create(&q[i], NULL, querier_thread, &h), 0);
    cr_assert_eq(pthread_create(&hd, NULL, holder_thread, &h), 0);
    pthread_join(hd, NULL);
    for (int i = 0; i < 3; i++) pthread_join(q[i], NULL);
    cr_assert_eq(atomic_load(&h.errors), 0);
    CUDA_OK(cudaEventQuery(h.e));
    CUDA_OK(cudaStreamQuery(h.s));
    CUDA_OK(cudaDeviceSynchronize());
    cr_assert_eq(cca_sim_calls(CCA_SIM_EVENT_RECORD) - 3000, cca_sim_calls(CCA_SIM_STREAM_WAIT_EVENT));
    cca_sim_reset();
    NO_LEAKS();
}

/* stress.h - threads allocating and freeing random sizes on their own and
 * on a shared stream, with cross-stream uses; shared by the Criterion suite
 * and the plain ThreadSanitizer program. Returns the number of failures. */
#ifndef CCA_STRESS_H
#define CCA_STRESS_H

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include "cca.h"

#define STRESS_LIVE 64

typedef struct stress_arg {
    cca_allocator_t *a;
    cudaStream_t own, shared;
    uint64_t seed;
    int iters, failures;
} stress_arg_t;

static uint64_t stress_rand(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static size_t stress_size(uint64_t *s)
{
    int shift = 9 + (int)(stress_rand(s) % 16);             /* 512 B .. 16 MiB, log-uniform */
    return ((size_t)1 << shift) + stress_rand(s) % ((size_t)1 << shift);
}

static void *stress_thread(void *p)
{
    stress_arg_t *t = p;
    void *live[STRESS_LIVE] = { 0 };
    for (int i = 0; i < t->iters; i++) {
        int slot = (int)(stress_rand(&t->seed) % STRESS_LIVE);
        if (live[slot]) {
            if (stress_rand(&t->seed) % 8 == 0)
                t->failures += cca_record_stream(t->a, live[slot], t->own) != CCA_OK;
            t->failures += cca_free(t->a, live[slot]) != CCA_OK;
            live[slot] = NULL;
        } else {
            cudaStream_t s = stress_rand(&t->seed) % 2 ? t->own : t->shared;
            cca_status_t st = cca_malloc(t->a, &live[slot], stress_size(&t->seed), s);
            t->failures += st != CCA_OK;
            if (st == CCA_OK && stress_rand(&t->seed) % 8 == 0)
                t->failures += cca_record_stream(t->a, live[slot], t->shared) != CCA_OK;
        }
        if (i % 1000 == 999) {
            cca_stats_t s;
            cca_get_stats(t->a, &s);
            t->failures += s.allocated_bytes[CCA_POOL_ALL].current > s.reserved_bytes[CCA_POOL_ALL].current;
        }
    }
    for (int i = 0; i < STRESS_LIVE; i++) t->failures += cca_free(t->a, live[i]) != CCA_OK;
    return NULL;
}

/* Runs `threads` threads; then checks that nothing is left allocated and
 * that emptying the cache returns every byte. */
static int run_stress(int threads, int iters)
{
    cca_allocator_t *a = NULL;
    if (cca_create(NULL, &a) != CCA_OK) return 1;
    cudaStream_t shared;
    cudaStreamCreate(&shared);
    stress_arg_t args[16];
    pthread_t tid[16];
    int failures = 0;
    for (int i = 0; i < threads; i++) {
        args[i] = (stress_arg_t){ a, NULL, shared, 0x9E3779B97F4A7C15ull * (uint64_t)(i + 1), iters, 0 };
        cudaStreamCreate(&args[i].own);
        pthread_create(&tid[i], NULL, stress_thread, &args[i]);
    }
    for (int i = 0; i < threads; i++) {
        pthread_join(tid[i], NULL);
        failures += args[i].failures;
    }
    if (cca_check(a) != CCA_OK) {
        fprintf(stderr, "stress: %s\n", cca_last_error_string());
        failures++;
    }
    cca_stats_t s;
    cca_get_stats(a, &s);
    failures += s.allocation[CCA_POOL_ALL].current != 0;
    failures += s.allocation[CCA_POOL_ALL].allocated != (int64_t)s.allocation[CCA_POOL_ALL].freed;
    cca_empty_cache(a);
    cca_get_stats(a, &s);
    failures += s.reserved_bytes[CCA_POOL_ALL].current != 0;
    failures += cca_check(a) != CCA_OK;
    cca_destroy(a);
    for (int i = 0; i < threads; i++) cudaStreamDestroy(args[i].own);
    cudaStreamDestroy(shared);
    return failures;
}

#endif

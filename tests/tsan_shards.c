/* tsan_shards.c - for ThreadSanitizer (suite 'tsan'; written by a
 * reviewer of the shards): rounds of four threads allocating on one
 * stream (they crowd it, so most get a record of their own: a shard),
 * handing blocks to each other, recording uses, exiting; every third
 * round the stream is retired for a new one; a janitor reads the stats,
 * runs cca_check and empties the cache meanwhile. Fails on any failed
 * call or check, or if no thread got a shard. Prints the figures. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include "cca_sim.h"
#include "internal.h"

#define SLOTS 64
static cca_allocator_t *A;
static _Atomic(cudaStream_t) S;
static void *_Atomic slot[SLOTS];
static _Atomic int stop, fails, maxrec, sharded;

static void *worker(void *arg)
{
    uint64_t seed = (uintptr_t)arg * 0x9E3779B97F4A7C15ull + 1;
    for (int i = 0; i < 100000; i++) {
        seed ^= seed << 13; seed ^= seed >> 7; seed ^= seed << 17;
        cudaStream_t s = atomic_load(&S);
        void *p = NULL;
        if (cca_malloc(A, &p, 64 * 1024 + (seed % 4) * 4096, s) != CCA_OK) { atomic_fetch_add(&fails, 1); continue; }
        if (seed % 16 == 0) {                               /* hand off */
            void *old = atomic_exchange(&slot[seed / 16 % SLOTS], p);
            if (old && cca_free(A, old) != CCA_OK) atomic_fetch_add(&fails, 1);
        } else if (seed % 64 == 1) {
            cca_record_stream(A, p, s);
            if (cca_free(A, p) != CCA_OK) atomic_fetch_add(&fails, 1);
        } else if (cca_free(A, p) != CCA_OK) atomic_fetch_add(&fails, 1);
    }
    cudaStream_t s = atomic_load(&S);
    cca_stream_t *st = _cca_stream_cached(A, _cca_stream_key(0, s));
    if (st && st->shard) atomic_fetch_add(&sharded, 1);
    return NULL;
}

static void *janitor(void *arg)
{
    (void)arg;
    int n = 0;
    while (!atomic_load(&stop)) {
        cca_stats_t st;
        cca_get_stats(A, &st);
        if (n % 7 == 0 && cca_check(A) != CCA_OK) { fprintf(stderr, "check: %s\n", cca_last_error_string()); atomic_fetch_add(&fails, 1); }
        if (n % 13 == 0) cca_empty_cache(A);
        n++;
        struct timespec t = { 0, 2000000 };
        nanosleep(&t, NULL);
    }
    return NULL;
}

int main(void)
{
    cca_sim_reset();
    if (cca_create(NULL, &A) != CCA_OK) return 1;
    cudaStream_t s0;
    cudaStreamCreate(&s0);
    atomic_store(&S, s0);
    pthread_t jan;
    pthread_create(&jan, NULL, janitor, NULL);
    for (int r = 0; r < 12; r++) {
        pthread_t t[4];
        for (int i = 0; i < 4; i++) pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)(r * 4 + i + 1));
        for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
        cca_stats_t st;
        cca_get_stats(A, &st);
        int n = (int)A->n_streams;                     /* racy read, reporting only, after all-locked */
        if (n > atomic_load(&maxrec)) atomic_store(&maxrec, n);
        if (r % 3 == 2) {                              /* retire the stream, a new one */
            cudaStream_t old = atomic_load(&S), nw;
            cudaStreamCreate(&nw);
            atomic_store(&S, nw);
            cca_stream_retire(A, old);
            cudaStreamDestroy(old);
        }
    }
    atomic_store(&stop, 1);
    pthread_join(jan, NULL);
    for (int k = 0; k < SLOTS; k++) { void *p = atomic_exchange(&slot[k], NULL); if (p) cca_free(A, p); }
    if (cca_check(A) != CCA_OK) { fprintf(stderr, "final check: %s\n", cca_last_error_string()); fails++; }
    cca_empty_cache(A);
    cca_stats_t st;
    cca_get_stats(A, &st);
    printf("peak reserved %lld, retries %lld, syncs %lld, sharded threads %d, max records %d, allocation %lld reserved %lld, fails %d\n", (long long)st.reserved_bytes[0].peak, (long long)st.num_alloc_retries, (long long)st.num_sync_all_streams, atomic_load(&sharded), atomic_load(&maxrec),
           (long long)st.allocation[0].current, (long long)st.reserved_bytes[0].current, atomic_load(&fails));
    cca_destroy(A);
    if (atomic_load(&sharded) == 0) {
        fprintf(stderr, "no thread got a record of its own: nothing here tested shards\n");
        return 1;
    }
    return atomic_load(&fails) != 0;
}

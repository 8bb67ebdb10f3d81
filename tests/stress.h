/* stress.h - threads allocating and freeing random sizes on their own and
 * on a shared stream, with cross-stream uses; shared by the Criterion suite
 * and the plain ThreadSanitizer program. Returns the number of failures. */
#ifndef CCA_STRESS_H
#define CCA_STRESS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
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

/* ---- hand-off: blocks allocated on short-lived threads' per-thread
 * streams, freed (and recorded on another stream) by other threads, while
 * a janitor empties the cache: the address map read without a lock races
 * with segments coming and going, stream records with thread exits. */

#define HANDOFF_SLOTS 256

typedef struct handoff {
    cca_allocator_t *a;
    void *_Atomic slot[HANDOFF_SLOTS];
    _Atomic int producers_left, failures;
    cudaStream_t side;
} handoff_t;

typedef struct producer { handoff_t *h; uint64_t seed; int n; } producer_t;

static void *handoff_producer(void *p)
{
    producer_t *pr = p;
    for (int i = 0; i < pr->n; i++) {
        void *ptr = NULL;
        if (cca_malloc(pr->h->a, &ptr, stress_size(&pr->seed) % (4u << 20) + 1, cudaStreamPerThread) != CCA_OK) {
            atomic_fetch_add(&pr->h->failures, 1);
            continue;
        }
        for (unsigned k = (unsigned)(stress_rand(&pr->seed) % HANDOFF_SLOTS);; k = (k + 1) % HANDOFF_SLOTS) {
            void *expect = NULL;
            if (atomic_compare_exchange_strong(&pr->h->slot[k], &expect, ptr)) break;
        }
    }
    return NULL;
}

static void *handoff_consumer(void *p)
{
    handoff_t *h = p;
    uint64_t seed = (uint64_t)(uintptr_t)p | 1;
    for (;;) {
        bool done = atomic_load(&h->producers_left) == 0, any = false;
        for (unsigned k = 0; k < HANDOFF_SLOTS; k++) {
            void *ptr = atomic_exchange(&h->slot[k], NULL);
            if (!ptr) continue;
            any = true;
            if (stress_rand(&seed) % 4 == 0 && cca_record_stream(h->a, ptr, h->side) != CCA_OK)
                atomic_fetch_add(&h->failures, 1);
            if (cca_free(h->a, ptr) != CCA_OK) atomic_fetch_add(&h->failures, 1);
        }
        if (done && !any) return NULL;
    }
}

static void *handoff_janitor(void *p)
{
    handoff_t *h = p;
    while (atomic_load(&h->producers_left) > 0) {
        cca_stats_t s;
        if (cca_empty_cache(h->a) != CCA_OK || cca_get_stats(h->a, &s) != CCA_OK) atomic_fetch_add(&h->failures, 1);
        int host = 0;
        if (cca_free(h->a, &host) != CCA_ERROR_INVALID_POINTER) atomic_fetch_add(&h->failures, 1);
    }
    return NULL;
}

/* `rounds` rounds of `producers` short-lived threads allocating `per` blocks
 * each, two consumers and a janitor throughout. */
static int run_handoff(int rounds, int producers, int per)
{
    static handoff_t h;
    if (cca_create(NULL, &h.a) != CCA_OK) return 1;
    cudaStreamCreate(&h.side);
    for (unsigned k = 0; k < HANDOFF_SLOTS; k++) atomic_init(&h.slot[k], NULL);
    atomic_init(&h.failures, 0);
    atomic_init(&h.producers_left, rounds * producers);
    pthread_t cons[2], jan;
    for (int i = 0; i < 2; i++) pthread_create(&cons[i], NULL, handoff_consumer, &h);
    pthread_create(&jan, NULL, handoff_janitor, &h);
    for (int r = 0; r < rounds; r++) {
        pthread_t tid[16];
        producer_t pr[16];
        for (int i = 0; i < producers && i < 16; i++) {
            pr[i] = (producer_t){ &h, 0x9E3779B97F4A7C15ull * (uint64_t)(r * 16 + i + 1), per };
            pthread_create(&tid[i], NULL, handoff_producer, &pr[i]);
        }
        for (int i = 0; i < producers && i < 16; i++) {
            pthread_join(tid[i], NULL);
            atomic_fetch_sub(&h.producers_left, 1);
        }
    }
    for (int i = 0; i < 2; i++) pthread_join(cons[i], NULL);
    pthread_join(jan, NULL);
    int failures = atomic_load(&h.failures);
    if (cca_check(h.a) != CCA_OK) {
        fprintf(stderr, "handoff: %s\n", cca_last_error_string());
        failures++;
    }
    cca_stats_t s;
    cca_empty_cache(h.a);
    cca_get_stats(h.a, &s);
    failures += s.allocation[CCA_POOL_ALL].current != 0;
    failures += s.reserved_bytes[CCA_POOL_ALL].current != 0;
    cca_destroy(h.a);
    cudaStreamDestroy(h.side);
    return failures;
}


/* ---- accounting churn: the stress threads run while a controller turns
 * the history on, re-bounds, walks and stops it, adds and removes queued
 * watches, opens and closes scopes, sets tags, and a drainer takes the
 * notices: the hook bits and the ring change under the threads' feet. */

typedef struct churn { cca_allocator_t *a; _Atomic bool stop; int failures; uint64_t entries; } churn_t;

static int churn_count(const cca_history_entry_t *e, void *arg)
{
    (void)e;
    ++*(uint64_t *)arg;
    return 0;
}

static void *churn_controller(void *p)
{
    churn_t *c = p;
    uint64_t seed = 0x51ED270B27ull, watch = 0, scope = 0;
    uint32_t tags[3] = { 0 };
    cca_tag_id("churn-a", &tags[0]);
    cca_tag_id("churn-b", &tags[1]);
    for (int i = 0; !atomic_load(&c->stop); i++) {
        switch (stress_rand(&seed) % 6) {
        case 0: c->failures += cca_record_history(c->a, 1 + stress_rand(&seed) % 4096) != CCA_OK; break;
        case 1: c->failures += cca_record_history(c->a, 0) != CCA_OK; break;
        case 2: {
            uint64_t n = 0, dropped = 0;
            c->failures += cca_history_walk(c->a, churn_count, &n, &dropped) != CCA_OK;
            c->entries += n;
            break;
        }
        case 3:
            if (watch) { c->failures += cca_unwatch(c->a, watch) != CCA_OK; watch = 0; }
            else c->failures += cca_watch_threshold_queued(c->a, CCA_WATCH_ALLOCATED, stress_size(&seed) * 8, &watch) != CCA_OK;
            break;
        case 4:
            if (scope) { c->failures += cca_scope_end(c->a, scope, NULL) != CCA_OK; scope = 0; }
            else c->failures += cca_scope_begin(c->a, &scope) != CCA_OK;
            break;
        default: cca_tag_shared(tags[stress_rand(&seed) % 3]); break;
        }
    }
    if (watch) c->failures += cca_unwatch(c->a, watch) != CCA_OK;
    if (scope) c->failures += cca_scope_end(c->a, scope, NULL) != CCA_OK;
    c->failures += cca_record_history(c->a, 0) != CCA_OK;
    cca_tag_shared(0);
    return NULL;
}

static void *churn_drainer(void *p)
{
    churn_t *c = p;
    while (!atomic_load(&c->stop))
        cca_notice_wait(5, NULL, NULL, NULL, NULL, NULL, NULL);
    return NULL;
}

static int run_accounting_churn(int threads, int iters)
{
    cca_allocator_t *a = NULL;
    if (cca_create(NULL, &a) != CCA_OK) return 1;
    cudaStream_t shared;
    cudaStreamCreate(&shared);
    churn_t c = { .a = a };
    pthread_t ctl, drain, tid[16];
    stress_arg_t args[16];
    int failures = 0;
    pthread_create(&ctl, NULL, churn_controller, &c);
    pthread_create(&drain, NULL, churn_drainer, &c);
    for (int i = 0; i < threads; i++) {
        args[i] = (stress_arg_t){ a, NULL, shared, 0xC0FFEEull * (uint64_t)(i + 7), iters, 0 };
        cudaStreamCreate(&args[i].own);
        pthread_create(&tid[i], NULL, stress_thread, &args[i]);
    }
    for (int i = 0; i < threads; i++) {
        pthread_join(tid[i], NULL);
        failures += args[i].failures;
    }
    atomic_store(&c.stop, true);
    pthread_join(ctl, NULL);
    pthread_join(drain, NULL);
    failures += c.failures;
    if (cca_check(a) != CCA_OK) {
        fprintf(stderr, "churn: %s\n", cca_last_error_string());
        failures++;
    }
    cca_stats_t s;
    cca_get_stats(a, &s);
    failures += s.allocation[CCA_POOL_ALL].current != 0;
    cca_empty_cache(a);
    cca_get_stats(a, &s);
    failures += s.reserved_bytes[CCA_POOL_ALL].current != 0;
    cca_destroy(a);
    for (int i = 0; i < threads; i++) cudaStreamDestroy(args[i].own);
    cudaStreamDestroy(shared);
    while (cca_notice_wait(0, NULL, NULL, NULL, NULL, NULL, NULL) != CCA_NOTICE_NONE) {}
    return failures;
}

/* Threads each going round a common set of streams (few live blocks, no
 * calls that go all locked until the end): room passes between streams
 * through the shared headroom while other threads give theirs back and
 * sweep (counters.c). The figures must add up at the end, every lease and
 * the headroom within each peak (cca_check). */
typedef struct rr_arg {
    cca_allocator_t *a;
    cudaStream_t *streams;
    int n_streams, id, iters, failures;
    uint64_t seed;
} rr_arg_t;

static void *rr_thread(void *p)
{
    rr_arg_t *t = p;
    void *live[4] = { 0 };
    static const size_t sizes[] = { 4096, 512, 65536, 4096, 3 << 20, 1000 };
    for (int i = 0; i < t->iters; i++) {
        int slot = (int)(stress_rand(&t->seed) % 4);
        if (live[slot]) {
            t->failures += cca_free(t->a, live[slot]) != CCA_OK;
            live[slot] = NULL;
        } else {
            cudaStream_t s = t->streams[(i + 3 * t->id) % t->n_streams];
            t->failures += cca_malloc(t->a, &live[slot], sizes[stress_rand(&t->seed) % 6], s) != CCA_OK;
        }
    }
    for (int i = 0; i < 4; i++) t->failures += cca_free(t->a, live[i]) != CCA_OK;
    return NULL;
}

static int run_round_robin(int threads, int n_streams, int iters)
{
    cca_allocator_t *a = NULL;
    if (cca_create(NULL, &a) != CCA_OK) return 1;
    cudaStream_t streams[32];
    rr_arg_t args[16];
    pthread_t tid[16];
    int failures = 0;
    for (int i = 0; i < n_streams; i++) cudaStreamCreate(&streams[i]);
    for (int i = 0; i < threads; i++) {
        args[i] = (rr_arg_t){ a, streams, n_streams, i, iters, 0, 0x2545F4914F6CDD1Dull * (uint64_t)(i + 1) };
        pthread_create(&tid[i], NULL, rr_thread, &args[i]);
    }
    for (int i = 0; i < threads; i++) {
        pthread_join(tid[i], NULL);
        failures += args[i].failures;
    }
    if (cca_check(a) != CCA_OK) {
        fprintf(stderr, "round robin: %s\n", cca_last_error_string());
        failures++;
    }
    cca_stats_t s;
    cca_get_stats(a, &s);
    failures += s.allocation[CCA_POOL_ALL].current != 0;
    failures += s.allocation[CCA_POOL_ALL].allocated != s.allocation[CCA_POOL_ALL].freed;
    failures += s.allocation[CCA_POOL_ALL].peak < 1 || s.allocation[CCA_POOL_ALL].peak > 4 * threads;
    failures += s.lock_headroom_acquisitions == 0;   /* the headroom was used */
    cca_destroy(a);
    for (int i = 0; i < n_streams; i++) cudaStreamDestroy(streams[i]);
    return failures;
}

#endif

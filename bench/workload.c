/* workload.c - see workload.h. */
#include "workload.h"
#include "prng.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *why(int r)
{
    if (r == BENCH_OOM)
        return "out of memory";
    return *bench_ops_error() ? bench_ops_error() : "error";
}

int pingpong_loop(const bench_alloc_ops_t *ops, void *ctx, size_t size, cudaStream_t s,
                  size_t iters, char *msg, size_t msg_len)
{
    for (size_t i = 0; i < iters; i++) {
        void *p;
        size_t n = size == PINGPONG_12_SIZES ? (size_t)512 << (i % 12) : size;
        int r = ops->malloc(ctx, &p, n, s);
        if (r == BENCH_OK)
            r = ops->free(ctx, p);
        if (r != BENCH_OK) {
            snprintf(msg, msg_len, "pingpong %zu B: %s", n, why(r));
            return -1;
        }
    }
    return 0;
}

int mixed_seq_make(mixed_seq_t *m, size_t live, size_t steps, uint64_t seed)
{
    bench_rng_t rng = {seed};
    memset(m, 0, sizeof *m);
    m->live = live;
    m->steps = steps;
    m->init_size = malloc(live * sizeof *m->init_size);
    m->slot = malloc(steps * sizeof *m->slot);
    m->size = malloc(steps * sizeof *m->size);
    if (!m->init_size || !m->slot || !m->size) {
        mixed_seq_free(m);
        return -1;
    }
    for (size_t i = 0; i < live; i++)
        m->init_size[i] = bench_rng_log_uniform(&rng, MIXED_MIN_SIZE, MIXED_MAX_SIZE);
    for (size_t i = 0; i < steps; i++) {
        m->slot[i] = (uint32_t)bench_rng_below(&rng, live);
        m->size[i] = bench_rng_log_uniform(&rng, MIXED_MIN_SIZE, MIXED_MAX_SIZE);
    }
    return 0;
}

void mixed_seq_free(mixed_seq_t *m)
{
    free(m->init_size);
    free(m->slot);
    free(m->size);
    memset(m, 0, sizeof *m);
}

int mixed_fill(const bench_alloc_ops_t *ops, void *ctx, const mixed_seq_t *m, void **ptrs,
               cudaStream_t s, char *msg, size_t msg_len)
{
    memset(ptrs, 0, m->live * sizeof *ptrs);
    for (size_t i = 0; i < m->live; i++) {
        int r = ops->malloc(ctx, &ptrs[i], m->init_size[i], s);
        if (r != BENCH_OK) {
            snprintf(msg, msg_len, "mixed fill, %llu B: %s",
                     (unsigned long long)m->init_size[i], why(r));
            return -1;
        }
    }
    return 0;
}

int mixed_steps(const bench_alloc_ops_t *ops, void *ctx, const mixed_seq_t *m, void **ptrs,
                cudaStream_t s, size_t iters, char *msg, size_t msg_len)
{
    for (size_t i = 0, k = 0; i < iters; i++, k = k + 1 == m->steps ? 0 : k + 1) {
        void **p = &ptrs[m->slot[k]];
        int r = ops->free(ctx, *p);
        *p = NULL;
        if (r == BENCH_OK)
            r = ops->malloc(ctx, p, m->size[k], s);
        if (r != BENCH_OK) {
            snprintf(msg, msg_len, "mixed step %zu, %llu B: %s", i,
                     (unsigned long long)m->size[k], why(r));
            return -1;
        }
    }
    return 0;
}

void mixed_drain(const bench_alloc_ops_t *ops, void *ctx, const mixed_seq_t *m, void **ptrs)
{
    for (size_t i = 0; i < m->live; i++)
        if (ptrs[i]) {
            ops->free(ctx, ptrs[i]);
            ptrs[i] = NULL;
        }
}

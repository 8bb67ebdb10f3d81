/* count_ops.c - one allocator's steady-state work without timing, for
 * counting instructions with callgrind at two counts (scripts/instructions.sh
 * divides the difference): "pingpong" (4 KiB alloc+free pairs), "pingpong12"
 * (pairs cycling through 512 B << i % 12), "mixed" (steps - one free and one
 * allocation - over 1,000 live blocks of log-uniform 512 B..64 MiB), and
 * "pingpong/S", "mixed/S": the same spread over S streams made for it (pair
 * k on stream k mod S; block i lives on stream i mod S), one thread. */
#include "bench.h"
#include "workload.h"
#include "sim_ctl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The S-stream works (one thread): pair k, or block i, on stream k (i) mod S. */
static int count_streams(const bench_alloc_ops_t *ops, void *ctx, const char *work, size_t S, size_t n, char *err,
                         size_t len)
{
    cudaStream_t *st = calloc(S, sizeof *st);
    int rc = !st;
    for (size_t i = 0; !rc && i < S; i++) rc = cudaStreamCreateWithFlags(&st[i], cudaStreamNonBlocking) != cudaSuccess;
    if (rc) {
        snprintf(err, len, "cannot create %zu streams", S);
        free(st);
        return 1;
    }
    if (!strncmp(work, "pingpong/", 9)) {
        for (size_t i = 0; !rc && i < 1200 + n; i++)  /* warm-up, then n */
            rc = pingpong_loop(ops, ctx, 4096, st[i % S], 1, err, len) != 0;
    } else {
        mixed_seq_t m;
        void **ptrs = NULL;
        rc = mixed_seq_make(&m, 1000, 65536, 0x5eed5eedu) != 0 || !(ptrs = calloc(m.live, sizeof *ptrs));
        for (size_t i = 0; !rc && i < m.live; i++)
            rc = ops->malloc(ctx, &ptrs[i], m.init_size[i], st[i % S]) != BENCH_OK;
        for (size_t i = 0, k = 0; !rc && i < n; i++, k = k + 1 == m.steps ? 0 : k + 1) {
            uint32_t j = m.slot[k];
            rc = ops->free(ctx, ptrs[j]) != BENCH_OK;
            ptrs[j] = NULL;
            if (!rc) rc = ops->malloc(ctx, &ptrs[j], m.size[k], st[j % S]) != BENCH_OK;
        }
        if (rc) snprintf(err, len, "%s: an allocation or free failed", work);
        if (ptrs) mixed_drain(ops, ctx, &m, ptrs);
        free(ptrs);
        mixed_seq_free(&m);
    }
    free(st);                                         /* the streams live on: the process ends */
    return rc;
}

int count_ops(const bench_alloc_t *a, const char *work, size_t n)
{
    char err[200] = "";
#ifdef BENCH_HAVE_TORCH
    /* torch's expandable segments reserve 1.125x the device's memory at
     * once, which valgrind cannot map for an 80 GiB device: torch's rows
     * count on a 16 GiB one (the loops use at most a few GiB) */
    if (a->ops == &bench_ops_torch) simctl_reset((size_t)16 << 30);
#endif
    void *ctx = a->ops->init(a->conf, err, sizeof err);
    if (!ctx) {
        fprintf(stderr, "count-ops: %s\n", err);
        return 1;
    }
    int rc = 0;
    if (!strcmp(work, "pingpong") || !strcmp(work, "pingpong12")) {
        size_t size = strcmp(work, "pingpong12") ? 4096 : PINGPONG_12_SIZES;
        rc = pingpong_loop(a->ops, ctx, size, NULL, 1200, err, sizeof err) ||   /* warm-up, then n */
             pingpong_loop(a->ops, ctx, size, NULL, n, err, sizeof err);
    } else if (!strcmp(work, "mixed")) {
        mixed_seq_t m;
        void **ptrs = NULL;
        rc = mixed_seq_make(&m, 1000, 65536, 0x5eed5eedu) != 0 || !(ptrs = calloc(m.live, sizeof *ptrs));
        if (!rc) rc = mixed_fill(a->ops, ctx, &m, ptrs, NULL, err, sizeof err) ||
                      mixed_steps(a->ops, ctx, &m, ptrs, NULL, n, err, sizeof err);
        if (ptrs) mixed_drain(a->ops, ctx, &m, ptrs);
        free(ptrs);
        if (!rc) mixed_seq_free(&m);
    } else if ((!strncmp(work, "pingpong/", 9) || !strncmp(work, "mixed/", 6)) &&
               atoi(strchr(work, '/') + 1) >= 1 && atoi(strchr(work, '/') + 1) <= 1024) {
        rc = count_streams(a->ops, ctx, work, (size_t)atoi(strchr(work, '/') + 1), n, err, sizeof err);
    } else {
        fprintf(stderr, "count-ops: unknown work '%s' (pingpong, pingpong12, mixed, pingpong/S, mixed/S)\n", work);
        rc = 2;
    }
    if (rc == 1) fprintf(stderr, "count-ops: %s %s\n", err, bench_ops_error());
    a->ops->fini(ctx);
    return rc;
}

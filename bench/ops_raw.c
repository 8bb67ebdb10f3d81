/* ops_raw.c - the no-caching peer: every allocation is a cudaMalloc and
 * every free a cudaFree (which synchronises the device). */
#include "alloc_ops.h"
#include "sim_ctl.h"

#include <stdio.h>

static int raw_token;

static void *raw_init(const char *conf, char *err, size_t err_len)
{
    if (conf && *conf) {
        snprintf(err, err_len, "raw takes no configuration (got \"%s\")", conf);
        return NULL;
    }
    return &raw_token;
}

static int raw_malloc(void *ctx, void **p, size_t size, cudaStream_t s)
{
    (void)ctx;
    (void)s;
    cudaError_t e = cudaMalloc(p, size);
    if (e == cudaSuccess)
        return BENCH_OK;
    cudaGetLastError(); /* a refused cudaMalloc is not sticky: clear it */
    if (e == cudaErrorMemoryAllocation)
        return BENCH_OOM;
    bench_ops_set_error("cudaMalloc: %s", cudaGetErrorName(e));
    return BENCH_ERR;
}

static int raw_free(void *ctx, void *p)
{
    (void)ctx;
    cudaError_t e = cudaFree(p);
    if (e == cudaSuccess)
        return BENCH_OK;
    bench_ops_set_error("cudaFree: %s", cudaGetErrorName(e));
    return BENCH_ERR;
}

/* The device's used bytes are what raw holds, as the benchmark runs one
 * allocator at a time (sim: no runtime call; CUDA: cudaMemGetInfo). */
static size_t raw_reserved(void *ctx)
{
    (void)ctx;
    return simctl_device_used();
}

static void raw_fini(void *ctx)
{
    (void)ctx;
}

const bench_alloc_ops_t bench_ops_raw = {
    .name = "raw",
    .init = raw_init,
    .malloc = raw_malloc,
    .free = raw_free,
    .reserved_bytes = raw_reserved,
    .fini = raw_fini,
};

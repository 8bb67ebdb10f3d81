/* ops_cub.c - CUB's CachingDeviceAllocator behind the benchmark's
 * allocator interface. conf: "default" (CUB's default bins) or "all"
 * (bins covering every size). CUB has no record_stream: a caller that uses
 * a block on another stream must make the allocation stream wait for it. */
#include "../alloc_ops.h"
#include "cub_peer.h"

#include <stdio.h>
#include <string.h>

static void *cub_init(const char *conf, char *err, size_t err_len)
{
    int all;
    if (!conf || !*conf || strcmp(conf, "default") == 0)
        all = 0;
    else if (strcmp(conf, "all") == 0)
        all = 1;
    else {
        snprintf(err, err_len, "cub: unknown configuration \"%s\" (default, all)", conf);
        return NULL;
    }
    cub_peer_t *c = cub_peer_create(all);
    if (!c)
        snprintf(err, err_len, "cub: out of host memory");
    return c;
}

static int cub_malloc(void *ctx, void **p, size_t size, cudaStream_t s)
{
    cudaError_t e = cub_peer_malloc(ctx, p, size, s);
    if (e == cudaSuccess)
        return BENCH_OK;
    if (e == cudaErrorMemoryAllocation)
        return BENCH_OOM;
    bench_ops_set_error("DeviceAllocate: %s", cudaGetErrorName(e));
    return BENCH_ERR;
}

static int cub_free(void *ctx, void *p)
{
    cudaError_t e = cub_peer_free(ctx, p);
    if (e == cudaSuccess)
        return BENCH_OK;
    bench_ops_set_error("DeviceFree: %s", cudaGetErrorName(e));
    return BENCH_ERR;
}

static size_t cub_reserved(void *ctx)
{
    return cub_peer_held_bytes(ctx);
}

static void cub_fini(void *ctx)
{
    cub_peer_destroy(ctx);
}

const bench_alloc_ops_t bench_ops_cub = {
    .name = "cub",
    .init = cub_init,
    .malloc = cub_malloc,
    .free = cub_free,
    .reserved_bytes = cub_reserved,
    .fini = cub_fini,
};

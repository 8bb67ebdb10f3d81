/* ops_async.c - cudaMallocAsync/cudaFreeAsync on the device's default
 * memory pool (real runtime only: the simulated device does not export
 * them). The pool's release threshold is raised to "never" so that it
 * caches across synchronisations, as NVIDIA recommends for allocation-heavy
 * code; a free goes to the stream of its allocation, kept in a small map. */
#include "alloc_ops.h"
#include "u64map.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define ASYNC_MAX_STREAMS 64

typedef struct async_ctx {
    cudaMemPool_t pool;
    pthread_mutex_t lock;
    u64map_t ptr_stream;                      /* pointer -> stream index */
    cudaStream_t streams[ASYNC_MAX_STREAMS];
    unsigned n_streams;
} async_ctx_t;

static void *async_init(const char *conf, char *err, size_t err_len)
{
    (void)conf;
    async_ctx_t *c = calloc(1, sizeof *c);
    uint64_t never = UINT64_MAX, zero = 0;
    if (!c || u64map_init(&c->ptr_stream, 1024) != 0) {
        free(c);
        snprintf(err, err_len, "out of host memory");
        return NULL;
    }
    pthread_mutex_init(&c->lock, NULL);
    if (cudaDeviceGetDefaultMemPool(&c->pool, 0) != cudaSuccess ||
        cudaMemPoolSetAttribute(c->pool, cudaMemPoolAttrReleaseThreshold, &never) != cudaSuccess) {
        snprintf(err, err_len, "default memory pool: %s", cudaGetErrorString(cudaGetLastError()));
        u64map_fini(&c->ptr_stream);
        free(c);
        return NULL;
    }
    cudaMemPoolSetAttribute(c->pool, cudaMemPoolAttrReservedMemHigh, &zero);
    return c;
}

static unsigned stream_index(async_ctx_t *c, cudaStream_t s)
{
    for (unsigned i = 0; i < c->n_streams; i++)
        if (c->streams[i] == s)
            return i;
    if (c->n_streams == ASYNC_MAX_STREAMS)
        return 0;
    c->streams[c->n_streams] = s;
    return c->n_streams++;
}

static int async_malloc(void *ctx, void **p, size_t size, cudaStream_t s)
{
    async_ctx_t *c = ctx;
    cudaError_t e = cudaMallocAsync(p, size, s);
    if (e != cudaSuccess) {
        cudaGetLastError();
        if (e == cudaErrorMemoryAllocation)
            return BENCH_OOM;
        bench_ops_set_error("cudaMallocAsync: %s", cudaGetErrorName(e));
        return BENCH_ERR;
    }
    pthread_mutex_lock(&c->lock);
    int r = u64map_put(&c->ptr_stream, (uint64_t)(uintptr_t)*p, stream_index(c, s));
    pthread_mutex_unlock(&c->lock);
    return r == 0 ? BENCH_OK : BENCH_ERR;
}

static int async_free(void *ctx, void *p)
{
    async_ctx_t *c = ctx;
    uint32_t idx = 0;
    if (!p)
        return BENCH_OK;
    pthread_mutex_lock(&c->lock);
    int found = u64map_take(&c->ptr_stream, (uint64_t)(uintptr_t)p, &idx);
    cudaStream_t s = c->streams[idx];
    pthread_mutex_unlock(&c->lock);
    if (!found)
        return BENCH_ERR;
    return cudaFreeAsync(p, s) == cudaSuccess ? BENCH_OK : BENCH_ERR;
}

static size_t pool_attr(async_ctx_t *c, enum cudaMemPoolAttr attr)
{
    uint64_t v = 0;
    cudaMemPoolGetAttribute(c->pool, attr, &v);
    return (size_t)v;
}

static size_t async_reserved(void *ctx)
{
    return pool_attr(ctx, cudaMemPoolAttrReservedMemCurrent);
}

static size_t async_peak(void *ctx)
{
    return pool_attr(ctx, cudaMemPoolAttrReservedMemHigh);
}

static void async_fini(void *ctx)
{
    async_ctx_t *c = ctx;
    cudaDeviceSynchronize();
    cudaMemPoolTrimTo(c->pool, 0);
    pthread_mutex_destroy(&c->lock);
    u64map_fini(&c->ptr_stream);
    free(c);
}

const bench_alloc_ops_t bench_ops_async = {
    .name = "cudaMallocAsync",
    .init = async_init,
    .malloc = async_malloc,
    .free = async_free,
    .reserved_bytes = async_reserved,
    .peak_reserved = async_peak,
    .fini = async_fini,
};

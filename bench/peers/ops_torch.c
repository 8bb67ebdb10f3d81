/* ops_torch.c - PyTorch's own CUDACachingAllocator (torch_peer.cpp) behind
 * the benchmark's allocator interface: "native" (torch's defaults) or
 * "expandable" (expandable_segments:True). One allocator per process, as in
 * torch: each run starts it afresh (empty cache, peaks and totals reset),
 * and since it keeps its CUDA events across runs, the simulated device is
 * reset keeping live handles from its first run on (simctl_keep_handles).
 * Stream uses are recorded as torch records them (torch_peer.h). */
#include "../alloc_ops.h"
#include "../sim_ctl.h"
#include "torch_peer.h"

#include <stdio.h>
#include <string.h>

static int torch_ctx;                                /* a non-NULL context for the interface */

static void *torch_init(const char *conf, char *err, size_t err_len)
{
    int expandable;
    if (!conf || !*conf || strcmp(conf, "native") == 0)
        expandable = 0;
    else if (strcmp(conf, "expandable") == 0)
        expandable = 1;
    else {
        snprintf(err, err_len, "torch: unknown configuration \"%s\" (native, expandable)", conf);
        return NULL;
    }
    simctl_keep_handles();
    if (torch_peer_create(expandable, err, err_len) != 0)
        return NULL;
    return &torch_ctx;
}

static int torch_malloc(void *ctx, void **p, size_t size, cudaStream_t s)
{
    (void)ctx;
    char why[256] = "";
    int r = torch_peer_malloc(p, size, s, why, sizeof why);
    if (r == 0) return BENCH_OK;
    if (r == 1) return BENCH_OOM;
    bench_ops_set_error("raw_alloc_with_stream: %s", why);
    return BENCH_ERR;
}

static int torch_free(void *ctx, void *p)
{
    (void)ctx;
    char why[256] = "";
    if (torch_peer_free(p, why, sizeof why) == 0) return BENCH_OK;
    bench_ops_set_error("raw_delete: %s", why);
    return BENCH_ERR;
}

static int torch_record(void *ctx, void *p, cudaStream_t s)
{
    (void)ctx;
    char why[256] = "";
    if (torch_peer_record_stream(p, s, why, sizeof why) == 0) return BENCH_OK;
    bench_ops_set_error("recordStream: %s", why);
    return BENCH_ERR;
}

static size_t torch_reserved(void *ctx)
{
    (void)ctx;
    return torch_peer_reserved();
}

static size_t torch_peak(void *ctx)
{
    (void)ctx;
    return torch_peer_peak_reserved();
}

static void torch_fini(void *ctx)
{
    (void)ctx;
    torch_peer_destroy();
}

const bench_alloc_ops_t bench_ops_torch = {
    .name = "torch",
    .init = torch_init,
    .malloc = torch_malloc,
    .free = torch_free,
    .record_stream = torch_record,
    .reserved_bytes = torch_reserved,
    .peak_reserved = torch_peak,
    .fini = torch_fini,
};

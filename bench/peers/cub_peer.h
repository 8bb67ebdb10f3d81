/* cub_peer.h - C interface to NVIDIA CUB's cub::CachingDeviceAllocator
 * (CCCL), built as plain C++17 against the same runtime as cca. */
#ifndef BENCH_CUB_PEER_H
#define BENCH_CUB_PEER_H

#include <stddef.h>
#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cub_peer cub_peer_t;

/* all_bins = 0: CUB's default bins (growth 8, bins 8^3 = 512 B .. 8^7 = 2 MiB,
 * at most 6 MiB - 1 cached; bigger requests go to the device every time).
 * all_bins = 1: bins covering every size (growth 2, 2 B .. 2^40 B, no cache
 * limit). NULL when out of host memory. */
cub_peer_t *cub_peer_create(int all_bins);
void        cub_peer_destroy(cub_peer_t *c);     /* frees what it cached */
cudaError_t cub_peer_malloc(cub_peer_t *c, void **p, size_t size, cudaStream_t s);
cudaError_t cub_peer_free(cub_peer_t *c, void *p);
/* CUB's own counters: bytes it obtained from cudaMalloc and still holds
 * (cached + live, over every device). */
size_t      cub_peer_held_bytes(cub_peer_t *c);

#ifdef __cplusplus
}
#endif
#endif

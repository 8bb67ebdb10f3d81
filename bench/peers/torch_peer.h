/* torch_peer.h - C interface to PyTorch's own CUDACachingAllocator
 * (c10::cuda::CUDACachingAllocator in libc10_cuda.so of a torch
 * installation), driven directly, as torch's tensors reach it. */
#ifndef BENCH_TORCH_PEER_H
#define BENCH_TORCH_PEER_H

#include <stddef.h>
#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The allocator is one per process: create configures it (expandable:
 * torch's expandable_segments:True, else False) and starts its figures
 * afresh; destroy empties its cache. 0, or -1 with the reason in err. */
int         torch_peer_create(int expandable, char *err, size_t len);
void        torch_peer_destroy(void);
/* 0, 1 (torch's OutOfMemoryError), -1 (another error: its text in err). */
int         torch_peer_malloc(void **p, size_t size, cudaStream_t s, char *err, size_t len);
int         torch_peer_free(void *p, char *err, size_t len);
/* A use of p on s, recorded as torch records one: on a DataPtr with the
 * allocator's own deleter (a raw pointer's use would be ignored). */
int         torch_peer_record_stream(void *p, cudaStream_t s, char *err, size_t len);
size_t      torch_peer_reserved(void);       /* reserved_bytes, all pools: current */
size_t      torch_peer_peak_reserved(void);  /* ... and its peak since create */
const char *torch_peer_version(void);        /* the torch these headers came from, "2.15.0" */

#ifdef __cplusplus
}
#endif
#endif

/* workload.h - the allocation loops that every allocator runs: one size in
 * a loop (pingpong; or twelve sizes in turn) and a working set of mixed sizes with random frees
 * (mixed), the latter from a precomputed, seeded sequence. */
#ifndef BENCH_WORKLOAD_H
#define BENCH_WORKLOAD_H

#include "alloc_ops.h"

#include <stdint.h>

/* iters alloc+free pairs of size on s; 0, or -1 with msg. Size
 * PINGPONG_12_SIZES: pair i is of 512 B << i % 12 (512 B .. 1 MiB, both
 * pools and every split path), the general path that one size hides. */
#define PINGPONG_12_SIZES 0
int pingpong_loop(const bench_alloc_ops_t *ops, void *ctx, size_t size, cudaStream_t s,
                  size_t iters, char *msg, size_t msg_len);

typedef struct mixed_seq {
    size_t live;            /* blocks in the working set */
    size_t steps;           /* length of the step sequence (repeats) */
    uint64_t *init_size;    /* [live] */
    uint32_t *slot;         /* [steps]: which block is freed */
    uint64_t *size;         /* [steps]: size allocated in its place */
} mixed_seq_t;

#define MIXED_MIN_SIZE 512.0
#define MIXED_MAX_SIZE (64.0 * 1024 * 1024)

/* Sizes log-uniform in [512 B, 64 MiB], frees uniform over the set. */
int  mixed_seq_make(mixed_seq_t *m, size_t live, size_t steps, uint64_t seed);
void mixed_seq_free(mixed_seq_t *m);

/* ptrs has m->live entries. fill allocates the initial set; steps runs
 * iters steps (a free and an allocation each) from the sequence start;
 * drain frees everything. 0, or -1 with msg. */
int  mixed_fill(const bench_alloc_ops_t *ops, void *ctx, const mixed_seq_t *m, void **ptrs,
                cudaStream_t s, char *msg, size_t msg_len);
int  mixed_steps(const bench_alloc_ops_t *ops, void *ctx, const mixed_seq_t *m, void **ptrs,
                 cudaStream_t s, size_t iters, char *msg, size_t msg_len);
void mixed_drain(const bench_alloc_ops_t *ops, void *ctx, const mixed_seq_t *m, void **ptrs);

#endif

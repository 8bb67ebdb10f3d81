/* alloc_ops.h - the one allocator interface that cca and every peer
 * implement, so that all of them run the same benchmark loops. */
#ifndef BENCH_ALLOC_OPS_H
#define BENCH_ALLOC_OPS_H

#include <stddef.h>
#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

enum { BENCH_OK = 0, BENCH_OOM = 1, BENCH_ERR = -1 };

/* How an allocator ran (cca: its CCA_PROFILE figures): all-locked entries
 * and, per lock class (allocator, streams, segment list, shared
 * headroom), acquisitions, those that waited and their waits. */
enum { BENCH_LOCK_CLASSES = 4 };
typedef struct bench_profile {
    double all_locked;
    double acquisitions[BENCH_LOCK_CLASSES], contended[BENCH_LOCK_CLASSES];
    double wait_ns_total[BENCH_LOCK_CLASSES], wait_ns_max[BENCH_LOCK_CLASSES];
} bench_profile_t;

typedef struct bench_alloc_ops {
    const char *name;
    /* conf: allocator-specific text (cca: a CCA_CONF string; CUB: "default"
     * or "all"). NULL with a reason in err on failure. */
    void *(*init)(const char *conf, char *err, size_t err_len);
    int (*malloc)(void *ctx, void **p, size_t size, cudaStream_t s);  /* BENCH_OK/OOM/ERR */
    int (*free)(void *ctx, void *p);                                  /* BENCH_OK/ERR */
    /* Optional (NULL): mark p as used on s too. */
    int (*record_stream)(void *ctx, void *p, cudaStream_t s);
    /* Bytes held from the device now (may make a runtime call: never timed). */
    size_t (*reserved_bytes)(void *ctx);
    /* Optional (NULL): the allocator's own peak of reserved bytes since init;
     * without it, the replay samples reserved_bytes after each allocation. */
    size_t (*peak_reserved)(void *ctx);
    /* Optional (NULL): consistency check; BENCH_OK or BENCH_ERR with msg. */
    int (*check)(void *ctx, char *msg, size_t msg_len);
    /* Optional (NULL): the figures of bench_profile_t so far (never timed). */
    int (*profile)(void *ctx, bench_profile_t *out);
    void (*fini)(void *ctx);
} bench_alloc_ops_t;

/* One allocator as the benchmark runs it: an implementation, its
 * configuration, and how it is shown. */
typedef struct bench_alloc {
    char label[48];           /* "cca:default", "cub-all", "raw(modelled)" ... */
    const bench_alloc_ops_t *ops;
    const char *conf;
    int is_cca;               /* ratios are computed for these */
    int modelled;             /* run with the simulated device's latency model */
} bench_alloc_t;

/* Why the calling thread's last operation returned BENCH_ERR ("" if not
 * known); wrappers set it. */
const char *bench_ops_error(void);
void bench_ops_set_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

extern const bench_alloc_ops_t bench_ops_cca;
extern const bench_alloc_ops_t bench_ops_raw;
#ifdef BENCH_HAVE_CUB
extern const bench_alloc_ops_t bench_ops_cub;
#endif
#ifdef BENCH_DEVICE_CUDA
extern const bench_alloc_ops_t bench_ops_async;
#endif
#ifdef BENCH_HAVE_TORCH
extern const bench_alloc_ops_t bench_ops_torch;
#endif
/* Why the torch peers were not built ("" when they were): cca-bench prints
 * "torch-native: skipped: REASON" and a skipped entry in the JSON. */
extern const char bench_torch_skipped[];

#ifdef __cplusplus
}
#endif
#endif

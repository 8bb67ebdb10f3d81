/* cca.h - public API of cca, a CUDA caching allocator with the accounting
 * built in. One allocator serves one device; every function returns a
 * status, never aborts and never prints. (contract: see DESIGN.md) */
#ifndef CCA_H
#define CCA_H

#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define CCA_API
#else
#define CCA_API __attribute__((visibility("default")))
#endif

typedef enum cca_status {
    CCA_OK = 0,
    CCA_ERROR_INVALID_ARGUMENT,   /* null out-pointer, bad size, bad config struct */
    CCA_ERROR_INVALID_POINTER,    /* free/record_stream of a pointer cca does not own, or a double free */
    CCA_ERROR_OUT_OF_MEMORY,      /* device memory exhausted or fragmented, or the cap reached */
    CCA_ERROR_INVALID_CONFIG,     /* a CCA_CONF key or value that cannot be used */
    CCA_ERROR_CUDA,               /* a CUDA runtime call failed for another reason */
} cca_status_t;

typedef struct cca_allocator cca_allocator_t;      /* opaque; one per device */

/* Size intervals of roundup_power2_divisions: [0,2 MiB), [2,4), [4,8) MiB ...
 * up to the last, which covers everything from 32 GiB on (as PyTorch). */
#define CCA_ROUNDUP_INTERVALS 16

typedef struct cca_config {
    int device;                          /* CUDA device this allocator serves */
    size_t max_split_size;               /* blocks this large are never split; SIZE_MAX: no limit */
    unsigned roundup_power2_divisions[CCA_ROUNDUP_INTERVALS]; /* per interval; 0 or 1: round to 512 B */
    double garbage_collection_threshold; /* 0: off; in (0,1): fraction of the cap (needs a cap) */
    double memory_fraction;              /* 0: no cap; in (0,1]: cap = fraction of device total */
    size_t memory_limit;                 /* 0: no cap; else cap in bytes (the smaller cap wins) */
} cca_config_t;

/* Statistics, named like torch.cuda.memory_stats(). */
typedef struct cca_stat { int64_t current, peak, allocated, freed; } cca_stat_t;
enum { CCA_POOL_ALL, CCA_POOL_SMALL, CCA_POOL_LARGE, CCA_POOL_COUNT };

/* The stat fields, declared once: X(name, meaning). */
#define CCA_STAT_FIELDS(X) \
    X(allocation,           "live allocations (count)") \
    X(segment,              "device segments (count)") \
    X(active,               "allocated or awaiting stream events (count)") \
    X(inactive_split,       "free blocks inside split segments (count)") \
    X(allocated_bytes,      "rounded bytes handed out") \
    X(reserved_bytes,       "bytes held from the device") \
    X(active_bytes,         "allocated or awaiting stream events (bytes)") \
    X(inactive_split_bytes, "free bytes inside split segments") \
    X(requested_bytes,      "bytes the callers asked for")
#define CCA_COUNTER_FIELDS(X) \
    X(num_alloc_retries,    "device allocations retried after releasing the cache") \
    X(num_ooms,             "CCA_ERROR_OUT_OF_MEMORY returned") \
    X(num_device_alloc,     "successful cudaMalloc calls") \
    X(num_device_free,      "successful cudaFree calls") \
    X(num_sync_all_streams, "waits for all pending events")

typedef struct cca_stats {
#define CCA_STAT_MEMBER_(name, doc) cca_stat_t name[CCA_POOL_COUNT];
    CCA_STAT_FIELDS(CCA_STAT_MEMBER_)
#undef CCA_STAT_MEMBER_
#define CCA_COUNTER_MEMBER_(name, doc) int64_t name;
    CCA_COUNTER_FIELDS(CCA_COUNTER_MEMBER_)
#undef CCA_COUNTER_MEMBER_
} cca_stats_t;

/* Fills cfg with the defaults (PyTorch's rules: no split limit, 512 B
 * rounding, no cap, no garbage collection, device 0). */
CCA_API void cca_config_init(cca_config_t *cfg);

/* Applies a "key:value,key:value" string (PyTorch's syntax) on top of cfg.
 * Keys: max_split_size_mb, roundup_power2_divisions (N or [MB:N,...,>:N]),
 * garbage_collection_threshold, memory_fraction, memory_limit_mb.
 * CCA_ERROR_INVALID_CONFIG with the reason in err (and in
 * cca_last_error_string()) on an unknown key or bad value; cfg is then
 * unchanged. NULL or "" changes nothing. */
CCA_API cca_status_t cca_config_parse(cca_config_t *cfg, const char *conf, char *err, size_t err_len);

/* Creates an allocator for cfg->device (NULL cfg: defaults).
 * CCA_ERROR_INVALID_ARGUMENT for a NULL out or a bad config,
 * CCA_ERROR_CUDA when the device cannot be used. */
CCA_API cca_status_t cca_create(const cca_config_t *cfg, cca_allocator_t **out);

/* Returns every segment to the device, live allocations included, and frees
 * the allocator. NULL is a no-op. */
CCA_API void cca_destroy(cca_allocator_t *a);

/* Allocates size bytes for use on stream. Size 0 gives *ptr = NULL.
 * CCA_ERROR_OUT_OF_MEMORY when neither the cache nor the device (nor the
 * cap) allows it; the allocator's other allocations are unaffected. */
CCA_API cca_status_t cca_malloc(cca_allocator_t *a, void **ptr, size_t size, cudaStream_t stream);

/* Frees a pointer from cca_malloc; NULL is a no-op. The block is reusable
 * at once on its own stream, on others once recorded uses completed.
 * CCA_ERROR_INVALID_POINTER for a foreign, interior or already freed pointer. */
CCA_API cca_status_t cca_free(cca_allocator_t *a, void *ptr);

/* Marks ptr as used on stream too: its free then waits for that stream's
 * work queued up to the free. CCA_ERROR_INVALID_POINTER as for cca_free. */
CCA_API cca_status_t cca_record_stream(cca_allocator_t *a, void *ptr, cudaStream_t stream);

/* Waits for pending frees, then returns every fully free segment to the device. */
CCA_API cca_status_t cca_empty_cache(cca_allocator_t *a);

/* Copies all statistics out as one consistent snapshot. */
CCA_API cca_status_t cca_get_stats(cca_allocator_t *a, cca_stats_t *out);

/* Sets every peak to its current value. */
CCA_API cca_status_t cca_reset_peak_stats(cca_allocator_t *a);

/* Sets the allocated/freed totals and the num_* counters to 0
 * (allocated then restarts from current, so allocated - freed == current). */
CCA_API cca_status_t cca_reset_accumulated_stats(cca_allocator_t *a);

/* Walks every segment and block and checks the invariants of DESIGN.md and
 * that each counter equals what the walk finds. CCA_OK, or
 * CCA_ERROR_INVALID_ARGUMENT with the first violation in
 * cca_last_error_string(). */
CCA_API cca_status_t cca_check(cca_allocator_t *a);

/* The allocator of a device, created on first use with the configuration
 * in CCA_CONF (read once). CCA_ERROR_INVALID_CONFIG if CCA_CONF is bad. */
CCA_API cca_status_t cca_default(int device, cca_allocator_t **out);

/* Static text naming a status. */
CCA_API const char *cca_status_string(cca_status_t s);

/* Thread-local text explaining this thread's last failure ("" if none). */
CCA_API const char *cca_last_error_string(void);

#ifdef __cplusplus
}
#endif
#endif /* CCA_H */

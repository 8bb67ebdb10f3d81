/* core.h - the allocator as a whole (all locked): sized structs, errors,
 * configuration, the all-locked path, segments and the growth ladder, the
 * figures of an OOM report, and the one meeting point with the accounting
 * layer (view.c). */
#ifndef CCA_CORE_H
#define CCA_CORE_H

#include "types.h"

/* Sized structs (CCA_V1_*, _cca_copy_out), _cca_errors_fail and the view: view/cca_view.h. */

/* errors.c (and in view/cca_view.h: _cca_errors_fail, the thread's OOM report) */
/* CCA_ERROR_CUDA for a failed runtime call (e its cudaError_t): the text
 * as given, after "no CUDA driver or GPU found" where e says so
 * (cudaErrorNoDevice, cudaErrorStubLibrary; cudaErrorInsufficientDriver and
 * cudaErrorSystemDriverMismatch, which also mean a driver too old for, or
 * not matching, the runtime, add so). */
cca_status_t _cca_errors_fail_cuda(int e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void         _cca_errors_clear(void);
void         _cca_errors_clear_text(void);             /* cca_last_error_string() is "" again */

/* config.c */
size_t       _cca_config_round_size(const cca_config_t *cfg, size_t size);
cca_status_t _cca_config_check(const cca_config_t *c, size_t device_total);   /* 0: the device is not known yet */
bool         _cca_config_key_ok(const cca_config_t *c, const char *key, char *why, size_t len);   /* one key of the table */

/* alloc.c: the public calls and the all-locked path. */
void   _cca_alloc_lock_all(cca_allocator_t *a);
void   _cca_alloc_unlock_all(cca_allocator_t *a, cca_stream_t *trigger);   /* trigger: stream served, or NULL */
void   _cca_alloc_reap_pending(cca_allocator_t *a);   /* all locked: _cca_stream_reap_all if a stream is dying */

/* segment.c: segments and the device (all locked; the first rung with the segment-list lock). */
typedef struct dev_guard { int prev; bool switched; } dev_guard_t;
cudaError_t  _cca_segment_device_enter(cca_allocator_t *a, dev_guard_t *g);   /* makes a's device current */
void         _cca_segment_device_leave(dev_guard_t *g);                        /* restores the caller's */
/* The growth ladder, in the order a request climbs it (segment.c). */
typedef enum cca_rung {
    CCA_RUNG_GROWN,                                   /* a policy's bigger segment (segment_growth_percent) */
    CCA_RUNG_NEW,                                     /* the standard segment */
    CCA_RUNG_RELEASE_FITTING,                         /* the same, after releasing cached oversize blocks that help */
    CCA_RUNG_RELEASE_ALL,                             /* the same, after releasing every unused cached segment */
    CCA_RUNG_LEAST,                                   /* policies on: the smallest segment that holds the request */
    CCA_RUNG_COUNT
} cca_rung_t;
/* The size of the segment rung `rung` asks for a request of `rounded`
 * bytes in `pool` (CCA_RUNG_NEW: PyTorch's 2 MiB, 20 MiB, or the request
 * rounded up to 2 MiB). */
size_t       _cca_segment_size(const cca_allocator_t *a, int pool, size_t rounded, cca_rung_t rung);
bool         _cca_segment_release(cca_allocator_t *a, cca_segment_t *seg);
void         _cca_segment_destroy_all(cca_allocator_t *a);    /* frees the recycled segment records */
void         _cca_segment_release_cached(cca_allocator_t *a);
cca_status_t _cca_segment_grow(cca_allocator_t *a, cca_stream_t *st, int pool, cca_oom_ctx_t *ctx, cca_block_t **out);
/* The ladder's first rung off the all-locked path (st locked; segment.c):
 * false when it does not apply or the cap refuses (no device call was
 * made: the all-locked path climbs the whole ladder), else true with
 * ctx->new_tried set and the status in *s (a segment in *out). */
bool         _cca_segment_grow_unlocked(cca_allocator_t *a, cca_stream_t *st, int pool, cca_oom_ctx_t *ctx,
                                        cca_block_t **out, cca_status_t *s);
bool         _cca_segment_trim_plentiful(cca_allocator_t *a);  /* release_before_grow acts: free >= CCA_TRIM_PLENTY x held */

cca_segment_t *_cca_segment_new(cca_allocator_t *a);                  /* a record, recycled or new; NULL: no host memory */
void           _cca_segment_recycle(cca_allocator_t *a, cca_segment_t *seg);

/* cca_destroy's rule for the calls that give memory back (cudaFree,
 * cuMemUnmap, cuMemRelease, cuMemAddressFree): each is tried this many
 * times (the call and 3 retries) before what it holds counts as kept. */
#define CCA_RELEASE_TRIES 4
/* What cca_destroy could not give back, per kind of call: the calls that
 * failed every try, the bytes they concern, and the last error
 * (cudaError_t for cudaFree, CUresult for the driver's calls). */
typedef struct cca_kept_part { unsigned long calls; size_t bytes; int err; } cca_kept_part_t;
typedef struct cca_kept {
    cca_kept_part_t free, unmap, release, address_free;
    cca_kept_part_t still_mapped;                     /* reservations not freed: a mapping in them stays */
    size_t device_bytes, va_bytes;                    /* device memory and address space kept, each byte once */
} cca_kept_t;

/* expand.c: expandable segments' policy (a->xv; all locked; the layer
 * below, vmm.c, in vmm.h). */
cca_status_t _cca_expand_grow(cca_allocator_t *a, cca_stream_t *st, int pool, cca_oom_ctx_t *ctx, cca_block_t **out);
bool         _cca_expand_release_segment(cca_allocator_t *a, cca_segment_t *seg);   /* unmaps and releases its handles */
void         _cca_expand_release_cached(cca_allocator_t *a);   /* every free handle unmapped, every held one released */
cca_status_t _cca_expand_check(cca_allocator_t *a, int64_t held_pool[CCA_POOL_COUNT]);
/* The OOM report's view of growth (expand.c has the model): the bytes a
 * growth of (st, pool) for `rounded` needs to map at the spot it would
 * pick now; and whether a request of `rounded` bytes on st would succeed
 * now (dev_free: the device's free memory), from a view built once. */
size_t       _cca_expand_need(const cca_allocator_t *a, const cca_stream_t *st, int pool, size_t rounded);
typedef struct cca_xfit cca_xfit_t;
cca_xfit_t  *_cca_expand_fit_new(const cca_allocator_t *a, const cca_stream_t *st, size_t dev_free);   /* NULL: no host memory */
bool         _cca_expand_fit(const cca_xfit_t *f, size_t rounded);
void         _cca_expand_fit_free(cca_xfit_t *f);

/* oomfig.c: the figures of an out-of-memory report (all locked). */
void   _cca_oomfig_capture_cache(cca_allocator_t *a, cca_oom_ctx_t *ctx);
void   _cca_oomfig_fill(cca_allocator_t *a, const cca_oom_ctx_t *ctx, cca_oom_report_t *r);
size_t _cca_oomfig_largest_fit(cca_allocator_t *a, cca_stream_t *st, size_t avail);
size_t _cca_oomfig_largest_free(const cca_allocator_t *a);

/* tracefile.c: a trace file's rows, all locked, while a->trace is set
 * (_cca_tracefile_on); _cca_tracefile_destroy ends it in cca_destroy. */
void _cca_tracefile_alloc(cca_allocator_t *a, uintptr_t addr, size_t requested, const cca_stream_t *st);
void _cca_tracefile_free(cca_allocator_t *a, uintptr_t addr, size_t requested, const cca_stream_t *st);
void _cca_tracefile_failure(cca_allocator_t *a, size_t requested, cudaStream_t stream);
void _cca_tracefile_destroy(cca_allocator_t *a);
static inline bool _cca_tracefile_on(const cca_allocator_t *a) { return __builtin_expect(a->trace != NULL, 0); }

/* history.c: the recorded events, all locked. _cca_history_add records one
 * while history is on; _cca_history_completed records a pending free's
 * completion (with b->requested, still the size its free request had). _cca_history_copy
 * copies the entries, oldest first (a->lock held); false: no host memory. */
void _cca_history_add(cca_allocator_t *a, int action, uintptr_t addr, size_t size, cudaStream_t stream,
                      uint32_t tag, size_t device_free);
void _cca_history_completed(cca_allocator_t *a, const cca_block_t *b);
bool _cca_history_copy(const cca_allocator_t *a, cca_history_entry_t **out, size_t *n, uint64_t *dropped);
void _cca_history_destroy(cca_allocator_t *a);
static inline bool _cca_history_on(const cca_allocator_t *a) { return __builtin_expect(a->history != NULL, 0); }
/* The context of the calling thread's cca_malloc or cca_free while it
 * records (cca_history_set_context): _cca_history_context_begin asks the
 * context function, before any lock, where history is on and the action
 * wants one, and returns the previous context for _cca_history_context_end
 * (a callback that allocates nests). */
extern _Thread_local uint64_t _cca_history_context;
uint64_t _cca_history_context_begin(int action);
static inline void _cca_history_context_end(uint64_t prev) { _cca_history_context = prev; }

/* ---- the accounting layer (stats/) and the core: view.c ----------------
 * stats/ sees the core only through view/cca_view.h (its build has no
 * other path into allocator/): _cca_view, a consistent moment with the
 * public figures exact, and its walk. The core tells stats/ about changes
 * and out-of-memory only through the table in a->acct.ops, which
 * cca_create installs: the one name the core takes from stats/. */
void _cca_view_changed(cca_allocator_t *a);                       /* the core's calls, all locked */
void _cca_view_oom(cca_allocator_t *a, cca_oom_report_t *r);

#endif /* CCA_CORE_H */

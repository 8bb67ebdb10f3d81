/* history.c - the allocation history: a bounded ring of what happened, in
 * order, for torch's snapshot viewer (cca.dump_snapshot). While it records,
 * a->hooks has CCA_HOOK_HISTORY set, so every malloc and free takes the
 * all-locked path and is written here there: the hot path is unchanged
 * and never sees the ring. The ring grows by doubling up to its bound, then
 * overwrites its oldest entry (counted as dropped); where host memory
 * runs out before the bound, the size it has becomes the bound. Times are
 * the monotonic clock placed on the epoch when recording started, so they
 * never go back. Read under a->lock alone, which every writer holds. */
#include <stdlib.h>
#include <time.h>
#include "internal.h"

struct cca_history {
    cca_history_entry_t *ring;
    size_t cap;                                       /* entries allocated */
    size_t max;                                       /* the bound */
    size_t n;                                         /* entries held */
    size_t head;                                      /* the oldest, once the ring wrapped */
    uint64_t dropped;                                 /* overwritten, or lost to host memory running out */
    int64_t epoch_us;                                 /* realtime - monotonic when recording started */
};

/* Contexts (cca_history_set_context) and skipped actions, process-wide.
 * _cca_history_context is the calling thread's context while a cca_malloc
 * or cca_free that asked fn for one runs (0 otherwise): every event that
 * call records carries it. */
static _Atomic(cca_context_fn) history_context_fn;
static _Atomic unsigned history_context_actions;
static _Atomic unsigned history_skip;
_Thread_local uint64_t _cca_history_context;

void cca_history_set_context(cca_context_fn fn, unsigned actions)
{
    atomic_store_explicit(&history_context_actions, fn ? actions : 0, memory_order_relaxed);
    atomic_store_explicit(&history_context_fn, fn, memory_order_release);
}

void cca_history_set_skip(unsigned actions)
{
    atomic_store_explicit(&history_skip, actions, memory_order_relaxed);
}

uint64_t _cca_history_context_begin(int action)
{
    uint64_t prev = _cca_history_context;
    cca_context_fn fn = atomic_load_explicit(&history_context_fn, memory_order_acquire);
    if (fn && (atomic_load_explicit(&history_context_actions, memory_order_relaxed) >> action & 1u)) {
        uint64_t c = fn(action);                      /* no lock of cca's held: fn may allocate or free */
        _cca_history_context = c;
    }
    return prev;
}

static int64_t history_clock_us(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static uint64_t history_now_us(const cca_history_t *h)
{
    return (uint64_t)(history_clock_us(CLOCK_MONOTONIC) + h->epoch_us);
}

/* The slot for a new entry, or NULL (counted dropped) when not even a
 * first ring could be had. cap <= max; the ring wraps only once cap ==
 * max, so below it the entries are in order from 0 and may be moved by
 * realloc. A ring that cannot grow takes its size as the bound, so that
 * the oldest entries go, not the newest. */
static cca_history_entry_t *history_slot(cca_allocator_t *a, cca_history_t *h)
{
    if (h->n == h->cap && h->cap < h->max) {
        size_t cap = h->cap ? h->cap * 2 : 256;
        if (cap > h->max || cap < h->cap) cap = h->max;
        cca_history_entry_t *r = cap <= SIZE_MAX / sizeof *r ? realloc(h->ring, cap * sizeof *r) : NULL;
        if (r) {
            a->host_bytes += (int64_t)((cap - h->cap) * sizeof *r);
            h->ring = r;
            h->cap = cap;
        } else if (h->cap) {
            h->max = h->cap;                          /* full at the size it has: wrap */
        } else {
            h->dropped++;
            return NULL;
        }
    }
    if (h->n < h->cap) return &h->ring[h->n++];
    cca_history_entry_t *e = &h->ring[h->head];       /* full at its bound: the oldest goes */
    h->head = (h->head + 1) % h->cap;
    h->dropped++;
    return e;
}

void _cca_history_add(cca_allocator_t *a, int action, uintptr_t addr, size_t size, cudaStream_t stream,
                      uint32_t tag, size_t device_free)
{
    cca_history_t *h = a->history;
    if (!h || (atomic_load_explicit(&history_skip, memory_order_relaxed) >> action & 1u)) return;
    cca_history_entry_t *e = history_slot(a, h);
    if (!e) return;
    *e = (cca_history_entry_t){ .time_us = history_now_us(h), .action = action, .addr = addr, .size = size,
                                .stream = stream, .tag = tag, .device_free = device_free,
                                .context = _cca_history_context };
}

void _cca_history_completed(cca_allocator_t *a, const cca_block_t *b)
{
    if (a->history)
        _cca_history_add(a, CCA_HISTORY_FREE_COMPLETED, b->addr, b->requested, b->seg->stream->handle, b->tag, 0);
}

bool _cca_history_copy(const cca_allocator_t *a, cca_history_entry_t **out, size_t *n, uint64_t *dropped)
{
    const cca_history_t *h = a->history;
    *out = NULL;
    *n = h ? h->n : 0;
    *dropped = h ? h->dropped : 0;
    if (!*n) return true;
    if (!(*out = malloc(*n * sizeof **out))) return false;
    for (size_t i = 0; i < *n; i++) (*out)[i] = h->ring[(h->head + i) % h->cap];
    return true;
}

void _cca_history_destroy(cca_allocator_t *a)
{
    cca_history_t *h = a->history;
    if (!h) return;
    a->host_bytes -= (int64_t)(h->cap * sizeof *h->ring + sizeof *h);
    free(h->ring);
    free(h);
    a->history = NULL;
}

cca_status_t cca_record_history(cca_allocator_t *a, size_t max_entries)
{
    if (!a) return _cca_errors_fail(CCA_ERROR_INVALID_ARGUMENT, "cca_record_history: allocator is NULL");
    cca_history_t *h = NULL;
    if (max_entries && !(h = calloc(1, sizeof *h)))
        return _cca_errors_fail(CCA_ERROR_OUT_OF_MEMORY, "cca_record_history: out of host memory");
    if (h) {
        h->max = max_entries;
        h->epoch_us = history_clock_us(CLOCK_REALTIME) - history_clock_us(CLOCK_MONOTONIC);
    }
    _cca_alloc_lock_all(a);
    if (h && a->history) {                            /* already on: a new bound, the newest entries kept */
        cca_history_t *old = a->history;
        size_t keep = old->n < max_entries ? old->n : max_entries;
        cca_history_entry_t *r = keep ? malloc(keep * sizeof *r) : NULL;
        if (keep && !r) {
            _cca_alloc_unlock_all(a, NULL);
            free(h);
            return _cca_errors_fail(CCA_ERROR_OUT_OF_MEMORY, "cca_record_history: out of host memory");
        }
        size_t skip = old->n - keep;
        for (size_t i = 0; i < keep; i++) r[i] = old->ring[(old->head + skip + i) % old->cap];
        a->host_bytes += (int64_t)(keep * sizeof *r) - (int64_t)(old->cap * sizeof *r);
        free(old->ring);
        old->ring = r;
        old->cap = old->n = keep;                     /* in order from 0: grows again up to the bound */
        old->head = 0;
        old->max = max_entries;
        old->dropped += skip;
        free(h);
    } else if (h) {
        a->history = h;
        a->host_bytes += (int64_t)sizeof *h;
        atomic_fetch_or_explicit(&a->hooks, CCA_HOOK_HISTORY, memory_order_relaxed);
    } else {
        _cca_history_destroy(a);
        atomic_fetch_and_explicit(&a->hooks, ~CCA_HOOK_HISTORY, memory_order_relaxed);
    }
    _cca_alloc_unlock_all(a, NULL);
    return CCA_OK;
}

cca_status_t cca_history_walk_sized(cca_allocator_t *a, cca_history_fn fn, void *arg, uint64_t *dropped,
                                    size_t entry_size)
{
    if (dropped) *dropped = 0;
    if (!a || !fn) return _cca_errors_fail(CCA_ERROR_INVALID_ARGUMENT, "cca_history_walk: %s is NULL", a ? "fn" : "allocator");
    if (entry_size < CCA_V1_HISTORY)
        return _cca_errors_fail(CCA_ERROR_INVALID_ARGUMENT, "cca_history_walk: entry size %zu is not cca's", entry_size);
    cca_history_entry_t *copy;
    size_t n;
    uint64_t lost;
    _cca_lock(&a->lock);                              /* every writer holds it */
    bool ok = _cca_history_copy(a, &copy, &n, &lost);
    _cca_unlock(&a->lock);
    if (!ok) return _cca_errors_fail(CCA_ERROR_OUT_OF_MEMORY, "cca_history_walk: out of host memory");
    if (dropped) *dropped = lost;
    void *buf = entry_size > sizeof(cca_history_entry_t) ? calloc(1, entry_size) : NULL;
    if (entry_size > sizeof(cca_history_entry_t) && !buf) {
        free(copy);
        return _cca_errors_fail(CCA_ERROR_OUT_OF_MEMORY, "cca_history_walk: out of host memory");
    }
    for (size_t i = 0; i < n; i++) {
        const void *e = &copy[i];
        if (buf) e = memcpy(buf, &copy[i], sizeof copy[i]);
        if (fn(e, arg)) break;
    }
    free(buf);
    free(copy);
    return CCA_OK;
}

const char *cca_history_action_string(int action)
{
    switch (action) {
    case CCA_HISTORY_ALLOC: return "alloc";
    case CCA_HISTORY_FREE_REQUESTED: return "free_requested";
    case CCA_HISTORY_FREE_COMPLETED: return "free_completed";
    case CCA_HISTORY_SEGMENT_ALLOC: return "segment_alloc";
    case CCA_HISTORY_SEGMENT_FREE: return "segment_free";
    case CCA_HISTORY_OOM: return "oom";
    case CCA_HISTORY_SNAPSHOT: return "snapshot";
    default: return "unknown";
    }
}

cca_status_t cca_history_mark_snapshot(cca_allocator_t *a)
{
    if (!a) return _cca_errors_fail(CCA_ERROR_INVALID_ARGUMENT, "cca_history_mark_snapshot: allocator is NULL");
    _cca_alloc_lock_all(a);
    if (_cca_history_on(a)) {
        cca_stats_t s;
        _cca_counters_view(a, &s);
        uint64_t ctx = _cca_history_context;
        _cca_history_context = 0;                     /* torch's snapshot events have no frames */
        _cca_history_add(a, CCA_HISTORY_SNAPSHOT, 0, (size_t)s.allocated_bytes[CCA_POOL_ALL].current, NULL, 0, 0);
        _cca_history_context = ctx;
    }
    _cca_alloc_unlock_all(a, NULL);
    return CCA_OK;
}

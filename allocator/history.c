/* history.c - the allocation history: a bounded ring of what happened, in
 * order, for torch's snapshot viewer (cca.dump_snapshot). While it records,
 * a->hooks has CCA_HOOK_HISTORY set, so every malloc and free takes the
 * all-locked path and is written here there: the hot path is unchanged
 * and never sees the ring. The ring grows by doubling up to its bound, then
 * overwrites its oldest entry (counted as dropped). Read under a->lock
 * alone, which every writer holds. */
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
};

/* How far back a pending free's completion looks for its request. */
#define HISTORY_LOOKBACK 65536

static uint64_t history_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* The slot for a new entry, or NULL (counted dropped) when the ring could
 * not grow. cap <= max; the ring wraps only once cap == max, so below it
 * the entries are in order from 0 and may be moved by realloc. */
static cca_history_entry_t *history_slot(cca_allocator_t *a, cca_history_t *h)
{
    if (h->n == h->cap && h->cap < h->max) {
        size_t cap = h->cap ? h->cap * 2 : 256;
        if (cap > h->max || cap < h->cap) cap = h->max;
        cca_history_entry_t *r = cap <= SIZE_MAX / sizeof *r ? realloc(h->ring, cap * sizeof *r) : NULL;
        if (!r) {
            h->dropped++;
            return NULL;
        }
        a->host_bytes += (int64_t)((cap - h->cap) * sizeof *r);
        h->ring = r;
        h->cap = cap;
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
    if (!h) return;
    cca_history_entry_t *e = history_slot(a, h);
    if (!e) return;
    *e = (cca_history_entry_t){ .time_us = history_now_us(), .action = action, .addr = addr, .size = size,
                                .stream = stream, .tag = tag, .device_free = device_free };
}

void _cca_history_completed(cca_allocator_t *a, const cca_block_t *b)
{
    cca_history_t *h = a->history;
    if (!h) return;
    size_t size = b->size;                            /* unless its request is still held */
    uint32_t tag = b->tag;
    size_t look = h->n < HISTORY_LOOKBACK ? h->n : HISTORY_LOOKBACK;
    for (size_t i = 0; i < look; i++) {
        const cca_history_entry_t *e = &h->ring[(h->head + h->n - 1 - i) % h->cap];
        if (e->addr == b->addr && e->action == CCA_HISTORY_FREE_REQUESTED) {
            size = e->size;
            tag = e->tag;
            break;
        }
    }
    _cca_history_add(a, CCA_HISTORY_FREE_COMPLETED, b->addr, size, b->seg->stream->handle, tag, 0);
}

static void history_free(cca_allocator_t *a)
{
    cca_history_t *h = a->history;
    if (!h) return;
    a->host_bytes -= (int64_t)(h->cap * sizeof *h->ring + sizeof *h);
    free(h->ring);
    free(h);
    a->history = NULL;
}

void _cca_history_destroy(cca_allocator_t *a)
{
    history_free(a);
}

cca_status_t cca_record_history(cca_allocator_t *a, size_t max_entries)
{
    if (!a) return _cca_fail(CCA_ERROR_INVALID_ARGUMENT, "cca_record_history: allocator is NULL");
    cca_history_t *h = NULL;
    if (max_entries && !(h = calloc(1, sizeof *h)))
        return _cca_fail(CCA_ERROR_OUT_OF_MEMORY, "cca_record_history: out of host memory");
    if (h) h->max = max_entries;
    _cca_lock_all(a);
    if (h && a->history) {                            /* already on: a new bound, the newest entries kept */
        cca_history_t *old = a->history;
        size_t keep = old->n < max_entries ? old->n : max_entries;
        cca_history_entry_t *r = keep ? malloc(keep * sizeof *r) : NULL;
        if (keep && !r) {
            _cca_unlock_all(a, NULL);
            free(h);
            return _cca_fail(CCA_ERROR_OUT_OF_MEMORY, "cca_record_history: out of host memory");
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
        history_free(a);
        atomic_fetch_and_explicit(&a->hooks, ~CCA_HOOK_HISTORY, memory_order_relaxed);
    }
    _cca_unlock_all(a, NULL);
    return CCA_OK;
}

cca_status_t cca_history_walk_sized(cca_allocator_t *a, cca_history_fn fn, void *arg, uint64_t *dropped,
                                    size_t entry_size)
{
    if (dropped) *dropped = 0;
    if (!a || !fn) return _cca_fail(CCA_ERROR_INVALID_ARGUMENT, "cca_history_walk: %s is NULL", a ? "fn" : "allocator");
    if (entry_size < CCA_V1_HISTORY)
        return _cca_fail(CCA_ERROR_INVALID_ARGUMENT, "cca_history_walk: entry size %zu is not cca's", entry_size);
    _cca_lock(&a->lock);                              /* every writer holds it */
    cca_history_t *h = a->history;
    size_t n = h ? h->n : 0;
    uint64_t lost = h ? h->dropped : 0;
    cca_history_entry_t *copy = n ? malloc(n * sizeof *copy) : NULL;
    if (copy)
        for (size_t i = 0; i < n; i++) copy[i] = h->ring[(h->head + i) % h->cap];
    _cca_unlock(&a->lock);
    if (n && !copy) return _cca_fail(CCA_ERROR_OUT_OF_MEMORY, "cca_history_walk: out of host memory");
    if (dropped) *dropped = lost;
    void *buf = entry_size > sizeof(cca_history_entry_t) ? calloc(1, entry_size) : NULL;
    if (entry_size > sizeof(cca_history_entry_t) && !buf) {
        free(copy);
        return _cca_fail(CCA_ERROR_OUT_OF_MEMORY, "cca_history_walk: out of host memory");
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

cca_status_t (cca_history_walk)(cca_allocator_t *a, cca_history_fn fn, void *arg, uint64_t *dropped)
{
    return cca_history_walk_sized(a, fn, arg, dropped, CCA_V1_HISTORY);
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
    default: return "unknown";
    }
}

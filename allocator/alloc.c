/* alloc.c - the public calls. The hot path serves a cached block of the
 * caller's stream under that stream's lock alone, with no CUDA call (but
 * for querying that stream's events, when no other stream has any
 * pending), and frees and
 * records uses the same way; it also makes a new segment, with the
 * segment-list lock (segment.c says when). All else (a new stream, a free
 * that records events, watches, a peak the other streams' locks could not
 * be had for, the OOM path, statistics) runs all locked. */
#include <stdlib.h>
#include "internal.h"

/* ---- the all-locked path ----------------------------------------------- */

void _cca_alloc_lock_all(cca_allocator_t *a)
{
    _cca_lock(&a->lock);
    a->lock_all_count++;
    for (cca_stream_t *st = a->streams; st; st = st->next) {
        _cca_lock(&st->lock);
        st->outside_acq = st->lock.fig.acquisitions;
        if (st->parked[CCA_POOL_SMALL] || st->parked[CCA_POOL_LARGE]) st->fold_dirty = true;   /* summed again */
        _cca_park_flush(a, st, CCA_POOL_SMALL);       /* every walk and figure sees them freed */
        _cca_park_flush(a, st, CCA_POOL_LARGE);
    }
    a->all_locked = true;
    _cca_counters_refresh(a);
    _cca_alloc_reap_pending(a);
}

void _cca_alloc_reap_pending(cca_allocator_t *a)
{
    if (atomic_load_explicit(&a->dead_pending, memory_order_relaxed)) _cca_stream_reap_all(a);
}

/* Ends an all-locked section. Figures it changed (a->unseen: the call's own
 * change, or a retired stream's segments returned on the way) are told to
 * the accounting first - after any reap still pending, so that a watch
 * sees the figure the call leaves - and its callbacks run once unlocked. */
void _cca_alloc_unlock_all(cca_allocator_t *a, cca_stream_t *trigger)
{
    _cca_alloc_reap_pending(a);
    if (trigger && trigger->dead) trigger = NULL;     /* retired just now: its leases are gone */
    bool tell = a->unseen && (atomic_load_explicit(&a->hooks, memory_order_relaxed) & CCA_HOOK_WATCH);
    a->unseen = false;
    if (tell) _cca_view_changed(a);
    a->change.kind = 0;
    _cca_counters_rebalance(a, trigger);
    a->all_locked = false;
    for (cca_stream_t *st = a->streams; st; st = st->next) _cca_unlock(&st->lock);
    _cca_unlock(&a->lock);
    if (tell) a->acct.ops->after_change(a);
}

static inline bool alloc_hooked(cca_allocator_t *a)
{
    return atomic_load_explicit(&a->hooks, memory_order_relaxed) != 0;
}

/* Releases the all-locked path after a change (the watches see it). */
static void alloc_unlock_all_changed(cca_allocator_t *a, cca_stream_t *trigger)
{
    a->unseen = true;
    _cca_alloc_unlock_all(a, trigger);
}

/* ---- allocation -------------------------------------------------------- */

/* Host memory ran out (metadata): an out-of-memory too, but not the
 * device's; counted, no device report. */
static cca_status_t alloc_fail_host(cca_allocator_t *a, const char *what, bool tentative)
{
    if (!tentative) a->stats.num_ooms++;
    return _cca_errors_fail(CCA_ERROR_OUT_OF_MEMORY, "%s: out of host memory for cca's bookkeeping", what);
}

/* Out of memory: count it, report it, leave everything else as it was. */
static cca_status_t alloc_fail_oom(cca_allocator_t *a, cca_oom_ctx_t *ctx)
{
    if (ctx->tentative) {                             /* cca_malloc_try: the caller asks again */
        _cca_alloc_reap_pending(a);
        return _cca_errors_fail(CCA_ERROR_OUT_OF_MEMORY, "cca: out of memory allocating %zu bytes on device %d%s",
                         ctx->requested, a->cfg.device, ctx->cap_refused ? " (the memory cap refused it)" : "");
    }
    a->stats.num_ooms++;
    if (!ctx->captured) _cca_oomfig_capture_cache(a, ctx);
    _cca_alloc_reap_pending(a);                             /* a retired stream's block that came back: the figures without it */
    cca_status_t s = _cca_errors_fail(CCA_ERROR_OUT_OF_MEMORY,           /* forgets the thread's last report */
                               "cca: out of memory allocating %zu bytes on device %d%s", ctx->requested,
                               a->cfg.device, ctx->cap_refused ? " (the memory cap refused it)" : "");
    cca_oom_report_t r;
    _cca_oomfig_fill(a, ctx, &r);
    if (_cca_history_on(a))
        _cca_history_add(a, CCA_HISTORY_OOM, 0, ctx->requested, ctx->stream, _cca_tag_now(), r.device_free);
    if (_cca_tracefile_on(a)) _cca_tracefile_failure(a, ctx->requested, ctx->stream);
    _cca_view_oom(a, &r);                             /* ... which this one replaces */
    return s;
}

static inline void alloc_note_search(cca_allocator_t *a, int pool)
{
    if (a->gc_enabled && pool == CCA_POOL_LARGE)
        atomic_fetch_add_explicit(&a->gc_searches, 1, memory_order_relaxed);
}

/* What the hot path's growth did before it sent the request all locked
 * (read only if `tried`): ctx.new_tried, the standard segment was refused
 * with status s while num_device_free was `frees`; or `made`, the address
 * of the segment it made (the counters then refused the take). */
typedef struct alloc_grown {
    bool tried;
    cca_oom_ctx_t ctx;
    cca_status_t s;
    int64_t frees;
    uintptr_t made;
} alloc_grown_t;

/* The segment the hot path made for this request, if it is still st's
 * and whole and free: the ladder's block is its one block, which a fit
 * rule (max_split_size) may refuse to find. NULL otherwise. */
static cca_block_t *alloc_grown_block(cca_allocator_t *a, const cca_stream_t *st, int pool, size_t rounded,
                                      const alloc_grown_t *grown)
{
    if (!grown->tried || !grown->made) return NULL;
    cca_segment_t *seg = _cca_segmap_find(a, grown->made);
    if (!seg || seg->addr != grown->made || seg->stream != st || seg->pool != pool || seg->expandable) return NULL;
    cca_block_t *b = seg->first;
    return b && b->state == CCA_BLOCK_FREE && !b->next && b->size >= rounded ? b : NULL;
}

/* The standard segment was refused just now, off the all-locked path, and
 * nothing was given back to the device since: not asked for again. */
static bool alloc_grown_refused(const cca_allocator_t *a, int pool, size_t rounded, const alloc_grown_t *grown)
{
    return grown->tried && grown->ctx.new_tried && grown->ctx.pool == pool && grown->ctx.rounded == rounded &&
           grown->frees == a->stats.num_device_free;
}

static cca_status_t alloc_malloc_all_locked(cca_allocator_t *a, void **ptr, size_t size, uint64_t key,
                                      cudaStream_t stream, cca_stream_t **served, bool tentative,
                                      const alloc_grown_t *grown)
{
    cca_oom_ctx_t ctx = { .requested = size, .stream = stream, .pool = CCA_POOL_LARGE, .tentative = tentative };
    if (size > CCA_MAX_REQUEST) {
        ctx.rounded = ctx.alloc_size = size;
        return alloc_fail_oom(a, &ctx);
    }
    _cca_events_process(a);
    _cca_alloc_reap_pending(a);                             /* a retired stream's last block came back: its segment goes first */
    cca_stream_t *st = *served = _cca_stream_get(a, key, stream);
    if (!st || !_cca_block_spare_reserve(st) || !_cca_ptrmap_reserve(&st->live)) return alloc_fail_host(a, "cca_malloc", tentative);
    size_t rounded = _cca_config_round_size(&a->cfg, size);
    int pool = rounded <= CCA_SMALL_SIZE ? CCA_POOL_SMALL : CCA_POOL_LARGE;
    alloc_note_search(a, pool);
    cca_block_t *b = _cca_block_find_free(a, st, pool, rounded);
    if (!b) b = alloc_grown_block(a, st, pool, rounded, grown);
    if (!b && st->shard && _cca_stream_adopt(a, st, pool, rounded, true)) b = _cca_block_find_free(a, st, pool, rounded);
    if (!b) {
        ctx.rounded = rounded;
        ctx.alloc_size = _cca_segment_size(a, pool, rounded, CCA_RUNG_NEW);
        ctx.pool = pool;
        if (alloc_grown_refused(a, pool, rounded, grown)) {
            if (grown->ctx.host_failed) return alloc_fail_host(a, "cca_malloc", tentative);
            ctx.new_tried = true;
            ctx.device_refused = grown->ctx.device_refused;
        }
        cca_status_t s = _cca_segment_grow(a, st, pool, &ctx, &b);
        if (s == CCA_ERROR_OUT_OF_MEMORY && a->xv && !ctx.host_failed && st->shared &&
            (b = _cca_stream_sibling_block(a, st, pool, rounded)))
            s = CCA_OK;          /* expandable segments' ladder has no sibling rung (segment.c's has): at its end */
        if (s == CCA_OK && b->seg->stream != st) st = *served = b->seg->stream;   /* another record of the stream's */
        if (s == CCA_ERROR_OUT_OF_MEMORY)
            return ctx.host_failed ? alloc_fail_host(a, "cca_malloc", tentative) : alloc_fail_oom(a, &ctx);
        if (s != CCA_OK) return s;
    }
    cca_delta_t d;
    _cca_take_delta(&d, a, b, rounded, size);
    _cca_counters_apply(a, st, pool, &d);               /* all locked: cannot fail */
    _cca_block_take(a, b, rounded, size);
    _cca_ptrmap_put(&st->live, b->addr, b);    /* room was reserved above */
    b->tag = _cca_tag_now();
    b->context = _cca_history_context;
    if (_cca_history_on(a)) _cca_history_add(a, CCA_HISTORY_ALLOC, b->addr, size, st->handle, b->tag, 0);
    if (_cca_tracefile_on(a)) _cca_tracefile_alloc(a, b->addr, size, st);
    a->change.addr = b->addr, a->change.size = b->size, a->change.kind = 1;
    *ptr = (void *)b->addr;
    return CCA_OK;
}

/* No cached block serves the request: the standard segment, st locked
 * (segment.c says when that applies); NULL sends the request all locked,
 * with what was tried in *g. */
static __attribute__((noinline)) cca_block_t *alloc_grow_unlocked(cca_allocator_t *a, cca_stream_t *st, int pool,
                                                                  size_t rounded, size_t size, alloc_grown_t *g)
{
    g->ctx = (cca_oom_ctx_t){ .requested = size, .rounded = rounded, .pool = pool };
    g->frees = a->stats.num_device_free;              /* changed all locked only: st held, none runs */
    g->made = 0;
    cca_block_t *b = NULL;
    if (st->shard && _cca_stream_adopt(a, st, pool, rounded, false) && (b = _cca_block_find_free(a, st, pool, rounded)))
        return b;                                   /* a segment the stream's own record cached */
    g->tried = _cca_segment_grow_unlocked(a, st, pool, &g->ctx, &b, &g->s);
    if (!g->tried || g->s != CCA_OK) return NULL;
    g->made = b->addr;
    return b;
}

/* The hot path, under st's lock: false sends the caller all locked.
 * Inlined into cca_malloc and cca_malloc_try both: left out of line once it
 * had two callers, it cost 18 instructions an alloc+free pair
 * (scripts/instructions.sh). */
static inline __attribute__((always_inline)) bool alloc_malloc_fast(cca_allocator_t *a, cca_stream_t *st, void **ptr,
                                                                    size_t size, alloc_grown_t *g)
{
    size_t rounded = !a->plain_rounding ? _cca_config_round_size(&a->cfg, size)
                   : size < CCA_MIN_BLOCK ? CCA_MIN_BLOCK : (size + CCA_MIN_BLOCK - 1) & ~(CCA_MIN_BLOCK - 1);
    int pool = rounded <= CCA_SMALL_SIZE ? CCA_POOL_SMALL : CCA_POOL_LARGE;
    _cca_park_vacate(a, st, CCA_POOL_SMALL + CCA_POOL_LARGE - pool);   /* a take checks all-pools figures */
    cca_block_t *b = _cca_park_unpark(a, st, pool, rounded, size);
    if (b) {                                       /* still in the address map */
        alloc_note_search(a, pool);
        b->tag = _cca_tag_now();
        *ptr = (void *)b->addr;
        return true;
    }
    _cca_park_flush_unpaid(a, st, pool);
    if (__builtin_expect(!_cca_block_spare_reserve(st) || !_cca_ptrmap_reserve(&st->live), 0)) return false;
    b = _cca_block_find_free(a, st, pool, rounded);
    if (__builtin_expect(!b, 0) && !(b = alloc_grow_unlocked(a, st, pool, rounded, size, g))) return false;
    cca_delta_t d;
    _cca_take_delta(&d, a, b, rounded, size);
    if (!_cca_counters_apply(a, st, pool, &d)) return false;
    alloc_note_search(a, pool);
    _cca_block_take(a, b, rounded, size);
    _cca_ptrmap_put(&st->live, b->addr, b);
    b->tag = _cca_tag_now();
    *ptr = (void *)b->addr;
    return true;
}

/* The hot path's events (st locked, something pending somewhere): st's
 * own when no other stream has any; false (the caller goes all locked,
 * which handles every stream's) when another stream has some, or when a
 * block could not come back within st's leases. Events are recorded all
 * locked, so the count cannot rise while st is locked; another stream's
 * hot path can only lower it when it holds every pending event, so the
 * equality below never holds by accident. The cost: while another stream
 * has events pending, every malloc takes the all-locked path (PyTorch's
 * every malloc queries every stream's events under its one lock). */
static bool alloc_own_events_only(cca_allocator_t *a, cca_stream_t *st)
{
    if (atomic_load_explicit(&a->pending_events, memory_order_relaxed) != st->events.n_pending) return false;
    return _cca_events_process_stream(a, st);
}

#define CCA_CROWD_WAITS 8                          /* waits for one stream's lock ... */
#define CCA_CROWD_WINDOW 1024                      /* ... within this many of its acquisitions: a shard */
/* The hot path waited for st's lock (held now). A wait for another
 * thread's allocation on the same stream - not for an all-locked caller,
 * a sweep or a free (st->outside_acq tells) - on a stream's own record counts:
 * after CCA_CROWD_WAITS of them within CCA_CROWD_WINDOW acquisitions of
 * its lock, true: the call goes all locked, where this thread gets its
 * own record of the stream (stream.c, "shards") to serve it and its later
 * calls, so that the two threads stop taking turns. */
static __attribute__((noinline, cold)) bool alloc_crowded(cca_allocator_t *a, const cca_stream_t *st, uint64_t key)
{
    uint64_t acq = st->lock.fig.acquisitions;
    if (st->shard || st->outside_acq + 1 == acq) return false;
    cca_thread_streams_t *t = &_cca_thread_streams;
    if (t->crowd_alloc != a->id || t->crowd_key != key || acq - t->crowd_acq > CCA_CROWD_WINDOW) {
        t->crowd_alloc = a->id, t->crowd_key = key, t->crowd_acq = acq, t->crowd_n = 0;
    }
    if (++t->crowd_n < CCA_CROWD_WAITS) return false;
    t->crowd_n = 0;
    t->crowd_shard = true;                         /* alloc_malloc_slow makes it */
    return true;
}

/* The hot path on st, under its lock alone; false: the slow path must serve it. */
static inline __attribute__((always_inline)) bool alloc_try_fast(cca_allocator_t *a, cca_stream_t *st, uint64_t key,
                                                                 void **ptr, size_t size, alloc_grown_t *g)
{
    if (__builtin_expect(_cca_lock_waited(&st->lock), 0) && alloc_crowded(a, st, key)) {
        _cca_unlock(&st->lock);
        return false;
    }
    /* read under the stream lock: a watch set by the all-locked path
     * either saw this call finish or is seen by it. Completed events
     * are handled first, every stream's, as PyTorch does per malloc:
     * here when only this stream has any, else all locked (one
     * relaxed load when nothing is pending anywhere) */
    bool done = st->key == key && !alloc_hooked(a) &&   /* a record retired meanwhile has another key */
                (!atomic_load_explicit(&a->pending_events, memory_order_relaxed) ||
                 alloc_own_events_only(a, st)) &&
                alloc_malloc_fast(a, st, ptr, size, g);
    _cca_unlock(&st->lock);
    return done;
}

#define CCA_YIELD_PAUSES 64
/* Whether the hot path just failed only because a passed lease gave way
 * to a busy stream (counters.c): then it is tried again, at most twice,
 * with the stream's lock let go meanwhile - the other side (a stream
 * raising its peaks, an all-locked caller) needed it - instead of going
 * all locked, which would stop every stream. Clears the mark. st: the
 * call's stream (a mark left on another stream, whose call succeeded
 * anyway, is not this call's); NULL (a free, whose stream is found again):
 * any mark. */
static inline bool alloc_yielded(const cca_stream_t *st)
{
    bool y = _cca_thread_streams.admit_yielded && (!st || _cca_thread_streams.admit_yielded == st);
    _cca_thread_streams.admit_yielded = NULL;
    for (int i = 0; y && i < CCA_YIELD_PAUSES; i++) _cca_cpu_relax();   /* the other side's turn at the lock */
    return y;
}

/* The all-locked path of cca_malloc, out of line (after the hot path's
 * retries when it gave way). While history is on, the context function
 * runs first, before any lock. A thread whose hot path found the stream
 * crowded gets its own record of it here (alloc_crowded). */
static __attribute__((noinline)) cca_status_t alloc_malloc_slow(cca_allocator_t *a, cca_stream_t *st, void **ptr,
                                                                size_t size, uint64_t key, cudaStream_t stream,
                                                                bool tentative, alloc_grown_t *grown)
{
    for (int tries = 0; tries < 2 && st && alloc_yielded(st) && !grown->tried; tries++)
        if (alloc_try_fast(a, st, key, ptr, size, grown)) return CCA_OK;
    _cca_thread_streams.admit_yielded = NULL;
    if (grown->tried && grown->ctx.new_tried && grown->s != CCA_ERROR_OUT_OF_MEMORY)
        return grown->s;                                                             /* a CUDA error ends the ladder */
    uint64_t ctx = 0;
    bool recording = atomic_load_explicit(&a->hooks, memory_order_relaxed) & CCA_HOOK_HISTORY;
    if (recording) ctx = _cca_history_context_begin(CCA_HISTORY_ALLOC);
    _cca_alloc_lock_all(a);
    if (__builtin_expect(_cca_thread_streams.crowd_shard, 0)) {   /* alloc_crowded */
        _cca_thread_streams.crowd_shard = false;
        (void)_cca_stream_shard(a, key);              /* NULL: the stream's own record serves it */
    }
    cca_stream_t *served = NULL;
    cca_status_t s = alloc_malloc_all_locked(a, ptr, size, key, stream, &served, tentative, grown);
    alloc_unlock_all_changed(a, served);
    if (__builtin_expect(s == CCA_ERROR_OUT_OF_MEMORY, 0) && !tentative) a->acct.ops->after_oom(a);
    if (recording) _cca_history_context_end(ctx);
    return s;
}

/* cca_malloc and cca_malloc_try: tentative is a constant in each, so the
 * hot path is the same code. */
static inline __attribute__((always_inline)) cca_status_t alloc_malloc(cca_allocator_t *a, void **ptr, size_t size,
                                                                       cudaStream_t stream, bool tentative)
{
    if (__builtin_expect(!a || !ptr, 0))
        return _cca_errors_fail(CCA_ERROR_INVALID_ARGUMENT, "%s: %s is NULL", tentative ? "cca_malloc_try" : "cca_malloc",
                         a ? "ptr" : "allocator");
    *ptr = NULL;
    if (size == 0) return CCA_OK;
    uint64_t key = _cca_stream_key(a->cfg.device, stream);
    if (__builtin_expect(key == UINT64_MAX, 0))
        return _cca_errors_fail(CCA_ERROR_CUDA, "cca_malloc: the runtime gave no id for cudaStreamPerThread");
    cca_stream_t *st = _cca_stream_cached(a, key);
    alloc_grown_t grown;
    grown.tried = false;
    if (st && size <= CCA_MAX_REQUEST && alloc_try_fast(a, st, key, ptr, size, &grown)) return CCA_OK;
    return alloc_malloc_slow(a, st && size <= CCA_MAX_REQUEST ? st : NULL, ptr, size, key, stream, tentative, &grown);
}

cca_status_t cca_malloc(cca_allocator_t *a, void **ptr, size_t size, cudaStream_t stream)
{
    return alloc_malloc(a, ptr, size, stream, false);
}

/* Its own call, not a flag: a callback it runs (a watch) that allocates is
 * not tentative. */
cca_status_t cca_malloc_try(cca_allocator_t *a, void **ptr, size_t size, cudaStream_t stream)
{
    return alloc_malloc(a, ptr, size, stream, true);
}

/* ---- free -------------------------------------------------------------- */

/* Takes block b (found in st's map, all locked) back from the caller: free,
 * or pending while streams it was used on may still use it. */
static void alloc_release_to_pool(cca_allocator_t *a, cca_stream_t *st, cca_block_t *b)
{
    int pool = b->seg->pool;
    _cca_ptrmap_take(&st->live, b->addr);
    if (__builtin_expect(b->n_uses != 0, 0)) {
        cca_delta_t d;
        _cca_release_delta(&d, a, b);
        _cca_counters_apply(a, st, pool, &d);
        _cca_events_free_with_uses(a, b);                     /* b->requested stays: counted until the uses complete */
    } else {
        if (_cca_history_on(a)) _cca_history_add(a, CCA_HISTORY_FREE_COMPLETED, b->addr, b->requested, st->handle, b->tag, 0);
        cca_delta_t d;
        _cca_free_delta(&d, a, b);
        _cca_counters_apply(a, st, pool, &d);
        _cca_block_free(a, b);
    }
}

/* Why ptr is no live allocation (all locked): outside every segment of
 * this allocator, inside a block (which one), or the start of a block that
 * is not handed out (freed already, or never given). */
static cca_status_t alloc_bad_pointer(cca_allocator_t *a, const char *call, const void *ptr)
{
    uintptr_t p = (uintptr_t)ptr;
    cca_segment_t *seg = p ? _cca_segmap_find(a, p) : NULL;
    if (!seg || p < seg->addr || p >= seg->addr + seg->size)
        return _cca_errors_fail(CCA_ERROR_INVALID_POINTER, "%s: %p is not from this allocator (no segment of device %d holds it)",
                         call, ptr, a->cfg.device);
    for (cca_block_t *b = seg->first; b; b = b->next) {
        if (p < b->addr || p >= b->addr + b->size) continue;
        if (b->state == CCA_BLOCK_ALLOCATED)          /* not at its start: alloc_find_live found none */
            return _cca_errors_fail(CCA_ERROR_INVALID_POINTER, "%s: %p is inside the block at %p (%zu bytes, %zu in): "
                             "pass the address cca_malloc gave", call, ptr, (void *)b->addr, b->size, (size_t)(p - b->addr));
        if (b->state == CCA_BLOCK_PENDING && p == b->addr)
            return _cca_errors_fail(CCA_ERROR_INVALID_POINTER, "%s: %p was freed already (its free awaits other streams' work)",
                             call, ptr);
        return _cca_errors_fail(CCA_ERROR_INVALID_POINTER, "%s: %p is not handed out: freed already, or never given "
                         "(it lies in free memory cca caches)", call, ptr);
    }
    return _cca_errors_fail(CCA_ERROR_INVALID_POINTER, "%s: %p is in a segment of this allocator but in no block of it", call, ptr);
}

/* The live block at ptr in st's own map (st locked), or NULL; counted.
 * *slot (if not NULL) gets its map slot. */
static cca_block_t *alloc_live_in(cca_stream_t *st, void *ptr, cca_ptrmap_slot_t **slot)
{
    cca_ptrmap_slot_t *s = st->live.slots ? _cca_ptrmap_find(&st->live, (uintptr_t)ptr) : NULL;
    if (!s || s->block->state != CCA_BLOCK_ALLOCATED) return NULL;
    st->lookups++;
    if (slot) *slot = s;
    return s->block;
}

/* The stream record that holds live block ptr, locked, with the block in
 * *out and its map slot in *slot; NULL (nothing locked) when ptr is not a
 * live block of a. One look in the address map, one stream visited, no
 * scan: the map may name a segment released meanwhile (records are
 * recycled, never freed), so the answer is the stream's own map, read
 * under its lock. */
static inline __attribute__((always_inline)) cca_stream_t *alloc_lock_owner(cca_allocator_t *a, void *ptr, cca_block_t **out,
                                                                         cca_ptrmap_slot_t **slot)
{
    cca_segment_t *seg = _cca_segmap_find(a, (uintptr_t)ptr);
    cca_stream_t *st = seg ? atomic_load_explicit(&seg->owner, memory_order_acquire) : NULL;
    if (!st) return NULL;
    _cca_lock(&st->lock);
    st->outside_acq = st->lock.fig.acquisitions;      /* no allocation's hot path: a wait for it is no crowding */
    if (!(*out = alloc_live_in(st, ptr, slot))) {
        _cca_unlock(&st->lock);
        return NULL;
    }
    return st;
}

/* The live block at ptr (all locked), or NULL. */
static cca_block_t *alloc_find_live(cca_allocator_t *a, void *ptr)
{
    cca_segment_t *seg = _cca_segmap_find(a, (uintptr_t)ptr);
    return seg && seg->stream ? alloc_live_in(seg->stream, ptr, NULL) : NULL;
}

/* cca_free's all-locked path, out of line: the hot path above stays as it
 * was. While history is on, the context function runs first, before any
 * lock (cca_history_set_context). */
static __attribute__((noinline)) cca_status_t alloc_free_all_locked(cca_allocator_t *a, void *ptr)
{
    uint64_t ctx = 0;
    bool recording = atomic_load_explicit(&a->hooks, memory_order_relaxed) & CCA_HOOK_HISTORY;
    if (recording) ctx = _cca_history_context_begin(CCA_HISTORY_FREE_REQUESTED);
    _cca_alloc_lock_all(a);
    cca_block_t *b = alloc_find_live(a, ptr);
    cca_status_t s = CCA_OK;
    if (!b) {
        s = alloc_bad_pointer(a, "cca_free", ptr);
        _cca_alloc_unlock_all(a, NULL);
    } else {
        cca_stream_t *st = b->seg->stream;
        if (_cca_history_on(a))
            _cca_history_add(a, CCA_HISTORY_FREE_REQUESTED, b->addr, b->requested, st->handle, b->tag, 0);
        if (_cca_tracefile_on(a)) _cca_tracefile_free(a, b->addr, b->requested, st);
        a->change.addr = b->addr, a->change.size = b->size, a->change.kind = -1;
        alloc_release_to_pool(a, st, b);
        if (st->dead) _cca_stream_reap_all(a);           /* its segment may go back now */
        alloc_unlock_all_changed(a, st->dead ? NULL : st);
    }
    if (recording) _cca_history_context_end(ctx);
    return s;
}

/* The hot path of cca_free: false sends it all locked. */
static inline __attribute__((always_inline)) bool alloc_free_fast(cca_allocator_t *a, void *ptr)
{
    cca_block_t *b = NULL;
    cca_ptrmap_slot_t *slot = NULL;
    cca_stream_t *st = alloc_lock_owner(a, ptr, &b, &slot);
    if (!st) return false;
    /* watched (every change all locked), used on other streams (events
     * to record) or retired (its segment may go back): all locked */
    bool done = false;
    if (!alloc_hooked(a) && b->n_uses == 0 && !st->dead) {
        int pool = b->seg->pool;
        if (st->parked[pool]) {                       /* its neighbours as they really are */
            _cca_park_flush_unpaid(a, st, pool);
            slot = _cca_ptrmap_find(&st->live, b->addr);   /* the flush moved the map */
        }
        if (_cca_park_wanted(a, st, pool) && _cca_park(a, st, b)) {
            done = true;
        } else {
            cca_delta_t d;
            _cca_free_delta(&d, a, b);
            if ((done = _cca_counters_apply(a, st, pool, &d))) {
                _cca_ptrmap_erase(&st->live, slot);
                _cca_block_free(a, b);
            }
        }
        if (done) _cca_counters_give_if_wanted(a, st, pool);   /* another stream lacked room: the freed room to the headroom */
    }
    _cca_unlock(&st->lock);
    return done;
}

static __attribute__((noinline)) cca_status_t alloc_free_slow(cca_allocator_t *a, void *ptr)
{
    for (int tries = 0; tries < 2 && alloc_yielded(NULL); tries++)   /* as alloc_malloc_slow */
        if (alloc_free_fast(a, ptr)) return CCA_OK;
    _cca_thread_streams.admit_yielded = NULL;
    return alloc_free_all_locked(a, ptr);
}

cca_status_t cca_free(cca_allocator_t *a, void *ptr)
{
    if (!a) return _cca_errors_fail(CCA_ERROR_INVALID_ARGUMENT, "cca_free: allocator is NULL");
    if (!ptr) return CCA_OK;
    if (alloc_free_fast(a, ptr)) return CCA_OK;
    return alloc_free_slow(a, ptr);
}

/* ---- the rest of the API ----------------------------------------------- */

/* Adds stream `key` to b's uses (b's stream locked); false if host memory ran out. */
static bool alloc_add_use(cca_block_t *b, cudaStream_t stream, uint64_t key)
{
    if (key == b->seg->stream->key) return true;          /* its own stream is no extra use */
    for (int i = 0; i < b->n_uses; i++)
        if (b->uses[i].key == key) return true;
    if (b->n_uses == b->cap_uses) {
        int cap = b->cap_uses ? b->cap_uses * 2 : 2;
        cca_use_t *u = realloc(b->uses, (size_t)cap * sizeof *u);
        if (!u) return false;
        b->seg->stream->host_bytes += (int64_t)(cap - b->cap_uses) * (int64_t)sizeof *u;
        b->uses = u;
        b->cap_uses = cap;
    }
    b->uses[b->n_uses++] = (cca_use_t){ stream, key };
    return true;
}

cca_status_t cca_record_stream(cca_allocator_t *a, void *ptr, cudaStream_t stream)
{
    if (!a) return _cca_errors_fail(CCA_ERROR_INVALID_ARGUMENT, "cca_record_stream: allocator is NULL");
    uint64_t key = _cca_stream_key(a->cfg.device, stream);
    if (key == UINT64_MAX)
        return _cca_errors_fail(CCA_ERROR_CUDA, "cca_record_stream: the runtime gave no id for cudaStreamPerThread");
    cca_block_t *b = NULL;
    cca_stream_t *st = ptr ? alloc_lock_owner(a, ptr, &b, NULL) : NULL;
    if (st) {
        bool done = alloc_add_use(b, stream, key);
        _cca_unlock(&st->lock);
        if (done) return CCA_OK;
    }
    _cca_alloc_lock_all(a);
    b = ptr ? alloc_find_live(a, ptr) : NULL;
    cca_status_t s = !b ? alloc_bad_pointer(a, "cca_record_stream", ptr)
                   : alloc_add_use(b, stream, key) ? CCA_OK : alloc_fail_host(a, "cca_record_stream", false);
    _cca_alloc_unlock_all(a, NULL);
    return s;
}

cca_status_t cca_stream_retire(cca_allocator_t *a, cudaStream_t stream)
{
    if (!a) return _cca_errors_fail(CCA_ERROR_INVALID_ARGUMENT, "cca_stream_retire: allocator is NULL");
    uint64_t key = _cca_stream_key(a->cfg.device, stream);
    if (key == UINT64_MAX)
        return _cca_errors_fail(CCA_ERROR_CUDA, "cca_stream_retire: the runtime gave no id for cudaStreamPerThread");
    if (key == 0)
        return _cca_errors_fail(CCA_ERROR_INVALID_ARGUMENT, "cca_stream_retire: the legacy default stream cannot be retired");
    _cca_alloc_lock_all(a);
    bool found = false;
    for (cca_stream_t *st = a->streams; st; st = st->next)   /* its own record and its threads' (shards) */
        if (st->key == key) {
            atomic_store_explicit(&st->dying, true, memory_order_relaxed);
            found = true;
        }
    if (found) _cca_stream_reap_all(a);
    alloc_unlock_all_changed(a, NULL);
    return CCA_OK;
}

cca_status_t cca_empty_cache(cca_allocator_t *a)
{
    if (!a) return _cca_errors_fail(CCA_ERROR_INVALID_ARGUMENT, "cca_empty_cache: allocator is NULL");
    _cca_alloc_lock_all(a);
    _cca_segment_release_cached(a);
    alloc_unlock_all_changed(a, NULL);
    return CCA_OK;
}

cca_status_t cca_get_stats_sized(cca_allocator_t *a, cca_stats_t *out, size_t out_size)
{
    if (!a || !out) return _cca_errors_fail(CCA_ERROR_INVALID_ARGUMENT, "cca_get_stats: %s is NULL", a ? "out" : "allocator");
    if (out_size < CCA_V1_STATS)
        return _cca_errors_fail(CCA_ERROR_INVALID_ARGUMENT, "cca_get_stats: %zu bytes is no cca_stats_t", out_size);
    cca_stats_t s;
    _cca_alloc_lock_all(a);
    _cca_counters_view(a, &s);
    _cca_alloc_unlock_all(a, NULL);
    _cca_copy_out(out, out_size, &s, sizeof s);
    return CCA_OK;
}

cca_status_t cca_reset_peak_stats(cca_allocator_t *a)
{
    if (!a) return _cca_errors_fail(CCA_ERROR_INVALID_ARGUMENT, "cca_reset_peak_stats: allocator is NULL");
    _cca_alloc_lock_all(a);
    _cca_counters_reset_peaks(a);
    _cca_alloc_unlock_all(a, NULL);
    return CCA_OK;
}

cca_status_t cca_reset_accumulated_stats(cca_allocator_t *a)
{
    if (!a) return _cca_errors_fail(CCA_ERROR_INVALID_ARGUMENT, "cca_reset_accumulated_stats: allocator is NULL");
    _cca_alloc_lock_all(a);
    _cca_counters_reset_accumulated(a);
    a->accumulated_reset = true;
    _cca_alloc_unlock_all(a, NULL);
    return CCA_OK;
}

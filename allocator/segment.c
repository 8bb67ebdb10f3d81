/* segment.c - segments: cudaMalloc and cudaFree on the allocator's device,
 * releasing unused cached segments (OOM retry, empty cache, garbage
 * collection, release_before_grow), and growing: the ladder of rungs a
 * request climbs for a new segment, and the one function that sizes them.
 * All locked, but for the ladder's first rung, which a stream's hot path
 * climbs alone where no policy acts before it (_cca_segment_grow_unlocked). */
#include <stdlib.h>
#include <string.h>
#include "internal.h"

/* ---- device calls on the allocator's device ---------------------------- */

cudaError_t _cca_segment_device_enter(cca_allocator_t *a, dev_guard_t *g)
{
    int cur = -1;
    g->switched = false;
    cudaError_t e = cudaGetDevice(&cur);
    if (e != cudaSuccess || cur == a->cfg.device) return e;
    e = cudaSetDevice(a->cfg.device);
    if (e == cudaSuccess) { g->prev = cur; g->switched = true; }
    return e;
}

/* The caller's current device is the caller's: a failed restore is tried
 * again (a transient failure must not leave it on ours). */
void _cca_segment_device_leave(dev_guard_t *g)
{
    for (int tries = 0; g->switched && tries < 3; tries++) {
        if (cudaSetDevice(g->prev) == cudaSuccess) return;
        _cca_errors_clear();
    }
}

/* ---- segments ---------------------------------------------------------- */

/* A segment record: recycled ones first (they are never freed before the
 * allocator; see segmap.c). */
cca_segment_t *_cca_segment_new(cca_allocator_t *a)
{
    cca_segment_t *seg = a->spare_segs;
    if (seg) {
        a->spare_segs = seg->next;                  /* its owner is NULL already */
    } else {
        if (!(seg = malloc(sizeof *seg))) return NULL;
        a->host_bytes += (int64_t)sizeof *seg;
        atomic_init(&seg->owner, NULL);
    }
    seg->stream = NULL;
    seg->first = seg->last = NULL;
    seg->prev = seg->next = NULL;
    seg->expandable = false;
    return seg;
}

void _cca_segment_recycle(cca_allocator_t *a, cca_segment_t *seg)
{
    atomic_store_explicit(&seg->owner, NULL, memory_order_relaxed);
    seg->stream = NULL;
    seg->next = a->spare_segs;
    a->spare_segs = seg;
}

void _cca_segment_destroy_all(cca_allocator_t *a)
{
    for (cca_segment_t *s = a->spare_segs, *n; s; s = n) { n = s->next; free(s); }
    a->spare_segs = NULL;
}

/* cudaMalloc(size) on the allocator's device, its range reserved in the
 * address map: CCA_OK with *p, else the failure said (ctx: why). */
static cca_status_t segment_device_alloc(cca_allocator_t *a, size_t size, cca_oom_ctx_t *ctx, void **p)
{
    dev_guard_t g;
    cudaError_t e = _cca_segment_device_enter(a, &g);
    if (e == cudaSuccess) e = cudaMalloc(p, size);
    bool mapped = e == cudaSuccess && _cca_segmap_reserve(a, (uintptr_t)*p, size);
    if (e == cudaSuccess && !mapped && cudaFree(*p) != cudaSuccess) _cca_errors_clear();
    _cca_segment_device_leave(&g);
    if (mapped)
        return CCA_OK;
    if (e == cudaSuccess) {                           /* the address map's host memory ran out */
        ctx->host_failed = true;
        return _cca_errors_fail(CCA_ERROR_OUT_OF_MEMORY, "cca: host memory for the address map ran out");
    }
    _cca_errors_clear();
    if (e == cudaErrorMemoryAllocation) {
        ctx->device_refused = true;
        return CCA_ERROR_OUT_OF_MEMORY;
    }
    return _cca_errors_fail_cuda(e, "cca: cudaMalloc(%zu) on device %d failed: %s",
                     size, a->cfg.device, cudaGetErrorName(e));
}

/* The new segment at p, one free block b, in the stream's bins, the
 * segment list, the address map and the figures. */
static void segment_install(cca_allocator_t *a, cca_stream_t *st, int pool, size_t size, void *p,
                            cca_segment_t *seg, cca_block_t *b)
{
    seg->addr = (uintptr_t)p;
    seg->size = size;
    seg->pool = pool;
    seg->stream = st;
    atomic_store_explicit(&seg->owner, st, memory_order_relaxed);
    seg->first = seg->last = b;
    seg->next = a->segments;
    if (a->segments) a->segments->prev = seg;
    a->segments = seg;
    b->addr = seg->addr;
    b->size = size;
    b->seg = seg;
    b->gc_base = atomic_load_explicit(&a->gc_searches, memory_order_relaxed);
    b->state = CCA_BLOCK_FREE;
    _cca_bins_insert(st->free[pool], b);
    _cca_segmap_insert(a, seg);
    int ps = pool;
    _cca_stat_add(a->stats.segment, ps, 1);
    _cca_stat_add(a->stats.reserved_bytes, ps, (int64_t)size);
    if (_cca_oversize(a, size)) _cca_stat_update(&a->stats.oversize_segments, 1);
    a->stats.num_device_alloc++;
    if ((size_t)a->stats.reserved_bytes[CCA_POOL_ALL].current > a->reserved_high)
        a->reserved_high = (size_t)a->stats.reserved_bytes[CCA_POOL_ALL].current;
    if (_cca_history_on(a)) _cca_history_add(a, CCA_HISTORY_SEGMENT_ALLOC, seg->addr, size, st->handle, 0, 0);
}

static cca_status_t segment_alloc_segment(cca_allocator_t *a, cca_stream_t *st, int pool, size_t size,
                                  cca_oom_ctx_t *ctx, bool retry, cca_block_t **out)
{
    if (retry) a->stats.num_alloc_retries++;
    if (a->cap != SIZE_MAX &&
        (size > a->cap || (size_t)a->stats.reserved_bytes[CCA_POOL_ALL].current > a->cap - size)) {
        ctx->cap_refused = true;
        return CCA_ERROR_OUT_OF_MEMORY;
    }
    /* its own block struct: the stream's spare stays for the split that follows */
    cca_segment_t *seg = _cca_segment_new(a);
    cca_block_t *b = aligned_alloc(_Alignof(cca_block_t), sizeof *b);
    if (b) {
        memset(b, 0, sizeof *b);
        a->host_bytes += (int64_t)sizeof *b;
    }
    void *p = NULL;
    cca_status_t r = !seg || !b ? CCA_ERROR_OUT_OF_MEMORY : segment_device_alloc(a, size, ctx, &p);
    if (r != CCA_OK) {
        if (seg) _cca_segment_recycle(a, seg);
        if (b) { free(b); a->host_bytes -= (int64_t)sizeof *b; }
        if (!seg || !b) {
            ctx->host_failed = true;
            return _cca_errors_fail(CCA_ERROR_OUT_OF_MEMORY, "cca: host memory for segment metadata ran out");
        }
        return r;
    }
    segment_install(a, st, pool, size, p, seg, b);
    *out = b;
    return CCA_OK;
}

/* Returns a segment whose only block is free to the device. */
bool _cca_segment_release(cca_allocator_t *a, cca_segment_t *seg)
{
    if (seg->expandable) return _cca_expand_release_segment(a, seg);
    cca_block_t *b = seg->first;
    dev_guard_t g;
    cudaError_t e = _cca_segment_device_enter(a, &g);
    if (e == cudaSuccess) e = cudaFree((void *)seg->addr);
    _cca_segment_device_leave(&g);
    if (e != cudaSuccess) {            /* keep it cached; the state stays consistent */
        _cca_errors_clear();
        return false;
    }
    _cca_segmap_remove(a, seg);
    _cca_bins_remove(seg->stream->free[seg->pool], b);
    int ps = seg->pool;
    _cca_stat_add(a->stats.segment, ps, -1);
    _cca_stat_add(a->stats.reserved_bytes, ps, -(int64_t)seg->size);
    if (_cca_oversize(a, seg->size)) _cca_stat_update(&a->stats.oversize_segments, -1);
    a->stats.num_device_free++;
    if (_cca_history_on(a)) _cca_history_add(a, CCA_HISTORY_SEGMENT_FREE, seg->addr, seg->size, seg->stream->handle, 0, 0);
    if (seg->prev) seg->prev->next = seg->next;
    else a->segments = seg->next;
    if (seg->next) seg->next->prev = seg->prev;
    _cca_block_recycle(seg->stream, b);
    _cca_segment_recycle(a, seg);
    return true;
}

static inline bool segment_unused(const cca_segment_t *seg)
{
    return seg->first->state == CCA_BLOCK_FREE && !seg->first->next;
}

static int segment_release_order(const void *x, const void *y)
{
    const cca_segment_t *p = *(cca_segment_t *const *)x, *q = *(cca_segment_t *const *)y;
    int lp = p->pool != CCA_POOL_LARGE, lq = q->pool != CCA_POOL_LARGE;
    if (lp != lq) return lp - lq;
    uintptr_t sp = (uintptr_t)p->stream->handle, sq = (uintptr_t)q->stream->handle;
    if (sp != sq) return sp < sq ? -1 : 1;
    if (p->size != q->size) return p->size < q->size ? -1 : 1;
    return p->addr < q->addr ? -1 : p->addr > q->addr;
}

/* Releases every fully free segment (after waiting for pending frees), in
 * the order PyTorch's empty_cache frees them: the large pool's, then the
 * small pool's, each by stream, size and address (the order of its free
 * block sets), so that the device calls and the history come in the same
 * order. With expandable segments every free handle goes first, both
 * pools at once (PyTorch unmaps the large pool's, then the small's). */
void _cca_segment_release_cached(cca_allocator_t *a)
{
    _cca_events_sync_pending(a);
    if (a->xv) {                                      /* every handle inside a free block, as PyTorch */
        dev_guard_t g;
        if (_cca_segment_device_enter(a, &g) != cudaSuccess) _cca_errors_clear();
        _cca_expand_release_cached(a);
        _cca_segment_device_leave(&g);
    }
    size_t n = 0;
    for (cca_segment_t *s = a->segments; s; s = s->next) n += !s->expandable && segment_unused(s);
    cca_segment_t **order = n > 1 ? malloc(n * sizeof *order) : NULL;
    if (order) {                                      /* PyTorch's order: large pool first, then by (stream, size, address) */
        size_t k = 0;
        for (cca_segment_t *s = a->segments; s; s = s->next)
            if (!s->expandable && segment_unused(s)) order[k++] = s;
        qsort(order, n, sizeof *order, segment_release_order);
        for (size_t i = 0; i < n; i++) _cca_segment_release(a, order[i]);
        free(order);
    } else {                                          /* one segment, or no memory for the order */
        for (cca_segment_t *s = a->segments, *next; s; s = next) {
            next = s->next;
            if (!s->expandable && segment_unused(s)) _cca_segment_release(a, s);
        }
    }
    _cca_alloc_reap_pending(a);                             /* records left holding nothing */
}

/* With max_split_size set: free oversize cached blocks of this stream, the
 * best fitting one, or the largest ones until `size` bytes are released. */
static bool segment_release_available(cca_allocator_t *a, cca_stream_t *st, int pool, size_t size)
{
    size_t msz = a->fit_msz;                          /* SIZE_MAX with expandable segments: nothing is oversize there */
    if (msz == SIZE_MAX || pool != CCA_POOL_LARGE) return false;
    size_t key = size < msz ? msz : size;
    cca_block_t *b = _cca_bins_best_fit(st->free[pool], key);
    if (b) return _cca_segment_release(a, b->seg);
    size_t released = 0;
    while (released < key) {
        b = _cca_bins_largest(st->free[pool]);
        if (!b || b->size < msz) break;
        size_t sz = b->size;
        if (!_cca_segment_release(a, b->seg)) break;
        released += sz;
    }
    return released >= key;
}

/* PyTorch's garbage collection: with a cap, once reserved passes the
 * threshold, release unused large segments, the longest unused first. */
static void segment_garbage_collect(cca_allocator_t *a)
{
    double threshold = a->cfg.garbage_collection_threshold * (double)a->cap;
    double reserved = (double)a->stats.reserved_bytes[CCA_POOL_ALL].current;
    if (reserved <= threshold) return;
    size_t target = (size_t)(reserved - threshold), reclaimed = 0, count = 0;
    uint64_t now = atomic_load_explicit(&a->gc_searches, memory_order_relaxed);
    uint64_t total_age = 0;
    for (cca_segment_t *s = a->segments; s; s = s->next)
        if (s->pool == CCA_POOL_LARGE && segment_unused(s)) {
            total_age += now - s->first->gc_base;
            count++;
        }
    bool freed = true;
    while (reclaimed < target && freed && count > 0) {
        double avg = (double)total_age / (double)count;
        freed = false;
        for (cca_segment_t *s = a->segments, *next; s; s = next) {
            next = s->next;
            if (s->pool != CCA_POOL_LARGE || !segment_unused(s)) continue;
            uint64_t age = now - s->first->gc_base;
            if ((double)age < avg) continue;
            size_t sz = s->size;
            if (!_cca_segment_release(a, s)) continue;
            freed = true;
            reclaimed += sz;
            total_age -= age;
            count--;
        }
    }
}

/* Bytes of fully free segments, all streams (all locked: the figures are
 * exact). A segment of one free block is neither active nor a split
 * segment's inactive part, so these are what is left of reserved. */
static size_t segment_unused_bytes(const cca_allocator_t *a)
{
    const cca_stats_t *s = &a->stats;
    return (size_t)(s->reserved_bytes[CCA_POOL_ALL].current - s->active_bytes[CCA_POOL_ALL].current -
                    s->inactive_split_bytes[CCA_POOL_ALL].current - s->unmapped_bytes.current);
}

/* The fully free segment of stream st to release for `want` more bytes:
 * the smallest that covers want, else the largest; NULL if none. `unused`:
 * the bytes of every stream's fully free segments, so the walk stops once
 * it has seen them all. */
static cca_segment_t *segment_unused_for(cca_allocator_t *a, const cca_stream_t *st, size_t unused, size_t want)
{
    cca_segment_t *best = NULL;
    size_t seen = 0;
    for (cca_segment_t *s = a->segments; s && seen < unused; s = s->next) {
        if (!segment_unused(s)) continue;
        seen += s->size;
        if (s->stream != st) continue;
        if (!best || (best->size >= want ? s->size >= want && s->size < best->size : s->size > best->size)) best = s;
    }
    return best;
}

/* Whether memory is plentiful for release_before_grow: the device's free
 * memory (or the cap's room, if less) at least CCA_TRIM_PLENTY times what
 * cca holds, on cca's device. (Locked; a failed query counts as not
 * plentiful.) */
bool _cca_segment_trim_plentiful(cca_allocator_t *a)
{
    size_t reserved = (size_t)a->stats.reserved_bytes[CCA_POOL_ALL].current;
    size_t cap_room = a->cap == SIZE_MAX ? SIZE_MAX : a->cap > reserved ? a->cap - reserved : 0;
    size_t dev_free = 0, dev_total = 0;
    dev_guard_t g;
    cudaError_t e = _cca_segment_device_enter(a, &g);
    if (e == cudaSuccess) e = cudaMemGetInfo(&dev_free, &dev_total);
    _cca_segment_device_leave(&g);
    if (e != cudaSuccess) {
        _cca_errors_clear();
        return false;
    }
    size_t avail = dev_free < cap_room ? dev_free : cap_room;
    return avail / CCA_TRIM_PLENTY >= reserved;
}

/* release_before_grow: a new segment of `need` bytes for stream st would
 * raise the reserved peak; return st's unused cached segments (each time
 * the smallest that covers what is left of the excess, else the largest:
 * no more than needed), so that the peak grows only by what live blocks
 * and their layout require.
 * - Only st's own: another stream's cache is what that stream needs again
 *   in its next step, and without expandable segments moving memory
 *   between streams costs a cudaFree and a cudaMalloc each time (thrash);
 *   the OOM path still releases every stream's.
 * - Only while memory is plentiful (_cca_segment_trim_plentiful): trimming is for
 *   a process that holds a small share of the device (what others sharing
 *   it, and nvidia-smi, see). Once cca holds more, the smallest device a
 *   program fits on is decided by the OOM path (release everything, retry),
 *   and earlier releases only perturb the layout it works with: replays
 *   needed up to 13% more device than the default's with them
 *   (docs/history.md).
 * - Only when they cover the whole excess, so the peak stays where it is:
 *   a release that cannot stop the peak from rising costs a cudaFree now
 *   and, the workload still growing, a cudaMalloc soon after (on
 *   multi-stream variants such partial releases, and releasing the largest
 *   segments first, more than doubled the default's device calls). */
static void segment_release_for_peak(cca_allocator_t *a, const cca_stream_t *st, size_t need)
{
    size_t reserved = (size_t)a->stats.reserved_bytes[CCA_POOL_ALL].current;
    if (reserved + need <= a->reserved_high) return;
    size_t excess = reserved + need - a->reserved_high, released = 0, unused = segment_unused_bytes(a);
    if (unused < excess || !_cca_segment_trim_plentiful(a)) return;
    cca_segment_t *s;
    size_t own = 0, seen = 0;
    for (s = a->segments; s && seen < unused; s = s->next)
        if (segment_unused(s)) {
            seen += s->size;
            if (s->stream == st) own += s->size;
        }
    if (own < excess) return;                         /* the peak rises anyway: keep them */
    while (released < excess && unused && (s = segment_unused_for(a, st, unused, excess - released))) {
        size_t sz = s->size;
        if (!_cca_segment_release(a, s)) break;
        released += sz;
        unused -= sz;
    }
}

/* The standard segment for st's request without the all-locked path: st
 * held, and the segment-list lock for what segments share (the list, the
 * records, the address map, host_bytes, the segment figures and the cap's
 * test against them). Only where nothing before that rung must see every
 * stream - no garbage collection, release_before_grow or
 * segment_growth_percent - and not for expandable segments, whose handles
 * and address space stay all locked. */
bool _cca_segment_grow_unlocked(cca_allocator_t *a, cca_stream_t *st, int pool, cca_oom_ctx_t *ctx,
                                cca_block_t **out, cca_status_t *s)
{
    if (a->xv || a->gc_enabled || a->cfg.release_before_grow || a->cfg.segment_growth_percent) return false;
    size_t size = _cca_segment_size(a, pool, ctx->rounded, CCA_RUNG_NEW);
    _cca_lock(&a->seg_lock);
    *s = segment_alloc_segment(a, st, pool, size, ctx, false, out);
    _cca_unlock(&a->seg_lock);
    if (*s == CCA_ERROR_OUT_OF_MEMORY && ctx->cap_refused) return false;   /* no device call: the ladder decides */
    ctx->new_tried = *s != CCA_OK;
    return true;
}

/* ---- the growth ladder ---------------------------------------------------
 * A request no cached block serves climbs these rungs until one gives it a
 * segment: each names the segment size it asks for (_cca_segment_size, the
 * one place segment sizes are decided, which the OOM report asks too) and
 * what is released before asking. Only the release-everything rung counts
 * as a retry (num_alloc_retries, as PyTorch's). */

/* segment_growth_percent: a large segment is at least that share of the
 * large bytes reserved so far, so a growing workload makes few cudaMalloc
 * calls; splitting serves later requests from the rest. Never more than a
 * quarter of the room left under the cap or the device. */
static size_t segment_grown_size(const cca_allocator_t *a, int pool, size_t size)
{
    size_t pct = a->cfg.segment_growth_percent;
    if (!pct) return size;
    size_t reserved_pool = (size_t)a->stats.reserved_bytes[pool].current;
    size_t want = _cca_round_up_2m(reserved_pool / 100 * pct + reserved_pool % 100 * pct / 100);
    size_t cap = pool == CCA_POOL_SMALL ? CCA_SMALL_GROWTH_MAX
               : a->cfg.max_split_size == SIZE_MAX ? SIZE_MAX : a->cfg.max_split_size - CCA_ROUND_LARGE;
    if (want > cap) want = cap;
    size_t limit = a->cap < a->device_total ? a->cap : a->device_total;
    size_t reserved = (size_t)a->stats.reserved_bytes[CCA_POOL_ALL].current;
    size_t room = limit > reserved + size ? limit - reserved - size : 0;
    if (want > size + room / 4) want = _cca_round_down_2m(size + room / 4);
    return want > size ? want : size;
}

size_t _cca_segment_size(const cca_allocator_t *a, int pool, size_t rounded, cca_rung_t rung)
{
    if (a->xv) {                                      /* mapped in handles: the request's own pages */
        size_t g = _cca_vmm_gran(a);
        return (rounded + g - 1) / g * g;
    }
    size_t standard = rounded <= CCA_SMALL_SIZE     ? CCA_SMALL_BUFFER
                    : rounded < CCA_MIN_LARGE_ALLOC ? CCA_LARGE_BUFFER
                                                    : _cca_round_up_2m(rounded);
    switch (rung) {
    case CCA_RUNG_GROWN: return segment_grown_size(a, pool, standard);
    case CCA_RUNG_LEAST: return _cca_round_up_2m(rounded);
    default:             return standard;
    }
}

/* The ladder as a chain of attempts, in the order of cca_rung_t: each
 * returns whether it settled the request (g->s holds the status: a
 * segment, or a failure no later rung mends: not out of memory, or host
 * memory ran out); a rung that does not apply returns false untried. */
typedef struct grow {
    cca_allocator_t *a;
    cca_stream_t *st;
    int pool;
    cca_oom_ctx_t *ctx;
    cca_block_t **out;
    size_t standard, grown;                           /* the standard size; a policy's, sized before any release */
    bool policies;                                    /* release_before_grow or segment_growth_percent */
    cca_status_t s;
} grow_t;

/* A segment of `size` bytes (c: where the reasons of a refusal go). */
static bool segment_grow_alloc(grow_t *g, size_t size, cca_oom_ctx_t *c, bool retry)
{
    g->s = segment_alloc_segment(g->a, g->st, g->pool, size, c, retry, g->out);
    g->ctx->host_failed = c->host_failed;
    return g->s != CCA_ERROR_OUT_OF_MEMORY || g->ctx->host_failed;
}

static size_t segment_grow_size(const grow_t *g, cca_rung_t rung) { return _cca_segment_size(g->a, g->pool, g->ctx->rounded, rung); }

/* A policy's bigger segment: the report names the standard one. */
static bool segment_grow_grown(grow_t *g)
{
    if (g->grown <= g->standard) return false;
    cca_oom_ctx_t trial = *g->ctx;
    return segment_grow_alloc(g, g->grown, &trial, false);
}

/* The standard segment, unless the hot path asked for it just before
 * (refused: ctx->device_refused says so). */
static bool segment_grow_new(grow_t *g)
{
    return !g->ctx->new_tried && segment_grow_alloc(g, segment_grow_size(g, CCA_RUNG_NEW), g->ctx, false);
}

/* A thread's own record of a stream (a shard) that could not grow: a
 * cached block of another record of the stream, before anything is
 * released (stream.c). */
static bool segment_grow_sibling(grow_t *g)
{
    if (!g->st->shared) return false;
    cca_block_t *b = _cca_stream_sibling_block(g->a, g->st, g->pool, g->ctx->rounded);
    if (b) *g->out = b, g->s = CCA_OK;
    return b != NULL;
}

/* max_split_size: after releasing the oversize cached blocks that would help. */
static bool segment_grow_release_fitting(grow_t *g)
{
    return segment_release_available(g->a, g->st, g->pool, g->ctx->rounded) &&
           segment_grow_alloc(g, segment_grow_size(g, CCA_RUNG_RELEASE_FITTING), g->ctx, false);
}

/* After releasing every unused cached segment: the one rung counted as a retry. */
static bool segment_grow_release_all(grow_t *g)
{
    _cca_segment_release_cached(g->a);
    return segment_grow_alloc(g, segment_grow_size(g, CCA_RUNG_RELEASE_ALL), g->ctx, true);
}

/* The policies' last resort: the smallest segment that holds it, which
 * the report then names. */
static bool segment_grow_least(grow_t *g)
{
    size_t size = segment_grow_size(g, CCA_RUNG_LEAST);
    if (!g->policies || size >= g->standard) return false;
    g->ctx->alloc_size = size;
    return segment_grow_alloc(g, size, g->ctx, false);
}

/* Gets a segment for the request (ctx->rounded, ctx->alloc_size: the
 * standard size), climbing the ladder; the OOM status of the last rung if
 * none gives one. */
cca_status_t _cca_segment_grow(cca_allocator_t *a, cca_stream_t *st, int pool, cca_oom_ctx_t *ctx,
                       cca_block_t **out)
{
    _cca_oomfig_capture_cache(a, ctx);              /* before anything is released */
    if (a->gc_enabled) segment_garbage_collect(a);
    if (a->xv) return _cca_expand_grow(a, st, pool, ctx, out);
    grow_t g = { a, st, pool, ctx, out, ctx->alloc_size, _cca_segment_size(a, pool, ctx->rounded, CCA_RUNG_GROWN),
                 a->cfg.release_before_grow || a->cfg.segment_growth_percent, CCA_ERROR_OUT_OF_MEMORY };
    if (a->cfg.release_before_grow) segment_release_for_peak(a, st, g.grown);
    (void)(segment_grow_grown(&g) || segment_grow_new(&g) || segment_grow_sibling(&g) || segment_grow_release_fitting(&g) || segment_grow_release_all(&g) || segment_grow_least(&g));
    return g.s;
}

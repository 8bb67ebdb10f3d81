/* alloc.c - the caching core: best fit among the free blocks of a stream,
 * splitting and coalescing inside segments, segments from cudaMalloc,
 * release-and-retry on out-of-memory, the cap and garbage collection.
 * PyTorch's CUDACachingAllocator rules, so figures are comparable. */
#include <stdlib.h>
#include <string.h>
#include "internal.h"

static _Atomic uint64_t next_allocator_id = 1;

/* ---- counters ---------------------------------------------------------- */

/* A free block counts as inactive split while its segment is split. */
static inline void split_stat(cca_allocator_t *a, const cca_block_t *b, int sign)
{
    if (!_cca_block_is_split(b)) return;
    int ps = _cca_pool_stat(b->seg->pool);
    _cca_stat_add(a->stats.inactive_split, ps, sign);
    _cca_stat_add(a->stats.inactive_split_bytes, ps, sign * (int64_t)b->size);
}

static inline void hooks_locked(cca_allocator_t *a)
{
    if (__builtin_expect(atomic_load_explicit(&a->hooks, memory_order_relaxed) != 0, 0))
        _cca_hooks_locked(a);
}

static inline void hooks_after(cca_allocator_t *a)
{
    if (__builtin_expect(atomic_load_explicit(&a->hooks, memory_order_relaxed) != 0, 0))
        _cca_hooks_after_change(a);
}

/* ---- block structs ----------------------------------------------------- */

static cca_block_t *block_new(cca_allocator_t *a)
{
    cca_block_t *b = a->spare_blocks;
    if (b) a->spare_blocks = b->next;
    else if (!(b = malloc(sizeof *b))) return NULL;
    memset(b, 0, sizeof *b);
    return b;
}

/* Keeps one spare block struct, so that a split cannot fail half-way. */
static bool spare_reserve(cca_allocator_t *a)
{
    if (a->spare_blocks) return true;
    cca_block_t *b = malloc(sizeof *b);
    if (!b) return false;
    b->next = NULL;
    b->uses = NULL;
    a->spare_blocks = b;
    return true;
}

static void block_recycle(cca_allocator_t *a, cca_block_t *b)
{
    free(b->uses);
    b->uses = NULL;
    b->next = a->spare_blocks;
    a->spare_blocks = b;
}

static inline cca_bins_t *bins_of(cca_block_t *b)
{
    return &b->seg->stream->free[b->seg->pool];
}

/* ---- device calls on the allocator's device ---------------------------- */

cudaError_t _cca_device_enter(cca_allocator_t *a, dev_guard_t *g)
{
    int cur = -1;
    g->switched = false;
    cudaError_t e = cudaGetDevice(&cur);
    if (e != cudaSuccess || cur == a->cfg.device) return e;
    e = cudaSetDevice(a->cfg.device);
    if (e == cudaSuccess) { g->prev = cur; g->switched = true; }
    return e;
}

void _cca_device_leave(dev_guard_t *g)
{
    if (g->switched) cudaSetDevice(g->prev);
}

/* ---- sizes ------------------------------------------------------------- */

size_t _cca_allocation_size(size_t rounded)
{
    if (rounded <= CCA_SMALL_SIZE) return CCA_SMALL_BUFFER;
    if (rounded < CCA_MIN_LARGE_ALLOC) return CCA_LARGE_BUFFER;
    return CCA_ROUND_LARGE * ((rounded + CCA_ROUND_LARGE - 1) / CCA_ROUND_LARGE);
}

static bool should_split(const cca_allocator_t *a, const cca_block_t *b, size_t size)
{
    size_t remaining = b->size - size;
    if (b->seg->pool == CCA_PSMALL) return remaining >= CCA_MIN_BLOCK;
    return size < a->cfg.max_split_size && remaining > CCA_SMALL_SIZE;
}

/* ---- free blocks ------------------------------------------------------- */

/* Inserts a free block into its tree, merged with its free neighbours. */
static void insert_free(cca_allocator_t *a, cca_block_t *b)
{
    cca_block_t *p = b->prev, *n = b->next;
    bool pf = p && p->state == CCA_BLOCK_FREE, nf = n && n->state == CCA_BLOCK_FREE;
    b->state = CCA_BLOCK_FREE;
    b->requested = 0;
    if (pf) split_stat(a, p, -1);
    if (nf) split_stat(a, n, -1);
    if (pf && nf) {                       /* p absorbs b and n */
        _cca_bins_remove(bins_of(n), n);
        p->next = n->next;
        if (n->next) n->next->prev = p;
        _cca_bins_rekey(bins_of(p), p, p, p->size + b->size + n->size);
        block_recycle(a, b);
        block_recycle(a, n);
        b = p;
    } else if (pf) {                      /* p absorbs b */
        p->next = n;
        if (n) n->prev = p;
        _cca_bins_rekey(bins_of(p), p, p, p->size + b->size);
        block_recycle(a, b);
        b = p;
    } else if (nf) {                      /* b absorbs n and takes its tree node */
        b->next = n->next;
        if (n->next) n->next->prev = b;
        _cca_bins_rekey(bins_of(n), n, b, b->size + n->size);
        block_recycle(a, n);
    } else {
        _cca_bins_insert(bins_of(b), b);
    }
    b->gc_base = a->gc_searches;
    split_stat(a, b, +1);
}

/* An allocated or pending block becomes free (its stream work is done). */
static void free_block(cca_allocator_t *a, cca_block_t *b)
{
    int ps = _cca_pool_stat(b->seg->pool);
    _cca_stat_add(a->stats.active, ps, -1);
    _cca_stat_add(a->stats.active_bytes, ps, -(int64_t)b->size);
    b->n_uses = 0;
    insert_free(a, b);
}

static cca_block_t *find_free(cca_allocator_t *a, cca_stream_t *st, int pool, size_t size)
{
    if (pool == CCA_PLARGE) a->gc_searches++;
    cca_block_t *b = _cca_bins_best_fit(&st->free[pool], size);
    if (!b || a->cfg.max_split_size == SIZE_MAX) return b;
    size_t msz = a->cfg.max_split_size;
    if (size < msz && b->size >= msz) return NULL;            /* no oversize block for a small request */
    if (size >= msz && b->size >= size + CCA_LARGE_BUFFER) return NULL;  /* nor one far too big */
    return b;
}

/* Hands out the first `size` bytes of free block b, splitting off the rest. */
static void take_block(cca_allocator_t *a, cca_block_t *b, size_t size, size_t requested)
{
    int ps = _cca_pool_stat(b->seg->pool);
    split_stat(a, b, -1);
    if (should_split(a, b, size)) {
        cca_block_t *r = block_new(a);     /* cannot fail: a spare was reserved by the caller */
        r->addr = b->addr + size;
        r->seg = b->seg;
        r->prev = b;
        r->next = b->next;
        r->state = CCA_BLOCK_FREE;
        r->gc_base = a->gc_searches;
        _cca_bins_rekey(bins_of(b), b, r, b->size - size);   /* r takes b's place */
        if (b->next) b->next->prev = r;
        b->next = r;
        b->size = size;
        split_stat(a, r, +1);
    } else {
        _cca_bins_remove(bins_of(b), b);
    }
    b->state = CCA_BLOCK_ALLOCATED;
    b->requested = requested;
    _cca_stat_add(a->stats.allocation, ps, 1);
    _cca_stat_add(a->stats.active, ps, 1);
    _cca_stat_add(a->stats.allocated_bytes, ps, (int64_t)b->size);
    _cca_stat_add(a->stats.active_bytes, ps, (int64_t)b->size);
    _cca_stat_add(a->stats.requested_bytes, ps, (int64_t)requested);
}

/* ---- segments ---------------------------------------------------------- */

static cca_status_t alloc_segment(cca_allocator_t *a, cca_stream_t *st, int pool, size_t size,
                                  cca_oom_ctx_t *ctx, bool retry, cca_block_t **out)
{
    if (retry) a->stats.num_alloc_retries++;
    if (a->cap != SIZE_MAX &&
        (size > a->cap || (size_t)a->stats.reserved_bytes[CCA_POOL_ALL].current > a->cap - size)) {
        ctx->cap_refused = true;
        return CCA_ERROR_OUT_OF_MEMORY;
    }
    cca_segment_t *seg = calloc(1, sizeof *seg);
    cca_block_t *b = block_new(a);
    if (!seg || !b) {
        free(seg);
        if (b) block_recycle(a, b);
        return _cca_fail(CCA_ERROR_OUT_OF_MEMORY, "cca: host memory for segment metadata ran out");
    }
    void *p = NULL;
    dev_guard_t g;
    cudaError_t e = _cca_device_enter(a, &g);
    if (e == cudaSuccess) e = cudaMalloc(&p, size);
    _cca_device_leave(&g);
    if (e != cudaSuccess) {
        _cca_clear_error();
        free(seg);
        block_recycle(a, b);
        if (e == cudaErrorMemoryAllocation) {
            ctx->device_refused = true;
            return CCA_ERROR_OUT_OF_MEMORY;
        }
        return _cca_fail(CCA_ERROR_CUDA, "cca: cudaMalloc(%zu) on device %d failed: %s",
                         size, a->cfg.device, cudaGetErrorName(e));
    }
    seg->addr = (uintptr_t)p;
    seg->size = size;
    seg->pool = pool;
    seg->stream = st;
    seg->first = b;
    seg->next = a->segments;
    if (a->segments) a->segments->prev = seg;
    a->segments = seg;
    b->addr = seg->addr;
    b->size = size;
    b->seg = seg;
    b->gc_base = a->gc_searches;
    b->state = CCA_BLOCK_FREE;
    _cca_bins_insert(&st->free[pool], b);
    int ps = _cca_pool_stat(pool);
    _cca_stat_add(a->stats.segment, ps, 1);
    _cca_stat_add(a->stats.reserved_bytes, ps, (int64_t)size);
    a->stats.num_device_alloc++;
    if ((size_t)a->stats.reserved_bytes[CCA_POOL_ALL].current > a->reserved_high)
        a->reserved_high = (size_t)a->stats.reserved_bytes[CCA_POOL_ALL].current;
    *out = b;
    return CCA_OK;
}

/* Returns a segment whose only block is free to the device. */
static bool release_segment(cca_allocator_t *a, cca_segment_t *seg)
{
    cca_block_t *b = seg->first;
    dev_guard_t g;
    cudaError_t e = _cca_device_enter(a, &g);
    if (e == cudaSuccess) e = cudaFree((void *)seg->addr);
    _cca_device_leave(&g);
    if (e != cudaSuccess) {            /* keep it cached; the state stays consistent */
        _cca_clear_error();
        return false;
    }
    _cca_bins_remove(&seg->stream->free[seg->pool], b);
    int ps = _cca_pool_stat(seg->pool);
    _cca_stat_add(a->stats.segment, ps, -1);
    _cca_stat_add(a->stats.reserved_bytes, ps, -(int64_t)seg->size);
    a->stats.num_device_free++;
    if (seg->prev) seg->prev->next = seg->next;
    else a->segments = seg->next;
    if (seg->next) seg->next->prev = seg->prev;
    block_recycle(a, b);
    free(seg);
    return true;
}

static inline bool segment_unused(const cca_segment_t *seg)
{
    return seg->first->state == CCA_BLOCK_FREE && !seg->first->next;
}

/* Releases every fully free segment (after waiting for pending frees). */
static void release_cached(cca_allocator_t *a)
{
    _cca_sync_pending(a);
    for (cca_segment_t *s = a->segments, *next; s; s = next) {
        next = s->next;
        if (segment_unused(s)) release_segment(a, s);
    }
}

/* With max_split_size set: free oversize cached blocks of this stream, the
 * best fitting one, or the largest ones until `size` bytes are released. */
static bool release_available(cca_allocator_t *a, cca_stream_t *st, int pool, size_t size)
{
    size_t msz = a->cfg.max_split_size;
    if (msz == SIZE_MAX || pool != CCA_PLARGE) return false;
    size_t key = size < msz ? msz : size;
    cca_block_t *b = _cca_bins_best_fit(&st->free[pool], key);
    if (b) return release_segment(a, b->seg);
    size_t released = 0;
    while (released < key) {
        b = _cca_bins_largest(&st->free[pool]);
        if (!b || b->size < msz) break;
        size_t sz = b->size;
        if (!release_segment(a, b->seg)) break;
        released += sz;
    }
    return released >= key;
}

/* PyTorch's garbage collection: with a cap, once reserved passes the
 * threshold, release unused large segments, the longest unused first. */
static void garbage_collect(cca_allocator_t *a)
{
    double threshold = a->cfg.garbage_collection_threshold * (double)a->cap;
    double reserved = (double)a->stats.reserved_bytes[CCA_POOL_ALL].current;
    if (reserved <= threshold) return;
    size_t target = (size_t)(reserved - threshold), reclaimed = 0, count = 0;
    uint64_t total_age = 0;
    for (cca_segment_t *s = a->segments; s; s = s->next)
        if (s->pool == CCA_PLARGE && segment_unused(s)) {
            total_age += a->gc_searches - s->first->gc_base;
            count++;
        }
    bool freed = true;
    while (reclaimed < target && freed && count > 0) {
        double avg = (double)total_age / (double)count;
        freed = false;
        for (cca_segment_t *s = a->segments, *next; s; s = next) {
            next = s->next;
            if (s->pool != CCA_PLARGE || !segment_unused(s)) continue;
            uint64_t age = a->gc_searches - s->first->gc_base;
            if ((double)age < avg) continue;
            size_t sz = s->size;
            if (!release_segment(a, s)) continue;
            freed = true;
            reclaimed += sz;
            total_age -= age;
            count--;
        }
    }
}

/* ---- pending frees (cca_record_stream) --------------------------------- */

static void pending_done(cca_allocator_t *a, size_t i)
{
    cca_pending_t p = a->pending[i];
    a->pending[i] = a->pending[--a->n_pending];
    if (a->n_event_pool < a->cap_event_pool) a->event_pool[a->n_event_pool++] = p.event;
    else cudaEventDestroy(p.event);
    if (--p.block->event_count == 0) free_block(a, p.block);
}

/* Frees the blocks whose stream events completed; never blocks. */
static void process_events(cca_allocator_t *a)
{
    for (size_t i = 0; i < a->n_pending;) {
        cudaError_t e = cudaEventQuery(a->pending[i].event);
        if (e == cudaErrorNotReady) { _cca_clear_error(); i++; continue; }
        if (e != cudaSuccess) _cca_clear_error();    /* a broken event cannot hold memory forever */
        pending_done(a, i);
    }
}

void _cca_sync_pending(cca_allocator_t *a)
{
    a->stats.num_sync_all_streams++;
    while (a->n_pending) {
        if (cudaEventSynchronize(a->pending[a->n_pending - 1].event) != cudaSuccess) _cca_clear_error();
        pending_done(a, a->n_pending - 1);
    }
}

static cudaEvent_t event_get(cca_allocator_t *a)
{
    if (a->n_event_pool) return a->event_pool[--a->n_event_pool];
    cudaEvent_t ev = NULL;
    if (cudaEventCreateWithFlags(&ev, cudaEventDisableTiming) != cudaSuccess) {
        _cca_clear_error();
        return NULL;
    }
    return ev;
}

static bool pending_reserve(cca_allocator_t *a, size_t n)
{
    if (a->n_pending + n > a->cap_pending) {
        size_t cap = (a->cap_pending ? a->cap_pending * 2 : 16) + n;
        cca_pending_t *p = realloc(a->pending, cap * sizeof *p);
        if (!p) return false;
        a->pending = p;
        a->cap_pending = cap;
    }
    if (a->n_event_pool + a->n_pending + n > a->cap_event_pool) {
        size_t cap = a->n_event_pool + a->n_pending + n + 16;
        cudaEvent_t *e = realloc(a->event_pool, cap * sizeof *e);
        if (!e) return false;
        a->event_pool = e;
        a->cap_event_pool = cap;
    }
    return true;
}

/* Waits for work on a use stream the allocator cannot record an event on. */
static void wait_use(cca_allocator_t *a, const cca_use_t *u)
{
    cudaError_t e = cudaErrorInvalidValue;
    if (!_cca_stream_is_per_thread_key(u->key) || u->key == _cca_current_per_thread_key(a->cfg.device))
        e = cudaStreamSynchronize(u->handle);
    if (e != cudaSuccess) {
        _cca_clear_error();
        if (cudaDeviceSynchronize() != cudaSuccess) _cca_clear_error();
    }
}

/* Records an event on each stream that used b; b is free once all complete. */
static void free_with_uses(cca_allocator_t *a, cca_block_t *b)
{
    dev_guard_t g;
    bool ok = _cca_device_enter(a, &g) == cudaSuccess && pending_reserve(a, (size_t)b->n_uses);
    if (!ok) _cca_clear_error();
    b->state = CCA_BLOCK_PENDING;
    b->event_count = 0;
    for (int i = 0; i < b->n_uses; i++) {
        const cca_use_t *u = &b->uses[i];
        bool named = !_cca_stream_is_per_thread_key(u->key) ||
                     u->key == _cca_current_per_thread_key(a->cfg.device);
        cudaEvent_t ev = ok && named ? event_get(a) : NULL;
        if (ev && cudaEventRecord(ev, u->handle) == cudaSuccess) {
            a->pending[a->n_pending++] = (cca_pending_t){ ev, b };
            b->event_count++;
            continue;
        }
        if (ev) { _cca_clear_error(); a->event_pool[a->n_event_pool++] = ev; }
        wait_use(a, u);
    }
    _cca_device_leave(&g);
    if (b->event_count == 0) free_block(a, b);
}

/* ---- public API -------------------------------------------------------- */

static cca_status_t check_config(const cca_config_t *c)
{
    if (c->device < 0) return _cca_fail(CCA_ERROR_INVALID_ARGUMENT, "cca_create: device %d is negative", c->device);
    if (!(c->garbage_collection_threshold >= 0.0 && c->garbage_collection_threshold < 1.0))
        return _cca_fail(CCA_ERROR_INVALID_ARGUMENT, "cca_create: garbage_collection_threshold must be in [0, 1)");
    if (!(c->memory_fraction >= 0.0 && c->memory_fraction <= 1.0))
        return _cca_fail(CCA_ERROR_INVALID_ARGUMENT, "cca_create: memory_fraction must be in [0, 1]");
    if (c->max_split_size <= CCA_LARGE_BUFFER)
        return _cca_fail(CCA_ERROR_INVALID_ARGUMENT, "cca_create: max_split_size must be above 20 MiB");
    for (int i = 0; i < CCA_ROUNDUP_INTERVALS; i++) {
        unsigned d = c->roundup_power2_divisions[i];
        if (d & (d - 1))
            return _cca_fail(CCA_ERROR_INVALID_ARGUMENT, "cca_create: roundup_power2_divisions must be 0 or powers of 2");
    }
    return CCA_OK;
}

static cca_status_t device_total(cca_allocator_t *a, size_t *total)
{
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess || a->cfg.device >= count) {
        _cca_clear_error();
        return _cca_fail(e != cudaSuccess ? CCA_ERROR_CUDA : CCA_ERROR_INVALID_ARGUMENT,
                         "cca_create: device %d not available (%d devices, %s)",
                         a->cfg.device, count, cudaGetErrorName(e));
    }
    size_t free_b = 0;
    dev_guard_t g;
    e = _cca_device_enter(a, &g);
    if (e == cudaSuccess) e = cudaMemGetInfo(&free_b, total);
    _cca_device_leave(&g);
    if (e != cudaSuccess) {
        _cca_clear_error();
        return _cca_fail(CCA_ERROR_CUDA, "cca_create: cudaMemGetInfo on device %d failed: %s",
                         a->cfg.device, cudaGetErrorName(e));
    }
    return CCA_OK;
}

cca_status_t cca_create(const cca_config_t *cfg, cca_allocator_t **out)
{
    if (!out) return _cca_fail(CCA_ERROR_INVALID_ARGUMENT, "cca_create: out is NULL");
    *out = NULL;
    cca_config_t c;
    if (cfg) c = *cfg;
    else cca_config_init(&c);
    cca_status_t s = check_config(&c);
    if (s != CCA_OK) return s;
    cca_allocator_t *a = calloc(1, sizeof *a);
    if (!a || !_cca_ptrmap_init(&a->live)) {
        free(a);
        return _cca_fail(CCA_ERROR_OUT_OF_MEMORY, "cca_create: out of host memory");
    }
    _cca_lock_init(&a->lock);
    a->id = atomic_fetch_add(&next_allocator_id, 1);
    a->cfg = c;
    a->plain_rounding = true;
    for (int i = 0; i < CCA_ROUNDUP_INTERVALS; i++) a->plain_rounding &= c.roundup_power2_divisions[i] <= 1;
    if ((s = device_total(a, &a->device_total)) != CCA_OK) {
        _cca_ptrmap_fini(&a->live);
        free(a);
        return s;
    }
    a->cap = SIZE_MAX;
    if (c.memory_fraction > 0.0) a->cap = (size_t)(c.memory_fraction * (double)a->device_total);
    if (c.memory_limit && c.memory_limit < a->cap) a->cap = c.memory_limit;
    *out = a;
    return CCA_OK;
}

void cca_destroy(cca_allocator_t *a)
{
    if (!a) return;
    _cca_lock(&a->lock);
    dev_guard_t g;
    if (_cca_device_enter(a, &g) != cudaSuccess) _cca_clear_error();
    for (size_t i = 0; i < a->n_pending; i++) cudaEventDestroy(a->pending[i].event);
    for (size_t i = 0; i < a->n_event_pool; i++) cudaEventDestroy(a->event_pool[i]);
    for (cca_segment_t *s = a->segments, *next; s; s = next) {
        next = s->next;
        if (cudaFree((void *)s->addr) != cudaSuccess) _cca_clear_error();
        for (cca_block_t *b = s->first, *bn; b; b = bn) { bn = b->next; free(b->uses); free(b); }
        free(s);
    }
    _cca_device_leave(&g);
    for (cca_block_t *b = a->spare_blocks, *bn; b; b = bn) { bn = b->next; free(b); }
    for (cca_stream_t *st = a->streams, *sn; st; st = sn) { sn = st->next; free(st); }
    _cca_ptrmap_fini(&a->live);
    free(a->pending);
    free(a->event_pool);
    _cca_stats_destroy(a);
    _cca_unlock(&a->lock);
    free(a);
}

/* Out of memory: count it, report it, leave everything else as it was. */
static cca_status_t fail_oom(cca_allocator_t *a, cca_oom_ctx_t *ctx)
{
    a->stats.num_ooms++;
    if (!ctx->captured) _cca_capture_cache_figures(a, ctx);
    _cca_oom_report(a, ctx);
    return _cca_fail(CCA_ERROR_OUT_OF_MEMORY,
                     "cca: out of memory allocating %zu bytes on device %d%s", ctx->requested,
                     a->cfg.device, ctx->cap_refused ? " (the memory cap refused it)" : "");
}

#define POLICY_FALLBACK(a) ((a)->cfg.release_before_grow || (a)->cfg.segment_growth_percent)

/* The largest fully free segment, or NULL. */
static cca_segment_t *largest_unused(cca_allocator_t *a)
{
    cca_segment_t *best = NULL;
    for (cca_segment_t *s = a->segments; s; s = s->next)
        if (segment_unused(s) && (!best || s->size > best->size)) best = s;
    return best;
}

/* release_before_grow: a new segment of `need` bytes would raise the
 * reserved peak; return unused cached segments, largest first, so that the
 * peak grows only by what live blocks and their layout require. */
static void release_for_peak(cca_allocator_t *a, size_t need)
{
    size_t reserved = (size_t)a->stats.reserved_bytes[CCA_POOL_ALL].current;
    if (reserved + need <= a->reserved_high) return;
    size_t excess = reserved + need - a->reserved_high, released = 0;
    cca_segment_t *s;
    while (released < excess && (s = largest_unused(a))) {
        size_t sz = s->size;
        if (!release_segment(a, s)) break;
        released += sz;
    }
}

/* segment_growth_percent: a large segment is at least that share of the
 * large bytes reserved so far, so a growing workload makes few cudaMalloc
 * calls; splitting serves later requests from the rest. */
static size_t grown_size(const cca_allocator_t *a, int pool, size_t size)
{
    size_t pct = a->cfg.segment_growth_percent;
    if (!pct) return size;
    int ps = _cca_pool_stat(pool);
    size_t reserved_pool = (size_t)a->stats.reserved_bytes[ps].current;
    size_t want = reserved_pool / 100 * pct + reserved_pool % 100 * pct / 100;
    want = CCA_ROUND_LARGE * ((want + CCA_ROUND_LARGE - 1) / CCA_ROUND_LARGE);
    size_t cap = pool == CCA_PSMALL ? CCA_SMALL_GROWTH_MAX
               : a->cfg.max_split_size == SIZE_MAX ? SIZE_MAX : a->cfg.max_split_size - CCA_ROUND_LARGE;
    if (want > cap) want = cap;
    /* never spend more than a quarter of the remaining room on slack */
    size_t limit = a->cap < a->device_total ? a->cap : a->device_total;
    size_t reserved = (size_t)a->stats.reserved_bytes[CCA_POOL_ALL].current;
    size_t room = limit > reserved + size ? limit - reserved - size : 0;
    if (want > size + room / 4) want = CCA_ROUND_LARGE * ((size + room / 4) / CCA_ROUND_LARGE);
    return want > size ? want : size;
}

/* The smallest segment that holds the request (policies' last resort). */
static size_t minimal_size(size_t rounded)
{
    return CCA_ROUND_LARGE * ((rounded + CCA_ROUND_LARGE - 1) / CCA_ROUND_LARGE);
}

/* Gets a segment for the request: GC, device, release-and-retry. */
static cca_status_t grow(cca_allocator_t *a, cca_stream_t *st, int pool, cca_oom_ctx_t *ctx,
                         cca_block_t **out)
{
    _cca_capture_cache_figures(a, ctx);              /* before anything is released */
    if (a->cap != SIZE_MAX && a->cfg.garbage_collection_threshold > 0.0) garbage_collect(a);
    size_t grown = grown_size(a, pool, ctx->alloc_size);
    if (a->cfg.release_before_grow) release_for_peak(a, grown);
    cca_status_t s;
    if (grown > ctx->alloc_size) {
        cca_oom_ctx_t trial = *ctx;
        s = alloc_segment(a, st, pool, grown, &trial, false, out);
        if (s != CCA_ERROR_OUT_OF_MEMORY) return s;
    }
    s = alloc_segment(a, st, pool, ctx->alloc_size, ctx, false, out);
    if (s != CCA_ERROR_OUT_OF_MEMORY) return s;
    if (release_available(a, st, pool, ctx->rounded)) {
        s = alloc_segment(a, st, pool, ctx->alloc_size, ctx, false, out);
        if (s != CCA_ERROR_OUT_OF_MEMORY) return s;
    }
    release_cached(a);
    s = alloc_segment(a, st, pool, ctx->alloc_size, ctx, true, out);
    size_t least = minimal_size(ctx->rounded);
    if (s == CCA_ERROR_OUT_OF_MEMORY && POLICY_FALLBACK(a) && least < ctx->alloc_size) {
        ctx->alloc_size = least;                      /* the report names the smallest segment tried */
        s = alloc_segment(a, st, pool, least, ctx, false, out);
    }
    return s;
}

/* Everything but a cached block of the right stream: pending events, a new
 * stream, host metadata, a new segment, the OOM path. */
static cca_status_t malloc_slow(cca_allocator_t *a, void **ptr, size_t size, uint64_t key,
                                cudaStream_t stream)
{
    cca_oom_ctx_t ctx = { .requested = size, .stream = stream, .pool = CCA_POOL_LARGE };
    if (size > CCA_MAX_REQUEST) {
        ctx.rounded = ctx.alloc_size = size;
        return fail_oom(a, &ctx);
    }
    if (a->n_pending) process_events(a);
    cca_stream_t *st = _cca_stream_get(a, key, stream);
    if (!st || !spare_reserve(a) || !_cca_ptrmap_reserve(&a->live))
        return _cca_fail(CCA_ERROR_OUT_OF_MEMORY, "cca_malloc: out of host memory");
    size_t rounded = _cca_round_size(&a->cfg, size);
    int pool = rounded <= CCA_SMALL_SIZE ? CCA_PSMALL : CCA_PLARGE;
    cca_block_t *b = find_free(a, st, pool, rounded);
    if (!b) {
        ctx.rounded = rounded;
        ctx.alloc_size = _cca_allocation_size(rounded);
        ctx.pool = _cca_pool_stat(pool);
        cca_status_t s = grow(a, st, pool, &ctx, &b);
        if (s == CCA_ERROR_OUT_OF_MEMORY) return fail_oom(a, &ctx);
        if (s != CCA_OK) return s;
    }
    take_block(a, b, rounded, size);
    _cca_ptrmap_put(&a->live, b->addr, b);      /* room was reserved above */
    *ptr = (void *)b->addr;
    return CCA_OK;
}

/* The hot path: a cached block on a known stream, no CUDA call. */
static inline cca_status_t malloc_locked(cca_allocator_t *a, void **ptr, size_t size, uint64_t key,
                                         cudaStream_t stream)
{
    cca_stream_t *st = _cca_stream_cached(a, key);
    if (__builtin_expect(!st || a->n_pending || size > CCA_MAX_REQUEST || !a->plain_rounding ||
                         !a->spare_blocks || !_cca_ptrmap_has_room(&a->live), 0))
        return malloc_slow(a, ptr, size, key, stream);
    size_t rounded = size < CCA_MIN_BLOCK ? CCA_MIN_BLOCK : (size + CCA_MIN_BLOCK - 1) & ~(CCA_MIN_BLOCK - 1);
    int pool = rounded <= CCA_SMALL_SIZE ? CCA_PSMALL : CCA_PLARGE;
    cca_block_t *b = find_free(a, st, pool, rounded);
    if (__builtin_expect(!b, 0)) return malloc_slow(a, ptr, size, key, stream);
    take_block(a, b, rounded, size);
    _cca_ptrmap_put(&a->live, b->addr, b);
    *ptr = (void *)b->addr;
    return CCA_OK;
}

cca_status_t cca_malloc(cca_allocator_t *a, void **ptr, size_t size, cudaStream_t stream)
{
    if (__builtin_expect(!a || !ptr, 0))
        return _cca_fail(CCA_ERROR_INVALID_ARGUMENT, "cca_malloc: %s is NULL", a ? "ptr" : "allocator");
    *ptr = NULL;
    if (size == 0) return CCA_OK;
    uint64_t key = _cca_stream_key(a->cfg.device, stream);
    if (__builtin_expect(key == UINT64_MAX, 0))
        return _cca_fail(CCA_ERROR_CUDA, "cca_malloc: the runtime gave no id for cudaStreamPerThread");
    _cca_lock(&a->lock);
    cca_status_t s = malloc_locked(a, ptr, size, key, stream);
    hooks_locked(a);
    _cca_unlock(&a->lock);
    hooks_after(a);
    if (__builtin_expect(s == CCA_ERROR_OUT_OF_MEMORY, 0)) _cca_oom_deliver(a);
    return s;
}

cca_status_t cca_free(cca_allocator_t *a, void *ptr)
{
    if (!a) return _cca_fail(CCA_ERROR_INVALID_ARGUMENT, "cca_free: allocator is NULL");
    if (!ptr) return CCA_OK;
    _cca_lock(&a->lock);
    cca_block_t *b = _cca_ptrmap_take(&a->live, (uintptr_t)ptr);
    if (!b) {
        _cca_unlock(&a->lock);
        return _cca_fail(CCA_ERROR_INVALID_POINTER,
                         "cca_free: %p was not returned by this allocator, is inside a block, or was freed already", ptr);
    }
    int ps = _cca_pool_stat(b->seg->pool);
    _cca_stat_add(a->stats.allocation, ps, -1);
    _cca_stat_add(a->stats.allocated_bytes, ps, -(int64_t)b->size);
    _cca_stat_add(a->stats.requested_bytes, ps, -(int64_t)b->requested);
    b->requested = 0;
    if (__builtin_expect(b->n_uses != 0, 0)) free_with_uses(a, b);
    else free_block(a, b);
    hooks_locked(a);
    _cca_unlock(&a->lock);
    hooks_after(a);
    return CCA_OK;
}

cca_status_t cca_record_stream(cca_allocator_t *a, void *ptr, cudaStream_t stream)
{
    if (!a) return _cca_fail(CCA_ERROR_INVALID_ARGUMENT, "cca_record_stream: allocator is NULL");
    uint64_t key = _cca_stream_key(a->cfg.device, stream);
    if (key == UINT64_MAX)
        return _cca_fail(CCA_ERROR_CUDA, "cca_record_stream: the runtime gave no id for cudaStreamPerThread");
    _cca_lock(&a->lock);
    cca_status_t s = CCA_OK;
    cca_block_t *b = ptr ? _cca_ptrmap_get(&a->live, (uintptr_t)ptr) : NULL;
    if (!b) {
        s = _cca_fail(CCA_ERROR_INVALID_POINTER, "cca_record_stream: %p is not a live allocation of this allocator", ptr);
    } else if (key != b->seg->stream->key) {
        int i = 0;
        while (i < b->n_uses && b->uses[i].key != key) i++;
        if (i == b->n_uses) {
            if (b->n_uses == b->cap_uses) {
                int cap = b->cap_uses ? b->cap_uses * 2 : 2;
                cca_use_t *u = realloc(b->uses, (size_t)cap * sizeof *u);
                if (!u) s = _cca_fail(CCA_ERROR_OUT_OF_MEMORY, "cca_record_stream: out of host memory");
                else { b->uses = u; b->cap_uses = cap; }
            }
            if (s == CCA_OK) b->uses[b->n_uses++] = (cca_use_t){ stream, key };
        }
    }
    _cca_unlock(&a->lock);
    return s;
}

cca_status_t cca_empty_cache(cca_allocator_t *a)
{
    if (!a) return _cca_fail(CCA_ERROR_INVALID_ARGUMENT, "cca_empty_cache: allocator is NULL");
    _cca_lock(&a->lock);
    release_cached(a);
    hooks_locked(a);
    _cca_unlock(&a->lock);
    hooks_after(a);
    return CCA_OK;
}

cca_status_t cca_get_stats(cca_allocator_t *a, cca_stats_t *out)
{
    if (!a || !out) return _cca_fail(CCA_ERROR_INVALID_ARGUMENT, "cca_get_stats: %s is NULL", a ? "out" : "allocator");
    _cca_lock(&a->lock);
    *out = a->stats;
    _cca_unlock(&a->lock);
    return CCA_OK;
}

cca_status_t cca_reset_peak_stats(cca_allocator_t *a)
{
    if (!a) return _cca_fail(CCA_ERROR_INVALID_ARGUMENT, "cca_reset_peak_stats: allocator is NULL");
    _cca_lock(&a->lock);
#define RESET_PEAK_(name, doc) \
    for (int p = 0; p < CCA_POOL_COUNT; p++) a->stats.name[p].peak = a->stats.name[p].current;
    CCA_STAT_FIELDS(RESET_PEAK_)
#undef RESET_PEAK_
    _cca_unlock(&a->lock);
    return CCA_OK;
}

cca_status_t cca_reset_accumulated_stats(cca_allocator_t *a)
{
    if (!a) return _cca_fail(CCA_ERROR_INVALID_ARGUMENT, "cca_reset_accumulated_stats: allocator is NULL");
    _cca_lock(&a->lock);
#define RESET_ACC_(name, doc) \
    for (int p = 0; p < CCA_POOL_COUNT; p++) a->stats.name[p].allocated = a->stats.name[p].freed = 0;
    CCA_STAT_FIELDS(RESET_ACC_)
#undef RESET_ACC_
#define RESET_CNT_(name, doc) a->stats.name = 0;
    CCA_COUNTER_FIELDS(RESET_CNT_)
#undef RESET_CNT_
    a->accumulated_reset = true;
    _cca_unlock(&a->lock);
    return CCA_OK;
}

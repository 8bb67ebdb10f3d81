/* blocks.h - blocks inside segments: free bins (tree.c, bins.c), best fit,
 * splitting and merging (block.c), parking (park.c), and each block
 * transition's delta - what it does to its stream's figures, computed
 * before it; the caller applies it through the counters unit. */
#ifndef CCA_BLOCKS_H
#define CCA_BLOCKS_H

#include "types.h"
#include "counters.h"

/* tree.c: free blocks ordered by (size, addr) - a treap. */
void         _cca_tree_insert(cca_block_t **root, cca_block_t *b);
void         _cca_tree_remove(cca_block_t **root, cca_block_t *b);
void         _cca_tree_rekey(cca_block_t **root, cca_block_t *old, cca_block_t *nu, uintptr_t new_addr, size_t new_size);
cca_block_t *_cca_tree_lower_bound(cca_block_t *root, size_t size);
cca_block_t *_cca_tree_max(cca_block_t *root);
typedef void (*cca_tree_visit_fn)(cca_block_t *b, void *arg);
void         _cca_tree_visit(cca_block_t *root, cca_tree_visit_fn fn, void *arg);

/* bins.c: a stream and pool's free blocks by size class. */
void         _cca_bins_insert(cca_bins_t *bs, cca_block_t *b);
void         _cca_bins_remove(cca_bins_t *bs, cca_block_t *b);
/* old's key becomes (new_size, new_addr), carried by nu (old, or a block taking its place) */
void         _cca_bins_rekey(cca_bins_t *bs, cca_block_t *old, cca_block_t *nu, uintptr_t new_addr, size_t new_size);
cca_block_t *_cca_bins_best_fit(const cca_bins_t *bs, size_t size);   /* smallest (size, addr) >= size */
cca_block_t *_cca_bins_largest(const cca_bins_t *bs);
cca_block_t *_cca_bins_next(const cca_bins_t *bs, const cca_block_t *b);    /* next in (size, addr) order */
bool         _cca_bins_contains(const cca_bins_t *bs, const cca_block_t *b);
void         _cca_bins_visit(const cca_bins_t *bs, cca_tree_visit_fn fn, void *arg);

/* block.c: blocks inside segments, splitting and merging (stream locked).
 * No counting here: callers apply the transition's delta first. */
cca_block_t *_cca_block_new(cca_stream_t *st);
bool         _cca_block_spare_reserve(cca_stream_t *st);
void         _cca_block_recycle(cca_stream_t *st, cca_block_t *b);
cca_block_t *_cca_block_find_free(cca_allocator_t *a, cca_stream_t *st, int pool, size_t size);
void         _cca_block_take(cca_allocator_t *a, cca_block_t *b, size_t size, size_t requested);
void         _cca_block_free(cca_allocator_t *a, cca_block_t *b);
void         _cca_block_insert_free(cca_block_t *b);      /* b into its bins, merged (gc_base set) */

/* The pool's free-search count, the age unit of garbage collection. */
static inline uint64_t _cca_gc_now(cca_allocator_t *a)
{
    return a->gc_enabled ? atomic_load_explicit(&a->gc_searches, memory_order_relaxed) : 0;
}

/* park.c: the deferred merge (see there), behind -Dparking. */
#if CCA_PARKING
static inline bool _cca_park(cca_allocator_t *a, cca_stream_t *st, cca_block_t *b);   /* below */
__attribute__((noinline, cold)) bool _cca_park_split_slow(cca_allocator_t *a, cca_stream_t *st, int pool, int64_t dc,
                                                         int64_t db);
cca_block_t *_cca_park_unpark_block(cca_allocator_t *a, cca_stream_t *st, int pool, size_t size, size_t requested);
void         _cca_park_flush_block(cca_allocator_t *a, cca_stream_t *st, int pool);
void         _cca_park_vacate_block(cca_allocator_t *a, cca_stream_t *st, int pool);
#else
static inline bool _cca_park(cca_allocator_t *a, cca_stream_t *st, cca_block_t *b)
{ (void)a; (void)st; (void)b; return false; }
static inline cca_block_t *_cca_park_unpark_block(cca_allocator_t *a, cca_stream_t *st, int pool, size_t size,
                                            size_t requested)
{ (void)a; (void)st; (void)pool; (void)size; (void)requested; return NULL; }
static inline void _cca_park_flush_block(cca_allocator_t *a, cca_stream_t *st, int pool) { (void)a; (void)st; (void)pool; }
static inline void _cca_park_vacate_block(cca_allocator_t *a, cca_stream_t *st, int pool) { (void)a; (void)st; (void)pool; }
#endif

/* Whether a free in st's pool should park its block: while parking pays
 * (the parked blocks were taken again rather than flushed; park.c), and
 * now and then while it does not, to notice when it would again. */
static inline bool _cca_park_wanted(const cca_allocator_t *a, cca_stream_t *st, int pool)
{
    return CCA_PARKING && (st->park_score[pool] >= 2 || (++st->park_probe & 63) == 0 || a->park_always);
}

/* Frees the block parked in st's pool, if there is one: the figures and
 * the merge it deferred (never fails; st locked). */
static inline void _cca_park_flush(cca_allocator_t *a, cca_stream_t *st, int pool)
{
    if (CCA_PARKING && st->parked[pool]) _cca_park_flush_block(a, st, pool);
}

/* The same, when the stream's next request or free in the pool came
 * instead of taking the parked block: parking did not pay this time. (A
 * flush for an all-locked call or a completed event does not count.) */
static inline void _cca_park_flush_unpaid(cca_allocator_t *a, cca_stream_t *st, int pool)
{
    if (!CCA_PARKING || !st->parked[pool]) return;
    if (st->park_score[pool]) st->park_score[pool]--;
    _cca_park_flush_block(a, st, pool);
}

/* Applies the figures the block parked in st's pool deferred, if any,
 * keeping it parked: st's figures are then exact (never fails). */
static inline void _cca_park_vacate(cca_allocator_t *a, cca_stream_t *st, int pool)
{
    if (CCA_PARKING && st->parked[pool] && !st->parked[pool]->vacated) _cca_park_vacate_block(a, st, pool);
}

static inline bool _cca_block_is_split(const cca_block_t *b) { return b->prev || b->next; }
/* Whether free block b counts in inactive_split: inside a split segment,
 * not an expandable one (PyTorch counts neither). */
static inline bool _cca_block_counts_split(const cca_block_t *b) { return _cca_block_is_split(b) && !b->seg->expandable; }

/* ---- block.c's small helpers, inline for the hot path ---------------- */

/* Best fit's max_split_size rules (PyTorch's): may a free block of
 * `block_size` bytes serve a request of `size`? */
static inline bool _cca_fit_ok(const cca_allocator_t *a, size_t size, size_t block_size)
{
    size_t msz = a->fit_msz;
    if (msz == SIZE_MAX) return true;
    if (size < msz && block_size >= msz) return false;                    /* no oversize block for a small request */
    return !(size >= msz && block_size >= size + CCA_LARGE_BUFFER);       /* nor one far too big */
}

/* Whether taking `size` bytes of a free block of `block_size` bytes in
 * `pool` splits the rest off (PyTorch's rule: in the large pool a rest of
 * more than 1 MiB below max_split_size; with expandable segments any rest
 * of 512 B, and no max_split_size - a->split_msz, a->large_split_min). */
static inline bool _cca_split_rule(const cca_allocator_t *a, int pool, size_t block_size, size_t size)
{
    size_t remaining = block_size - size;
    if (pool == CCA_POOL_SMALL) return remaining >= CCA_MIN_BLOCK;
    return size < a->split_msz && remaining >= a->large_split_min;
}

static inline bool _cca_should_split(const cca_allocator_t *a, const cca_block_t *b, size_t size)
{
    return _cca_split_rule(a, b->seg->pool, b->size, size);
}

/* What freeing b does to its pool's inactive-split figures: its free
 * neighbours stop counting, the merged block counts if its segment stays split. */
static inline void _cca_merge_deltas(const cca_block_t *b, int64_t *dcount, int64_t *dbytes)
{
    if (b->seg->expandable) {                         /* not counted (as PyTorch) */
        *dcount = *dbytes = 0;
        return;
    }
    const cca_block_t *p = b->prev, *n = b->next;
    bool pf = p && p->state == CCA_BLOCK_FREE, nf = n && n->state == CCA_BLOCK_FREE;
    int64_t size = (int64_t)b->size + (pf ? (int64_t)p->size : 0) + (nf ? (int64_t)n->size : 0);
    bool split = (pf ? p->prev : p) || (nf ? n->next : n);
    *dcount = (int64_t)split - (int64_t)pf - (int64_t)nf;
    *dbytes = (split ? size : 0) - (pf ? (int64_t)p->size : 0) - (nf ? (int64_t)n->size : 0);
}

/* ---- transitions' deltas: what each block transition does to its
 * stream's figures, computed before it (the block as it is now), written
 * into the caller's *d (no copies on the hot path) ---------------------- */

/* A free block of `block_size` bytes in `pool` (inside a split segment
 * or not) -> allocated, its first `size` bytes (the rest split off). */
static inline void _cca_take_delta_of(cca_delta_t *d, const cca_allocator_t *a, int pool, size_t block_size,
                                      bool was_split, size_t size, size_t requested)
{
    bool cut = _cca_split_rule(a, pool, block_size, size);
    int64_t bytes = (int64_t)(cut ? size : block_size);
    bool split = cut && !a->xv;                       /* expandable segments' free blocks are not counted */
    d->rise = CCA_RISE_ALL;
    d->pos = CCA_RISE_ALL & ~CCA_RISE_SPLIT;
    d->v[CCA_K_oversize_allocations] = _cca_oversize(a, (size_t)bytes);
    d->v[CCA_K_allocation] = d->v[CCA_K_active] = 1;
    d->v[CCA_K_allocated_bytes] = d->v[CCA_K_active_bytes] = bytes;
    d->v[CCA_K_requested_bytes] = (int64_t)requested;
    d->v[CCA_K_inactive_split] = (int64_t)split - (int64_t)was_split;   /* it stops counting, the rest counts */
    d->v[CCA_K_inactive_split_bytes] = (split ? (int64_t)(block_size - size) : 0) - (was_split ? (int64_t)block_size : 0);
}

/* Free block b -> allocated, its first `size` bytes (the rest split off). */
static inline void _cca_take_delta(cca_delta_t *d, const cca_allocator_t *a, const cca_block_t *b, size_t size,
                                   size_t requested)
{
    _cca_take_delta_of(d, a, b->seg->pool, b->size, _cca_block_counts_split(b), size, requested);
}

/* Allocated block b -> pending (freed, awaiting other streams' events):
 * allocation falls; active and requested stay until the uses complete (as
 * PyTorch's, which lowers both when it frees the block). */
static inline void _cca_release_delta(cca_delta_t *d, const cca_allocator_t *a, const cca_block_t *b)
{
    d->rise = d->pos = 0;
    d->v[CCA_K_active] = d->v[CCA_K_active_bytes] = d->v[CCA_K_inactive_split] = d->v[CCA_K_inactive_split_bytes] = 0;
    d->v[CCA_K_requested_bytes] = 0;
    d->v[CCA_K_allocation] = -1;
    d->v[CCA_K_allocated_bytes] = -(int64_t)b->size;
    d->v[CCA_K_oversize_allocations] = -_cca_oversize(a, b->size);
}

/* Allocated block b -> free, the part its merge with its free neighbours
 * makes: the inactive-split figures (the others left as they are). */
static inline void _cca_merge_part(cca_delta_t *d, const cca_block_t *b)
{
    _cca_merge_deltas(b, &d->v[CCA_K_inactive_split], &d->v[CCA_K_inactive_split_bytes]);
}

/* Pending block b -> free, merged with its free neighbours (its requested
 * bytes, kept while pending, fall now). */
static inline void _cca_settle_delta(cca_delta_t *d, const cca_block_t *b)
{
    d->rise = CCA_RISE_SPLIT;
    d->pos = 0;
    d->v[CCA_K_allocation] = d->v[CCA_K_allocated_bytes] = d->v[CCA_K_oversize_allocations] = 0;
    d->v[CCA_K_requested_bytes] = -(int64_t)b->requested;
    _cca_merge_part(d, b);
    d->v[CCA_K_active] = -1;
    d->v[CCA_K_active_bytes] = -(int64_t)b->size;
}

/* Allocated block b -> free, the part that only falls: allocation,
 * active and their bytes, requested, oversize. */
static inline void _cca_vacate_delta(cca_delta_t *d, const cca_allocator_t *a, const cca_block_t *b)
{
    d->rise = d->pos = 0;
    d->v[CCA_K_inactive_split] = d->v[CCA_K_inactive_split_bytes] = 0;
    d->v[CCA_K_oversize_allocations] = -_cca_oversize(a, b->size);
    d->v[CCA_K_allocation] = d->v[CCA_K_active] = -1;
    d->v[CCA_K_allocated_bytes] = d->v[CCA_K_active_bytes] = -(int64_t)b->size;
    d->v[CCA_K_requested_bytes] = -(int64_t)b->requested;
}

/* Allocated block b -> free, merged with its free neighbours: both parts
 * in one step (each figure changes once, as in PyTorch). */
static inline void _cca_free_delta(cca_delta_t *d, const cca_allocator_t *a, const cca_block_t *b)
{
    _cca_vacate_delta(d, a, b);
    d->rise = CCA_RISE_SPLIT;
    _cca_merge_part(d, b);
}

/* ---- parking's way back, inline for the hot path (park.c) ------------ */

/* A parked block leaves the park as allocated for `requested` bytes. */
static inline void _cca_park_unparked(cca_allocator_t *a, cca_stream_t *st, int pool, cca_block_t *b, size_t requested)
{
    (void)a;
    st->parked[pool] = NULL;
    if (st->park_score[pool] < 3) st->park_score[pool]++;   /* parking paid */
    b->state = CCA_BLOCK_ALLOCATED;
    b->requested = requested;
    b->context = 0;                                   /* the all-locked path sets it while recording */
}

/* The block parked in st's pool, carved for a request of `size` bytes if
 * best fit would serve it from the merged block; else NULL. The commonest
 * case - the same size back, nothing else free in the pool, its figures
 * still deferred - is decided here with best fit's own rules; the rest in
 * park.c. */
static inline cca_block_t *_cca_park_unpark(cca_allocator_t *a, cca_stream_t *st, int pool, size_t size, size_t requested)
{
    cca_block_t *b = st->parked[pool];
    if (!CCA_PARKING || !b) return NULL;
    cca_block_t *n = b->next;
    bool nf = n && n->state == CCA_BLOCK_FREE;
    size_t msize = b->size + (nf ? n->size : 0);     /* the merged block */
    if (size == b->size && !b->vacated && st->free[pool]->count == (size_t)nf && _cca_fit_ok(a, size, msize) &&
        _cca_split_rule(a, pool, msize, size) == nf &&
        _cca_counters_retake(a, st, pool, size, requested, b->requested, b->parked_split[0], b->parked_split[1])) {
        if (nf) n->gc_base = _cca_gc_now(a);          /* as if split off the merged block anew */
        _cca_park_unparked(a, st, pool, b, requested);
        return b;
    }
    return _cca_park_unpark_block(a, st, pool, size, requested);
}

#if CCA_PARKING
/* Parks b (allocated, no other stream's use, st's parked block of its pool
 * flushed), applying its merge's split figures; false if it cannot be
 * parked (nothing changed): the caller frees it. Inline: the free's hot
 * path (park.c holds the rest of parking). */
static inline bool _cca_park(cca_allocator_t *a, cca_stream_t *st, cca_block_t *b)
{
    int pool = b->seg->pool;
    if (b->prev && b->prev->state == CCA_BLOCK_FREE) return false;   /* the merge would move its address */
    int64_t dc, db;
    _cca_merge_deltas(b, &dc, &db);
    if (!_cca_counters_split(st, pool, dc, db) && !_cca_park_split_slow(a, st, pool, dc, db)) return false;
    b->state = CCA_BLOCK_PARKED;                      /* requested kept: its figures still count it */
    b->vacated = false;
    b->parked_split[0] = dc;
    b->parked_split[1] = db;
    b->gc_base = _cca_gc_now(a);
    st->parked[pool] = b;
    return true;
}
#endif

#endif /* CCA_BLOCKS_H */

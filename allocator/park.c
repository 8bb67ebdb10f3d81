/* park.c - parking: a freed block served again without a merge and a split.
 *
 * A block freed on the hot path whose previous neighbour is not free is
 * "parked": its stream's figures change at once as if it had been merged
 * with its free neighbours (the caller applied _cca_free_delta), but the
 * merge waits. If best fit would serve the next request of its stream and
 * pool from the merged block, the request is carved out of it in place
 * (the same size: the block as it is), figures changed as if taken from the
 * merged block. Anything else (another block fits better, another free,
 * any all-locked call) first does the merge, quietly. Every observable
 * figure and address is PyTorch's. The rules are best fit's own
 * (_cca_fit_ok, _cca_split_rule, _cca_bins_best_fit) and the figures
 * _cca_take_delta_of's, asked of the merged block.
 *
 * Compiled in with -Dparking=true (the default); without it these calls
 * are empty (internal.h) and every free merges at once. Measured in
 * docs/benchmarks.md ("Parking"). */
#include "internal.h"

#if CCA_PARKING

/* Parks b (allocated, no other stream's use, its free's delta `freed`
 * applied); false if it cannot be parked: the caller merges it. */
bool _cca_park(cca_allocator_t *a, cca_stream_t *st, cca_block_t *b, const cca_delta_t *freed)
{
    int pool = b->seg->pool;
    if (st->parked[pool] || (b->prev && b->prev->state == CCA_BLOCK_FREE)) return false;
    b->state = CCA_BLOCK_PARKED;
    b->requested = 0;
    b->parked_split[0] = freed->v[CCA_K_inactive_split];
    b->parked_split[1] = freed->v[CCA_K_inactive_split_bytes];
    b->gc_base = _cca_gc_now(a);
    st->parked[pool] = b;
    return true;
}

/* Does the merge a parked block deferred (its figures are already counted). */
void _cca_flush_parked_block(cca_stream_t *st, int pool)
{
    cca_block_t *b = st->parked[pool];
    st->parked[pool] = NULL;
    _cca_ptrmap_take(&st->live, b->addr);
    _cca_insert_free(b);
}

static inline bool key_before(size_t s1, uintptr_t a1, size_t s2, uintptr_t a2)
{
    return s1 < s2 || (s1 == s2 && a1 < a2);
}

/* A request of `size` bytes in st's pool served from the parked block, if
 * best fit on the merged state would choose the merged block: carved out
 * of it as a split would, in one step instead of a merge and a split (one
 * change of bins at most), figures changed as if taken from the merged
 * block. NULL otherwise (the caller flushes it and searches). */
cca_block_t *_cca_unpark(cca_allocator_t *a, cca_stream_t *st, int pool, size_t size, size_t requested)
{
    cca_block_t *b = st->parked[pool];
    if (!b) return NULL;
    cca_block_t *n = b->next;
    bool nf = n && n->state == CCA_BLOCK_FREE;
    size_t msize = b->size + (nf ? n->size : 0);     /* the merged block */
    if (size > msize || !_cca_fit_ok(a, size, msize)) return NULL;
    cca_bins_t *bins = st->free[pool];
    if (bins->count != (size_t)nf) {                  /* other free blocks: would one fit better? */
        cca_block_t *c = _cca_bins_best_fit(bins, size);
        if (c && c == n) c = _cca_bins_next(bins, n); /* n would be part of the merged block */
        if (c && key_before(c->size, c->addr, msize, b->addr)) return NULL;
    }
    bool split = _cca_split_rule(a, pool, msize, size);
    bool same = split == nf && size == b->size;       /* b handed out as it is */
    if (split && !nf && !same && !_cca_spare_reserve(st)) return NULL;
    if (same) {                                       /* the park undone: its free's figures back, requested new */
        cca_delta_t d;
        d.rise = CCA_RISE_ALL;
        d.pos = CCA_RISE_ALL & ~CCA_RISE_SPLIT;
        d.v[CCA_K_allocation] = d.v[CCA_K_active] = 1;
        d.v[CCA_K_allocated_bytes] = d.v[CCA_K_active_bytes] = (int64_t)size;
        d.v[CCA_K_requested_bytes] = (int64_t)requested;
        d.v[CCA_K_oversize_allocations] = _cca_oversize(a, size);
        d.v[CCA_K_inactive_split] = -b->parked_split[0];
        d.v[CCA_K_inactive_split_bytes] = -b->parked_split[1];
        if (!_cca_ctr_apply(a, st, pool, &d)) return NULL;
    } else {
        bool msplit = b->prev || (nf ? n->next : n);  /* the merged block lies in a split segment */
        cca_delta_t d;
        _cca_take_delta_of(&d, a, pool, msize, msplit, size, requested);
        if (!_cca_ctr_apply(a, st, pool, &d)) return NULL;
    }
    st->parked[pool] = NULL;
    if (split && nf) {                                /* n becomes the rest (as it is, for the same size) */
        if (!same) _cca_bins_rekey(bins, n, n, b->addr + size, msize - size);
        n->gc_base = _cca_gc_now(a);
    } else if (split && size != b->size) {            /* b's own rest is split off */
        cca_block_t *r = _cca_block_new(st);         /* the spare reserved above */
        r->addr = b->addr + size;
        r->size = b->size - size;
        r->seg = b->seg;
        r->prev = b;
        r->next = n;
        r->state = CCA_BLOCK_FREE;
        r->gc_base = _cca_gc_now(a);
        if (n) n->prev = r;
        b->next = r;
        _cca_bins_insert(bins, r);
    } else if (!split && nf) {                        /* the whole merged block */
        _cca_bins_remove(bins, n);
        b->next = n->next;
        if (n->next) n->next->prev = b;
        _cca_block_recycle(st, n);
    }
    b->size = split ? size : msize;
    b->state = CCA_BLOCK_ALLOCATED;
    b->requested = requested;
    return b;
}

#endif /* CCA_PARKING */

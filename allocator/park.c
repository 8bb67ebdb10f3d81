/* park.c - parking: the same size back at once, without split and merge.
 *
 * A block freed on the hot path whose previous neighbour is not free is
 * "parked": its stream's figures change at once as if it had been merged
 * with its free neighbours (the caller applied _cca_free_delta), but the
 * merge waits. If the next request of its stream and pool is of its size
 * and best fit would choose the merged block - and carve exactly this
 * block out of it again - the block is handed out as it is, figures changed
 * as if taken from the merged block. Anything else (another size, another
 * free, any all-locked call) first does the merge, quietly. Every
 * observable figure and address is PyTorch's. The rules are best fit's own
 * (_cca_fit_ok, _cca_split_rule, _cca_bins_best_fit) and the figures
 * _cca_take_delta_of's, asked of the merged block.
 *
 * Compiled in with -Dparking=true (the default); without it these calls
 * are empty (internal.h) and every free merges at once. Measured in
 * docs/benchmarks.md ("Parking"). */
#include "internal.h"

#if CCA_PARKING

/* Parks b (allocated, no other stream's use, its free's delta applied);
 * false if it cannot be parked: the caller merges it. */
bool _cca_park(cca_allocator_t *a, cca_stream_t *st, cca_block_t *b)
{
    int pool = b->seg->pool;
    if (st->parked[pool] || (b->prev && b->prev->state == CCA_BLOCK_FREE)) return false;
    b->state = CCA_BLOCK_PARKED;
    b->requested = 0;
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

/* The parked block of st's pool, handed out again for a request of `size`
 * (its figures applied) if that is exactly what best fit on the merged
 * state would do; NULL otherwise (the caller flushes it and searches). */
cca_block_t *_cca_unpark(cca_allocator_t *a, cca_stream_t *st, int pool, size_t size, size_t requested)
{
    cca_block_t *b = st->parked[pool];
    if (!b || b->size != size) return NULL;
    cca_block_t *n = b->next;
    bool nf = n && n->state == CCA_BLOCK_FREE;
    size_t msize = size + (nf ? n->size : 0);        /* the merged block */
    bool msplit = b->prev || (nf ? n->next : n);      /* in a split segment */
    if (!_cca_fit_ok(a, size, msize) || _cca_split_rule(a, pool, msize, size) != nf)
        return NULL;                                  /* best fit would refuse it, or not carve b out again */
    const cca_bins_t *bins = st->free[pool];
    if (bins->count != (size_t)nf) {                  /* other free blocks: would one fit better? */
        cca_block_t *c = _cca_bins_best_fit(bins, size);
        if (c && c == n) c = _cca_bins_next(bins, n); /* n would be part of the merged block */
        if (c && key_before(c->size, c->addr, msize, b->addr)) return NULL;
    }
    cca_delta_t d = _cca_take_delta_of(a, pool, msize, msplit, size, requested);
    if (!_cca_ctr_apply(a, st, pool, &d)) return NULL;
    st->parked[pool] = NULL;
    b->state = CCA_BLOCK_ALLOCATED;
    b->requested = requested;
    return b;
}

#endif /* CCA_PARKING */

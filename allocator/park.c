/* park.c - parking: a freed block served again without a merge, a split,
 * or most of their counting.
 *
 * A block freed on the hot path whose previous neighbour is not free is
 * "parked" instead: its merge with its free next neighbour waits, and so
 * do the figures that only fall (allocation, active, their bytes,
 * requested, oversize: _cca_vacate_delta); the inactive-split change its
 * merge makes is applied at once (it may rise, so it is checked against
 * the leases then). If best fit would serve the next request of its stream
 * and pool from the merged block, the request is carved out of it in place
 * (the same size: the block as it is, its figures - while still deferred
 * - moved by requested bytes and the split change undone, _cca_counters_retake;
 * another size: one change of bins instead of a merge and a split, the
 * deferred figures and the take's in one step). Anything else (another
 * block fits better, another free in the pool, an event of the stream
 * completing, any all-locked call) first frees the parked block for real:
 * the deferred figures and the merge, which cannot fail. Whether to park
 * at all adapts (_cca_park_wanted): a score per stream and pool rises when
 * a parked block is taken again and falls when the next request or free
 * came instead.
 *
 * Why the figures stay exact: while a block is parked its stream counts it
 * as still allocated - more than the truth, for figures that only fall -
 * so the stream stays within its leases whenever its true figures do. A
 * take checks all its figures against the leases, so the other pool's
 * parked block is "vacated" first (its deferred figures applied, the block
 * still parked); and every place that reads the figures to set a peak or
 * report them (the all-locked path, _cca_counters_admit_slow raising peaks)
 * vacates or frees the parked blocks first. Every observable figure and
 * address is PyTorch's; the equivalence tests compare against runs where
 * every call is all locked. The rules are best fit's own (_cca_fit_ok,
 * _cca_split_rule, _cca_bins_best_fit) and the figures
 * _cca_take_delta_of's, asked of the merged block.
 *
 * Compiled in with -Dparking=true (the default); without it these calls
 * are empty (blocks.h) and every free merges at once. Measured in
 * docs/history.md ("Parking"). */
#include "internal.h"

#if CCA_PARKING

/* The split change passed a lease: the general way, which makes room
 * (_cca_park's slow part, blocks.h). */
bool _cca_park_split_slow(cca_allocator_t *a, cca_stream_t *st, int pool, int64_t dc, int64_t db)
{
    cca_delta_t d = { .rise = CCA_RISE_SPLIT };
    d.v[CCA_K_inactive_split] = dc;
    d.v[CCA_K_inactive_split_bytes] = db;
    return _cca_counters_apply(a, st, pool, &d);
}

void _cca_park_vacate_block(cca_allocator_t *a, cca_stream_t *st, int pool)
{
    cca_block_t *b = st->parked[pool];
    cca_delta_t d;
    _cca_vacate_delta(&d, a, b);
    _cca_counters_apply(a, st, pool, &d);                  /* only falls: cannot fail */
    b->vacated = true;
}

/* Frees the parked block for real: the figures it deferred (they only
 * fall, so this cannot fail) and the merge. */
void _cca_park_flush_block(cca_allocator_t *a, cca_stream_t *st, int pool)
{
    _cca_park_vacate(a, st, pool);
    cca_block_t *b = st->parked[pool];
    st->parked[pool] = NULL;
    _cca_ptrmap_take(&st->live, b->addr);
    _cca_block_insert_free(b);                              /* gc_base: when it was parked */
}

static inline bool park_key_before(size_t s1, uintptr_t a1, size_t s2, uintptr_t a2)
{
    return s1 < s2 || (s1 == s2 && a1 < a2);
}

/* A request of `size` bytes in st's pool served from the parked block, if
 * best fit on the merged state would choose the merged block: carved out
 * of it as a split would, in one step. NULL otherwise (the caller flushes
 * it and searches). The inline _cca_park_unpark (blocks.h) answers the same
 * size back with nothing else free before calling this. */
cca_block_t *_cca_park_unpark_block(cca_allocator_t *a, cca_stream_t *st, int pool, size_t size, size_t requested)
{
    cca_block_t *b = st->parked[pool];
    cca_block_t *n = b->next;
    bool nf = n && n->state == CCA_BLOCK_FREE;
    size_t msize = b->size + (nf ? n->size : 0);     /* the merged block */
    if (size > msize || !_cca_fit_ok(a, size, msize)) return NULL;
    cca_bins_t *bins = st->free[pool];
    if (bins->count != (size_t)nf) {                  /* other free blocks: would one fit better? */
        cca_block_t *c = _cca_bins_best_fit(bins, size);
        if (c && c == n) c = _cca_bins_next(bins, n); /* n would be part of the merged block */
        if (c && park_key_before(c->size, c->addr, msize, b->addr)) return NULL;
    }
    bool split = _cca_split_rule(a, pool, msize, size);
    bool same = split == nf && size == b->size;       /* b handed out as it is */
    if (split && !nf && !same && !_cca_block_spare_reserve(st)) return NULL;
    if (!same || b->vacated ||
        !_cca_counters_retake(a, st, pool, size, requested, b->requested, b->parked_split[0], b->parked_split[1])) {
        bool msplit = (b->prev || (nf ? n->next : n)) && !b->seg->expandable;  /* the merged block lies in a split segment */
        cca_delta_t d, v;
        _cca_take_delta_of(&d, a, pool, msize, msplit, size, requested);
        if (b->vacated) {
            if (!_cca_counters_apply(a, st, pool, &d)) return NULL;
        } else {                                      /* its deferred figures and the take's, in one step */
            _cca_vacate_delta(&v, a, b);
            b->vacated = true;                        /* counted in the step: not vacated again meanwhile */
            if (!_cca_counters_apply2(a, st, pool, &v, &d)) return NULL;   /* ... its fall stays applied */
        }
    }
    if (split && nf) {                                /* n becomes the rest (as it is, for the same size) */
        if (!same) _cca_bins_rekey(bins, n, n, b->addr + size, msize - size);
        n->gc_base = _cca_gc_now(a);
        n->last_requested = b->requested;             /* torch's rest: b's object, merged with n, then split */
    } else if (split && !same) {                      /* b's own rest is split off */
        cca_block_t *r = _cca_block_new(st);         /* the spare reserved above */
        r->addr = b->addr + size;
        r->size = b->size - size;
        r->seg = b->seg;
        r->prev = b;
        r->next = n;
        r->state = CCA_BLOCK_FREE;
        r->gc_base = _cca_gc_now(a);
        r->last_requested = b->requested;             /* as above */
        if (n) n->prev = r;
        else b->seg->last = r;
        b->next = r;
        _cca_bins_insert(bins, r);
    } else if (!split && nf) {                        /* the whole merged block */
        _cca_bins_remove(bins, n);
        b->next = n->next;
        if (n->next) n->next->prev = b;
        else b->seg->last = b;
        _cca_block_recycle(st, n);
    }
    b->size = split ? size : msize;
    _cca_park_unparked(a, st, pool, b, requested);
    return b;
}

#endif /* CCA_PARKING */

/* block.c - blocks inside segments: best fit, splitting the rest off,
 * coalescing with free neighbours (never across segments), and the counter
 * changes that go with each, under the block's stream lock. The *_fits
 * functions tell, before a change, whether it stays within the stream's
 * leases (see cca_ctr_t); they mirror take_block and free_block exactly. */
#include <stdlib.h>
#include <string.h>
#include "internal.h"

cca_block_t *_cca_block_new(cca_stream_t *st)
{
    cca_block_t *b = st->spare;
    if (b) st->spare = b->next;
    else if (!(b = aligned_alloc(_Alignof(cca_block_t), sizeof *b))) return NULL;
    else st->host_bytes += (int64_t)sizeof *b;
    memset(b, 0, sizeof *b);
    return b;
}

/* Keeps one spare block struct, so that a split cannot fail half-way. */
bool _cca_spare_reserve(cca_stream_t *st)
{
    if (st->spare) return true;
    cca_block_t *b = aligned_alloc(_Alignof(cca_block_t), sizeof *b);
    if (!b) return false;
    st->host_bytes += (int64_t)sizeof *b;
    b->next = NULL;
    b->uses = NULL;
    st->spare = b;
    return true;
}

void _cca_block_recycle(cca_stream_t *st, cca_block_t *b)
{
    free(b->uses);
    st->host_bytes -= (int64_t)b->cap_uses * (int64_t)sizeof *b->uses;
    b->uses = NULL;
    b->n_uses = b->cap_uses = 0;
    b->next = st->spare;
    st->spare = b;
}

static inline cca_bins_t *bins_of(cca_block_t *b) { return b->seg->stream->free[b->seg->pool]; }

static inline uint64_t gc_now(cca_allocator_t *a)
{
    return a->gc_enabled ? atomic_load_explicit(&a->gc_searches, memory_order_relaxed) : 0;
}

/* Changes the inactive-split figures (free blocks inside split segments)
 * by one net step per call, as PyTorch does, so totals match its own. */
static inline void split_delta(cca_allocator_t *a, cca_stream_t *st, int pool, int64_t dcount, int64_t dbytes)
{
    if (dcount) _cca_ctr_add(a, st, CCA_K_inactive_split, pool, dcount);
    if (dbytes) _cca_ctr_add(a, st, CCA_K_inactive_split_bytes, pool, dbytes);
}


/* Inserts a free block into its bins, merged with its free neighbours;
 * `count`: change the inactive-split figures (false for a parked block,
 * whose figures changed when it was parked). */
static void insert_free(cca_allocator_t *a, cca_block_t *b, bool count)
{
    cca_stream_t *st = b->seg->stream;
    cca_block_t *p = b->prev, *n = b->next;
    bool pf = p && p->state == CCA_BLOCK_FREE, nf = n && n->state == CCA_BLOCK_FREE;
    if (count) {
        int64_t dcount, dbytes;
        _cca_merge_deltas(b, &dcount, &dbytes);
        split_delta(a, st, b->seg->pool, dcount, dbytes);
        b->gc_base = gc_now(a);
    }
    b->state = CCA_BLOCK_FREE;
    b->requested = 0;
    if (pf && nf) {                       /* p absorbs b and n */
        _cca_bins_remove(bins_of(n), n);
        p->next = n->next;
        if (n->next) n->next->prev = p;
        _cca_bins_rekey(bins_of(p), p, p, p->size + b->size + n->size);
        p->gc_base = b->gc_base;
        _cca_block_recycle(st, b);
        _cca_block_recycle(st, n);
        b = p;
    } else if (pf) {                      /* p absorbs b */
        p->next = n;
        if (n) n->prev = p;
        _cca_bins_rekey(bins_of(p), p, p, p->size + b->size);
        p->gc_base = b->gc_base;
        _cca_block_recycle(st, b);
        b = p;
    } else if (nf) {                      /* b absorbs n and takes its place */
        b->next = n->next;
        if (n->next) n->next->prev = b;
        _cca_bins_rekey(bins_of(n), n, b, b->size + n->size);
        _cca_block_recycle(st, n);
    } else {
        _cca_bins_insert(bins_of(b), b);
    }
}

/* An allocated or pending block becomes free (its stream work is done). */
void _cca_free_block(cca_allocator_t *a, cca_block_t *b)
{
    cca_stream_t *st = b->seg->stream;
    _cca_ctr_add(a, st, CCA_K_active, b->seg->pool, -1);
    _cca_ctr_add(a, st, CCA_K_active_bytes, b->seg->pool, -(int64_t)b->size);
    b->n_uses = 0;
    insert_free(a, b, true);
}

/* PyTorch's best fit, with its max_split_size rules. */
cca_block_t *_cca_find_free(cca_allocator_t *a, cca_stream_t *st, int pool, size_t size)
{
    cca_block_t *b = _cca_bins_best_fit(st->free[pool], size);
    if (!b || a->cfg.max_split_size == SIZE_MAX) return b;
    size_t msz = a->cfg.max_split_size;
    if (size < msz && b->size >= msz) return NULL;            /* no oversize block for a small request */
    if (size >= msz && b->size >= size + CCA_LARGE_BUFFER) return NULL;  /* nor one far too big */
    return b;
}

/* Hands out the first `size` bytes of free block b, splitting off the rest. */
void _cca_take_block(cca_allocator_t *a, cca_block_t *b, size_t size, size_t requested)
{
    cca_stream_t *st = b->seg->stream;
    int pool = b->seg->pool;
    int64_t dcount, dbytes;
    if (_cca_take_split_deltas(a, b, size, &dcount, &dbytes)) {
        cca_block_t *r = _cca_block_new(st);   /* cannot fail: a spare was reserved by the caller */
        r->addr = b->addr + size;
        r->seg = b->seg;
        r->prev = b;
        r->next = b->next;
        r->state = CCA_BLOCK_FREE;
        r->gc_base = gc_now(a);
        _cca_bins_rekey(bins_of(b), b, r, b->size - size);   /* r takes b's place */
        if (b->next) b->next->prev = r;
        b->next = r;
        b->size = size;
    } else {
        _cca_bins_remove(bins_of(b), b);
    }
    split_delta(a, st, pool, dcount, dbytes);
    b->state = CCA_BLOCK_ALLOCATED;
    b->requested = requested;
    _cca_ctr_add(a, st, CCA_K_allocation, pool, 1);
    _cca_ctr_add(a, st, CCA_K_active, pool, 1);
    _cca_ctr_add(a, st, CCA_K_allocated_bytes, pool, (int64_t)b->size);
    _cca_ctr_add(a, st, CCA_K_active_bytes, pool, (int64_t)b->size);
    _cca_ctr_add(a, st, CCA_K_requested_bytes, pool, (int64_t)requested);
    if (_cca_oversize(a, b->size)) _cca_ctr_add(a, st, CCA_K_oversize_allocations, pool, 1);
}

/* ---- parking: the same size back at once, without split and merge ------
 * A block freed on the hot path whose previous neighbour is not free is
 * "parked": its figures change at once as if it had been merged with its
 * free neighbours, but the merge waits. If the next request of its stream
 * and pool is of its size and best fit would choose the merged block - and
 * carve exactly this block out of it again - the block is handed out as it
 * is, figures changed as if taken from the merged block. Anything else
 * (another size, another free, any all-locked call) first does the merge,
 * quietly. Every observable figure and address is PyTorch's. */

/* Parks b, allocated with no other stream's use, its allocation figures
 * already dropped by the caller, d its free's change (_cca_free_deltas);
 * false if it cannot be parked. */
bool _cca_park(cca_allocator_t *a, cca_stream_t *st, cca_block_t *b, const int64_t d[CCA_NSHARD])
{
    int pool = b->seg->pool;
    if (st->parked[pool] || (b->prev && b->prev->state == CCA_BLOCK_FREE)) return false;
    _cca_ctr_hot(st, CCA_K_active, pool, -1);
    _cca_ctr_hot(st, CCA_K_active_bytes, pool, -(int64_t)b->size);
    if (d[CCA_K_inactive_split]) _cca_ctr_hot(st, CCA_K_inactive_split, pool, d[CCA_K_inactive_split]);
    if (d[CCA_K_inactive_split_bytes]) _cca_ctr_hot(st, CCA_K_inactive_split_bytes, pool, d[CCA_K_inactive_split_bytes]);
    b->state = CCA_BLOCK_PARKED;
    b->requested = 0;
    b->gc_base = gc_now(a);
    st->parked[pool] = b;
    st->parked_epoch[pool] = ++st->epoch;     /* a block parked in the other pool may rise no more */
    return true;
}

/* Does the merge a parked block deferred (its figures are already counted). */
void _cca_flush_parked_block(cca_allocator_t *a, cca_stream_t *st, int pool)
{
    cca_block_t *b = st->parked[pool];
    st->parked[pool] = NULL;
    _cca_ptrmap_take(&st->live, b->addr);
    insert_free(a, b, false);
}

static inline bool key_before(size_t s1, uintptr_t a1, size_t s2, uintptr_t a2)
{
    return s1 < s2 || (s1 == s2 && a1 < a2);
}

/* The parked block of st's pool, handed out again for a request of `size`
 * if that is exactly what best fit on the merged state would do; NULL
 * otherwise (the caller flushes it and searches). */
cca_block_t *_cca_unpark(cca_allocator_t *a, cca_stream_t *st, int pool, size_t size, size_t requested)
{
    cca_block_t *b = st->parked[pool];
    if (!b || b->size != size) return NULL;
    cca_block_t *n = b->next;
    bool nf = n && n->state == CCA_BLOCK_FREE;
    size_t msize = size + (nf ? n->size : 0), msz = a->cfg.max_split_size;
    if (msz != SIZE_MAX && ((size < msz && msize >= msz) || (size >= msz && msize >= size + CCA_LARGE_BUFFER)))
        return NULL;                                  /* find_free would refuse the merged block */
    if (nf && pool == CCA_PLARGE && !(size < msz && n->size > CCA_SMALL_SIZE))
        return NULL;                                  /* it would not be split back */
    const cca_bins_t *bins = st->free[pool];
    if (bins->count != (size_t)nf) {                  /* other free blocks: would one fit better? */
        cca_block_t *c = _cca_bins_best_fit(bins, size);
        if (c && c == n) c = _cca_bins_next(bins, n); /* n would be part of the merged block */
        if (c && key_before(c->size, c->addr, msize, b->addr)) return NULL;
    }
    bool was = b->prev || (nf ? n->next : n);
    int64_t dcount = (int64_t)nf - (int64_t)was;
    int64_t dbytes = (nf ? (int64_t)n->size : 0) - (was ? (int64_t)msize : 0);
    /* Handing b out undoes its park exactly, except for requested bytes:
     * if no lease shrank and no figure rose since, only that one needs
     * checking. */
    int64_t d[CCA_NSHARD] = { [CCA_K_allocation] = 1, [CCA_K_active] = 1,
                              [CCA_K_oversize_allocations] = _cca_oversize(a, size),
                              [CCA_K_allocated_bytes] = (int64_t)size, [CCA_K_active_bytes] = (int64_t)size,
                              [CCA_K_requested_bytes] = (int64_t)requested,
                              [CCA_K_inactive_split] = dcount, [CCA_K_inactive_split_bytes] = dbytes };
    bool quick = st->epoch == st->parked_epoch[pool] &&
                 _cca_lease_ok(st, CCA_K_requested_bytes, pool, (int64_t)requested);
    int room = quick ? 1 : _cca_counters_make_room(a, st, pool, d);
    if (!room) return NULL;
    if (dcount) _cca_ctr_hot(st, CCA_K_inactive_split, pool, dcount);
    if (dbytes) _cca_ctr_hot(st, CCA_K_inactive_split_bytes, pool, dbytes);
    _cca_ctr_hot(st, CCA_K_allocation, pool, 1);
    _cca_ctr_hot(st, CCA_K_active, pool, 1);
    _cca_ctr_hot(st, CCA_K_allocated_bytes, pool, (int64_t)size);
    _cca_ctr_hot(st, CCA_K_active_bytes, pool, (int64_t)size);
    _cca_ctr_hot(st, CCA_K_requested_bytes, pool, (int64_t)requested);
    if (d[CCA_K_oversize_allocations]) _cca_ctr_hot(st, CCA_K_oversize_allocations, pool, 1);
    if (room == 2) _cca_counters_release_others(a, st);
    st->parked[pool] = NULL;
    st->epoch++;
    b->state = CCA_BLOCK_ALLOCATED;
    b->requested = requested;
    return b;
}

/* block.c - blocks inside segments: best fit, splitting the rest off,
 * coalescing with free neighbours (never across segments), under the
 * block's stream lock. Block code never counts: each transition's change
 * to the figures is a delta (blocks.h) its caller applies through the
 * counters unit (counters.c) first.
 *
 * A free block's last_requested is what torch's snapshot shows as an
 * inactive block's requested_size: torch keeps the field of the block
 * object, and its objects move as cca's structs do not - a split hands out
 * a new object and leaves the old one as the rest, a merge keeps the freed
 * block's object - so the value follows torch's object here: the rest of
 * a split keeps the free block's value, a merged block takes the freed
 * one's request. */
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
bool _cca_block_spare_reserve(cca_stream_t *st)
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

static inline cca_bins_t *block_bins_of(cca_block_t *b) { return b->seg->stream->free[b->seg->pool]; }

/* Inserts a free block into its bins, merged with its free neighbours. */
void _cca_block_insert_free(cca_block_t *b)
{
    cca_stream_t *st = b->seg->stream;
    cca_block_t *p = b->prev, *n = b->next;
    bool pf = p && p->state == CCA_BLOCK_FREE, nf = n && n->state == CCA_BLOCK_FREE;
    size_t last = b->requested;                       /* the merged block keeps the freed one's (torch's) */
    b->state = CCA_BLOCK_FREE;
    b->requested = 0;
    b->last_requested = last;
    if (pf) p->last_requested = last;
    if (pf && nf) {                       /* p absorbs b and n */
        _cca_bins_remove(block_bins_of(n), n);
        p->next = n->next;
        if (n->next) n->next->prev = p;
        else p->seg->last = p;
        _cca_bins_rekey(block_bins_of(p), p, p, p->addr, p->size + b->size + n->size);
        p->gc_base = b->gc_base;
        _cca_block_recycle(st, b);
        _cca_block_recycle(st, n);
        b = p;
    } else if (pf) {                      /* p absorbs b */
        p->next = n;
        if (n) n->prev = p;
        else p->seg->last = p;
        _cca_bins_rekey(block_bins_of(p), p, p, p->addr, p->size + b->size);
        p->gc_base = b->gc_base;
        _cca_block_recycle(st, b);
        b = p;
    } else if (nf) {                      /* b absorbs n and takes its place */
        b->next = n->next;
        if (n->next) n->next->prev = b;
        else b->seg->last = b;
        _cca_bins_rekey(block_bins_of(n), n, b, b->addr, b->size + n->size);
        _cca_block_recycle(st, n);
    } else {
        _cca_bins_insert(block_bins_of(b), b);
    }
}

/* An allocated or pending block becomes free (its stream work is done;
 * the caller applied _cca_free_delta or _cca_settle_delta). */
void _cca_block_free(cca_allocator_t *a, cca_block_t *b)
{
    b->n_uses = 0;
    b->gc_base = _cca_gc_now(a);
    _cca_block_insert_free(b);
}

/* PyTorch's best fit, with its max_split_size rules (_cca_fit_ok). */
cca_block_t *_cca_block_find_free(cca_allocator_t *a, cca_stream_t *st, int pool, size_t size)
{
    cca_block_t *b = _cca_bins_best_fit(st->free[pool], size);
    return b && _cca_fit_ok(a, size, b->size) ? b : NULL;
}

/* Hands out the first `size` bytes of free block b, splitting off the rest
 * (the caller applied _cca_take_delta). */
void _cca_block_take(cca_allocator_t *a, cca_block_t *b, size_t size, size_t requested)
{
    cca_stream_t *st = b->seg->stream;
    if (_cca_should_split(a, b, size)) {
        cca_block_t *r = _cca_block_new(st);   /* cannot fail: a spare was reserved by the caller */
        r->addr = b->addr + size;
        r->seg = b->seg;
        r->prev = b;
        r->next = b->next;
        r->state = CCA_BLOCK_FREE;
        r->gc_base = _cca_gc_now(a);
        r->last_requested = b->last_requested;        /* torch's rest is the old block: its value stays */
        _cca_bins_rekey(block_bins_of(b), b, r, r->addr, b->size - size);   /* r takes b's place */
        if (b->next) b->next->prev = r;
        else b->seg->last = r;
        b->next = r;
        b->size = size;
    } else {
        _cca_bins_remove(block_bins_of(b), b);
    }
    b->state = CCA_BLOCK_ALLOCATED;
    b->requested = requested;
    b->context = 0;                                   /* the all-locked path sets it while recording */
}

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
    else if (!(b = malloc(sizeof *b))) return NULL;
    memset(b, 0, sizeof *b);
    return b;
}

/* Keeps one spare block struct, so that a split cannot fail half-way. */
bool _cca_spare_reserve(cca_stream_t *st)
{
    if (st->spare) return true;
    cca_block_t *b = malloc(sizeof *b);
    if (!b) return false;
    b->next = NULL;
    b->uses = NULL;
    st->spare = b;
    return true;
}

void _cca_block_recycle(cca_stream_t *st, cca_block_t *b)
{
    free(b->uses);
    b->uses = NULL;
    b->next = st->spare;
    st->spare = b;
}

static inline cca_bins_t *bins_of(cca_block_t *b) { return &b->seg->stream->free[b->seg->pool]; }

static inline uint64_t gc_now(cca_allocator_t *a)
{
    return a->gc_enabled ? atomic_load_explicit(&a->gc_searches, memory_order_relaxed) : 0;
}

/* A free block counts as inactive split while its segment is split. */
static inline void split_stat(cca_allocator_t *a, const cca_block_t *b, int sign)
{
    if (!_cca_block_is_split(b)) return;
    cca_stream_t *st = b->seg->stream;
    _cca_ctr_add(a, st, CCA_K_inactive_split, b->seg->pool, sign);
    _cca_ctr_add(a, st, CCA_K_inactive_split_bytes, b->seg->pool, sign * (int64_t)b->size);
}

static inline bool should_split(const cca_allocator_t *a, const cca_block_t *b, size_t size)
{
    size_t remaining = b->size - size;
    if (b->seg->pool == CCA_PSMALL) return remaining >= CCA_MIN_BLOCK;
    return size < a->cfg.max_split_size && remaining > CCA_SMALL_SIZE;
}

/* Inserts a free block into its bins, merged with its free neighbours. */
void _cca_insert_free(cca_allocator_t *a, cca_block_t *b)
{
    cca_stream_t *st = b->seg->stream;
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
        _cca_block_recycle(st, b);
        _cca_block_recycle(st, n);
        b = p;
    } else if (pf) {                      /* p absorbs b */
        p->next = n;
        if (n) n->prev = p;
        _cca_bins_rekey(bins_of(p), p, p, p->size + b->size);
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
    b->gc_base = gc_now(a);
    split_stat(a, b, +1);
}

/* An allocated or pending block becomes free (its stream work is done). */
void _cca_free_block(cca_allocator_t *a, cca_block_t *b)
{
    cca_stream_t *st = b->seg->stream;
    _cca_ctr_add(a, st, CCA_K_active, b->seg->pool, -1);
    _cca_ctr_add(a, st, CCA_K_active_bytes, b->seg->pool, -(int64_t)b->size);
    b->n_uses = 0;
    _cca_insert_free(a, b);
}

/* PyTorch's best fit, with its max_split_size rules. */
cca_block_t *_cca_find_free(cca_allocator_t *a, cca_stream_t *st, int pool, size_t size)
{
    cca_block_t *b = _cca_bins_best_fit(&st->free[pool], size);
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
    split_stat(a, b, -1);
    if (should_split(a, b, size)) {
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
        split_stat(a, r, +1);
    } else {
        _cca_bins_remove(bins_of(b), b);
    }
    b->state = CCA_BLOCK_ALLOCATED;
    b->requested = requested;
    _cca_ctr_add(a, st, CCA_K_allocation, pool, 1);
    _cca_ctr_add(a, st, CCA_K_active, pool, 1);
    _cca_ctr_add(a, st, CCA_K_allocated_bytes, pool, (int64_t)b->size);
    _cca_ctr_add(a, st, CCA_K_active_bytes, pool, (int64_t)b->size);
    _cca_ctr_add(a, st, CCA_K_requested_bytes, pool, (int64_t)requested);
}

/* Whether raising figure k of the stream by d stays within its leases. */
static inline bool lease_ok(const cca_stream_t *st, int k, int pool, int64_t d)
{
    const cca_ctr_t *c = &st->ctr[k];
    return d <= 0 || (c->cur[pool] + d <= c->lease[1 + pool] && c->cur[0] + c->cur[1] + d <= c->lease[0]);
}

bool _cca_take_fits(const cca_allocator_t *a, const cca_stream_t *st, const cca_block_t *b,
                    size_t size, size_t requested)
{
    int pool = b->seg->pool;
    bool split = should_split(a, b, size), was = _cca_block_is_split(b);
    int64_t bytes = (int64_t)(split ? size : b->size);
    int64_t dcount = (int64_t)split - (int64_t)was;
    int64_t dbytes = (split ? (int64_t)(b->size - size) : 0) - (was ? (int64_t)b->size : 0);
    return lease_ok(st, CCA_K_allocation, pool, 1) && lease_ok(st, CCA_K_active, pool, 1) &&
           lease_ok(st, CCA_K_allocated_bytes, pool, bytes) && lease_ok(st, CCA_K_active_bytes, pool, bytes) &&
           lease_ok(st, CCA_K_requested_bytes, pool, (int64_t)requested) &&
           lease_ok(st, CCA_K_inactive_split, pool, dcount) &&
           lease_ok(st, CCA_K_inactive_split_bytes, pool, dbytes);
}

/* Freeing b changes only inactive-split figures upwards (the merge). */
bool _cca_free_fits(const cca_stream_t *st, const cca_block_t *b)
{
    const cca_block_t *p = b->prev, *n = b->next;
    bool pf = p && p->state == CCA_BLOCK_FREE, nf = n && n->state == CCA_BLOCK_FREE;
    int64_t size = (int64_t)b->size + (pf ? (int64_t)p->size : 0) + (nf ? (int64_t)n->size : 0);
    bool split = (pf ? p->prev : p) || (nf ? n->next : n);
    int64_t dcount = (int64_t)split - (int64_t)pf - (int64_t)nf;
    int64_t dbytes = (split ? size : 0) - (pf ? (int64_t)p->size : 0) - (nf ? (int64_t)n->size : 0);
    int pool = b->seg->pool;
    return lease_ok(st, CCA_K_inactive_split, pool, dcount) &&
           lease_ok(st, CCA_K_inactive_split_bytes, pool, dbytes);
}

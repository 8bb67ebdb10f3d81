/* expand.c - expandable segments' policy (expandable_segments:True): where
 * a growth maps, growing, cutting and joining segments, unmapping and
 * releasing cached handles, the growth ladder, the OOM report's fit model,
 * cca_check's part. Over the virtual-memory layer (vmm.c: the driver's
 * calls, reservations, the table of handles), which never calls back up.
 * All locked.
 *
 * The model. An allocator reserves address space per device (one range of
 * twice the device's memory, more when it fills; never per stream), and
 * maps physical handles (cuMemCreate) into it. A segment is a contiguous
 * mapped range of one stream and pool: its blocks split and merge as in
 * any segment, and it grows by mapping handles next to it (expand_best_spot:
 * above, below, or into a gap); two segments of
 * the same stream and pool that come to touch are joined. Where no
 * segment of the stream and pool can grow, a new one starts in the middle
 * of the largest unmapped gap, so that both it and the segment below keep
 * room to grow.
 *
 * Handles: a handle is mapped and unmapped whole. One that lies wholly
 * inside a free block can be unmapped; it is then held, unmapped, and
 * mapped again wherever a segment next grows (no cuMemCreate), or released
 * (cuMemRelease) to give the memory back. reserved_bytes counts every
 * handle created and not released, mapped or not; unmapped_bytes the ones
 * held unmapped; reserved = the segments' sizes + unmapped, per pool (a
 * held handle counts in the pool it was last mapped in).
 *
 * When handles are unmapped: not on free (that would make calls on every
 * cycle), but when memory runs short - before a growth fails for the
 * device or the cap (after waiting for pending frees), and (the growing
 * stream's holes, while memory is plentiful: _cca_segment_trim_plentiful) before
 * one would raise the reserved peak with release_before_grow - and on
 * cca_empty_cache, which also releases what is held. Released, too, on
 * the paths that return whole segments (garbage collection, a retired
 * stream's segments).
 *
 * Handle sizes: a growth needs `want` bytes (the request, less a free
 * block at the segment's end, rounded up to the granularity). Memory is
 * plentiful while the device's free memory (or the cap's room, if less)
 * is at least twice the bytes cca holds. Then one handle is created, ahead
 * of need - a sixteenth of what the pool holds, at least `want` - so that
 * a growing workload makes few calls, but never further ahead than
 * PyTorch's expandable segments map for the same request (its segment size,
 * 2 MiB small, 20 MiB under 10 MiB, the request's pages above, less the
 * request's pages: so cca's peak stays at or under torch's), and only if
 * it is at most 1/64 of the free memory; a larger growth takes several
 * handles of that size.
 * Once memory is short, every handle is one granule (2 MiB), so that a
 * handle can be unmapped as soon as its own 2 MiB are free and nothing a
 * partly used handle strands is more than a page. On a device several
 * times the workload that means few, large handles; on one just its size,
 * fine ones once half of it is held. (Chosen on the shared traces'
 * replays from these principles among: a bound alone of 1/64 or 1/256 of
 * free memory, one that shrinks with the square of it, and "plentiful" at
 * free >= 1x or 2x held; docs/history.md has the figures.) */
#include <stdlib.h>
#include "internal.h"

#define X_AHEAD_DIV 16                                /* a handle mapped ahead: 1/16 of the pool's reserved bytes */
#define X_FREE_DIV 64                                 /* ... and at most 1/64 of the memory still free */
#define X_PLENTY 2                                    /* plentiful: free memory at least twice what cca holds */

/* ---- segments' shapes ------------------------------------------------------ */

static inline cca_block_t *expand_last_block(const cca_segment_t *s) { return s->last; }

static void expand_seg_link_after(cca_allocator_t *a, cca_segment_t *pos, cca_segment_t *s)
{
    if (!pos) {
        s->prev = NULL;
        s->next = a->segments;
        if (a->segments) a->segments->prev = s;
        a->segments = s;
        return;
    }
    s->prev = pos;
    s->next = pos->next;
    if (pos->next) pos->next->prev = s;
    pos->next = s;
}

static void expand_seg_unlink(cca_allocator_t *a, cca_segment_t *s)
{
    if (s->prev) s->prev->next = s->next;
    else a->segments = s->next;
    if (s->next) s->next->prev = s->prev;
}

/* Joins segments lo and hi (hi starts where lo ends; same stream and
 * pool) into one: the record with more bytes stays, so that the blocks
 * and address-map chunks relabelled are the smaller part's. Returns it. */
static cca_segment_t *expand_join(cca_allocator_t *a, cca_segment_t *lo, cca_segment_t *hi)
{
    cca_segment_t *keep = lo->size >= hi->size ? lo : hi, *gone = keep == lo ? hi : lo;
    cca_block_t *l = lo->last, *f = hi->first, *last = hi->last, *first = lo->first;
    for (cca_block_t *b = gone->first; b; b = b->next) b->seg = keep;
    cca_bins_t *bins = keep->stream->free[keep->pool];
    if (l->state == CCA_BLOCK_FREE && f->state == CCA_BLOCK_FREE) {   /* l absorbs f */
        _cca_bins_remove(bins, f);
        l->next = f->next;
        if (f->next) f->next->prev = l;
        _cca_bins_rekey(bins, l, l, l->addr, l->size + f->size);
        if (last == f) last = l;
        _cca_block_recycle(keep->stream, f);
    } else {
        l->next = f;
        f->prev = l;
    }
    _cca_segmap_set(a, gone->addr, gone->size, keep);
    keep->addr = lo->addr;
    keep->size = lo->size + hi->size;
    keep->first = first;
    keep->last = last;
    expand_seg_unlink(a, gone);
    _cca_segment_recycle(a, gone);
    _cca_stat_add(a->stats.segment, keep->pool, -1);
    return keep;
}

/* The mapped bytes [at, at + hs) as a free block: a new segment (ns), a new
 * block after the segment's last (nb), or the last free block grown. */
static cca_segment_t *expand_map_attach(cca_allocator_t *a, cca_stream_t *st, int pool, cca_segment_t *s,
                                   cca_segment_t *ns, cca_block_t *nb, cca_block_t *tail, uintptr_t at, size_t hs)
{
    if (nb) {
        nb->addr = at;
        nb->size = hs;
        nb->state = CCA_BLOCK_FREE;
        nb->gc_base = _cca_gc_now(a);
    }
    if (!s) {
        s = ns;
        s->addr = at;
        s->size = hs;
        s->pool = pool;
        s->expandable = true;
        s->stream = st;
        atomic_store_explicit(&s->owner, st, memory_order_relaxed);
        s->first = s->last = nb;
        nb->seg = s;
        expand_seg_link_after(a, NULL, s);
        _cca_bins_insert(st->free[pool], nb);
        _cca_stat_add(a->stats.segment, pool, 1);
    } else if (nb) {
        nb->seg = s;
        nb->prev = tail;
        tail->next = nb;
        s->last = nb;
        _cca_bins_insert(st->free[pool], nb);
        s->size += hs;
    } else {
        _cca_bins_rekey(st->free[pool], tail, tail, tail->addr, tail->size + hs);
        s->size += hs;
    }
    return s;
}

/* A new range (fresh) right above one of the stream's, or one right above
 * it: joined into one range. */
static void expand_map_join(cca_allocator_t *a, cca_stream_t *st, int pool, cca_segment_t **seg, bool fresh, uintptr_t at,
                       size_t hs)
{
    struct cca_xvmm *x = a->xv;
    cca_segment_t *s = *seg;
    size_t i = _cca_vmm_map_index(x, at);
    if (fresh && i && x->maps[i - 1].addr + x->maps[i - 1].size == at && !x->maps[i - 1].stray) {
        cca_segment_t *t = _cca_segmap_find(a, at - 1);
        if (t && t->expandable && t->stream == st && t->pool == pool && t->addr + t->size == at)
            s = *seg = expand_join(a, t, s);
    }
    i = _cca_vmm_map_index(x, at + hs);
    if (i < x->nmaps && x->maps[i].addr == at + hs && !x->maps[i].stray) {
        cca_segment_t *t = _cca_segmap_find(a, at + hs);
        if (t && t->expandable && t->stream == st && t->pool == pool && t->addr == at + hs) *seg = expand_join(a, s, t);
    }
}

/* Maps handle h (hs bytes, counted in pool hpool) at `at`: the end of *seg,
 * or a new segment of (st, pool) when *seg is NULL. On failure the handle
 * is held unmapped (a caller's handle is never lost). */
static cca_status_t expand_map(cca_allocator_t *a, cca_stream_t *st, int pool, cca_segment_t **seg, uintptr_t at,
                          CUmemGenericAllocationHandle h, size_t hs, int hpool, cca_oom_ctx_t *ctx)
{
    cca_segment_t *s = *seg, *ns = NULL;
    cca_block_t *tail = s ? expand_last_block(s) : NULL, *nb = NULL;
    bool need_block = !tail || tail->state != CCA_BLOCK_FREE;
    if (!_cca_vmm_room_maps(a) || (need_block && !(nb = _cca_block_new(st))) || (!s && !(ns = _cca_segment_new(a))) ||
        !_cca_segmap_reserve(a, at, hs)) {
        if (nb) _cca_block_recycle(st, nb);
        if (ns) _cca_segment_recycle(a, ns);
        _cca_vmm_hold(a, h, hs, hpool);
        ctx->host_failed = true;
        return _cca_errors_fail(CCA_ERROR_OUT_OF_MEMORY, "cca: host memory for expandable segments ran out");
    }
    cca_status_t r = _cca_vmm_map(a, at, h, hs, hpool, pool, ctx);
    if (r != CCA_OK) {
        if (nb) _cca_block_recycle(st, nb);
        if (ns) _cca_segment_recycle(a, ns);
        return r;
    }
    s = expand_map_attach(a, st, pool, s, ns, nb, tail, at, hs);
    *seg = s;
    _cca_segmap_set(a, at, hs, s);
    if (_cca_history_on(a)) _cca_history_add(a, CCA_HISTORY_SEGMENT_ALLOC, at, hs, st->handle, 0, 0);
    expand_map_join(a, st, pool, seg, s == ns, at, hs);
    return CCA_OK;
}

/* What a cut leaves of the blocks around the hole [h0, h1). */
typedef struct expand_cut_ends { cca_block_t *first_after, *last_after, *last_before; } expand_cut_ends_t;

/* Block b loses [h0, h1): what lies below stays b (lb), what lies above
 * becomes rb (a new block where both sides remain); b alone recycled. */
static expand_cut_ends_t expand_cut_blocks(cca_allocator_t *a, cca_segment_t *s, cca_block_t *b, cca_block_t *rb, uintptr_t h0,
                                 uintptr_t h1)
{
    cca_stream_t *st = s->stream;
    cca_bins_t *bins = st->free[s->pool];
    uintptr_t bend = b->addr + b->size;
    bool left = h0 > b->addr, right = h1 < bend;
    cca_block_t *oldnext = b->next, *oldprev = b->prev, *oldlast = s->last;
    _cca_bins_remove(bins, b);
    _cca_segmap_set(a, h0, h1 - h0, NULL);
    cca_block_t *lb = left ? b : NULL;
    if (right && !left) rb = b;
    if (lb) {
        lb->size = h0 - lb->addr;
        lb->next = NULL;
        _cca_bins_insert(bins, lb);
    } else if (oldprev) {
        oldprev->next = NULL;
    }
    if (rb) {
        rb->addr = h1;
        rb->size = bend - h1;
        rb->state = CCA_BLOCK_FREE;
        rb->gc_base = b->gc_base;
        rb->prev = NULL;
        rb->next = oldnext;
        if (oldnext) oldnext->prev = rb;
        _cca_bins_insert(bins, rb);
    } else if (oldnext) {
        oldnext->prev = NULL;
    }
    if (!lb && !rb) _cca_block_recycle(st, b);
    return (expand_cut_ends_t){ rb ? rb : oldnext, oldnext ? oldlast : rb, lb ? lb : oldprev };
}

/* Segment s around the hole [h0, h1): split in two (ns the part above),
 * cut at one end, or gone. The part above, if any, in *after. */
static void expand_cut_segment(cca_allocator_t *a, cca_segment_t *s, cca_segment_t *ns, const expand_cut_ends_t *e, bool before,
                          bool follows, uintptr_t h0, uintptr_t h1, cca_segment_t **after)
{
    uintptr_t send = s->addr + s->size;
    *after = NULL;
    if (before && follows) {                          /* split: the part above becomes a segment of its own */
        ns->addr = h1;
        ns->size = send - h1;
        ns->pool = s->pool;
        ns->expandable = true;
        ns->stream = s->stream;
        ns->first = e->first_after;
        ns->last = e->last_after;
        for (cca_block_t *c = e->first_after; c; c = c->next) c->seg = ns;
        atomic_store_explicit(&ns->owner, s->stream, memory_order_relaxed);
        _cca_segmap_set(a, ns->addr, ns->size, ns);
        s->size = h0 - s->addr;
        s->last = e->last_before;
        expand_seg_link_after(a, s, ns);
        _cca_stat_add(a->stats.segment, s->pool, 1);
        *after = ns;
    } else if (before) {                              /* the segment ends below the hole */
        s->size = h0 - s->addr;
        s->last = e->last_before;
    } else if (follows) {                             /* it starts above the hole */
        s->addr = h1;
        s->size = send - h1;
        s->first = e->first_after;
        s->last = e->last_after;
        *after = s;
    } else {                                          /* nothing left of it */
        expand_seg_unlink(a, s);
        _cca_stat_add(a->stats.segment, s->pool, -1);
        _cca_segment_recycle(a, s);
    }
}

/* Unmaps mapping maps[mi], which lies wholly inside free block b of
 * segment s, and holds its handle. *after gets the segment that holds what
 * followed the hole, and *next its first block (NULL: nothing followed).
 * False (nothing changed) when host memory or the driver refused. */
static bool expand_cut(cca_allocator_t *a, cca_segment_t *s, cca_block_t *b, size_t mi, cca_segment_t **after,
                  cca_block_t **next)
{
    struct cca_xvmm *x = a->xv;
    cca_stream_t *st = s->stream;
    uintptr_t h0 = x->maps[mi].addr, h1 = h0 + x->maps[mi].size, bend = b->addr + b->size;
    size_t hs = x->maps[mi].size;
    bool left = h0 > b->addr, right = h1 < bend;
    bool before = left || b->prev, follows = right || b->next;
    CUmemGenericAllocationHandle h = x->maps[mi].h;
    cca_block_t *rb = NULL;
    cca_segment_t *ns = NULL;
    if (!_cca_vmm_room_held(a) || (left && right && !(rb = _cca_block_new(st))) ||
        (before && follows && !(ns = _cca_segment_new(a))) || !_cca_vmm_unmap(a, mi)) {
        if (rb) _cca_block_recycle(st, rb);
        if (ns) _cca_segment_recycle(a, ns);
        return false;
    }
    if (_cca_history_on(a)) _cca_history_add(a, CCA_HISTORY_SEGMENT_FREE, h0, hs, st->handle, 0, 0);
    expand_cut_ends_t e = expand_cut_blocks(a, s, b, rb, h0, h1);
    *next = e.first_after;
    int pool = s->pool;                               /* s may be recycled below */
    expand_cut_segment(a, s, ns, &e, before, follows, h0, h1, after);
    _cca_vmm_hold(a, h, hs, pool);
    return true;
}

/* Unmaps every handle that lies wholly inside a free block of an
 * expandable segment (of `only`'s segment alone when only is not NULL; of
 * stream st's segments alone, and only their holes - free blocks between
 * two live ones - when st is not NULL: a free block at a range's end is
 * where the next growth maps, so unmapping it there would cost an unmap
 * and a map for nothing), holding the handles. */
static void expand_unmap_free(cca_allocator_t *a, cca_segment_t *only, const cca_stream_t *st)
{
    struct cca_xvmm *x = a->xv;
    for (cca_segment_t *s = only ? only : a->segments, *next; s; s = next) {
        next = only ? NULL : s->next;
        if (!s->expandable || (st && s->stream != st)) continue;
        cca_block_t *b = s->first;
        bool in_hole = false;                         /* b is the rest of a hole whose start was unmapped */
        while (b) {
            bool wanted = !st || (b->next && (b->prev || in_hole));
            size_t mi = wanted && b->state == CCA_BLOCK_FREE ? _cca_vmm_map_index(x, b->addr) : x->nmaps;
            if (mi < x->nmaps && x->maps[mi].addr + x->maps[mi].size <= b->addr + b->size) {
                cca_segment_t *after;
                cca_block_t *nb;
                if (expand_cut(a, s, b, mi, &after, &nb)) {
                    if (!after) break;
                    s = after;                        /* a split part is linked right after s: walked here */
                    b = nb;
                    in_hole = true;
                    continue;
                }
            }
            in_hole = false;
            b = b->next;
        }
    }
}

/* ---- what the rest of the allocator calls ---------------------------------- */

bool _cca_expand_release_segment(cca_allocator_t *a, cca_segment_t *seg)
{
    size_t from = a->xv->nheld;
    uintptr_t lo = seg->addr, hi = seg->addr + seg->size;
    expand_unmap_free(a, seg, NULL);
    _cca_vmm_release_held(a, from);
    for (cca_segment_t *s = a->segments; s; s = s->next)   /* anything left of it: a handle the driver kept */
        if (s->expandable && s->addr >= lo && s->addr < hi) return false;
    return true;
}

void _cca_expand_release_cached(cca_allocator_t *a)
{
    _cca_vmm_retry_strays(a);
    expand_unmap_free(a, NULL, NULL);
    _cca_vmm_release_held(a, 0);
}

/* ---- growing ------------------------------------------------------------------ */

typedef struct xspot {
    cca_segment_t *seg;                               /* to extend; NULL: a new segment at addr */
    uintptr_t addr;                                   /* where the mapping starts */
    size_t room;                                      /* unmapped address space from addr */
    size_t need;                                      /* bytes to map there (granularity multiple) */
} xspot_t;

/* A layout the spot is chosen in: the allocator's own (ranges NULL: its
 * segments and mappings), or one the OOM report builds to look at, with
 * the free handles unmapped (expand_view_*). A range is a segment as the
 * spot sees it. */
typedef struct xrange {
    cca_segment_t *seg;                               /* the allocator's segment; NULL in a view */
    uintptr_t addr;
    size_t size, head, tail;                          /* free bytes of its first and last block */
    const cca_stream_t *stream;
    int pool;
} xrange_t;

typedef struct xlayout {
    cca_xmaps_t maps;
    const xrange_t *ranges;                           /* NULL: a->segments */
    size_t nranges;
} xlayout_t;

static inline xlayout_t expand_real_layout(const struct cca_xvmm *x) { return (xlayout_t){ _cca_vmm_maps(x), NULL, 0 }; }

static void expand_range_of(cca_segment_t *s, xrange_t *out)
{
    *out = (xrange_t){ s, s->addr, s->size, s->first->state == CCA_BLOCK_FREE ? s->first->size : 0,
                       s->last->state == CCA_BLOCK_FREE ? s->last->size : 0, s->stream, s->pool };
}

/* The layout's next range of (st, pool), in the order of the allocator's
 * segment list; *cur starts NULL (a view: the index + 1). */
static bool expand_next_range(const cca_allocator_t *a, const xlayout_t *L, const cca_stream_t *st, int pool, uintptr_t *cur,
                         xrange_t *out)
{
    if (L->ranges) {
        for (size_t i = (size_t)*cur; i < L->nranges; i++)
            if (L->ranges[i].stream == st && L->ranges[i].pool == pool) {
                *cur = (uintptr_t)(i + 1);
                *out = L->ranges[i];
                return true;
            }
        *cur = (uintptr_t)L->nranges;
        return false;
    }
    for (cca_segment_t *s = *cur ? ((cca_segment_t *)*cur)->next : a->segments; s; s = s->next)
        if (s->expandable && s->stream == st && s->pool == pool) {
            *cur = (uintptr_t)s;
            expand_range_of(s, out);
            return true;
        }
    return false;
}

/* The range of (st, pool) that starts at addr, if a mapping starts there. */
static bool expand_range_starting(const cca_allocator_t *a, const xlayout_t *L, const cca_stream_t *st, int pool,
                             uintptr_t addr, xrange_t *out)
{
    size_t i = _cca_vmm_index(&L->maps, addr);
    if (i >= L->maps.n || L->maps.v[i].addr != addr || L->maps.v[i].stray) return false;
    if (L->ranges) {
        for (size_t k = 0; k < L->nranges; k++)
            if (L->ranges[k].addr == addr && L->ranges[k].stream == st && L->ranges[k].pool == pool) {
                *out = L->ranges[k];
                return true;
            }
        return false;
    }
    cca_segment_t *t = _cca_segmap_find(a, addr);
    if (!t || !t->expandable || t->stream != st || t->pool != pool || t->addr != addr) return false;
    expand_range_of(t, out);
    return true;
}

/* Where (st, pool) grows for a request of `rounded` bytes in layout L,
 * touching nothing: where one of its own segments needs the fewest new
 * bytes - at its end (a free block there counts, and so does one at the
 * start of a segment of ours right above, when filling the gap between
 * joins them), or right below its start (its free first block counts;
 * the new range joins it). Filling a gap wins ties, then growing upward
 * (the mappings' array and the driver's stay appended to at their ends).
 * Else a new segment in the middle of the largest unmapped gap (at its
 * start when nothing lies below it). False when only a new reservation
 * holds it: sp->need is then what it needs (the request's own pages),
 * the rest of *sp is not set. The one place the spot is decided: growth
 * (expand_spot) and the OOM report (_cca_expand_need, largest_fit) ask it. */
static bool expand_best_spot(const cca_allocator_t *a, const xlayout_t *L, const cca_stream_t *st, int pool, size_t rounded,
                        xspot_t *sp)
{
    const struct cca_xvmm *x = a->xv;
    const cca_xmaps_t *m = &L->maps;
    size_t best = SIZE_MAX;
    xrange_t s, t;
    for (uintptr_t cur = 0; expand_next_range(a, L, st, pool, &cur, &s);) {
        uintptr_t end = s.addr + s.size;
        size_t need = _cca_vmm_up(x, s.tail < rounded ? rounded - s.tail : 1), room = _cca_vmm_room_at(x, m, end);
        if (need <= room && need < best) {
            best = need;
            *sp = (xspot_t){ s.seg, end, room, need };
        }
        if (room && room <= need && room <= best &&   /* fill the gap up to a segment of ours, joining it (preferred) */
            expand_range_starting(a, L, st, pool, end + room, &t) && s.tail + room + t.head >= rounded) {
            best = room;
            *sp = (xspot_t){ s.seg, end, room, room };
        }
    }
    for (uintptr_t cur = 0; expand_next_range(a, L, st, pool, &cur, &s);) {   /* a new range right below one of ours, joining it */
        size_t need = _cca_vmm_up(x, s.head < rounded ? rounded - s.head : 1), room = _cca_vmm_room_below(x, m, s.addr);
        if (need <= room && need < best) {
            best = need;
            *sp = (xspot_t){ NULL, s.addr - need, need, need };
        }
    }
    if (best != SIZE_MAX) return true;
    size_t need = _cca_vmm_up(x, rounded);
    uintptr_t gs;
    bool below;
    size_t glen = _cca_vmm_largest_gap(x, m, &gs, &below);
    sp->need = need;
    if (glen < need) return false;
    uintptr_t at = gs;
    if (below) {
        size_t off = _cca_vmm_down(x, glen / 2);
        at = gs + (off + need <= glen ? off : glen - need);
    }
    *sp = (xspot_t){ NULL, at, gs + glen - at, need };
    return true;
}

/* The spot expand_best_spot picks in the allocator's own layout; a new
 * reservation where none holds it. */
static cca_status_t expand_spot(cca_allocator_t *a, cca_stream_t *st, int pool, size_t rounded, xspot_t *sp,
                           cca_oom_ctx_t *ctx)
{
    struct cca_xvmm *x = a->xv;
    xlayout_t L = expand_real_layout(x);
    if (expand_best_spot(a, &L, st, pool, rounded, sp)) return CCA_OK;
    size_t need = sp->need;
    cca_status_t s = _cca_vmm_reserve(a, need, ctx);
    if (s != CCA_OK) return s;
    *sp = (xspot_t){ NULL, x->res[x->nres - 1].base, x->res[x->nres - 1].size, need };
    return CCA_OK;
}

/* ---- the OOM report's view of growth ----------------------------------------
 * segment_size: what the growth needs to map at the spot expand_best_spot picks
 * now. largest_fit: a request of r bytes on stream st (pool by size)
 * succeeds iff a free block of st's pool holds it, or the growth ladder
 * (_cca_expand_grow) gets it its spot's bytes. The ladder tries the layout as
 * it is, then with every handle that lies wholly inside a free block (any
 * stream or pool) and every stray unmapped and held, then with every held
 * handle released; handles held are mapped first, new ones need the
 * device's free memory and the cap's room, M = min(D, C - R). After the
 * last rung the request succeeds iff N1 <= M + H1, N1 the need at the best
 * spot of the unmapped layout and H1 the bytes held there (mapped held
 * handles, or released ones that become free memory and room, serve
 * alike), and every earlier success implies it (unmapping moves a spot's
 * free end down by the bytes it holds and adds them to H1). N1 grows with
 * r (each spot's need grows with r on a prefix of sizes), so success is a
 * prefix of sizes in each pool: oomfig.c bisects. Not modelled: garbage
 * collection and release_before_grow acting before the first try, a
 * driver refusing a retry's unmap or release, the address space running
 * out. */

size_t _cca_expand_need(const cca_allocator_t *a, const cca_stream_t *st, int pool, size_t rounded)
{
    xlayout_t L = expand_real_layout(a->xv);
    xspot_t sp;
    (void)expand_best_spot(a, &L, st, pool, rounded, &sp);   /* no spot: a new reservation of sp.need */
    return sp.need;
}

struct cca_xfit {
    const cca_allocator_t *a;
    const cca_stream_t *st;
    xlayout_t view;                                   /* the layout with every free handle unmapped */
    cca_xmap_t *maps;
    xrange_t *ranges;
    size_t nranges, capranges;
    size_t room;                                      /* M + H1 */
    size_t fit[CCA_POOL_COUNT];                       /* st's (and its siblings') largest free block per pool */
};

static bool expand_view_push(cca_xfit_t *f, uintptr_t addr, uintptr_t end, size_t head, size_t tail, const cca_segment_t *s)
{
    if (f->nranges == f->capranges) {
        size_t cap = f->capranges ? f->capranges * 2 : 16;
        xrange_t *v = realloc(f->ranges, cap * sizeof *v);
        if (!v) return false;
        f->ranges = v;
        f->capranges = cap;
    }
    f->ranges[f->nranges++] = (xrange_t){ NULL, addr, end - addr, head, tail, s->stream, s->pool };
    return true;
}

/* Segment s with the handles wholly inside its free blocks unmapped (as
 * expand_unmap_free leaves it): marks them in gone[] and counts their bytes in
 * *freed; for st's segments, the ranges that remain go into the view, in
 * the segment list's order (expand_cut links a split part right after). */
static bool expand_view_segment(cca_xfit_t *f, const cca_segment_t *s, bool *gone, size_t *freed)
{
    const struct cca_xvmm *x = f->a->xv;
    bool keep = s->stream == f->st, open = false;
    uintptr_t p0 = 0;
    size_t head = 0, tail = 0;
    for (const cca_block_t *b = s->first; b; b = b->next) {
        uintptr_t h0 = 0, h1 = 0, bend = b->addr + b->size;
        if (b->state == CCA_BLOCK_FREE)
            for (size_t k = _cca_vmm_map_index(x, b->addr); k < x->nmaps && x->maps[k].addr + x->maps[k].size <= bend; k++) {
                if (!h1) h0 = x->maps[k].addr;
                h1 = x->maps[k].addr + x->maps[k].size;
                gone[k] = true;
                *freed += x->maps[k].size;
            }
        if (!h1) {                                    /* the block stays whole */
            size_t fb = b->state == CCA_BLOCK_FREE ? b->size : 0;
            if (!open) open = true, p0 = b->addr, head = fb;
            tail = fb;
            continue;
        }
        if (h0 > b->addr) {                           /* its part below the hole ends a range */
            if (!open) open = true, p0 = b->addr, head = h0 - b->addr;
            tail = h0 - b->addr;
        }
        if (open && keep && !expand_view_push(f, p0, h0, head, tail, s)) return false;
        open = false;
        if (bend > h1) open = true, p0 = h1, head = tail = bend - h1;   /* its part above starts one */
    }
    if (open && keep && !expand_view_push(f, p0, s->addr + s->size, head, tail, s)) return false;
    return true;
}

cca_xfit_t *_cca_expand_fit_new(const cca_allocator_t *a, const cca_stream_t *st, size_t dev_free)
{
    const struct cca_xvmm *x = a->xv;
    cca_xfit_t *f = calloc(1, sizeof *f);
    bool *gone = calloc(x->nmaps ? x->nmaps : 1, sizeof *gone);
    if (!f || !gone || !(f->maps = malloc((x->nmaps ? x->nmaps : 1) * sizeof *f->maps))) goto fail;
    f->a = a;
    f->st = st;
    size_t freed = 0;                                 /* what a retry unmaps: strays, handles in free blocks */
    for (size_t k = 0; k < x->nmaps; k++)
        if (x->maps[k].stray) gone[k] = true, freed += x->maps[k].size;
    for (const cca_segment_t *s = a->segments; s; s = s->next)
        if (s->expandable && !expand_view_segment(f, s, gone, &freed)) goto fail;
    size_t n = 0;
    for (size_t k = 0; k < x->nmaps; k++)
        if (!gone[k]) f->maps[n++] = x->maps[k];
    static const xrange_t none[1];                    /* a view with no range of st's (NULL would mean a->segments) */
    f->view = (xlayout_t){ { f->maps, n }, f->ranges ? f->ranges : none, f->nranges };
    size_t held = freed;
    for (size_t i = 0; i < x->nheld; i++) held += x->held[i].size;
    size_t reserved = (size_t)a->stats.reserved_bytes[CCA_POOL_ALL].current;
    size_t cap_room = a->cap == SIZE_MAX ? SIZE_MAX : a->cap > reserved ? a->cap - reserved : 0;
    size_t m = dev_free < cap_room ? dev_free : cap_room;
    f->room = m > SIZE_MAX - held ? SIZE_MAX : m + held;
    for (const cca_stream_t *o = a->streams; o && st; o = o->next) {   /* st's cached blocks, its siblings' (shards) */
        if (o != st && !(st->shared && o->shared && o->key == st->key && !o->dead)) continue;
        for (int p = CCA_POOL_SMALL; p <= CCA_POOL_LARGE; p++) {
            const cca_block_t *b = _cca_bins_largest(o->free[p]);
            if (b && b->size > f->fit[p]) f->fit[p] = b->size;
        }
    }
    free(gone);
    return f;
fail:
    free(gone);
    _cca_expand_fit_free(f);
    return NULL;
}

bool _cca_expand_fit(const cca_xfit_t *f, size_t rounded)
{
    int pool = rounded <= CCA_SMALL_SIZE ? CCA_POOL_SMALL : CCA_POOL_LARGE;
    if (f->fit[pool] >= rounded) return true;
    xspot_t sp;
    (void)expand_best_spot(f->a, &f->view, f->st, pool, rounded, &sp);
    return sp.need <= f->room;
}

void _cca_expand_fit_free(cca_xfit_t *f)
{
    if (!f) return;
    free(f->maps);
    free(f->ranges);
    free(f);
}

/* The held handle to map for `want` more bytes with `room` to spare: the
 * smallest that covers want, else the largest below it; -1: none fits. */
static long expand_pick_held(const struct cca_xvmm *x, size_t want, size_t room)
{
    long cover = -1, part = -1;
    for (size_t i = 0; i < x->nheld; i++) {
        size_t hs = x->held[i].size;
        if (hs > room) continue;
        if (hs >= want) {
            if (cover < 0 || hs < x->held[cover].size) cover = (long)i;
        } else if (part < 0 || hs > x->held[part].size) {
            part = (long)i;
        }
    }
    return cover >= 0 ? cover : part;
}

/* The size of the next handle to create for `want` more bytes (see the
 * top of the file); 0: the cap or the device's free memory leaves no room
 * for want (a growth does not start what it cannot finish). */
static size_t expand_handle_size(cca_allocator_t *a, int pool, size_t want, size_t room, cca_oom_ctx_t *ctx)
{
    /* never further ahead than PyTorch's expandable segments map for this
     * request: its segment size (2 MiB small, 20 MiB under 10 MiB, the
     * request's pages above) less the request's own pages */
    size_t pages = _cca_vmm_up(a->xv, ctx->rounded);
    size_t step = ctx->rounded <= CCA_SMALL_SIZE ? CCA_SMALL_BUFFER
                : ctx->rounded < CCA_MIN_LARGE_ALLOC ? CCA_LARGE_BUFFER : pages;
    size_t torch_ahead = step > pages ? step - pages : 0;
    struct cca_xvmm *x = a->xv;
    size_t reserved = (size_t)a->stats.reserved_bytes[CCA_POOL_ALL].current;
    size_t cap_room = a->cap == SIZE_MAX ? SIZE_MAX : a->cap > reserved ? a->cap - reserved : 0;
    if (want > cap_room) {
        ctx->cap_refused = true;
        return 0;
    }
    size_t dev_free = 0, dev_total = 0;
    if (cudaMemGetInfo(&dev_free, &dev_total) != cudaSuccess) {
        _cca_errors_clear();
        return want;
    }
    if (want > dev_free) {                            /* the device would refuse: no partial growth */
        ctx->device_refused = true;
        return 0;
    }
    size_t avail = dev_free < cap_room ? dev_free : cap_room;
    size_t bound = avail >= X_PLENTY * reserved ? _cca_vmm_down(x, avail / X_FREE_DIV) : 0;   /* short: 2 MiB handles */
    size_t ahead = _cca_vmm_down(x, (size_t)a->stats.reserved_bytes[pool].current / X_AHEAD_DIV);
    if (ahead > want + torch_ahead) ahead = want + torch_ahead;
    size_t one = ahead > want ? ahead : want;
    if (one > room) one = _cca_vmm_down(x, room);
    if (one > cap_room) one = _cca_vmm_down(x, cap_room);
    if (one <= bound) return one;
    size_t piece = bound > x->gran ? bound : x->gran;
    return piece < want ? piece : want;
}

/* Maps sp->need bytes at the spot: held handles first, then new ones. */
static cca_status_t expand_fill(cca_allocator_t *a, cca_stream_t *st, int pool, xspot_t *sp, cca_oom_ctx_t *ctx)
{
    struct cca_xvmm *x = a->xv;
    cca_segment_t *seg = sp->seg;
    size_t mapped = 0;
    while (mapped < sp->need) {
        size_t want = sp->need - mapped, room = sp->room - mapped;
        if (!_cca_vmm_room_held(a)) {
            ctx->host_failed = true;
            return _cca_errors_fail(CCA_ERROR_OUT_OF_MEMORY, "cca: host memory for expandable segments ran out");
        }
        long i = expand_pick_held(x, want, room);
        CUmemGenericAllocationHandle h;
        size_t hs;
        int hpool = pool;
        if (i >= 0) {
            cca_xheld_t hd = _cca_vmm_take_held(a, (size_t)i);
            h = hd.h, hs = hd.size, hpool = hd.pool;
        } else {
            if (!(hs = expand_handle_size(a, pool, want, room, ctx))) return CCA_ERROR_OUT_OF_MEMORY;
            cca_status_t s = _cca_vmm_create(a, pool, &hs, want, &h, ctx);
            if (s != CCA_OK) return s;
        }
        cca_status_t s = expand_map(a, st, pool, &seg, sp->addr + mapped, h, hs, hpool, ctx);
        if ((size_t)a->stats.reserved_bytes[CCA_POOL_ALL].current > a->reserved_high)
            a->reserved_high = (size_t)a->stats.reserved_bytes[CCA_POOL_ALL].current;
        if (s != CCA_OK) return s;
        mapped += hs;
    }
    return CCA_OK;
}

static cca_status_t expand_try(cca_allocator_t *a, cca_stream_t *st, int pool, cca_oom_ctx_t *ctx, cca_block_t **out)
{
    xspot_t sp;
    cca_status_t s = expand_spot(a, st, pool, ctx->rounded, &sp, ctx);
    if (s == CCA_OK) s = expand_fill(a, st, pool, &sp, ctx);
    if (s != CCA_OK) return s;
    *out = _cca_block_find_free(a, st, pool, ctx->rounded);
    if (!*out) {                                      /* cannot happen: the spot holds it now */
        ctx->device_refused = true;
        return CCA_ERROR_OUT_OF_MEMORY;
    }
    return CCA_OK;
}

/* The growth ladder of an expandable cache, a chain of attempts in the
 * order below: each returns whether it settled the request (g->s holds
 * the status: a block, or a failure no later attempt mends: not out of
 * memory, or host memory ran out). A retry works on a copy of the context
 * with the refusals cleared and adds what refused it. */
typedef struct xgrow {
    cca_allocator_t *a;
    cca_stream_t *st;
    int pool;
    cca_oom_ctx_t *ctx;
    cca_block_t **out;
    cca_status_t s;
} xgrow_t;

static bool expand_settled(const xgrow_t *g) { return g->s != CCA_ERROR_OUT_OF_MEMORY || g->ctx->host_failed; }

/* Map: held handles, then new ones. */
static bool expand_grow_mapping(xgrow_t *g)
{
    g->s = expand_try(g->a, g->st, g->pool, g->ctx, g->out);
    return expand_settled(g);
}

static bool expand_grow_retry(xgrow_t *g)
{
    cca_oom_ctx_t again = *g->ctx;
    again.cap_refused = again.device_refused = false;
    g->s = expand_try(g->a, g->st, g->pool, &again, g->out);
    g->ctx->cap_refused |= again.cap_refused;
    g->ctx->device_refused |= again.device_refused;
    g->ctx->host_failed = again.host_failed;
    return expand_settled(g);
}

/* The device or the cap refused: wait for pending frees, unmap every free
 * handle (strays too) and map again; the one attempt counted as a retry. */
static bool expand_grow_after_unmapping(xgrow_t *g)
{
    g->a->stats.num_alloc_retries++;
    _cca_events_sync_pending(g->a);
    _cca_vmm_retry_strays(g->a);
    expand_unmap_free(g->a, NULL, NULL);
    return expand_grow_retry(g);
}

/* Then, if any handle is held, release them all and map once more. */
static bool expand_grow_after_releasing(xgrow_t *g)
{
    if (!g->a->xv->nheld) return false;
    _cca_vmm_release_held(g->a, 0);
    return expand_grow_retry(g);
}

cca_status_t _cca_expand_grow(cca_allocator_t *a, cca_stream_t *st, int pool, cca_oom_ctx_t *ctx, cca_block_t **out)
{
    dev_guard_t dg;
    cudaError_t e = _cca_segment_device_enter(a, &dg);
    if (e != cudaSuccess) {
        _cca_errors_clear();
        return _cca_errors_fail_cuda(e, "cca: cannot make device %d current: %s", a->cfg.device, cudaGetErrorName(e));
    }
    if (a->cfg.release_before_grow &&
        (size_t)a->stats.reserved_bytes[CCA_POOL_ALL].current + _cca_vmm_up(a->xv, ctx->rounded) > a->reserved_high &&
        _cca_segment_trim_plentiful(a))
        expand_unmap_free(a, NULL, st);                    /* reuse what this stream caches before the peak grows */
    xgrow_t g = { a, st, pool, ctx, out, CCA_ERROR_OUT_OF_MEMORY };
    (void)(expand_grow_mapping(&g) || expand_grow_after_unmapping(&g) || expand_grow_after_releasing(&g));
    _cca_segment_device_leave(&dg);
    return g.s;
}

/* ---- checking and destroying ---------------------------------------------- */

/* cca_check's part: every segment's mappings cover it exactly and grant
 * read-write access (cuMemGetAccess); *held_pool gets the bytes held
 * unmapped per pool (strays included) for the reserved tally. */
cca_status_t _cca_expand_check(cca_allocator_t *a, int64_t held_pool[CCA_POOL_COUNT])
{
    struct cca_xvmm *x = a->xv;
    size_t in_segments = 0, mapped = 0;
    int64_t unmapped = 0;
    for (cca_segment_t *s = a->segments; s; s = s->next) {
        if (!s->expandable) continue;
        if (s->addr % x->gran || s->size % x->gran)
            return _cca_errors_fail(CCA_ERROR_CORRUPTED, "cca_check: expandable segment %#lx is not granularity-aligned",
                             (unsigned long)s->addr);
        uintptr_t at = s->addr;
        for (size_t i = _cca_vmm_map_index(x, s->addr); i < x->nmaps && at < s->addr + s->size; i++) {
            unsigned long long flags = 0;
            CUresult r = x->maps[i].addr != at || x->maps[i].stray ? CUDA_SUCCESS : _cca_vmm_get_access(x, at, &flags);
            if (r != CUDA_SUCCESS)                        /* the driver did not answer: no verdict on cca */
                return _cca_errors_fail(CCA_ERROR_CUDA, "cca_check: cuMemGetAccess(%#lx) failed (%d)", (unsigned long)at, (int)r);
            if (x->maps[i].addr != at || x->maps[i].stray || flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
                return _cca_errors_fail(CCA_ERROR_CORRUPTED,
                                 "cca_check: expandable segment %#lx: %#lx is not mapped read-write as a whole handle",
                                 (unsigned long)s->addr, (unsigned long)at);
            at += x->maps[i].size;
        }
        if (at != s->addr + s->size)
            return _cca_errors_fail(CCA_ERROR_CORRUPTED, "cca_check: expandable segment %#lx: mappings cover %zu of %zu bytes",
                             (unsigned long)s->addr, (size_t)(at - s->addr), s->size);
        in_segments += s->size;
    }
    for (size_t i = 0; i < x->nmaps; i++) {
        if (i && x->maps[i - 1].addr + x->maps[i - 1].size > x->maps[i].addr)
            return _cca_errors_fail(CCA_ERROR_CORRUPTED, "cca_check: mappings overlap at %#lx", (unsigned long)x->maps[i].addr);
        if (x->maps[i].stray) {
            held_pool[x->maps[i].pool] += (int64_t)x->maps[i].size;
            unmapped += (int64_t)x->maps[i].size;
        } else {
            mapped += x->maps[i].size;
        }
    }
    if (mapped != in_segments)
        return _cca_errors_fail(CCA_ERROR_CORRUPTED, "cca_check: %zu bytes mapped, %zu in expandable segments", mapped, in_segments);
    for (size_t i = 0; i < x->nheld; i++) {
        held_pool[x->held[i].pool] += (int64_t)x->held[i].size;
        unmapped += (int64_t)x->held[i].size;
    }
    if (unmapped != a->stats.unmapped_bytes.current)
        return _cca_errors_fail(CCA_ERROR_CORRUPTED, "cca_check: unmapped_bytes is %lld, %lld bytes are held unmapped",
                         (long long)a->stats.unmapped_bytes.current, (long long)unmapped);
    return CCA_OK;
}

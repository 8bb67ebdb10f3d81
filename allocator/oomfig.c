/* oomfig.c - the figures of an out-of-memory report, filled by the core
 * (all locked, after release-and-retry): the request and the segment it
 * needed, the device and the cap, what cca holds, and the largest request
 * that would succeed now. stats/ judges them (cca_oom_judge) and formats. */
#include <stdlib.h>
#include "internal.h"

/* cudaMemGetInfo on the allocator's device, leaving the caller's device and
 * the runtime's last-error slot as they were. */
static bool oomfig_device_info(cca_allocator_t *a, size_t *free_b, size_t *total)
{
    dev_guard_t g;
    cudaError_t e = _cca_segment_device_enter(a, &g);
    if (e == cudaSuccess) e = cudaMemGetInfo(free_b, total);
    _cca_segment_device_leave(&g);
    if (e != cudaSuccess) _cca_errors_clear();
    return e == cudaSuccess;
}

/* ---- the largest request that would succeed now --------------------------
 * (Expandable segments: oomfig_x_largest_fit, on expand.c's model.)
 * A request succeeds if best fit finds a block in its stream's pool (with
 * max_split_size's rules) or a new segment fits in what the device and the
 * cap allow after release-and-retry. Success is not monotone in the size
 * (a cached 50 MiB block serves 50 MiB while 512 B needs a new 2 MiB
 * segment), so the answer is the end of the first run of rounded sizes that
 * all succeed: sizes are mapped to rounded block sizes, and the rounded
 * sizes that succeed are a union of intervals. */

typedef struct span { size_t lo, hi; } span_t;       /* rounded sizes [lo, hi] that succeed */

typedef struct fitset { span_t *v; size_t n, cap; bool failed; } fitset_t;

static void oomfig_add_span(fitset_t *f, size_t lo, size_t hi)
{
    if (lo > hi || f->failed) return;
    if (f->n == f->cap) {
        size_t cap = f->cap ? f->cap * 2 : 16;
        span_t *v = realloc(f->v, cap * sizeof *v);
        if (!v) {
            f->failed = true;
            return;
        }
        f->v = v;
        f->cap = cap;
    }
    f->v[f->n++] = (span_t){ lo, hi };
}

static int oomfig_by_lo(const void *x, const void *y)
{
    size_t p = ((const span_t *)x)->lo, q = ((const span_t *)y)->lo;
    return (p > q) - (p < q);
}

typedef struct big_blocks { fitset_t *f; size_t msz; } big_blocks_t;

/* A free large block b >= max_split_size serves rounded sizes r with
 * msz <= r <= b < r + 20 MiB (best fit takes the smallest block >= r, and
 * refuses one 20 MiB or more too big). */
static void oomfig_oversize_span(cca_block_t *b, void *arg)
{
    big_blocks_t *bb = arg;
    if (b->size < bb->msz) return;
    size_t lo = b->size >= CCA_LARGE_BUFFER ? b->size - CCA_LARGE_BUFFER + CCA_MIN_BLOCK : CCA_MIN_BLOCK;
    oomfig_add_span(bb->f, lo > bb->msz ? lo : bb->msz, b->size);
}

typedef struct below { size_t limit, best; } below_t;

static void oomfig_largest_below(cca_block_t *b, void *arg)
{
    below_t *w = arg;
    if (b->size < w->limit && b->size > w->best) w->best = b->size;
}

/* The largest rounded size in [lo, hi] whose segment at `rung` fits in
 * `avail` bytes, or lo - 1 if none. Asks the allocator's own sizing
 * (_cca_segment_size), which grows with the request. */
static size_t oomfig_largest_segment_fit(const cca_allocator_t *a, int pool, size_t lo, size_t hi, cca_rung_t rung,
                                  size_t avail)
{
    if (_cca_segment_size(a, pool, lo, rung) > avail) return lo - 1;
    while (lo < hi) {
        size_t mid = lo + (hi - lo + 1) / 2;
        if (_cca_segment_size(a, pool, mid, rung) <= avail) lo = mid;
        else hi = mid - 1;
    }
    return lo;
}

/* The rounded sizes record r's cached blocks serve: any free small block
 * (no split limit there), large ones with max_split_size's rules. */
static void oomfig_cached_spans(const cca_allocator_t *a, const cca_stream_t *r, fitset_t *f)
{
    const cca_block_t *s = _cca_bins_largest(r->free[CCA_POOL_SMALL]);
    if (s) oomfig_add_span(f, 1, s->size < CCA_SMALL_SIZE ? s->size : CCA_SMALL_SIZE);
    size_t msz = a->cfg.max_split_size;
    if (msz == SIZE_MAX) {
        const cca_block_t *l = _cca_bins_largest(r->free[CCA_POOL_LARGE]);
        if (l) oomfig_add_span(f, CCA_SMALL_SIZE + 1, l->size);
        return;
    }
    below_t w = { msz, 0 };                           /* below msz: a block below msz */
    _cca_bins_visit(r->free[CCA_POOL_LARGE], oomfig_largest_below, &w);
    if (w.best) oomfig_add_span(f, CCA_SMALL_SIZE + 1, w.best);
    big_blocks_t bb = { f, msz };
    _cca_bins_visit(r->free[CCA_POOL_LARGE], oomfig_oversize_span, &bb);
}

/* The rounded sizes that succeed now on stream st (NULL: a stream cca has
 * not seen), given `avail` bytes for a new segment after release-and-retry:
 * new segments, st's cached blocks and, for a thread's own record of a
 * stream, the stream's other records' (alloc.c takes those first). */
static void oomfig_success_spans(cca_allocator_t *a, cca_stream_t *st, size_t avail, fitset_t *f)
{
    bool fallback = a->cfg.release_before_grow || a->cfg.segment_growth_percent;
    size_t top = oomfig_largest_segment_fit(a, CCA_POOL_SMALL, 1, CCA_SMALL_SIZE, CCA_RUNG_NEW, avail);
    if (top) oomfig_add_span(f, 1, top);
    /* large pool, new segments: below MIN_LARGE_ALLOC a standard segment (or
     * the policies' smallest one), from there the request's own */
    size_t lo = CCA_SMALL_SIZE + 1, mid = CCA_MIN_LARGE_ALLOC - 1;
    top = oomfig_largest_segment_fit(a, CCA_POOL_LARGE, lo, mid, CCA_RUNG_NEW, avail);
    if (top < lo && fallback) top = oomfig_largest_segment_fit(a, CCA_POOL_LARGE, lo, mid, CCA_RUNG_LEAST, avail);
    oomfig_add_span(f, lo, top);
    oomfig_add_span(f, CCA_MIN_LARGE_ALLOC,
             oomfig_largest_segment_fit(a, CCA_POOL_LARGE, CCA_MIN_LARGE_ALLOC, CCA_MAX_REQUEST, CCA_RUNG_NEW, avail));
    if (!st) return;
    for (const cca_stream_t *o = a->streams; o; o = o->next)
        if (o == st || (st->shared && o->shared && o->key == st->key && !o->dead)) oomfig_cached_spans(a, o, f);
}

/* The largest caller's size whose rounded size is at most r (rounding is
 * monotone and never rounds down). */
static size_t oomfig_largest_size_rounding_to(const cca_config_t *cfg, size_t r)
{
    size_t lo = 0, hi = r;                            /* round(lo) <= r holds for lo = 0 */
    while (lo < hi) {
        size_t mid = lo + (hi - lo + 1) / 2;
        if (_cca_config_round_size(cfg, mid) <= r) lo = mid;
        else hi = mid - 1;
    }
    return lo;
}

/* Expandable segments: success is a prefix of the sizes in each pool
 * (expand.c's model), so the largest caller's size in [lo, hi] all of whose
 * sizes from lo on succeed is found by bisection; lo - 1 if lo fails. */
static size_t oomfig_x_prefix(const cca_allocator_t *a, const cca_xfit_t *f, size_t lo, size_t hi)
{
    if (!_cca_expand_fit(f, _cca_config_round_size(&a->cfg, lo))) return lo - 1;
    while (lo < hi) {
        size_t mid = lo + (hi - lo + 1) / 2;
        if (_cca_expand_fit(f, _cca_config_round_size(&a->cfg, mid))) lo = mid;
        else hi = mid - 1;
    }
    return lo;
}

/* largest_fit with expandable segments: every small size, then the large
 * pool's prefix (dev_free: the device's free memory now). */
static size_t oomfig_x_largest_fit(cca_allocator_t *a, cca_stream_t *st, size_t dev_free)
{
    cca_xfit_t *f = _cca_expand_fit_new(a, st, dev_free);
    if (!f) return 0;                                 /* no host memory: claim nothing */
    size_t small_top = oomfig_largest_size_rounding_to(&a->cfg, CCA_SMALL_SIZE);
    size_t l = small_top ? oomfig_x_prefix(a, f, 1, small_top) : 0;
    if (l == small_top) l = oomfig_x_prefix(a, f, small_top + 1, CCA_MAX_REQUEST);
    _cca_expand_fit_free(f);
    return l;
}

size_t _cca_oomfig_largest_fit(cca_allocator_t *a, cca_stream_t *st, size_t avail)
{
    fitset_t f = { 0 };
    oomfig_success_spans(a, st, avail, &f);
    if (f.failed) {
        free(f.v);
        return 0;                                     /* no host memory: claim nothing */
    }
    if (f.n) qsort(f.v, f.n, sizeof *f.v, oomfig_by_lo);
    size_t s = 1;                                     /* the smallest size not yet known to succeed */
    for (;;) {
        size_t r = _cca_config_round_size(&a->cfg, s), end = 0;
        bool in = false;
        for (size_t i = 0; i < f.n; i++) {           /* the spans that run on from r, by start */
            if (!in) {
                if (f.v[i].lo <= r && f.v[i].hi >= r) { in = true; end = f.v[i].hi; }
            } else if (f.v[i].lo > end + 1) {
                break;
            } else if (f.v[i].hi > end) {
                end = f.v[i].hi;
            }
        }
        if (!in) break;                               /* s fails */
        size_t next = oomfig_largest_size_rounding_to(&a->cfg, end);
        if (next >= CCA_MAX_REQUEST) { s = CCA_MAX_REQUEST + 1; break; }
        s = next + 1;
    }
    free(f.v);
    return s - 1;
}

/* The largest free block of any stream and pool. */
size_t _cca_oomfig_largest_free(const cca_allocator_t *a)
{
    size_t largest = 0;
    for (const cca_stream_t *st = a->streams; st; st = st->next)
        for (int p = CCA_POOL_SMALL; p <= CCA_POOL_LARGE; p++) {
            const cca_block_t *b = _cca_bins_largest(st->free[p]);
            if (b && b->size > largest) largest = b->size;
        }
    return largest;
}

/* Bytes of fully free segments: release-and-retry would give them back. */
static size_t oomfig_unused_bytes(const cca_allocator_t *a)
{
    size_t n = 0;
    for (const cca_segment_t *s = a->segments; s; s = s->next)
        if (s->first->state == CCA_BLOCK_FREE && !s->first->next) n += s->size;
    return n;
}

/* Free cached bytes (reserved - active: every byte not allocated or pending
 * is free) and the largest free block, as the request found them, before
 * anything is released: O(streams), no walk. */
void _cca_oomfig_capture_cache(cca_allocator_t *a, cca_oom_ctx_t *ctx)
{
    const cca_stats_t *s = &a->stats;
    ctx->reserved_before = (size_t)s->reserved_bytes[CCA_POOL_ALL].current;
    ctx->allocated_before = (size_t)s->allocated_bytes[CCA_POOL_ALL].current;
    ctx->free_cached_before = ctx->reserved_before - (size_t)s->active_bytes[CCA_POOL_ALL].current;
    ctx->largest_free_before = _cca_oomfig_largest_free(a);
    ctx->captured = true;
}

/* free_pages, and whether expandable segments would have served the
 * request (a cache without them): its 2 MiB pages, with the whole pages
 * inside free blocks of any stream unmapped and mapped anew, fit in those
 * pages and what the device (and the cap) still give. */
static void oomfig_pages(const cca_allocator_t *a, cca_oom_report_t *r)
{
    size_t pages = 0;
    for (const cca_segment_t *s = a->segments; s; s = s->next)
        for (const cca_block_t *b = s->first; b; b = b->next) {
            if (b->state != CCA_BLOCK_FREE) continue;
            uintptr_t lo = (b->addr + CCA_ROUND_LARGE - 1) / CCA_ROUND_LARGE * CCA_ROUND_LARGE;
            uintptr_t hi = (b->addr + b->size) / CCA_ROUND_LARGE * CCA_ROUND_LARGE;
            if (hi > lo) pages += hi - lo;
        }
    r->free_pages = pages;
    if (a->xv || (!r->cap_refused && !r->device_refused)) return;   /* it has them, or neither refused */
    size_t room = r->device_free;
    if (r->cap) {
        size_t cap_room = r->cap > r->reserved ? r->cap - r->reserved : 0;
        if (cap_room < room) room = cap_room;
    }
    size_t need = _cca_round_up_2m(r->rounded);
    r->expandable_fits = need <= r->device_total && need <= pages + room;
}

/* The tags holding the most allocated bytes, once anything was ever tagged
 * (untagged blocks count as tag 0). */
static void oomfig_holders(const cca_allocator_t *a, cca_oom_report_t *r)
{
    if (!cca_tag_name(1)) return;                     /* no tag was ever made: the report stays as it was */
    size_t *bytes = calloc(CCA_TAG_MAX, sizeof *bytes);
    if (!bytes) return;
    for (const cca_segment_t *s = a->segments; s; s = s->next)
        for (const cca_block_t *b = s->first; b; b = b->next)
            if (b->state == CCA_BLOCK_ALLOCATED) bytes[b->tag < CCA_TAG_MAX ? b->tag : 0] += b->size;
    for (int k = 0; k < CCA_OOM_HOLDERS; k++) {
        uint32_t best = 0;
        for (uint32_t t = 1; t < CCA_TAG_MAX; t++)
            if (bytes[t] > bytes[best]) best = t;
        if (!bytes[best]) break;
        r->holder_tags[k] = best;
        r->holder_bytes[k] = bytes[best];
        r->n_holders = k + 1;
        bytes[best] = 0;
    }
    free(bytes);
}

/* Free cached bytes in the segments of streams other than st (which no
 * request on st can use), and the live streams caching the most of them
 * (a retired stream's count too, but it is no stream to name: its blocks
 * go back as its live ones are freed). One pass over the segments. */
static void oomfig_stranded(const cca_allocator_t *a, const cca_stream_t *st, cca_oom_report_t *r)
{
    size_t n = 0;
    for (const cca_stream_t *o = a->streams; o; o = o->next) n++;
    size_t *bytes_of = calloc(n ? n : 1, sizeof *bytes_of);
    const cca_stream_t **recs = calloc(n ? n : 1, sizeof *recs);
    if (!bytes_of || !recs) {                         /* no host memory: no stranded figures */
        free(bytes_of);
        free(recs);
        return;
    }
    size_t i = 0;
    for (const cca_stream_t *o = a->streams; o; o = o->next) recs[i++] = o;
    for (const cca_segment_t *s = a->segments; s; s = s->next) {
        if (s->stream == st || (st && s->stream->key == st->key)) continue;   /* st's stream, shards too */
        size_t k = 0;
        while (k < n && recs[k] != s->stream) k++;
        if (k == n) continue;
        for (const cca_block_t *b = s->first; b; b = b->next)
            if (b->state == CCA_BLOCK_FREE) bytes_of[k] += b->size;
    }
    for (size_t k = 0; k < n; k++) {
        size_t bytes = bytes_of[k];
        const cca_stream_t *o = recs[k];
        if (!bytes) continue;
        r->free_cached_other += bytes;
        if (o->dead || atomic_load_explicit(&o->dying, memory_order_relaxed)) continue;
        int j = r->n_stranded < CCA_OOM_HOLDERS ? r->n_stranded++ : CCA_OOM_HOLDERS;
        while (j > 0 && r->stranded_bytes[j - 1] < bytes) {   /* insert, most first */
            if (j < CCA_OOM_HOLDERS) {
                r->stranded_bytes[j] = r->stranded_bytes[j - 1];
                r->stranded_streams[j] = r->stranded_streams[j - 1];
            }
            j--;
        }
        if (j < CCA_OOM_HOLDERS) {
            r->stranded_bytes[j] = bytes;
            r->stranded_streams[j] = o->handle;
        }
    }
    free(bytes_of);
    free(recs);
}

void _cca_oomfig_fill(cca_allocator_t *a, const cca_oom_ctx_t *ctx, cca_oom_report_t *r)
{
    const cca_stats_t *s = &a->stats;
    *r = (cca_oom_report_t){ 0 };
    r->device = a->cfg.device;
    r->pool = ctx->pool;
    r->stream = ctx->stream;
    r->requested = ctx->requested;
    r->rounded = ctx->rounded;
    r->segment_size = ctx->alloc_size;               /* the smallest segment the core tried, or: */
    uint64_t key = _cca_stream_key(a->cfg.device, ctx->stream);
    cca_stream_t *st = NULL;
    for (cca_stream_t *t = a->streams; t; t = t->next)   /* the stream's record, or this thread's own (a shard) */
        if (t->key == key && (!st || t == _cca_stream_cached(a, key))) st = t;
    if (a->xv && ctx->rounded <= CCA_MAX_REQUEST)     /* expandable: what the growth maps at its spot now */
        r->segment_size = _cca_expand_need(a, st, ctx->pool, ctx->rounded);
    bool info = oomfig_device_info(a, &r->device_free, &r->device_total);
    if (!info) r->device_total = a->device_total;
    r->cap = a->cap == SIZE_MAX ? 0 : a->cap;
    r->reserved = (size_t)s->reserved_bytes[CCA_POOL_ALL].current;
    r->allocated = (size_t)s->allocated_bytes[CCA_POOL_ALL].current;
    r->free_cached = r->reserved - (size_t)s->active_bytes[CCA_POOL_ALL].current;
    r->largest_free = _cca_oomfig_largest_free(a);
    r->reserved_before = ctx->reserved_before;
    r->allocated_before = ctx->allocated_before;
    r->free_cached_before = ctx->free_cached_before;
    r->largest_free_before = ctx->largest_free_before;
    size_t used = r->device_total - r->device_free;
    r->external = info && used > r->reserved ? used - r->reserved : 0;
    r->cap_refused = ctx->cap_refused;
    r->device_refused = ctx->device_refused;
    /* what a new segment could take after release-and-retry */
    size_t unused = oomfig_unused_bytes(a), avail = r->device_free + unused;
    if (r->cap) {
        size_t kept = r->reserved - unused;
        size_t room = r->cap > kept ? r->cap - kept : 0;
        if (room < avail) avail = room;
    }
    r->largest_fit = a->xv ? oomfig_x_largest_fit(a, st, r->device_free) : _cca_oomfig_largest_fit(a, st, avail);
    oomfig_pages(a, r);
    oomfig_stranded(a, st, r);
    oomfig_holders(a, r);
}

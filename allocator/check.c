/* check.c - cca_check: walks every segment and block, verifies the layout
 * invariants and that every counter equals what the walk finds. */
#include <stdio.h>
#include "internal.h"

typedef struct tally {
    int64_t v[CCA_POOL_COUNT];
} tally_t;

typedef struct walk {
#define TALLY_(name, doc) tally_t name;
    CCA_STAT_FIELDS(TALLY_)
#undef TALLY_
    tally_t oversize_allocations;
    int64_t oversize_segments;
    size_t free_blocks, tree_blocks, live_blocks, pending_events;
} walk_t;

static void check_add(tally_t *t, int pool, int64_t d)
{
    t->v[CCA_POOL_ALL] += d;
    t->v[pool] += d;
}

#define CHECK(cond, ...) do { if (!(cond)) return _cca_errors_fail(CCA_ERROR_CORRUPTED, "cca_check: " __VA_ARGS__); } while (0)

static cca_status_t check_block(const cca_allocator_t *a, cca_segment_t *s, cca_block_t *b, walk_t *w)
{
    int ps = s->pool;
    CHECK(b->seg == s, "block %#lx points to the wrong segment", (unsigned long)b->addr);
    CHECK(b->size > 0 && b->size % CCA_MIN_BLOCK == 0, "block %#lx has size %zu", (unsigned long)b->addr, b->size);
    CHECK(!b->next || b->next->addr == b->addr + b->size, "blocks at %#lx are not contiguous", (unsigned long)b->addr);
    CHECK(!b->next || b->next->prev == b, "block %#lx: broken neighbour links", (unsigned long)b->addr);
    if (b->state == CCA_BLOCK_FREE) {
        CHECK(!b->next || b->next->state != CCA_BLOCK_FREE, "adjacent free blocks at %#lx not coalesced", (unsigned long)b->addr);
        CHECK(_cca_bins_contains(s->stream->free[s->pool], b), "free block %#lx missing from its free tree", (unsigned long)b->addr);
        CHECK(b->requested == 0, "free block %#lx has requested bytes", (unsigned long)b->addr);
        w->free_blocks++;
        if (_cca_block_counts_split(b)) { check_add(&w->inactive_split, ps, 1); check_add(&w->inactive_split_bytes, ps, (int64_t)b->size); }
        return CCA_OK;
    }
    check_add(&w->active, ps, 1);
    check_add(&w->active_bytes, ps, (int64_t)b->size);
    CHECK(b->requested <= b->size, "block %#lx: requested %zu above its size %zu", (unsigned long)b->addr, b->requested, b->size);
    check_add(&w->requested_bytes, ps, (int64_t)b->requested);   /* a pending block's count until its uses complete */
    if (b->state == CCA_BLOCK_ALLOCATED) {
        CHECK(_cca_ptrmap_get(&s->stream->live, b->addr) == b, "allocated block %#lx missing from its stream's address map", (unsigned long)b->addr);
        check_add(&w->allocation, ps, 1);
        check_add(&w->allocated_bytes, ps, (int64_t)b->size);
        check_add(&w->oversize_allocations, ps, _cca_oversize(a, b->size));
        w->live_blocks++;
    } else {
        CHECK(b->state == CCA_BLOCK_PENDING && b->event_count > 0, "block %#lx in state %d with %d events",
              (unsigned long)b->addr, b->state, b->event_count);
        CHECK(_cca_ptrmap_get(&s->stream->live, b->addr) == NULL, "pending block %#lx still in the address map", (unsigned long)b->addr);
        w->pending_events += (size_t)b->event_count;
    }
    return CCA_OK;
}

static cca_status_t check_segment(const cca_allocator_t *a, cca_segment_t *s, walk_t *w)
{
    CHECK(s->first && s->first->addr == s->addr && !s->first->prev, "segment %#lx: bad first block", (unsigned long)s->addr);
    CHECK(_cca_segmap_find(a, s->addr) == s && _cca_segmap_find(a, s->addr + s->size - 1) == s &&
          _cca_segmap_find(a, s->addr + s->size / 2) == s,
          "segment %#lx: the address map does not name it", (unsigned long)s->addr);
    CHECK(atomic_load(&s->owner) == s->stream && s->stream && s->stream->free[s->pool],
          "segment %#lx: its owner is not its live stream", (unsigned long)s->addr);
    if (!s->expandable) w->oversize_segments += _cca_oversize(a, s->size);
    CHECK(!s->next || s->next->prev == s, "segment list broken at %#lx", (unsigned long)s->addr);
    size_t sum = 0;
    for (cca_block_t *b = s->first; b; b = b->next) {
        cca_status_t st = check_block(a, s, b, w);
        if (st != CCA_OK) return st;
        sum += b->size;
    }
    CHECK(sum == s->size, "segment %#lx: blocks cover %zu of %zu bytes", (unsigned long)s->addr, sum, s->size);
    CHECK(s->last && !s->last->next && s->last->seg == s && s->last->addr + s->last->size == s->addr + s->size,
          "segment %#lx: its last block is not the highest", (unsigned long)s->addr);
    int ps = s->pool;
    check_add(&w->segment, ps, 1);
    check_add(&w->reserved_bytes, ps, (int64_t)s->size);
    return CCA_OK;
}

static void check_count_tree(cca_block_t *b, void *arg) { (void)b; (*(size_t *)arg)++; }

static cca_status_t check_stat(const char *name, const cca_stat_t *st, const tally_t *t, bool acc)
{
    static const char *pools[] = { "all", "small", "large" };
    for (int p = 0; p < CCA_POOL_COUNT; p++) {
        CHECK(st[p].current == t->v[p], "%s[%s].current is %lld, the walk finds %lld", name, pools[p],
              (long long)st[p].current, (long long)t->v[p]);
        CHECK(st[p].peak >= st[p].current, "%s[%s].peak below current", name, pools[p]);
        CHECK(!acc || st[p].allocated - st[p].freed == st[p].current, "%s[%s]: allocated - freed != current", name, pools[p]);
    }
    return CCA_OK;
}

/* One cca_stat_t of the public view: what holds for every such figure. */
static cca_status_t check_kind_stat(const char *name, int pool, const cca_stat_t *f, bool acc)
{
    static const char *pools[] = { "", "[all]", "[small]", "[large]" };
    const char *p = pools[pool + 1];
    CHECK(f->current >= 0 && f->peak >= f->current, "%s%s: current %lld, peak %lld", name, p, (long long)f->current,
          (long long)f->peak);
    CHECK(f->allocated >= 0 && f->freed >= 0, "%s%s: negative totals", name, p);
    CHECK(!acc || f->allocated - f->freed == f->current, "%s%s: allocated - freed != current", name, p);
    return CCA_OK;
}

static cca_status_t check_kind_total(const char *name, int64_t v)
{
    CHECK(v >= 0, "%s is %lld", name, (long long)v);
    return CCA_OK;
}

/* Every field of the public view by its kind (cca.h's list of cca_stats_t). */
#define KIND_CCA_POOLED(name, f) \
    for (int p = 0; p < CCA_POOL_COUNT; p++) \
        if ((st = check_kind_stat(name, p, &(f)[p], acc)) != CCA_OK) return st;
#define KIND_CCA_STAT(name, f) if ((st = check_kind_stat(name, -1, &(f), acc)) != CCA_OK) return st;
#define KIND_CCA_COUNTER(name, f) if ((st = check_kind_total(name, f)) != CCA_OK) return st;
#define KIND_CCA_GAUGE(name, f) KIND_CCA_COUNTER(name, f)
#define KIND_CCA_SETTING(name, f)
#define KIND_CCA_PROFILE(name, f) KIND_CCA_COUNTER(name, f)
static cca_status_t check_kinds(cca_allocator_t *a, bool acc)
{
    cca_stats_t v;
    cca_status_t st;
    _cca_counters_view(a, &v);
#define KIND_(kind, name, doc) KIND_##kind(#name, v.name)
    CCA_STATS_FIELDS(KIND_)
#undef KIND_
    CHECK(v.max_split_size >= -1, "max_split_size is %lld", (long long)v.max_split_size);
#define CHECK_LOCK_(cls)                                                                                           \
    CHECK(v.lock_##cls##_contended <= v.lock_##cls##_acquisitions &&                                             \
              v.lock_##cls##_wait_ns_max <= v.lock_##cls##_wait_ns_total,                                          \
          "the " #cls " locks: %lld waits of %lld acquisitions, longest %lld ns of %lld",                         \
          (long long)v.lock_##cls##_contended, (long long)v.lock_##cls##_acquisitions,                           \
          (long long)v.lock_##cls##_wait_ns_max, (long long)v.lock_##cls##_wait_ns_total);
    CHECK_LOCK_(allocator)
    CHECK_LOCK_(streams)
    CHECK_LOCK_(segments)
    CHECK_LOCK_(headroom)
#undef CHECK_LOCK_
    return CCA_OK;
}

static cca_status_t check_order(const cca_stats_t *s)
{
    for (int p = 0; p < CCA_POOL_COUNT; p++) {
        CHECK(s->requested_bytes[p].current <= s->active_bytes[p].current, "requested above active bytes (pool %d)", p);
        CHECK(s->allocated_bytes[p].current <= s->active_bytes[p].current, "allocated above active bytes (pool %d)", p);
        CHECK(s->active_bytes[p].current <= s->reserved_bytes[p].current, "active above reserved bytes (pool %d)", p);
    }
    return CCA_OK;
}

/* The stream records: the list, the retired husks, each free bin's count. */
static cca_status_t check_streams(cca_allocator_t *a, walk_t *w)
{
    size_t n_streams = 0;
    for (cca_stream_t *s = a->streams; s; s = s->next, n_streams++) {
        CHECK(s->free[CCA_POOL_SMALL] && s->free[CCA_POOL_LARGE] && s->live.slots, "stream record %zu in the list has no bins or map", n_streams);
        CHECK(!s->dead || s->key == CCA_KEY_DEAD, "a retired stream keeps its key");
        CHECK(s->next || a->streams_tail == s, "the stream list's tail is wrong");
        CHECK(s->key == CCA_KEY_DEAD || s->shard || _cca_stream_lookup(a, s->key) == s,
              "stream record %zu is not in the table by its key", n_streams);
        if (s->shard && s->key != CCA_KEY_DEAD) {     /* a shard: its stream's own record lives, in the table */
            const cca_stream_t *base = _cca_stream_lookup(a, s->key);
            CHECK(base && base != s && !base->shard && base->shared && s->shared,
                  "shard %zu has no live stream record of its key", n_streams);
            CHECK(s->handle == base->handle, "shard %zu names another handle than its stream", n_streams);
        }
    }
    CHECK(n_streams == a->n_streams, "%zu stream records in the list, %zu counted", n_streams, a->n_streams);
    const cca_stream_table_t *t = atomic_load_explicit(&a->stab, memory_order_relaxed);
    for (size_t i = 0; t && i <= t->mask; i++) {      /* the table names streams' own records only */
        uint64_t k = atomic_load_explicit(&t->e[i].key, memory_order_relaxed);
        const cca_stream_t *s = k == CCA_STAB_EMPTY || k == CCA_KEY_DEAD ? NULL
                              : atomic_load_explicit(&t->e[i].st, memory_order_relaxed);
        CHECK(!s || !s->shard, "the stream table names a thread's own record (slot %zu)", i);
    }
    for (cca_stream_t *s = a->husks; s; s = s->next)
        CHECK(!s->free[CCA_POOL_SMALL] && !s->live.slots, "a retired record kept its bins or map");
    for (cca_stream_t *s = a->streams; s; s = s->next)
        for (int p = CCA_POOL_SMALL; p <= CCA_POOL_LARGE; p++) {
            size_t before = w->tree_blocks;
            _cca_bins_visit(s->free[p], check_count_tree, &w->tree_blocks);
            CHECK(w->tree_blocks - before == s->free[p]->count, "free-bin count %zu, %zu blocks in the bins",
                  s->free[p]->count, w->tree_blocks - before);
        }
    CHECK(w->tree_blocks == w->free_blocks, "%zu blocks in free trees, %zu free blocks in segments", w->tree_blocks, w->free_blocks);
    return CCA_OK;
}

/* Each stream's address map and counter shards: every allocated block
 * mapped, nothing parked, no lease overdrawn (but by a record changed in
 * this all-locked call, such as the reaping on entry: its leases are dealt
 * on unlocking), the pools adding up, the leases and the shared headroom
 * within each peak. */
static cca_status_t check_stream_counters(cca_allocator_t *a, const walk_t *w)
{
    size_t mapped = 0;
    for (cca_stream_t *s = a->streams; s; s = s->next) {
        mapped += s->live.count;
        CHECK(!s->parked[CCA_POOL_SMALL] && !s->parked[CCA_POOL_LARGE], "a parked block survived the all-locked path");
        for (int k = 0; k < CCA_NSHARD; k++) {
            const cca_ctrs_t *c = &s->ctr;
            for (int p = 0; p < CCA_POOL_COUNT; p++)   /* changed all locked: dealt anew on unlocking */
                CHECK(c->room[p][k] >= 0 || s->fold_dirty, "a stream's figure %d (pool %d) passed its lease", k, p);
            int64_t all = _cca_counters_cur(c, CCA_POOL_ALL, k), sum = _cca_counters_cur(c, CCA_POOL_SMALL, k) + _cca_counters_cur(c, CCA_POOL_LARGE, k);
            CHECK(all == sum, "a stream's figure %d: all pools %lld, small + large %lld", k, (long long)all, (long long)sum);
        }
    }
    CHECK(w->live_blocks == mapped, "%zu allocated blocks, %zu in the address maps", w->live_blocks, mapped);
    int64_t sum_cur[CCA_POOL_COUNT][CCA_NSHARD] = { { 0 } }, sum_inc[CCA_POOL_COUNT][CCA_NSHARD] = { { 0 } };
    for (cca_stream_t *s = a->streams; s; s = s->next)   /* the sums the public view comes from */
        for (int q = CCA_POOL_SMALL; q <= CCA_POOL_LARGE; q++)
            for (int k = 0; k < CCA_NSHARD; k++) {
                CHECK(s->fold_dirty || (s->fold_cur[q][k] == _cca_counters_cur(&s->ctr, q, k) &&
                                        s->fold_inc[q][k] == s->ctr.inc[q][k]),
                      "a stream's figure %d (pool %d) changed since it was summed, unmarked", k, q);
                sum_cur[q][k] += s->fold_cur[q][k];
                sum_inc[q][k] += s->fold_inc[q][k];
            }
    for (int q = CCA_POOL_SMALL; q <= CCA_POOL_LARGE; q++)
        for (int k = 0; k < CCA_NSHARD; k++)
            CHECK(sum_cur[q][k] == a->sum_cur[q][k] && sum_inc[q][k] == a->sum_inc[q][k],
                  "the streams' figure %d (pool %d) sums to %lld/%lld, the allocator holds %lld/%lld", k, q,
                  (long long)sum_cur[q][k], (long long)sum_inc[q][k], (long long)a->sum_cur[q][k],
                  (long long)a->sum_inc[q][k]);
    for (int k = 0; k < CCA_NSHARD; k++) {            /* what keeps the peaks exact */
        const cca_stat_t *f = _cca_counters_shard_stat(a, k);
        for (int p = 0; p < CCA_POOL_COUNT; p++) {
            int64_t leases = a->spare[p][k];
            CHECK(leases >= 0, "the shared headroom of figure %d (pool %d) is %lld", k, p, (long long)leases);
            for (cca_stream_t *s = a->streams; s; s = s->next)
                leases += s->ctr.lease[p][k];
            CHECK(leases <= f[p].peak,
                  "the streams' leases and the headroom of figure %d (pool %d) add up to %lld, above its peak %lld",
                  k, p, (long long)leases, (long long)f[p].peak);
        }
    }
    return CCA_OK;
}

/* The figures against the walk's: every stat, the oversize ones, the order between them. */
static cca_status_t check_figures(cca_allocator_t *a, walk_t *w)
{
    cca_status_t st;
    CHECK(w->pending_events == _cca_events_pending_total(a), "%zu events owed by blocks, %zu outstanding",
          w->pending_events, _cca_events_pending_total(a));
    CHECK(atomic_load_explicit(&a->pending_events, memory_order_relaxed) == _cca_events_pending_total(a),
          "the allocator counts %zu pending events, its streams hold %zu",
          atomic_load_explicit(&a->pending_events, memory_order_relaxed), _cca_events_pending_total(a));
    bool acc = !a->accumulated_reset;
#define CHECK_STAT_(name, doc) if ((st = check_stat(#name, a->stats.name, &w->name, acc)) != CCA_OK) return st;
    CCA_STAT_FIELDS(CHECK_STAT_)
#undef CHECK_STAT_
    if ((st = check_stat("oversize_allocations", a->oversize_pools, &w->oversize_allocations, acc)) != CCA_OK) return st;
    tally_t seg_t = { { w->oversize_segments, 0, w->oversize_segments } };
    const cca_stat_t *os = &a->stats.oversize_segments;
    CHECK(os->current == seg_t.v[0], "oversize_segments.current is %lld, the walk finds %lld",
          (long long)os->current, (long long)seg_t.v[0]);
    if ((st = check_kinds(a, acc)) != CCA_OK) return st;
    return check_order(&a->stats);
}

static cca_status_t check_locked(cca_allocator_t *a)
{
    walk_t w = { 0 };
    cca_status_t st;
    for (cca_segment_t *s = a->segments; s; s = s->next)
        if ((st = check_segment(a, s, &w)) != CCA_OK) return st;
    if ((st = check_streams(a, &w)) != CCA_OK || (st = check_stream_counters(a, &w)) != CCA_OK)
        return st;
    if (a->xv) {                                      /* reserved = segments + handles held unmapped */
        int64_t held[CCA_POOL_COUNT] = { 0 };
        if ((st = _cca_expand_check(a, held)) != CCA_OK) return st;
        for (int p = CCA_POOL_SMALL; p <= CCA_POOL_LARGE; p++) check_add(&w.reserved_bytes, p, held[p]);
    } else {
        CHECK(a->stats.unmapped_bytes.current == 0, "unmapped bytes without expandable segments");
    }
    return check_figures(a, &w);
}

cca_status_t cca_check(cca_allocator_t *a)
{
    if (!a) return _cca_errors_fail(CCA_ERROR_INVALID_ARGUMENT, "cca_check: allocator is NULL");
    _cca_alloc_lock_all(a);
    cca_status_t s = check_locked(a);
    _cca_alloc_unlock_all(a, NULL);
    return s;
}

/* counters.h - the counters unit (counters.c): transitions' deltas
 * applied to a stream's figures within its leases, on the hot path inline;
 * the all-locked public view, leases and peaks in counters.c. */
#ifndef CCA_COUNTERS_H
#define CCA_COUNTERS_H

#include "types.h"

/* counters.c: the counters unit - the per-stream figures, their leases
 * and peaks, and the all-locked public view. */
void         _cca_counters_locked(cca_allocator_t *a, cca_stream_t *st, int pool, const cca_delta_t *d);
bool         _cca_counters_admit_slow(cca_allocator_t *a, cca_stream_t *st, int pool, const cca_delta_t *fall,
                                 const cca_delta_t *d);
/* Off the all-locked path, st locked, after a free in `pool`: its room in
 * that pool and in all pools to the shared headroom (the other pool's
 * stays until a sweep or that pool's own free). */
__attribute__((cold, noinline)) void _cca_counters_give(cca_allocator_t *a, cca_stream_t *st, int pool);
static inline void _cca_counters_give_if_wanted(cca_allocator_t *a, cca_stream_t *st, int pool)
{
    if (__builtin_expect(atomic_load_explicit(&a->spare_wanted, memory_order_relaxed), 0)) _cca_counters_give(a, st, pool);
}
void         _cca_counters_refresh(cca_allocator_t *a);
void         _cca_counters_forget(cca_allocator_t *a, cca_stream_t *st);   /* st leaves the list */
void         _cca_counters_rebalance(cca_allocator_t *a, cca_stream_t *trigger);
void         _cca_counters_reset_accumulated(cca_allocator_t *a);
void         _cca_counters_reset_peaks(cca_allocator_t *a);
void         _cca_counters_view(cca_allocator_t *a, cca_stats_t *out);   /* all locked */
cca_stat_t  *_cca_counters_shard_stat(cca_allocator_t *a, int k);       /* the public view of shard figure k, by pool */
/* Stream figure k's current value in public pool p. */
static inline int64_t _cca_counters_cur(const cca_ctrs_t *c, int p, int k) { return c->lease[p][k] - c->room[p][k]; }

static inline void _cca_stat_update(cca_stat_t *s, int64_t d)
{
    s->current += d;
    if (d > 0) {
        s->allocated += d;
        if (s->current > s->peak) s->peak = s->current;
    } else {
        s->freed -= d;
    }
}

/* Adds d to one pool's stat and to the all-pools figure. */
static inline void _cca_stat_add(cca_stat_t *s, int pool, int64_t d)
{
    _cca_stat_update(&s[CCA_POOL_ALL], d);
    _cca_stat_update(&s[pool], d);
}

/* 1 if a block of `size` bytes counts as an oversize allocation (PyTorch:
 * at least max_split_size), else 0. */
static inline int64_t _cca_oversize(const cca_allocator_t *a, size_t size)
{
    return size >= a->cfg.max_split_size;
}

/* Applies transition delta d (pool `pool`) to stream st's figures: the
 * counters unit's one entry. All locked, the public view and its peaks
 * follow. On the hot path (st locked) the change must stay within st's
 * leases: false if it cannot be made to (d not applied - a `fall` given to
 * _cca_counters_apply2 stays applied, and leases may have moved between
 * streams; take the all-locked path). Straight-line on the hot path: per figure two rooms
 * (the pool's, all pools'), and for the figures the transition may raise
 * (d->rise, a constant once inlined) the increase total and one sign test
 * for all. */
static inline bool _cca_counters_apply2(cca_allocator_t *a, cca_stream_t *st, int pool, const cca_delta_t *fall,
                                   const cca_delta_t *d);

static inline bool _cca_counters_apply(cca_allocator_t *a, cca_stream_t *st, int pool, const cca_delta_t *d)
{
    return _cca_counters_apply2(a, st, pool, NULL, d);
}

/* Applies a transition that only lowers figures (`fall`, rise 0; NULL:
 * none) and then d, in one step: a free and a take at once (park.c). The
 * increase totals grow by d's rises alone. */
static inline bool _cca_counters_apply2(cca_allocator_t *a, cca_stream_t *st, int pool, const cca_delta_t *fall,
                                   const cca_delta_t *d)
{
    if (__builtin_expect(a->all_locked, 0)) {
        if (fall) _cca_counters_locked(a, st, pool, fall);
        _cca_counters_locked(a, st, pool, d);
        return true;
    }
    int64_t *restrict all = st->ctr.room[CCA_POOL_ALL], *restrict room = st->ctr.room[pool];
    int64_t *restrict inc = st->ctr.inc[pool];
    int64_t neg = 0;
    for (int k = 0; k < CCA_NSHARD; k++) {
        int64_t x = d->v[k], f = fall ? fall->v[k] : 0, r = all[k] - x - f, q = room[k] - x - f;
        all[k] = r;
        room[k] = q;
        if (d->rise & (1u << k)) {                    /* only a rise can pass a lease or add to inc */
            neg |= r | q;
            __asm__("" : "+r"(neg));                  /* as it goes: no spills for a vectorized reduction */
        }
        if (d->rise & (1u << k)) inc[k] += d->pos & (1u << k) || x > 0 ? x : 0;
    }
    return __builtin_expect(neg >= 0, 1) || _cca_counters_admit_slow(a, st, pool, fall, d);
}

/* A change of the inactive-split figures alone (parking a block, park.c,
 * hot path only): dc blocks and db bytes in both rooms, the increase
 * totals by what rises. False, nothing changed, if that passes a lease:
 * the caller takes the general way. (Rooms are never below zero off the
 * all-locked path, so a falling figure cannot fail the test.) */
static inline bool _cca_counters_split(cca_stream_t *st, int pool, int64_t dc, int64_t db)
{
    int64_t *restrict all = st->ctr.room[CCA_POOL_ALL], *restrict room = st->ctr.room[pool];
    int64_t *restrict inc = st->ctr.inc[pool];
    int64_t r0 = all[CCA_K_inactive_split] - dc, r1 = room[CCA_K_inactive_split] - dc;
    int64_t r2 = all[CCA_K_inactive_split_bytes] - db, r3 = room[CCA_K_inactive_split_bytes] - db;
    if (__builtin_expect((r0 | r1 | r2 | r3) < 0, 0)) return false;
    all[CCA_K_inactive_split] = r0;
    room[CCA_K_inactive_split] = r1;
    all[CCA_K_inactive_split_bytes] = r2;
    room[CCA_K_inactive_split_bytes] = r3;
    inc[CCA_K_inactive_split] += dc > 0 ? dc : 0;
    inc[CCA_K_inactive_split_bytes] += db > 0 ? db : 0;
    return true;
}

/* Parking's quick way back (park.c, hot path only): a parked block of
 * `size` bytes whose falling figures were never applied is taken again as
 * it is. A free and a take in one step: the current figures move only by
 * the requested bytes and by undoing the split change its park applied
 * (split_count, split_bytes); the increase totals grow as the take's would.
 * False, nothing changed, if that passes a lease: the caller takes the
 * general way. */
static inline bool _cca_counters_retake(const cca_allocator_t *a, cca_stream_t *st, int pool, size_t size,
                                   size_t requested, size_t old_requested, int64_t split_count, int64_t split_bytes)
{
    int64_t *restrict all = st->ctr.room[CCA_POOL_ALL], *restrict room = st->ctr.room[pool];
    int64_t *restrict inc = st->ctr.inc[pool];
    int64_t dr = (int64_t)requested - (int64_t)old_requested;
    int64_t r0 = all[CCA_K_requested_bytes] - dr, r1 = room[CCA_K_requested_bytes] - dr;
    int64_t r2 = all[CCA_K_inactive_split] + split_count, r3 = room[CCA_K_inactive_split] + split_count;
    int64_t r4 = all[CCA_K_inactive_split_bytes] + split_bytes, r5 = room[CCA_K_inactive_split_bytes] + split_bytes;
    if (__builtin_expect((r0 | r1 | r2 | r3 | r4 | r5) < 0, 0)) return false;
    all[CCA_K_requested_bytes] = r0;
    room[CCA_K_requested_bytes] = r1;
    all[CCA_K_inactive_split] = r2;
    room[CCA_K_inactive_split] = r3;
    all[CCA_K_inactive_split_bytes] = r4;
    room[CCA_K_inactive_split_bytes] = r5;
    inc[CCA_K_allocation] += 1;
    inc[CCA_K_active] += 1;
    inc[CCA_K_allocated_bytes] += (int64_t)size;
    inc[CCA_K_active_bytes] += (int64_t)size;
    inc[CCA_K_requested_bytes] += (int64_t)requested;
    inc[CCA_K_oversize_allocations] += _cca_oversize(a, size);
    inc[CCA_K_inactive_split] += split_count < 0 ? -split_count : 0;
    inc[CCA_K_inactive_split_bytes] += split_bytes < 0 ? -split_bytes : 0;
    return true;
}

#endif /* CCA_COUNTERS_H */

/* counters.c - the counters unit: every change to the torch-named figures
 * kept per stream (allocation, active, inactive_split and their bytes,
 * requested_bytes, oversize_allocations) comes here as a transition's
 * delta (blocks.h: _cca_take_delta and the others) through
 * _cca_counters_apply; block code never counts.
 *
 * Each stream counts its own figures under its own lock: room = lease -
 * current per public pool (all, small, large), and the total increases per
 * pool (freed is derived: increases - current; the all-pools current and
 * increases are small + large). The all-locked path sums them into the
 * public view (refresh: only the records someone locked since, or changed
 * all locked, are summed again), follows every change there with peaks
 * (_cca_counters_locked), and afterwards deals the leases per pool: how
 * far each stream may raise each figure alone (rebalance). A pool's leases
 * and the shared headroom (lease no stream holds) add up to at most its
 * peak, so no sum can pass a peak without the all-locked path seeing it:
 * peaks stay exact with no shared write on the hot path. A hot-path change
 * that would pass a lease takes what it lacks from the headroom, else the
 * other streams' room swept into it, else raises the peaks with every
 * other stream held (_cca_counters_admit_slow). The headroom keeps that O(1) in the number
 * of streams: once a stream found it short while another stream held room
 * it did not use, frees give their stream's room back to it (and its
 * parked blocks' deferred figures first), until a take finds it plentiful
 * again or the leases are dealt anew.
 *
 * (Measured and dropped, in instructions per one-size pingpong pair / mixed
 * step: current per pool checked against the leases, as before this unit,
 * 600 / 1,154 against 586 / 1,141 with rooms; and no all-pools lease,
 * small + large leases kept within the all-pools peak instead - one row
 * less per change, but a workload near its peak alternating pools then
 * takes the slow path on most calls, 1,631 per mixed step.) */
#include <stddef.h>
#include "internal.h"

static const size_t shard_offset[CCA_NSHARD] = {
#define SHARD_OFFSET_(name) offsetof(cca_stats_t, name),
    CCA_SHARD_STATS(SHARD_OFFSET_)
#undef SHARD_OFFSET_
};

/* oversize_allocations is one figure in the public view (as PyTorch's);
 * its per-pool form lives beside it, so that leases work alike. */
cca_stat_t *_cca_counters_shard_stat(cca_allocator_t *a, int k)
{
    if (k == CCA_K_oversize_allocations) return a->oversize_pools;
    return (cca_stat_t *)((char *)&a->stats + shard_offset[k]);
}

/* Adds x to every room and increase total that d changes, once per figure. */
static inline void counters_ctr_add(cca_ctrs_t *c, int pool, const cca_delta_t *d, int64_t sign)
{
    for (int k = 0; k < CCA_NSHARD; k++) {
        int64_t x = sign * d->v[k];
        c->room[CCA_POOL_ALL][k] -= x;
        c->room[pool][k] -= x;
        if (d->v[k] > 0) c->inc[pool][k] += x;
    }
}

/* All locked: the stream's figures and the public view with its peaks. No
 * lease applies; the leases are dealt anew on unlocking. */
void _cca_counters_locked(cca_allocator_t *a, cca_stream_t *st, int pool, const cca_delta_t *d)
{
    counters_ctr_add(&st->ctr, pool, d, 1);
    st->fold_dirty = true;
    for (int k = 0; k < CCA_NSHARD; k++) {
        if (d->v[k]) _cca_stat_add(_cca_counters_shard_stat(a, k), pool, d->v[k]);
    }
    a->counters_moved = true;
}

/* Brings st's part of the allocator's sums up to date. */
static void counters_fold(cca_allocator_t *a, cca_stream_t *st)
{
    for (int q = CCA_POOL_SMALL; q <= CCA_POOL_LARGE; q++)
        for (int k = 0; k < CCA_NSHARD; k++) {
            int64_t c = _cca_counters_cur(&st->ctr, q, k), i = st->ctr.inc[q][k];
            a->sum_cur[q][k] += c - st->fold_cur[q][k];
            a->sum_inc[q][k] += i - st->fold_inc[q][k];
            st->fold_cur[q][k] = c;
            st->fold_inc[q][k] = i;
        }
    st->fold_dirty = false;
}

/* Entering the all-locked path (every stream just locked): the public view
 * from the streams' figures. Only records whose lock someone took since
 * the last time (the all-locked path's own take aside), or changed all
 * locked, are summed again: a ten-stream replay enters it on most calls. */
void _cca_counters_refresh(cca_allocator_t *a)
{
    for (cca_stream_t *st = a->streams; st; st = st->next) {
        uint64_t acq = st->lock.fig.acquisitions;
        if (st->fold_dirty || acq != st->fold_acq + 1) {
            counters_fold(a, st);
            st->fold_touched = true;
        }
        st->fold_acq = acq;
    }
    int64_t cur[CCA_POOL_COUNT][CCA_NSHARD], inc[CCA_POOL_COUNT][CCA_NSHARD];
    for (int q = CCA_POOL_SMALL; q <= CCA_POOL_LARGE; q++)
        for (int k = 0; k < CCA_NSHARD; k++) {
            cur[q][k] = a->sum_cur[q][k];
            inc[q][k] = a->sum_inc[q][k] + a->retired_inc[q][k];   /* what retired streams had counted too */
        }
    for (int k = 0; k < CCA_NSHARD; k++) {             /* the all pool: the sum of small and large */
        cur[CCA_POOL_ALL][k] = cur[CCA_POOL_SMALL][k] + cur[CCA_POOL_LARGE][k];
        inc[CCA_POOL_ALL][k] = inc[CCA_POOL_SMALL][k] + inc[CCA_POOL_LARGE][k];
    }
    for (int k = 0; k < CCA_NSHARD; k++) {
        cca_stat_t *f = _cca_counters_shard_stat(a, k);
        for (int p = 0; p < CCA_POOL_COUNT; p++) {
            f[p].current = cur[p][k];
            f[p].allocated = inc[p][k] - a->inc_base[k][p];
            f[p].freed = inc[p][k] - cur[p][k] - a->freed_base[k][p];
        }
    }
}

/* A record leaves the list (all locked; stream.c): its part of the sums goes. */
void _cca_counters_forget(cca_allocator_t *a, cca_stream_t *st)
{
    for (int q = CCA_POOL_SMALL; q <= CCA_POOL_LARGE; q++)
        for (int k = 0; k < CCA_NSHARD; k++) {
            a->sum_cur[q][k] -= st->fold_cur[q][k];
            a->sum_inc[q][k] -= st->fold_inc[q][k];
            st->fold_cur[q][k] = st->fold_inc[q][k] = 0;
        }
    if (a->last_trigger == st) a->last_trigger = NULL;
}

/* What each kind of cca_stats_t's list (cca.h) does on a reset. */
#define RESET_ACC_CCA_POOLED(f) for (int p = 0; p < CCA_POOL_COUNT; p++) RESET_ACC_CCA_STAT((f)[p])
#define RESET_ACC_CCA_STAT(f) ((f).allocated = (f).freed = 0);
#define RESET_ACC_CCA_COUNTER(f) ((f) = 0);
#define RESET_ACC_CCA_GAUGE(f)
#define RESET_ACC_CCA_SETTING(f)
#define RESET_ACC_CCA_PROFILE(f)                      /* kept in the locks and a->lock_all_count: counters_reset_profile */
#define RESET_PEAK_CCA_POOLED(f) for (int p = 0; p < CCA_POOL_COUNT; p++) RESET_PEAK_CCA_STAT((f)[p])
#define RESET_PEAK_CCA_STAT(f) ((f).peak = (f).current);
#define RESET_PEAK_CCA_COUNTER(f)
#define RESET_PEAK_CCA_GAUGE(f)
#define RESET_PEAK_CCA_SETTING(f)
#define RESET_PEAK_CCA_PROFILE(f)

/* The locks' figures of a stream class: the live records' (held by the
 * caller) and the retired ones' (a stale reader may hold one a moment:
 * taken, so the sum is read while no holder writes). */
static void counters_stream_locks(cca_allocator_t *a, cca_lock_figures_t *f, bool reset)
{
    for (cca_stream_t *st = a->streams; st; st = st->next) {
        if (reset) _cca_lock_figures_reset(&st->lock);
        else _cca_lock_figures_add(f, &st->lock);
    }
    for (cca_stream_t *st = a->husks; st; st = st->next) {
        _cca_lock(&st->lock);
        if (reset) _cca_lock_figures_reset(&st->lock);
        else _cca_lock_figures_add(f, &st->lock);
        _cca_unlock(&st->lock);
    }
}

/* The PROFILE figures from 0 again: the all-locked entries and the locks. */
static void counters_reset_profile(cca_allocator_t *a)
{
    a->lock_all_base = a->lock_all_count;
    _cca_lock_figures_reset(&a->lock);
    _cca_lock_figures_reset(&a->seg_lock);
    _cca_lock_figures_reset(&a->spare_lock);
    counters_stream_locks(a, NULL, true);
}

void _cca_counters_reset_accumulated(cca_allocator_t *a)
{
    for (int k = 0; k < CCA_NSHARD; k++) {
        cca_stat_t *f = _cca_counters_shard_stat(a, k);
        for (int p = 0; p < CCA_POOL_COUNT; p++) {
            a->inc_base[k][p] += f[p].allocated;
            a->freed_base[k][p] += f[p].freed;
        }
    }
#define RESET_ACC_(kind, name, doc) RESET_ACC_##kind(a->stats.name)
    CCA_STATS_FIELDS(RESET_ACC_)
#undef RESET_ACC_
    RESET_ACC_CCA_POOLED(a->oversize_pools);                /* the per-pool form of oversize_allocations */
    counters_reset_profile(a);
}

void _cca_counters_reset_peaks(cca_allocator_t *a)
{
#define RESET_PEAK_(kind, name, doc) RESET_PEAK_##kind(a->stats.name)
    CCA_STATS_FIELDS(RESET_PEAK_)
#undef RESET_PEAK_
    RESET_PEAK_CCA_POOLED(a->oversize_pools);
    a->counters_moved = true;                  /* the leases must shrink to the new peaks */
}

/* The public view (all locked): the figures kept by pool, and the ones
 * derived or kept elsewhere. */
void _cca_counters_view(cca_allocator_t *a, cca_stats_t *out)
{
    *out = a->stats;
    out->oversize_allocations = a->oversize_pools[CCA_POOL_ALL];
    out->max_split_size = a->cfg.max_split_size == SIZE_MAX ? -1 : (int64_t)a->cfg.max_split_size;
    int64_t host = a->host_bytes;
    for (const cca_stream_t *st = a->streams; st; st = st->next) host += _cca_stream_host_bytes(st);
    out->host_bytes = host;
    out->num_all_locked = (int64_t)(a->lock_all_count - a->lock_all_base);
    cca_lock_figures_t al = { 0 }, sl = { 0 }, gl = { 0 }, hl = { 0 };
    _cca_lock_figures_add(&al, &a->lock);
    _cca_lock_figures_add(&gl, &a->seg_lock);           /* its holders hold a stream's lock: none now */
    _cca_lock_figures_add(&hl, &a->spare_lock);         /* idem */
    counters_stream_locks(a, &sl, false);
#define COUNTERS_LOCK_(cls, f) \
    out->lock_##cls##_acquisitions = (int64_t)(f).acquisitions, out->lock_##cls##_contended = (int64_t)(f).contended, \
    out->lock_##cls##_wait_ns_total = (int64_t)(f).wait_ns_total, out->lock_##cls##_wait_ns_max = (int64_t)(f).wait_ns_max
    COUNTERS_LOCK_(allocator, al);
    COUNTERS_LOCK_(streams, sl);
    COUNTERS_LOCK_(segments, gl);
    COUNTERS_LOCK_(headroom, hl);
#undef COUNTERS_LOCK_
}

/* Sets stream c's lease of figure k in pool p; its room follows. */
static inline void counters_set_lease(cca_ctrs_t *c, int p, int k, int64_t lease)
{
    c->room[p][k] += lease - c->lease[p][k];
    c->lease[p][k] = lease;
}

/* Deals the leases anew (all locked): each stream its current figure, the
 * slack under each peak to the headroom - half of it to the stream just
 * served (all of it when that is the only stream), which is likely to
 * rise again first. Only streams whose rooms changed since the last deal
 * are visited: this runs at the end of every all-locked call that changed
 * a figure. (Dealing the slack by each stream's past demand, as before the
 * headroom, cost half of all instructions of a ten-stream replay:
 * docs/history.md.) */
void _cca_counters_rebalance(cca_allocator_t *a, cca_stream_t *trigger)
{
    if (!a->counters_moved) return;        /* leases and headroom still add up to at most the peaks */
    a->counters_moved = false;
    atomic_store_explicit(&a->spare_wanted, false, memory_order_relaxed);
    for (cca_stream_t *st = a->streams; st; st = st->next) {
        bool dealt = !st->fold_dirty && !st->fold_touched && st != a->last_trigger;   /* room 0 since the last deal */
        if (st->fold_dirty) counters_fold(a, st);
        if (dealt) continue;
        st->fold_touched = false;
        int64_t *restrict r = &st->ctr.room[0][0], *restrict l = &st->ctr.lease[0][0];
        for (int i = 0; i < CCA_POOL_COUNT * CCA_NSHARD; i++) {
            l[i] -= r[i];                  /* the lease is the current figure */
            r[i] = 0;
        }
    }
    bool alone = trigger && a->streams == trigger && !trigger->next;
    for (int k = 0; k < CCA_NSHARD; k++) {
        const cca_stat_t *f = _cca_counters_shard_stat(a, k);
        for (int p = 0; p < CCA_POOL_COUNT; p++) {
            int64_t sum = p == CCA_POOL_ALL ? a->sum_cur[CCA_POOL_SMALL][k] + a->sum_cur[CCA_POOL_LARGE][k]
                                            : a->sum_cur[p][k];
            int64_t slack = f[p].peak - sum;
            if (slack < 0) slack = 0;
            int64_t give = !trigger ? 0 : alone ? slack : slack - slack / 2;
            if (give) counters_set_lease(&trigger->ctr, p, k, trigger->ctr.lease[p][k] + give);
            a->spare[p][k] = slack - give;
        }
    }
    a->last_trigger = trigger;
}

/* Whether to wait for busy stream o's holder (st held): not for an
 * all-locked caller (it waits for st's lock), nor for a stream wanting
 * st's lock in turn, of the two the later in memory giving way (it
 * returns to the all-locked path, letting st's lock go). Waits at most
 * CCA_ADMIT_SPINS pauses in all: a holder on the hot path lets go in well
 * under a microsecond. (The allocator lock held alone - a config read, a
 * history walk - also stops the wait: a needless yield, never a wrong one.) */
#define CCA_ADMIT_SPINS 1024
static bool counters_wait_for(cca_allocator_t *a, cca_stream_t *st, cca_stream_t *o, unsigned *spins)
{
    while (*spins < CCA_ADMIT_SPINS) {
        if (atomic_load_explicit(&a->lock.state, memory_order_relaxed) != CCA_LOCK_FREE) return false;
        if (atomic_load_explicit(&o->admitting, memory_order_relaxed) && (uintptr_t)o < (uintptr_t)st) return false;
        if (atomic_load_explicit(&o->lock.state, memory_order_relaxed) == CCA_LOCK_FREE) return true;
        _cca_cpu_relax();
        ++*spins;
    }
    return false;
}

/* On the hot path, st (locked) passed a lease the headroom could not
 * cover: every other stream's room (their parked blocks' deferred figures
 * first) into the headroom, waiting briefly for a busy one (counters_wait_for),
 * never blocking. Moving lease
 * keeps every sum, so peaks stay exact. If any room lay idle there, frees
 * give theirs back from now on. */
static void counters_sweep(cca_allocator_t *a, cca_stream_t *st)
{
    unsigned spins = 0;
    for (cca_stream_t *o = a->streams; o; o = o->next) {
        if (o == st) continue;
        bool got = _cca_trylock(&o->lock);
        while (!got && counters_wait_for(a, st, o, &spins)) got = _cca_trylock(&o->lock);
        if (!got) continue;
        o->outside_acq = o->lock.fig.acquisitions;
        _cca_park_vacate(a, o, CCA_POOL_SMALL);
        _cca_park_vacate(a, o, CCA_POOL_LARGE);
        int64_t *restrict r = &o->ctr.room[0][0], *restrict l = &o->ctr.lease[0][0], *restrict sp = &a->spare[0][0];
        int64_t any = 0;
        _cca_lock(&a->spare_lock);
        for (int i = 0; i < CCA_POOL_COUNT * CCA_NSHARD; i++) {
            any |= r[i];
            sp[i] += r[i];
            l[i] -= r[i];
            r[i] = 0;
        }
        _cca_unlock(&a->spare_lock);
        _cca_unlock(&o->lock);
        if (any) atomic_store_explicit(&a->spare_wanted, true, memory_order_relaxed);
    }
}

/* Every other stream's lock taken without waiting: NULL, or the one that
 * was busy (none is then held). */
static cca_stream_t *counters_take_all_others(cca_allocator_t *a, cca_stream_t *st)
{
    for (cca_stream_t *o = a->streams; o; o = o->next) {
        if (o == st || _cca_trylock(&o->lock)) continue;
        for (cca_stream_t *u = a->streams; u != o; u = u->next)
            if (u != st) _cca_unlock(&u->lock);
        return o;
    }
    return NULL;
}

static void counters_release_others(cca_allocator_t *a, cca_stream_t *st)
{
    for (cca_stream_t *o = a->streams; o; o = o->next)
        if (o != st) {
            o->outside_acq = o->lock.fig.acquisitions;
            _cca_unlock(&o->lock);
        }
}

/* The others held: raise the peaks d would pass to the sums the change
 * gives, and hand st all the room under them (the others keep none). */
static void counters_raise_peaks(cca_allocator_t *a, cca_stream_t *st, int pool, const cca_delta_t *d)
{
    for (int k = 0; k < CCA_NSHARD; k++) {
        if (d->v[k] <= 0) continue;
        cca_stat_t *f = _cca_counters_shard_stat(a, k);
        const int ps[2] = { CCA_POOL_ALL, pool };
        for (int i = 0; i < 2; i++) {
            int p = ps[i];
            if (st->ctr.room[p][k] >= d->v[k]) continue;   /* room enough: this peak stays */
            int64_t sum = 0;
            for (cca_stream_t *o = a->streams; o; o = o->next) sum += _cca_counters_cur(&o->ctr, p, k);
            if (sum + d->v[k] > f[p].peak) f[p].peak = sum + d->v[k];
            for (cca_stream_t *o = a->streams; o; o = o->next) {
                if (o == st) continue;
                if (o->ctr.room[p][k] > 0)            /* room lay idle there: frees give theirs back */
                    atomic_store_explicit(&a->spare_wanted, true, memory_order_relaxed);
                counters_set_lease(&o->ctr, p, k, _cca_counters_cur(&o->ctr, p, k));
            }
            a->spare[p][k] = 0;                       /* every stream held: no one is in the headroom */
            counters_set_lease(&st->ctr, p, k, _cca_counters_cur(&st->ctr, p, k) + f[p].peak - sum);
        }
    }
}

/* A parked block counts as allocated until vacated (park.c): before
 * figures go into a peak, the others held, every stream's are made exact.
 * (A block d itself takes was vacated first.) */
static void counters_vacate_parked_all(cca_allocator_t *a)
{
    for (cca_stream_t *o = a->streams; o; o = o->next)
        for (int p = CCA_POOL_SMALL; p <= CCA_POOL_LARGE; p++) _cca_park_vacate(a, o, p);
}

/* The shared headroom (st locked, d applied, a room below zero): what st
 * lacks in every room, or nothing if the headroom is short of any. Only
 * that while the headroom is lean (with peaks as tight as one block's,
 * what is left may be all another stream needs); while it is plentiful -
 * as many bytes again left as st lacks - also one stream's share of the
 * rest, so that st does not come back at once (instructions per mixed step
 * at 2 / 8 / 64 streams: 1,094 / 1,388 / 2,254 against 1,195 / 1,489 /
 * 2,156 taking only what is lacking; half the rest: 1,101 / 1,805 / 3,914),
 * and the giving back ends: the frees' room is not needed there. The take
 * that ends the giving back takes only what it lacks: with a share besides,
 * two streams taking turns at one block each never settled - the other
 * came up short, swept the first and started the giving back again, and
 * two threads on their own streams ran at 0.2x one thread. (Bytes alone
 * tell plenty: this runs on every operation while streams pass room
 * around.) */
static inline int64_t counters_lack(int64_t room) { return room < 0 ? -room : 0; }

static bool counters_take_spare(cca_allocator_t *a, cca_stream_t *st, int pool)
{
    int64_t *ra = st->ctr.room[CCA_POOL_ALL], *rp = st->ctr.room[pool];
    int64_t *la = st->ctr.lease[CCA_POOL_ALL], *lp = st->ctr.lease[pool];
    int64_t *sa = a->spare[CCA_POOL_ALL], *sp = a->spare[pool];
    int64_t shortf = 0;
    _cca_lock(&a->spare_lock);
    for (int k = 0; k < CCA_NSHARD; k++) shortf |= (sa[k] - counters_lack(ra[k])) | (sp[k] - counters_lack(rp[k]));
    if (shortf < 0) {
        _cca_unlock(&a->spare_lock);
        return false;
    }
    const int B = CCA_K_allocated_bytes;              /* plentiful: as many bytes again left */
    bool plenty = sa[B] >= 2 * counters_lack(ra[B]) && sp[B] >= 2 * counters_lack(rp[B]);
    bool wanted = atomic_load_explicit(&a->spare_wanted, memory_order_relaxed);
    if (!plenty || wanted) {                        /* exactly what it lacks */
        for (int k = 0; k < CCA_NSHARD; k++) {
            int64_t n = counters_lack(ra[k]);
            sa[k] -= n, la[k] += n, ra[k] += n;
            n = counters_lack(rp[k]);
            sp[k] -= n, lp[k] += n, rp[k] += n;
        }
    } else {                                          /* and a stream's share of what is left besides */
        int64_t share = (int64_t)a->n_streams;
        for (int k = 0; k < CCA_NSHARD; k++) {
            int64_t n = counters_lack(ra[k]);
            n += (sa[k] - n) / share;
            sa[k] -= n, la[k] += n, ra[k] += n;
            n = counters_lack(rp[k]);
            n += (sp[k] - n) / share;
            sp[k] -= n, lp[k] += n, rp[k] += n;
        }
    }
    _cca_unlock(&a->spare_lock);
    if (plenty && wanted) atomic_store_explicit(&a->spare_wanted, false, memory_order_relaxed);
    return true;
}

void _cca_counters_give(cca_allocator_t *a, cca_stream_t *st, int pool)
{
    _cca_park_vacate(a, st, pool);                    /* its deferred figures are room too */
    int64_t *restrict ra = st->ctr.room[CCA_POOL_ALL], *restrict la = st->ctr.lease[CCA_POOL_ALL];
    int64_t *restrict rp = st->ctr.room[pool], *restrict lp = st->ctr.lease[pool];
    int64_t *restrict sa = a->spare[CCA_POOL_ALL], *restrict sp = a->spare[pool];
    _cca_lock(&a->spare_lock);
    for (int k = 0; k < CCA_NSHARD; k++) {            /* rooms are never below zero here */
        sa[k] += ra[k], la[k] -= ra[k], ra[k] = 0;
        sp[k] += rp[k], lp[k] -= rp[k], rp[k] = 0;
    }
    _cca_unlock(&a->spare_lock);
}

/* The headroom was short (d applied): the other streams' room swept into
 * it, else every other stream held to raise the peaks; false, d undone,
 * if a stream stayed busy. */
static bool counters_admit_others(cca_allocator_t *a, cca_stream_t *st, int pool, const cca_delta_t *d)
{
    counters_sweep(a, st);
    if (counters_take_spare(a, st, pool)) return true;
    counters_ctr_add(&st->ctr, pool, d, -1);          /* a fall (which needs no room) stays applied */
    unsigned spins = 0;
    cca_stream_t *busy;
    while ((busy = counters_take_all_others(a, st)) && counters_wait_for(a, st, busy, &spins)) {}
    if (busy) return false;
    counters_vacate_parked_all(a);
    counters_raise_peaks(a, st, pool, d);
    a->lease_takeovers++;
    counters_ctr_add(&st->ctr, pool, d, 1);
    counters_release_others(a, st);
    return true;
}

/* _cca_counters_apply found a room below zero (d is applied): the shared
 * headroom covers it, d staying applied; else undo it, make room and apply
 * it again, or return false with d undone (a `fall` stays
 * applied: it needs no room; lease taken from other streams stays moved,
 * which keeps every sum). With the others held, the change is applied
 * before they are let go, so the new peaks are sums that really happen. */
bool _cca_counters_admit_slow(cca_allocator_t *a, cca_stream_t *st, int pool, const cca_delta_t *fall,
                         const cca_delta_t *d)
{
    (void)fall;
    if (a->refuse_admit) {                            /* tests: every passed lease goes all locked */
        counters_ctr_add(&st->ctr, pool, d, -1);
        return false;
    }
    if (counters_take_spare(a, st, pool)) return true;   /* d stays applied */
    atomic_store_explicit(&st->admitting, true, memory_order_relaxed);   /* st wants others' locks (counters_wait_for) */
    bool done = counters_admit_others(a, st, pool, d);
    atomic_store_explicit(&st->admitting, false, memory_order_relaxed);
    if (!done) _cca_thread_streams.admit_yielded = st;   /* the caller may try again once st's lock was let go */
    return done;
}

/* counters.c - exact counters over per-stream figures. Each stream counts
 * its own allocations under its own lock; the all-locked path sums them
 * into the public view (refresh), follows every change there with peaks
 * (track), and afterwards deals each stream a lease: how far it may raise
 * each figure alone. The leases add up to at most the peak, so the sum of
 * all streams cannot pass a peak without the all-locked path seeing it:
 * peaks stay exact with no shared write on the hot path. */
#include <stddef.h>
#include "internal.h"

static const size_t shard_offset[CCA_NSHARD] = {
#define SHARD_OFFSET_(name) offsetof(cca_stats_t, name),
    CCA_SHARD_STATS(SHARD_OFFSET_)
#undef SHARD_OFFSET_
};

/* oversize_allocations is one figure in the public view (as PyTorch's);
 * its per-pool form lives beside it, so that leases work alike. */
cca_stat_t *_cca_shard_stat(cca_allocator_t *a, int k)
{
    if (k == CCA_K_oversize_allocations) return a->oversize_pools;
    return (cca_stat_t *)((char *)&a->stats + shard_offset[k]);
}

void _cca_ctr_track(cca_allocator_t *a, int k, int pool, int64_t d)
{
    _cca_stat_add(_cca_shard_stat(a, k), _cca_pool_stat(pool), d);
    a->counters_moved = true;
}

/* Figures of stream st for stat k, by public pool index. */
static inline int64_t cur_of(const cca_ctr_t *c, int p)
{
    return p == CCA_POOL_ALL ? c->cur[0] + c->cur[1] : c->cur[p - 1];
}

void _cca_counters_refresh(cca_allocator_t *a)
{
    int64_t cur[CCA_NSHARD][2] = { { 0 } }, inc[CCA_NSHARD][2] = { { 0 } };
    for (int k = 0; k < CCA_NSHARD; k++)             /* what retired streams had counted */
        for (int q = 0; q < 2; q++) inc[k][q] = a->retired_inc[k][q];
    for (const cca_stream_t *st = a->streams; st; st = st->next)
        for (int k = 0; k < CCA_NSHARD; k++)
            for (int q = 0; q < 2; q++) {
                cur[k][q] += st->ctr[k].cur[q];
                inc[k][q] += st->ctr[k].inc[q];
            }
    for (int k = 0; k < CCA_NSHARD; k++) {
        cca_stat_t *f = _cca_shard_stat(a, k);
        for (int p = 0; p < CCA_POOL_COUNT; p++) {
            int64_t c = p == CCA_POOL_ALL ? cur[k][0] + cur[k][1] : cur[k][p - 1];
            int64_t i = p == CCA_POOL_ALL ? inc[k][0] + inc[k][1] : inc[k][p - 1];
            f[p].current = c;
            f[p].allocated = i - a->inc_base[k][p];
            f[p].freed = i - c - a->freed_base[k][p];
        }
    }
}

void _cca_counters_reset_accumulated(cca_allocator_t *a)
{
    for (int k = 0; k < CCA_NSHARD; k++) {
        cca_stat_t *f = _cca_shard_stat(a, k);
        for (int p = 0; p < CCA_POOL_COUNT; p++) {
            a->inc_base[k][p] += f[p].allocated;
            a->freed_base[k][p] += f[p].freed;
        }
    }
#define RESET_ACC_(name, doc) \
    for (int p = 0; p < CCA_POOL_COUNT; p++) a->stats.name[p].allocated = a->stats.name[p].freed = 0;
    CCA_STAT_FIELDS(RESET_ACC_)
#undef RESET_ACC_
#define RESET_CNT_(name, doc) a->stats.name = 0;
    CCA_COUNTER_FIELDS(RESET_CNT_)
#undef RESET_CNT_
    for (int p = 0; p < CCA_POOL_COUNT; p++) a->oversize_pools[p].allocated = a->oversize_pools[p].freed = 0;
    a->oversize_segments.allocated = a->oversize_segments.freed = 0;
}

void _cca_counters_reset_peaks(cca_allocator_t *a)
{
#define RESET_PEAK_(name, doc) \
    for (int p = 0; p < CCA_POOL_COUNT; p++) a->stats.name[p].peak = a->stats.name[p].current;
    CCA_STAT_FIELDS(RESET_PEAK_)
#undef RESET_PEAK_
    for (int p = 0; p < CCA_POOL_COUNT; p++) a->oversize_pools[p].peak = a->oversize_pools[p].current;
    a->oversize_segments.peak = a->oversize_segments.current;
    a->counters_moved = true;                  /* the leases must shrink to the new peaks */
}

/* The public view (all locked): the figures kept by pool, and the ones
 * derived or kept elsewhere. */
void _cca_counters_view(cca_allocator_t *a, cca_stats_t *out)
{
    *out = a->stats;
    out->oversize_allocations = a->oversize_pools[CCA_POOL_ALL];
    out->oversize_segments = a->oversize_segments;
    out->max_split_size = a->cfg.max_split_size == SIZE_MAX ? -1 : (int64_t)a->cfg.max_split_size;
    int64_t host = a->host_bytes;
    for (const cca_stream_t *st = a->streams; st; st = st->next) host += _cca_stream_host_bytes(st);
    out->host_bytes = host;
}

static inline int64_t demand_of(const cca_ctr_t *c, int p)
{
    int64_t high = p == CCA_POOL_ALL ? c->high[0] + c->high[1] : c->high[p - 1];
    int64_t want = high - cur_of(c, p);
    return want > 0 ? want : 0;
}

/* Deals the leases anew: each stream its current figure, then the slack
 * under the peak in proportion to each stream's demand (how far above its
 * current figure it went before), the rounding rest to the stream just
 * served. */
void _cca_counters_rebalance(cca_allocator_t *a, cca_stream_t *trigger)
{
    if (!a->counters_moved) return;        /* leases still add up to at most the peaks */
    a->counters_moved = false;
    for (int k = 0; k < CCA_NSHARD; k++) {
        const cca_stat_t *f = _cca_shard_stat(a, k);
        int64_t total[CCA_POOL_COUNT] = { 0 };
        for (cca_stream_t *st = a->streams; st; st = st->next) {
            cca_ctr_t *c = &st->ctr[k];
            st->epoch++;
            for (int q = 0; q < 2; q++)
                if (c->cur[q] > c->high[q]) c->high[q] = c->cur[q];
            for (int p = 0; p < CCA_POOL_COUNT; p++) {
                c->lease[p] = cur_of(c, p);
                total[p] += demand_of(c, p);
            }
        }
        for (int p = 0; p < CCA_POOL_COUNT; p++) {
            int64_t slack = f[p].peak - f[p].current, dealt = 0;
            if (slack <= 0) continue;
            if (total[p] > 0)
                for (cca_stream_t *st = a->streams; st; st = st->next) {
                    int64_t give = (int64_t)((double)slack * (double)demand_of(&st->ctr[k], p) / (double)total[p]);
                    if (give > slack - dealt) give = slack - dealt;
                    st->ctr[k].lease[p] += give;
                    dealt += give;
                }
            cca_stream_t *rest = trigger ? trigger : a->streams;
            if (rest) rest->ctr[k].lease[p] += slack - dealt;
        }
    }
}

/* On the hot path, st (locked) passed a lease: take half of what the other
 * streams have spare, without waiting for their locks. Moving lease between
 * streams keeps their sum, so peaks stay exact. False if nothing came. */
bool _cca_counters_steal(cca_allocator_t *a, cca_stream_t *st)
{
    bool got = false;
    for (cca_stream_t *o = a->streams; o; o = o->next) {
        if (o == st || !_cca_trylock(&o->lock)) continue;
        for (int k = 0; k < CCA_NSHARD; k++)
            for (int p = 0; p < CCA_POOL_COUNT; p++) {
                int64_t spare = o->ctr[k].lease[p] - cur_of(&o->ctr[k], p);
                int64_t move = (spare + 1) / 2;
                if (move <= 0) continue;
                o->ctr[k].lease[p] -= move;
                st->ctr[k].lease[p] += move;
                got = true;
            }
        if (got) o->epoch++;
        _cca_unlock(&o->lock);
    }
    return got;
}

/* The change d would set new peaks: with every other stream's lock taken
 * (never waiting), raise the peaks to the sums the change gives and hand st
 * all the room under them. The caller applies the change before it lets go
 * of the others (_cca_counters_release_others), so the new peaks are sums
 * that really happen. False if a stream was busy. */
static bool take_all_others(cca_allocator_t *a, cca_stream_t *st)
{
    for (cca_stream_t *o = a->streams; o; o = o->next) {
        if (o == st || _cca_trylock(&o->lock)) continue;
        for (cca_stream_t *u = a->streams; u != o; u = u->next)
            if (u != st) _cca_unlock(&u->lock);
        return false;
    }
    return true;
}

void _cca_counters_release_others(cca_allocator_t *a, cca_stream_t *st)
{
    for (cca_stream_t *o = a->streams; o; o = o->next)
        if (o != st) _cca_unlock(&o->lock);
}

static void raise_peaks(cca_allocator_t *a, cca_stream_t *st, int pool, const int64_t d[CCA_NSHARD])
{
    for (int k = 0; k < CCA_NSHARD; k++) {
        if (d[k] <= 0) continue;
        cca_stat_t *f = _cca_shard_stat(a, k);
        const int ps[2] = { CCA_POOL_ALL, 1 + pool };
        for (int i = 0; i < 2; i++) {
            int p = ps[i];
            int64_t sum = 0;
            for (cca_stream_t *o = a->streams; o; o = o->next) sum += cur_of(&o->ctr[k], p);
            if (sum + d[k] > f[p].peak) f[p].peak = sum + d[k];
            for (cca_stream_t *o = a->streams; o; o = o->next) {
                if (o == st) continue;
                o->ctr[k].lease[p] = cur_of(&o->ctr[k], p);
                o->epoch++;
            }
            st->ctr[k].lease[p] = cur_of(&st->ctr[k], p) + f[p].peak - sum;
        }
    }
}

int _cca_counters_make_room(cca_allocator_t *a, cca_stream_t *st, int pool, const int64_t d[CCA_NSHARD])
{
    if (_cca_counters_fit(st, pool, d)) return 1;
    if (_cca_counters_steal(a, st) && _cca_counters_fit(st, pool, d)) return 1;
    for (int tries = 0; tries < 4; tries++) {
        if (!take_all_others(a, st)) {
            _cca_cpu_relax();
            continue;
        }
        raise_peaks(a, st, pool, d);
        return 2;
    }
    return 0;
}

/* snapshot.c - every segment and block of a consistent view copied into
 * flat arrays, then handed to the caller's callbacks outside it (so that they
 * may call cca themselves). */
#include <stdlib.h>
#include <string.h>
#include "stats_internal.h"

static int snapshot_count_segment(const cca_segment_info_t *s, void *arg)
{
    size_t *n = arg;
    n[0]++;
    n[1] += s->n_blocks;
    return 0;
}

static int snapshot_copy_segment(const cca_segment_info_t *s, void *arg)
{
    cca_snap_t *out = arg;
    out->segs[out->n_segs++] = *s;
    return 0;
}

static int snapshot_copy_block(const cca_segment_info_t *s, const cca_block_info_t *b, bool counts_split, void *arg)
{
    (void)s, (void)counts_split;
    cca_snap_t *out = arg;
    out->blocks[out->n_blocks++] = *b;
    return 0;
}

static cca_status_t snapshot_snap_view(cca_view_t *v, void *arg)
{
    cca_snap_t *out = arg;
    size_t n[2] = { 0, 0 };                           /* segments, blocks */
    _cca_view_walk(v, &(cca_view_walk_t){ snapshot_count_segment, NULL, n });
    out->segs = malloc((n[0] ? n[0] : 1) * sizeof *out->segs);
    out->blocks = malloc((n[1] ? n[1] : 1) * sizeof *out->blocks);
    if (!out->segs || !out->blocks) return CCA_ERROR_OUT_OF_MEMORY;
    if (out->with_history && !_cca_view_history(v, &out->hist, &out->n_hist, &out->hist_dropped))
        return CCA_ERROR_OUT_OF_MEMORY;
    _cca_view_walk(v, &(cca_view_walk_t){ snapshot_copy_segment, snapshot_copy_block, out });
    return CCA_OK;
}

typedef struct keyed { cca_segment_info_t info; size_t first; } keyed_t;  /* first: index of its blocks */

static int snapshot_by_address(const void *x, const void *y)
{
    uintptr_t p = ((const keyed_t *)x)->info.address, q = ((const keyed_t *)y)->info.address;
    return (p > q) - (p < q);
}

/* Sorts the segments by address, moving each one's blocks along with it. */
static cca_status_t snapshot_sort_segments(cca_snap_t *s)
{
    keyed_t *k = malloc((s->n_segs ? s->n_segs : 1) * sizeof *k);
    cca_block_info_t *sorted = malloc((s->n_blocks ? s->n_blocks : 1) * sizeof *sorted);
    if (!k || !sorted) {
        free(k);
        free(sorted);
        return CCA_ERROR_OUT_OF_MEMORY;
    }
    for (size_t i = 0, first = 0; i < s->n_segs; first += s->segs[i++].n_blocks)
        k[i] = (keyed_t){ s->segs[i], first };
    qsort(k, s->n_segs, sizeof *k, snapshot_by_address);
    for (size_t i = 0, n = 0; i < s->n_segs; n += k[i++].info.n_blocks) {
        s->segs[i] = k[i].info;
        memcpy(sorted + n, s->blocks + k[i].first, k[i].info.n_blocks * sizeof *sorted);
    }
    free(k);
    free(s->blocks);
    s->blocks = sorted;
    return CCA_OK;
}

cca_status_t _cca_snapshot_take(cca_allocator_t *a, cca_snap_t *out, bool with_history)
{
    *out = (cca_snap_t){ .with_history = with_history };
    cca_status_t st = _cca_view(a, snapshot_snap_view, out);
    if (st == CCA_OK) st = snapshot_sort_segments(out);
    if (st != CCA_OK) {
        _cca_snapshot_free(out);
        return _cca_errors_fail(st, "cca snapshot: out of host memory");
    }
    return CCA_OK;
}

void _cca_snapshot_free(cca_snap_t *s)
{
    free(s->segs);
    free(s->blocks);
    free(s->hist);
    *s = (cca_snap_t){ 0 };
}

/* What a callback gets: our struct itself when the caller's is no larger,
 * else a copy in a zeroed buffer of the caller's size. */
static const void *snapshot_as_callers(void *buf, size_t size, const void *ours, size_t n)
{
    if (!buf) return ours;
    memcpy(buf, ours, n);
    (void)size;
    return buf;
}

cca_status_t cca_snapshot_walk_sized(cca_allocator_t *a, cca_segment_fn seg_cb, cca_block_fn block_cb, void *arg,
                                     size_t seg_size, size_t block_size)
{
    if (!a) return _cca_errors_fail(CCA_ERROR_INVALID_ARGUMENT, "cca_snapshot_walk: allocator is NULL");
    if (seg_size < CCA_V1_SEG || block_size < CCA_V1_BLOCK)
        return _cca_errors_fail(CCA_ERROR_INVALID_ARGUMENT, "cca_snapshot_walk: struct sizes %zu and %zu are not cca's",
                         seg_size, block_size);
    void *sbuf = seg_size > sizeof(cca_segment_info_t) ? calloc(1, seg_size) : NULL;
    void *bbuf = block_size > sizeof(cca_block_info_t) ? calloc(1, block_size) : NULL;
    if ((seg_size > sizeof(cca_segment_info_t) && !sbuf) || (block_size > sizeof(cca_block_info_t) && !bbuf)) {
        free(sbuf);
        free(bbuf);
        return _cca_errors_fail(CCA_ERROR_OUT_OF_MEMORY, "cca snapshot: out of host memory");
    }
    cca_snap_t s;
    cca_status_t st = _cca_snapshot_take(a, &s, false);
    if (st == CCA_OK) {
        const cca_block_info_t *b = s.blocks;
        int stop = 0;
        for (size_t i = 0; i < s.n_segs && !stop; b += s.segs[i++].n_blocks) {
            if (seg_cb) stop = seg_cb(snapshot_as_callers(sbuf, seg_size, &s.segs[i], sizeof s.segs[i]), arg);
            for (size_t j = 0; j < s.segs[i].n_blocks && block_cb && !stop; j++)
                stop = block_cb(snapshot_as_callers(bbuf, block_size, &b[j], sizeof b[j]), arg);
        }
        _cca_snapshot_free(&s);
    }
    free(sbuf);
    free(bbuf);
    return st;
}

const char *cca_snapshot_state_string(cca_snapshot_state_t s)
{
    switch (s) {
    case CCA_STATE_ACTIVE_ALLOCATED: return "active_allocated";
    case CCA_STATE_ACTIVE_PENDING_FREE: return "active_pending_free";
    case CCA_STATE_INACTIVE: return "inactive";
    }
    return "unknown";
}

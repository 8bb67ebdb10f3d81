/* fuzz_ops.h - the fuzz driver: bytes read as a sequence of operations on
 * four allocators of different configurations (one with expandable
 * segments) over two simulated devices
 * (malloc of boundary sizes; free of valid, interior, foreign and freed
 * pointers; record_stream; stream create and retire; holds; empty_cache;
 * resets; watches; scopes; history; snapshots and reports into small buffers; cap
 * changes; one-shot faults), with a shadow model checked after every call:
 * cca_check, every counter the model can know exactly (allocations and
 * requested bytes: current, peak, allocated, freed; OOMs), reserved bytes
 * against the device's, live blocks that never overlap, the snapshot's
 * view of each live block, a re-judged OOM verdict. Used by the seeded
 * runner (fuzz_seeded.c, in CI) and by libFuzzer (fuzz_libfuzzer.c). A
 * violation prints what and aborts. */
#ifndef CCA_FUZZ_OPS_H
#define CCA_FUZZ_OPS_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cca.h"
#include "cca_sim.h"

#define FZ_ALLOCS 4
#define FZ_LIVE 48
#define FZ_STREAMS 2
#define MiB_ ((size_t)1 << 20)

typedef struct fz_block { void *p; size_t size; int stream; } fz_block_t;

typedef struct fz_alloc {
    cca_allocator_t *a;
    int device;
    fz_block_t live[FZ_LIVE];
    int64_t count, count_peak, count_alloc, count_freed;      /* allocation[ALL] */
    int64_t req, req_peak, req_alloc, req_freed;              /* requested_bytes[ALL] */
    int64_t ooms;
    bool scope_open;
    uint64_t scope_token, scope_allocs, scope_frees;
    bool watching;
    uint64_t watch_id;
    size_t hist_bound;                                        /* history's bound; 0: off */
    uint64_t hist_seen;                                       /* entries held + dropped at the last look */
    size_t watch_bytes;
    void *freed[8];                                           /* recently freed, for double frees */
    unsigned n_freed;
} fz_alloc_t;

typedef struct fz {
    const uint8_t *data;
    size_t len, pos;
    fz_alloc_t al[FZ_ALLOCS];
    cudaStream_t streams[FZ_STREAMS];
    void *outside[2];                                         /* bare cudaMalloc on device 0 and 1 */
    size_t outside_bytes[2];
    unsigned long step;
    bool fault_armed;
} fz_t;

static void fz_die(fz_t *z, const char *fmt, ...) __attribute__((noreturn, format(printf, 2, 3)));
static void fz_die(fz_t *z, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "fuzz: step %lu: ", z->step);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    abort();
}

#define FZ_CHECK(z, cond, ...) do { if (!(cond)) fz_die((z), __VA_ARGS__); } while (0)

static uint8_t fz_u8(fz_t *z) { return z->pos < z->len ? z->data[z->pos++] : 0; }
static uint32_t fz_u32(fz_t *z) { uint32_t v = 0; for (int i = 0; i < 4; i++) v = v << 8 | fz_u8(z); return v; }

static cudaStream_t fz_stream(fz_t *z, int i)
{
    switch (i % 4) {
    case 0: return NULL;
    case 1: return cudaStreamPerThread;
    default: return z->streams[(i % 4) - 2];
    }
}

static size_t fz_size(fz_t *z)
{
    static const size_t edges[] = { 0, 1, 511, 512, 513, 4096, 1 * MiB_ - 1, 1 * MiB_, 1 * MiB_ + 1, 2 * MiB_,
                                    10 * MiB_ - 1, 10 * MiB_, 20 * MiB_, 64 * MiB_, 64 * MiB_ + 1, 130 * MiB_,
                                    (size_t)1 << 40, SIZE_MAX, ((size_t)1 << 62) + 1 };
    uint8_t k = fz_u8(z);
    if (k < 64) return edges[k % (sizeof edges / sizeof edges[0])];
    int shift = 9 + k % 18;                                   /* 512 B .. 64 MiB, log-uniform */
    return ((size_t)1 << shift) + (fz_u32(z) & (((size_t)1 << shift) - 1));
}

/* ---- the model's checks ---------------------------------------------------- */

typedef struct snap_check { fz_t *z; fz_alloc_t *f; int64_t live_seen, pending_req; } snap_check_t;

static int snap_block(const cca_block_info_t *b, void *arg)
{
    snap_check_t *c = arg;
    if (b->state == CCA_STATE_ACTIVE_PENDING_FREE) c->pending_req += (int64_t)b->requested_size;
    if (b->state != CCA_STATE_ACTIVE_ALLOCATED) return 0;
    c->live_seen++;
    FZ_CHECK(c->z, cca_sim_accessible((const void *)b->address, b->size), "snapshot: live block %#lx is not mapped read-write",
             (unsigned long)b->address);
    for (int i = 0; i < FZ_LIVE; i++)
        if (c->f->live[i].p == (void *)b->address) {
            FZ_CHECK(c->z, b->requested_size == c->f->live[i].size, "snapshot: block %#lx requested %zu, the model %zu",
                     (unsigned long)b->address, b->requested_size, c->f->live[i].size);
            FZ_CHECK(c->z, b->size >= b->requested_size, "snapshot: block smaller than requested");
            return 0;
        }
    fz_die(c->z, "snapshot: live block %#lx the model does not know", (unsigned long)b->address);
}

/* The model against every allocator's counters; cca_check and the
 * snapshot for `touched` (NULL: none), or for all when deep. */
static void fz_verify(fz_t *z, const fz_alloc_t *touched, bool deep)
{
    size_t reserved[2] = { 0, 0 };
    for (int i = 0; i < FZ_ALLOCS; i++) {
        fz_alloc_t *f = &z->al[i];
        if (deep || f == touched) FZ_CHECK(z, cca_check(f->a) == CCA_OK, "allocator %d: %s", i, cca_last_error_string());
        cca_stats_t s;
        FZ_CHECK(z, cca_get_stats(f->a, &s) == CCA_OK, "get_stats");
        const cca_stat_t *n = &s.allocation[CCA_POOL_ALL], *q = &s.requested_bytes[CCA_POOL_ALL];
        FZ_CHECK(z, n->current == f->count && n->peak == f->count_peak && n->allocated == f->count_alloc &&
                    n->freed == f->count_freed,
                 "allocator %d: allocation %lld/%lld/%lld/%lld, the model %lld/%lld/%lld/%lld", i, (long long)n->current,
                 (long long)n->peak, (long long)n->allocated, (long long)n->freed, (long long)f->count,
                 (long long)f->count_peak, (long long)f->count_alloc, (long long)f->count_freed);
        /* requested bytes of a block freed with other streams' uses pending
         * fall when the uses complete (as PyTorch's), which the model cannot
         * time: at least the model's now, and exactly the model's plus the
         * pending blocks' when the snapshot is walked below (freed is not
         * checked: a block freed before a reset of the accumulated figures
         * may settle after it) */
        FZ_CHECK(z, q->current >= f->req && q->peak >= f->req_peak && q->peak >= q->current &&
                    q->allocated == f->req_alloc,
                 "allocator %d: requested_bytes %lld/%lld/%lld/%lld, the model %lld/%lld/%lld/%lld", i,
                 (long long)q->current, (long long)q->peak, (long long)q->allocated, (long long)q->freed,
                 (long long)f->req, (long long)f->req_peak, (long long)f->req_alloc, (long long)f->req_freed);
        FZ_CHECK(z, s.num_ooms == f->ooms, "allocator %d: num_ooms %lld, the model %lld", i, (long long)s.num_ooms,
                 (long long)f->ooms);
        reserved[f->device] += (size_t)s.reserved_bytes[CCA_POOL_ALL].current;
        if (deep || (f == touched && z->step % 4 == 0)) {
            snap_check_t c = { z, f, 0, 0 };
            FZ_CHECK(z, cca_snapshot_walk(f->a, NULL, snap_block, &c) == CCA_OK, "snapshot walk");
            FZ_CHECK(z, q->current == f->req + c.pending_req,
                     "allocator %d: requested_bytes %lld, the model %lld and %lld pending", i, (long long)q->current,
                     (long long)f->req, (long long)c.pending_req);
            FZ_CHECK(z, c.live_seen == f->count, "snapshot: %lld live blocks, the model %lld", (long long)c.live_seen,
                     (long long)f->count);
        }
    }
    for (int d = 0; d < 2; d++)
        FZ_CHECK(z, cca_sim_used_bytes(d) == reserved[d] + z->outside_bytes[d],
                 "device %d: %zu bytes used, the allocators reserve %zu and %zu are outside", d, cca_sim_used_bytes(d),
                 reserved[d], z->outside_bytes[d]);
}

static void fz_counted(fz_alloc_t *f, size_t size, int dir)
{
    if (dir > 0) {
        f->count++, f->count_alloc++, f->req += (int64_t)size, f->req_alloc += (int64_t)size;
        if (f->count > f->count_peak) f->count_peak = f->count;
        if (f->req > f->req_peak) f->req_peak = f->req;
        f->scope_allocs++;
    } else {
        f->count--, f->count_freed++, f->req -= (int64_t)size, f->req_freed += (int64_t)size;
        f->scope_frees++;
    }
}

static bool fz_overlaps(fz_t *z, void *p, size_t size)
{
    uintptr_t a = (uintptr_t)p, b = a + size;
    for (int i = 0; i < FZ_ALLOCS; i++)
        for (int j = 0; j < FZ_LIVE; j++) {
            const fz_block_t *x = &z->al[i].live[j];
            if (!x->p) continue;                              /* devices have disjoint ranges: all can be compared */
            uintptr_t c = (uintptr_t)x->p, d = c + (x->size ? x->size : 1);
            if (a < d && c < b) return true;
        }
    return false;
}

static bool fz_status_ok(fz_t *z, cca_status_t s, cca_status_t want)
{
    return s == want || (z->fault_armed && (s == CCA_ERROR_CUDA || s == CCA_ERROR_OUT_OF_MEMORY));
}

/* ---- the operations -------------------------------------------------------- */

static void op_malloc(fz_t *z, fz_alloc_t *f)
{
    size_t size = fz_size(z);
    int si = fz_u8(z);
    int slot = -1;
    for (int i = 0; i < FZ_LIVE && slot < 0; i++)
        if (!f->live[i].p) slot = i;
    if (slot < 0) return;
    void *p = (void *)1;
    cca_status_t s = cca_malloc(f->a, &p, size, fz_stream(z, si));
    if (s == CCA_OK && size == 0) {
        FZ_CHECK(z, p == NULL, "malloc(0) gave a pointer");
        return;
    }
    if (s == CCA_OK) {
        FZ_CHECK(z, p != NULL && ((uintptr_t)p & 511) == 0, "malloc(%zu) gave %p", size, p);
        FZ_CHECK(z, !fz_overlaps(z, p, size), "malloc(%zu) gave %p, which overlaps a live block", size, p);
        f->live[slot] = (fz_block_t){ p, size, si };
        fz_counted(f, size, +1);
        return;
    }
    FZ_CHECK(z, p == NULL, "a failed malloc left a pointer");
    FZ_CHECK(z, s == CCA_ERROR_OUT_OF_MEMORY || (z->fault_armed && s == CCA_ERROR_CUDA), "malloc(%zu): %s (%s)", size,
             cca_status_string(s), cca_last_error_string());
    if (s != CCA_ERROR_OUT_OF_MEMORY) return;
    f->ooms++;
    cca_oom_report_t r, again;
    FZ_CHECK(z, cca_last_oom_report(f->a, &r) == CCA_OK && r.verdict != CCA_OOM_NONE, "no OOM report");
    FZ_CHECK(z, r.requested == size, "the report's request %zu, not %zu", r.requested, size);
    again = r;
    cca_oom_judge(&again);
    FZ_CHECK(z, again.verdict == r.verdict && again.shortfall == r.shortfall && again.need_live == r.need_live &&
                again.need_cached == r.need_cached && again.need_external == r.need_external && again.need_cap == r.need_cap,
             "the verdict %s is not what its figures give (%s)", cca_oom_verdict_string(r.verdict),
             cca_oom_verdict_string(again.verdict));
    char small[1 + (fz_u8(z) % 64)];
    size_t n = cca_oom_report_format(&r, small, sizeof small);
    FZ_CHECK(z, strlen(small) == (n < sizeof small ? n : sizeof small - 1), "format into %zu bytes", sizeof small);
}

static void op_free(fz_t *z, fz_alloc_t *f)
{
    uint8_t how = fz_u8(z), k = fz_u8(z);
    fz_block_t *b = &f->live[k % FZ_LIVE];
    for (int i = 0; i < FZ_LIVE && !b->p; i++) b = &f->live[(k + i) % FZ_LIVE];   /* a live one, if any */
    if (how % 8 == 0 && b->p && b->size > 512) {               /* interior */
        FZ_CHECK(z, cca_free(f->a, (char *)b->p + 512) == CCA_ERROR_INVALID_POINTER, "interior free accepted");
        return;
    }
    if (how % 8 == 1) {                                       /* foreign: host memory */
        FZ_CHECK(z, cca_free(f->a, &how) == CCA_ERROR_INVALID_POINTER, "foreign free accepted");
        return;
    }
    if (how % 8 == 2 && f->n_freed) {                         /* freed before, unless live again (anywhere) */
        void *p = f->freed[k % (f->n_freed < 8 ? f->n_freed : 8)];
        for (int i = 0; i < FZ_LIVE; i++)
            if (f->live[i].p == p) return;
        FZ_CHECK(z, cca_free(f->a, p) == CCA_ERROR_INVALID_POINTER, "double free of %p accepted", p);
        return;
    }
    if (!b->p) return;
    cca_status_t s = cca_free(f->a, b->p);
    FZ_CHECK(z, s == CCA_OK, "free of a live block: %s (%s)", cca_status_string(s), cca_last_error_string());
    fz_counted(f, b->size, -1);
    f->freed[f->n_freed++ % 8] = b->p;
    *b = (fz_block_t){ 0 };
}

static void op_record(fz_t *z, fz_alloc_t *f)
{
    fz_block_t *b = &f->live[fz_u8(z) % FZ_LIVE];
    if (!b->p) return;
    cca_status_t s = cca_record_stream(f->a, b->p, fz_stream(z, fz_u8(z)));
    FZ_CHECK(z, fz_status_ok(z, s, CCA_OK), "record_stream: %s", cca_status_string(s));
}

static void op_stream(fz_t *z)
{
    uint8_t k = fz_u8(z);
    cudaStream_t s = z->streams[k % FZ_STREAMS];
    switch ((k >> 1) % 3) {
    case 0: cca_sim_stream_hold(s); break;
    case 1: cca_sim_stream_release(s); break;
    default:                                                  /* retire, destroy, create anew */
        cca_sim_stream_release(s);
        for (int i = 0; i < FZ_ALLOCS; i++)
            FZ_CHECK(z, fz_status_ok(z, cca_stream_retire(z->al[i].a, s), CCA_OK), "stream_retire");
        if (cudaStreamDestroy(s) != cudaSuccess || cudaStreamCreate(&z->streams[k % FZ_STREAMS]) != cudaSuccess) {
            (void)cudaGetLastError();
            cca_sim_fail_nth(0, cudaSuccess);
            FZ_CHECK(z, cudaStreamCreate(&z->streams[k % FZ_STREAMS]) == cudaSuccess, "cudaStreamCreate");
        }
        break;
    }
}

static void fz_watch_cb(void *arg, cca_watch_kind_t which, size_t now, int rising)
{
    fz_alloc_t *f = arg;
    (void)which;
    if ((rising && now <= f->watch_bytes) || (!rising && now > f->watch_bytes)) abort();
}

static size_t sink_count(const char *data, size_t len, void *arg)
{
    (void)data;
    size_t *left = arg;
    size_t take = len < *left ? len : *left;
    *left -= take;
    return take;
}

typedef struct fz_hist { uint64_t n, last_us; bool bad; } fz_hist_t;

static int fz_hist_entry(const cca_history_entry_t *e, void *arg)
{
    fz_hist_t *h = arg;
    if (e->action < CCA_HISTORY_ALLOC || e->action > CCA_HISTORY_OOM || e->time_us < h->last_us ||
        (e->action != CCA_HISTORY_OOM && (!e->addr || e->device_free)))
        h->bad = true;
    h->last_us = e->time_us;
    h->n++;
    return 0;
}

/* History on (a bound of 1 to 16 entries: the ring wraps), re-bounded or
 * off; when on, the ring holds at most its bound, in time order, and what
 * it holds plus what it dropped never falls. */
static void fz_history(fz_t *z, fz_alloc_t *f, uint8_t k)
{
    if (k % 4 == 0) {
        FZ_CHECK(z, cca_record_history(f->a, 0) == CCA_OK, "record_history off");
        f->hist_bound = 0, f->hist_seen = 0;
    } else if (k % 4 == 1) {
        f->hist_bound = (size_t)(k >> 4) + 1;
        FZ_CHECK(z, cca_record_history(f->a, f->hist_bound) == CCA_OK, "record_history(%zu)", f->hist_bound);
        f->hist_seen = 0;
    }
    fz_hist_t h = { 0 };
    uint64_t dropped = 0;
    FZ_CHECK(z, cca_history_walk(f->a, fz_hist_entry, &h, &dropped) == CCA_OK, "history walk");
    FZ_CHECK(z, !h.bad, "history: an entry out of order or malformed");
    FZ_CHECK(z, h.n <= f->hist_bound, "history: %llu entries, bound %zu", (unsigned long long)h.n, f->hist_bound);
    FZ_CHECK(z, h.n + dropped >= f->hist_seen, "history: recorded %llu, had %llu", (unsigned long long)(h.n + dropped),
             (unsigned long long)f->hist_seen);
    f->hist_seen = h.n + dropped;
}

static void op_misc(fz_t *z, fz_alloc_t *f)
{
    uint8_t k = fz_u8(z);
    if (getenv("CCA_FUZZ_TRACE")) fprintf(stderr, "  misc %u\n", k % 10);
    switch (k % 10) {
    case 0: FZ_CHECK(z, cca_empty_cache(f->a) == CCA_OK, "empty_cache"); break;
    case 1:
        FZ_CHECK(z, cca_reset_peak_stats(f->a) == CCA_OK, "reset_peak");
        f->count_peak = f->count, f->req_peak = f->req;
        break;
    case 2:
        FZ_CHECK(z, cca_reset_accumulated_stats(f->a) == CCA_OK, "reset_accumulated");
        f->count_alloc = f->count_freed = f->req_alloc = f->req_freed = f->ooms = 0;
        break;
    case 3:
        if (f->watching) {
            FZ_CHECK(z, cca_unwatch(f->a, f->watch_id) == CCA_OK, "unwatch");
            f->watching = false;
        } else {
            f->watch_bytes = (size_t)(fz_u8(z) + 1) * MiB_;
            FZ_CHECK(z, cca_watch_threshold(f->a, CCA_WATCH_ALLOCATED, f->watch_bytes, fz_watch_cb, f, &f->watch_id) == CCA_OK,
                     "watch");
            f->watching = true;
        }
        break;
    case 4:
        if (!f->scope_open) {
            FZ_CHECK(z, cca_scope_begin(f->a, &f->scope_token) == CCA_OK, "scope_begin");
            f->scope_open = true, f->scope_allocs = f->scope_frees = 0;
        } else {
            cca_scope_result_t r;
            FZ_CHECK(z, cca_scope_end(f->a, f->scope_token, &r) == CCA_OK, "scope_end");
            FZ_CHECK(z, r.allocations == f->scope_allocs && r.frees == f->scope_frees,
                     "scope: %llu allocations and %llu frees, the model %llu and %llu", (unsigned long long)r.allocations,
                     (unsigned long long)r.frees, (unsigned long long)f->scope_allocs, (unsigned long long)f->scope_frees);
            f->scope_open = false;
        }
        break;
    case 5: {
        fz_history(z, f, fz_u8(z));
        size_t left = fz_u8(z) * 64u;                         /* a sink that fills up */
        cca_status_t s = cca_snapshot_json(f->a, sink_count, &left);
        FZ_CHECK(z, s == CCA_OK || s == CCA_ERROR_INVALID_ARGUMENT, "snapshot_json: %s", cca_status_string(s));
        left = fz_u8(z) * 64u;
        s = cca_memory_summary(f->a, sink_count, &left);
        FZ_CHECK(z, s == CCA_OK || s == CCA_ERROR_INVALID_ARGUMENT, "memory_summary: %s", cca_status_string(s));
        break;
    }
    case 6: {
        size_t limit = (size_t)(fz_u8(z) % 8) * 32 * MiB_;    /* 0: none; below 2 MiB is refused */
        cca_status_t s = cca_set_memory_limit(f->a, limit);
        FZ_CHECK(z, s == CCA_OK, "set_memory_limit(%zu): %s", limit, cca_status_string(s));
        break;
    }
    case 7: {
        double frac = (double)(fz_u8(z) % 5) / 4.0;
        FZ_CHECK(z, cca_set_memory_fraction(f->a, frac) == CCA_OK, "set_memory_fraction(%g)", frac);
        FZ_CHECK(z, cca_set_memory_fraction(f->a, -frac - 0.5) == CCA_ERROR_INVALID_ARGUMENT, "a bad fraction");
        break;
    }
    case 8: {                                                 /* memory outside cca */
        int d = fz_u8(z) % 2;
        cca_sim_fail_nth(0, cudaSuccess);                     /* the driver's own calls must not fail */
        z->fault_armed = false;
        FZ_CHECK(z, cudaSetDevice(d) == cudaSuccess, "cudaSetDevice");
        if (z->outside[d]) {
            FZ_CHECK(z, cudaFree(z->outside[d]) == cudaSuccess, "cudaFree outside");
            z->outside[d] = NULL, z->outside_bytes[d] = 0;
        } else {
            size_t sz = (size_t)(fz_u8(z) % 64 + 1) * MiB_;
            if (cudaMalloc(&z->outside[d], sz) == cudaSuccess) z->outside_bytes[d] = sz;
            else (void)cudaGetLastError(), z->outside[d] = NULL;
        }
        FZ_CHECK(z, cudaSetDevice(0) == cudaSuccess, "cudaSetDevice");
        break;
    }
    default: {                                                /* a fault in one of the next calls */
        cudaError_t e = fz_u8(z) % 2 ? cudaErrorMemoryAllocation : cudaErrorInvalidValue;
        cca_sim_fail_nth(1 + fz_u8(z) % 8, e);
        z->fault_armed = true;
        break;
    }
    }
}

static const char *const fz_confs[FZ_ALLOCS] = {
    "", "preset:lean,roundup_power2_divisions:[64:2,>:4]", "max_split_size_mb:64,garbage_collection_threshold:0.5,memory_limit_mb:192",
    "preset:expandable,max_split_size_mb:64,memory_limit_mb:96",
};

/* Runs the operations in data (at most max_steps of them; 0: all); aborts
 * on a violation. */
static void fuzz_run(const uint8_t *data, size_t len, unsigned long max_steps)
{
    static fz_t z;
    memset(&z, 0, sizeof z);
    z.data = data, z.len = len;
    cca_sim_reset();
    cca_sim_set_device_count(2);
    cca_sim_set_capacity(0, 256 * MiB_);
    cca_sim_set_capacity(1, 160 * MiB_);
    for (int i = 0; i < FZ_STREAMS; i++)
        if (cudaStreamCreate(&z.streams[i]) != cudaSuccess) abort();
    for (int i = 0; i < FZ_ALLOCS; i++) {
        cca_config_t c;
        cca_config_init(&c);
        if (cca_config_parse(&c, fz_confs[i], NULL, 0) != CCA_OK) abort();
        c.device = i >= 2 ? 1 : 0;
        z.al[i].device = c.device;
        if (cca_create(&c, &z.al[i].a) != CCA_OK) abort();
    }
    while (z.pos < z.len && (!max_steps || z.step < max_steps)) {
        z.step++;
        uint8_t op = fz_u8(&z);
        fz_alloc_t *f = &z.al[(op >> 4) % FZ_ALLOCS];
        if (getenv("CCA_FUZZ_TRACE")) fprintf(stderr, "step %lu: op %u on allocator %d\n", z.step, op % 8, (int)(f - z.al));
        switch (op % 8) {
        case 0: case 1: case 2: op_malloc(&z, f); break;
        case 3: case 4: op_free(&z, f); break;
        case 5: op_record(&z, f); break;
        case 6: op_stream(&z); break;
        default: op_misc(&z, f); break;
        }
        if (z.fault_armed && cca_sim_fail_nth_left() == 0) z.fault_armed = false;
        if (!z.fault_armed) {
            FZ_CHECK(&z, cudaGetLastError() == cudaSuccess, "cca left an error in the runtime's slot");
            fz_verify(&z, f, z.step % 64 == 0);
        }
    }
    cca_sim_fail_nth(0, cudaSuccess);
    z.fault_armed = false;
    fz_verify(&z, NULL, true);
    if (getenv("CCA_FUZZ_TRACE"))
        for (int i = 0; i < FZ_ALLOCS; i++)
            fprintf(stderr, "allocator %d: %lld allocations since the last reset, %lld live, %lld OOMs\n", i,
                    (long long)z.al[i].count_alloc, (long long)z.al[i].count, (long long)z.al[i].ooms);
    for (int i = 0; i < FZ_ALLOCS; i++) {                     /* everything back */
        for (int j = 0; j < FZ_LIVE; j++)
            if (z.al[i].live[j].p) FZ_CHECK(&z, cca_free(z.al[i].a, z.al[i].live[j].p) == CCA_OK, "final free");
        if (z.al[i].scope_open) cca_scope_end(z.al[i].a, z.al[i].scope_token, NULL);
        cca_destroy(z.al[i].a);
    }
    for (int d = 0; d < 2; d++)
        if (z.outside[d] && (cudaSetDevice(d) != cudaSuccess || cudaFree(z.outside[d]) != cudaSuccess)) abort();
    if (cudaSetDevice(0) != cudaSuccess) abort();
    for (int i = 0; i < FZ_STREAMS; i++) cudaStreamDestroy(z.streams[i]);
    for (int d = 0; d < 2; d++)
        FZ_CHECK(&z, cca_sim_live_allocations(d) == 0 && cca_sim_live_handles(d) == 0 && cca_sim_used_bytes(d) == 0,
                 "device %d still holds memory", d);
    FZ_CHECK(&z, cca_sim_va_reserved() == 0, "address space still reserved");
    (void)cudaGetLastError();
}

#endif

/* oom.c - the out-of-memory report: the figures as the request found them
 * and after release-and-retry, a verdict, and one line of advice. Filled
 * under the lock by the failing request, kept as the allocator's last
 * report, and handed to its callback after the lock is released. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include "stats_internal.h"

/* Verdict rules. Figures are after release-and-retry (every unused cached
 * segment was returned) unless marked "before".
 *   avail    = bytes cca could still add as a new segment: device_free, and
 *              with a cap no more than cap - reserved;
 *   headroom = avail + free_cached: what cca could use were it contiguous.
 * 1. cap: the cap refused the last attempt (the device was not asked) and
 *    the device had room for the segment: raising the cap is enough.
 *    shortfall = reserved + segment - cap.
 * 2. fragmented: headroom >= rounded. The bytes exist, cached or free on the
 *    device, but no free block of the stream is large enough and no new
 *    segment of segment_size fits. shortfall = 0.
 * 3. external: the device is the limit, freeing the memory held outside cca
 *    would let the segment fit (device_free + external >= segment), and
 *    more is held outside cca than inside (external > reserved).
 *    shortfall = segment - device_free, to free outside cca.
 * 4. exhausted otherwise: live allocations fill the device or the cap.
 *    shortfall = rounded - headroom, the least that must be freed.
 * segment is the smallest new segment the core tried (ctx->alloc_size).
 * largest_fit is the larger of the stream's largest free block (small pool
 * blocks serve at most 1 MiB) and the largest request whose new segment
 * fits in avail, with the default 512 B rounding. */

typedef struct oom_in {                               /* what the verdict is computed from */
    size_t avail, headroom;
    bool cap_limits;                                  /* the cap alone said no */
} oom_in_t;

static _Thread_local uint64_t pending_id;             /* allocator whose report awaits delivery */
static _Thread_local cca_oom_report_t pending;

/* cudaMemGetInfo on the allocator's device, leaving the caller's device and
 * the runtime's last-error slot as they were. */
static bool device_info(cca_allocator_t *a, size_t *free_b, size_t *total)
{
    dev_guard_t g;
    cudaError_t e = _cca_device_enter(a, &g);
    if (e == cudaSuccess) e = cudaMemGetInfo(free_b, total);
    _cca_device_leave(&g);
    if (e != cudaSuccess) _cca_clear_error();
    return e == cudaSuccess;
}

/* Largest request a free block of this stream would serve now. */
static size_t cached_fit(cca_allocator_t *a, cudaStream_t stream)
{
    uint64_t key = _cca_stream_key(a->cfg.device, stream);
    for (cca_stream_t *st = a->streams; st; st = st->next) {
        if (st->key != key) continue;
        cca_block_t *s = _cca_bins_largest(st->free[CCA_PSMALL]), *l = _cca_bins_largest(st->free[CCA_PLARGE]);
        size_t fit = s ? (s->size < CCA_SMALL_SIZE ? s->size : CCA_SMALL_SIZE) : 0;
        return l && l->size > fit ? l->size : fit;
    }
    return 0;
}

/* With release_before_grow or segment_growth_percent the core falls back,
 * before it gives up, to the smallest segment: the request rounded up to 2 MiB. */
static bool falls_back(const cca_allocator_t *a)
{
    return a->cfg.release_before_grow || a->cfg.segment_growth_percent;
}

/* Largest request whose new segment fits in avail bytes. */
static size_t segment_fit(const cca_allocator_t *a, size_t avail)
{
    size_t big = avail / CCA_ROUND_LARGE * CCA_ROUND_LARGE;
    if (big >= CCA_MIN_LARGE_ALLOC || (big > CCA_SMALL_SIZE && falls_back(a)))
        return big;                                   /* such a request gets a segment of its own size */
    return avail >= CCA_SMALL_BUFFER ? CCA_SMALL_SIZE : 0;
}

static void fill_figures(cca_allocator_t *a, const cca_oom_ctx_t *ctx, cca_oom_report_t *r)
{
    const cca_stats_t *s = &a->stats;
    r->device = a->cfg.device;
    r->pool = ctx->pool;
    r->stream = ctx->stream;
    r->requested = ctx->requested;
    r->rounded = ctx->rounded;
    r->segment_size = ctx->alloc_size;             /* the smallest segment the core tried */
    bool info = device_info(a, &r->device_free, &r->device_total);
    if (!info) r->device_total = a->device_total;
    r->cap = a->cap == SIZE_MAX ? 0 : a->cap;
    r->reserved = (size_t)s->reserved_bytes[CCA_POOL_ALL].current;
    r->allocated = (size_t)s->allocated_bytes[CCA_POOL_ALL].current;
    r->free_cached = r->reserved - (size_t)s->active_bytes[CCA_POOL_ALL].current;
    r->largest_free = _cca_largest_free_locked(a);
    r->reserved_before = ctx->reserved_before;
    r->allocated_before = ctx->allocated_before;
    r->free_cached_before = ctx->free_cached_before;
    r->largest_free_before = ctx->largest_free_before;
    size_t used = r->device_total - r->device_free;
    r->external = info && used > r->reserved ? used - r->reserved : 0;
    r->cap_refused = ctx->cap_refused;
    r->device_refused = ctx->device_refused;
}

static oom_in_t verdict_inputs(const cca_oom_report_t *r)
{
    oom_in_t in = { .avail = r->device_free };
    if (r->cap) {
        size_t room = r->cap > r->reserved ? r->cap - r->reserved : 0;
        if (room < in.avail) in.avail = room;
    }
    in.headroom = in.avail + r->free_cached;
    in.cap_limits = r->cap_refused && !r->device_refused && r->device_free >= r->segment_size;
    return in;
}

static void decide(cca_oom_report_t *r, const oom_in_t *in)
{
    bool device_limits = r->device_free < r->segment_size;
    if (in->cap_limits) {
        r->verdict = CCA_OOM_CAP;
        r->shortfall = r->reserved + r->segment_size - r->cap;
    } else if (in->headroom >= r->rounded) {
        r->verdict = CCA_OOM_FRAGMENTED;
        r->shortfall = 0;
    } else if (device_limits && r->external > r->reserved &&
               r->device_free + r->external >= r->segment_size) {
        r->verdict = CCA_OOM_EXTERNAL;
        r->shortfall = r->segment_size - r->device_free;
    } else {
        r->verdict = CCA_OOM_EXHAUSTED;
        r->shortfall = r->rounded - in->headroom;
    }
}

static void advise(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void advise(char *buf, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, len, fmt, ap);
    va_end(ap);
}

static void advise_fragmented(const cca_allocator_t *a, cca_oom_report_t *r, const oom_in_t *in)
{
    char b1[32], b2[32], b3[32], b4[32];
    size_t adv = sizeof r->advice;
    if (r->device_free >= r->rounded && in->avail < r->segment_size) {
        advise(r->advice, adv, "a request of %s takes a new %s segment but only %s can be added: "
               "the largest request that fits now is %s", _cca_fmt_bytes(r->rounded, b1),
               _cca_fmt_bytes(r->segment_size, b2), _cca_fmt_bytes(in->avail, b3), _cca_fmt_bytes(r->largest_fit, b4));
        return;
    }
    char hint[96] = "free the allocations between free blocks, or allocate long-lived buffers first";
    size_t mib = r->rounded >> 20;
    if (a->cfg.max_split_size == SIZE_MAX && mib > CCA_LARGE_BUFFER >> 20)
        snprintf(hint, sizeof hint, "set max_split_size_mb:%zu so that blocks this large stay whole", mib);
    advise(r->advice, adv, "%s were cached free but the largest block was %s: the largest request that fits now is %s; %s",
           _cca_fmt_bytes(r->free_cached_before, b1), _cca_fmt_bytes(r->largest_free_before, b2),
           _cca_fmt_bytes(r->largest_fit, b3), hint);
}

static void advise_other(cca_oom_report_t *r)
{
    char b1[32], b2[32], b3[32], b4[32];
    size_t adv = sizeof r->advice;
    size_t limit = r->cap && r->cap < r->device_total ? r->cap : r->device_total;
    switch (r->verdict) {
    case CCA_OOM_CAP:
        advise(r->advice, adv, "raise the cap by at least %s to %s (memory_limit_mb:%zu), the device has %s free; "
               "the largest request that fits under the cap now is %s", _cca_fmt_bytes(r->shortfall, b1),
               _cca_fmt_bytes(r->reserved + r->segment_size, b2), (r->reserved + r->segment_size + (1u << 20) - 1) >> 20,
               _cca_fmt_bytes(r->device_free, b3), _cca_fmt_bytes(r->largest_fit, b4));
        break;
    case CCA_OOM_EXTERNAL:
        advise(r->advice, adv, "%s of the device is held outside cca (another process or library): free at least %s "
               "of it for the new %s segment; the largest request that fits now is %s", _cca_fmt_bytes(r->external, b1),
               _cca_fmt_bytes(r->shortfall, b2), _cca_fmt_bytes(r->segment_size, b3), _cca_fmt_bytes(r->largest_fit, b4));
        break;
    default:
        if (r->segment_size > limit)
            advise(r->advice, adv, "the request needs a %s segment, more than the %s %s: split it or lower the batch size",
                   _cca_fmt_bytes(r->segment_size, b1), r->cap && r->cap < r->device_total ? "cap of" : "device's total",
                   _cca_fmt_bytes(limit, b2));
        else
            advise(r->advice, adv, "free at least %s of live allocations or lower the batch size; "
                   "the largest request that fits now is %s", _cca_fmt_bytes(r->shortfall, b1),
                   _cca_fmt_bytes(r->largest_fit, b2));
        break;
    }
}

static void judge(cca_allocator_t *a, cca_oom_report_t *r, const cca_oom_ctx_t *ctx)
{
    oom_in_t in = verdict_inputs(r);
    decide(r, &in);
    size_t seg = segment_fit(a, in.avail), cached = cached_fit(a, ctx->stream);
    r->largest_fit = seg > cached ? seg : cached;
    if (r->verdict == CCA_OOM_FRAGMENTED) advise_fragmented(a, r, &in);
    else advise_other(r);
}

/* Called by the core under the lock, after release-and-retry failed. */
void _cca_oom_report(cca_allocator_t *a, const cca_oom_ctx_t *ctx)
{
    cca_oom_report_t r = { 0 };
    fill_figures(a, ctx, &r);
    judge(a, &r, ctx);
    if (!a->last_oom) a->last_oom = calloc(1, sizeof *a->last_oom);   /* kept if host memory allows */
    if (a->last_oom) {
        r.seq = a->last_oom->seq + 1;
        *a->last_oom = r;
    }
    if (a->oom_cb) {                                  /* delivered by _cca_oom_deliver after unlocking */
        pending_id = a->id;
        pending = r;
    }
}

void _cca_oom_deliver(cca_allocator_t *a)
{
    if (pending_id != a->id) return;
    pending_id = 0;
    cca_oom_report_t r = pending;                     /* the callback may fail again and refill `pending` */
    _cca_lock_all(a);
    cca_oom_fn fn = a->oom_cb;
    void *arg = a->oom_cb_arg;
    size_t size = a->oom_cb_size;
    _cca_unlock_all(a, NULL);
    if (!fn) return;
    if (size <= sizeof r) {
        fn(&r, arg);
        return;
    }
    void *buf = calloc(1, size);                      /* a newer caller's struct: zeros past ours */
    if (!buf) return;
    memcpy(buf, &r, sizeof r);
    fn(buf, arg);
    free(buf);
}

void _cca_oom_destroy(cca_allocator_t *a)
{
    free(a->last_oom);
    a->last_oom = NULL;
}

cca_status_t cca_set_oom_callback_sized(cca_allocator_t *a, cca_oom_fn fn, void *arg, size_t report_size)
{
    if (!a) return _cca_fail(CCA_ERROR_INVALID_ARGUMENT, "cca_set_oom_callback: allocator is NULL");
    if (report_size < CCA_V1_OOM)
        return _cca_fail(CCA_ERROR_INVALID_ARGUMENT, "cca_set_oom_callback: %zu bytes is no cca_oom_report_t", report_size);
    _cca_lock_all(a);
    a->oom_cb = fn;
    a->oom_cb_arg = arg;
    a->oom_cb_size = report_size;
    _cca_unlock_all(a, NULL);
    return CCA_OK;
}

cca_status_t (cca_set_oom_callback)(cca_allocator_t *a, cca_oom_fn fn, void *arg)
{
    return cca_set_oom_callback_sized(a, fn, arg, CCA_V1_OOM);
}

cca_status_t cca_last_oom_report_sized(cca_allocator_t *a, cca_oom_report_t *out, size_t out_size)
{
    if (!a || !out) return _cca_fail(CCA_ERROR_INVALID_ARGUMENT, "cca_last_oom_report: %s is NULL", a ? "out" : "allocator");
    if (out_size < CCA_V1_OOM)
        return _cca_fail(CCA_ERROR_INVALID_ARGUMENT, "cca_last_oom_report: %zu bytes is no cca_oom_report_t", out_size);
    cca_oom_report_t r;
    _cca_lock_all(a);
    if (a->last_oom) r = *a->last_oom;
    else r = (cca_oom_report_t){ .verdict = CCA_OOM_NONE, .device = a->cfg.device };
    _cca_unlock_all(a, NULL);
    _cca_copy_out(out, out_size, &r, sizeof r);
    return CCA_OK;
}

cca_status_t (cca_last_oom_report)(cca_allocator_t *a, cca_oom_report_t *out)
{
    return cca_last_oom_report_sized(a, out, CCA_V1_OOM);
}

const char *cca_oom_verdict_string(cca_oom_verdict_t v)
{
    switch (v) {
    case CCA_OOM_NONE: return "none";
    case CCA_OOM_EXHAUSTED: return "exhausted";
    case CCA_OOM_FRAGMENTED: return "fragmented";
    case CCA_OOM_CAP: return "cap";
    case CCA_OOM_EXTERNAL: return "external";
    }
    return "unknown";
}

/* oom.c - the out-of-memory report: the figures as the request found them
 * and after release-and-retry, a verdict, and one line of advice. Filled
 * under the lock by the failing request, kept as the allocator's last
 * report, and handed to its callback after the lock is released. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "stats_internal.h"

/* The verdict is a pure function of the report's figures (cca_oom_judge;
 * its rules are written once, in cca.h above cca_oom_report_t). The core fills the
 * figures (allocator/oomfig.c); this file judges, keeps the last report and
 * hands it to the callback. */

static _Thread_local uint64_t pending_id;             /* allocator whose report awaits delivery */
static _Thread_local cca_oom_report_t pending;

static size_t oom_min_z(size_t x, size_t y) { return x < y ? x : y; }
static size_t oom_max_z(size_t x, size_t y) { return x > y ? x : y; }

static void oom_plan(cca_oom_report_t *r)
{
    size_t S = r->segment_size, T = r->device_total, D = r->device_free, R = r->reserved;
    size_t F = oom_min_z(r->free_cached, R), A = R - F, E = r->external, C = r->cap;
    size_t own = F - oom_min_z(r->free_cached_other, F);   /* the request's own stream's */
    r->need_cap = r->need_external = r->need_cached = r->need_live = r->need_stranded = 0;
    if (S > T) {                                      /* no change makes it fit */
        r->verdict = CCA_OOM_EXHAUSTED;
        r->shortfall = S - T;
        return;
    }
    size_t cap_need = C && R + S > C ? R + S - C : 0, dev_need = S > D ? S - D : 0;
    size_t need = oom_max_z(cap_need, dev_need);
    if (cap_need && !dev_need) {                      /* raising the cap alone */
        r->verdict = CCA_OOM_CAP;
        r->shortfall = r->need_cap = cap_need;
    } else if (!cap_need && dev_need && dev_need <= E) {   /* freeing memory outside cca alone */
        r->verdict = CCA_OOM_EXTERNAL;
        r->shortfall = r->need_external = dev_need;
    } else if (need <= F && need > own) {             /* cca's free bytes, were they on this stream */
        r->verdict = CCA_OOM_STRANDED;
        r->need_cached = need;
        r->shortfall = r->need_stranded = need - own;
    } else if (need <= F) {                           /* cca's free bytes, were they in one piece */
        r->verdict = CCA_OOM_FRAGMENTED;
        r->need_cached = need;
        r->shortfall = 0;
    } else if (need <= A) {                           /* freeing live allocations alone */
        r->verdict = CCA_OOM_EXHAUSTED;
        r->shortfall = r->need_live = need;
    } else {                                          /* several: cca's own bytes first */
        r->need_cached = F;
        r->need_stranded = F - own;
        r->need_live = oom_min_z(A, need - F);
        size_t freed = r->need_cached + r->need_live;
        r->need_external = dev_need > freed ? oom_min_z(E, dev_need - freed) : 0;
        r->need_cap = cap_need > freed ? cap_need - freed : 0;
        r->verdict = r->need_cap ? CCA_OOM_CAP : r->need_external ? CCA_OOM_EXTERNAL
                   : r->need_stranded ? CCA_OOM_STRANDED : r->need_cached ? CCA_OOM_FRAGMENTED : CCA_OOM_EXHAUSTED;
        r->shortfall = r->verdict == CCA_OOM_CAP ? r->need_cap : r->verdict == CCA_OOM_EXTERNAL ? r->need_external
                     : r->verdict == CCA_OOM_STRANDED ? r->need_stranded
                     : r->verdict == CCA_OOM_FRAGMENTED ? 0 : r->need_live;
    }
}

typedef struct text { char *buf; size_t len, at; } text_t;

static void oom_put(text_t *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void oom_put(text_t *t, const char *fmt, ...)
{
    if (t->at >= t->len) return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(t->buf + t->at, t->len - t->at, fmt, ap);
    va_end(ap);
    if (n > 0) t->at += (size_t)n;
}

/* One line, at most 320 bytes with every part present: what the request
 * needs, each needed change with its bytes, the largest request that fits. */
/* cfg: the allocator's configuration (which cap setting binds, the split
 * limit), or NULL for a report judged on its own. */
static void oom_advise(cca_oom_report_t *r, const cca_config_t *cfg)
{
    size_t max_split = cfg ? cfg->max_split_size : SIZE_MAX;
    char b[4][32];
    text_t t = { r->advice, sizeof r->advice, 0 };
    r->advice[0] = 0;
    bool grows = cfg && cfg->expandable_segments;    /* segment_size: what a growth maps, not a new segment */
    if (r->segment_size > r->device_total) {
        oom_put(&t, grows ? "the request needs %s mapped, more than the device's total %s: split it or lower the batch size"
                          : "the request needs a %s segment, more than the device's total %s: split it or lower the batch size",
            _cca_emit_bytes(r->segment_size, b[0]), _cca_emit_bytes(r->device_total, b[1]));
        return;
    }
    oom_put(&t, grows ? "needs %s more mapped, %s free on the device" : "needs a new %s segment, %s free on the device",
        _cca_emit_bytes(r->segment_size, b[0]), _cca_emit_bytes(r->device_free, b[1]));
    if (r->cap) oom_put(&t, ", %s under the cap", _cca_emit_bytes(r->cap > r->reserved ? r->cap - r->reserved : 0, b[0]));
    const char *sep = ": ";
    if (r->need_cap) {
        size_t to = r->cap + r->need_cap;
        bool by_fraction = cfg && cfg->memory_fraction > 0.0 && r->device_total &&
                           (!cfg->memory_limit || cfg->memory_limit > r->cap);   /* the fraction is the smaller cap */
        if (by_fraction)
            oom_put(&t, "%sraise the cap by %s (memory_fraction:%.4g%s)", sep, _cca_emit_bytes(r->need_cap, b[0]),
                (double)to / (double)r->device_total + 0.00005, to > r->device_total ? ", more than the device" : "");
        else
            oom_put(&t, "%sraise the cap by %s (memory_limit_mb:%zu)", sep, _cca_emit_bytes(r->need_cap, b[0]),
                (to + ((size_t)1 << 20) - 1) >> 20);
        sep = "; ";
    }
    if (r->need_external) {
        oom_put(&t, "%sfree %s of the %s held outside cca", sep, _cca_emit_bytes(r->need_external, b[0]),
            _cca_emit_bytes(r->external, b[1]));
        sep = "; ";
    }
    if (r->need_cached) {
        oom_put(&t, "%s%s cached free, largest block %s", sep, _cca_emit_bytes(r->free_cached, b[0]),
            _cca_emit_bytes(r->largest_free, b[1]));
        sep = "; ";
    }
    if (r->need_stranded) {
        oom_put(&t, "%s%s of it cached on other streams, unusable on this one: free their blocks or use fewer streams",
            sep, _cca_emit_bytes(r->free_cached_other, b[0]));
    }
    if (r->need_live) {
        oom_put(&t, "%sfree %s of live allocations or lower the batch size", sep, _cca_emit_bytes(r->need_live, b[0]));
        sep = "; ";
    }
    if (!r->need_cap && !r->need_external && !r->need_cached && !r->need_live)
        oom_put(&t, ", yet the device refused it: its free memory is in pieces");
    oom_put(&t, "; largest request that fits now: %s", _cca_emit_bytes(r->largest_fit, b[0]));
    if (r->expandable_fits) {
        oom_put(&t, "; expandable_segments:True would fit it");   /* it maps only the request's own 2 MiB pages */
        if (r->free_pages) oom_put(&t, " (%s free in whole 2 MiB pages)", _cca_emit_bytes(r->free_pages, b[0]));
    }
    if (r->verdict != CCA_OOM_FRAGMENTED || !r->need_cached) return;
    if (max_split == SIZE_MAX && r->rounded > CCA_LARGE_BUFFER)
        oom_put(&t, "; max_split_size_mb:%zu keeps blocks this large whole", r->rounded >> 20);
    else if (!r->need_live)
        oom_put(&t, "; free the allocations between free blocks, or allocate long-lived buffers first");
}

void cca_oom_judge_sized(cca_oom_report_t *r, size_t r_size)
{
    if (!r || r_size < CCA_V1_OOM) return;
    cca_oom_report_t mine = { 0 };
    memcpy(&mine, r, r_size < sizeof mine ? r_size : sizeof mine);
    oom_plan(&mine);
    oom_advise(&mine, NULL);
    memcpy(r, &mine, r_size < sizeof mine ? r_size : sizeof mine);   /* the caller's unknown tail stays */
}

/* The core's news, all locked, after release-and-retry failed: the
 * figures in *r (allocator/oomfig.c) are judged, advised on and kept. */
void _cca_oom_keep(cca_view_t *v, cca_oom_report_t *r)
{
    cca_acct_t *acct = v->acct;
    oom_plan(r);
    oom_advise(r, v->cfg);
    if (!acct->last_oom) acct->last_oom = calloc(1, sizeof *acct->last_oom);   /* kept if host memory allows */
    if (acct->last_oom) {
        r->seq = acct->last_oom->seq + 1;
        *acct->last_oom = *r;
    }
    _cca_errors_thread_oom_set(r);
    char text[1024];
    if (cca_oom_report_format_sized(r, sizeof *r, text, sizeof text) > 0) {
        size_t n = strlen(text);
        while (n && text[n - 1] == '\n') text[--n] = 0;
        _cca_errors_append(text);                      /* for callers that only see a NULL */
    }
    if (acct->oom_cb || acct->oom_notices) {          /* delivered by _cca_oom_deliver after unlocking */
        pending_id = v->id;
        pending = *r;
    }
}

typedef struct callback { cca_oom_fn fn; void *arg; size_t size; bool notice; int device; } callback_t;

static cca_status_t oom_callback_view(cca_view_t *v, void *arg)
{
    *(callback_t *)arg = (callback_t){ v->acct->oom_cb, v->acct->oom_cb_arg, v->acct->oom_cb_size,
                                       v->acct->oom_notices, v->device };
    return CCA_OK;
}

void _cca_oom_deliver(cca_allocator_t *a)
{
    uint64_t id = cca_allocator_id(a);
    if (pending_id != id) return;
    pending_id = 0;
    cca_oom_report_t r = pending;                     /* the callback may fail again and refill `pending` */
    callback_t cb;
    _cca_view(a, oom_callback_view, &cb);
    cca_oom_fn fn = cb.fn;
    void *arg = cb.arg;
    size_t size = cb.size;
    if (cb.notice) _cca_notice_oom(cb.device, id, r.seq);   /* the report's seq: cca_last_oom_report */
    if (!fn) return;
    cca_oom_report_t mine = *_cca_errors_thread_oom();       /* the callback's own failures must not replace it */
    if (size < sizeof r) {                            /* an older caller's struct */
        cca_oom_report_t older = { 0 };
        _cca_oom_copy_out(&older, size, &r);
        fn(&older, arg);
    } else if (size == sizeof r) {
        fn(&r, arg);
    } else {
        void *buf = calloc(1, size);                  /* a newer caller's struct: zeros past ours */
        if (buf) {
            memcpy(buf, &r, sizeof r);
            fn(buf, arg);
            free(buf);
        }
    }
    _cca_errors_thread_oom_set(&mine);
}

void _cca_oom_destroy(cca_acct_t *acct)
{
    free(acct->last_oom);
    acct->last_oom = NULL;
}

static cca_status_t oom_set_callback_view(cca_view_t *v, void *arg)
{
    const callback_t *cb = arg;
    v->acct->oom_cb = cb->fn;
    v->acct->oom_cb_arg = cb->arg;
    v->acct->oom_cb_size = cb->size;
    return CCA_OK;
}

static cca_status_t oom_notices_view(cca_view_t *v, void *arg)
{
    v->acct->oom_notices = *(int *)arg != 0;
    return CCA_OK;
}

cca_status_t cca_oom_notices(cca_allocator_t *a, int on)
{
    if (!a) return _cca_errors_fail(CCA_ERROR_INVALID_ARGUMENT, "cca_oom_notices: allocator is NULL");
    return _cca_view(a, oom_notices_view, &on);
}

cca_status_t cca_set_oom_callback_sized(cca_allocator_t *a, cca_oom_fn fn, void *arg, size_t report_size)
{
    if (!a) return _cca_errors_fail(CCA_ERROR_INVALID_ARGUMENT, "cca_set_oom_callback: allocator is NULL");
    if (report_size < CCA_V1_OOM)
        return _cca_errors_fail(CCA_ERROR_INVALID_ARGUMENT, "cca_set_oom_callback: %zu bytes is no cca_oom_report_t", report_size);
    callback_t cb = { fn, arg, report_size, false, 0 };
    return _cca_view(a, oom_set_callback_view, &cb);
}

static cca_status_t oom_last_view(cca_view_t *v, void *arg)
{
    cca_oom_report_t *r = arg;
    if (v->acct->last_oom) *r = *v->acct->last_oom;
    else *r = (cca_oom_report_t){ .verdict = CCA_OOM_NONE, .device = v->device };
    return CCA_OK;
}

cca_status_t cca_last_oom_report_sized(cca_allocator_t *a, cca_oom_report_t *out, size_t out_size)
{
    if (!a || !out) return _cca_errors_fail(CCA_ERROR_INVALID_ARGUMENT, "cca_last_oom_report: %s is NULL", a ? "out" : "allocator");
    if (out_size < CCA_V1_OOM)
        return _cca_errors_fail(CCA_ERROR_INVALID_ARGUMENT, "cca_last_oom_report: %zu bytes is no cca_oom_report_t", out_size);
    cca_oom_report_t r;
    _cca_view(a, oom_last_view, &r);
    _cca_oom_copy_out(out, out_size, &r);
    return CCA_OK;
}

const char *cca_oom_verdict_string(cca_oom_verdict_t v)
{
    switch (v) {
    case CCA_OOM_NONE: return "none";
    case CCA_OOM_EXHAUSTED: return "exhausted";
    case CCA_OOM_FRAGMENTED: return "fragmented";
    case CCA_OOM_CAP: return "cap";
    case CCA_OOM_EXTERNAL: return "external";
    case CCA_OOM_STRANDED: return "stranded";
    }
    return "unknown";
}

cca_status_t cca_thread_last_oom_report_sized(cca_oom_report_t *out, size_t out_size)
{
    if (!out) return _cca_errors_fail(CCA_ERROR_INVALID_ARGUMENT, "cca_thread_last_oom_report: out is NULL");
    if (out_size < CCA_V1_OOM)
        return _cca_errors_fail(CCA_ERROR_INVALID_ARGUMENT, "cca_thread_last_oom_report: %zu bytes is no cca_oom_report_t",
                                out_size);
    _cca_oom_copy_out(out, out_size, _cca_errors_thread_oom());
    return CCA_OK;
}

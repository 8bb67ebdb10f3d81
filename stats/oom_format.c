/* oom_format.c - the OOM report as text: a headline with the verdict, the
 * figures, and the advice - three lines, sizes in human units - and, once
 * anything was ever tagged, a line of the top holders by tag; when the
 * verdict counts on other streams' cached bytes, a line naming them. */
#include <stdarg.h>
#include <stdio.h>
#include "stats_internal.h"

typedef struct out { char *buf; size_t len, total; } out_t;

static void oom_format_add(out_t *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void oom_format_add(out_t *o, const char *fmt, ...)
{
    size_t at = o->total < o->len ? o->total : o->len;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(o->buf ? o->buf + at : NULL, o->buf ? o->len - at : 0, fmt, ap);
    va_end(ap);
    if (n > 0) o->total += (size_t)n;
}

static size_t oom_format_format(const cca_oom_report_t *r, char *buf, size_t len);

size_t cca_oom_report_format_sized(const cca_oom_report_t *r, size_t r_size, char *buf, size_t len)
{
    if (!r || r_size < CCA_V1_OOM) {
        if (buf && len) buf[0] = '\0';
        return 0;
    }
    if (r_size >= sizeof *r) return oom_format_format(r, buf, len);
    cca_oom_report_t mine = { 0 };                    /* an older caller's struct: what it has */
    memcpy(&mine, r, r_size);
    return oom_format_format(&mine, buf, len);
}

static size_t oom_format_format(const cca_oom_report_t *r, char *buf, size_t len)
{
    out_t o = { buf, buf ? len : 0, 0 };
    if (o.len) o.buf[0] = '\0';
    char b[8][32];
    if (r->verdict == CCA_OOM_NONE) {
        oom_format_add(&o, "cca: no out-of-memory on device %d\n", r->device);
        return o.total;
    }
    oom_format_add(&o, "cca: out of memory on device %d: %s requested (%s rounded, %s pool, stream %#lx): %s\n", r->device,
        _cca_emit_bytes(r->requested, b[0]), _cca_emit_bytes(r->rounded, b[1]),
        r->pool == CCA_POOL_SMALL ? "small" : "large", (unsigned long)(uintptr_t)r->stream,
        cca_oom_verdict_string(r->verdict));
    oom_format_add(&o, "device %s total, %s free, %s outside cca; cap %s; reserved %s, allocated %s; "
            "at the request %s cached free, largest free block %s\n",
        _cca_emit_bytes(r->device_total, b[0]), _cca_emit_bytes(r->device_free, b[1]),
        _cca_emit_bytes(r->external, b[2]), r->cap ? _cca_emit_bytes(r->cap, b[3]) : "none",
        _cca_emit_bytes(r->reserved, b[4]), _cca_emit_bytes(r->allocated, b[5]),
        _cca_emit_bytes(r->free_cached_before, b[6]), _cca_emit_bytes(r->largest_free_before, b[7]));
    oom_format_add(&o, "advice: %s\n", r->advice);
    if (r->n_holders > 0) {                           /* only once something was ever tagged */
        oom_format_add(&o, "held by tag:");
        for (int k = 0; k < r->n_holders && k < CCA_OOM_HOLDERS; k++) {
            const char *name = cca_tag_name(r->holder_tags[k]);
            oom_format_add(&o, "%s %s %s", k ? "," : "", name ? name : "(untagged)", _cca_emit_bytes(r->holder_bytes[k], b[0]));
        }
        oom_format_add(&o, "\n");
    }
    if (r->need_stranded && r->n_stranded > 0) {     /* stranded: which streams cache the bytes */
        oom_format_add(&o, "cached on other streams:");
        for (int k = 0; k < r->n_stranded && k < CCA_OOM_HOLDERS; k++)
            oom_format_add(&o, "%s stream %#lx %s", k ? "," : "", (unsigned long)(uintptr_t)r->stranded_streams[k],
                _cca_emit_bytes(r->stranded_bytes[k], b[0]));
        oom_format_add(&o, "\n");
    }
    return o.total;
}

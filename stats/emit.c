/* emit.c - the one text emitter behind the summary and the JSON snapshot:
 * printf-style pieces buffered and handed to the caller's write callback,
 * and sizes in human units. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include "stats_internal.h"

void _cca_emit_init(cca_emit_t *e, cca_write_fn write, void *arg)
{
    e->write = write;
    e->arg = arg;
    e->len = 0;
    e->failed = false;
}

static void emit_put(cca_emit_t *e, const char *data, size_t n)
{
    if (!e->failed && n && e->write(data, n, e->arg) != n) e->failed = true;
}

static void emit_flush(cca_emit_t *e)
{
    emit_put(e, e->buf, e->len);
    e->len = 0;
}

void _cca_emit(cca_emit_t *e, const char *fmt, ...)
{
    if (e->failed) return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(e->buf + e->len, sizeof e->buf - e->len, fmt, ap);
    va_end(ap);
    if (n < 0) { e->failed = true; return; }
    if ((size_t)n < sizeof e->buf - e->len) { e->len += (size_t)n; return; }
    emit_flush(e);                                         /* did not fit: flush, then retry */
    char *big = (size_t)n < sizeof e->buf ? e->buf : malloc((size_t)n + 1);
    if (!big) { e->failed = true; return; }
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    if (big == e->buf) { e->len = (size_t)n; return; }
    emit_put(e, big, (size_t)n);
    free(big);
}

bool _cca_emit_finish(cca_emit_t *e)
{
    emit_flush(e);
    return !e->failed;
}

const char *_cca_emit_bytes(size_t bytes, char out[32])
{
    static const char *units[] = { "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
    if (bytes < 1024) {
        snprintf(out, 32, "%zu B", bytes);
        return out;
    }
    double v = (double)bytes / 1024.0;
    int u = 0;
    while (v >= 1023.995 && u < 5) { v /= 1024.0; u++; }   /* never "1024.00 KiB" */
    snprintf(out, 32, "%.2f %s", v, units[u]);
    return out;
}

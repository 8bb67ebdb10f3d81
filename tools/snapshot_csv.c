/* snapshot_csv.c - a PyTorch memory snapshot (pickle.h loads it) as one
 * trace CSV per device, in the layout of ../shared/traces.
 *
 * The layout torch writes (torch/csrc/cuda/Module.cpp, memory_snapshot.cpp,
 * torch/cuda/memory.py `_snapshot`): a dict with `segments` (dicts with
 * device, address, stream, blocks: dicts with size, requested_size, state,
 * address) and `device_traces` (one list per device of dicts with action,
 * addr, size, stream, time_us). c10/cuda/CUDACachingAllocator.cpp records
 * `alloc` with the requested size (orig_size), `free_requested` with the
 * block's requested_size, and `oom` with the rounded size that failed and
 * `device_free` in place of `addr`. Older layouts lack time_us, block
 * addresses (blocks then lie back to back from the segment's address) and
 * requested_size (the viewer, torch/cuda/_memory_viz.py, then takes
 * history[0].real_size, else size).
 *
 * Rows, per device:
 *   alloc -> allocate; free_requested -> free (free_completed, segment_*,
 *   snapshot and the rest are skipped); oom -> allocate failure, (nil).
 * Preexisting blocks, written first at time 0 in address order:
 *   (a) a pointer the trace frees before it ever allocates it (size and
 *       stream from that free);
 *   (b) an active_allocated or active_pending_free block of the device's
 *       segments at an address the trace never allocates or frees (size:
 *       requested_size, else history[0].real_size, else size; the
 *       segment's stream). A block the trace touched and left freed is
 *       either waiting on its own pending free or disagrees with the trace:
 *       a time-0 allocation there would collide with the trace's own rows.
 * Malformed traces (torch's ring buffer, trace_alloc_max_entries, drops the
 * oldest entries): an alloc at a live pointer first frees the old block
 * there (a free row at the alloc's time, with the old size); a second free
 * of a pointer the trace already freed is dropped. */
#include "snapshot_csv.h"

#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pickle.h"
#include "segmap.h"

/* ---- an address map ------------------------------------------------------ */

enum { SLOT_EMPTY, SLOT_LIVE, SLOT_FREED };

typedef struct slot_s {
    uint64_t key;
    int64_t size, stream;                /* of the live block; for streams: size is the number */
    uint8_t state;
} slot_t;

typedef struct amap_s { slot_t *s; size_t len, cap; } amap_t;

static uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    return x ^ (x >> 33);
}

static slot_t *amap_find(const amap_t *m, uint64_t key)
{
    if (!m->cap)
        return NULL;
    for (size_t j = mix(key) & (m->cap - 1);; j = (j + 1) & (m->cap - 1)) {
        if (m->s[j].state == SLOT_EMPTY)
            return NULL;
        if (m->s[j].key == key)
            return &m->s[j];
    }
}

/* The slot for key, made in state SLOT_FREED when absent (the caller sets
 * its state); NULL when out of memory. */
static slot_t *amap_add(amap_t *m, uint64_t key)
{
    if ((m->len + 1) * 2 > m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 64;
        slot_t *s = calloc(cap, sizeof *s);
        if (!s)
            return NULL;
        for (size_t i = 0; i < m->cap; i++) {
            if (m->s[i].state == SLOT_EMPTY)
                continue;
            size_t j = mix(m->s[i].key) & (cap - 1);
            while (s[j].state != SLOT_EMPTY)
                j = (j + 1) & (cap - 1);
            s[j] = m->s[i];
        }
        free(m->s);
        m->s = s;
        m->cap = cap;
    }
    size_t j = mix(key) & (m->cap - 1);
    while (m->s[j].state != SLOT_EMPTY && m->s[j].key != key)
        j = (j + 1) & (m->cap - 1);
    if (m->s[j].state == SLOT_EMPTY) {
        m->len++;
        m->s[j].key = key;
        m->s[j].state = SLOT_FREED;
    }
    return &m->s[j];
}

/* ---- rows ---------------------------------------------------------------- */

enum { ROW_ALLOC, ROW_FREE, ROW_OOM };

typedef struct row_s {
    uint64_t time_us, addr;
    int64_t size, stream;
    int action;
} row_t;

typedef struct rows_s { row_t *r; size_t n, cap; } rows_t;

static int rows_push(rows_t *v, row_t r)
{
    if (v->n == v->cap) {
        size_t cap = v->cap ? v->cap * 2 : 1024;
        row_t *g = realloc(v->r, cap * sizeof *g);
        if (!g)
            return -1;
        v->r = g;
        v->cap = cap;
    }
    v->r[v->n++] = r;
    return 0;
}

static int by_addr(const void *a, const void *b)
{
    uint64_t x = ((const row_t *)a)->addr, y = ((const row_t *)b)->addr;
    return (x > y) - (x < y);
}

/* ---- errors -------------------------------------------------------------- */

typedef struct conv_s {
    const pk_value_t *segments, *traces;
    char *err;
    size_t errlen;
} conv_t;

__attribute__((format(printf, 2, 3))) static int fail(conv_t *c, const char *fmt, ...)
{
    if (c->err && c->errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(c->err, c->errlen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

/* A field that must be a non-negative int: 0, or -1 with the error set;
 * where (printf'd into the message) names the dict. */
static int get_u64(conv_t *c, const pk_value_t *d, const char *key, uint64_t *out, const char *where)
{
    int64_t v;
    const pk_value_t *f = pk_dict_get(d, key);
    if (!f)
        return fail(c, "not a PyTorch memory snapshot: %s has no '%s'", where, key);
    if (pk_int(f, &v))
        return fail(c, "not a PyTorch memory snapshot: %s '%s' is a %s, not an int", where, key,
                    pk_kind_name(pk_kind(f)));
    if (v < 0)
        return fail(c, "not a PyTorch memory snapshot: %s '%s' is negative (%lld)", where, key, (long long)v);
    *out = (uint64_t)v;
    return 0;
}

static int get_i64(conv_t *c, const pk_value_t *d, const char *key, int64_t *out, const char *where)
{
    const pk_value_t *f = pk_dict_get(d, key);
    if (!f)
        return fail(c, "not a PyTorch memory snapshot: %s has no '%s'", where, key);
    if (pk_int(f, out))
        return fail(c, "not a PyTorch memory snapshot: %s '%s' is a %s, not an int", where, key,
                    pk_kind_name(pk_kind(f)));
    return 0;
}

/* ---- one device ---------------------------------------------------------- */

typedef struct devrows_s {
    int device;
    rows_t rows, pre;
    amap_t seen;                         /* every address the trace or the preexisting rows name */
    bool timed;
} devrows_t;

/* Microseconds since the trace's first entry: from time_us where the first
 * entry has it, else the entry's index; never before the previous entry. */
static int entry_time(conv_t *c, devrows_t *d, const pk_value_t *e, size_t i, int64_t *t0, uint64_t *prev,
                      const char *where)
{
    const pk_value_t *tv = pk_dict_get(e, "time_us");
    int64_t t = 0;
    if (tv && pk_int(tv, &t)) {
        double f;
        if (pk_float(tv, &f) || !(f > -9.2e18 && f < 9.2e18))
            return fail(c, "not a PyTorch memory snapshot: %s 'time_us' is a %s, not a number", where,
                        pk_kind_name(pk_kind(tv)));
        t = (int64_t)f;
    }
    if (i == 0) {
        d->timed = tv != NULL;
        *t0 = t;
    }
    uint64_t now = *prev;
    if (!d->timed)
        now = i;
    else if (tv && t >= *t0)
        now = (uint64_t)t - (uint64_t)*t0;
    if (now < *prev)                     /* a clock that stepped back: hold the last time */
        now = *prev;
    *prev = now;
    return 0;
}

static int trace_rows(conv_t *c, devrows_t *d, const pk_value_t *trace)
{
    char where[96];
    int64_t t0 = 0;
    uint64_t prev = 0;
    for (size_t i = 0, n = pk_list_len(trace); i < n; i++) {
        const pk_value_t *e = pk_list_at(trace, i);
        snprintf(where, sizeof where, "device_traces[%d][%zu]", d->device, i);
        if (pk_kind(e) != PK_DICT)
            return fail(c, "not a PyTorch memory snapshot: %s is a %s, not a dict", where, pk_kind_name(pk_kind(e)));
        const char *action = pk_str(pk_dict_get(e, "action"), NULL);
        if (!action)
            return fail(c, "not a PyTorch memory snapshot: %s has no action", where);
        uint64_t now;
        if (entry_time(c, d, e, i, &t0, &prev, where))
            return -1;
        now = prev;
        bool alloc = strcmp(action, "alloc") == 0, freed = strcmp(action, "free_requested") == 0;
        row_t r = {.time_us = now};
        if (strcmp(action, "oom") == 0) {
            r.action = ROW_OOM;
            if (get_i64(c, e, "size", &r.size, where) || get_i64(c, e, "stream", &r.stream, where))
                return -1;
            if (rows_push(&d->rows, r))
                return fail(c, "out of memory");
            continue;
        }
        if (!alloc && !freed)
            continue;
        uint64_t size;
        if (get_u64(c, e, "addr", &r.addr, where) || get_u64(c, e, "size", &size, where) ||
            get_i64(c, e, "stream", &r.stream, where))
            return -1;
        r.size = (int64_t)size;
        slot_t *s = amap_find(&d->seen, r.addr);
        if (alloc) {
            if (s && s->state == SLOT_LIVE) {
                /* The free of the block here was dropped: free it now. */
                row_t missed = {.time_us = now, .addr = r.addr, .size = s->size, .stream = s->stream, .action = ROW_FREE};
                if (rows_push(&d->rows, missed))
                    return fail(c, "out of memory");
            }
            if (!s && !(s = amap_add(&d->seen, r.addr)))
                return fail(c, "out of memory");
            s->state = SLOT_LIVE;
            s->size = r.size;
            s->stream = r.stream;
            r.action = ROW_ALLOC;
        } else if (!s) {
            /* Allocated before recording began: (a) above. */
            row_t p = {.time_us = 0, .addr = r.addr, .size = r.size, .stream = r.stream, .action = ROW_ALLOC};
            if (!amap_add(&d->seen, r.addr) || rows_push(&d->pre, p))
                return fail(c, "out of memory");
            r.action = ROW_FREE;
        } else if (s->state == SLOT_LIVE) {
            s->state = SLOT_FREED;
            r.action = ROW_FREE;
        } else {
            continue;                    /* a second free of a freed pointer */
        }
        if (rows_push(&d->rows, r))
            return fail(c, "out of memory");
    }
    return 0;
}

/* The size a block was asked for: requested_size, else (torch 1.13's
 * layout) history[0].real_size, else size. */
static int block_size(conv_t *c, const pk_value_t *b, uint64_t size, uint64_t *out, const char *where)
{
    if (pk_dict_get(b, "requested_size"))
        return get_u64(c, b, "requested_size", out, where);
    const pk_value_t *h = pk_list_at(pk_dict_get(b, "history"), 0);
    if (pk_kind(h) == PK_DICT && pk_dict_get(h, "real_size"))
        return get_u64(c, h, "real_size", out, where);
    *out = size;
    return 0;
}

static int segment_rows(conv_t *c, devrows_t *d, const pk_value_t *seg, size_t si)
{
    char where[96];
    snprintf(where, sizeof where, "segments[%zu]", si);
    uint64_t at;
    int64_t stream;
    if (get_u64(c, seg, "address", &at, where) || get_i64(c, seg, "stream", &stream, where))
        return -1;
    const pk_value_t *blocks = pk_dict_get(seg, "blocks");
    if (pk_kind(blocks) != PK_LIST && pk_kind(blocks) != PK_TUPLE)
        return fail(c, "not a PyTorch memory snapshot: %s has no list of blocks", where);
    for (size_t j = 0, n = pk_list_len(blocks); j < n; j++) {
        const pk_value_t *b = pk_list_at(blocks, j);
        snprintf(where, sizeof where, "segments[%zu].blocks[%zu]", si, j);
        if (pk_kind(b) != PK_DICT)
            return fail(c, "not a PyTorch memory snapshot: %s is a %s, not a dict", where, pk_kind_name(pk_kind(b)));
        uint64_t size, addr = at, want;
        if (get_u64(c, b, "size", &size, where) || (pk_dict_get(b, "address") && get_u64(c, b, "address", &addr, where)))
            return -1;
        if (addr + size < addr)
            return fail(c, "not a PyTorch memory snapshot: %s runs past the end of the address space", where);
        at = addr + size;                /* without addresses, blocks lie back to back */
        const char *state = pk_str(pk_dict_get(b, "state"), NULL);
        if (!state)
            return fail(c, "not a PyTorch memory snapshot: %s has no state", where);
        if (strcmp(state, "inactive") == 0)
            continue;
        /* active_awaiting_free: the name torch's docstring gives active_pending_free */
        if (strcmp(state, "active_allocated") && strcmp(state, "active_pending_free") &&
            strcmp(state, "active_awaiting_free"))
            return fail(c, "not a PyTorch memory snapshot: %s has the unknown state '%.40s'", where, state);
        if (amap_find(&d->seen, addr))
            continue;                    /* the trace has it, or a block listed twice */
        if (block_size(c, b, size, &want, where))
            return -1;
        row_t p = {.time_us = 0, .addr = addr, .size = (int64_t)want, .stream = stream, .action = ROW_ALLOC};
        if (!amap_add(&d->seen, addr) || rows_push(&d->pre, p))
            return fail(c, "out of memory");
    }
    return 0;
}

/* ---- the text ------------------------------------------------------------ */

typedef struct text_s { char *p; size_t len, cap; } text_t;

__attribute__((format(printf, 2, 3))) static int text_add(text_t *t, const char *fmt, ...)
{
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(t->p ? t->p + t->len : NULL, t->p ? t->cap - t->len : 0, fmt, ap);
        va_end(ap);
        if (n < 0)
            return -1;
        if (t->p && (size_t)n < t->cap - t->len) {
            t->len += (size_t)n;
            return 0;
        }
        size_t cap = t->cap ? t->cap * 2 : 1 << 16;
        while (cap - t->len <= (size_t)n)
            cap *= 2;
        char *g = realloc(t->p, cap);
        if (!g)
            return -1;
        t->p = g;
        t->cap = cap;
    }
}

/* Stream numbers: 0 stays 0 (the legacy default stream), the others get 1,
 * 2, ... as they first appear in the file (preexisting rows first). */
static int stream_number(amap_t *streams, int64_t stream, unsigned *next, unsigned *out)
{
    slot_t *s = amap_find(streams, (uint64_t)stream);
    if (!s) {
        if (!(s = amap_add(streams, (uint64_t)stream)))
            return -1;
        s->size = stream == 0 ? 0 : (*next)++;
    }
    *out = (unsigned)s->size;
    return 0;
}

static int write_row(text_t *t, const row_t *r, amap_t *streams, unsigned *next)
{
    static const char *const names[] = {"allocate", "free", "allocate failure"};
    unsigned st;
    if (stream_number(streams, r->stream, next, &st))
        return -1;
    uint64_t us = r->time_us, s = us / 1000000;
    char ptr[24];
    if (r->action == ROW_OOM)
        snprintf(ptr, sizeof ptr, "(nil)");
    else
        snprintf(ptr, sizeof ptr, "0x%llx", (unsigned long long)r->addr);
    return text_add(t, "0,%02llu:%02u:%02u.%06u,%s,%s,%lld,%u\n", (unsigned long long)(s / 3600),
                    (unsigned)(s / 60 % 60), (unsigned)(s % 60), (unsigned)(us % 1000000), names[r->action], ptr,
                    (long long)r->size, st);
}

static int write_csv(conv_t *c, devrows_t *d, snapshot_csv_t *out)
{
    text_t t = {0};
    amap_t streams = {0};
    unsigned next = 1;
    int rc = text_add(&t, "#cca-trace 1 device=%d source=torch-snapshot\nThread,Time,Action,Pointer,Size,Stream\n",
                      d->device);
    if (d->pre.n > 1)
        qsort(d->pre.r, d->pre.n, sizeof *d->pre.r, by_addr);
    for (size_t i = 0; i < d->pre.n && !rc; i++)
        rc = write_row(&t, &d->pre.r[i], &streams, &next);
    for (size_t i = 0; i < d->rows.n && !rc; i++) {
        rc = write_row(&t, &d->rows.r[i], &streams, &next);
        out->ooms += d->rows.r[i].action == ROW_OOM;
    }
    if (rc) {
        free(t.p);
        free(streams.s);
        return fail(c, "out of memory");
    }
    out->device = d->device;
    out->csv = t.p;
    out->len = t.len;
    out->events = d->pre.n + d->rows.n;
    out->preexisting = d->pre.n;
    out->streams = streams.len;
    out->timed = d->timed;
    free(streams.s);
    return 0;
}

/* ---- devices ------------------------------------------------------------- */

typedef struct segref_s { int device; size_t index; } segref_t;

static int by_device(const void *a, const void *b)
{
    const segref_t *x = a, *y = b;
    if (x->device != y->device)
        return (x->device > y->device) - (x->device < y->device);
    return (x->index > y->index) - (x->index < y->index);
}

/* The segments sorted by device (stable), each with its device checked. */
static int sort_segments(conv_t *c, segref_t **out, size_t *n_out)
{
    size_t n = pk_list_len(c->segments);
    segref_t *refs = malloc((n ? n : 1) * sizeof *refs);
    if (!refs)
        return fail(c, "out of memory");
    for (size_t i = 0; i < n; i++) {
        const pk_value_t *seg = pk_list_at(c->segments, i);
        char where[48];
        snprintf(where, sizeof where, "segments[%zu]", i);
        uint64_t dev;
        if (pk_kind(seg) != PK_DICT) {
            free(refs);
            return fail(c, "not a PyTorch memory snapshot: %s is a %s, not a dict", where, pk_kind_name(pk_kind(seg)));
        }
        if (get_u64(c, seg, "device", &dev, where)) {
            free(refs);
            return -1;
        }
        if (dev > INT_MAX) {
            free(refs);
            return fail(c, "not a PyTorch memory snapshot: %s device %llu is out of range", where,
                        (unsigned long long)dev);
        }
        refs[i] = (segref_t){(int)dev, i};
    }
    qsort(refs, n, sizeof *refs, by_device);
    *out = refs;
    *n_out = n;
    return 0;
}

static void dev_clear(devrows_t *d)
{
    free(d->rows.r);
    free(d->pre.r);
    free(d->seen.s);
    memset(d, 0, sizeof *d);
}

/* Every device with a non-empty trace or a segment, converted in order. */
static int convert(conv_t *c, snapshot_csv_t **out, size_t *n_out)
{
    segref_t *segs = NULL;
    size_t n_segs = 0, n_traces = pk_list_len(c->traces);
    if (n_traces > INT_MAX)
        return fail(c, "not a PyTorch memory snapshot: %zu device traces", n_traces);
    for (size_t i = 0; i < n_traces; i++) {
        const pk_value_t *tr = pk_list_at(c->traces, i);
        if (pk_kind(tr) != PK_LIST && pk_kind(tr) != PK_TUPLE)
            return fail(c, "not a PyTorch memory snapshot: device_traces[%zu] is a %s, not a list", i,
                        pk_kind_name(pk_kind(tr)));
    }
    if (sort_segments(c, &segs, &n_segs))
        return -1;
    snapshot_csv_t *csvs = NULL;
    size_t n = 0, cap = 0, s = 0;
    int rc = 0;
    for (size_t ti = 0; !rc && (ti < n_traces || s < n_segs);) {
        /* the next device: the smaller of the next non-empty trace and the next segment's */
        while (ti < n_traces && pk_list_len(pk_list_at(c->traces, ti)) == 0)
            ti++;
        long long next_t = ti < n_traces ? (long long)ti : LLONG_MAX;
        long long next_s = s < n_segs ? segs[s].device : LLONG_MAX;
        if (next_t == LLONG_MAX && next_s == LLONG_MAX)
            break;
        devrows_t d = {.device = (int)(next_t < next_s ? next_t : next_s)};
        if ((size_t)d.device < n_traces)
            rc = trace_rows(c, &d, pk_list_at(c->traces, (size_t)d.device));
        for (; !rc && s < n_segs && segs[s].device == d.device; s++)
            rc = segment_rows(c, &d, pk_list_at(c->segments, segs[s].index), segs[s].index);
        if (ti == (size_t)d.device)
            ti++;
        if (!rc && n == cap) {
            cap = cap ? cap * 2 : 4;
            snapshot_csv_t *g = realloc(csvs, cap * sizeof *g);
            if (g)
                csvs = g;
            else
                rc = fail(c, "out of memory");
        }
        if (!rc) {
            memset(&csvs[n], 0, sizeof csvs[n]);
            rc = write_csv(c, &d, &csvs[n]);
            n += !rc;
        }
        dev_clear(&d);
    }
    free(segs);
    if (rc) {
        snapshot_csv_free(csvs, n);
        return -1;
    }
    *out = csvs;
    *n_out = n;
    return 0;
}

int snapshot_csv_from_pickle(const void *buf, size_t len, snapshot_csv_t **out, size_t *n_out, char *err,
                             size_t errlen)
{
    if (err && errlen)
        err[0] = '\0';
    if (!out || !n_out)
        return -1;
    *out = NULL;
    *n_out = 0;
    pk_value_t *root;
    if (pk_load(buf, len, &root, err, errlen))
        return -1;
    conv_t c = {.err = err, .errlen = errlen};
    int rc = -1;
    if (pk_kind(root) != PK_DICT) {
        fail(&c, "not a PyTorch memory snapshot: the pickle holds a %s, not a dict with segments and device_traces",
             pk_kind_name(pk_kind(root)));
    } else if (!(c.traces = pk_dict_get(root, "device_traces"))) {
        fail(&c, "not a PyTorch memory snapshot: no device_traces");
    } else if (!(c.segments = pk_dict_get(root, "segments"))) {
        fail(&c, "not a PyTorch memory snapshot: no segments");
    } else if (pk_kind(c.traces) != PK_LIST && pk_kind(c.traces) != PK_TUPLE) {
        fail(&c, "not a PyTorch memory snapshot: device_traces is a %s, not a list", pk_kind_name(pk_kind(c.traces)));
    } else if (pk_kind(c.segments) != PK_LIST && pk_kind(c.segments) != PK_TUPLE) {
        fail(&c, "not a PyTorch memory snapshot: segments is a %s, not a list", pk_kind_name(pk_kind(c.segments)));
    } else {
        rc = convert(&c, out, n_out);
    }
    pk_free(root);
    return rc;
}

/* ---- segment maps ------------------------------------------------------- */

static int map_blocks(conv_t *c, svg_segmap_t *m, const pk_value_t *seg, uint64_t at, uint64_t total,
                      const char *seg_where)
{
    const pk_value_t *blocks = pk_dict_get(seg, "blocks");
    if (pk_kind(blocks) != PK_LIST && pk_kind(blocks) != PK_TUPLE)
        return fail(c, "not a PyTorch memory snapshot: %s has no list of blocks", seg_where);
    static const char *const states[] = {"active_allocated", "active_pending_free", "inactive", "active_awaiting_free"};
    uint64_t next = at;
    for (size_t j = 0, n = pk_list_len(blocks); j < n; j++) {
        char where[96];
        snprintf(where, sizeof where, "%s.blocks[%zu]", seg_where, j);
        const pk_value_t *b = pk_list_at(blocks, j);
        uint64_t size, addr = next;
        if (pk_kind(b) != PK_DICT)
            return fail(c, "not a PyTorch memory snapshot: %s is a %s, not a dict", where, pk_kind_name(pk_kind(b)));
        if (get_u64(c, b, "size", &size, where) || (pk_dict_get(b, "address") && get_u64(c, b, "address", &addr, where)))
            return -1;
        if (addr < at || addr - at > total || size > total - (addr - at))
            return fail(c, "not a PyTorch memory snapshot: %s lies outside its segment", where);
        next = addr + size;
        const char *state = pk_str(pk_dict_get(b, "state"), NULL);
        int k = 0;
        while (k < 4 && (!state || strcmp(state, states[k])))
            k++;
        if (k == 4)
            return fail(c, "not a PyTorch memory snapshot: %s has the unknown state '%.40s'", where,
                        state ? state : "(none)");
        if (svg_map_block(m, addr - at, size, k == 3 ? SVG_PENDING_FREE : k))
            return fail(c, "out of memory");
    }
    return 0;
}

static int map_segment(conv_t *c, svg_segmap_t *m, const pk_value_t *seg, size_t si)
{
    char where[48];
    snprintf(where, sizeof where, "segments[%zu]", si);
    uint64_t at, total;
    int64_t stream;
    if (get_u64(c, seg, "address", &at, where) || get_u64(c, seg, "total_size", &total, where) ||
        get_i64(c, seg, "stream", &stream, where))
        return -1;
    if (at + total < at)
        return fail(c, "not a PyTorch memory snapshot: %s runs past the end of the address space", where);
    const char *type = pk_str(pk_dict_get(seg, "segment_type"), NULL);
    if (svg_map_segment(m, at, total, !type || strcmp(type, "small") != 0, stream))
        return fail(c, "out of memory");
    return map_blocks(c, m, seg, at, total, where);
}

int snapshot_segmaps_from_pickle(const void *buf, size_t len, svg_segmap_t **out, size_t *n_out, char *err,
                                 size_t errlen)
{
    *out = NULL;
    *n_out = 0;
    pk_value_t *root;
    if (pk_load(buf, len, &root, err, errlen))
        return -1;
    conv_t c = {.err = err, .errlen = errlen, .segments = pk_dict_get(root, "segments")};
    segref_t *segs = NULL;
    size_t n_segs = 0, n = 0;
    svg_segmap_t *maps = NULL;
    int rc = pk_kind(c.segments) == PK_LIST || pk_kind(c.segments) == PK_TUPLE ? sort_segments(&c, &segs, &n_segs)
             : fail(&c, "not a PyTorch memory snapshot: no list of segments");
    if (!rc && !(maps = calloc(n_segs ? n_segs : 1, sizeof *maps)))
        rc = fail(&c, "out of memory");
    for (size_t s = 0; !rc && s < n_segs; s++) {
        if (!n || maps[n - 1].device != segs[s].device)
            maps[n++].device = segs[s].device;
        rc = map_segment(&c, &maps[n - 1], pk_list_at(c.segments, segs[s].index), segs[s].index);
    }
    free(segs);
    pk_free(root);
    if (rc) {
        snapshot_segmaps_free(maps, n);
        return -1;
    }
    *out = maps;
    *n_out = n;
    return 0;
}

void snapshot_segmaps_free(svg_segmap_t *maps, size_t n)
{
    for (size_t i = 0; maps && i < n; i++)
        svg_map_free(&maps[i]);
    free(maps);
}

void snapshot_csv_free(snapshot_csv_t *csvs, size_t n)
{
    if (!csvs)
        return;
    for (size_t i = 0; i < n; i++)
        free(csvs[i].csv);
    free(csvs);
}

int pickle_looks_like(const void *buf, size_t len)
{
    const unsigned char *b = buf;
    if (!b || len == 0)
        return 0;
    if (b[0] == 0x80)
        return len >= 2 && b[1] <= 5;
    return b[0] == '(' || b[0] == '}' || b[0] == ']' || b[0] == ')';
}

/* balance.c - the batch-size balance point: the model is in balance.h. */
#include "balance.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { PER_STEP = 0, PER_MICRO = 1 };

static int by_u64(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return a < b ? -1 : a > b;
}

/* The sizes of t's allocations, by slot (allocation order). */
static uint64_t *alloc_sizes(const trace_t *t)
{
    uint64_t *s = calloc(t->n_slots + 1, sizeof *s);
    for (size_t i = 0; s && i < t->n_events; i++)
        if (t->events[i].op == TRACE_ALLOC)
            s[t->events[i].slot] = t->events[i].size;
    return s;
}

/* kind[slot] for t (sizes a, batch bt) against the other recording (sizes
 * b, batch bu): paired in order when both have as many allocations and
 * every pair that differs grows with the batch (else the two did not make
 * the same allocations in the same order: other threads, streams), else by
 * size. */
static int classify(const trace_t *t, const uint64_t *a, uint64_t bt, const trace_t *u, const uint64_t *b, uint64_t bu,
                    unsigned char *kind, int *paired)
{
    *paired = t->n_slots == u->n_slots;
    for (size_t k = 0; *paired && k < t->n_slots; k++) {
        kind[k] = a[k] == b[k] ? PER_STEP : PER_MICRO;
        if (a[k] != b[k] && (a[k] < b[k]) != (bt < bu))
            *paired = 0;
    }
    if (*paired)
        return 0;
    uint64_t *sorted = malloc((u->n_slots + 1) * sizeof *sorted);
    if (!sorted)
        return -1;
    memcpy(sorted, b, u->n_slots * sizeof *sorted);
    qsort(sorted, u->n_slots, sizeof *sorted, by_u64);
    for (size_t k = 0; k < t->n_slots; k++)
        kind[k] = bsearch(&a[k], sorted, u->n_slots, sizeof *sorted, by_u64) ? PER_STEP : PER_MICRO;
    free(sorted);
    return 0;
}

/* ---- micro-batch windows ------------------------------------------------ */

typedef struct windows {
    size_t n;
    size_t *start, *end;                 /* event indices, inclusive */
    unsigned char *kept;                 /* per slot: made in a window and live at its end */
    size_t *alloc_at;                    /* per slot: its allocation's event index */
} windows_t;

static void windows_free(windows_t *w)
{
    free(w->start);
    free(w->end);
    free(w->kept);
    free(w->alloc_at);
    memset(w, 0, sizeof *w);
}

/* The per-micro-batch bytes after each event and their floor (the least). */
static uint64_t *micro_live(const trace_t *t, const unsigned char *kind, const uint64_t *sizes, uint64_t *floor)
{
    uint64_t *live = malloc((t->n_events + 1) * sizeof *live), cur = 0;
    *floor = UINT64_MAX;
    for (size_t i = 0; live && i < t->n_events; i++) {
        const trace_event_t *e = &t->events[i];
        if ((e->op == TRACE_ALLOC || e->op == TRACE_FREE) && kind[e->slot] == PER_MICRO)
            cur = e->op == TRACE_ALLOC ? cur + e->size : cur - sizes[e->slot];
        live[i] = cur;
        *floor = cur < *floor ? cur : *floor;
    }
    return live;
}

/* Windows: from the event that lifts the per-micro-batch bytes above their
 * floor to the one that brings them back. */
static int find_windows(const trace_t *t, const unsigned char *kind, const uint64_t *sizes, windows_t *w)
{
    uint64_t floor;
    uint64_t *live = micro_live(t, kind, sizes, &floor);
    memset(w, 0, sizeof *w);
    w->start = malloc((t->n_events / 2 + 1) * sizeof *w->start);
    w->end = malloc((t->n_events / 2 + 1) * sizeof *w->end);
    w->kept = calloc(t->n_slots + 1, 1);
    w->alloc_at = calloc(t->n_slots + 1, sizeof *w->alloc_at);
    if (!live || !w->start || !w->end || !w->kept || !w->alloc_at) {
        free(live);
        windows_free(w);
        return -1;
    }
    int open = 0;
    for (size_t i = 0; i < t->n_events; i++) {
        if (t->events[i].op == TRACE_ALLOC)
            w->alloc_at[t->events[i].slot] = i;
        if (!open && live[i] > floor) {
            w->start[w->n] = i;
            open = 1;
        } else if (open && live[i] == floor) {
            w->end[w->n++] = i;
            open = 0;
        }
    }
    if (open)
        w->end[w->n++] = t->n_events - 1;
    free(live);
    return 0;
}

/* kept[slot]: made in window k and not freed by its end. */
static uint64_t mark_kept(const trace_t *t, const uint64_t *sizes, windows_t *w)
{
    uint64_t most = 0;
    for (size_t k = 0; k < w->n; k++) {
        uint64_t bytes = 0;
        for (size_t i = w->start[k]; i <= w->end[k]; i++) {
            const trace_event_t *e = &t->events[i];
            if (e->op == TRACE_ALLOC)
                w->kept[e->slot] = 1, bytes += e->size;
            else if (e->op == TRACE_FREE && w->kept[e->slot] && w->alloc_at[e->slot] >= w->start[k])
                w->kept[e->slot] = 0, bytes -= sizes[e->slot];
        }
        most = bytes > most ? bytes : most;
    }
    return most;
}

/* ---- the made step -------------------------------------------------------- */

typedef struct maker {
    trace_t *t;
    const trace_t *src;
    const unsigned char *kind;           /* per slot of src */
    size_t cap_events, cap_slots;
    uint64_t *slot_size, live;
    size_t *temp_from, n_temps;          /* pending temporaries: their source event, */
    uint32_t *temp_slot;                 /* and their slot */
} maker_t;

static int emit(maker_t *m, size_t from, trace_event_t e)
{
    trace_t *t = m->t;
    if (t->n_events == m->cap_events) {
        size_t cap = m->cap_events * 2 + 64;
        trace_event_t *ev = realloc(t->events, cap * sizeof *ev);
        uint64_t *tu = ev ? realloc(t->time_us, cap * sizeof *tu) : NULL;
        uint32_t *rw = tu ? realloc(t->row, cap * sizeof *rw) : NULL;
        t->events = ev ? ev : t->events;
        t->time_us = tu ? tu : t->time_us;
        t->row = rw ? rw : t->row;
        if (!rw)
            return -1;
        m->cap_events = cap;
    }
    if (e.op == TRACE_ALLOC) {
        m->slot_size[e.slot] = e.size;
        if ((m->live += e.size) > t->peak_live_bytes)
            t->peak_live_bytes = m->live;
    } else if (e.op == TRACE_FREE) {
        m->live -= m->slot_size[e.slot];
    }
    t->time_us[t->n_events] = m->src->time_us[from];
    t->row[t->n_events] = m->src->row[from];
    t->events[t->n_events++] = e;
    return 0;
}

static int new_slot(maker_t *m, uint32_t *slot)
{
    if (m->t->n_slots == m->cap_slots) {
        size_t cap = m->cap_slots * 2 + 64;
        uint64_t *s = realloc(m->slot_size, cap * sizeof *s);
        if (!s)
            return -1;
        m->slot_size = s;
        m->cap_slots = cap;
    }
    *slot = (uint32_t)m->t->n_slots++;
    return 0;
}

/* Frees the pending temporaries made after source event `after` (all: SIZE_MAX as none). */
static int free_temps(maker_t *m, size_t after, size_t at)
{
    size_t keep = 0;
    for (size_t q = 0; q < m->n_temps; q++) {
        if (after == SIZE_MAX || m->temp_from[q] > after) {
            trace_event_t f = {.slot = m->temp_slot[q], .op = TRACE_FREE};
            if (emit(m, at, f))
                return -1;
        } else {
            m->temp_from[keep] = m->temp_from[q];
            m->temp_slot[keep++] = m->temp_slot[q];
        }
    }
    m->n_temps = keep;
    return 0;
}

/* A later micro-batch of window k: what it makes and frees again, and a
 * temporary for each allocation the window keeps (the gradient made again
 * and added into the kept one), freed with the first per-micro-batch
 * allocation made before it that is freed after it (the inputs its
 * backward step saved), else at the window's end. copy[] maps slots. */
static int repeat_window(maker_t *m, const windows_t *w, size_t k, const uint64_t *size_at, uint32_t *copy)
{
    const trace_t *src = m->src;
    m->n_temps = 0;
    for (size_t i = w->start[k]; i <= w->end[k]; i++) {
        trace_event_t e = src->events[i];
        uint32_t from = e.slot;
        int inside = e.op != TRACE_FAILURE && w->alloc_at[from] >= w->start[k] && w->alloc_at[from] <= i;
        if (e.op == TRACE_ALLOC) {
            uint32_t s;
            if (new_slot(m, &s))
                return -1;
            e.slot = s;
            e.size = size_at[from];
            if (emit(m, i, e))
                return -1;
            if (w->kept[from]) {
                m->temp_from[m->n_temps] = i;
                m->temp_slot[m->n_temps++] = s;
            } else {
                copy[from] = s;
            }
        } else if ((e.op == TRACE_FREE || e.op == TRACE_RECORD) && inside && !w->kept[from]) {
            e.slot = copy[from];
            if (emit(m, i, e))
                return -1;
            if (e.op == TRACE_FREE && m->kind[from] == PER_MICRO && free_temps(m, w->alloc_at[from], i))
                return -1;
        }
    }
    return free_temps(m, SIZE_MAX, w->end[k]);
}

static int make_events(maker_t *m, const balance_in_t *in, const windows_t *w, const uint64_t *size_at)
{
    const trace_t *src = m->src;
    unsigned k_micro = in->accumulate ? in->accumulate : 1;
    uint32_t *copy = calloc(src->n_slots + 1, sizeof *copy);
    if (!copy)
        return -1;
    size_t k = 0;
    int rc = 0;
    for (size_t i = 0; i < src->n_events && !rc; i++) {
        trace_event_t e = src->events[i];
        if (e.op == TRACE_ALLOC)
            e.size = size_at[e.slot];
        if (e.op != TRACE_FAILURE)                  /* what the recorded run was refused is not part of a step */
            rc = emit(m, i, e);
        if (!rc && k < w->n && i == w->end[k]) {
            for (unsigned c = 1; c < k_micro && !rc; c++)
                rc = repeat_window(m, w, k, size_at, copy);
            k++;
        }
    }
    free(copy);
    return rc;
}

int balance_synth(const balance_in_t *in, const balance_out_t *out, uint64_t b, trace_t *t)
{
    const trace_t *src = in->trace[0];
    double m = (double)b / (double)(in->accumulate ? in->accumulate : 1);
    double f = (m - (double)in->batch[0]) / ((double)in->batch[1] - (double)in->batch[0]);
    uint64_t *size_at = alloc_sizes(src);
    windows_t w = {0};
    maker_t mk = {.t = t, .src = src};
    memset(t, 0, sizeof *t);
    int rc = -1;
    if (size_at && !find_windows(src, out->kind, size_at, &w)) {
        mark_kept(src, size_at, &w);
        for (size_t k = 0; k < src->n_slots; k++)
            if (out->kind[k] == PER_MICRO) {
                double v = (double)size_at[k] + (double)out->delta[k] * f;
                size_at[k] = v < 1 ? 1 : v > 9.0e18 ? (uint64_t)9e18 : (uint64_t)llround(v);
            }
        mk.kind = out->kind;
        mk.temp_from = malloc((src->n_events + 1) * sizeof *mk.temp_from);
        mk.temp_slot = malloc((src->n_events + 1) * sizeof *mk.temp_slot);
        mk.slot_size = malloc((src->n_slots + 64) * sizeof *mk.slot_size);
        mk.cap_slots = src->n_slots + 64;
        t->n_slots = src->n_slots;
        t->stream_ids = malloc((src->n_streams + 1) * sizeof *t->stream_ids);
        if (mk.slot_size && t->stream_ids && mk.temp_from && mk.temp_slot) {
            memcpy(t->stream_ids, src->stream_ids, src->n_streams * sizeof *t->stream_ids);
            t->n_streams = src->n_streams;
            rc = make_events(&mk, in, &w, size_at);
        }
    }
    snprintf(t->name, sizeof t->name, "%.200s at batch %" PRIu64, src->name, b);
    snprintf(t->path, sizeof t->path, "%s", src->path);
    t->device = src->device;
    t->device_memory = src->device_memory;
    t->version = src->version;
    free(mk.slot_size);
    free(mk.temp_from);
    free(mk.temp_slot);
    free(size_at);
    windows_free(&w);
    if (rc)
        trace_free(t);
    return rc;
}

/* ---- the fit -------------------------------------------------------------- */

static int tell_apart(const balance_in_t *in, balance_out_t *out)
{
    const trace_t *t0 = in->trace[0], *t1 = in->trace[1];
    uint64_t *a = alloc_sizes(t0), *b = alloc_sizes(t1);
    out->kind = calloc(t0->n_slots + 1, 1);
    out->delta = calloc(t0->n_slots + 1, sizeof *out->delta);
    windows_t w = {0};
    int rc = -1;
    if (a && b && out->kind && out->delta && !classify(t0, a, in->batch[0], t1, b, in->batch[1], out->kind, &out->paired) &&
        !find_windows(t0, out->kind, a, &w)) {
        for (size_t k = 0; out->paired && k < t0->n_slots; k++)
            out->delta[k] = (int64_t)(b[k] - a[k]);
        for (size_t k = 0; k < t0->n_slots; k++)
            out->kind[k] == PER_STEP ? out->per_step++ : out->per_micro++;
        out->kept = mark_kept(t0, a, &w);
        out->windows = w.n;
        rc = 0;
    }
    windows_free(&w);
    free(a);
    free(b);
    return rc;
}

void balance_free(balance_out_t *out)
{
    free(out->kind);
    free(out->delta);
    out->kind = NULL;
    out->delta = NULL;
}

/* The ratio model (recordings that do not pair): what batch b needs under
 * configuration c, the reserve and peak live scaled by the ratio at the
 * fitted recording nearer to it. */
static double need(const balance_in_t *in, const balance_out_t *out, int c, uint64_t b)
{
    int near = fabs((double)b - (double)in->batch[1]) < fabs((double)b - (double)in->batch[0]);
    double p = out->a + out->s * (double)b, r = out->conf[c].ratio[near];
    if (!isfinite(r))
        return INFINITY;                               /* that recording fits on no device */
    return (double)in->reserve + (p > 0 ? p : 0) * r;
}

/* The largest batch whose need fits the device. */
static void largest(const balance_in_t *in, balance_out_t *out, int c)
{
    balance_conf_t *r = &out->conf[c];
    uint64_t lo = 0, hi = 1;
    double first = need(in, out, c, 1);
    if (first > (double)in->device) {
        r->largest = 0;
        r->need_next = isfinite(first) && first < 9e18 ? (uint64_t)ceil(first) : 0;
        return;
    }
    while (hi < ((uint64_t)1 << 40) && need(in, out, c, hi) <= (double)in->device)
        lo = hi, hi *= 2;
    if (hi >= ((uint64_t)1 << 40)) {
        r->largest = UINT64_MAX;                    /* peak live does not grow with the batch */
        return;
    }
    while (hi - lo > 1) {
        uint64_t mid = lo + (hi - lo) / 2;
        *(need(in, out, c, mid) <= (double)in->device ? &lo : &hi) = mid;
    }
    double next = need(in, out, c, lo + 1);
    r->largest = lo;
    r->margin = (int64_t)in->device - (int64_t)ceil(need(in, out, c, lo));
    r->need_next = isfinite(next) && next < 9e18 ? (uint64_t)ceil(next) : 0;
}

int balance_fit(const balance_in_t *in, balance_out_t *out)
{
    memset(out, 0, sizeof *out);
    double b0 = (double)in->batch[0], b1 = (double)in->batch[1];
    if (in->n_recs < 2 || in->batch[0] == in->batch[1])
        return snprintf(out->error, sizeof out->error, "--batch: the two fitted recordings need different batch sizes"), -1;
    if (!in->device)
        return snprintf(out->error, sizeof out->error, "--batch: no device size (give --device-memory)"), -1;
    double p0 = (double)in->trace[0]->peak_live_bytes, p1 = (double)in->trace[1]->peak_live_bytes;
    out->s = (p1 - p0) / (b1 - b0);
    out->a = p0 - out->s * b0;
    if (tell_apart(in, out)) {
        balance_free(out);
        return snprintf(out->error, sizeof out->error, "out of host memory"), -1;
    }
    if (!out->paired && in->accumulate > 1) {
        balance_free(out);
        return snprintf(out->error, sizeof out->error, "--accumulate: the two fitted recordings make %zu and %zu "
                        "allocations; accumulation needs recordings of the same step that pair", in->trace[0]->n_slots,
                        in->trace[1]->n_slots), -1;
    }
    for (int c = 0; c < in->n_confs; c++) {
        balance_conf_t *r = &out->conf[c];
        for (int i = 0; i < 2; i++) {
            double p = (double)in->trace[i]->peak_live_bytes;
            r->ratio[i] = in->min_device[c][i] && p > 0 ? ((double)in->min_device[c][i] - (double)in->reserve) / p
                                                        : (in->min_device[c][i] ? 1.0 : INFINITY);
        }
        if (out->paired)
            continue;                                   /* replays of made steps: the caller's */
        largest(in, out, c);
        for (int i = 2; i < in->n_recs; i++) {
            double p = out->a + out->s * (double)in->batch[i];
            double q = need(in, out, c, in->batch[i]);
            r->held_peak[i] = p > 0 ? (p < 9e18 ? (uint64_t)llround(p) : (uint64_t)9e18) : 0;
            r->held_pred[i] = isfinite(q) && q < 9e18 ? (uint64_t)ceil(q) : 0;   /* 0: fits on no device */
            r->held_min[i] = in->min_device[c][i];
        }
    }
    return 0;
}

static const char *gib(double b, char *out, size_t len)
{
    if (fabs(b) >= (double)((uint64_t)1 << 30))
        snprintf(out, len, "%.2f GiB", b / (double)((uint64_t)1 << 30));
    else if (fabs(b) >= (double)((uint64_t)1 << 20) || b == 0)
        snprintf(out, len, "%.1f MiB", b / (double)((uint64_t)1 << 20));
    else
        snprintf(out, len, "%.1f KiB", b / 1024.0);
    return out;
}

static double err_pct(double pred, double got)
{
    return got > 0 ? 100.0 * (pred - got) / got : 0.0;
}

void balance_print(FILE *f, const balance_in_t *in, const balance_out_t *out)
{
    char a[32], b[32], c[32];
    uint64_t step = in->accumulate ? in->accumulate : 1;
    fprintf(f, "balance point on a %s device, %s reserved; fitted on batch %" PRIu64 " (%s) and %" PRIu64 " (%s)\n",
            gib((double)in->device, a, sizeof a), gib((double)in->reserve, b, sizeof b), in->batch[0],
            in->trace[0]->name, in->batch[1], in->trace[1]->name);
    fprintf(f, "  peak live = %s + %s per sample; %zu allocations per-step, %zu per-micro-batch (%s)\n",
            gib(out->a, a, sizeof a), gib(out->s, b, sizeof b), out->per_step, out->per_micro,
            out->paired ? "paired in order: each batch is the recording made at that size, replayed"
                        : "not paired: smallest devices scaled from the nearer recording");
    if (in->accumulate > 1)
        fprintf(f, "  %u micro-batches of B/%u: %zu micro-batch windows in the recording, up to %s kept from one "
                   "micro-batch to the next\n", in->accumulate, in->accumulate, out->windows,
                gib((double)out->kept, a, sizeof a));
    fprintf(f, "  %-16s %14s %12s  %s\n", "configuration", "largest batch", "margin", "the next batch");
    int shown = -1;                                  /* the first configuration that ran, for peak live */
    for (int k = 0; k < in->n_confs; k++) {
        const balance_conf_t *r = &out->conf[k];
        if (*r->error) {
            fprintf(f, "  %-16s failed: %s\n", in->label[k], r->error);
            continue;
        }
        shown = shown < 0 ? k : shown;
        if (r->largest == UINT64_MAX) {
            fprintf(f, "  %-16s %14s  (fits at batch %" PRIu64 ")\n", in->label[k], "any", (uint64_t)BALANCE_MAX_BATCH);
            continue;
        }
        if (r->largest)
            fprintf(f, "  %-16s %14" PRIu64 " %12s  ", in->label[k], r->largest, gib((double)r->margin, a, sizeof a));
        else
            fprintf(f, "  %-16s %14s %12s  ", in->label[k], "none", "");
        if (r->need_next)
            fprintf(f, "%" PRIu64 " needs %s, %s over\n", r->largest + step, gib((double)r->need_next, c, sizeof c),
                    gib((double)r->need_next - (double)in->device, b, sizeof b));
        else
            fprintf(f, "%" PRIu64 " fits on no device\n", r->largest + step);
    }
    for (int i = 2; i < in->n_recs && shown >= 0; i++) {
        double pp = (double)out->conf[shown].held_peak[i], pg = (double)in->trace[i]->peak_live_bytes;
        fprintf(f, "  held out: batch %" PRIu64 " (%s): peak live %s predicted, %s replayed (%+.2f%%)\n", in->batch[i],
                in->trace[i]->name, gib(pp, a, sizeof a), gib(pg, b, sizeof b), err_pct(pp, pg));
        for (int k = 0; k < in->n_confs; k++) {
            const balance_conf_t *r = &out->conf[k];
            if (*r->error)
                continue;
            if (!r->held_pred[i] || !r->held_min[i])
                fprintf(f, "    %-14s smallest device %s predicted, %s replayed\n", in->label[k],
                        r->held_pred[i] ? gib((double)r->held_pred[i], a, sizeof a) : "none",
                        r->held_min[i] ? gib((double)r->held_min[i], b, sizeof b) : "none");
            else
                fprintf(f, "    %-14s smallest device %s predicted, %s replayed (%+.2f%%)\n", in->label[k],
                        gib((double)r->held_pred[i], a, sizeof a), gib((double)r->held_min[i], b, sizeof b),
                        err_pct((double)r->held_pred[i], (double)r->held_min[i]));
        }
    }
}

static void jnum(FILE *f, double v)
{
    if (isfinite(v))
        fprintf(f, "%.17g", v);
    else
        fputs("null", f);
}

static void jbytes(FILE *f, const char *key, uint64_t v)
{
    if (v)
        fprintf(f, ", \"%s\": %" PRIu64, key, v);
    else
        fprintf(f, ", \"%s\": null", key);
}

static void json_conf(FILE *f, const balance_in_t *in, const balance_conf_t *r)
{
    fputs(", \"ratio\": [", f);
    jnum(f, r->ratio[0]);
    fputs(", ", f);
    jnum(f, r->ratio[1]);
    fputs("]", f);
    if (r->largest == UINT64_MAX)
        fputs(", \"largest_batch\": null, \"any_batch\": true, \"margin_bytes\": null, \"next_batch_needs_bytes\": null", f);
    else {
        char margin[32] = "null";
        if (r->largest)
            snprintf(margin, sizeof margin, "%" PRId64, r->margin);
        fprintf(f, ", \"largest_batch\": %" PRIu64 ", \"any_batch\": false, \"margin_bytes\": %s", r->largest, margin);
        jbytes(f, "next_batch_needs_bytes", r->need_next);
    }
    fputs(", \"held_out\": [", f);
    for (int i = 2; i < in->n_recs; i++) {
        fprintf(f, "%s{\"batch\": %" PRIu64 ", \"predicted_peak_live_bytes\": %" PRIu64 ", \"peak_live_bytes\": %" PRIu64,
                i > 2 ? ", " : "", in->batch[i], r->held_peak[i], in->trace[i]->peak_live_bytes);
        jbytes(f, "predicted_min_device_bytes", r->held_pred[i]);       /* null: fits on no device */
        jbytes(f, "min_device_bytes", r->held_min[i]);
        fputs("}", f);
    }
    fputs("]}", f);
}

void balance_json(FILE *f, const balance_in_t *in, const balance_out_t *out, void (*jstr)(FILE *, const char *))
{
    fprintf(f, ", \"balance\": {\"device_memory_bytes\": %" PRIu64 ", \"accumulate\": %u, \"fitted\": [%" PRIu64
               ", %" PRIu64 "], \"paired\": %s, \"per_step_allocations\": %zu, \"per_micro_batch_allocations\": %zu, "
               "\"micro_batch_windows\": %zu, \"kept_bytes\": %" PRIu64 ", \"peak_live\": {\"intercept_bytes\": ",
            in->device, in->accumulate ? in->accumulate : 1, in->batch[0], in->batch[1], out->paired ? "true" : "false",
            out->per_step, out->per_micro, out->windows, out->kept);
    jnum(f, out->a);
    fputs(", \"bytes_per_sample\": ", f);
    jnum(f, out->s);
    fputs("}, \"per_micro_batch_rows\": [", f);              /* which: the first recording's data rows */
    const trace_t *t0 = in->trace[0];
    for (size_t i = 0, n = 0; i < t0->n_events; i++)
        if (t0->events[i].op == TRACE_ALLOC && out->kind[t0->events[i].slot] == PER_MICRO)
            fprintf(f, "%s%" PRIu32, n++ ? ", " : "", t0->row[i]);
    fputs("], \"configurations\": [", f);
    for (int k = 0; k < in->n_confs; k++) {
        fprintf(f, "%s\n      {\"label\": ", k ? "," : "");
        jstr(f, in->label[k]);
        if (*out->conf[k].error) {
            fputs(", \"error\": ", f);
            jstr(f, out->conf[k].error);
            fputs("}", f);
            continue;
        }
        json_conf(f, in, &out->conf[k]);
    }
    fputs("]}", f);
}

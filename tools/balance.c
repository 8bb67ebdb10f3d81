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

/* kind[slot] for t (sizes a) against the other recording (sizes b): paired
 * in order when both have as many allocations, else by size. */
static int classify(const trace_t *t, const uint64_t *a, const trace_t *u, const uint64_t *b, unsigned char *kind,
                    int *paired)
{
    *paired = t->n_slots == u->n_slots;
    if (*paired) {
        for (size_t k = 0; k < t->n_slots; k++)
            kind[k] = a[k] == b[k] ? PER_STEP : PER_MICRO;
        return 0;
    }
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

typedef struct phases { uint64_t v_peak, f_at_peak, kept; size_t per_step, per_micro; } phases_t;

/* The per-micro-batch bytes' last peak (the allocation that reaches it),
 * the per-step bytes live then, and
 * the per-step bytes allocated after it and live at the first later event
 * where the per-micro-batch bytes are at their lowest. */
static void phases(const trace_t *t, const unsigned char *kind, phases_t *p)
{
    uint64_t live[2] = {0, 0}, *sizes = alloc_sizes(t);
    size_t peak_at = 0, low_at = t->n_events;
    memset(p, 0, sizeof *p);
    for (size_t k = 0; k < t->n_slots; k++)
        kind[k] == PER_STEP ? p->per_step++ : p->per_micro++;
    for (int pass = 0; pass < 2 && sizes; pass++) {
        uint64_t low = UINT64_MAX;
        live[0] = live[1] = 0;
        for (size_t i = 0; i < t->n_events; i++) {
            const trace_event_t *e = &t->events[i];
            if (e->op != TRACE_ALLOC && e->op != TRACE_FREE)
                continue;
            int k = kind[e->slot];
            live[k] = e->op == TRACE_ALLOC ? live[k] + e->size : live[k] - sizes[e->slot];
            if (pass == 0 && k == PER_MICRO && e->op == TRACE_ALLOC && live[PER_MICRO] >= p->v_peak) {
                p->v_peak = live[PER_MICRO];
                p->f_at_peak = live[PER_STEP];
                peak_at = i;
            } else if (pass == 1 && i > peak_at && live[PER_MICRO] < low) {
                low = live[PER_MICRO];
                low_at = i;
            }
        }
    }
    /* kept: allocated in (peak_at, low_at], not freed by low_at */
    unsigned char *open = calloc(t->n_slots + 1, 1);
    for (size_t i = peak_at + 1; open && i <= low_at && i < t->n_events; i++) {
        const trace_event_t *e = &t->events[i];
        if (e->op == TRACE_ALLOC && kind[e->slot] == PER_STEP)
            open[e->slot] = 1;
        else if (e->op == TRACE_FREE)
            open[e->slot] = 0;
    }
    for (size_t k = 0; open && k < t->n_slots; k++)
        p->kept += open[k] ? sizes[k] : 0;
    free(open);
    free(sizes);
}

static int accumulation(const balance_in_t *in, balance_out_t *out)
{
    const trace_t *t0 = in->trace[0], *t1 = in->trace[1];
    uint64_t *a = alloc_sizes(t0), *b = alloc_sizes(t1);
    unsigned char *k0 = calloc(t0->n_slots + 1, 1), *k1 = calloc(t1->n_slots + 1, 1);
    int paired, rc = -1;
    if (a && b && k0 && k1 && !classify(t0, a, t1, b, k0, &paired) && !classify(t1, b, t0, a, k1, &paired)) {
        phases_t p0, p1;
        phases(t0, k0, &p0);
        phases(t1, k1, &p1);
        out->v1 = ((double)p1.v_peak - (double)p0.v_peak) / ((double)in->batch[1] - (double)in->batch[0]);
        out->v0 = (double)p0.v_peak - out->v1 * (double)in->batch[0];
        out->fixed_at_peak = p0.f_at_peak;
        out->kept = p0.kept;
        out->per_step = p0.per_step;
        out->per_micro = p0.per_micro;
        out->paired = paired;
        rc = 0;
    }
    free(a);
    free(b);
    free(k0);
    free(k1);
    return rc;
}

double balance_peak(const balance_in_t *in, const balance_out_t *out, uint64_t b)
{
    double m = (double)b / (double)(in->accumulate ? in->accumulate : 1);
    double p = out->a + out->s * m;
    if (in->accumulate > 1) {
        double q = (double)out->fixed_at_peak + (double)out->kept + out->v0 + out->v1 * m;
        p = q > p ? q : p;
    }
    return p > 0 ? p : 0;
}

/* What batch b needs under configuration c: the reserve, and peak live
 * scaled by the ratio at the fitted recording nearer to its (micro-)batch. */
static double need(const balance_in_t *in, const balance_out_t *out, int c, uint64_t b)
{
    double m = (double)b / (double)(in->accumulate ? in->accumulate : 1);
    int near = fabs(m - (double)in->batch[1]) < fabs(m - (double)in->batch[0]);
    return (double)in->reserve + balance_peak(in, out, b) * out->conf[c].ratio[near];
}

/* The largest batch (a multiple of K) whose need fits the device. */
static void largest(const balance_in_t *in, balance_out_t *out, int c)
{
    balance_conf_t *r = &out->conf[c];
    uint64_t k = in->accumulate ? in->accumulate : 1, lo = 0, hi = 1;
    if (need(in, out, c, k) > (double)in->device) {
        r->largest = 0;
        r->need_next = (uint64_t)need(in, out, c, k);
        return;
    }
    while (hi < ((uint64_t)1 << 40) && need(in, out, c, hi * k) <= (double)in->device)
        lo = hi, hi *= 2;
    if (hi >= ((uint64_t)1 << 40)) {
        r->largest = UINT64_MAX;                    /* peak live does not grow with the batch */
        return;
    }
    while (hi - lo > 1) {
        uint64_t mid = lo + (hi - lo) / 2;
        *(need(in, out, c, mid * k) <= (double)in->device ? &lo : &hi) = mid;
    }
    r->largest = lo * k;
    r->margin = (int64_t)in->device - (int64_t)ceil(need(in, out, c, lo * k));
    r->need_next = (uint64_t)ceil(need(in, out, c, (lo + 1) * k));
}

int balance_fit(const balance_in_t *in, balance_out_t *out)
{
    memset(out, 0, sizeof *out);
    double b0 = (double)in->batch[0], b1 = (double)in->batch[1];
    if (in->n_recs < 2 || in->batch[0] == in->batch[1]) {
        snprintf(out->error, sizeof out->error, "--batch: the two fitted recordings need different batch sizes");
        return -1;
    }
    if (!in->device) {
        snprintf(out->error, sizeof out->error, "--batch: no device size (give --device-memory)");
        return -1;
    }
    double p0 = (double)in->trace[0]->peak_live_bytes, p1 = (double)in->trace[1]->peak_live_bytes;
    out->s = (p1 - p0) / (b1 - b0);
    out->a = p0 - out->s * b0;
    if (in->accumulate > 1 && accumulation(in, out)) {
        snprintf(out->error, sizeof out->error, "out of host memory");
        return -1;
    }
    for (int c = 0; c < in->n_confs; c++) {
        balance_conf_t *r = &out->conf[c];
        for (int i = 0; i < 2; i++) {
            double p = (double)in->trace[i]->peak_live_bytes;
            r->ratio[i] = in->min_device[c][i] && p > 0 ? ((double)in->min_device[c][i] - (double)in->reserve) / p
                                                        : (in->min_device[c][i] ? 1.0 : INFINITY);
        }
        largest(in, out, c);
        for (int i = 2; i < in->n_recs; i++) {
            r->held_pred[i] = (uint64_t)ceil(need(in, out, c, in->batch[i]));
            r->held_min[i] = in->min_device[c][i];
        }
    }
    return 0;
}

static const char *gib(double b, char *out, size_t len)
{
    if (fabs(b) >= (double)((uint64_t)1 << 30))
        snprintf(out, len, "%.2f GiB", b / (double)((uint64_t)1 << 30));
    else
        snprintf(out, len, "%.1f MiB", b / (double)((uint64_t)1 << 20));
    return out;
}

static double err_pct(double pred, double got)
{
    return got > 0 ? 100.0 * (pred - got) / got : 0.0;
}

void balance_print(FILE *f, const balance_in_t *in, const balance_out_t *out)
{
    char a[32], b[32], c[32];
    fprintf(f, "balance point on a %s device, %s reserved; fitted on batch %" PRIu64 " (%s) and %" PRIu64 " (%s)\n",
            gib((double)in->device, a, sizeof a), gib((double)in->reserve, b, sizeof b), in->batch[0],
            in->trace[0]->name, in->batch[1], in->trace[1]->name);
    fprintf(f, "  peak live = %s + %s per sample\n", gib(out->a, a, sizeof a), gib(out->s, b, sizeof b));
    if (in->accumulate > 1)
        fprintf(f, "  with %u micro-batches of B/%u: %zu allocations per-step (same size in both recordings), %zu "
                   "per-micro-batch (%s); per-micro-batch peak %s + %s per sample, per-step %s live then, %s kept "
                   "between micro-batches\n",
                in->accumulate, in->accumulate, out->per_step, out->per_micro,
                out->paired ? "paired in order" : "told apart by size", gib(out->v0, a, sizeof a),
                gib(out->v1, b, sizeof b), gib((double)out->fixed_at_peak, c, sizeof c),
                gib((double)out->kept, c + 16, sizeof c - 16));
    fprintf(f, "  %-16s %14s %12s  %s\n", "configuration", "largest batch", "margin", "the next batch");
    uint64_t step = in->accumulate ? in->accumulate : 1;
    for (int k = 0; k < in->n_confs; k++) {
        const balance_conf_t *r = &out->conf[k];
        if (r->largest == UINT64_MAX)
            fprintf(f, "  %-16s %14s\n", in->label[k], "any");
        else if (r->largest == 0)
            fprintf(f, "  %-16s %14s %12s  %" PRIu64 " needs %s, %s over\n", in->label[k], "none", "", step,
                    gib((double)r->need_next, c, sizeof c), gib((double)r->need_next - (double)in->device, a, sizeof a));
        else
            fprintf(f, "  %-16s %14" PRIu64 " %12s  %" PRIu64 " needs %s, %s over\n", in->label[k], r->largest,
                    gib((double)r->margin, a, sizeof a), r->largest + step, gib((double)r->need_next, c, sizeof c),
                    gib((double)r->need_next - (double)in->device, b, sizeof b));
    }
    for (int i = 2; i < in->n_recs; i++) {
        double pp = balance_peak(in, out, in->batch[i]), pg = (double)in->trace[i]->peak_live_bytes;
        fprintf(f, "  held out: batch %" PRIu64 " (%s): peak live %s predicted, %s replayed (%+.2f%%)\n", in->batch[i],
                in->trace[i]->name, gib(pp, a, sizeof a), gib(pg, b, sizeof b), err_pct(pp, pg));
        for (int k = 0; k < in->n_confs; k++) {
            const balance_conf_t *r = &out->conf[k];
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

void balance_json(FILE *f, const balance_in_t *in, const balance_out_t *out, void (*jstr)(FILE *, const char *))
{
    fprintf(f, ", \"balance\": {\"device_memory_bytes\": %" PRIu64 ", \"accumulate\": %u, \"fitted\": [%" PRIu64
               ", %" PRIu64 "], \"peak_live\": {\"intercept_bytes\": ",
            in->device, in->accumulate ? in->accumulate : 1, in->batch[0], in->batch[1]);
    jnum(f, out->a);
    fputs(", \"bytes_per_sample\": ", f);
    jnum(f, out->s);
    fputs("}", f);
    if (in->accumulate > 1) {
        fprintf(f, ", \"micro_batch\": {\"per_step_allocations\": %zu, \"per_micro_batch_allocations\": %zu, "
                   "\"paired\": %s, \"peak_intercept_bytes\": ", out->per_step, out->per_micro,
                out->paired ? "true" : "false");
        jnum(f, out->v0);
        fputs(", \"peak_bytes_per_sample\": ", f);
        jnum(f, out->v1);
        fprintf(f, ", \"per_step_live_at_peak_bytes\": %" PRIu64 ", \"kept_bytes\": %" PRIu64 "}", out->fixed_at_peak,
                out->kept);
    }
    fputs(", \"configurations\": [", f);
    for (int k = 0; k < in->n_confs; k++) {
        const balance_conf_t *r = &out->conf[k];
        fprintf(f, "%s\n      {\"label\": ", k ? "," : "");
        jstr(f, in->label[k]);
        fputs(", \"ratio\": [", f);
        jnum(f, r->ratio[0]);
        fputs(", ", f);
        jnum(f, r->ratio[1]);
        if (r->largest == UINT64_MAX)
            fputs("], \"largest_batch\": null, \"any_batch\": true, \"margin_bytes\": null, \"next_batch_needs_bytes\": null", f);
        else
        {
            char margin[32] = "null";
            if (r->largest)
                snprintf(margin, sizeof margin, "%" PRId64, r->margin);
            fprintf(f, "], \"largest_batch\": %" PRIu64 ", \"any_batch\": false, \"margin_bytes\": %s"
                       ", \"next_batch_needs_bytes\": %" PRIu64, r->largest, margin, r->need_next);
        }
        fputs(", \"held_out\": [", f);
        for (int i = 2; i < in->n_recs; i++)
            fprintf(f, "%s{\"batch\": %" PRIu64 ", \"predicted_peak_live_bytes\": %.0f, \"peak_live_bytes\": %" PRIu64
                       ", \"predicted_min_device_bytes\": %" PRIu64 ", \"min_device_bytes\": %" PRIu64 "}",
                    i > 2 ? ", " : "", in->batch[i], balance_peak(in, out, in->batch[i]),
                    in->trace[i]->peak_live_bytes, r->held_pred[i], r->held_min[i]);   /* 0: fits on no device */
        fputs("]}", f);
    }
    fputs("]}", f);
}

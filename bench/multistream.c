/* multistream.c - see multistream.h. */
#include "multistream.h"
#include "prng.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIB (1ull << 20)

typedef struct gen {
    trace_t *t;
    size_t cap;
    uint64_t live, *sizes;                 /* bytes live; each slot's size */
    size_t cap_sizes;
    int failed;
} gen_t;

static void push(gen_t *g, trace_event_t e)
{
    trace_t *t = g->t;
    if (g->failed)
        return;
    if (t->n_events == g->cap) {
        size_t cap = g->cap ? g->cap * 2 : 4096;
        trace_event_t *ev = realloc(t->events, cap * sizeof *ev);
        if (!ev) {
            g->failed = 1;
            return;
        }
        t->events = ev;
        g->cap = cap;
    }
    t->events[t->n_events++] = e;
}

static uint16_t stream_index(trace_t *t, long long id)
{
    for (size_t i = 0; i < t->n_streams; i++)
        if (t->stream_ids[i] == id)
            return (uint16_t)i;
    return 0;                              /* the ids are registered up front */
}

/* A new allocation of size bytes on stream id: its slot. */
static uint32_t alloc(gen_t *g, uint64_t size, long long stream)
{
    trace_t *t = g->t;
    uint32_t slot = (uint32_t)t->n_slots++;
    if (slot == g->cap_sizes) {
        size_t cap = g->cap_sizes ? g->cap_sizes * 2 : 1024;
        uint64_t *s = realloc(g->sizes, cap * sizeof *s);
        if (!s) {
            g->failed = 1;
            return slot;
        }
        g->sizes = s;
        g->cap_sizes = cap;
    }
    g->sizes[slot] = size;
    push(g, (trace_event_t){.size = size, .slot = slot, .stream = stream_index(t, stream), .op = TRACE_ALLOC});
    g->live += size;
    if (g->live > t->peak_live_bytes)
        t->peak_live_bytes = g->live;
    return slot;
}

static void release(gen_t *g, uint32_t slot)
{
    if (g->failed)
        return;
    push(g, (trace_event_t){.slot = slot, .op = TRACE_FREE});
    g->live -= g->sizes[slot];
}

static void record(gen_t *g, uint32_t slot, long long stream)
{
    push(g, (trace_event_t){.slot = slot, .stream = stream_index(g->t, stream), .op = TRACE_RECORD});
}

/* Sizes as tensors have them: a multiple of 512 bytes. */
static uint64_t tensor(bench_rng_t *r, uint64_t base, double lo, double hi)
{
    double f = lo + (hi - lo) * bench_rng_unit(r);
    uint64_t b = (uint64_t)((double)base * f);
    return (b + 511) / 512 * 512;
}

#define LAYERS 24
#define PREFETCH 4
#define COMM 2

/* Offload: weights live on the host and come back layer by layer on four
 * prefetch streams, used by the compute stream (record_stream), freed once
 * the layer is done; activations on the compute stream, sized by each
 * step's sequence length. */
static void offload_step(gen_t *g, bench_rng_t *r, const long long *pf)
{
    double seq = 0.5 + 1.5 * bench_rng_unit(r);        /* this step's length */
    uint32_t w[LAYERS], act[LAYERS];
    for (int l = 0; l < LAYERS; l++) {                 /* forward */
        w[l] = alloc(g, tensor(r, 40 * MIB, 0.9, 1.1), pf[l % PREFETCH]);
        record(g, w[l], 0);
        act[l] = alloc(g, tensor(r, 12 * MIB, seq * 0.9, seq * 1.1), 0);
        uint32_t tmp = alloc(g, tensor(r, 24 * MIB, seq * 0.8, seq * 1.2), 0);
        release(g, tmp);
        if (l >= 2)
            release(g, w[l - 2]);
    }
    release(g, w[LAYERS - 2]);
    release(g, w[LAYERS - 1]);
    for (int l = LAYERS - 1; l >= 0; l--) {            /* backward: the weights again */
        w[l] = alloc(g, tensor(r, 40 * MIB, 0.9, 1.1), pf[l % PREFETCH]);
        record(g, w[l], 0);
        uint32_t grad = alloc(g, tensor(r, 12 * MIB, seq * 0.9, seq * 1.1), 0);
        release(g, act[l]);
        release(g, w[l]);
        release(g, grad);
    }
}

/* Data parallel: activations on the compute stream; in backward, gradient
 * buckets on two communication streams (the all-reduce), used by the
 * compute stream and freed two layers later; optimizer state once. */
static void comm_step(gen_t *g, bench_rng_t *r, const long long *cm)
{
    double seq = 0.5 + 1.5 * bench_rng_unit(r);
    uint32_t act[LAYERS], bucket[LAYERS];
    for (int l = 0; l < LAYERS; l++) {
        act[l] = alloc(g, tensor(r, 16 * MIB, seq * 0.9, seq * 1.1), 0);
        uint32_t tmp = alloc(g, tensor(r, 32 * MIB, seq * 0.8, seq * 1.2), 0);
        release(g, tmp);
    }
    for (int l = LAYERS - 1; l >= 0; l--) {
        uint32_t grad = alloc(g, tensor(r, 16 * MIB, seq * 0.9, seq * 1.1), 0);
        bucket[l] = alloc(g, 25 * MIB, cm[l % COMM]);
        record(g, bucket[l], 0);
        release(g, act[l]);
        release(g, grad);
        if (l + 2 < LAYERS)
            release(g, bucket[l + 2]);
    }
    release(g, bucket[1]);
    release(g, bucket[0]);
}

#define PIPE_PREFETCH 8

/* Ten streams, as a large model trained with offloading: each layer's four
 * weights (their sizes fixed by the layer's shapes) prefetched on one of
 * eight streams and used by the compute stream, freed one layer later;
 * each layer's activation copied out to the host on an offload stream
 * (used there, then freed) and copied back in backward (allocated on the
 * offload stream, used by the compute stream); a small residual kept on
 * the compute stream from forward to backward. side[0..7]: prefetch,
 * side[8]: offload. */
static void pipeline_step(gen_t *g, bench_rng_t *r, const long long *side)
{
    static const uint64_t shapes[4] = {24 * MIB, 8 * MIB, 22 * MIB, 22 * MIB};
    double seq = 0.5 + 1.5 * bench_rng_unit(r);
    const long long off = side[PIPE_PREFETCH];
    uint32_t w[LAYERS][4], res[LAYERS];
    for (int l = 0; l < LAYERS; l++) {                 /* forward */
        for (int k = 0; k < 4; k++) {
            w[l][k] = alloc(g, shapes[k], side[l % PIPE_PREFETCH]);
            record(g, w[l][k], 0);
        }
        uint32_t act = alloc(g, tensor(r, 12 * MIB, seq * 0.9, seq * 1.1), 0);
        uint32_t tmp = alloc(g, tensor(r, 24 * MIB, seq * 0.8, seq * 1.2), 0);
        release(g, tmp);
        res[l] = alloc(g, tensor(r, 2 * MIB, seq * 0.9, seq * 1.1), 0);
        record(g, act, off);                           /* copied out to the host */
        release(g, act);
        if (l >= 1)
            for (int k = 0; k < 4; k++)
                release(g, w[l - 1][k]);
    }
    for (int k = 0; k < 4; k++)
        release(g, w[LAYERS - 1][k]);
    for (int l = LAYERS - 1; l >= 0; l--) {            /* backward */
        for (int k = 0; k < 4; k++) {
            w[l][k] = alloc(g, shapes[k], side[l % PIPE_PREFETCH]);
            record(g, w[l][k], 0);
        }
        uint32_t act = alloc(g, tensor(r, 12 * MIB, seq * 0.9, seq * 1.1), off);   /* copied back in */
        record(g, act, 0);
        uint32_t grad = alloc(g, tensor(r, 12 * MIB, seq * 0.9, seq * 1.1), 0);
        release(g, act);
        release(g, res[l]);
        release(g, grad);
        if (l + 1 < LAYERS)
            for (int k = 0; k < 4; k++)
                release(g, w[l + 1][k]);
    }
    for (int k = 0; k < 4; k++)
        release(g, w[0][k]);
}

static const char *const kinds[] = {"multistream-offload", "multistream-comm", "multistream-pipeline"};

size_t multistream_count(void) { return sizeof kinds / sizeof kinds[0]; }

int multistream_trace(size_t kind, unsigned steps, trace_t *t)
{
    return multistream_trace_seeded(kind, steps, 0, t);
}

int multistream_trace_seeded(size_t kind, unsigned steps, unsigned seed, trace_t *t)
{
    memset(t, 0, sizeof *t);
    if (kind >= multistream_count()) {
        snprintf(t->error, sizeof t->error, "no multistream workload %zu", kind);
        return -1;
    }
    snprintf(t->name, sizeof t->name, "%s", kinds[kind]);
    snprintf(t->path, sizeof t->path, "(synthetic) %s", kinds[kind]);
    const long long pf[PREFETCH] = {11, 12, 13, 14}, cm[COMM] = {21, 22};
    const long long pipe[PIPE_PREFETCH + 1] = {31, 32, 33, 34, 35, 36, 37, 38, 39};
    const long long *side = kind == 0 ? pf : kind == 1 ? cm : pipe;
    size_t n_side = kind == 0 ? PREFETCH : kind == 1 ? COMM : PIPE_PREFETCH + 1;
    t->stream_ids = calloc(n_side + 1, sizeof *t->stream_ids);
    if (!t->stream_ids) {
        snprintf(t->error, sizeof t->error, "out of host memory");
        return -1;
    }
    t->stream_ids[0] = 0;                              /* compute: the default stream */
    for (size_t i = 0; i < n_side; i++)
        t->stream_ids[i + 1] = side[i];
    t->n_streams = n_side + 1;
    gen_t g = {.t = t};
    bench_rng_t r = {.s = 0x5eed0000u + (unsigned)kind + 1000u * seed};
    uint32_t state[2];
    if (kind == 1)                                     /* the optimizer's state, allocated once */
        for (int i = 0; i < 2; i++)
            state[i] = alloc(&g, 512 * MIB, 0);
    for (unsigned s = 0; s < steps && !g.failed; s++)
        (kind == 0 ? offload_step : kind == 1 ? comm_step : pipeline_step)(&g, &r, side);
    if (kind == 1)
        for (int i = 0; i < 2; i++)
            release(&g, state[i]);
    free(g.sizes);
    if (g.failed) {
        trace_free(t);
        snprintf(t->error, sizeof t->error, "out of host memory");
        return -1;
    }
    t->n_rows = t->n_events;
    return 0;
}

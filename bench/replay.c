/* replay.c - see replay.h. */
#include "replay.h"
#include "clock.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { SLOT_NONE = 0, SLOT_LIVE = 1, SLOT_REFUSED = 2 };

typedef struct replay_state {
    const trace_t *t;
    const bench_alloc_ops_t *ops;
    const replay_opts_t *o;
    void *ctx;
    cudaStream_t *streams;
    void **ptrs;
    uint8_t *state;
    uint64_t *sizes;         /* each slot's size, while live */
    uint64_t live;           /* bytes live (as asked) */
    replay_result_t *r;
} replay_state_t;

static void fail(replay_result_t *r, const char *what)
{
    r->ok = 0;
    snprintf(r->error, sizeof r->error, "%s%s%.160s", what, *bench_ops_error() ? ": " : "",
             bench_ops_error());
}

static int make_streams(replay_state_t *s)
{
    s->streams = calloc(s->t->n_streams + 1, sizeof *s->streams);
    if (!s->streams)
        return -1;
    for (size_t i = 0; i < s->t->n_streams; i++)
        if (s->t->stream_ids[i] != 0 && cudaStreamCreate(&s->streams[i]) != cudaSuccess)
            return -1;
    return 0;
}

static void destroy_streams(replay_state_t *s)
{
    for (size_t i = 0; s->streams && i < s->t->n_streams; i++)
        if (s->streams[i])
            cudaStreamDestroy(s->streams[i]);
    free(s->streams);
}

static void progress(const replay_state_t *s, size_t i)
{
    if (s->o->progress && s->t->n_events > (1u << 18) && (i & 0xffff) == 0)
        fprintf(stderr, "\r  replay %s: %zu/%zu events", s->t->name, i, s->t->n_events);
}

static void first_refusal(replay_state_t *s, const trace_event_t *e)
{
    if (s->r->ooms++)
        return;
    s->r->first_oom = (size_t)(e - s->t->events);
    if (s->o->at_oom)
        s->o->at_oom(s->ctx, s->o->inspect_arg);
}

static int do_alloc(replay_state_t *s, const trace_event_t *e)
{
    int r = s->ops->malloc(s->ctx, &s->ptrs[e->slot], e->size, s->streams[e->stream]);
    if (r == BENCH_OK) {
        s->state[e->slot] = SLOT_LIVE;
        s->sizes[e->slot] = e->size;
        if ((s->live += e->size) > s->r->peak_live)
            s->r->peak_live = s->live;
        if (s->o->track_peak && !s->ops->peak_reserved) {
            uint64_t res = s->ops->reserved_bytes(s->ctx);
            if (res > s->r->peak_reserved)
                s->r->peak_reserved = res;
        }
        return 0;
    }
    if (r != BENCH_OOM) {
        fail(s->r, "allocation failed (not an OOM)");
        return -1;
    }
    s->state[e->slot] = SLOT_REFUSED;
    first_refusal(s, e);
    if (s->o->stop_at_oom) {
        s->r->aborted = 1;
        return -1;
    }
    return 0;
}

static int do_free(replay_state_t *s, const trace_event_t *e)
{
    if (s->state[e->slot] != SLOT_LIVE) {
        s->r->skipped_frees++;
        return 0;
    }
    s->state[e->slot] = SLOT_NONE;
    s->live -= s->sizes[e->slot];
    if (s->ops->free(s->ctx, s->ptrs[e->slot]) != BENCH_OK) {
        fail(s->r, "free failed");
        return -1;
    }
    return 0;
}

/* The block is used on another stream too (cca_record_stream); allocators
 * without the call ignore it, as they would have to. */
static int do_record(replay_state_t *s, const trace_event_t *e)
{
    if (s->state[e->slot] != SLOT_LIVE || !s->ops->record_stream)
        return 0;
    if (s->ops->record_stream(s->ctx, s->ptrs[e->slot], s->streams[e->stream]) != BENCH_OK) {
        fail(s->r, "record_stream failed");
        return -1;
    }
    return 0;
}

static void point_add(replay_point_t *p, uint64_t v)
{
    if (!p->used) {
        p->lo = p->hi = v;
        p->used = 1;
        p->lo_first = 1;
    } else if (v < p->lo) {
        p->lo = v;
        p->lo_first = 0;              /* the lowest now comes after the highest */
    } else if (v > p->hi) {
        p->hi = v;
        p->lo_first = 1;
    }
    p->last = v;
}

static void sample(replay_state_t *s, size_t i)
{
    replay_series_t *sr = s->o->series;
    size_t b = (size_t)((unsigned __int128)i * sr->n / s->t->n_events);
    point_add(&sr->live[b], s->live);
    point_add(&sr->reserved[b], s->ops->reserved_bytes(s->ctx));
}

/* A request the recorded run was refused, made again (opts->failures): a
 * refusal counts as one; served, it is freed at once (what the run would
 * have done next is not in the trace). */
static int do_failure(replay_state_t *s, const trace_event_t *e)
{
    if (!s->o->failures)
        return 0;
    void *p = NULL;
    int r = s->ops->malloc(s->ctx, &p, e->size, s->streams[e->stream]);
    if (r == BENCH_OK) {
        if (s->live + e->size > s->r->peak_live)
            s->r->peak_live = s->live + e->size;
        if (s->o->series) {                   /* the moment it was live */
            s->live += e->size;
            sample(s, (size_t)(e - s->t->events));
            s->live -= e->size;
        }
        return s->ops->free(s->ctx, p) == BENCH_OK ? 0 : (fail(s->r, "free failed"), -1);
    }
    if (r != BENCH_OOM) {
        fail(s->r, "allocation failed (not an OOM)");
        return -1;
    }
    first_refusal(s, e);
    if (s->o->stop_at_oom) {
        s->r->aborted = 1;
        return -1;
    }
    return 0;
}

static void event_loop(replay_state_t *s)
{
    simctl_calls_t c0, c1;
    size_t i, n = s->t->n_events;
    simctl_model(s->o->modelled);
    simctl_snapshot(&c0);
    uint64_t t0 = bench_now_ns();
    for (i = 0; i < n; i++) {
        const trace_event_t *e = &s->t->events[i];
        progress(s, i);
        int r = e->op == TRACE_ALLOC ? do_alloc(s, e) : e->op == TRACE_FREE ? do_free(s, e) :
                e->op == TRACE_RECORD ? do_record(s, e) : do_failure(s, e);
        if (r != 0)
            break;
        if (s->o->series)
            sample(s, i);
    }
    s->r->ns = bench_now_ns() - t0;
    simctl_snapshot(&c1);
    simctl_model(0);
    s->r->events = i < n ? i + 1 : n;
    simctl_per_op(&c0, &c1, 1.0, &s->r->calls);
    if (s->o->progress && n > (1u << 18))
        fprintf(stderr, "\r%60s\r", "");
}

/* After the loop: the allocator's peak, its check, then every block still
 * live is freed (untimed) so that no allocator leaks device memory. */
static void finish(replay_state_t *s)
{
    if (s->ops->peak_reserved)
        s->r->peak_reserved = s->ops->peak_reserved(s->ctx);
    if (s->o->check && s->ops->check &&
        s->ops->check(s->ctx, s->r->check_msg, sizeof s->r->check_msg) != BENCH_OK)
        s->r->check_failed = 1;
    if (s->o->inspect)
        s->o->inspect(s->ctx, s->o->inspect_arg);
    for (size_t k = 0; k < s->t->n_slots; k++)
        if (s->state[k] == SLOT_LIVE)
            s->ops->free(s->ctx, s->ptrs[k]);
}

replay_result_t replay(const trace_t *t, const bench_alloc_ops_t *ops, const char *conf,
                       const replay_opts_t *o)
{
    replay_result_t r;
    replay_state_t s = {.t = t, .ops = ops, .o = o, .r = &r};
    memset(&r, 0, sizeof r);
    r.ok = 1;
    r.first_oom = SIZE_MAX;
    if (o->capacity)
        simctl_reset(o->capacity);
    void *reserve = NULL;
    s.ptrs = calloc(t->n_slots + 1, sizeof *s.ptrs);
    s.state = calloc(t->n_slots + 1, 1);
    s.sizes = calloc(t->n_slots + 1, sizeof *s.sizes);
    if (!s.ptrs || !s.state || !s.sizes || make_streams(&s) != 0)
        fail(&r, "out of host memory, or cannot create the trace's streams");
    else if (o->reserve && cudaMalloc(&reserve, o->reserve) != cudaSuccess) {
        (void)cudaGetLastError();
        reserve = NULL;
        fail(&r, "the reserve does not fit on the device");
    }
    else if (!(s.ctx = ops->init(conf, r.error, sizeof r.error)))
        r.ok = 0;
    else {
        event_loop(&s);
        finish(&s);
        ops->fini(s.ctx);
    }
    if (reserve)
        cudaFree(reserve);
    destroy_streams(&s);
    free(s.ptrs);
    free(s.state);
    free(s.sizes);
    return r;
}

size_t replay_big_capacity(const trace_t *t)
{
    unsigned long long c = 4ull * t->peak_live_bytes, floor = 80ull << 30;
    return (size_t)(c > floor ? c : floor);
}

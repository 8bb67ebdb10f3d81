/* events.c - frees that wait for other streams: after cca_record_stream,
 * freeing a block records a pooled event on each stream that used it; the
 * block returns to its pool once they all completed. Each stream keeps the
 * events its blocks wait for and a pool of spare events. As PyTorch does
 * per malloc, completed events are handled first, every stream's: on the
 * hot path when only the caller's stream has any pending (under its lock,
 * without blocking), else all locked; the OOM path and empty cache wait
 * for them. */
#include <stdlib.h>
#include <string.h>
#include "internal.h"

/* An event that cannot be asked about cannot hold memory forever, nor may
 * its block be reused while the stream may still use it: wait for the whole
 * device instead, then the block is safe. */
static void events_wait_device(cca_allocator_t *a)
{
    _cca_errors_clear();
    dev_guard_t g;
    if (_cca_segment_device_enter(a, &g) != cudaSuccess || cudaDeviceSynchronize() != cudaSuccess) _cca_errors_clear();
    _cca_segment_device_leave(&g);
}

static void events_pool_put(cca_events_t *ev, cudaEvent_t e)
{
    if (ev->n_pool < ev->cap_pool) ev->pool[ev->n_pool++] = e;
    else cudaEventDestroy(e);
}

/* Pending record p of st (taken out of st's array by the caller) completed:
 * its event goes back to the pool, and the block is free once its last
 * event did, its figures changed first; false (nothing done) if the hot
 * path's counters cannot take that change (the caller goes all locked). */
static bool events_settle(cca_allocator_t *a, cca_stream_t *st, cca_pending_t p)
{
    if (p.block->event_count == 1) {
        cca_delta_t d;
        _cca_settle_delta(&d, p.block);
        if (!_cca_counters_apply(a, st, p.block->seg->pool, &d)) return false;
    }
    events_pool_put(&st->events, p.event);
    if (--p.block->event_count == 0) {
        _cca_history_completed(a, p.block);   /* history is off on the hot path (a->hooks) */
        _cca_block_free(a, p.block);
        if (st->dead)                                 /* its segment may go back now: reap on the next all-locked call */
            atomic_store_explicit(&a->dead_pending, true, memory_order_relaxed);
    }
    return true;
}

/* st's records keep the order they were recorded in (one pass, read index
 * r, write index w: what is still pending moves down): blocks come back
 * oldest first per owning stream. PyTorch keeps its queues per stream of
 * use; where one stream uses another's blocks, as with record_stream onto
 * a side stream, the two orders are the same. */
static void events_kept(cca_allocator_t *a, cca_events_t *ev, size_t w, size_t r)
{
    size_t n = ev->n_pending;
    if (r < n && w < r) memmove(&ev->pending[w], &ev->pending[r], (n - r) * sizeof ev->pending[0]);
    ev->n_pending = w + (n - r);
    if (r > w) atomic_fetch_sub_explicit(&a->pending_events, r - w, memory_order_relaxed);
}

void _cca_events_process(cca_allocator_t *a)
{
    for (cca_stream_t *st = a->streams; st; st = st->next) {
        cca_events_t *ev = &st->events;
        size_t w = 0, r = 0;
        for (; r < ev->n_pending; r++) {
            cca_pending_t p = ev->pending[r];
            cudaError_t e = cudaEventQuery(p.event);
            if (e == cudaErrorNotReady) { _cca_errors_clear(); ev->pending[w++] = p; continue; }
            if (e != cudaSuccess) events_wait_device(a);
            events_settle(a, st, p);                  /* all locked: the counters take it */
        }
        events_kept(a, ev, w, r);
    }
}

/* The hot path's check of st's events (st locked): false when a block could
 * not come back within st's leases (the caller takes the all-locked path). */
bool _cca_events_process_stream(cca_allocator_t *a, cca_stream_t *st)
{
    cca_events_t *ev = &st->events;
    bool flushed = false, ok = true;
    size_t w = 0, r = 0;
    for (; r < ev->n_pending; r++) {
        cca_pending_t p = ev->pending[r];
        cudaError_t e = cudaEventQuery(p.event);
        if (e == cudaErrorNotReady) { _cca_errors_clear(); ev->pending[w++] = p; continue; }
        if (e != cudaSuccess) events_wait_device(a);
        if (!flushed) {                               /* a block may be freed: merges need the real neighbours */
            _cca_park_flush(a, st, CCA_POOL_SMALL);
            _cca_park_flush(a, st, CCA_POOL_LARGE);
            flushed = true;
        }
        if (!events_settle(a, st, p)) { ok = false; break; }   /* p stays, with the rest */
    }
    events_kept(a, ev, w, r);
    return ok;
}

void _cca_events_sync_pending(cca_allocator_t *a)
{
    a->stats.num_sync_all_streams++;
    for (cca_stream_t *st = a->streams; st; st = st->next) {
        cca_events_t *ev = &st->events;
        size_t r = 0;
        for (; r < ev->n_pending; r++) {              /* oldest first, as recorded */
            if (cudaEventSynchronize(ev->pending[r].event) != cudaSuccess) events_wait_device(a);
            events_settle(a, st, ev->pending[r]);
        }
        events_kept(a, ev, 0, r);
    }
}

static cudaEvent_t events_event_get(cca_events_t *ev)
{
    if (ev->n_pool) return ev->pool[--ev->n_pool];
    cudaEvent_t e = NULL;
    if (cudaEventCreateWithFlags(&e, cudaEventDisableTiming) != cudaSuccess) {
        _cca_errors_clear();
        return NULL;
    }
    return e;
}

/* Room for n more pending events, and for all of them in the pool later. */
static bool events_pending_reserve(cca_events_t *ev, size_t n)
{
    if (ev->n_pending + n > ev->cap_pending) {
        size_t cap = (ev->cap_pending ? ev->cap_pending * 2 : 16) + n;
        cca_pending_t *p = realloc(ev->pending, cap * sizeof *p);
        if (!p) return false;
        ev->pending = p;
        ev->cap_pending = cap;
    }
    if (ev->n_pool + ev->n_pending + n > ev->cap_pool) {
        size_t cap = ev->n_pool + ev->n_pending + n + 16;
        cudaEvent_t *e = realloc(ev->pool, cap * sizeof *e);
        if (!e) return false;
        ev->pool = e;
        ev->cap_pool = cap;
    }
    return true;
}

/* Waits for work on a use stream the allocator cannot record an event on. */
static void events_wait_use(cca_allocator_t *a, const cca_use_t *u)
{
    cudaError_t e = cudaErrorInvalidValue;
    if (!_cca_stream_is_per_thread_key(u->key) || u->key == _cca_stream_current_per_thread_key(a->cfg.device))
        e = cudaStreamSynchronize(u->handle);
    if (e != cudaSuccess) {
        _cca_errors_clear();
        if (cudaDeviceSynchronize() != cudaSuccess) _cca_errors_clear();
    }
}

/* Records an event on each stream that used b; b is free once all complete
 * (b->requested, the caller's size, stays until then: requested_bytes and
 * the history's completion report it). */
void _cca_events_free_with_uses(cca_allocator_t *a, cca_block_t *b)
{
    cca_events_t *ev = &b->seg->stream->events;
    dev_guard_t g;
    bool ok = _cca_segment_device_enter(a, &g) == cudaSuccess && events_pending_reserve(ev, (size_t)b->n_uses);
    if (!ok) _cca_errors_clear();
    b->state = CCA_BLOCK_PENDING;                     /* the caller applied _cca_release_delta */
    b->event_count = 0;
    for (int i = 0; i < b->n_uses; i++) {
        const cca_use_t *u = &b->uses[i];
        bool named = !_cca_stream_is_per_thread_key(u->key) ||
                     u->key == _cca_stream_current_per_thread_key(a->cfg.device);
        cudaEvent_t e = ok && named ? events_event_get(ev) : NULL;
        if (e && cudaEventRecord(e, u->handle) == cudaSuccess) {
            ev->pending[ev->n_pending++] = (cca_pending_t){ e, b };
            atomic_fetch_add_explicit(&a->pending_events, 1, memory_order_relaxed);
            b->event_count++;
            continue;
        }
        if (e) { _cca_errors_clear(); ev->pool[ev->n_pool++] = e; }
        events_wait_use(a, u);
    }
    _cca_segment_device_leave(&g);
    if (b->event_count == 0) {                        /* nothing to wait for after all */
        cca_delta_t d;
        _cca_settle_delta(&d, b);
        _cca_counters_apply(a, b->seg->stream, b->seg->pool, &d);
        _cca_history_completed(a, b);
        _cca_block_free(a, b);
    }
}

/* Destroys a retired stream's spare events and frees its event arrays (all
 * locked; it has no pending event). */
void _cca_events_release(cca_allocator_t *a, cca_stream_t *st)
{
    cca_events_t *ev = &st->events;
    if (ev->n_pool) {
        dev_guard_t g;
        bool ok = _cca_segment_device_enter(a, &g) == cudaSuccess;
        for (size_t i = 0; ok && i < ev->n_pool; i++)
            if (cudaEventDestroy(ev->pool[i]) != cudaSuccess) _cca_errors_clear();
        if (!ok) _cca_errors_clear();
        _cca_segment_device_leave(&g);
    }
    free(ev->pending);
    free(ev->pool);
    *ev = (cca_events_t){ 0 };
}

/* Destroys every stream's events (all locked, a's device current). */
void _cca_events_destroy(cca_allocator_t *a)
{
    for (cca_stream_t *st = a->streams; st; st = st->next) {
        cca_events_t *ev = &st->events;
        for (size_t i = 0; i < ev->n_pending; i++) cudaEventDestroy(ev->pending[i].event);
        for (size_t i = 0; i < ev->n_pool; i++) cudaEventDestroy(ev->pool[i]);
        free(ev->pending);
        free(ev->pool);
        *ev = (cca_events_t){ 0 };
    }
}

size_t _cca_events_pending_total(const cca_allocator_t *a)
{
    size_t n = 0;
    for (const cca_stream_t *st = a->streams; st; st = st->next) n += st->events.n_pending;
    return n;
}

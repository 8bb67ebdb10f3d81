/* events.c - frees that wait for other streams: after cca_record_stream,
 * freeing a block records a pooled event on each stream that used it; the
 * block returns to its pool once they all completed, checked without
 * blocking when an allocation comes (or waited for on the OOM path and by
 * empty cache). All locked. */
#include <stdlib.h>
#include "internal.h"

static void set_pending(cca_allocator_t *a, size_t n)
{
    a->n_pending = n;
    atomic_store_explicit(&a->pending_count, n, memory_order_relaxed);
}

static void pending_done(cca_allocator_t *a, size_t i)
{
    cca_pending_t p = a->pending[i];
    a->pending[i] = a->pending[a->n_pending - 1];
    set_pending(a, a->n_pending - 1);
    if (a->n_event_pool < a->cap_event_pool) a->event_pool[a->n_event_pool++] = p.event;
    else cudaEventDestroy(p.event);
    if (--p.block->event_count == 0) _cca_free_block(a, p.block);
}

/* Frees the blocks whose stream events completed; never blocks. */
/* An event that cannot be asked about cannot hold memory forever, nor may
 * its block be reused while the stream may still use it: wait for the whole
 * device instead, then the block is safe. */
static void wait_device(cca_allocator_t *a)
{
    _cca_clear_error();
    dev_guard_t g;
    if (_cca_device_enter(a, &g) != cudaSuccess || cudaDeviceSynchronize() != cudaSuccess) _cca_clear_error();
    _cca_device_leave(&g);
}

void _cca_process_events(cca_allocator_t *a)
{
    for (size_t i = 0; i < a->n_pending;) {
        cudaError_t e = cudaEventQuery(a->pending[i].event);
        if (e == cudaErrorNotReady) { _cca_clear_error(); i++; continue; }
        if (e != cudaSuccess) wait_device(a);
        pending_done(a, i);
    }
}

void _cca_sync_pending(cca_allocator_t *a)
{
    a->stats.num_sync_all_streams++;
    while (a->n_pending) {
        if (cudaEventSynchronize(a->pending[a->n_pending - 1].event) != cudaSuccess) wait_device(a);
        pending_done(a, a->n_pending - 1);
    }
}

static cudaEvent_t event_get(cca_allocator_t *a)
{
    if (a->n_event_pool) return a->event_pool[--a->n_event_pool];
    cudaEvent_t ev = NULL;
    if (cudaEventCreateWithFlags(&ev, cudaEventDisableTiming) != cudaSuccess) {
        _cca_clear_error();
        return NULL;
    }
    return ev;
}

static bool pending_reserve(cca_allocator_t *a, size_t n)
{
    if (a->n_pending + n > a->cap_pending) {
        size_t cap = (a->cap_pending ? a->cap_pending * 2 : 16) + n;
        cca_pending_t *p = realloc(a->pending, cap * sizeof *p);
        if (!p) return false;
        a->pending = p;
        a->cap_pending = cap;
    }
    if (a->n_event_pool + a->n_pending + n > a->cap_event_pool) {
        size_t cap = a->n_event_pool + a->n_pending + n + 16;
        cudaEvent_t *e = realloc(a->event_pool, cap * sizeof *e);
        if (!e) return false;
        a->event_pool = e;
        a->cap_event_pool = cap;
    }
    return true;
}

/* Waits for work on a use stream the allocator cannot record an event on. */
static void wait_use(cca_allocator_t *a, const cca_use_t *u)
{
    cudaError_t e = cudaErrorInvalidValue;
    if (!_cca_stream_is_per_thread_key(u->key) || u->key == _cca_current_per_thread_key(a->cfg.device))
        e = cudaStreamSynchronize(u->handle);
    if (e != cudaSuccess) {
        _cca_clear_error();
        if (cudaDeviceSynchronize() != cudaSuccess) _cca_clear_error();
    }
}

/* Records an event on each stream that used b; b is free once all complete. */
void _cca_free_with_uses(cca_allocator_t *a, cca_block_t *b)
{
    dev_guard_t g;
    bool ok = _cca_device_enter(a, &g) == cudaSuccess && pending_reserve(a, (size_t)b->n_uses);
    if (!ok) _cca_clear_error();
    b->state = CCA_BLOCK_PENDING;
    b->event_count = 0;
    for (int i = 0; i < b->n_uses; i++) {
        const cca_use_t *u = &b->uses[i];
        bool named = !_cca_stream_is_per_thread_key(u->key) ||
                     u->key == _cca_current_per_thread_key(a->cfg.device);
        cudaEvent_t ev = ok && named ? event_get(a) : NULL;
        if (ev && cudaEventRecord(ev, u->handle) == cudaSuccess) {
            a->pending[a->n_pending] = (cca_pending_t){ ev, b };
            set_pending(a, a->n_pending + 1);
            b->event_count++;
            continue;
        }
        if (ev) { _cca_clear_error(); a->event_pool[a->n_event_pool++] = ev; }
        wait_use(a, u);
    }
    _cca_device_leave(&g);
    if (b->event_count == 0) _cca_free_block(a, b);
}

void _cca_events_destroy(cca_allocator_t *a)
{
    for (size_t i = 0; i < a->n_pending; i++) cudaEventDestroy(a->pending[i].event);
    for (size_t i = 0; i < a->n_event_pool; i++) cudaEventDestroy(a->event_pool[i]);
    free(a->pending);
    free(a->event_pool);
    a->pending = NULL;
    a->event_pool = NULL;
    set_pending(a, 0);
    a->n_event_pool = 0;
}

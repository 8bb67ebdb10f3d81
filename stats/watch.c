/* watch.c - threshold watches and measurement scopes. Both see a view at
 * the end of each cca_malloc, cca_free and cca_empty_cache (the core calls
 * acct.ops->changed only while the hooks flag is set, so an allocator
 * without watches pays one load). A crossing of a watch with a callback
 * goes to a per-thread queue and is delivered by the same thread after
 * unlock; a queued watch's crossing goes to the process's notice queue at
 * once, still all locked, so that crossings caused by different threads
 * are queued in the order they happened (the notice queue's mutex is taken
 * inside the allocator's locks and never the other way round). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "cca_u64map.h"
#include "stats_internal.h"

typedef struct threshold {
    uint64_t id;
    cca_watch_fn fn;                                  /* one of fn and crossing, or neither: queued */
    cca_crossing_fn crossing;
    void *arg;
    size_t bytes;
    cca_watch_kind_t which;
    bool above;                                       /* the figure was > bytes when last seen */
} threshold_t;

/* A scope follows the blocks allocated while it is open, to tell what
 * they left allocated: their addresses and sizes in the shared map
 * (common/cca_u64map.h), grown at half load from empty (0 is never an
 * address). */
typedef struct live { uintptr_t addr; size_t size; } live_t;
typedef struct live_set { CCA_U64MAP_FIELDS(live_t); } live_set_t;
CCA_U64MAP_DEFINE(watch_set, live_set_t, live_t, addr, cca_u64map_home_addr, 1, 2)

typedef struct scope {
    uint64_t token;
    cca_scope_result_t r;
    live_set_t set;                                   /* slots NULL until the first block */
} scope_t;

struct cca_watch_state {
    threshold_t *th;
    size_t n_th, cap_th;
    scope_t *sc;
    size_t n_sc, cap_sc;
    uint64_t next_id;                                 /* ids and tokens share it: never confused */
    int64_t last_count, last_bytes;                   /* allocation / allocated_bytes current, last seen */
};

typedef struct crossing {
    uint64_t alloc_id, watch_id;
    cca_watch_fn fn;
    cca_crossing_fn crossing;
    void *arg;
    size_t threshold, now;
    cca_watch_kind_t which;
    int rising;
} crossing_t;

/* This thread's crossings awaiting delivery, across allocators. */
static _Thread_local struct { crossing_t *q; size_t n, cap; } tq;
static pthread_key_t tq_key;                          /* frees the queue at thread exit */
static pthread_once_t tq_once = PTHREAD_ONCE_INIT;

static void watch_tq_key_make(void) { pthread_key_create(&tq_key, free); }

static void *watch_grow(void *p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap) return p;
    size_t n = *cap ? *cap * 2 : 8;
    while (n < need) n *= 2;
    void *q = realloc(p, n * elem);
    if (q) *cap = n;
    return q;
}

/* Queues a crossing; dropped only if host memory runs out. */
static void watch_tq_push(const crossing_t *c)
{
    crossing_t *q = watch_grow(tq.q, &tq.cap, tq.n + 1, sizeof *q);
    if (!q) return;
    if (q != tq.q) {
        pthread_once(&tq_once, watch_tq_key_make);
        pthread_setspecific(tq_key, q);
        tq.q = q;
    }
    tq.q[tq.n++] = *c;
}

/* Takes this thread's oldest crossing for allocator alloc_id. */
static bool watch_tq_take(uint64_t alloc_id, crossing_t *out)
{
    for (size_t i = 0; i < tq.n; i++) {
        if (tq.q[i].alloc_id != alloc_id) continue;
        *out = tq.q[i];
        memmove(&tq.q[i], &tq.q[i + 1], (tq.n - i - 1) * sizeof *tq.q);
        tq.n--;
        return true;
    }
    return false;
}

static inline size_t watch_figure(const cca_stats_t *st, cca_watch_kind_t which)
{
    const cca_stat_t *s = which == CCA_WATCH_RESERVED ? st->reserved_bytes : st->allocated_bytes;
    return (size_t)s[CCA_POOL_ALL].current;
}

/* Crossings of one call go in the order the figure passed them: upward
 * through the lower thresholds first, downward through the higher ones. */
static void watch_sort_crossings(crossing_t *c, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        crossing_t x = c[i];
        size_t j = i;
        while (j > 0 && (x.rising ? x.threshold < c[j - 1].threshold : x.threshold > c[j - 1].threshold)) {
            c[j] = c[j - 1];
            j--;
        }
        c[j] = x;
    }
}

static void watch_detect(const cca_view_t *v, cca_watch_kind_t which)
{
    struct cca_watch_state *w = v->acct->watch;
    size_t now = watch_figure(&v->stats, which), first = tq.n;
    for (size_t i = 0; i < w->n_th; i++) {
        threshold_t *t = &w->th[i];
        if (t->which != which || (now > t->bytes) == t->above) continue;
        t->above = now > t->bytes;
        watch_tq_push(&(crossing_t){ v->id, t->id, t->fn, t->crossing, t->arg, t->bytes, now, which, t->above });
    }
    if (tq.n == first) return;                        /* tq.q may still be NULL */
    watch_sort_crossings(tq.q + first, tq.n - first);
    size_t kept = first;                              /* queued watches' notices go now, under the lock, */
    for (size_t i = first; i < tq.n; i++) {           /* so that every thread's crossings queue in order */
        const crossing_t *c = &tq.q[i];
        if (c->fn || c->crossing) tq.q[kept++] = *c;
        else _cca_notice_watch(v->device, v->id, c->watch_id, c->which, c->threshold, c->now, c->rising);
    }
    tq.n = kept;
}

static void watch_scope_taken(scope_t *s, uintptr_t addr, size_t size)
{
    if (!watch_set_reserve(&s->set)) {
        s->r.left_untracked++;
        return;
    }
    *watch_set_put(&s->set, addr) = (live_t){ addr, size };
    s->r.left_allocated += size;
    s->r.left_allocations++;
}

static void watch_scope_freed(scope_t *s, uintptr_t addr)
{
    live_t *x = s->set.slots ? watch_set_find(&s->set, addr) : NULL;
    if (!x) return;                                   /* allocated before the scope opened */
    s->r.left_allocated -= x->size;
    s->r.left_allocations--;
    watch_set_erase(&s->set, x);
}

static void watch_update_scopes(const cca_view_t *v)
{
    struct cca_watch_state *w = v->acct->watch;
    int64_t count = v->stats.allocation[CCA_POOL_ALL].current, bytes = v->stats.allocated_bytes[CCA_POOL_ALL].current;
    int64_t dc = count - w->last_count, db = bytes - w->last_bytes;   /* one call: one malloc or one free */
    w->last_count = count;
    w->last_bytes = bytes;
    size_t alloc = watch_figure(&v->stats, CCA_WATCH_ALLOCATED), res = watch_figure(&v->stats, CCA_WATCH_RESERVED);
    for (size_t i = 0; i < w->n_sc; i++) {
        cca_scope_result_t *r = &w->sc[i].r;
        if (alloc > r->peak_allocated) r->peak_allocated = alloc;
        if (res > r->peak_reserved) r->peak_reserved = res;
        if (db > 0) { r->allocated_bytes += (size_t)db; r->allocations += (uint64_t)dc; }
        if (db < 0) { r->freed_bytes += (size_t)-db; r->frees += (uint64_t)-dc; }
        if (v->change.kind > 0) watch_scope_taken(&w->sc[i], v->change.addr, v->change.size);
        else if (v->change.kind < 0) watch_scope_freed(&w->sc[i], v->change.addr);
    }
}

void _cca_watch_changed(cca_view_t *v)
{
    watch_update_scopes(v);
    if (!v->acct->watch->n_th) return;
    watch_detect(v, CCA_WATCH_RESERVED);                    /* a segment is obtained before a block is taken from it */
    watch_detect(v, CCA_WATCH_ALLOCATED);
}

static cca_status_t watch_alive_view(cca_view_t *v, void *arg)
{
    uint64_t id = *(uint64_t *)arg;
    const struct cca_watch_state *w = v->acct->watch;
    for (size_t i = 0; w && i < w->n_th; i++)
        if (w->th[i].id == id) return CCA_OK;
    return CCA_ERROR_INVALID_ARGUMENT;
}

/* The allocator this thread is delivering for: a delivery started inside
 * it (a callback's own call, or the liveness view's, that changed the
 * figures) leaves its crossings to the loop below, which takes them after
 * the ones already queued - in the order they happened. */
static _Thread_local const cca_allocator_t *delivering;

void _cca_watch_deliver(cca_allocator_t *a)
{
    if (delivering == a) return;
    const cca_allocator_t *outer = delivering;
    delivering = a;
    crossing_t c;
    while (tq.n && watch_tq_take(cca_allocator_id(a), &c)) {            /* a callback may queue more: still in order */
        if (_cca_view(a, watch_alive_view, &c.watch_id) != CCA_OK) continue;
        if (c.crossing)                               /* queued watches' crossings are in the notice queue */
            c.crossing(c.which, c.now, c.rising, c.arg);
        else
            c.fn(c.arg, c.which, c.now, c.rising);
    }
    delivering = outer;
}

void _cca_watch_destroy(cca_acct_t *acct)
{
    if (!acct->watch) return;
    free(acct->watch->th);
    for (size_t i = 0; i < acct->watch->n_sc; i++) watch_set_fini(&acct->watch->sc[i].set);
    free(acct->watch->sc);
    free(acct->watch);
    acct->watch = NULL;
}

/* The state exists and its last-seen figures are current. */
static struct cca_watch_state *watch_state(cca_view_t *v)
{
    cca_acct_t *acct = v->acct;
    if (!acct->watch && !(acct->watch = calloc(1, sizeof *acct->watch))) return NULL;
    acct->watch->last_count = v->stats.allocation[CCA_POOL_ALL].current;
    acct->watch->last_bytes = v->stats.allocated_bytes[CCA_POOL_ALL].current;
    return acct->watch;
}

/* Every change goes all locked and is seen while watches or scopes exist. */
static void watch_set_flag(cca_view_t *v)
{
    const struct cca_watch_state *w = v->acct->watch;
    _cca_view_hooks(v, w && (w->n_th || w->n_sc));
}

typedef struct watch_req {
    cca_watch_kind_t which;
    size_t bytes;
    cca_watch_fn fn;
    cca_crossing_fn crossing;
    void *arg;
    uint64_t id;                                      /* in: a watch or scope to end; out: the new one */
    cca_scope_result_t *out;
    size_t out_size;
} watch_req_t;

static cca_status_t watch_add_view(cca_view_t *v, void *arg)
{
    watch_req_t *q = arg;
    struct cca_watch_state *w = watch_state(v);
    threshold_t *th = w ? watch_grow(w->th, &w->cap_th, w->n_th + 1, sizeof *th) : NULL;
    if (!th) return CCA_ERROR_OUT_OF_MEMORY;
    w->th = th;
    q->id = ++w->next_id;
    th[w->n_th++] = (threshold_t){ q->id, q->fn, q->crossing, q->arg, q->bytes, q->which,
                                   watch_figure(&v->stats, q->which) > q->bytes };
    watch_set_flag(v);
    return CCA_OK;
}

/* A watch with one of the two callback shapes; `who` names the call in messages. */
static cca_status_t watch_add(cca_allocator_t *a, const char *who, watch_req_t *q, bool has_fn, uint64_t *id)
{
    if (!a || !has_fn || !id)
        return _cca_errors_fail(CCA_ERROR_INVALID_ARGUMENT, "%s: %s is NULL", who, !a ? "allocator" : !has_fn ? "fn" : "id");
    if (q->which != CCA_WATCH_ALLOCATED && q->which != CCA_WATCH_RESERVED)
        return _cca_errors_fail(CCA_ERROR_INVALID_ARGUMENT, "%s: unknown kind %d", who, (int)q->which);
    if (_cca_view(a, watch_add_view, q) != CCA_OK)
        return _cca_errors_fail(CCA_ERROR_OUT_OF_MEMORY, "%s: out of host memory", who);
    *id = q->id;
    return CCA_OK;
}

cca_status_t cca_watch_threshold(cca_allocator_t *a, cca_watch_kind_t which, size_t bytes,
                                 cca_watch_fn fn, void *arg, uint64_t *id)
{
    watch_req_t q = { .which = which, .bytes = bytes, .fn = fn, .arg = arg };
    return watch_add(a, "cca_watch_threshold", &q, fn != NULL, id);
}

cca_status_t cca_watch(cca_allocator_t *a, cca_watch_kind_t which, size_t bytes, cca_crossing_fn fn, void *arg,
                       uint64_t *id)
{
    watch_req_t q = { .which = which, .bytes = bytes, .crossing = fn, .arg = arg };
    return watch_add(a, "cca_watch", &q, fn != NULL, id);
}

cca_status_t cca_watch_threshold_queued(cca_allocator_t *a, cca_watch_kind_t which, size_t bytes, uint64_t *id)
{
    if (!a || !id)
        return _cca_errors_fail(CCA_ERROR_INVALID_ARGUMENT, "cca_watch_threshold_queued: %s is NULL", !a ? "allocator" : "id");
    if (which != CCA_WATCH_ALLOCATED && which != CCA_WATCH_RESERVED)
        return _cca_errors_fail(CCA_ERROR_INVALID_ARGUMENT, "cca_watch_threshold_queued: unknown kind %d", (int)which);
    watch_req_t q = { .which = which, .bytes = bytes, .fn = NULL };   /* no function: its crossings are notices */
    if (_cca_view(a, watch_add_view, &q) != CCA_OK)
        return _cca_errors_fail(CCA_ERROR_OUT_OF_MEMORY, "cca_watch_threshold_queued: out of host memory");
    *id = q.id;
    return CCA_OK;
}

static cca_status_t watch_unwatch_view(cca_view_t *v, void *arg)
{
    uint64_t id = *(uint64_t *)arg;
    struct cca_watch_state *w = v->acct->watch;
    size_t i = 0;
    while (w && i < w->n_th && w->th[i].id != id) i++;
    bool found = w && i < w->n_th;
    if (found) memmove(&w->th[i], &w->th[i + 1], (--w->n_th - i) * sizeof *w->th);
    watch_set_flag(v);
    return found ? CCA_OK : CCA_ERROR_INVALID_ARGUMENT;
}

cca_status_t cca_unwatch(cca_allocator_t *a, uint64_t id)
{
    if (!a) return _cca_errors_fail(CCA_ERROR_INVALID_ARGUMENT, "cca_unwatch: allocator is NULL");
    if (_cca_view(a, watch_unwatch_view, &id) != CCA_OK)
        return _cca_errors_fail(CCA_ERROR_INVALID_ARGUMENT, "cca_unwatch: no watch %llu", (unsigned long long)id);
    return CCA_OK;
}

static cca_status_t watch_scope_begin_view(cca_view_t *v, void *arg)
{
    watch_req_t *q = arg;
    struct cca_watch_state *w = watch_state(v);
    scope_t *sc = w ? watch_grow(w->sc, &w->cap_sc, w->n_sc + 1, sizeof *sc) : NULL;
    if (!sc) return CCA_ERROR_OUT_OF_MEMORY;
    w->sc = sc;
    q->id = ++w->next_id;
    sc[w->n_sc++] = (scope_t){ q->id, { .peak_allocated = watch_figure(&v->stats, CCA_WATCH_ALLOCATED),
                                        .peak_reserved = watch_figure(&v->stats, CCA_WATCH_RESERVED) }, { 0 } };
    watch_set_flag(v);
    return CCA_OK;
}

cca_status_t cca_scope_begin(cca_allocator_t *a, uint64_t *token)
{
    if (!a || !token) return _cca_errors_fail(CCA_ERROR_INVALID_ARGUMENT, "cca_scope_begin: %s is NULL", a ? "token" : "allocator");
    watch_req_t q = { 0 };
    if (_cca_view(a, watch_scope_begin_view, &q) != CCA_OK)
        return _cca_errors_fail(CCA_ERROR_OUT_OF_MEMORY, "cca_scope_begin: out of host memory");
    *token = q.id;
    return CCA_OK;
}

static cca_status_t watch_scope_end_view(cca_view_t *v, void *arg)
{
    watch_req_t *q = arg;
    struct cca_watch_state *w = v->acct->watch;
    size_t i = 0;
    while (w && i < w->n_sc && w->sc[i].token != q->id) i++;
    bool found = w && i < w->n_sc;
    if (found) {
        if (q->out) _cca_copy_out(q->out, q->out_size, &w->sc[i].r, sizeof w->sc[i].r);
        watch_set_fini(&w->sc[i].set);
        w->sc[i] = w->sc[--w->n_sc];
    }
    watch_set_flag(v);
    return found ? CCA_OK : CCA_ERROR_INVALID_ARGUMENT;
}

cca_status_t cca_scope_end_sized(cca_allocator_t *a, uint64_t token, cca_scope_result_t *out, size_t out_size)
{
    if (!a) return _cca_errors_fail(CCA_ERROR_INVALID_ARGUMENT, "cca_scope_end: allocator is NULL");
    if (out && out_size < CCA_V1_SCOPE)
        return _cca_errors_fail(CCA_ERROR_INVALID_ARGUMENT, "cca_scope_end: %zu bytes is no cca_scope_result_t", out_size);
    watch_req_t q = { .id = token, .out = out, .out_size = out_size };
    if (_cca_view(a, watch_scope_end_view, &q) != CCA_OK)
        return _cca_errors_fail(CCA_ERROR_INVALID_ARGUMENT, "cca_scope_end: no open scope %llu", (unsigned long long)token);
    return CCA_OK;
}

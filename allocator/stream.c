/* stream.c - telling streams apart. A stream is its handle, except the
 * legacy default stream (NULL or cudaStreamLegacy) and cudaStreamPerThread,
 * which names a different stream in each thread and on each device: its
 * runtime id is asked once per thread and device and cached here. */
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include "internal.h"

#define PTS_DEVICES 64
#define PTS_TAG 3u                          /* low bits of a per-thread key; handles are aligned */

static _Thread_local uint64_t pts_key[PTS_DEVICES];     /* 0: not asked yet */

static uint64_t stream_per_thread_key(int device)
{
    if (device >= 0 && device < PTS_DEVICES && pts_key[device]) return pts_key[device];
    int cur = -1;
    unsigned long long id = 0;
    bool switched = false;
    cudaError_t e = cudaGetDevice(&cur);
    if (e == cudaSuccess && cur != device) {
        e = cudaSetDevice(device);           /* the id is the allocator's device's */
        switched = e == cudaSuccess;
    }
    if (e == cudaSuccess) e = cudaStreamGetId(cudaStreamPerThread, &id);
    for (int tries = 0; switched && tries < 3; tries++) {   /* the caller's device is the caller's */
        if (cudaSetDevice(cur) == cudaSuccess) break;
        _cca_errors_clear();
    }
    if (e != cudaSuccess) {
        _cca_errors_clear();
        return 0;                           /* caller reports the failure */
    }
    uint64_t key = ((uint64_t)id << 2) | PTS_TAG;
    if (device >= 0 && device < PTS_DEVICES) pts_key[device] = key;
    return key;
}

/* The key of cudaStreamPerThread in this thread (UINT64_MAX: no id). */
uint64_t _cca_stream_key_special(int device, cudaStream_t s)
{
    (void)s;
    uint64_t key = stream_per_thread_key(device);
    return key ? key : UINT64_MAX;
}

bool _cca_stream_is_per_thread_key(uint64_t key) { return (key & 3u) == PTS_TAG; }

uint64_t _cca_stream_current_per_thread_key(int device) { return stream_per_thread_key(device); }

_Thread_local cca_thread_streams_t _cca_thread_streams;

/* Remembers st for this thread (round robin over a few entries). */
/* This thread's cache (no lock): key's record, the entry used last. */
static void stream_remember(const cca_allocator_t *a, uint64_t key, cca_stream_t *st)
{
    cca_thread_streams_t *t = &_cca_thread_streams;
    unsigned i = t->next++ % CCA_STREAM_CACHE;
    t->e[i] = (cca_stream_cache_t){ a->id, key, st };
    t->last = i;
}

/* The cache's other entries, then the table: a thread on more streams than
 * its cache holds stays off the all-locked path (a record found in the
 * table is remembered; its key is checked under its lock by the caller). */
__attribute__((noinline)) cca_stream_t *_cca_stream_cached_rest(const cca_allocator_t *a, uint64_t key)
{
    cca_thread_streams_t *t = &_cca_thread_streams;
    for (unsigned i = 1; i < CCA_STREAM_CACHE; i++) {
        const cca_stream_cache_t *c = &t->e[(t->last + i) % CCA_STREAM_CACHE];
        if (c->alloc_id == a->id && c->key == key) return c->st;
    }
    cca_stream_t *st = NULL;
    for (unsigned i = 0; i < t->own_next && i < CCA_STREAM_CACHE && !st; i++)   /* its own record of the stream (a shard) */
        if (t->own[i].alloc_id == a->id && t->own[i].key == key) st = t->own[i].st;
    if (!st) st = _cca_stream_lookup(a, key);
    if (st) stream_remember(a, key, st);
    return st;
}


/* ---- stream records ----------------------------------------------------- */

/* The heavy parts of a record: bins for both pools and the address map. */
static bool stream_body_alloc(cca_stream_t *st)
{
    cca_bins_t *bins = calloc(2, sizeof *bins);
    if (!bins) return false;
    if (!_cca_ptrmap_init(&st->live)) {
        free(bins);
        return false;
    }
    st->free[CCA_POOL_SMALL] = &bins[0];
    st->free[CCA_POOL_LARGE] = &bins[1];
    st->free[CCA_POOL_ALL] = NULL;                    /* no bins of its own */
    return true;
}

/* Frees the heavy parts (st holds no segment and no pending event). */
static void stream_body_free(cca_stream_t *st)
{
    for (cca_block_t *b = st->spare, *bn; b; b = bn) {
        bn = b->next;
        free(b);
        st->host_bytes -= (int64_t)sizeof *b;
    }
    st->spare = NULL;
    _cca_ptrmap_fini(&st->live);
    free(st->free[CCA_POOL_SMALL]);                       /* both pools: one allocation */
    st->free[CCA_POOL_SMALL] = st->free[CCA_POOL_LARGE] = NULL;
}

/* Host bytes of st's heavy parts, for the host_bytes figure. */
int64_t _cca_stream_host_bytes(const cca_stream_t *st)
{
    int64_t n = st->host_bytes + (int64_t)st->live.bytes;
    if (st->free[CCA_POOL_SMALL]) n += 2 * (int64_t)sizeof(cca_bins_t);
    n += (int64_t)(st->events.cap_pending * sizeof(cca_pending_t) + st->events.cap_pool * sizeof(cudaEvent_t));
    return n;
}

/* ---- the table of streams by key (streams.h) ---- */

/* Puts st in table t (all locked; t has room). */
static void stream_table_place(cca_stream_table_t *t, cca_stream_t *st)
{
    size_t i = _cca_stream_slot_of(st->key, t->mask);
    while (atomic_load_explicit(&t->e[i].key, memory_order_relaxed) != CCA_STAB_EMPTY) i = (i + 1) & t->mask;
    atomic_store_explicit(&t->e[i].st, st, memory_order_relaxed);
    atomic_store_explicit(&t->e[i].key, st->key, memory_order_release);   /* a reader that sees the key sees st */
}

/* Empties t and places every live stream in it again (all locked). A
 * reader in it meanwhile may miss (it takes the slow path, which finds the
 * stream) or pair a key with another record (whose key it checks). */
static void stream_table_fill(cca_allocator_t *a, cca_stream_table_t *t)
{
    for (size_t i = 0; i <= t->mask; i++) {
        atomic_store_explicit(&t->e[i].key, CCA_STAB_EMPTY, memory_order_release);
        atomic_store_explicit(&t->e[i].st, NULL, memory_order_relaxed);
    }
    a->stab_used = 0;
    for (cca_stream_t *st = a->streams; st; st = st->next)
        if (st->key != CCA_KEY_DEAD && !st->shard) {      /* shards are found through their thread's cache */
            stream_table_place(t, st);
            a->stab_used++;
        }
}

/* Room for `more` new streams: the retired slots cleared in place while the
 * live streams fill at most a quarter, else a table twice as large (the old
 * one kept for readers still in it: the tables add up to at most twice the
 * last). False: no host memory. */
static bool stream_table_grow(cca_allocator_t *a, size_t more)
{
    size_t live = more;
    for (cca_stream_t *st = a->streams; st; st = st->next) live += st->key != CCA_KEY_DEAD && !st->shard;
    cca_stream_table_t *old = atomic_load_explicit(&a->stab, memory_order_relaxed);
    if (old && 4 * live <= old->mask + 1) {
        stream_table_fill(a, old);
        return true;
    }
    size_t cap = old ? 2 * (old->mask + 1) : 16;
    while (cap < 4 * live) cap *= 2;
    cca_stream_table_t *t = malloc(sizeof *t + cap * sizeof t->e[0]);
    if (!t) return false;
    a->host_bytes += (int64_t)(sizeof *t + cap * sizeof t->e[0]);
    t->mask = cap - 1;
    stream_table_fill(a, t);
    t->older = old;
    atomic_store_explicit(&a->stab, t, memory_order_release);
    return true;
}

static bool stream_table_put(cca_allocator_t *a, cca_stream_t *st)
{
    cca_stream_table_t *t = atomic_load_explicit(&a->stab, memory_order_relaxed);
    if ((!t || 2 * (a->stab_used + 1) > t->mask + 1) && !stream_table_grow(a, 1)) return false;
    stream_table_place(atomic_load_explicit(&a->stab, memory_order_relaxed), st);
    a->stab_used++;
    return true;
}

/* st's slot gets the dead key (all locked, before st's key goes). */
static void stream_table_drop(cca_allocator_t *a, const cca_stream_t *st)
{
    cca_stream_table_t *t = atomic_load_explicit(&a->stab, memory_order_relaxed);
    if (!t) return;
    for (size_t i = _cca_stream_slot_of(st->key, t->mask), n = 0; n <= t->mask; i = (i + 1) & t->mask, n++) {
        uint64_t k = atomic_load_explicit(&t->e[i].key, memory_order_relaxed);
        if (k == CCA_STAB_EMPTY) return;
        if (k == st->key && atomic_load_explicit(&t->e[i].st, memory_order_relaxed) == st) {
            atomic_store_explicit(&t->e[i].key, CCA_KEY_DEAD, memory_order_release);
            return;
        }
    }
}

void _cca_stream_table_free(cca_allocator_t *a)
{
    for (cca_stream_table_t *t = atomic_load_explicit(&a->stab, memory_order_relaxed), *o; t; t = o) {
        o = t->older;
        free(t);
    }
    atomic_store_explicit(&a->stab, NULL, memory_order_relaxed);
}

/* Keeps st (locked, out of the list, without its heavy parts) for reuse,
 * and unlocks it; no lookup finds its key. */
static void stream_to_husks(cca_allocator_t *a, cca_stream_t *st)
{
    if (st->key != CCA_KEY_DEAD) stream_table_drop(a, st);
    st->key = CCA_KEY_DEAD;
    atomic_store_explicit(&st->next, a->husks, memory_order_relaxed);
    a->husks = st;
    _cca_unlock(&st->lock);
}

/* A record for a new stream, locked (as every record is while all locked):
 * a retired one if there is one, else a new one. */
static cca_stream_t *stream_record_new(cca_allocator_t *a)
{
    cca_stream_t *st = a->husks;
    if (st) {
        _cca_lock(&st->lock);                         /* a stale reader may hold it for a moment */
        a->husks = st->next;
        memset((char *)st + offsetof(cca_stream_t, key), 0, sizeof *st - offsetof(cca_stream_t, key));
    } else {
        if (!(st = calloc(1, sizeof *st))) return NULL;
        a->host_bytes += (int64_t)sizeof *st;
        _cca_lock_init(&st->lock);
        _cca_lock(&st->lock);
    }
    atomic_init(&st->dying, false);
    atomic_init(&st->next, NULL);
    if (!stream_body_alloc(st)) {
        stream_to_husks(a, st);
        return NULL;
    }
    return st;
}

static bool stream_register_exit(cca_allocator_t *a, cca_stream_t *st);

/* The state of stream `key` (all locked), created on first use. */
cca_stream_t *_cca_stream_get(cca_allocator_t *a, uint64_t key, cudaStream_t s)
{
    cca_stream_t *st = _cca_stream_cached(a, key);
    if (st && st->key == key) return st;
    for (st = a->streams; st && (st->key != key || st->shard); st = st->next) {}
    if (!st) {
        if (!(st = stream_record_new(a))) return NULL;
        st->key = key;
        st->handle = (uintptr_t)s == (uintptr_t)cudaStreamLegacy ? NULL : s;
        st->park_score[CCA_POOL_SMALL] = st->park_score[CCA_POOL_LARGE] = 2;   /* parking on until it does not pay */
        if (!stream_table_put(a, st)) {
            stream_body_free(st);
            st->key = CCA_KEY_DEAD;                   /* not in the table */
            stream_to_husks(a, st);
            return NULL;
        }
        if (_cca_stream_is_per_thread_key(key) && !stream_register_exit(a, st)) {
            stream_body_free(st);
            stream_to_husks(a, st);
            return NULL;
        }
        if (a->streams_tail) a->streams_tail->next = st;
        else a->streams = st;
        a->streams_tail = st;
        a->n_streams++;
    }
    stream_remember(a, key, st);
    return st;
}

/* ---- shards: a thread's own record of a shared stream ------------------
 * Threads whose hot paths keep waiting for one stream's lock each get a
 * record of their own for it (alloc.c says when): the same stream - its
 * key and handle - with its own lock, free blocks and leases, so they stop
 * taking turns on every call. Stream order holds: every record of the
 * stream serves only that stream. Memory: a shard caches its own blocks,
 * as a stream does, but about to grow it first takes over a wholly free
 * segment of the stream's own record (_cca_stream_adopt), and a request it
 * cannot grow for takes a sibling record's cached block before anything is
 * released (segment.c's ladder); empty_cache and the release ladder
 * release its cached segments like any record's. Not in the table (its
 * thread's cache and list of its own records find it); retires with its
 * stream; dies with its thread, its free segments going to the stream's
 * own record (no device-wide wait), the rest back as a retired stream's. */

static _Atomic uint64_t stream_threads;                /* ids handed out */
static _Thread_local uint64_t stream_thread_me;         /* 0: none yet */

static uint64_t stream_thread_id(void)
{
    if (!stream_thread_me) stream_thread_me = atomic_fetch_add_explicit(&stream_threads, 1, memory_order_relaxed) + 1;
    return stream_thread_me;
}

/* This thread's own record of stream `key` (all locked), made if need be
 * and remembered in its cache; NULL when the stream has no live record
 * (or one per thread already) or host memory ran out. */
cca_stream_t *_cca_stream_shard(cca_allocator_t *a, uint64_t key)
{
    if (_cca_stream_is_per_thread_key(key)) return NULL;
    uint64_t me = stream_thread_id();
    cca_stream_t *base = NULL, *st = NULL;
    for (cca_stream_t *o = a->streams; o; o = o->next) {
        if (o->key != key || o->dead || atomic_load_explicit(&o->dying, memory_order_relaxed)) continue;
        if (!o->shard) base = o;
        else if (o->shard == me) st = o;
    }
    if (!base) return NULL;
    if (!st) {
        if (!(st = stream_record_new(a))) return NULL;
        st->key = key;
        st->handle = base->handle;
        st->shard = me;
        st->base = base;
        st->park_score[CCA_POOL_SMALL] = st->park_score[CCA_POOL_LARGE] = 2;
        if (!stream_register_exit(a, st)) {
            stream_body_free(st);
            st->key = CCA_KEY_DEAD;                   /* not in the table */
            stream_to_husks(a, st);
            return NULL;
        }
        a->streams_tail->next = st;                   /* base is in the list */
        a->streams_tail = st;
        a->n_streams++;
    }
    base->shared = st->shared = true;
    stream_remember(a, key, st);
    cca_thread_streams_t *t = &_cca_thread_streams;   /* kept past the round robin's turns */
    unsigned i = 0;
    while (i < CCA_STREAM_CACHE && !(t->own[i].alloc_id == a->id && t->own[i].key == key)) i++;
    if (i == CCA_STREAM_CACHE) i = t->own_next++ % CCA_STREAM_CACHE;
    t->own[i] = (cca_stream_cache_t){ a->id, key, st };
    return st;
}

/* Moves a wholly free segment (not expandable: those join neighbours in
 * place) of record `from` to record `to`, of the same stream: no figure of
 * either moves (a whole segment's free block counts in none), stream order
 * holds. Both locked. */
static void stream_move_segment(cca_stream_t *from, cca_stream_t *to, cca_segment_t *s)
{
    cca_block_t *b = s->first;
    _cca_bins_remove(from->free[s->pool], b);
    s->stream = to;
    atomic_store_explicit(&s->owner, to, memory_order_release);
    _cca_bins_insert(to->free[s->pool], b);
}

typedef struct adopt { const cca_allocator_t *a; size_t rounded; cca_block_t *best; } adopt_t;

static void stream_adopt_visit(cca_block_t *b, void *arg)
{
    adopt_t *w = arg;
    if (b->prev || b->next || b->seg->expandable || b->size < w->rounded || !_cca_fit_ok(w->a, w->rounded, b->size)) return;
    if (!w->best || b->size < w->best->size) w->best = b;
}

/* st, a thread's own record of a stream, about to grow for a request of
 * `rounded` bytes in `pool`: takes over the smallest wholly free segment
 * of the stream's own record that serves it, if there is one - the
 * stream's cache is shared, not multiplied. st locked; base's lock taken
 * here (all_locked: held already), else tried: never waited for. */
bool _cca_stream_adopt(cca_allocator_t *a, cca_stream_t *st, int pool, size_t rounded, bool all_locked)
{
    cca_stream_t *base = st->base;
    if (!st->shard || !base || (!all_locked && !_cca_trylock(&base->lock))) return false;
    if (!all_locked) base->outside_acq = base->lock.fig.acquisitions;
    adopt_t w = { a, rounded, NULL };
    if (base->key == st->key && !base->dead && !atomic_load_explicit(&base->dying, memory_order_relaxed))
        _cca_bins_visit(base->free[pool], stream_adopt_visit, &w);
    if (w.best) stream_move_segment(base, st, w.best->seg);
    if (!all_locked) _cca_unlock(&base->lock);
    return w.best != NULL;
}

/* A dying thread's own record hands its wholly free segments to the
 * stream's own record, if that lives (all locked): the next thread's
 * record takes them over from there instead of growing. */
static void stream_shard_bequeath(cca_allocator_t *a, cca_stream_t *shard)
{
    cca_stream_t *base = shard->base;
    if (!base || base->key != shard->key || base->dead || atomic_load_explicit(&base->dying, memory_order_relaxed)) return;
    for (cca_segment_t *s = a->segments; s; s = s->next)
        if (s->stream == shard && !s->expandable && s->first->state == CCA_BLOCK_FREE && !s->first->next)
            stream_move_segment(shard, base, s);
}

/* A free block for the request in a record of st's stream besides st (the
 * stream's own record or another thread's shard), all locked; NULL: none
 * (or host memory ran out). */
cca_block_t *_cca_stream_sibling_block(cca_allocator_t *a, const cca_stream_t *st, int pool, size_t rounded)
{
    for (cca_stream_t *o = a->streams; o; o = o->next) {
        if (o == st || !o->shared || o->key != st->key || o->dead) continue;
        if (!_cca_block_spare_reserve(o) || !_cca_ptrmap_reserve(&o->live)) continue;
        cca_block_t *b = _cca_block_find_free(a, o, pool, rounded);
        if (b) return b;
    }
    return NULL;
}

void _cca_stream_free(cca_stream_t *st)
{
    if (st->free[CCA_POOL_SMALL]) stream_body_free(st);
    free(st);
}

/* ---- retiring streams ----------------------------------------------------
 * A dying stream (its thread exited, or cca_stream_retire) becomes dead on
 * the next all-locked call: no lookup finds it any more, the device is
 * waited for once (its work may still use its cached blocks), its fully
 * free segments go back to the device, and once it holds no segment its
 * record is taken out of the list, its figures folded into the allocator's,
 * its heavy parts freed and its husk kept for the next new stream. */

/* Takes dead stream st (holding nothing) out of the list; prev is the record before it. */
static void stream_bury(cca_allocator_t *a, cca_stream_t *prev, cca_stream_t *st)
{
    cca_stream_t *next = st->next;
    if (prev) prev->next = next;
    else a->streams = next;
    if (a->streams_tail == st) a->streams_tail = prev;
    a->n_streams--;
    for (int q = CCA_POOL_SMALL; q <= CCA_POOL_LARGE; q++)
        for (int k = 0; k < CCA_NSHARD; k++) a->retired_inc[q][k] += st->ctr.inc[q][k];
    _cca_counters_forget(a, st);
    _cca_events_release(a, st);
    stream_body_free(st);
    a->host_bytes += st->host_bytes;                  /* what it counted lives on elsewhere, or was freed above */
    st->host_bytes = 0;
    a->counters_moved = true;                         /* its leases are gone: deal anew */
    stream_to_husks(a, st);                                  /* no longer in the list, so not unlocked with it */
}

static bool stream_holds_segment(const cca_allocator_t *a, const cca_stream_t *st)
{
    for (const cca_segment_t *s = a->segments; s; s = s->next)
        if (s->stream == st) return true;
    return false;
}

void _cca_stream_reap_all(cca_allocator_t *a)
{
    atomic_store_explicit(&a->dead_pending, false, memory_order_relaxed);
    a->unseen = true;                                 /* segments may go back: the watches see the figures */
    bool fresh = false, holding = false;
    for (cca_stream_t *st = a->streams; st; st = st->next) {
        if (!st->dead && atomic_load_explicit(&st->dying, memory_order_relaxed)) {
            if (st->shard) stream_shard_bequeath(a, st);
            st->dead = true;
            stream_table_drop(a, st);
            st->key = CCA_KEY_DEAD;                   /* no lookup finds it; a reused handle is a new stream */
            fresh = true;
        }
        if (st->dead && (st->events.n_pending || stream_holds_segment(a, st))) holding = true;
    }
    if (fresh && holding) {                           /* work queued on it may still use its blocks */
        dev_guard_t g;
        if (_cca_segment_device_enter(a, &g) != cudaSuccess || cudaDeviceSynchronize() != cudaSuccess) _cca_errors_clear();
        _cca_segment_device_leave(&g);
        a->stats.num_sync_all_streams++;
        _cca_events_process(a);
    }
    for (cca_segment_t *s = a->segments, *next; s; s = next) {
        next = s->next;
        if (s->stream->dead && s->first->state == CCA_BLOCK_FREE && !s->first->next) _cca_segment_release(a, s);
    }
    for (cca_stream_t *st = a->streams, *prev = NULL, *next; st; st = next) {
        next = st->next;
        if (st->dead && !st->events.n_pending && !stream_holds_segment(a, st)) stream_bury(a, prev, st);
        else prev = st;
    }
}

/* ---- thread exit ---------------------------------------------------------
 * A thread that used cudaStreamPerThread with an allocator, or has shards,
 * keeps a list of those records; a pthread key's destructor marks them dying when the
 * thread exits (no CUDA call there), if their allocator still lives.
 * Lock order: registry_lock, then a stream lock (stream_thread_exit).
 * Nothing may wait for registry_lock while holding a stream lock:
 * stream_register_exit, which runs all locked, only try-locks it. */

typedef struct exit_entry { cca_allocator_t *a; uint64_t alloc_id, key, shard; cca_stream_t *st; } exit_entry_t;
typedef struct exit_list { size_t n, cap; exit_entry_t *e; } exit_list_t;

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static cca_allocator_t *registry;                     /* live allocators, via reg_next */
static pthread_once_t exit_once = PTHREAD_ONCE_INIT;
static pthread_key_t exit_key;
static bool exit_key_ok;

static bool stream_registered(const cca_allocator_t *a, uint64_t id)
{
    for (const cca_allocator_t *r = registry; r; r = r->reg_next)
        if (r == a && r->id == id) return true;
    return false;
}

static void stream_thread_exit(void *p)
{
    exit_list_t *l = p;
    pthread_mutex_lock(&registry_lock);
    for (size_t i = 0; i < l->n; i++) {
        exit_entry_t *e = &l->e[i];
        if (!stream_registered(e->a, e->alloc_id)) continue;   /* destroyed: its records are gone */
        _cca_lock(&e->st->lock);                        /* records live as long as their allocator */
        bool same = e->st->key == e->key && e->st->shard == e->shard;   /* not reused for another stream */
        if (same) atomic_store_explicit(&e->st->dying, true, memory_order_relaxed);
        _cca_unlock(&e->st->lock);
        if (same) atomic_store_explicit(&e->a->dead_pending, true, memory_order_relaxed);
    }
    pthread_mutex_unlock(&registry_lock);
    free(l->e);
    free(l);
}

static void stream_exit_key_create(void) { exit_key_ok = pthread_key_create(&exit_key, stream_thread_exit) == 0; }

/* Remembers that this thread's per-thread stream st must die with it. */
static bool stream_register_exit(cca_allocator_t *a, cca_stream_t *st)
{
    pthread_once(&exit_once, stream_exit_key_create);
    if (!exit_key_ok) return false;
    exit_list_t *l = pthread_getspecific(exit_key);
    if (!l) {
        if (!(l = calloc(1, sizeof *l))) return false;
        if (pthread_setspecific(exit_key, l) != 0) {
            free(l);
            return false;
        }
    }
    for (size_t i = 0; i < l->n; i++)                 /* this allocator's entry of a record retired since: reuse it */
        if (l->e[i].a == a && l->e[i].alloc_id == a->id &&
            (l->e[i].st == st || l->e[i].st->key != l->e[i].key || l->e[i].st->shard != l->e[i].shard)) {
            l->e[i] = (exit_entry_t){ a, a->id, st->key, st->shard, st };
            return true;
        }
    if (l->n == l->cap && pthread_mutex_trylock(&registry_lock) == 0) {   /* drop destroyed allocators' entries */
        size_t kept = 0;
        for (size_t i = 0; i < l->n; i++)
            if (stream_registered(l->e[i].a, l->e[i].alloc_id)) l->e[kept++] = l->e[i];
        l->n = kept;
        pthread_mutex_unlock(&registry_lock);
    }
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 4;
        exit_entry_t *e = realloc(l->e, cap * sizeof *e);
        if (!e) return false;
        l->e = e;
        l->cap = cap;
    }
    l->e[l->n++] = (exit_entry_t){ a, a->id, st->key, st->shard, st };
    return true;
}

bool _cca_stream_registry_add(cca_allocator_t *a)
{
    pthread_mutex_lock(&registry_lock);
    a->reg_next = registry;
    registry = a;
    pthread_mutex_unlock(&registry_lock);
    return true;
}

void _cca_stream_registry_remove(cca_allocator_t *a)
{
    pthread_mutex_lock(&registry_lock);
    for (cca_allocator_t **r = &registry; *r; r = &(*r)->reg_next)
        if (*r == a) {
            *r = a->reg_next;
            break;
        }
    pthread_mutex_unlock(&registry_lock);
}

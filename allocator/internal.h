/* internal.h - cca's internal structures and cross-file prototypes, grouped
 * by the file that defines them. Prefix: cca_ public, _cca_ internal.
 *
 * Locking: each stream's state (its free bins, its segments' blocks, its
 * live-address map, its counters and leases, its parked blocks, its
 * events) is guarded by the stream's lock; the hot path takes only that
 * one (and may try-lock the others, never waiting, to move leases).
 * Everything else - creating streams and segments, recording events, the
 * OOM path, statistics, walks - runs "all locked": the allocator's lock,
 * then every stream lock in list order. */
#ifndef CCA_INTERNAL_H
#define CCA_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "cca.h"
#include "lock.h"

#define CCA_MIN_BLOCK      ((size_t)512)              /* rounding unit */
#define CCA_SMALL_SIZE     ((size_t)1 << 20)          /* largest small-pool request */
#define CCA_SMALL_BUFFER   ((size_t)2 << 20)          /* small-pool segment */
#define CCA_LARGE_BUFFER   ((size_t)20 << 20)         /* large segment for requests under MIN_LARGE_ALLOC */
#define CCA_MIN_LARGE_ALLOC ((size_t)10 << 20)
#define CCA_ROUND_LARGE    ((size_t)2 << 20)          /* rounding of big segments */
static inline size_t _cca_round_up_2m(size_t x) { return (x + CCA_ROUND_LARGE - 1) / CCA_ROUND_LARGE * CCA_ROUND_LARGE; }
static inline size_t _cca_round_down_2m(size_t x) { return x / CCA_ROUND_LARGE * CCA_ROUND_LARGE; }
#define CCA_SMALL_GROWTH_MAX ((size_t)8 << 20)           /* largest grown small segment */
#define CCA_LEAN_MAX_SPLIT ((size_t)128 << 20)        /* preset:lean */
#define CCA_LEAN_GROWTH_PERCENT 10
#define CCA_MAX_REQUEST    ((size_t)1 << 62)          /* above this a size cannot be rounded safely */


typedef enum cca_block_state {
    CCA_BLOCK_FREE = 0,                               /* inactive, in its stream's free tree */
    CCA_BLOCK_ALLOCATED,                              /* handed out */
    CCA_BLOCK_PENDING,                                /* freed, awaiting stream events */
    CCA_BLOCK_PARKED,                                 /* freed and counted as merged, not yet merged */
} cca_block_state_t;

typedef struct cca_block cca_block_t;
typedef struct cca_segment cca_segment_t;
typedef struct cca_stream cca_stream_t;

typedef struct cca_use {                              /* a stream recorded by cca_record_stream */
    cudaStream_t handle;
    uint64_t key;
} cca_use_t;

/* 128 bytes, cache-line aligned: what best fit, splitting and merging read
 * of a block and of its neighbours lies in the first line. */
struct cca_block {
    uintptr_t addr;
    size_t size;
    cca_block_t *prev, *next;                         /* address neighbours in the segment */
    cca_segment_t *seg;
    cca_block_t *left, *right;                        /* free-tree links */
    uint32_t prio;                                    /* free-tree heap priority */
    uint8_t state;                                    /* cca_block_state_t */
    bool vacated;                                     /* parked, its deferred figures applied (park.c) */
    /* second line */
    size_t requested;                                 /* caller's size while allocated, else 0 */
    uint64_t gc_base;                                 /* pool's free-search count when freed */
    cca_use_t *uses;                                  /* other streams using the block */
    int n_uses, cap_uses;
    int event_count;                                  /* outstanding events while pending */
    int64_t parked_split[2];                          /* parked: its merge's inactive-split count and bytes change */
} __attribute__((aligned(64)));

/* Segment records are recycled, never freed before the allocator: the
 * address map is read without a lock and may hand a reader a record that
 * was just released (see segmap.c). */
struct cca_segment {
    uintptr_t addr;
    size_t size;
    int pool;                                         /* CCA_POOL_SMALL / CCA_POOL_LARGE */
    cca_stream_t *stream;
    cca_stream_t *_Atomic owner;                      /* = stream, for lock-free readers; NULL when recycled */
    cca_block_t *first;                               /* lowest block */
    cca_segment_t *prev, *next;                       /* allocator's segment list (spare list when recycled) */
};

/* Size classes of free blocks: exact below 32 KiB (64 classes of 512 B),
 * then 32 per doubling. */
#define CCA_BIN_EXACT_BITS 6
#define CCA_BIN_EXACT (1u << CCA_BIN_EXACT_BITS)
#define CCA_BIN_SUB_BITS 5
#define CCA_BIN_SUBS (1u << CCA_BIN_SUB_BITS)
#define CCA_BIN_COUNT 1280u                            /* covers 2^50 B; at most 64 bitmap words */

typedef struct cca_bins {                             /* free blocks of one stream and pool */
    uint64_t summary;                                 /* bit w: words[w] != 0 */
    uint64_t words[CCA_BIN_COUNT / 64];               /* bit i: root[i] != NULL */
    size_t count;                                     /* free blocks */
    cca_block_t *root[CCA_BIN_COUNT];                 /* treap by (size, addr) per class */
} cca_bins_t;

typedef struct cca_ptrmap_slot {
    uintptr_t key;                                    /* 0 = empty */
    cca_block_t *block;
} cca_ptrmap_slot_t;

typedef struct cca_ptrmap {                           /* open addressing, linear probing */
    cca_ptrmap_slot_t *slots;
    size_t mask, count;
    size_t bytes;                                     /* host bytes of slots */
} cca_ptrmap_t;

/* The stats kept per stream; the others (segment, reserved_bytes, num_*)
 * change only all locked. */
#define CCA_SHARD_STATS(X) X(allocation) X(active) X(inactive_split) X(allocated_bytes) \
    X(active_bytes) X(inactive_split_bytes) X(requested_bytes) X(oversize_allocations)
enum {
#define CCA_SHARD_ENUM_(name) CCA_K_##name,
    CCA_SHARD_STATS(CCA_SHARD_ENUM_)
#undef CCA_SHARD_ENUM_
    CCA_NSHARD
};

/* A transition's change to one stream's figures in one pool (see
 * counters.c): block code computes it, the counters unit applies it. */
typedef struct cca_delta {
    int64_t v[CCA_NSHARD];                            /* change of each current figure */
    unsigned rise;                                    /* bit k: v[k] may be > 0 (a constant per transition) */
    unsigned pos;                                     /* bit k: v[k] >= 0 for sure (idem) */
} cca_delta_t;
#define CCA_RISE_ALL   ((1u << CCA_NSHARD) - 1)
#define CCA_RISE_SPLIT ((1u << CCA_K_inactive_split) | (1u << CCA_K_inactive_split_bytes))

/* One stream's figures, by public pool (CCA_POOL_ALL / SMALL / LARGE).
 * Exact global peaks without a shared write on the hot path: a stream may
 * raise its figure up to its lease; the leases of all streams add up to at
 * most the global peak, so the global sum cannot pass the peak unseen. The
 * hot path keeps room = lease - current, so its whole check is the sign of
 * the rooms it changed; current is lease - room, freed is inc - current
 * (see counters.c). */
typedef struct cca_ctrs {
    int64_t room[CCA_POOL_COUNT][CCA_NSHARD];         /* lease - current */
    int64_t lease[CCA_POOL_COUNT][CCA_NSHARD];
    int64_t inc[CCA_POOL_COUNT][CCA_NSHARD];          /* total increases; [SMALL] and [LARGE] only */
    int64_t high[CCA_POOL_COUNT][CCA_NSHARD];         /* highest current seen all locked (its demand); idem */
} cca_ctrs_t;

typedef struct cca_pending {                          /* an event a pending block waits for */
    cudaEvent_t event;
    cca_block_t *block;
} cca_pending_t;

typedef struct cca_events {                           /* a stream's blocks' events */
    cca_pending_t *pending;                           /* outstanding */
    size_t n_pending, cap_pending;
    cudaEvent_t *pool;                                /* spare events */
    size_t n_pool, cap_pool;
} cca_events_t;

/* A stream record. Records are never freed before the allocator: a
 * retired stream's heavy parts (bins, address map, events) are freed and
 * its small record ("husk") is kept for the next new stream, so that a
 * thread holding a stale pointer (from its stream cache or the address
 * map) may still take its lock and see, under it, that it changed. */
#define CCA_KEY_DEAD (UINT64_MAX - 1)                 /* key of a retired record: matches no stream */
struct cca_stream {
    cca_lock_t lock;                                  /* guards everything below but next */
    uint64_t key;                                     /* identity (handle, or per-thread id); CCA_KEY_DEAD once retired */
    cudaStream_t handle;                              /* as the caller named it */
    cca_ctrs_t ctr;
    cca_ptrmap_t live;                                /* handed-out address -> block; slots NULL in a husk */
    cca_block_t *spare;                               /* recycled block structs (via next) */
    cca_block_t *parked[CCA_POOL_COUNT];              /* per pool: last freed block, merge deferred */
    cca_events_t events;                              /* events its pending blocks wait for */
    cca_bins_t *free[CCA_POOL_COUNT];                 /* free blocks, [SMALL] and [LARGE] (one allocation) */
    int64_t host_bytes;                               /* host memory its hot path allocated (block structs, map) */
    uint64_t lookups;                                 /* frees and record_streams that found their block here */
    _Atomic bool dying;                               /* its thread exited: retire on the next all-locked call */
    bool dead;                                        /* retired: no new blocks; freed once it holds no segment */
    cca_stream_t *_Atomic next;                       /* allocator's stream list (changed all locked) */
};


/* Context of one failed request, for the OOM report. */
typedef struct cca_oom_ctx {
    size_t requested, rounded, alloc_size;
    int pool;                                         /* CCA_POOL_SMALL / CCA_POOL_LARGE */
    cudaStream_t stream;
    bool cap_refused;                                 /* the cap refused without calling cudaMalloc */
    bool device_refused;                              /* cudaMalloc said out of memory */
    bool host_failed;                                 /* host memory for metadata ran out */
    bool captured;                                    /* the before-release figures are set */
    size_t free_cached_before, largest_free_before;   /* as the request found the cache */
    size_t reserved_before, allocated_before;
} cca_oom_ctx_t;

struct cca_allocator {
    cca_lock_t lock;                                  /* first of the all-locked path */
    cca_allocator_t *reg_next;                        /* registry of live allocators (stream.c) */
    bool all_locked;                                  /* set while the all-locked path runs */
    bool counters_moved;                              /* all locked: figures or peaks changed, deal leases anew */
    uint64_t id;                                      /* unique per allocator, for thread caches */
    cca_config_t cfg;
    bool plain_rounding;                              /* no roundup_power2_divisions set */
    size_t cap;                                       /* effective cap in bytes; SIZE_MAX: none */
    size_t device_total;
    size_t reserved_high;                             /* most bytes ever reserved (policies; never reset) */
    /* While all locked, stats is the exact public view; otherwise only its
     * all-locked fields and the per-stream stats' peaks are current. */
    cca_stats_t stats;
    int64_t inc_base[CCA_NSHARD][CCA_POOL_COUNT];     /* sum of inc at the last accumulated reset */
    int64_t freed_base[CCA_NSHARD][CCA_POOL_COUNT];   /* sum of inc - cur then */
    cca_stream_t *streams, *streams_tail;
    cca_stream_t *husks;                              /* retired records for reuse (via next) */
    size_t n_streams;                                 /* records in the list, dead ones included */
    _Atomic bool dead_pending;                        /* a stream is dying: retire it on the next all-locked call */
    int64_t retired_inc[CCA_POOL_COUNT][CCA_NSHARD];  /* increases counted by streams since retired */
    cca_segment_t *segments;
    cca_segment_t *spare_segs;                        /* recycled segment records (via next) */
    void *_Atomic *segmap;                            /* address -> segment (segmap.c) */
    int64_t host_bytes;                               /* host memory of all-locked structures */
    uint64_t lock_all_count;                          /* all-locked entries (tests: what a call took) */
    cca_stat_t oversize_segments;                     /* segments of at least max_split_size (as PyTorch) */
    cca_stat_t oversize_pools[CCA_POOL_COUNT];        /* the shard stat behind stats.oversize_allocations */
    bool gc_enabled;                                  /* a cap and garbage_collection_threshold */
    _Atomic uint64_t gc_searches;                     /* large-pool free searches, for GC ages */
    bool accumulated_reset;                           /* allocated - freed == current no longer holds */
    _Atomic int hooks;                                /* nonzero: every change all locked and told to acct.ops->changed */
    struct cca_acct {                                 /* the accounting layer's (stats/) own state: see view.c */
        const struct cca_acct_ops *ops;               /* what the core tells it; installed by cca_create */
        struct cca_watch_state *watch;                /* watches and scopes (NULL when none) */
        struct cca_oom_report *last_oom;              /* the last OOM report (NULL when none) */
        void (*oom_cb)(const struct cca_oom_report *, void *);
        void *oom_cb_arg;
        size_t oom_cb_size;                           /* the callback's sizeof(cca_oom_report_t) */
    } acct;
};

/* tree.c: free blocks ordered by (size, addr) - a treap. */
void         _cca_tree_insert(cca_block_t **root, cca_block_t *b);
void         _cca_tree_remove(cca_block_t **root, cca_block_t *b);
void         _cca_tree_rekey(cca_block_t **root, cca_block_t *old, cca_block_t *nu, uintptr_t new_addr, size_t new_size);
cca_block_t *_cca_tree_lower_bound(cca_block_t *root, size_t size);
cca_block_t *_cca_tree_max(cca_block_t *root);
typedef void (*cca_tree_visit_fn)(cca_block_t *b, void *arg);
void         _cca_tree_visit(cca_block_t *root, cca_tree_visit_fn fn, void *arg);

/* bins.c: a stream and pool's free blocks by size class. */
void         _cca_bins_insert(cca_bins_t *bs, cca_block_t *b);
void         _cca_bins_remove(cca_bins_t *bs, cca_block_t *b);
/* old's key becomes (new_size, new_addr), carried by nu (old, or a block taking its place) */
void         _cca_bins_rekey(cca_bins_t *bs, cca_block_t *old, cca_block_t *nu, uintptr_t new_addr, size_t new_size);
cca_block_t *_cca_bins_best_fit(const cca_bins_t *bs, size_t size);   /* smallest (size, addr) >= size */
cca_block_t *_cca_bins_largest(const cca_bins_t *bs);
cca_block_t *_cca_bins_next(const cca_bins_t *bs, const cca_block_t *b);    /* next in (size, addr) order */
bool         _cca_bins_contains(const cca_bins_t *bs, const cca_block_t *b);
void         _cca_bins_visit(const cca_bins_t *bs, cca_tree_visit_fn fn, void *arg);

/* ptrmap.c: a stream's handed-out address -> block (its lookups inline). */
bool         _cca_ptrmap_init(cca_ptrmap_t *m);
void         _cca_ptrmap_fini(cca_ptrmap_t *m);
bool         _cca_ptrmap_grow(cca_ptrmap_t *m);
void         _cca_ptrmap_erase(cca_ptrmap_t *m, cca_ptrmap_slot_t *slot);

static inline size_t _cca_ptrmap_home(uintptr_t key, size_t mask)
{
    uint64_t x = (uint64_t)key >> 9;                  /* addresses are 512-B aligned */
    x *= 0x9E3779B97F4A7C15ull;
    return (size_t)(x >> 20) & mask;
}

/* Makes room for one more key, so a later put cannot fail. */
static inline bool _cca_ptrmap_reserve(cca_ptrmap_t *m)
{
    return (m->count + 1) * 4 <= m->mask + 1 || _cca_ptrmap_grow(m);
}

/* Adds key; the caller made room with _cca_ptrmap_reserve first. */
static inline void _cca_ptrmap_put(cca_ptrmap_t *m, uintptr_t key, cca_block_t *b)
{
    size_t i = _cca_ptrmap_home(key, m->mask);
    while (m->slots[i].key) i = (i + 1) & m->mask;
    m->slots[i].key = key;
    m->slots[i].block = b;
    m->count++;
}

/* key's slot, or NULL; valid until the map next changes. */
static inline cca_ptrmap_slot_t *_cca_ptrmap_find(const cca_ptrmap_t *m, uintptr_t key)
{
    for (size_t i = _cca_ptrmap_home(key, m->mask); m->slots[i].key; i = (i + 1) & m->mask)
        if (m->slots[i].key == key) return &m->slots[i];
    return NULL;
}

static inline cca_block_t *_cca_ptrmap_get(const cca_ptrmap_t *m, uintptr_t key)
{
    cca_ptrmap_slot_t *s = _cca_ptrmap_find(m, key);
    return s ? s->block : NULL;
}

static inline cca_block_t *_cca_ptrmap_take(cca_ptrmap_t *m, uintptr_t key)
{
    cca_ptrmap_slot_t *s = _cca_ptrmap_find(m, key);
    if (!s) return NULL;
    cca_block_t *b = s->block;
    _cca_ptrmap_erase(m, s);
    return b;
}

/* segmap.c: the allocator-wide address map (read without a lock). */
bool           _cca_segmap_init(cca_allocator_t *a);
void           _cca_segmap_fini(cca_allocator_t *a);
bool           _cca_segmap_reserve(cca_allocator_t *a, uintptr_t addr, size_t size);   /* all locked */
void           _cca_segmap_insert(cca_allocator_t *a, cca_segment_t *seg);              /* all locked */
void           _cca_segmap_remove(cca_allocator_t *a, cca_segment_t *seg);              /* all locked */
cca_segment_t *_cca_segmap_find(const cca_allocator_t *a, uintptr_t p);

/* stream.c: stream identity and per-stream state. */
uint64_t      _cca_stream_key_special(int device, cudaStream_t s);   /* s is cudaStreamPerThread */
bool          _cca_stream_is_per_thread_key(uint64_t key);
uint64_t      _cca_current_per_thread_key(int device);
cca_stream_t *_cca_stream_get(cca_allocator_t *a, uint64_t key, cudaStream_t s);  /* all locked */
void          _cca_stream_free(cca_stream_t *st);
int64_t       _cca_stream_host_bytes(const cca_stream_t *st);
void          _cca_streams_reap(cca_allocator_t *a);            /* all locked: retire dying streams, free empty dead ones */
void          _cca_stream_retire_locked(cca_allocator_t *a, cca_stream_t *st);
bool          _cca_registry_add(cca_allocator_t *a);            /* live allocators, for thread-exit hooks */
void          _cca_registry_remove(cca_allocator_t *a);

/* Per thread, the streams it used last (a few, of any allocators). */
#define CCA_STREAM_CACHE 4
typedef struct cca_stream_cache { uint64_t alloc_id, key; cca_stream_t *st; } cca_stream_cache_t;
/* One thread-local, so that the hot path computes one TLS address. */
typedef struct cca_thread_streams {
    cca_stream_cache_t e[CCA_STREAM_CACHE];
    unsigned next, last;                              /* round robin; the entry remembered last */
} cca_thread_streams_t;
extern _Thread_local cca_thread_streams_t _cca_thread_streams;

/* A stream's key: its handle, 0 for the legacy stream, a per-thread id for
 * cudaStreamPerThread; UINT64_MAX when the runtime gave no id. */
static inline uint64_t _cca_stream_key(int device, cudaStream_t s)
{
    uintptr_t h = (uintptr_t)s;
    if (h > (uintptr_t)cudaStreamPerThread) return h;
    return h == (uintptr_t)cudaStreamPerThread ? _cca_stream_key_special(device, s) : 0;
}

/* a's stream `key`, if this thread used it lately: the one it used last
 * first (one compare on the hot path), then the others. */
static inline cca_stream_t *_cca_stream_cached(const cca_allocator_t *a, uint64_t key)
{
    const cca_thread_streams_t *t = &_cca_thread_streams;
    const cca_stream_cache_t *c = &t->e[t->last];
    if (__builtin_expect(c->alloc_id == a->id && c->key == key, 1)) return c->st;
    for (unsigned i = 1; i < CCA_STREAM_CACHE; i++) {
        c = &t->e[(t->last + i) % CCA_STREAM_CACHE];
        if (c->alloc_id == a->id && c->key == key) return c->st;
    }
    return NULL;
}

/* ---- sized structs (see cca.h) ----
 * The size of each struct in the first cca.h that had it: a caller's size
 * below it cannot be one of ours. */
#define CCA_V1_STATS  offsetof(cca_stats_t, oversize_allocations)
#define CCA_V1_CONFIG sizeof(cca_config_t)
#define CCA_V1_FRAG   sizeof(cca_frag_t)
#define CCA_V1_SEG    sizeof(cca_segment_info_t)
#define CCA_V1_BLOCK  sizeof(cca_block_info_t)
#define CCA_V1_OOM    offsetof(cca_oom_report_t, need_cap)
#define CCA_V1_SCOPE  sizeof(cca_scope_result_t)

/* Copies the library's struct (n bytes) out to the caller's of `size`
 * bytes: the fields that fit, in order, and zeros past what we know. */
static inline void _cca_copy_out(void *dst, size_t size, const void *src, size_t n)
{
    memcpy(dst, src, size < n ? size : n);
    if (size > n) memset((char *)dst + n, 0, size - n);
}

/* errors.c */
cca_status_t _cca_fail(cca_status_t s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void         _cca_clear_error(void);

/* config.c */
size_t       _cca_round_size(const cca_config_t *cfg, size_t size);
cca_status_t _cca_config_check(const cca_config_t *c, size_t device_total);   /* 0: the device is not known yet */

/* alloc.c: the public calls and the all-locked path. */
void   _cca_lock_all(cca_allocator_t *a);
void   _cca_unlock_all(cca_allocator_t *a, cca_stream_t *trigger);   /* trigger: stream served, or NULL */

/* block.c: blocks inside segments, splitting and merging (stream locked).
 * No counting here: callers apply the transition's delta first. */
cca_block_t *_cca_block_new(cca_stream_t *st);
bool         _cca_spare_reserve(cca_stream_t *st);
void         _cca_block_recycle(cca_stream_t *st, cca_block_t *b);
cca_block_t *_cca_find_free(cca_allocator_t *a, cca_stream_t *st, int pool, size_t size);
void         _cca_take_block(cca_allocator_t *a, cca_block_t *b, size_t size, size_t requested);
void         _cca_free_block(cca_allocator_t *a, cca_block_t *b);
void         _cca_insert_free(cca_block_t *b);      /* b into its bins, merged (gc_base set) */

/* The pool's free-search count, the age unit of garbage collection. */
static inline uint64_t _cca_gc_now(cca_allocator_t *a)
{
    return a->gc_enabled ? atomic_load_explicit(&a->gc_searches, memory_order_relaxed) : 0;
}

/* park.c: the deferred merge (see there), behind -Dparking. */
#if CCA_PARKING
bool         _cca_park(cca_allocator_t *a, cca_stream_t *st, cca_block_t *b);
cca_block_t *_cca_unpark(cca_allocator_t *a, cca_stream_t *st, int pool, size_t size, size_t requested);
void         _cca_flush_parked_block(cca_allocator_t *a, cca_stream_t *st, int pool);
void         _cca_vacate_parked_block(cca_allocator_t *a, cca_stream_t *st, int pool);
#else
static inline bool _cca_park(cca_allocator_t *a, cca_stream_t *st, cca_block_t *b)
{ (void)a; (void)st; (void)b; return false; }
static inline cca_block_t *_cca_unpark(cca_allocator_t *a, cca_stream_t *st, int pool, size_t size, size_t requested)
{ (void)a; (void)st; (void)pool; (void)size; (void)requested; return NULL; }
static inline void _cca_flush_parked_block(cca_allocator_t *a, cca_stream_t *st, int pool) { (void)a; (void)st; (void)pool; }
static inline void _cca_vacate_parked_block(cca_allocator_t *a, cca_stream_t *st, int pool) { (void)a; (void)st; (void)pool; }
#endif

/* Frees the block parked in st's pool, if there is one: the figures and
 * the merge it deferred (never fails; st locked). */
static inline void _cca_flush_parked(cca_allocator_t *a, cca_stream_t *st, int pool)
{
    if (CCA_PARKING && st->parked[pool]) _cca_flush_parked_block(a, st, pool);
}

/* Applies the figures the block parked in st's pool deferred, if any,
 * keeping it parked: st's figures are then exact (never fails). */
static inline void _cca_vacate_parked(cca_allocator_t *a, cca_stream_t *st, int pool)
{
    if (CCA_PARKING && st->parked[pool] && !st->parked[pool]->vacated) _cca_vacate_parked_block(a, st, pool);
}

/* segment.c: segments and the device (all locked). */
typedef struct dev_guard { int prev; bool switched; } dev_guard_t;
cudaError_t  _cca_device_enter(cca_allocator_t *a, dev_guard_t *g);   /* makes a's device current */
void         _cca_device_leave(dev_guard_t *g);                        /* restores the caller's */
/* The growth ladder, in the order a request climbs it (segment.c). */
typedef enum cca_rung {
    CCA_RUNG_GROWN,                                   /* a policy's bigger segment (segment_growth_percent) */
    CCA_RUNG_NEW,                                     /* the standard segment */
    CCA_RUNG_RELEASE_FITTING,                         /* the same, after releasing cached oversize blocks that help */
    CCA_RUNG_RELEASE_ALL,                             /* the same, after releasing every unused cached segment */
    CCA_RUNG_LEAST,                                   /* policies on: the smallest segment that holds the request */
    CCA_RUNG_COUNT
} cca_rung_t;
/* The size of the segment rung `rung` asks for a request of `rounded`
 * bytes in `pool` (CCA_RUNG_NEW: PyTorch's 2 MiB, 20 MiB, or the request
 * rounded up to 2 MiB). */
size_t       _cca_segment_size(const cca_allocator_t *a, int pool, size_t rounded, cca_rung_t rung);
bool         _cca_release_segment(cca_allocator_t *a, cca_segment_t *seg);
void         _cca_segments_destroy(cca_allocator_t *a);    /* frees the recycled segment records */
void         _cca_release_cached(cca_allocator_t *a);
cca_status_t _cca_grow(cca_allocator_t *a, cca_stream_t *st, int pool, cca_oom_ctx_t *ctx, cca_block_t **out);

/* events.c: frees that wait for other streams (all locked). */
void         _cca_process_events(cca_allocator_t *a);
bool         _cca_process_stream_events(cca_allocator_t *a, cca_stream_t *st);   /* st locked, hot path */
size_t       _cca_pending_total(const cca_allocator_t *a);
void         _cca_sync_pending(cca_allocator_t *a);    /* waits for every pending free */
void         _cca_free_with_uses(cca_allocator_t *a, cca_block_t *b);
void         _cca_events_destroy(cca_allocator_t *a);
void         _cca_events_release(cca_allocator_t *a, cca_stream_t *st);

/* counters.c: the counters unit - the per-stream figures, their leases
 * and peaks, and the all-locked public view. */
void         _cca_ctr_locked(cca_allocator_t *a, cca_stream_t *st, int pool, const cca_delta_t *d);
bool         _cca_ctr_admit_slow(cca_allocator_t *a, cca_stream_t *st, int pool, const cca_delta_t *fall,
                                 const cca_delta_t *d);
void         _cca_counters_refresh(cca_allocator_t *a);
void         _cca_counters_rebalance(cca_allocator_t *a, cca_stream_t *trigger);
void         _cca_counters_reset_accumulated(cca_allocator_t *a);
void         _cca_counters_reset_peaks(cca_allocator_t *a);
void         _cca_counters_view(cca_allocator_t *a, cca_stats_t *out);   /* all locked */
cca_stat_t  *_cca_shard_stat(cca_allocator_t *a, int k);       /* the public view of shard figure k, by pool */
/* Stream figure k's current value in public pool p. */
static inline int64_t _cca_ctr_cur(const cca_ctrs_t *c, int p, int k) { return c->lease[p][k] - c->room[p][k]; }

/* oomfig.c: the figures of an out-of-memory report (all locked). */
void   _cca_capture_cache_figures(cca_allocator_t *a, cca_oom_ctx_t *ctx);
void   _cca_oom_fill(cca_allocator_t *a, const cca_oom_ctx_t *ctx, cca_oom_report_t *r);
size_t _cca_largest_fit(cca_allocator_t *a, cca_stream_t *st, size_t avail);
size_t _cca_largest_free(const cca_allocator_t *a);

/* ---- the accounting layer (stats/) and the core: view.c ----------------
 * stats/ reads the allocator only through _cca_view, a consistent moment
 * with the public figures exact, and never takes a core lock, walks a
 * stream or switches devices itself. The core tells stats/ about changes
 * and out-of-memory only through the table in a->acct.ops, which
 * cca_create installs: the one name the core takes from stats/. */
typedef struct cca_acct cca_acct_t;
typedef struct cca_view {
    const cca_allocator_t *a;                         /* all locked while the view lasts: read anything */
    cca_stats_t stats;                                /* the public figures (cca_get_stats), exact */
    cca_acct_t *acct;                                 /* the accounting's own state: its to change */
    cca_allocator_t *mut_;                            /* for _cca_view_hooks alone */
} cca_view_t;
typedef cca_status_t (*cca_view_fn)(cca_view_t *v, void *arg);
cca_status_t _cca_view(cca_allocator_t *a, cca_view_fn fn, void *arg);
void         _cca_acct_changed(cca_allocator_t *a);                       /* the core's calls, all locked */
void         _cca_acct_oom(cca_allocator_t *a, cca_oom_report_t *r);
void         _cca_view_hooks(cca_view_t *v, bool on);   /* every change all locked and told to ops->changed */

typedef struct cca_acct_ops {
    void (*changed)(cca_view_t *v);                   /* all locked, after a change, while hooks are on */
    void (*after_change)(cca_allocator_t *a);         /* after unlocking that change (callbacks run here) */
    void (*oom)(cca_view_t *v, cca_oom_report_t *r);  /* all locked: an out-of-memory, its figures in *r */
    void (*after_oom)(cca_allocator_t *a);            /* after unlocking it */
    void (*destroy)(cca_acct_t *acct);
} cca_acct_ops_t;
extern const cca_acct_ops_t _cca_acct_ops;           /* stats/stats.c */

/* errors.c: this thread's last OOM report (verdict NONE: none since its
 * last out-of-memory failure). */
void                    _cca_thread_oom_set(const cca_oom_report_t *r);
const cca_oom_report_t *_cca_thread_oom(void);

static inline void _cca_stat_update(cca_stat_t *s, int64_t d)
{
    s->current += d;
    if (d > 0) {
        s->allocated += d;
        if (s->current > s->peak) s->peak = s->current;
    } else {
        s->freed -= d;
    }
}

/* Adds d to one pool's stat and to the all-pools figure. */
static inline void _cca_stat_add(cca_stat_t *s, int pool, int64_t d)
{
    _cca_stat_update(&s[CCA_POOL_ALL], d);
    _cca_stat_update(&s[pool], d);
}

static inline bool _cca_block_is_split(const cca_block_t *b) { return b->prev || b->next; }

/* Applies transition delta d (pool `pool`) to stream st's figures: the
 * counters unit's one entry. All locked, the public view and its peaks
 * follow. On the hot path (st locked) the change must stay within st's
 * leases: false if it cannot be made to (nothing changed; take the
 * all-locked path). Straight-line on the hot path: per figure two rooms
 * (the pool's, all pools'), and for the figures the transition may raise
 * (d->rise, a constant once inlined) the increase total and one sign test
 * for all. */
static inline bool _cca_ctr_apply2(cca_allocator_t *a, cca_stream_t *st, int pool, const cca_delta_t *fall,
                                   const cca_delta_t *d);

static inline bool _cca_ctr_apply(cca_allocator_t *a, cca_stream_t *st, int pool, const cca_delta_t *d)
{
    return _cca_ctr_apply2(a, st, pool, NULL, d);
}

/* Applies a transition that only lowers figures (`fall`, rise 0; NULL:
 * none) and then d, in one step: a free and a take at once (park.c). The
 * increase totals grow by d's rises alone. */
static inline bool _cca_ctr_apply2(cca_allocator_t *a, cca_stream_t *st, int pool, const cca_delta_t *fall,
                                   const cca_delta_t *d)
{
    if (__builtin_expect(a->all_locked, 0)) {
        if (fall) _cca_ctr_locked(a, st, pool, fall);
        _cca_ctr_locked(a, st, pool, d);
        return true;
    }
    int64_t *restrict all = st->ctr.room[CCA_POOL_ALL], *restrict room = st->ctr.room[pool];
    int64_t *restrict inc = st->ctr.inc[pool];
    int64_t neg = 0;
    for (int k = 0; k < CCA_NSHARD; k++) {
        int64_t x = d->v[k], f = fall ? fall->v[k] : 0, r = all[k] - x - f, q = room[k] - x - f;
        all[k] = r;
        room[k] = q;
        if (d->rise & (1u << k)) {                    /* only a rise can pass a lease or add to inc */
            neg |= r | q;
            __asm__("" : "+r"(neg));                  /* as it goes: no spills for a vectorized reduction */
        }
        if (d->rise & (1u << k)) inc[k] += d->pos & (1u << k) || x > 0 ? x : 0;
    }
    return __builtin_expect(neg >= 0, 1) || _cca_ctr_admit_slow(a, st, pool, fall, d);
}

/* ---- block.c's small helpers, inline for the hot path ---------------- */

/* Best fit's max_split_size rules (PyTorch's): may a free block of
 * `block_size` bytes serve a request of `size`? */
static inline bool _cca_fit_ok(const cca_allocator_t *a, size_t size, size_t block_size)
{
    size_t msz = a->cfg.max_split_size;
    if (msz == SIZE_MAX) return true;
    if (size < msz && block_size >= msz) return false;                    /* no oversize block for a small request */
    return !(size >= msz && block_size >= size + CCA_LARGE_BUFFER);       /* nor one far too big */
}

/* Whether taking `size` bytes of a free block of `block_size` bytes in
 * `pool` splits the rest off (PyTorch's rule). */
static inline bool _cca_split_rule(const cca_allocator_t *a, int pool, size_t block_size, size_t size)
{
    size_t remaining = block_size - size;
    if (pool == CCA_POOL_SMALL) return remaining >= CCA_MIN_BLOCK;
    return size < a->cfg.max_split_size && remaining > CCA_SMALL_SIZE;
}

static inline bool _cca_should_split(const cca_allocator_t *a, const cca_block_t *b, size_t size)
{
    return _cca_split_rule(a, b->seg->pool, b->size, size);
}

/* What freeing b does to its pool's inactive-split figures: its free
 * neighbours stop counting, the merged block counts if its segment stays split. */
static inline void _cca_merge_deltas(const cca_block_t *b, int64_t *dcount, int64_t *dbytes)
{
    const cca_block_t *p = b->prev, *n = b->next;
    bool pf = p && p->state == CCA_BLOCK_FREE, nf = n && n->state == CCA_BLOCK_FREE;
    int64_t size = (int64_t)b->size + (pf ? (int64_t)p->size : 0) + (nf ? (int64_t)n->size : 0);
    bool split = (pf ? p->prev : p) || (nf ? n->next : n);
    *dcount = (int64_t)split - (int64_t)pf - (int64_t)nf;
    *dbytes = (split ? size : 0) - (pf ? (int64_t)p->size : 0) - (nf ? (int64_t)n->size : 0);
}

/* 1 if a block of `size` bytes counts as an oversize allocation (PyTorch:
 * at least max_split_size), else 0. */
static inline int64_t _cca_oversize(const cca_allocator_t *a, size_t size)
{
    return size >= a->cfg.max_split_size;
}

/* ---- transitions' deltas: what each block transition does to its
 * stream's figures, computed before it (the block as it is now), written
 * into the caller's *d (no copies on the hot path) ---------------------- */

/* A free block of `block_size` bytes in `pool` (inside a split segment
 * or not) -> allocated, its first `size` bytes (the rest split off). */
static inline void _cca_take_delta_of(cca_delta_t *d, const cca_allocator_t *a, int pool, size_t block_size,
                                      bool was_split, size_t size, size_t requested)
{
    bool split = _cca_split_rule(a, pool, block_size, size);
    int64_t bytes = (int64_t)(split ? size : block_size);
    d->rise = CCA_RISE_ALL;
    d->pos = CCA_RISE_ALL & ~CCA_RISE_SPLIT;
    d->v[CCA_K_oversize_allocations] = _cca_oversize(a, (size_t)bytes);
    d->v[CCA_K_allocation] = d->v[CCA_K_active] = 1;
    d->v[CCA_K_allocated_bytes] = d->v[CCA_K_active_bytes] = bytes;
    d->v[CCA_K_requested_bytes] = (int64_t)requested;
    d->v[CCA_K_inactive_split] = (int64_t)split - (int64_t)was_split;   /* it stops counting, the rest counts */
    d->v[CCA_K_inactive_split_bytes] = (split ? (int64_t)(block_size - size) : 0) - (was_split ? (int64_t)block_size : 0);
}

/* Free block b -> allocated, its first `size` bytes (the rest split off). */
static inline void _cca_take_delta(cca_delta_t *d, const cca_allocator_t *a, const cca_block_t *b, size_t size,
                                   size_t requested)
{
    _cca_take_delta_of(d, a, b->seg->pool, b->size, _cca_block_is_split(b), size, requested);
}

/* Allocated block b -> pending (freed, awaiting other streams' events). */
static inline void _cca_release_delta(cca_delta_t *d, const cca_allocator_t *a, const cca_block_t *b)
{
    d->rise = d->pos = 0;
    d->v[CCA_K_active] = d->v[CCA_K_active_bytes] = d->v[CCA_K_inactive_split] = d->v[CCA_K_inactive_split_bytes] = 0;
    d->v[CCA_K_allocation] = -1;
    d->v[CCA_K_allocated_bytes] = -(int64_t)b->size;
    d->v[CCA_K_requested_bytes] = -(int64_t)b->requested;
    d->v[CCA_K_oversize_allocations] = -_cca_oversize(a, b->size);
}

/* Allocated block b -> free, the part its merge with its free neighbours
 * makes: the inactive-split figures (the others left as they are). */
static inline void _cca_merge_part(cca_delta_t *d, const cca_block_t *b)
{
    _cca_merge_deltas(b, &d->v[CCA_K_inactive_split], &d->v[CCA_K_inactive_split_bytes]);
}

/* Pending block b -> free, merged with its free neighbours. */
static inline void _cca_settle_delta(cca_delta_t *d, const cca_block_t *b)
{
    d->rise = CCA_RISE_SPLIT;
    d->pos = 0;
    d->v[CCA_K_allocation] = d->v[CCA_K_allocated_bytes] = d->v[CCA_K_requested_bytes] = d->v[CCA_K_oversize_allocations] = 0;
    _cca_merge_part(d, b);
    d->v[CCA_K_active] = -1;
    d->v[CCA_K_active_bytes] = -(int64_t)b->size;
}

/* Allocated block b -> free, the part that only falls: allocation,
 * active and their bytes, requested, oversize. */
static inline void _cca_vacate_delta(cca_delta_t *d, const cca_allocator_t *a, const cca_block_t *b)
{
    d->rise = d->pos = 0;
    d->v[CCA_K_inactive_split] = d->v[CCA_K_inactive_split_bytes] = 0;
    d->v[CCA_K_oversize_allocations] = -_cca_oversize(a, b->size);
    d->v[CCA_K_allocation] = d->v[CCA_K_active] = -1;
    d->v[CCA_K_allocated_bytes] = d->v[CCA_K_active_bytes] = -(int64_t)b->size;
    d->v[CCA_K_requested_bytes] = -(int64_t)b->requested;
}

/* Allocated block b -> free, merged with its free neighbours: both parts
 * in one step (each figure changes once, as in PyTorch). */
static inline void _cca_free_delta(cca_delta_t *d, const cca_allocator_t *a, const cca_block_t *b)
{
    _cca_vacate_delta(d, a, b);
    d->rise = CCA_RISE_SPLIT;
    _cca_merge_part(d, b);
}

/* Parking's quick way back (park.c, hot path only): a parked block of
 * `size` bytes whose falling figures were never applied is taken again as
 * it is. A free and a take in one step: the current figures move only by
 * the requested bytes and by undoing the split change its park applied
 * (split_count, split_bytes); the increase totals grow as the take's would.
 * False, nothing changed, if that passes a lease: the caller takes the
 * general way. */
static inline bool _cca_ctr_retake(const cca_allocator_t *a, cca_stream_t *st, int pool, size_t size,
                                   size_t requested, size_t old_requested, int64_t split_count, int64_t split_bytes)
{
    int64_t *restrict all = st->ctr.room[CCA_POOL_ALL], *restrict room = st->ctr.room[pool];
    int64_t *restrict inc = st->ctr.inc[pool];
    int64_t dr = (int64_t)requested - (int64_t)old_requested;
    int64_t r0 = all[CCA_K_requested_bytes] - dr, r1 = room[CCA_K_requested_bytes] - dr;
    int64_t r2 = all[CCA_K_inactive_split] + split_count, r3 = room[CCA_K_inactive_split] + split_count;
    int64_t r4 = all[CCA_K_inactive_split_bytes] + split_bytes, r5 = room[CCA_K_inactive_split_bytes] + split_bytes;
    if (__builtin_expect((r0 | r1 | r2 | r3 | r4 | r5) < 0, 0)) return false;
    all[CCA_K_requested_bytes] = r0;
    room[CCA_K_requested_bytes] = r1;
    all[CCA_K_inactive_split] = r2;
    room[CCA_K_inactive_split] = r3;
    all[CCA_K_inactive_split_bytes] = r4;
    room[CCA_K_inactive_split_bytes] = r5;
    inc[CCA_K_allocation] += 1;
    inc[CCA_K_active] += 1;
    inc[CCA_K_allocated_bytes] += (int64_t)size;
    inc[CCA_K_active_bytes] += (int64_t)size;
    inc[CCA_K_requested_bytes] += (int64_t)requested;
    inc[CCA_K_oversize_allocations] += _cca_oversize(a, size);
    inc[CCA_K_inactive_split] += split_count < 0 ? -split_count : 0;
    inc[CCA_K_inactive_split_bytes] += split_bytes < 0 ? -split_bytes : 0;
    return true;
}

#endif /* CCA_INTERNAL_H */

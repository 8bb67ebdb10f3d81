/* streams.h - finding things: a stream's handed-out address map
 * (ptrmap.c, lookups inline), the allocator-wide address -> segment map
 * (segmap.c), stream identity, records and the thread's stream cache
 * (stream.c), and frees that wait for other streams' events (events.c). */
#ifndef CCA_STREAMS_H
#define CCA_STREAMS_H

#include "types.h"

/* ptrmap.c: a stream's handed-out address -> block, the shared map
 * (common/cca_u64map.h) grown at a quarter load; its lookups inline, its
 * growth and deletion out of line. */
CCA_U64MAP_DEFINE(ptrmap, cca_ptrmap_t, cca_ptrmap_slot_t, key, cca_u64map_home_addr, 1, 4)

bool         _cca_ptrmap_init(cca_ptrmap_t *m);
void         _cca_ptrmap_fini(cca_ptrmap_t *m);
bool         _cca_ptrmap_grow(cca_ptrmap_t *m);
void         _cca_ptrmap_erase(cca_ptrmap_t *m, cca_ptrmap_slot_t *slot);

/* Makes room for one more key, so a later put cannot fail. */
static inline bool _cca_ptrmap_reserve(cca_ptrmap_t *m)
{
    return ptrmap_fits(m) || _cca_ptrmap_grow(m);
}

/* Adds key; the caller made room with _cca_ptrmap_reserve first. */
static inline void _cca_ptrmap_put(cca_ptrmap_t *m, uintptr_t key, cca_block_t *b)
{
    ptrmap_add(m, key)->block = b;
}

/* key's slot, or NULL; valid until the map next changes. */
static inline cca_ptrmap_slot_t *_cca_ptrmap_find(const cca_ptrmap_t *m, uintptr_t key)
{
    return ptrmap_find(m, key);
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
/* Writers: all locked, or a growing stream with the segment-list lock (a->seg_lock). */
bool           _cca_segmap_reserve(cca_allocator_t *a, uintptr_t addr, size_t size);   /* a writer */
void           _cca_segmap_insert(cca_allocator_t *a, cca_segment_t *seg);              /* a writer */
void           _cca_segmap_remove(cca_allocator_t *a, cca_segment_t *seg);              /* all locked */
void           _cca_segmap_set(cca_allocator_t *a, uintptr_t addr, size_t size, cca_segment_t *seg);   /* all locked, reserved; NULL: none */

/* The map's nodes (segmap.c writes them) and its lookup, inline: a free
 * on the hot path makes one. A radix tree over 2 MiB chunks. */
#define CCA_SEGMAP_CHUNK_BITS 21
#define CCA_SEGMAP_L0_BITS 12
#define CCA_SEGMAP_L1_BITS 11
#define CCA_SEGMAP_L2_BITS 11
#define CCA_SEGMAP_LEAF_BITS 9                             /* 12 + 11 + 11 + 9 + 21 = 64 */
#define CCA_SEGMAP_LEAF_MASK (((uint64_t)1 << CCA_SEGMAP_LEAF_BITS) - 1)  /* a chunk number's place in its leaf */

struct cca_segmap_leaf {
    struct {
        _Atomic uintptr_t hi_addr;              /* where `hi` starts; 0: none */
        cca_segment_t *_Atomic hi;              /* the segment starting inside the chunk */
        cca_segment_t *_Atomic lo;              /* the segment covering the chunk's first byte */
    } e[1u << CCA_SEGMAP_LEAF_BITS];
};
struct cca_segmap_node { void *_Atomic child[1u << CCA_SEGMAP_L1_BITS]; };  /* L1 and L2 have the same width */

_Static_assert(CCA_SEGMAP_L1_BITS == CCA_SEGMAP_L2_BITS, "one node type for both inner levels");

static inline size_t _cca_segmap_idx0(uint64_t c) { return (size_t)(c >> (CCA_SEGMAP_L1_BITS + CCA_SEGMAP_L2_BITS + CCA_SEGMAP_LEAF_BITS)); }
static inline size_t _cca_segmap_idx1(uint64_t c) { return (size_t)(c >> (CCA_SEGMAP_L2_BITS + CCA_SEGMAP_LEAF_BITS)) & ((1u << CCA_SEGMAP_L1_BITS) - 1); }
static inline size_t _cca_segmap_idx2(uint64_t c) { return (size_t)(c >> CCA_SEGMAP_LEAF_BITS) & ((1u << CCA_SEGMAP_L2_BITS) - 1); }
static inline size_t _cca_segmap_idxl(uint64_t c) { return (size_t)c & ((1u << CCA_SEGMAP_LEAF_BITS) - 1); }

/* The segment that holds p, or NULL (any thread, no lock). */
static inline cca_segment_t *_cca_segmap_find(const cca_allocator_t *a, uintptr_t p)
{
    uint64_t c = p >> CCA_SEGMAP_CHUNK_BITS;
    struct cca_segmap_node *n1 = atomic_load_explicit(&a->segmap[_cca_segmap_idx0(c)], memory_order_acquire);
    if (!n1) return NULL;
    struct cca_segmap_node *n2 = atomic_load_explicit(&n1->child[_cca_segmap_idx1(c)], memory_order_acquire);
    if (!n2) return NULL;
    struct cca_segmap_leaf *l = atomic_load_explicit(&n2->child[_cca_segmap_idx2(c)], memory_order_acquire);
    if (!l) return NULL;
    size_t i = _cca_segmap_idxl(c);
    uintptr_t hi = atomic_load_explicit(&l->e[i].hi_addr, memory_order_relaxed);
    if (hi && p >= hi) return atomic_load_explicit(&l->e[i].hi, memory_order_acquire);
    return atomic_load_explicit(&l->e[i].lo, memory_order_acquire);
}

/* stream.c: stream identity and per-stream state. */
uint64_t      _cca_stream_key_special(int device, cudaStream_t s);   /* s is cudaStreamPerThread */
bool          _cca_stream_is_per_thread_key(uint64_t key);
uint64_t      _cca_stream_current_per_thread_key(int device);
cca_stream_t *_cca_stream_get(cca_allocator_t *a, uint64_t key, cudaStream_t s);  /* all locked */
cca_stream_t *_cca_stream_shard(cca_allocator_t *a, uint64_t key);                 /* all locked */
cca_block_t  *_cca_stream_sibling_block(cca_allocator_t *a, const cca_stream_t *st, int pool, size_t rounded);
bool          _cca_stream_adopt(cca_allocator_t *a, cca_stream_t *st, int pool, size_t rounded, bool all_locked);
void          _cca_stream_free(cca_stream_t *st);
int64_t       _cca_stream_host_bytes(const cca_stream_t *st);
void          _cca_stream_reap_all(cca_allocator_t *a);            /* all locked: retire dying streams, free empty dead ones */
bool          _cca_stream_registry_add(cca_allocator_t *a);            /* live allocators, for thread-exit hooks */
void          _cca_stream_registry_remove(cca_allocator_t *a);

/* Per thread, the streams it used last (a few, of any allocators). */
#define CCA_STREAM_CACHE 4
typedef struct cca_stream_cache { uint64_t alloc_id, key; cca_stream_t *st; } cca_stream_cache_t;
/* One thread-local, so that the hot path computes one TLS address. */
typedef struct cca_thread_streams {
    cca_stream_cache_t e[CCA_STREAM_CACHE];
    unsigned next, last;                              /* round robin; the entry remembered last */
    uint32_t tag;                                     /* this thread's own tag (tags.c); 0: none */
    struct cca_stream *admit_yielded;                 /* a passed lease on it gave way to a busy stream (counters.c) */
    uint64_t crowd_alloc, crowd_key, crowd_acq;       /* the stream whose lock the hot path waited for lately, */
    unsigned crowd_n;                                 /* and how often since its lock's acquisitions were crowd_acq */
    bool crowd_shard;                                 /* the call going all locked makes this thread's own record */
    cca_stream_cache_t own[CCA_STREAM_CACHE];         /* its own records of shared streams (shards), which the */
    unsigned own_next;                                /* round robin above may drop: looked at before the table */
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

/* tags.c: the tag of an allocation now - this thread's own (beside its
 * stream cache: the thread-local the hot path reads anyway), else the
 * process's shared one (a second load only for threads without a tag). */
extern _Atomic uint32_t _cca_tag_common;
static inline uint32_t _cca_tag_now(void)
{
    uint32_t t = _cca_thread_streams.tag;
    return t ? t : atomic_load_explicit(&_cca_tag_common, memory_order_relaxed);
}

/* a's stream `key`, if this thread used it lately: the one it used last
 * first (one compare on the hot path), then the others. */
/* stream.c: every live stream's record by key, for a thread whose cache
 * misses: open addressing, written all locked (a retired stream's slot
 * keeps a dead key, never reused; a full table is replaced by one twice as
 * large without the dead, the old kept, since a reader may be in it, until
 * the allocator goes), read without a lock. A reader that raced with a
 * retirement gets a record whose key it checks under the record's lock. */
#define CCA_STAB_EMPTY UINT64_MAX                     /* a free slot (no stream has the key: it is the error key) */
typedef struct cca_stream_slot {
    _Atomic uint64_t key;                             /* stored after st (release) */
    cca_stream_t *_Atomic st;
} cca_stream_slot_t;
typedef struct cca_stream_table {
    struct cca_stream_table *older;                   /* the one it replaced */
    size_t mask;
    cca_stream_slot_t e[];
} cca_stream_table_t;

static inline size_t _cca_stream_slot_of(uint64_t key, size_t mask)
{
    return (size_t)((key * 0x9E3779B97F4A7C15ull) >> 40) & mask;
}

static inline cca_stream_t *_cca_stream_lookup(const cca_allocator_t *a, uint64_t key)
{
    const cca_stream_table_t *t = atomic_load_explicit(&a->stab, memory_order_acquire);
    if (!t) return NULL;
    for (size_t i = _cca_stream_slot_of(key, t->mask), n = 0; n <= t->mask; i = (i + 1) & t->mask, n++) {
        uint64_t k = atomic_load_explicit(&t->e[i].key, memory_order_acquire);
        if (k == key) return atomic_load_explicit(&t->e[i].st, memory_order_relaxed);
        if (k == CCA_STAB_EMPTY) return NULL;
    }
    return NULL;
}
void _cca_stream_table_free(cca_allocator_t *a);

/* The thread's cache: the entry used last inline (the hot path), the
 * others and then the allocator's table out of line (stream.c). */
cca_stream_t *_cca_stream_cached_rest(const cca_allocator_t *a, uint64_t key);
static inline cca_stream_t *_cca_stream_cached(const cca_allocator_t *a, uint64_t key)
{
    const cca_thread_streams_t *t = &_cca_thread_streams;
    const cca_stream_cache_t *c = &t->e[t->last];
    if (__builtin_expect(c->alloc_id == a->id && c->key == key, 1)) return c->st;
    return _cca_stream_cached_rest(a, key);
}

/* events.c: frees that wait for other streams (all locked). */
void         _cca_events_process(cca_allocator_t *a);
bool         _cca_events_process_stream(cca_allocator_t *a, cca_stream_t *st);   /* st locked, hot path */
size_t       _cca_events_pending_total(const cca_allocator_t *a);
void         _cca_events_sync_pending(cca_allocator_t *a);    /* waits for every pending free */
void         _cca_events_free_with_uses(cca_allocator_t *a, cca_block_t *b);
void         _cca_events_destroy(cca_allocator_t *a);
void         _cca_events_release(cca_allocator_t *a, cca_stream_t *st);

#endif /* CCA_STREAMS_H */

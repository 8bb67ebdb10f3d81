/* types.h - the glossary of the allocator's terms (below), then its data:
 * limits, blocks, segments, free bins, address maps, the per-stream
 * figures, streams and the allocator itself. Locking: each stream's state (its free
 * bins, its segments' blocks, its live-address map, its figures and leases,
 * its parked blocks, its events) is guarded by the stream's lock; the hot
 * path takes only that one (and, to move leases, the headroom's lock and
 * the others' locks, waiting briefly, never blocking: counters.c), and, to
 * make a new segment, the segment-list lock, which guards what segments
 * share. Everything else - creating streams,
 * recording events, the OOM path, statistics, walks - runs "all locked":
 * the allocator's lock, then every stream lock in list order (which
 * excludes every grower).
 *
 * Glossary
 *   pool          small (requests up to 1 MiB, 2 MiB segments) or large;
 *                 numbered as the public API numbers them (CCA_POOL_SMALL,
 *                 CCA_POOL_LARGE; CCA_POOL_ALL is their sum).
 *   segment       one cudaMalloc; split into blocks, never merged across.
 *   hot path      a malloc or free served under its stream's lock (and,
 *                 making a segment, the segment-list lock).
 *   all locked    the allocator's lock and every stream's: the slow path,
 *                 statistics, walks (_cca_alloc_lock_all).
 *   delta         what a block transition (take, free, release, settle,
 *                 park) does to its stream's figures; block code computes
 *                 it, the counters unit applies it.
 *   lease         how far a stream may raise a figure without the others'
 *                 locks; all streams' leases and the headroom add up to at
 *                 most the peak, which keeps peaks exact with no shared
 *                 write.
 *   room          lease - current: what the hot path actually keeps and
 *                 checks (a sign test).
 *   headroom      lease no stream holds (a->spare): a stream that passed
 *                 its lease takes what it lacks from it; once a sweep found
 *                 room idle in other streams (a->spare_wanted), frees give
 *                 theirs back.
 *   trigger       the stream just served, which gets half the slack when
 *                 leases are dealt anew (rebalance; the headroom the rest).
 *   park          a hot-path free that defers its merge and falling
 *                 figures, so that the next request can be carved out of
 *                 the merged block in place; "vacate" applies the deferred
 *                 figures, "flush" frees the parked block for real.
 *   pending       freed, awaiting events on streams that used the block.
 *   husk          a retired stream's small record, kept for reuse.
 *   shard         a thread's own record of a stream other threads also
 *                 allocate on (stream.c), so that they stop taking turns
 *                 on one record's lock; the stream's own record has
 *                 shard == 0 and is the one in the table.
 *   rung          one step of the growth ladder (segment.c).
 *   view          the consistent moment through which stats/ reads the
 *                 allocator (view.c).
 */
#ifndef CCA_TYPES_H
#define CCA_TYPES_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "cca.h"
#include "cca_u64map.h"
#include "lock.h"
#include "view/cca_view.h"

#ifndef CCA_PARKING
#define CCA_PARKING 1                                 /* meson sets it from -Dparking */
#endif

#define CCA_MIN_BLOCK      ((size_t)512)              /* rounding unit */
#define CCA_SMALL_SIZE     ((size_t)1 << 20)          /* largest small-pool request */
/* CCA_SMALL_BUFFER, CCA_LARGE_BUFFER: view/cca_view.h (the OOM advice speaks of them) */
#define CCA_MIN_LARGE_ALLOC ((size_t)10 << 20)
#define CCA_ROUND_LARGE    ((size_t)2 << 20)          /* rounding of big segments */
static inline size_t _cca_round_up_2m(size_t x) { return (x + CCA_ROUND_LARGE - 1) / CCA_ROUND_LARGE * CCA_ROUND_LARGE; }
static inline size_t _cca_round_down_2m(size_t x) { return x / CCA_ROUND_LARGE * CCA_ROUND_LARGE; }
#define CCA_SMALL_GROWTH_MAX ((size_t)8 << 20)           /* largest grown small segment */
#define CCA_TRIM_PLENTY    4                          /* release_before_grow acts while free memory >= 4x held */
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
    size_t requested;                                 /* caller's size while allocated or pending, else 0 */
    uint64_t gc_base;                                 /* pool's free-search count when freed */
    cca_use_t *uses;                                  /* other streams using the block */
    int n_uses, cap_uses;
    int event_count;                                  /* outstanding events while pending */
    uint32_t tag;                                     /* the tag it was allocated under (tags.c); 0: none */
    union {
        int64_t parked_split[2];                      /* parked: its merge's inactive-split count and bytes change */
        size_t last_requested;                        /* free: the request of the allocation this block last was,
                                                       * as torch's inactive blocks keep it (block.c) */
    };
    uint64_t context;                                 /* its allocation's context (history.c); 0 from the hot path */
} __attribute__((aligned(64)));
_Static_assert(sizeof(struct cca_block) == 128, "a block is two cache lines");

/* Segment records are recycled, never freed before the allocator: the
 * address map is read without a lock and may hand a reader a record that
 * was just released (see segmap.c). */
struct cca_segment {
    uintptr_t addr;
    size_t size;
    int pool;                                         /* CCA_POOL_SMALL / CCA_POOL_LARGE */
    bool expandable;                                  /* a mapped range of an expandable reservation (expand.c) */
    cca_stream_t *stream;
    cca_stream_t *_Atomic owner;                      /* = stream, for lock-free readers; NULL when recycled */
    cca_block_t *first, *last;                        /* lowest and highest block */
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

typedef struct cca_ptrmap {                           /* common/cca_u64map.h's: slots, mask, count, bytes (host bytes of slots) */
    CCA_U64MAP_FIELDS(cca_ptrmap_slot_t);
} cca_ptrmap_t;

/* The stats kept per stream; the others (segment, reserved_bytes, num_*)
 * change all locked, or under the segment-list lock by a growing stream. */
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
} cca_ctrs_t;

typedef struct cca_pending {                          /* an event a pending block waits for */
    cudaEvent_t event;
    cca_block_t *block;                               /* its requested stays set while pending */
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
    uint64_t shard;                                   /* 0: the stream's own record; else the id of the thread
                                                       * whose own record of this stream it is (a shard) */
    bool shared;                                      /* the stream has shards: when the device is full, a
                                                       * request tries its siblings' free blocks */
    uint64_t outside_acq;                             /* lock.fig.acquisitions when a holder other than an
                                                       * allocation's hot path (all-locked, a sweep, a free)
                                                       * last took the lock */
    struct cca_stream *base;                          /* a shard's stream's own record (set once, all locked) */
    cca_ctrs_t ctr;
    cca_ptrmap_t live;                                /* handed-out address -> block; slots NULL in a husk */
    cca_block_t *spare;                               /* recycled block structs (via next) */
    cca_block_t *parked[CCA_POOL_COUNT];              /* per pool: last freed block, merge deferred */
    uint8_t park_score[CCA_POOL_COUNT];               /* per pool: how well parking paid lately (park.c) */
    uint8_t park_probe;                               /* frees since parking was last tried while it did not pay */
    cca_events_t events;                              /* events its pending blocks wait for */
    cca_bins_t *free[CCA_POOL_COUNT];                 /* free blocks, [SMALL] and [LARGE] (one allocation) */
    int64_t host_bytes;                               /* host memory its hot path allocated (block structs, map) */
    uint64_t lookups;                                 /* frees and record_streams that found their block here */
    _Atomic bool dying;                               /* its thread exited: retire on the next all-locked call */
    _Atomic bool admitting;                           /* its holder wants every other stream's lock (counters.c) */
    bool dead;                                        /* retired: no new blocks; freed once it holds no segment */
    cca_stream_t *_Atomic next;                       /* allocator's stream list (changed all locked) */
    /* All locked (counters.c): what its figures last added to the
     * allocator's sums, and its lock's acquisitions then - a record whose
     * lock no one took since is unchanged, and is not summed again. */
    int64_t fold_cur[CCA_POOL_COUNT][CCA_NSHARD], fold_inc[CCA_POOL_COUNT][CCA_NSHARD];
    uint64_t fold_acq;
    bool fold_dirty;                                  /* figures changed all locked since the fold */
    bool fold_touched;                                /* rooms changed since its leases were dealt */
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
    bool tentative;                                   /* cca_malloc_try: an out-of-memory is only returned */
    bool new_tried;                                   /* the standard segment was refused off the all-locked path */
    size_t free_cached_before, largest_free_before;   /* as the request found the cache */
    size_t reserved_before, allocated_before;
} cca_oom_ctx_t;

typedef struct cca_history cca_history_t;

/* a->hooks: what sends every call down the all-locked path */
#define CCA_HOOK_WATCH   1                            /* watches: every change told to acct.ops->changed */
#define CCA_HOOK_HISTORY 2                            /* history: every change recorded (history.c) */
#define CCA_HOOK_TRACE   4                            /* a trace file: every change written (tracefile.c) */
typedef struct cca_tracefile cca_tracefile_t;

struct cca_allocator {
    cca_lock_t lock;                                  /* first of the all-locked path */
    cca_allocator_t *reg_next;                        /* registry of live allocators (stream.c) */
    bool all_locked;                                  /* set while the all-locked path runs */
    bool counters_moved;                              /* all locked: figures or peaks changed, deal leases anew */
    uint64_t id;                                      /* unique per allocator, for thread caches */
    cca_config_t cfg;
    bool plain_rounding;                              /* no roundup_power2_divisions set */
    size_t fit_msz, split_msz;                        /* best fit's and splitting's max_split_size (SIZE_MAX: expandable) */
    size_t large_split_min;                           /* least rest a large block splits off (expandable: 512 B) */
    struct cca_xvmm *xv;                              /* expandable segments' state (vmm.h); NULL: off */
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
    struct cca_stream_table *_Atomic stab;            /* key -> record, read without a lock (stream.c) */
    size_t stab_used;                                 /* all locked: its slots taken, retired ones included */
    size_t n_streams;                                 /* records in the list, dead ones included */
    _Atomic bool dead_pending;                        /* a stream is dying: retire it on the next all-locked call */
    _Atomic size_t pending_events;                    /* events pending in all streams (their n_pending summed) */
    int64_t retired_inc[CCA_POOL_COUNT][CCA_NSHARD];  /* increases counted by streams since retired */
    /* The shared headroom (counters.c): lease held by no stream, so that a
     * stream passing its lease finds room in O(1). The streams' leases and
     * it add up to at most each peak. Guarded by spare_lock, which only a
     * stream lock's holder takes (so all locked, it is free to touch). */
    cca_lock_t spare_lock;
    _Atomic bool spare_wanted;                        /* a stream found it short: frees give their room back */
    int64_t spare[CCA_POOL_COUNT][CCA_NSHARD];
    /* All locked: the streams' figures summed (their fold_* added up), and
     * the stream the last deal gave room to. */
    int64_t sum_cur[CCA_POOL_COUNT][CCA_NSHARD], sum_inc[CCA_POOL_COUNT][CCA_NSHARD];
    cca_stream_t *last_trigger;
    uint64_t lease_takeovers;                         /* passes served by holding every other stream (tests) */
    /* The segment-list lock: a hot path growing its stream holds it with
     * its stream's lock, for the list, the records, the address map's
     * writes, host_bytes and the segment figures (the all-locked path,
     * holding every stream's lock, excludes those growers). */
    cca_lock_t seg_lock;
    cca_segment_t *segments;
    cca_segment_t *spare_segs;                        /* recycled segment records (via next) */
    void *_Atomic *segmap;                            /* address -> segment (segmap.c) */
    int64_t host_bytes;                               /* host memory of shared structures (all locked, or seg_lock) */
    bool park_always;                                 /* tests: park every hot-path free it can (park.c) */
    bool refuse_admit;                                /* tests: the hot path never makes room past a lease */
    uint64_t lock_all_count;                          /* all-locked entries (num_all_locked; tests: what a call took) */
    uint64_t lock_all_base;                           /* lock_all_count at the last accumulated reset */
    cca_stat_t oversize_pools[CCA_POOL_COUNT];        /* the shard stat behind stats.oversize_allocations */
    bool gc_enabled;                                  /* a cap and garbage_collection_threshold */
    _Atomic uint64_t gc_searches;                     /* large-pool free searches, for GC ages */
    bool accumulated_reset;                           /* allocated - freed == current no longer holds */
    _Atomic int hooks;                                /* CCA_HOOK_* bits; nonzero: every call all locked */
    struct cca_history *history;                      /* all locked: recorded events (history.c); NULL: off */
    cca_tracefile_t *trace;                           /* all locked: the trace file written (tracefile.c); NULL: off */
    struct {                                          /* all locked: the block this call took or freed, */
        uintptr_t addr;                               /* for the accounting's scopes (kind 0: neither) */
        size_t size;
        int kind;                                     /* +1 taken, -1 freed */
    } change;
    bool unseen;                                      /* all locked: figures changed that the accounting was not told yet */
    cca_acct_t acct;                                  /* the accounting layer's (stats/) own state: view/cca_view.h */
};

#endif /* CCA_TYPES_H */

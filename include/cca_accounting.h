/* cca_accounting.h - the accounting half of cca's public API: where the
 * memory went and when. Fragmentation, snapshots, the OOM report, the
 * memory summary, watches, tags, history, trace files, notices and scopes.
 * cca.h (the allocator: what a cudaMalloc replacement needs) includes this
 * header in its place, so including either gives both.
 * (contract: see docs/design.md) */
#ifndef CCA_H
#include "cca.h"                        /* which includes this header in its place */
#elif !defined(CCA_ACCOUNTING_H)
#define CCA_ACCOUNTING_H

/* ==== Accounting: fragmentation, snapshots, OOM report, summary, watches ====
 * Every figure below is taken under the allocator's lock in one piece, so it
 * cannot disagree with itself. Text and JSON go through the caller's write
 * callback; cca never prints. */

/* Output sink: writes len bytes, returns how many it took (fewer = error). */
typedef size_t (*cca_write_fn)(const char *data, size_t len, void *arg);

/* ---- fragmentation ---- */

#define CCA_SIZE_CLASSES 64             /* classes[k]: blocks of [2^k, 2^(k+1)) bytes */

#define CCA_SIZE_CLASS_FIELDS(X) \
    X(size_t, free_blocks, , "inactive (cached) blocks") \
    X(size_t, free_bytes, , "their bytes") \
    X(size_t, allocated_blocks, , "handed out") \
    X(size_t, allocated_bytes, , "their bytes") \
    X(size_t, pending_blocks, , "freed, awaiting stream events") \
    X(size_t, pending_bytes, , "their bytes")
typedef struct cca_size_class { CCA_SIZE_CLASS_FIELDS(CCA_MEMBER_) } cca_size_class_t;

#define CCA_FRAG_FIELDS(X) \
    X(size_t, reserved, , "bytes held from the device, as reserved_bytes (expandable: unmapped handles too)") \
    X(size_t, allocated, , "rounded bytes handed out") \
    X(size_t, requested, , "bytes the callers of allocated blocks asked for (requested_bytes also counts pending frees)") \
    X(size_t, active, , "allocated + pending free") \
    X(size_t, free_cached, , "inactive bytes: reserved - active (unmapped handles included)") \
    X(size_t, largest_free, , "largest inactive block") \
    X(size_t, free_blocks, , "number of inactive blocks") \
    X(size_t, segments, , "number of device segments") \
    X(size_t, inactive_split, , "inactive bytes inside split segments") \
    X(size_t, internal_waste, , "allocated - requested (rounding)") \
    X(double, external_fragmentation, , "1 - max(largest_free, unmapped) / free_cached; 0 when nothing is free") \
    X(double, utilization, , "allocated / reserved; 0 when nothing is reserved") \
    X(cca_size_class_t, classes, [CCA_SIZE_CLASSES], "occupancy per size class") \
    X(size_t, unmapped, , "of free_cached, handles held unmapped (expandable segments): one piece, mapped wherever a segment grows")
typedef struct cca_frag { CCA_FRAG_FIELDS(CCA_MEMBER_) } cca_frag_t;

/* Fills *out from one walk of every segment and block.
 * CCA_ERROR_INVALID_ARGUMENT for a NULL allocator or out. */
CCA_API cca_status_t cca_get_fragmentation_sized(cca_allocator_t *a, cca_frag_t *out, size_t out_size);
CCA_PLAIN_(cca_status_t, cca_get_fragmentation, (cca_allocator_t *a, cca_frag_t *out),
           return cca_get_fragmentation_sized(a, out, sizeof *out))

/* ---- snapshot ---- */

typedef enum cca_snapshot_state {
    CCA_STATE_ACTIVE_ALLOCATED = 0,     /* handed out */
    CCA_STATE_ACTIVE_PENDING_FREE,      /* freed, awaiting stream events */
    CCA_STATE_INACTIVE,                 /* free, cached */
} cca_snapshot_state_t;

#define CCA_SEGMENT_INFO_FIELDS(X) \
    X(int, device, , "the allocator's device") \
    X(int, pool, , "CCA_POOL_SMALL / CCA_POOL_LARGE") \
    X(uintptr_t, address, , "first byte") \
    X(size_t, total_size, , "bytes") \
    X(size_t, allocated_size, , "sum of active_allocated blocks") \
    X(size_t, active_size, , "allocated + pending free blocks") \
    X(size_t, requested_size, , "sum of the callers' sizes") \
    X(cudaStream_t, stream, , "the stream whose blocks it holds") \
    X(size_t, n_blocks, , "blocks in it") \
    X(int, is_expandable, , "1: a contiguous mapped range of an expandable segment (expandable_segments)")
typedef struct cca_segment_info { CCA_SEGMENT_INFO_FIELDS(CCA_MEMBER_) } cca_segment_info_t;

#define CCA_BLOCK_INFO_FIELDS(X) \
    X(uintptr_t, address, , "first byte") \
    X(size_t, size, , "bytes") \
    X(size_t, requested_size, , "the caller's size (a pending free keeps it); inactive: torch's stale value, the last request of the block torch would have there") \
    X(cca_snapshot_state_t, state, , "active_allocated, active_pending_free or inactive") \
    X(cudaStream_t, stream, , "its segment's stream") \
    X(int, pool, , "CCA_POOL_SMALL / CCA_POOL_LARGE") \
    X(uintptr_t, segment_address, , "its segment's first byte") \
    X(uint32_t, tag, , "the tag it was allocated under (cca_tag_name); 0: none") \
    X(uint64_t, context, , "its allocation's context (cca_history_set_context); 0: none")
typedef struct cca_block_info { CCA_BLOCK_INFO_FIELDS(CCA_MEMBER_) } cca_block_info_t;

/* Return nonzero to stop the walk. */
typedef int (*cca_segment_fn)(const cca_segment_info_t *seg, void *arg);
typedef int (*cca_block_fn)(const cca_block_info_t *block, void *arg);

/* Copies every segment and block under the lock, then calls seg_cb for each
 * segment (by address) followed by block_cb for each of its blocks (by
 * address), outside the lock; either may be NULL. CCA_ERROR_INVALID_ARGUMENT
 * for a NULL allocator, CCA_ERROR_OUT_OF_MEMORY if the host copy fails. */
CCA_API cca_status_t cca_snapshot_walk_sized(cca_allocator_t *a, cca_segment_fn seg_cb, cca_block_fn block_cb,
                                             void *arg, size_t seg_size, size_t block_size);
CCA_PLAIN_(cca_status_t, cca_snapshot_walk, (cca_allocator_t *a, cca_segment_fn seg_cb, cca_block_fn block_cb, void *arg),
           return cca_snapshot_walk_sized(a, seg_cb, block_cb, arg, sizeof(cca_segment_info_t), sizeof(cca_block_info_t)))

/* Writes the snapshot as JSON with the keys of torch.cuda.memory_snapshot():
 * {"segments": [{"device", "address", "total_size", "allocated_size",
 * "active_size", "requested_size", "stream", "segment_type",
 * "segment_pool_id", "is_expandable", "frames", "blocks": [{"address",
 * "size", "requested_size", "state", "frames"}]}]} (frames empty); a block
 * with a tag (cca_tag_*) has "tag", one with a context
 * (cca_history_set_context) "context".
 * CCA_ERROR_INVALID_ARGUMENT for NULL arguments or when write took fewer
 * bytes than given; CCA_ERROR_OUT_OF_MEMORY if the host copy fails. */
CCA_API cca_status_t cca_snapshot_json(cca_allocator_t *a, cca_write_fn write, void *arg);

/* The same JSON plus the history (cca_record_history) of the same moment,
 * so that every event's segment is the snapshot's or was returned in it:
 * "trace_dropped" (entries the ring no longer holds) and "trace": [{"action",
 * "addr", "size", "stream", "time_us", "frames", and "tag" where one was in
 * force, "device_free" for an oom}], oldest first - torch's trace entries. */
CCA_API cca_status_t cca_snapshot_json_history(cca_allocator_t *a, cca_write_fn write, void *arg);

/* "active_allocated", "active_pending_free", "inactive" ("unknown" otherwise). */
CCA_API const char *cca_snapshot_state_string(cca_snapshot_state_t s);

/* ---- OOM report ---- */

/* The verdict says what would make the failed request succeed, counting the
 * whole new segment it needs. From the report's figures after
 * release-and-retry - S segment_size (2 MiB, 20 MiB, or the request's own
 * size rounded to 2 MiB; with expandable segments the bytes the growth
 * must map at the spot the allocator picks now: the request less the free
 * block it grows from - a range's free last block, or its free first
 * block when it grows below the range, or both around a gap it fills -
 * rounded up to 2 MiB, or the request's own pages for a new range),
 * T device_total, D device_free, R reserved,
 * F free_cached, O free_cached_other (of F, the bytes in other streams'
 * segments, which no request on this stream can use), A = R - F (live and
 * pending), E external, C cap (0: none) - with cap_need = R + S - C when C
 * and R + S > C (else 0), dev_need = S - D when S > D (else 0) and
 * need = max(cap_need, dev_need):
 *   - S > T: exhausted; it cannot fit on this device (shortfall S - T).
 *   - otherwise the first single change that suffices, in this order:
 *     cap        - raising the cap by cap_need; the device has room (dev_need = 0);
 *     external   - freeing dev_need held outside cca (cap_need = 0, dev_need <= E);
 *     stranded   - cca holds enough free bytes (need <= F) but not on this
 *                  stream (need > F - O): the rest is cached on other streams
 *                  (need_stranded = need - (F - O); stranded_streams, _bytes);
 *     fragmented - the request's own stream holds enough free bytes
 *                  (need <= F - O) but in no block or segment of the needed shape;
 *     exhausted  - freeing need of live allocations (<= A).
 *   - otherwise several changes: cca's cached free bytes first, then live
 *     allocations, then memory outside cca for the device, then the cap;
 *     the verdict is the first of cap, external, stranded, fragmented,
 *     exhausted that this plan needs (stranded when it counts on bytes of
 *     other streams: O > 0).
 * need_cap, need_external, need_cached, need_stranded and need_live hold
 * each needed change in bytes; shortfall is the verdict's own (0 for
 * fragmented; need_stranded for stranded). A
 * device that refused a segment it reported room for (no limit binds) is
 * fragmented with no need: its free memory is in pieces. largest_fit is the
 * largest L such that every request of at most L would succeed now on the
 * failing request's stream, with the allocator's rounding and segment
 * rules (0: none); with expandable segments counting its free blocks (no
 * max_split_size rule inside them), growth where the allocator would grow
 * (a free end block counts), the handles a retry unmaps or holds, and new
 * handles within the device's free memory and the cap. */
typedef enum cca_oom_verdict {
    CCA_OOM_NONE = 0,                   /* no out-of-memory so far */
    CCA_OOM_EXHAUSTED,                  /* only freeing live allocations helps (or nothing can) */
    CCA_OOM_FRAGMENTED,                 /* enough bytes free in cca, no block or segment of the shape */
    CCA_OOM_CAP,                        /* raising the cap helps */
    CCA_OOM_EXTERNAL,                   /* freeing memory held outside cca helps */
    CCA_OOM_STRANDED,                   /* enough bytes free in cca, but cached on other streams */
} cca_oom_verdict_t;

#define CCA_OOM_HOLDERS 4                   /* top holders by tag in an OOM report */
#define CCA_OOM_REPORT_FIELDS(X) \
    X(cca_oom_verdict_t, verdict, , "what would have made the request succeed") \
    X(int, device, , "the allocator's device") \
    X(int, pool, , "CCA_POOL_SMALL / CCA_POOL_LARGE") \
    X(cudaStream_t, stream, , "the request's stream") \
    X(size_t, requested, , "the caller's size") \
    X(size_t, rounded, , "the block size") \
    X(size_t, segment_size, , "the new segment the request needed (expandable: the bytes its growth must map)") \
    X(size_t, device_total, , "cudaMemGetInfo's total") \
    X(size_t, device_free, , "cudaMemGetInfo's free, after release-and-retry") \
    X(size_t, cap, , "effective cap in bytes; 0: none") \
    X(size_t, reserved, , "after release-and-retry") \
    X(size_t, allocated, , "after release-and-retry") \
    X(size_t, reserved_before, , "when the request arrived") \
    X(size_t, allocated_before, , "when the request arrived") \
    X(size_t, free_cached_before, , "cached free bytes when the request arrived") \
    X(size_t, largest_free_before, , "largest cached free block then") \
    X(size_t, free_cached, , "cached free bytes after release-and-retry") \
    X(size_t, largest_free, , "largest cached free block after release-and-retry") \
    X(size_t, external, , "device bytes in use outside this allocator") \
    X(size_t, shortfall, , "bytes missing (see the verdict's advice); 0 if none") \
    X(size_t, largest_fit, , "largest request that would succeed now") \
    X(int, cap_refused, , "the cap said no") \
    X(int, device_refused, , "cudaMalloc said no") \
    X(uint64_t, seq, , "1 for the allocator's first OOM, then 2, ...") \
    X(char, advice, [320], "one line") \
    X(size_t, need_cap, , "bytes to raise the cap by (see the verdict's rules)") \
    X(size_t, need_external, , "bytes to free outside cca") \
    X(size_t, need_cached, , "cca's cached free bytes that would have to be in one piece") \
    X(size_t, need_live, , "bytes of live allocations to free") \
    X(int, n_holders, , "how many of holder_tags are set (0 while nothing was ever tagged)") \
    X(uint32_t, holder_tags, [CCA_OOM_HOLDERS], "the tags holding the most allocated bytes, most first (0: untagged)") \
    X(size_t, holder_bytes, [CCA_OOM_HOLDERS], "their allocated bytes") \
    X(size_t, free_cached_other, , "of free_cached, the bytes cached in other streams' segments") \
    X(size_t, need_stranded, , "bytes the request would need from other streams' cache (see the verdict's rules)") \
    X(int, n_stranded, , "how many of stranded_streams are set") \
    X(cudaStream_t, stranded_streams, [CCA_OOM_HOLDERS], "the other streams caching the most free bytes, most first") \
    X(size_t, stranded_bytes, [CCA_OOM_HOLDERS], "their free cached bytes") \
    X(size_t, free_pages, , "of free_cached, the bytes in whole 2 MiB pages (any stream): what expandable segments could map anew") \
    X(int, expandable_fits, , "1: a cache without expandable segments would have served it with them (expandable_segments:True)")
typedef struct cca_oom_report { CCA_OOM_REPORT_FIELDS(CCA_MEMBER_) } cca_oom_report_t;

typedef void (*cca_oom_fn)(const cca_oom_report_t *report, void *arg);

/* Calls fn (NULL: none) with the report of each CCA_ERROR_OUT_OF_MEMORY,
 * from the failing thread after the allocator's lock is released, before
 * cca_malloc returns. CCA_ERROR_INVALID_ARGUMENT for a NULL allocator. */
CCA_API cca_status_t cca_set_oom_callback_sized(cca_allocator_t *a, cca_oom_fn fn, void *arg, size_t report_size);
CCA_PLAIN_(cca_status_t, cca_set_oom_callback, (cca_allocator_t *a, cca_oom_fn fn, void *arg),
           return cca_set_oom_callback_sized(a, fn, arg, sizeof(cca_oom_report_t)))

/* Copies the last OOM report; its verdict is CCA_OOM_NONE when there was
 * none. CCA_ERROR_INVALID_ARGUMENT for a NULL allocator or out. */
CCA_API cca_status_t cca_last_oom_report_sized(cca_allocator_t *a, cca_oom_report_t *out, size_t out_size);
CCA_PLAIN_(cca_status_t, cca_last_oom_report, (cca_allocator_t *a, cca_oom_report_t *out),
           return cca_last_oom_report_sized(a, out, sizeof *out))

/* The report of the calling thread's last CCA_ERROR_OUT_OF_MEMORY, of any
 * allocator and any call: what a failing caller reads when other threads
 * may fail on the same allocator meanwhile. Verdict CCA_OOM_NONE when the
 * thread had none, or its last one came with no device report (cca's host
 * memory ran out, or the call was no allocation). An OOM callback's own
 * failures do not replace the report of the allocation it was called for.
 * CCA_ERROR_INVALID_ARGUMENT for a NULL out or a size below the first
 * cca_oom_report_t's. */
CCA_API cca_status_t cca_thread_last_oom_report_sized(cca_oom_report_t *out, size_t out_size);
CCA_PLAIN_(cca_status_t, cca_thread_last_oom_report, (cca_oom_report_t *out),
           return cca_thread_last_oom_report_sized(out, sizeof *out))

/* Formats r as three lines of text (figures in B/KiB/MiB/GiB) - a line
 * more when it names holders by tag (n_holders > 0), and one more when the
 * verdict counts on other streams' cached bytes (need_stranded, naming
 * stranded_streams with their bytes) - into
 * buf, always NUL-terminated when len > 0. Returns the length of the whole
 * text (as snprintf; larger than len - 1 means it was cut), 0 for NULL r. */
CCA_API size_t cca_oom_report_format_sized(const cca_oom_report_t *r, size_t r_size, char *buf, size_t len);
CCA_PLAIN_(size_t, cca_oom_report_format, (const cca_oom_report_t *r, char *buf, size_t len),
           return cca_oom_report_format_sized(r, sizeof *r, buf, len))

/* Sets r's verdict, shortfall, need_* and advice from its figures, by the
 * rules above: a pure function, for reports built by hand or replayed.
 * NULL, or a size below the first cca_oom_report_t's, is a no-op; fields
 * past r_size are neither read nor written. */
CCA_API void cca_oom_judge_sized(cca_oom_report_t *r, size_t r_size);
CCA_PLAIN_(void, cca_oom_judge, (cca_oom_report_t *r),
           cca_oom_judge_sized(r, sizeof *r))

/* "none", "exhausted", "fragmented", "cap", "external", "stranded" ("unknown" otherwise). */
CCA_API const char *cca_oom_verdict_string(cca_oom_verdict_t v);

/* ---- memory summary ---- */

/* Writes a text table like torch.cuda.memory_summary(): current, peak,
 * total allocated and freed per pool, then the fragmentation figures.
 * CCA_ERROR_INVALID_ARGUMENT for NULL arguments or a failed write. */
CCA_API cca_status_t cca_memory_summary(cca_allocator_t *a, cca_write_fn write, void *arg);

/* ---- watches ---- */

typedef enum cca_watch_kind {
    CCA_WATCH_ALLOCATED = 0,            /* allocated_bytes (all pools) */
    CCA_WATCH_RESERVED,                 /* reserved_bytes (all pools) */
} cca_watch_kind_t;

/* Called once per crossing: rising = 1 when the figure went above the
 * threshold (now > bytes), 0 when it fell back (now <= bytes). */
typedef void (*cca_watch_fn)(void *arg, cca_watch_kind_t which, size_t bytes_now, int rising);

/* Calls fn whenever the figure crosses `bytes`, seen at the end of each
 * cca_malloc, cca_free and cca_empty_cache, and of any call that returned
 * a retired stream's segments to the device (after they went back, so a
 * crossing is never one the call's own end undoes); from the thread whose
 * call crossed it, after the lock is released, in the order of the crossings.
 * *id names the watch for cca_unwatch. CCA_ERROR_INVALID_ARGUMENT for a
 * NULL allocator, fn or id or an unknown kind; CCA_ERROR_OUT_OF_MEMORY if
 * host memory runs out. */
CCA_API cca_status_t cca_watch_threshold(cca_allocator_t *a, cca_watch_kind_t which, size_t bytes,
                                         cca_watch_fn fn, void *arg, uint64_t *id);

/* The same, with the callback's argument last, as cca's other callbacks
 * that take one (cca_watch_fn, which takes it first, is kept for callers of
 * cca_watch_threshold). */
typedef void (*cca_crossing_fn)(cca_watch_kind_t which, size_t bytes_now, int rising, void *arg);
CCA_API cca_status_t cca_watch(cca_allocator_t *a, cca_watch_kind_t which, size_t bytes, cca_crossing_fn fn,
                               void *arg, uint64_t *id);

/* Removes a watch made by cca_watch, cca_watch_threshold or
 * cca_watch_threshold_queued: no delivery of it starts after this returns.
 * CCA_ERROR_INVALID_ARGUMENT for a NULL allocator or an unknown id. */
CCA_API cca_status_t cca_unwatch(cca_allocator_t *a, uint64_t id);

/* ---- tags: who holds the memory ----
 * A tag names a part of a program ("optimizer", "activations"); each block
 * records the tag in force when it was allocated: the allocating thread's
 * own tag, or, for a thread without one, the process's shared tag (so
 * that gradients allocated by autograd's own thread carry the tag its
 * caller set). Shown in snapshots (cca_block_info_t.tag, JSON "tag"), in
 * cca_memory_summary, and in OOM reports as the top holders. Ids are small
 * integers, 0 meaning untagged; names live as long as the process. */
#define CCA_TAG_MAX 1024                /* distinct tag names per process */

/* The id of tag `name` (1 to 255 bytes, no control characters), made on
 * first use. CCA_ERROR_INVALID_ARGUMENT for a bad name,
 * CCA_ERROR_OUT_OF_MEMORY once CCA_TAG_MAX - 1 names exist. */
CCA_API cca_status_t cca_tag_id(const char *name, uint32_t *id);

/* Tag id's name; NULL for 0 and for ids never made. */
CCA_API const char *cca_tag_name(uint32_t id);

/* Sets this thread's own tag (0: none; an unknown id counts as none) and
 * returns the one it replaces, for restoring. */
CCA_API uint32_t cca_tag_thread(uint32_t id);

/* Sets the process's shared tag - the tag of allocations by threads
 * without their own - and returns the one it replaces. */
CCA_API uint32_t cca_tag_shared(uint32_t id);

/* ---- history: the allocation events, for torch's snapshot viewer ----
 * A bounded ring per allocator of what happened, in order: allocations,
 * frees (requested, and completed once no other stream uses the block),
 * segments obtained and returned, device out-of-memory failures (not host
 * memory running out for cca's bookkeeping) - with the names
 * torch's memory history uses (cca_history_action_string). While it
 * records, every call takes the all-locked path. */
typedef enum cca_history_action {
    CCA_HISTORY_ALLOC = 1,              /* "alloc" */
    CCA_HISTORY_FREE_REQUESTED,         /* "free_requested": cca_free */
    CCA_HISTORY_FREE_COMPLETED,         /* "free_completed": back in the cache */
    CCA_HISTORY_SEGMENT_ALLOC,          /* "segment_alloc": cudaMalloc (expandable segments: a handle mapped) */
    CCA_HISTORY_SEGMENT_FREE,           /* "segment_free": cudaFree (expandable segments: a handle unmapped) */
    CCA_HISTORY_OOM,                    /* "oom": a request failed */
    CCA_HISTORY_SNAPSHOT,               /* "snapshot": a snapshot was taken (cca_history_mark_snapshot) */
} cca_history_action_t;

#define CCA_HISTORY_ENTRY_FIELDS(X) \
    X(uint64_t, time_us, , "when, in microseconds since the epoch") \
    X(int, action, , "cca_history_action_t") \
    X(uintptr_t, addr, , "the block's or segment's address (0 for oom)") \
    X(size_t, size, , "its bytes (oom: the request's)") \
    X(cudaStream_t, stream, , "its stream") \
    X(uint32_t, tag, , "the block's tag (cca_tag_name); 0: none") \
    X(size_t, device_free, , "oom: the device's free bytes") \
    X(uint64_t, context, , "the context of the call that made it (cca_history_set_context); 0: none")
typedef struct cca_history_entry { CCA_HISTORY_ENTRY_FIELDS(CCA_MEMBER_) } cca_history_entry_t;

/* Starts recording (max_entries > 0: keeps the newest that many; called
 * again while recording, a new bound that keeps the newest entries) or
 * stops and drops what was recorded (0). CCA_ERROR_INVALID_ARGUMENT for a NULL
 * allocator, CCA_ERROR_OUT_OF_MEMORY if the ring cannot be had. */
CCA_API cca_status_t cca_record_history(cca_allocator_t *a, size_t max_entries);

/* cca_record_history for every default allocator (cca_default): those
 * that exist and those made later. On failure (host memory) those it had
 * changed go back to the previous bound (what a smaller one dropped stays
 * dropped). */
CCA_API cca_status_t cca_default_record_history(size_t max_entries);

/* Calls fn for every recorded entry, oldest first, outside the lock (from a
 * copy); fn returns nonzero to stop. *dropped (may be NULL) gets how many
 * older entries the ring no longer holds. */
typedef int (*cca_history_fn)(const cca_history_entry_t *e, void *arg);
CCA_API cca_status_t cca_history_walk_sized(cca_allocator_t *a, cca_history_fn fn, void *arg, uint64_t *dropped,
                                            size_t entry_size);
CCA_PLAIN_(cca_status_t, cca_history_walk, (cca_allocator_t *a, cca_history_fn fn, void *arg, uint64_t *dropped),
           return cca_history_walk_sized(a, fn, arg, dropped, sizeof(cca_history_entry_t)))

/* Contexts: who made each event, for torch's stack frames. While an
 * allocator records, cca_malloc (actions has bit 1 << CCA_HISTORY_ALLOC) and
 * cca_free (bit 1 << CCA_HISTORY_FREE_REQUESTED) call fn(action) on the
 * calling thread before taking any lock of cca's (fn may call cca, and take
 * locks of its own); what it returns is the context of every event that
 * call records (the segment it obtains, an out-of-memory, frees it
 * completes) and, for an allocation, of the block (cca_block_info_t's
 * context) until it is freed. cca never interprets it (0: none). fn NULL:
 * none. Process-wide, for every allocator. A block allocated while its
 * allocator does not record has none; one allocated while it recorded
 * keeps its context after recording stops (torch keeps a live block's
 * frames too). */
typedef uint64_t (*cca_context_fn)(int action);
CCA_API void cca_history_set_context(cca_context_fn fn, unsigned actions);

/* Records a "snapshot" event (size: the bytes allocated now; addr 0, the
 * legacy stream), as torch's allocator does after each snapshot it gives,
 * where a's history is on; nothing otherwise. CCA_ERROR_INVALID_ARGUMENT
 * for a NULL allocator. */
CCA_API cca_status_t cca_history_mark_snapshot(cca_allocator_t *a);

/* Actions not to record (bit 1 << action; torch's skip_actions), for every
 * allocator; 0: record all. */
CCA_API void cca_history_set_skip(unsigned actions);

/* torch's name of an action ("alloc", "free_requested", ...); "unknown". */
CCA_API const char *cca_history_action_string(int action);

/* ---- trace files: every allocation and free, to replay on any device ----
 * The CSV layout of RAPIDS RMM's logging adaptor (docs/replay.md), after a
 * version line: "#cca-trace 1 device=D device_memory=BYTES", then
 * "Thread,Time,Action,Pointer,Size,Stream" and one row per allocate, free
 * or "allocate failure" (an out-of-memory cca_malloc returned); Size is the
 * size asked for, Time HH:MM:SS.ffffff since the first row, Stream 0 for
 * the legacy default stream and 1, 2, ... for the others in the order they
 * appear, Thread 0, 1, ... likewise. Blocks alive when recording starts
 * come first, at time 0, by address. While a trace records, every call
 * takes the all-locked path (no cost when off). Rows are buffered: written
 * when 64 KiB are held, by cca_trace_flush and cca_trace_stop, by
 * cca_destroy, and at exit. */

/* Starts recording a's allocations to path ("%d" in it: the device), which
 * is created or truncated; a recording already on ends first. Without "%d",
 * once a second device records to the same path in this process, each
 * device's file is the path with ".devN" before its extension (the first
 * one's file is renamed then). NULL or "": cca_trace_stop. CCA_ERROR_IO
 * when the file cannot be written, CCA_ERROR_INVALID_ARGUMENT when another
 * allocator of the device writes it. The trace_file key calls this at
 * cca_create. */
CCA_API cca_status_t cca_trace_start(cca_allocator_t *a, const char *path);
/* Writes the rest and closes the file; CCA_ERROR_IO when rows were lost
 * (a failed write, or host memory), saying how many and why. */
CCA_API cca_status_t cca_trace_stop(cca_allocator_t *a);
/* Writes the buffered rows now (CCA_ERROR_IO as cca_trace_stop). */
CCA_API cca_status_t cca_trace_flush(cca_allocator_t *a);
/* The file being written ("" when not recording), truncated to len. */
CCA_API cca_status_t cca_trace_path(cca_allocator_t *a, char *out, size_t len);
/* cca_trace_start for every default allocator (cca_default): those that
 * exist and those made later; NULL or "" stops them all. On a failure the
 * ones it had started stop again. */
CCA_API cca_status_t cca_default_trace_start(const char *path);

/* ---- notices: watch crossings and out-of-memory for a delivery thread ----
 * How bindings run their callbacks outside the allocating call and without
 * holding anything the allocating thread needs (a Python binding: the
 * GIL): the allocating thread only queues a notice (a crossing while it
 * still holds the allocator's locks, so that all threads' crossings queue
 * in the order they happened; a report after it unlocked), and a thread
 * of the binding's own waits for notices and runs the callbacks. */

/* Like cca_watch_threshold, but each crossing is queued as a notice (one
 * queue for the process, in crossing order) instead of calling a function. */
CCA_API cca_status_t cca_watch_threshold_queued(cca_allocator_t *a, cca_watch_kind_t which, size_t bytes,
                                                uint64_t *id);

/* on != 0: also queue a notice for each out-of-memory report of a (its
 * seq in the notice; read it with cca_last_oom_report, which may by then
 * hold a later one). CCA_ERROR_INVALID_ARGUMENT for a NULL allocator. */
CCA_API cca_status_t cca_oom_notices(cca_allocator_t *a, int on);

typedef enum cca_notice_kind {
    CCA_NOTICE_NONE = 0,                /* none came before the timeout */
    CCA_NOTICE_WATCH,                   /* a queued watch crossed its threshold */
    CCA_NOTICE_OOM,                     /* an out-of-memory report */
} cca_notice_kind_t;

/* Takes the oldest notice of the process, waiting up to timeout_ms for one
 * (negative: without limit; 0: not at all). Fills what the caller asks
 * for (any pointer may be NULL): the device of the allocator, the watch's
 * id (WATCH) or the report's seq (OOM), which figure, its threshold, the
 * figure's bytes when crossed, and rising (1 above, 0 back at or below).
 * Two allocators on one device have watch ids of their own that may be
 * equal: cca_notice_take also names the allocator. */
CCA_API cca_notice_kind_t cca_notice_wait(int timeout_ms, int *device, uint64_t *id, cca_watch_kind_t *which,
                                          size_t *threshold, size_t *bytes, int *rising);

/* A notice as cca_notice_take gives it. */
#define CCA_NOTICE_FIELDS(X) \
    X(cca_notice_kind_t, kind, , "CCA_NOTICE_WATCH or CCA_NOTICE_OOM; CCA_NOTICE_NONE: none came in time") \
    X(int, device, , "the allocator's device") \
    X(uint64_t, allocator, , "the allocator's id (cca_allocator_id): which of several on one device") \
    X(uint64_t, id, , "WATCH: the watch's id (ids are the allocator's own); OOM: the report's seq") \
    X(cca_watch_kind_t, which, , "WATCH: the figure") \
    X(int, rising, , "WATCH: 1 above, 0 back at or below") \
    X(size_t, threshold, , "WATCH: its threshold") \
    X(size_t, bytes, , "WATCH: the figure's bytes when crossed")
typedef struct cca_notice { CCA_NOTICE_FIELDS(CCA_MEMBER_) } cca_notice_t;

/* cca_notice_wait with the allocator named: takes the oldest notice of the
 * process, waiting as cca_notice_wait does, into *out (kind NONE and the
 * rest zero when none came). Returns the kind. A NULL out, or a size below
 * the first cca_notice_t's, takes nothing and returns CCA_NOTICE_NONE. */
CCA_API cca_notice_kind_t cca_notice_take_sized(int timeout_ms, cca_notice_t *out, size_t out_size);
CCA_PLAIN_(cca_notice_kind_t, cca_notice_take, (int timeout_ms, cca_notice_t *out),
           return cca_notice_take_sized(timeout_ms, out, sizeof *out))

/* A number naming allocator a for the life of the process, never reused
 * (notices carry it); 0 for NULL. */
CCA_API uint64_t cca_allocator_id(const cca_allocator_t *a);

/* Notices queued and not yet taken; notices queued since the process
 * started (*queued) and dropped because host memory ran out (*dropped);
 * either pointer may be NULL. */
CCA_API size_t cca_notice_pending(uint64_t *queued, uint64_t *dropped);

#define CCA_SCOPE_RESULT_FIELDS(X) \
    X(size_t, peak_allocated, , "highest allocated bytes while the scope was open (all threads)") \
    X(size_t, peak_reserved, , "highest reserved bytes then") \
    X(size_t, allocated_bytes, , "rounded bytes allocated meanwhile") \
    X(size_t, freed_bytes, , "rounded bytes freed meanwhile") \
    X(uint64_t, allocations, , "allocations meanwhile") \
    X(uint64_t, frees, , "frees meanwhile") \
    X(size_t, left_allocated, , "rounded bytes of the blocks allocated meanwhile and not freed at its end") \
    X(uint64_t, left_allocations, , "those blocks") \
    X(uint64_t, left_untracked, , "allocations meanwhile not followed for lack of host memory (0: left_* exact)")
typedef struct cca_scope_result { CCA_SCOPE_RESULT_FIELDS(CCA_MEMBER_) } cca_scope_result_t;

/* Opens a measurement scope; scopes nest and may overlap across threads.
 * CCA_ERROR_INVALID_ARGUMENT for NULL arguments, CCA_ERROR_OUT_OF_MEMORY
 * if host memory runs out. */
CCA_API cca_status_t cca_scope_begin(cca_allocator_t *a, uint64_t *token);

/* Closes the scope and fills *out (may be NULL). CCA_ERROR_INVALID_ARGUMENT
 * for a NULL allocator or a token that is not open. */
CCA_API cca_status_t cca_scope_end_sized(cca_allocator_t *a, uint64_t token, cca_scope_result_t *out, size_t out_size);
CCA_PLAIN_(cca_status_t, cca_scope_end, (cca_allocator_t *a, uint64_t token, cca_scope_result_t *out),
           return cca_scope_end_sized(a, token, out, sizeof(cca_scope_result_t)))

#endif /* CCA_ACCOUNTING_H */

/* cca.h - public API of cca, a CUDA caching allocator with the accounting
 * built in. One allocator serves one device; every function returns a
 * status, never aborts and never prints. This header is the allocator
 * (what a cudaMalloc replacement needs: create, malloc, free, streams,
 * caps, statistics); it includes cca_accounting.h, the accounting.
 * (contract: see docs/design.md) */
#ifndef CCA_H
#define CCA_H

#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define CCA_API
#else
#define CCA_API __attribute__((visibility("default")))
#endif

typedef enum cca_status {
    CCA_OK = 0,
    CCA_ERROR_INVALID_ARGUMENT,   /* null out-pointer, bad size, bad config struct */
    CCA_ERROR_INVALID_POINTER,    /* free/record_stream of a pointer cca does not own, or a double free */
    CCA_ERROR_OUT_OF_MEMORY,      /* device memory exhausted or fragmented, or the cap reached */
    CCA_ERROR_INVALID_CONFIG,     /* a CCA_CONF key or value that cannot be used */
    CCA_ERROR_CUDA,               /* a CUDA runtime call failed for another reason */
    CCA_ERROR_IO,                 /* a trace file could not be opened or written (cca_trace_start) */
    CCA_ERROR_CORRUPTED,          /* cca_check found the allocator's state or figures inconsistent */
} cca_status_t;

typedef struct cca_allocator cca_allocator_t;      /* opaque; one per device */

/* Structs that cross the library's boundary are declared from field lists,
 * X(type, name, dims, meaning) with dims an array suffix or empty, so that
 * the struct, its exported layout (cca_struct_layout) and the sized copies
 * cannot drift apart. Fields are only ever appended (cca_stat_t and
 * cca_size_class_t, which the others hold in arrays, never grow). Every
 * call that fills or reads such a struct has a _sized form taking the
 * caller's sizeof, so a program built against an older cca.h is never
 * written past its struct (a newer library fills what fits, in field
 * order; an older one zeroes what it does not know).
 *
 * The plain names (cca_get_stats, cca_create, ...) are static inline
 * functions that pass the caller's sizeof to the _sized form: a call, and
 * a call through a pointer (&cca_get_stats is the wrapper's address in the
 * calling program), fill the struct this header declares. The library
 * also exports functions of the plain names, for programs linked against
 * a cca.h from before the wrappers: those fill the struct's first version
 * only (the fields it had when the sized calls began; for cca_config_t the
 * 120 bytes before expandable_segments, so such a program that uses that
 * key must be rebuilt against this header). */
#define CCA_MEMBER_(type, name, dims, doc) type name dims;
#ifndef CCA_PLAIN_SYMBOLS_
#define CCA_PLAIN_(ret, name, params, body) static inline ret name params { body; }
#else                                   /* the library's definitions of the exported plain names */
#define CCA_PLAIN_(ret, name, params, body) CCA_API ret name params;
#endif

/* Size intervals of roundup_power2_divisions: [0,2 MiB), [2,4), [4,8) MiB ...
 * up to the last, which covers everything from 32 GiB on (as PyTorch). */
#define CCA_ROUNDUP_INTERVALS 16
#define CCA_TRACE_PATH_MAX 1024           /* trace_file's room, its terminating NUL included */

#define CCA_CONFIG_FIELDS(X) \
    X(int,      device, , "CUDA device this allocator serves") \
    X(size_t,   max_split_size, , "blocks this large are never split; SIZE_MAX: no limit") \
    X(unsigned, roundup_power2_divisions, [CCA_ROUNDUP_INTERVALS], "per interval; 0 or 1: round to 512 B") \
    X(double,   garbage_collection_threshold, , "0: off; in (0,1): fraction of the cap (needs a cap)") \
    X(double,   memory_fraction, , "0: no cap; in (0,1]: cap = fraction of device total") \
    X(size_t,   memory_limit, , "0: no cap; else cap in bytes (the smaller cap wins)") \
    /* Policies beyond PyTorch's rules (off by default; see docs/design.md "Policies"): */ \
    X(int,      release_before_grow, , "return the growing stream's unused cached segments if they keep the reserved peak from rising, while free memory or the cap's room is at least 4x what cca holds") \
    X(size_t,   segment_growth_percent, , "0: off; else new large segments are at least this % of reserved large bytes") \
    X(int,      expandable_segments, , "1: segments are virtual ranges mapped as they grow (CUDA's VMM calls; see docs/design.md)") \
    X(char,     trace_file, [CCA_TRACE_PATH_MAX], "\"\": off; else record every allocation and free there (cca_trace_start)")

typedef struct cca_config { CCA_CONFIG_FIELDS(CCA_MEMBER_) } cca_config_t;

/* Statistics, named like torch.cuda.memory_stats(). */
#define CCA_STAT_PARTS(X) \
    X(int64_t, current, , "the figure now") \
    X(int64_t, peak, , "its highest value since the last peak reset") \
    X(int64_t, allocated, , "total increases since the last accumulated reset") \
    X(int64_t, freed, , "total decreases since then")
typedef struct cca_stat { CCA_STAT_PARTS(CCA_MEMBER_) } cca_stat_t;
enum { CCA_POOL_ALL, CCA_POOL_SMALL, CCA_POOL_LARGE, CCA_POOL_COUNT };

/* cca_stats_t, declared once in struct order: CCA_STATS_FIELDS(X) calls
 * X(kind, name, meaning) for each field (CCA_STATS_LIST_ is the list; its F
 * selects), the kind one of
 *   POOLED   a cca_stat_t per pool, indexed CCA_POOL_ALL/SMALL/LARGE
 *   STAT     one cca_stat_t
 *   COUNTER  an int64_t total, set to 0 by cca_reset_accumulated_stats
 *   GAUGE    an int64_t figure now: no peak, never reset
 *   SETTING  an int64_t setting
 *   PROFILE  an int64_t figure of how the allocator ran, not of memory
 *            (entries into its all-locked path, its locks' traffic): set
 *            to 0 by cca_reset_accumulated_stats; it depends on threads and
 *            timing, and every call counts, cca_get_stats's own included
 * The struct, the resets of peaks and totals, cca_check's invariants, the
 * exported layout, cca_stats_fields() and the Python package's names all
 * expand from this list. Fields are only ever appended. */
#define CCA_STATS_LIST_(F, X) \
    F(X, CCA_POOLED,  allocation,           "live allocations (count)") \
    F(X, CCA_POOLED,  segment,              "device segments (count); expandable: contiguous mapped ranges (PyTorch counts none)") \
    F(X, CCA_POOLED,  active,               "allocated or awaiting stream events (count)") \
    F(X, CCA_POOLED,  inactive_split,       "free blocks inside split segments (count; not expandable ones, as PyTorch)") \
    F(X, CCA_POOLED,  allocated_bytes,      "rounded bytes handed out") \
    F(X, CCA_POOLED,  reserved_bytes,       "bytes held from the device (expandable: physical handles, mapped or not)") \
    F(X, CCA_POOLED,  active_bytes,         "allocated or awaiting stream events (bytes)") \
    F(X, CCA_POOLED,  inactive_split_bytes, "free bytes inside split segments (not expandable ones)") \
    F(X, CCA_POOLED,  requested_bytes,      "bytes the callers asked for") \
    F(X, CCA_COUNTER, num_alloc_retries,    "device allocations retried after releasing the cache") \
    F(X, CCA_COUNTER, num_ooms,             "CCA_ERROR_OUT_OF_MEMORY returned (cca_malloc_try's not counted)") \
    F(X, CCA_COUNTER, num_device_alloc,     "successful cudaMalloc calls (expandable: cuMemMap calls, as PyTorch)") \
    F(X, CCA_COUNTER, num_device_free,      "successful cudaFree calls (expandable: cuMemUnmap calls)") \
    F(X, CCA_COUNTER, num_sync_all_streams, "waits for all pending events") \
    F(X, CCA_STAT,    oversize_allocations, "allocations of at least max_split_size (count; as PyTorch)") \
    F(X, CCA_STAT,    oversize_segments,    "segments of at least max_split_size (count; as PyTorch)") \
    F(X, CCA_SETTING, max_split_size,       "the max_split_size setting in bytes; -1: unlimited (as torch)") \
    F(X, CCA_GAUGE,   host_bytes,           "host memory cca holds for its own bookkeeping") \
    F(X, CCA_COUNTER, num_handle_create,    "physical handles created (cuMemCreate; expandable segments)") \
    F(X, CCA_COUNTER, num_handle_release,   "physical handles released (cuMemRelease)") \
    F(X, CCA_STAT,    unmapped_bytes,       "bytes of physical handles held unmapped (part of reserved_bytes)") \
    F(X, CCA_PROFILE, num_all_locked,       "entries into the all-locked path (every call's, a reader's included)") \
    CCA_STATS_LOCK_(F, X, allocator, "the allocator lock") \
    CCA_STATS_LOCK_(F, X, streams,   "the stream locks together") \
    CCA_STATS_LOCK_(F, X, segments,  "the segment-list lock (a stream growing off the all-locked path)") \
    CCA_STATS_LOCK_(F, X, headroom,  "the shared-headroom lock (a stream passing its lease, or giving room back)")

/* A lock class's figures (jemalloc's mutex profiling): every acquisition
 * counted, and only those that waited timed. */
#define CCA_STATS_LOCK_(F, X, cls, what) \
    F(X, CCA_PROFILE, lock_##cls##_acquisitions,  "acquisitions of " what) \
    F(X, CCA_PROFILE, lock_##cls##_contended,     "acquisitions of " what " that waited") \
    F(X, CCA_PROFILE, lock_##cls##_wait_ns_total, "nanoseconds they waited in all") \
    F(X, CCA_PROFILE, lock_##cls##_wait_ns_max,   "the longest of those waits (ns)")

/* Each kind's C type and array suffix. */
#define CCA_STATS_TYPE_CCA_POOLED  cca_stat_t
#define CCA_STATS_TYPE_CCA_STAT    cca_stat_t
#define CCA_STATS_TYPE_CCA_COUNTER int64_t
#define CCA_STATS_TYPE_CCA_GAUGE   int64_t
#define CCA_STATS_TYPE_CCA_SETTING int64_t
#define CCA_STATS_TYPE_CCA_PROFILE int64_t
#define CCA_STATS_DIMS_CCA_POOLED  [CCA_POOL_COUNT]
#define CCA_STATS_DIMS_CCA_STAT
#define CCA_STATS_DIMS_CCA_COUNTER
#define CCA_STATS_DIMS_CCA_GAUGE
#define CCA_STATS_DIMS_CCA_SETTING
#define CCA_STATS_DIMS_CCA_PROFILE

#define CCA_STATS_ALL_(X, kind, name, doc) X(kind, name, doc)
#define CCA_STATS_FIELDS(X) CCA_STATS_LIST_(CCA_STATS_ALL_, X)

/* The list's fields of one kind, X(name, meaning): CCA_STAT_FIELDS the
 * CCA_POOLED ones, CCA_COUNTER_FIELDS the CCA_COUNTER ones - all seven
 * (before the one list it named the first five, which sat together after
 * the pooled stats; the appended fields were CCA_STATS_TAIL_FIELDS, gone:
 * mirror the struct with CCA_STATS_FIELDS). Each view expands the list, so
 * one cannot be used inside another's X. */
#define CCA_STAT_FIELDS(X) CCA_STATS_LIST_(CCA_STATS_POOLED_, X)
#define CCA_COUNTER_FIELDS(X) CCA_STATS_LIST_(CCA_STATS_COUNTER_, X)
#define CCA_STATS_POOLED_(X, kind, name, doc) CCA_STATS_ONLY_##kind##_POOLED(X, name, doc)
#define CCA_STATS_COUNTER_(X, kind, name, doc) CCA_STATS_ONLY_##kind##_COUNTER(X, name, doc)
#define CCA_STATS_YES_(X, name, doc) X(name, doc)
#define CCA_STATS_NO_(X, name, doc)
#define CCA_STATS_ONLY_CCA_POOLED_POOLED   CCA_STATS_YES_
#define CCA_STATS_ONLY_CCA_STAT_POOLED     CCA_STATS_NO_
#define CCA_STATS_ONLY_CCA_COUNTER_POOLED  CCA_STATS_NO_
#define CCA_STATS_ONLY_CCA_GAUGE_POOLED    CCA_STATS_NO_
#define CCA_STATS_ONLY_CCA_SETTING_POOLED  CCA_STATS_NO_
#define CCA_STATS_ONLY_CCA_PROFILE_POOLED  CCA_STATS_NO_
#define CCA_STATS_ONLY_CCA_POOLED_COUNTER  CCA_STATS_NO_
#define CCA_STATS_ONLY_CCA_STAT_COUNTER    CCA_STATS_NO_
#define CCA_STATS_ONLY_CCA_COUNTER_COUNTER CCA_STATS_YES_
#define CCA_STATS_ONLY_CCA_GAUGE_COUNTER   CCA_STATS_NO_
#define CCA_STATS_ONLY_CCA_SETTING_COUNTER CCA_STATS_NO_
#define CCA_STATS_ONLY_CCA_PROFILE_COUNTER CCA_STATS_NO_

typedef struct cca_stats {
#define CCA_STATS_MEMBER_(kind, name, doc) CCA_STATS_TYPE_##kind name CCA_STATS_DIMS_##kind;
    CCA_STATS_FIELDS(CCA_STATS_MEMBER_)
#undef CCA_STATS_MEMBER_
} cca_stats_t;

/* The list above as a table, for bindings: each field's name, its kind as
 * the list writes it ("CCA_POOLED", "CCA_STAT", "CCA_COUNTER", "CCA_GAUGE",
 * "CCA_SETTING", "CCA_PROFILE") and
 * meaning, in struct order; *count (may be NULL) gets how many. Offsets and
 * types: cca_struct_layout("cca_stats_t"). This descriptor never grows. */
typedef struct cca_stats_field {
    const char *name, *kind, *doc;
} cca_stats_field_t;
CCA_API const cca_stats_field_t *cca_stats_fields(size_t *count);

/* Fills cfg with the defaults (PyTorch's rules: no split limit, 512 B
 * rounding, no cap, no garbage collection, device 0). */
CCA_API void cca_config_init_sized(cca_config_t *cfg, size_t cfg_size);
CCA_PLAIN_(void, cca_config_init, (cca_config_t *cfg),
           cca_config_init_sized(cfg, sizeof *cfg))

/* The configuration keys of cca_config_parse and CCA_CONF, declared once:
 * CCA_CONFIG_KEY_TABLE(X) calls X(name, type, field, off, lo, hi, value,
 * range, default, meaning) for each (the list: CCA_CONFIG_KEY_LIST_), read
 * by the parser, both validation paths (the string's and cca_create's),
 * the run-time cap setters, every message, the defaults, the exported
 * table (cca_config_keys) and README's table (a test compares). type:
 *   CCA_KEY_MIB       an integer of MiB, kept in bytes in field: lo .. hi bytes
 *   CCA_KEY_INTEGER   an integer, lo .. hi
 *   CCA_KEY_NUMBER    a decimal number in [lo, hi]
 *   CCA_KEY_OPEN      a decimal number in (lo, hi)
 *   CCA_KEY_BOOL      True or False (any case), 1 or 0, kept as 1 or 0
 *   CCA_KEY_DIVISIONS N, or a list [MB:N,...,>:N]: each N 0 or a power of 2 up to hi
 *   CCA_KEY_PRESET    one of the presets' names (no field)
 *   CCA_KEY_PATH      text shorter than field (a char array)
 * field is the cca_config_t member the key sets, off its default there,
 * which turns the key off and is always accepted in the struct. */
#define CCA_CONFIG_KEY_LIST_(F, X) \
    F(X, max_split_size_mb, CCA_KEY_MIB, max_split_size, SIZE_MAX, 20971521, INT64_MAX, "an integer", \
      "21 .. 8796093022207 (MiB)", "unlimited", "blocks this large are never split") \
    F(X, roundup_power2_divisions, CCA_KEY_DIVISIONS, roundup_power2_divisions, 0, 0, 1048576, "N, or a list", \
      "N or [MB:N,...,>:N]: N 0 or a power of 2 up to 1048576, MB a power of 2", "0", \
      "round requests to N steps per power-of-two interval (PyTorch's rule)") \
    F(X, garbage_collection_threshold, CCA_KEY_OPEN, garbage_collection_threshold, 0, 0, 1, "a number", "(0, 1)", "off", \
      "with a cap, release unused cached segments, the longest unused first, once reserved passes this share of it") \
    F(X, memory_fraction, CCA_KEY_NUMBER, memory_fraction, 0, 9.094947017729282379150390625e-13, 1, "a number", "[2^-40, 1]", "no cap", \
      "cap as a share of the device's memory (at least one 2 MiB segment; the smaller cap wins)") \
    F(X, memory_limit_mb, CCA_KEY_MIB, memory_limit, 0, 2097152, INT64_MAX, "an integer", "2 .. 8796093022207 (MiB)", \
      "no cap", "cap in MiB (the smaller cap wins)") \
    F(X, release_before_grow, CCA_KEY_BOOL, release_before_grow, 0, 0, 1, "True or False", "True, False, 1, 0", "False", \
      "return the growing stream's unused cached segments (the smallest that covers the excess first) if that keeps the reserved peak from rising, while free memory or the cap's room is at least 4x what cca holds") \
    F(X, segment_growth_percent, CCA_KEY_INTEGER, segment_growth_percent, 0, 0, 1000, "an integer", "0 .. 1000", "0", \
      "new segments are at least this share of the pool's reserved bytes") \
    F(X, expandable_segments, CCA_KEY_BOOL, expandable_segments, 0, 0, 1, "True or False", "True, False, 1, 0", "False", \
      "one growing virtual range per stream and pool, mapped in physical handles; free handles unmapped when memory runs short") \
    F(X, preset, CCA_KEY_PRESET, , 0, 0, 0, "a name", "pytorch, lean, expandable", "pytorch", \
      "lean = release_before_grow:True,max_split_size_mb:128; expandable = expandable_segments:True") \
    F(X, trace_file, CCA_KEY_PATH, trace_file, 0, 0, 0, "a path", "up to 1023 bytes, no ','; %d: the device", "off", \
      "record every allocation and free, for cca-replay (cca_trace_start)")

#define CCA_CONFIG_KEY_ALL_(X, name, type, field, off, lo, hi, value, range, def, doc) \
    X(name, type, field, off, lo, hi, value, range, def, doc)
#define CCA_CONFIG_KEY_TABLE(X) CCA_CONFIG_KEY_LIST_(CCA_CONFIG_KEY_ALL_, X)
/* The table's text alone: X(name, value, range, default, meaning). */
#define CCA_CONFIG_KEY_TEXT_(X, name, type, field, off, lo, hi, value, range, def, doc) X(name, value, range, def, doc)
#define CCA_CONFIG_KEYS(X) CCA_CONFIG_KEY_LIST_(CCA_CONFIG_KEY_TEXT_, X)

/* The presets (preset:NAME), declared once: X(name, settings), settings in
 * CCA_CONF's syntax, applied over what came before; pytorch's are empty:
 * it restores every default but the device and trace_file. A preset sets
 * the keys its settings name (pytorch: all). The preset key's range and
 * meaning above say the same (a test compares). */
#define CCA_CONFIG_PRESETS(X) \
    X(pytorch, "") \
    X(lean, "release_before_grow:True,max_split_size_mb:128") \
    X(expandable, "expandable_segments:True")

typedef struct cca_config_key {
    const char *name, *value, *range, *default_value, *doc;
} cca_config_key_t;

/* The keys above as a table; *count (may be NULL) gets how many. */
CCA_API const cca_config_key_t *cca_config_keys(size_t *count);

/* Applies a "key:value,key:value" string (PyTorch's syntax) on top of cfg,
 * the keys in CCA_CONFIG_KEYS, in order. No length limit: a long value is
 * read whole or refused. A key may appear once; a key after a preset
 * refines it (preset:lean,max_split_size_mb:256), but a key before a
 * preset that the preset sets again is an error, as is any key twice.
 * In a roundup_power2_divisions list each interval (and '>') appears once,
 * in increasing order. CCA_ERROR_INVALID_CONFIG with the reason, naming the
 * key, in err (and in cca_last_error_string()) on an unknown key or a bad
 * value; cfg is then unchanged. NULL or "" changes nothing. */
CCA_API cca_status_t cca_config_parse_sized(cca_config_t *cfg, size_t cfg_size, const char *conf, char *err,
                                            size_t err_len);
CCA_PLAIN_(cca_status_t, cca_config_parse, (cca_config_t *cfg, const char *conf, char *err, size_t err_len),
           return cca_config_parse_sized(cfg, sizeof *cfg, conf, err, err_len))

/* Creates an allocator for cfg->device (NULL cfg: defaults).
 * CCA_ERROR_INVALID_ARGUMENT for a NULL out or a bad config,
 * CCA_ERROR_CUDA when the device cannot be used. */
CCA_API cca_status_t cca_create_sized(const cca_config_t *cfg, size_t cfg_size, cca_allocator_t **out);
CCA_PLAIN_(cca_status_t, cca_create, (const cca_config_t *cfg, cca_allocator_t **out),
           return cca_create_sized(cfg, sizeof *cfg, out))

/* The configuration in force (memory_fraction and memory_limit as last
 * set by cca_set_memory_fraction / cca_set_memory_limit). */
CCA_API cca_status_t cca_get_config_sized(cca_allocator_t *a, cca_config_t *out, size_t out_size);
CCA_PLAIN_(cca_status_t, cca_get_config, (cca_allocator_t *a, cca_config_t *out),
           return cca_get_config_sized(a, out, sizeof *out))

/* Returns every segment to the device, live allocations included, and frees
 * the allocator (in every case). NULL is a no-op. Each call that gives
 * memory back - cudaFree, and with expandable segments cuMemUnmap,
 * cuMemRelease and cuMemAddressFree - is tried 4 times (the call and 3
 * retries). Afterwards the calling thread's cca_last_error_string() is ""
 * if everything went back; else it says what the device kept (bytes of
 * device memory, of address space) and, per kind of call, how many calls
 * failed every try, the bytes they concern and the last error, e.g.
 * "cca_destroy: device 0 kept 20971520 bytes (20.00 MiB) of device memory
 * after 4 tries per call: cudaFree failed for 1 segment (20971520 bytes):
 * cudaErrorMemoryAllocation". A mapping that cannot be unmapped still has
 * its handle released, but keeps its reservation ("N reservations (B
 * bytes) not freed: mappings remain in it"). A trace file (cca_trace_start)
 * is written out and closed; rows it lost are said there too. */
CCA_API void cca_destroy(cca_allocator_t *a);

/* Allocates size bytes for use on stream. Size 0 gives *ptr = NULL.
 * CCA_ERROR_OUT_OF_MEMORY when neither the cache nor the device (nor the
 * cap) allows it; the allocator's other allocations are unaffected. */
CCA_API cca_status_t cca_malloc(cca_allocator_t *a, void **ptr, size_t size, cudaStream_t stream);

/* cca_malloc for a caller that, on an out-of-memory, frees memory of its
 * own and asks again (CuPy and Numba run the garbage collector or flush
 * deferred frees): the same search, release-and-retry and result, but an
 * out-of-memory is only returned - CCA_ERROR_OUT_OF_MEMORY and the thread's
 * text - not counted (num_ooms), not delivered (OOM callbacks, watches), not
 * in the history, and no OOM report is made (the thread's last one is
 * cleared, as any out-of-memory does). The caller's next cca_malloc is the
 * one that counts: one failed allocation, one OOM. */
CCA_API cca_status_t cca_malloc_try(cca_allocator_t *a, void **ptr, size_t size, cudaStream_t stream);

/* Frees a pointer from cca_malloc, from any thread (its block is found
 * through the allocator's address map, never by scanning); NULL is a
 * no-op. The block is reusable at once on its own stream, on others once
 * recorded uses completed.
 * CCA_ERROR_INVALID_POINTER for a foreign, interior or already freed pointer. */
CCA_API cca_status_t cca_free(cca_allocator_t *a, void *ptr);

/* Marks ptr as used on stream too: its free then waits for that stream's
 * work queued up to the free. CCA_ERROR_INVALID_POINTER as for cca_free. */
CCA_API cca_status_t cca_record_stream(cca_allocator_t *a, void *ptr, cudaStream_t stream);

/* Waits for pending frees, then returns every fully free segment to the device. */
CCA_API cca_status_t cca_empty_cache(cca_allocator_t *a);

/* Tells cca that a stream the program created is about to be destroyed
 * (call it before cudaStreamDestroy): its cached free segments go back to
 * the device after one device-wide wait, blocks still live are freed later
 * as usual, and a handle the runtime reuses afterwards is a new stream.
 * Without it, a reused handle is taken for the old stream (as in PyTorch).
 * Per-thread streams are retired by themselves when their thread exits.
 * A stream cca never saw is no error. CCA_ERROR_INVALID_ARGUMENT for a NULL
 * allocator or the legacy default stream. */
CCA_API cca_status_t cca_stream_retire(cca_allocator_t *a, cudaStream_t stream);

/* Changes the cap at run time, effective for the next growth; memory
 * reserved above a new cap stays until cca_empty_cache (as PyTorch). The
 * fraction is of the device's total memory, 0 removes the fraction cap;
 * a limit of 0 bytes removes the byte cap; the smaller of the two wins.
 * Both are checked against the key table (memory_fraction, memory_limit_mb),
 * save that a limit past 2^63 bytes is taken as it always was (no cap in
 * effect). CCA_ERROR_INVALID_ARGUMENT (and nothing changes) for a NULL
 * allocator, a fraction outside [2^-40, 1] but 0, NaN, or a cap below one
 * 2 MiB segment. */
CCA_API cca_status_t cca_set_memory_fraction(cca_allocator_t *a, double fraction);
CCA_API cca_status_t cca_set_memory_limit(cca_allocator_t *a, size_t bytes);

/* The cap now: *bytes the effective cap (0: none), *fraction and *limit
 * the settings behind it; any may be NULL. CCA_ERROR_INVALID_ARGUMENT for a
 * NULL allocator. */
CCA_API cca_status_t cca_get_memory_cap(cca_allocator_t *a, size_t *bytes, double *fraction, size_t *limit);

/* Copies all statistics out as one consistent snapshot. */
CCA_API cca_status_t cca_get_stats_sized(cca_allocator_t *a, cca_stats_t *out, size_t out_size);
CCA_PLAIN_(cca_status_t, cca_get_stats, (cca_allocator_t *a, cca_stats_t *out),
           return cca_get_stats_sized(a, out, sizeof *out))

/* Sets every peak to its current value. */
CCA_API cca_status_t cca_reset_peak_stats(cca_allocator_t *a);

/* Sets the allocated/freed totals and the num_* counters to 0, as
 * torch.cuda.reset_accumulated_memory_stats() does (so allocated - freed ==
 * current holds again only for changes after the reset). */
CCA_API cca_status_t cca_reset_accumulated_stats(cca_allocator_t *a);

/* Walks every segment and block and checks the allocator's invariants and
 * that each counter equals what the walk finds. CCA_OK, or
 * CCA_ERROR_CORRUPTED with the first violation in cca_last_error_string()
 * (a bug in cca, or its memory overwritten); CCA_ERROR_INVALID_ARGUMENT for
 * a NULL allocator, CCA_ERROR_CUDA where a query of the driver fails. */
CCA_API cca_status_t cca_check(cca_allocator_t *a);

/* The allocator of a device shared by everything in the process (the
 * framework hooks, the Python package), created on first use with the
 * configuration of cca_default_configure, or else of CCA_CONF (read once);
 * looked up without a lock once created. CCA_ERROR_INVALID_CONFIG if that
 * configuration is bad, CCA_ERROR_INVALID_ARGUMENT for a device outside
 * 0..63. */
CCA_API cca_status_t cca_default(int device, cca_allocator_t **out);

/* Sets the configuration of the default allocators from code, instead of
 * CCA_CONF; only before the first cca_default (CCA_ERROR_INVALID_ARGUMENT
 * after). CCA_ERROR_INVALID_CONFIG for a bad string (nothing changes). */
CCA_API cca_status_t cca_default_configure(const char *config);

/* The default allocator of a device if it was created, else *out = NULL;
 * never creates one (so never touches a device). */
CCA_API cca_status_t cca_default_existing(int device, cca_allocator_t **out);

/* The calling thread's current CUDA device (cudaGetDevice), and a device's
 * free and total memory (cudaMemGetInfo, the caller's device left as it
 * was), for bindings that load no runtime themselves.
 * CCA_ERROR_INVALID_ARGUMENT for NULL outputs and, from cca_mem_get_info,
 * a device the runtime does not have (cudaErrorInvalidDevice);
 * CCA_ERROR_CUDA with the runtime's reason for any other failure. */
CCA_API cca_status_t cca_current_device(int *device);
CCA_API cca_status_t cca_mem_get_info(int device, size_t *free_bytes, size_t *total_bytes);

/* Static text naming a status. */
CCA_API const char *cca_status_string(cca_status_t s);

/* Thread-local text explaining this thread's last failure ("" if none). */
CCA_API const char *cca_last_error_string(void);

/* The accounting: fragmentation, snapshots, OOM reports, summary, watches,
 * tags, history, trace files, notices, scopes. */
#include "cca_accounting.h"

/* ==== Layouts, for bindings ====
 * Every struct above, described from its field list: bindings (the Python
 * package) build their structures from these instead of restating them.
 * These descriptor structs (and cca_config_key_t), returned as arrays, are
 * frozen: they never grow. */

typedef struct cca_field_layout {
    const char *name;                   /* the member's name */
    const char *type;                   /* its C type as cca.h writes it: "size_t", "cca_stat_t", ... */
    size_t offset;                      /* bytes from the struct's start */
    size_t size;                        /* bytes of the whole member (all elements) */
    size_t count;                       /* elements: 1, or the array's length */
    const char *doc;                    /* one line */
} cca_field_layout_t;

typedef struct cca_struct_layout {
    const char *name;                   /* "cca_stats_t", ... */
    size_t size;                        /* sizeof in this library */
    size_t n_fields;
    const cca_field_layout_t *fields;   /* in declaration order */
} cca_struct_layout_t;

/* Every public struct's layout; *count (may be NULL) gets how many. */
CCA_API const cca_struct_layout_t *cca_struct_layouts(size_t *count);

/* One struct's layout by name ("cca_stats_t"), or NULL. */
CCA_API const cca_struct_layout_t *cca_struct_layout(const char *name);

#undef CCA_PLAIN_

#ifdef __cplusplus
}
#endif
#endif /* CCA_H */

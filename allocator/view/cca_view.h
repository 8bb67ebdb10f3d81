/* cca_view.h - the one header of the core that the accounting (stats/)
 * sees: stats/ is its own library, built with the public headers and this
 * folder on its path and nothing else of allocator/, so an include of the
 * core's internals does not build. What crosses here:
 *   - a view: one consistent moment of an allocator (all locked while it
 *     lasts) with the public figures exact, its identity and settings, the
 *     change just made, and the accounting's own state (cca_acct_t);
 *   - a walk of the view's segments and blocks in the public snapshot
 *     structs (the core's blocks stay the core's);
 *   - the table through which the core tells the accounting what happened
 *     (cca_acct_ops_t, the one name the core takes from stats/);
 *   - the helpers both sides use: sized copies, errors, the thread's last
 *     OOM report. view.c implements the core's side. */
#ifndef CCA_VIEW_H
#define CCA_VIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "cca.h"

/* PyTorch's segment sizes, which the OOM advice speaks of. */
#define CCA_SMALL_BUFFER   ((size_t)2 << 20)          /* small-pool segment */
#define CCA_LARGE_BUFFER   ((size_t)20 << 20)         /* large segment for requests under MIN_LARGE_ALLOC */

/* ---- sized structs (see cca.h) ----
 * The size of each struct's first version: the fields it had when the
 * sized calls began (or when the struct was added), frozen as numbers so
 * that appending a field never changes them (tests/test_contracts.c pins
 * each to the offset of the first field appended after it). A caller's
 * size below it cannot be one of ours; the exported plain symbols
 * (compat.c) fill exactly these. LP64 (x86_64, aarch64) figures. */
#define CCA_V1_STATS   904                    /* up to num_sync_all_streams */
#define CCA_V1_CONFIG  120                    /* up to segment_growth_percent */
#define CCA_V1_FRAG    3168                   /* up to classes */
#define CCA_V1_SEG     64                     /* up to n_blocks */
#define CCA_V1_BLOCK   56                     /* up to segment_address */
#define CCA_V1_OOM     496                    /* up to advice */
#define CCA_V1_SCOPE   48                     /* up to frees */
#define CCA_V1_HISTORY 56                     /* up to device_free */
#define CCA_V1_NOTICE  48                     /* up to bytes */
#if UINTPTR_MAX == UINT64_MAX                 /* the numbers are LP64's: a field inserted before them moves these */
_Static_assert(offsetof(cca_config_t, expandable_segments) == CCA_V1_CONFIG, "cca_config_t's first version");
_Static_assert(offsetof(cca_stats_t, oversize_allocations) == CCA_V1_STATS, "cca_stats_t's first version");
_Static_assert(offsetof(cca_frag_t, unmapped) == CCA_V1_FRAG, "cca_frag_t's first version");
_Static_assert(offsetof(cca_segment_info_t, is_expandable) == CCA_V1_SEG, "cca_segment_info_t's first version");
_Static_assert(offsetof(cca_block_info_t, tag) == CCA_V1_BLOCK, "cca_block_info_t's first version");
_Static_assert(offsetof(cca_oom_report_t, need_cap) == CCA_V1_OOM, "cca_oom_report_t's first version");
_Static_assert(offsetof(cca_scope_result_t, left_allocated) == CCA_V1_SCOPE, "cca_scope_result_t's first version");
_Static_assert(offsetof(cca_history_entry_t, context) == CCA_V1_HISTORY, "cca_history_entry_t's first version");
_Static_assert(sizeof(cca_notice_t) >= CCA_V1_NOTICE, "cca_notice_t's first version");
#endif

/* Copies the library's struct (n bytes) out to the caller's of `size`
 * bytes: the fields that fit, in order, and zeros past what we know. */
static inline void _cca_copy_out(void *dst, size_t size, const void *src, size_t n)
{
    memcpy(dst, src, size < n ? size : n);
    if (size > n) memset((char *)dst + n, 0, size - n);
}

/* errors.c: the calling thread's last failure (cca_last_error_string) and
 * its last OOM report (verdict NONE: none since its last out-of-memory). */
cca_status_t _cca_errors_fail(cca_status_t s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void                    _cca_errors_append(const char *text);   /* a line more in cca_last_error_string() */
void                    _cca_errors_thread_oom_set(const cca_oom_report_t *r);
const cca_oom_report_t *_cca_errors_thread_oom(void);

/* ---- the view ---- */

/* The accounting's own state, kept in each allocator (changed only by stats/). */
typedef struct cca_acct {
    const struct cca_acct_ops *ops;               /* what the core tells it; installed by cca_create */
    struct cca_watch_state *watch;                /* watches and scopes (NULL when none) */
    cca_oom_report_t *last_oom;                   /* the last OOM report (NULL when none) */
    void (*oom_cb)(const cca_oom_report_t *, void *);
    void *oom_cb_arg;
    size_t oom_cb_size;                           /* the callback's sizeof(cca_oom_report_t) */
    bool oom_notices;                             /* queue a notice per OOM report (cca_oom_notices) */
} cca_acct_t;

typedef struct cca_view {
    const cca_allocator_t *a;                     /* opaque here: for the walk and the history */
    int device;
    uint64_t id;                                  /* cca_allocator_id */
    const cca_config_t *cfg;                      /* the configuration in force */
    size_t cap;                                   /* the cap in bytes; SIZE_MAX: none */
    struct {                                      /* the block the call being told of took or freed */
        uintptr_t addr;
        size_t size;
        int kind;                                 /* +1 taken, -1 freed, 0 neither */
    } change;
    cca_stats_t stats;                            /* the public figures (cca_get_stats), exact */
    cca_acct_t *acct;                             /* the accounting's own state: its to change */
    cca_allocator_t *mut_;                        /* for _cca_view_hooks alone */
} cca_view_t;

/* Runs fn on a view of a (all locked while it runs); its status returned. */
typedef cca_status_t (*cca_view_fn)(cca_view_t *v, void *arg);
cca_status_t _cca_view(cca_allocator_t *a, cca_view_fn fn, void *arg);
/* On: every change goes all locked and is told to ops->changed. */
void _cca_view_hooks(cca_view_t *v, bool on);

/* Every segment of the view in the core's order, in one pass: its blocks
 * by address, then the segment itself with its sums complete, as the
 * snapshot gives them (cca_snapshot_walk's structs; a block's segment
 * argument has the identity, not yet the sums). A block's counts_split: it
 * is free inside a split segment as inactive_split counts it. A
 * callback's nonzero return stops the walk. */
typedef struct cca_view_walk {
    int (*segment)(const cca_segment_info_t *s, void *arg);   /* may be NULL */
    int (*block)(const cca_segment_info_t *s, const cca_block_info_t *b, bool counts_split, void *arg);
    void *arg;
} cca_view_walk_t;
void _cca_view_walk(const cca_view_t *v, const cca_view_walk_t *w);

/* The recorded history of the view's moment (cca_record_history), oldest
 * first, in a malloc'ed array; false: no host memory. */
bool _cca_view_history(const cca_view_t *v, cca_history_entry_t **out, size_t *n, uint64_t *dropped);

typedef struct cca_acct_ops {
    void (*changed)(cca_view_t *v);                   /* all locked, after a change, while hooks are on */
    void (*after_change)(cca_allocator_t *a);         /* after unlocking that change (callbacks run here) */
    void (*oom)(cca_view_t *v, cca_oom_report_t *r);  /* all locked: an out-of-memory, its figures in *r */
    void (*after_oom)(cca_allocator_t *a);            /* after unlocking it */
    void (*destroy)(cca_acct_t *acct);
} cca_acct_ops_t;
extern const cca_acct_ops_t _cca_stats_ops;           /* stats/stats.c */

#endif /* CCA_VIEW_H */

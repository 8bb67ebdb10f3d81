/* stats_internal.h - prototypes shared by the files of stats/: the buffered
 * output emitter, human units, and figures taken under the allocator lock. */
#ifndef CCA_STATS_INTERNAL_H
#define CCA_STATS_INTERNAL_H

#include "cca_view.h"                             /* the core, as stats/ may see it */

/* An OOM report copied out to a caller's struct of `size` bytes. A struct
 * that ends before the stranded figures (a program built before them) gets
 * the report re-judged without them, so that it never reads a verdict it
 * does not know. */
static inline void _cca_oom_copy_out(void *dst, size_t size, const cca_oom_report_t *r)
{
    _cca_copy_out(dst, size, r, sizeof *r);
    if (size < offsetof(cca_oom_report_t, free_cached_other) + sizeof r->free_cached_other &&
        (r->verdict == CCA_OOM_STRANDED || r->need_stranded))
        cca_oom_judge_sized(dst, size);
}

/* emit.c: text through the caller's write callback, in 4 KiB pieces. */
typedef struct cca_emit {
    cca_write_fn write;
    void *arg;
    size_t len;                                       /* bytes waiting in buf */
    bool failed;                                      /* write took fewer bytes than given */
    char buf[4096];
} cca_emit_t;

void        _cca_emit_init(cca_emit_t *e, cca_write_fn write, void *arg);
void        _cca_emit(cca_emit_t *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
bool        _cca_emit_finish(cca_emit_t *e);          /* flushes; false if any write failed */
const char *_cca_emit_bytes(size_t bytes, char out[32]); /* "512 B", "4.00 MiB" */

/* frag.c: the fragmentation figures of a view */
void   _cca_frag_of(const cca_view_t *v, cca_frag_t *out);

/* snapshot.c: a copy of every segment and block, taken under the lock. */
typedef struct cca_snap {
    cca_segment_info_t *segs;                         /* by address */
    cca_block_info_t *blocks;                         /* segment by segment, by address */
    size_t n_segs, n_blocks;
    bool with_history;                                /* asked for: the history of the same moment */
    cca_history_entry_t *hist;                        /* oldest first */
    size_t n_hist;
    uint64_t hist_dropped;
} cca_snap_t;

cca_status_t _cca_snapshot_take(cca_allocator_t *a, cca_snap_t *out, bool with_history);
void         _cca_snapshot_free(cca_snap_t *s);

/* notice.c: the process's notice queue */
void _cca_notice_watch(int device, uint64_t allocator, uint64_t id, cca_watch_kind_t which, size_t threshold,
                       size_t bytes, int rising);
void _cca_notice_oom(int device, uint64_t allocator, uint64_t seq);

/* watch.c */
void _cca_watch_changed(cca_view_t *v);
void _cca_watch_deliver(cca_allocator_t *a);
void _cca_watch_destroy(cca_acct_t *acct);

/* oom.c */
void _cca_oom_keep(cca_view_t *v, cca_oom_report_t *r);
void _cca_oom_deliver(cca_allocator_t *a);
void _cca_oom_destroy(cca_acct_t *acct);

#endif /* CCA_STATS_INTERNAL_H */

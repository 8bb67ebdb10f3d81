/* compat.c - the plain names of the accounting's sized calls as exported
 * symbols, for programs linked against a cca.h from before its static
 * inline wrappers (see allocator/compat.c): each fills or reads the first
 * version of its struct (CCA_V1_*). */
#define CCA_PLAIN_SYMBOLS_                            /* cca.h declares the plain names instead of defining them */
#include "stats_internal.h"

cca_status_t cca_get_fragmentation(cca_allocator_t *a, cca_frag_t *out) { return cca_get_fragmentation_sized(a, out, CCA_V1_FRAG); }

cca_status_t cca_snapshot_walk(cca_allocator_t *a, cca_segment_fn seg_cb, cca_block_fn block_cb, void *arg)
{
    return cca_snapshot_walk_sized(a, seg_cb, block_cb, arg, CCA_V1_SEG, CCA_V1_BLOCK);
}

cca_status_t cca_set_oom_callback(cca_allocator_t *a, cca_oom_fn fn, void *arg)
{
    return cca_set_oom_callback_sized(a, fn, arg, CCA_V1_OOM);
}

cca_status_t cca_last_oom_report(cca_allocator_t *a, cca_oom_report_t *out) { return cca_last_oom_report_sized(a, out, CCA_V1_OOM); }

size_t cca_oom_report_format(const cca_oom_report_t *r, char *buf, size_t len)
{
    return cca_oom_report_format_sized(r, CCA_V1_OOM, buf, len);
}

void cca_oom_judge(cca_oom_report_t *r) { cca_oom_judge_sized(r, CCA_V1_OOM); }

cca_status_t cca_scope_end(cca_allocator_t *a, uint64_t token, cca_scope_result_t *out)
{
    return cca_scope_end_sized(a, token, out, CCA_V1_SCOPE);
}
cca_status_t cca_thread_last_oom_report(cca_oom_report_t *out) { return cca_thread_last_oom_report_sized(out, CCA_V1_OOM); }

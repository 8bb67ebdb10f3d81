/* abi_v1.h - the exported plain symbols (cca_get_stats, ...) as a program
 * linked against a cca.h from before the static inline wrappers calls
 * them: declared here under v1_ names bound to the symbols themselves
 * (an asm label), since today's header makes the plain names inline
 * wrappers. Each fills the first version of its struct only. */
#ifndef CCA_TEST_ABI_V1_H
#define CCA_TEST_ABI_V1_H

#include <cca.h>

#define CCA_V1_SYM_(name) __asm__(#name)
void         v1_cca_config_init(cca_config_t *cfg) CCA_V1_SYM_(cca_config_init);
cca_status_t v1_cca_config_parse(cca_config_t *cfg, const char *conf, char *err, size_t err_len) CCA_V1_SYM_(cca_config_parse);
cca_status_t v1_cca_create(const cca_config_t *cfg, cca_allocator_t **out) CCA_V1_SYM_(cca_create);
cca_status_t v1_cca_get_config(cca_allocator_t *a, cca_config_t *out) CCA_V1_SYM_(cca_get_config);
cca_status_t v1_cca_get_stats(cca_allocator_t *a, cca_stats_t *out) CCA_V1_SYM_(cca_get_stats);
cca_status_t v1_cca_get_fragmentation(cca_allocator_t *a, cca_frag_t *out) CCA_V1_SYM_(cca_get_fragmentation);
cca_status_t v1_cca_snapshot_walk(cca_allocator_t *a, cca_segment_fn seg_cb, cca_block_fn block_cb, void *arg)
    CCA_V1_SYM_(cca_snapshot_walk);
cca_status_t v1_cca_set_oom_callback(cca_allocator_t *a, cca_oom_fn fn, void *arg) CCA_V1_SYM_(cca_set_oom_callback);
cca_status_t v1_cca_last_oom_report(cca_allocator_t *a, cca_oom_report_t *out) CCA_V1_SYM_(cca_last_oom_report);
cca_status_t v1_cca_thread_last_oom_report(cca_oom_report_t *out) CCA_V1_SYM_(cca_thread_last_oom_report);
size_t       v1_cca_oom_report_format(const cca_oom_report_t *r, char *buf, size_t len) CCA_V1_SYM_(cca_oom_report_format);
void         v1_cca_oom_judge(cca_oom_report_t *r) CCA_V1_SYM_(cca_oom_judge);
cca_status_t v1_cca_history_walk(cca_allocator_t *a, cca_history_fn fn, void *arg, uint64_t *dropped) CCA_V1_SYM_(cca_history_walk);
cca_status_t v1_cca_scope_end(cca_allocator_t *a, uint64_t token, cca_scope_result_t *out) CCA_V1_SYM_(cca_scope_end);
#undef CCA_V1_SYM_

#endif

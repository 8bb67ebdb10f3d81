/* abi_v1.c - calls of the exported plain symbols, from a unit that does
 * not include cca.h (whose plain names are static inline wrappers: there
 * a declaration of the symbol would name the wrapper). See abi_v1.h. */
#include "abi_v1.h"

void cca_config_init(struct cca_config *cfg);
int cca_config_parse(struct cca_config *cfg, const char *conf, char *err, size_t err_len);
int cca_create(const struct cca_config *cfg, struct cca_allocator **out);
int cca_get_config(struct cca_allocator *a, struct cca_config *out);
int cca_get_stats(struct cca_allocator *a, struct cca_stats *out);
int cca_get_fragmentation(struct cca_allocator *a, struct cca_frag *out);
int cca_snapshot_walk(struct cca_allocator *a, int (*seg_cb)(const struct cca_segment_info *, void *), int (*block_cb)(const struct cca_block_info *, void *), void *arg);
int cca_set_oom_callback(struct cca_allocator *a, void (*fn)(const struct cca_oom_report *, void *), void *arg);
int cca_last_oom_report(struct cca_allocator *a, struct cca_oom_report *out);
int cca_thread_last_oom_report(struct cca_oom_report *out);
size_t cca_oom_report_format(const struct cca_oom_report *r, char *buf, size_t len);
void cca_oom_judge(struct cca_oom_report *r);
int cca_history_walk(struct cca_allocator *a, int (*fn)(const struct cca_history_entry *, void *), void *arg, uint64_t *dropped);
int cca_scope_end(struct cca_allocator *a, uint64_t token, struct cca_scope_result *out);

void v1_cca_config_init(struct cca_config *cfg) { cca_config_init(cfg); }
int v1_cca_config_parse(struct cca_config *cfg, const char *conf, char *err, size_t err_len) { return cca_config_parse(cfg, conf, err, err_len); }
int v1_cca_create(const struct cca_config *cfg, struct cca_allocator **out) { return cca_create(cfg, out); }
int v1_cca_get_config(struct cca_allocator *a, struct cca_config *out) { return cca_get_config(a, out); }
int v1_cca_get_stats(struct cca_allocator *a, struct cca_stats *out) { return cca_get_stats(a, out); }
int v1_cca_get_fragmentation(struct cca_allocator *a, struct cca_frag *out) { return cca_get_fragmentation(a, out); }
int v1_cca_snapshot_walk(struct cca_allocator *a, int (*seg_cb)(const struct cca_segment_info *, void *), int (*block_cb)(const struct cca_block_info *, void *), void *arg) { return cca_snapshot_walk(a, seg_cb, block_cb, arg); }
int v1_cca_set_oom_callback(struct cca_allocator *a, void (*fn)(const struct cca_oom_report *, void *), void *arg) { return cca_set_oom_callback(a, fn, arg); }
int v1_cca_last_oom_report(struct cca_allocator *a, struct cca_oom_report *out) { return cca_last_oom_report(a, out); }
int v1_cca_thread_last_oom_report(struct cca_oom_report *out) { return cca_thread_last_oom_report(out); }
size_t v1_cca_oom_report_format(const struct cca_oom_report *r, char *buf, size_t len) { return cca_oom_report_format(r, buf, len); }
void v1_cca_oom_judge(struct cca_oom_report *r) { cca_oom_judge(r); }
int v1_cca_history_walk(struct cca_allocator *a, int (*fn)(const struct cca_history_entry *, void *), void *arg, uint64_t *dropped) { return cca_history_walk(a, fn, arg, dropped); }
int v1_cca_scope_end(struct cca_allocator *a, uint64_t token, struct cca_scope_result *out) { return cca_scope_end(a, token, out); }

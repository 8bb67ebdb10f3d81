/* abi_v1.h - the exported plain symbols (cca_get_stats, ...) as a program
 * linked against a cca.h from before the static inline wrappers calls
 * them, under v1_ names (tests/abi_v1.c). Each fills the first version of
 * its struct only. Not a header of cca.h's: in a unit that includes cca.h
 * the plain names are the inline wrappers, so the symbols are reached
 * through abi_v1.c, which does not include it; hence the struct tags and
 * int statuses here (cca_status_t's values, cca_notice_kind_t's). */
#ifndef CCA_TEST_ABI_V1_H
#define CCA_TEST_ABI_V1_H

#include <stddef.h>
#include <stdint.h>

struct cca_allocator;
struct cca_config;
struct cca_stats;
struct cca_frag;
struct cca_segment_info;
struct cca_block_info;
struct cca_oom_report;
struct cca_history_entry;
struct cca_scope_result;

void   v1_cca_config_init(struct cca_config *cfg);
int    v1_cca_config_parse(struct cca_config *cfg, const char *conf, char *err, size_t err_len);
int    v1_cca_create(const struct cca_config *cfg, struct cca_allocator **out);
int    v1_cca_get_config(struct cca_allocator *a, struct cca_config *out);
int    v1_cca_get_stats(struct cca_allocator *a, struct cca_stats *out);
int    v1_cca_get_fragmentation(struct cca_allocator *a, struct cca_frag *out);
int    v1_cca_snapshot_walk(struct cca_allocator *a, int (*seg_cb)(const struct cca_segment_info *, void *),
                            int (*block_cb)(const struct cca_block_info *, void *), void *arg);
int    v1_cca_set_oom_callback(struct cca_allocator *a, void (*fn)(const struct cca_oom_report *, void *), void *arg);
int    v1_cca_last_oom_report(struct cca_allocator *a, struct cca_oom_report *out);
int    v1_cca_thread_last_oom_report(struct cca_oom_report *out);
size_t v1_cca_oom_report_format(const struct cca_oom_report *r, char *buf, size_t len);
void   v1_cca_oom_judge(struct cca_oom_report *r);
int    v1_cca_history_walk(struct cca_allocator *a, int (*fn)(const struct cca_history_entry *, void *), void *arg,
                           uint64_t *dropped);
int    v1_cca_scope_end(struct cca_allocator *a, uint64_t token, struct cca_scope_result *out);

#endif

/* layout.c - every public struct's layout, expanded from the field lists
 * in cca.h, so that bindings read offsets and sizes instead of restating
 * them (cca_struct_layout). */
#include <string.h>
#include "internal.h"

#define FIELD_(S, type, name, dims, doc) \
    { #name, #type, offsetof(S, name), sizeof(((S *)0)->name), sizeof(((S *)0)->name) / sizeof(type), doc },

#define CONFIG_(type, name, dims, doc) FIELD_(cca_config_t, type, name, dims, doc)
#define STAT_(type, name, dims, doc) FIELD_(cca_stat_t, type, name, dims, doc)
#define SIZE_CLASS_(type, name, dims, doc) FIELD_(cca_size_class_t, type, name, dims, doc)
#define FRAG_(type, name, dims, doc) FIELD_(cca_frag_t, type, name, dims, doc)
#define SEG_(type, name, dims, doc) FIELD_(cca_segment_info_t, type, name, dims, doc)
#define BLOCK_(type, name, dims, doc) FIELD_(cca_block_info_t, type, name, dims, doc)
#define OOM_(type, name, dims, doc) FIELD_(cca_oom_report_t, type, name, dims, doc)
#define SCOPE_(type, name, dims, doc) FIELD_(cca_scope_result_t, type, name, dims, doc)
#define HISTORY_(type, name, dims, doc) FIELD_(cca_history_entry_t, type, name, dims, doc)
#define NOTICE_(type, name, dims, doc) FIELD_(cca_notice_t, type, name, dims, doc)
#define STATS_(kind, name, doc) STATS_TYPED_(CCA_STATS_TYPE_##kind, name, doc)
#define STATS_TYPED_(type, name, doc) FIELD_(cca_stats_t, type, name, , doc)   /* type expanded before # */

static const cca_field_layout_t config_fields[] = { CCA_CONFIG_FIELDS(CONFIG_) };
static const cca_field_layout_t stat_fields[] = { CCA_STAT_PARTS(STAT_) };
static const cca_field_layout_t stats_fields[] = { CCA_STATS_FIELDS(STATS_) };
static const cca_field_layout_t size_class_fields[] = { CCA_SIZE_CLASS_FIELDS(SIZE_CLASS_) };
static const cca_field_layout_t frag_fields[] = { CCA_FRAG_FIELDS(FRAG_) };
static const cca_field_layout_t seg_fields[] = { CCA_SEGMENT_INFO_FIELDS(SEG_) };
static const cca_field_layout_t block_fields[] = { CCA_BLOCK_INFO_FIELDS(BLOCK_) };
static const cca_field_layout_t oom_fields[] = { CCA_OOM_REPORT_FIELDS(OOM_) };
static const cca_field_layout_t scope_fields[] = { CCA_SCOPE_RESULT_FIELDS(SCOPE_) };
static const cca_field_layout_t history_fields[] = { CCA_HISTORY_ENTRY_FIELDS(HISTORY_) };
static const cca_field_layout_t notice_fields[] = { CCA_NOTICE_FIELDS(NOTICE_) };

#define STATS_KIND_(kind, name, doc) { #name, #kind, doc },
static const cca_stats_field_t stats_kinds[] = { CCA_STATS_FIELDS(STATS_KIND_) };

#define N(x) (sizeof x / sizeof x[0])
static const cca_struct_layout_t layouts[] = {
    { "cca_config_t", sizeof(cca_config_t), N(config_fields), config_fields },
    { "cca_stat_t", sizeof(cca_stat_t), N(stat_fields), stat_fields },
    { "cca_stats_t", sizeof(cca_stats_t), N(stats_fields), stats_fields },
    { "cca_size_class_t", sizeof(cca_size_class_t), N(size_class_fields), size_class_fields },
    { "cca_frag_t", sizeof(cca_frag_t), N(frag_fields), frag_fields },
    { "cca_segment_info_t", sizeof(cca_segment_info_t), N(seg_fields), seg_fields },
    { "cca_block_info_t", sizeof(cca_block_info_t), N(block_fields), block_fields },
    { "cca_oom_report_t", sizeof(cca_oom_report_t), N(oom_fields), oom_fields },
    { "cca_scope_result_t", sizeof(cca_scope_result_t), N(scope_fields), scope_fields },
    { "cca_history_entry_t", sizeof(cca_history_entry_t), N(history_fields), history_fields },
    { "cca_notice_t", sizeof(cca_notice_t), N(notice_fields), notice_fields },
};

const cca_struct_layout_t *cca_struct_layouts(size_t *count)
{
    if (count) *count = N(layouts);
    return layouts;
}

const cca_struct_layout_t *cca_struct_layout(const char *name)
{
    for (size_t i = 0; name && i < N(layouts); i++)
        if (!strcmp(layouts[i].name, name)) return &layouts[i];
    return NULL;
}

const cca_stats_field_t *cca_stats_fields(size_t *count)
{
    if (count) *count = N(stats_kinds);
    return stats_kinds;
}

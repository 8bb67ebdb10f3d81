/* layout_probe.c - fills every field of a public struct with a distinct
 * value through C's own member access (the compiler's layout), so that the
 * Python package, whose ctypes structures come from the exported layouts,
 * can read each one back by name and find the same value
 * (python/tests/test_cca.py). Field i (from 1), element j, gets
 * i * 1000 + j + 1; a char array gets the text "f<i>"; a nested struct
 * numbers its own fields k (from 1) as (base + k) * 1000 + 1, with base
 * i * 100 + j * 10 for cca_stats_t's pooled cca_stat_t and (i * 1000 + j + 1) / 10
 * for cca_frag_t's size classes. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "cca.h"

#define PROBE_API __attribute__((visibility("default")))

static void fill_stat(cca_stat_t *s, int base)
{
    int i = base;
#define STAT_(type, name, dims, doc) ++i; s->name = (type)(i * 1000 + 1);
    CCA_STAT_PARTS(STAT_)
#undef STAT_
}

static void fill_class(cca_size_class_t *c, int base)
{
    int i = base;
#define CLASS_(type, name, dims, doc) ++i; c->name = (type)(i * 1000 + 1);
    CCA_SIZE_CLASS_FIELDS(CLASS_)
#undef CLASS_
}

/* Typed setters, chosen by _Generic from the element's pointer type: the
 * value is converted as C converts it, so Python must read the same. */
static void set_double(double *p, long v, size_t n) { (void)n; *p = (double)v; }
static void set_class(cca_size_class_t *p, long v, size_t n) { (void)n; fill_class(p, (int)(v / 10)); }
static void set_char(char *p, long v, size_t n) { (void)p; (void)v; (void)n; }
static void set_bytes(void *p, long v, size_t n)       /* integers, enums, handles */
{
    if (n == 4) { int32_t x = (int32_t)v; memcpy(p, &x, 4); }
    else { int64_t x = v; memcpy(p, &x, 8); }
}
#define SETONE_(p, v) _Generic((p), double *: set_double, cca_size_class_t *: set_class, char *: set_char, \
                               default: set_bytes)((p), (v), sizeof *(p))

/* Member `name` (C type `type`, maybe an array) of *obj as field number i. */
#define SET_(obj, type, name, i)                                                                   \
    do {                                                                                          \
        type *p_ = (type *)(void *)&(obj)->name;                                                  \
        size_t n_ = sizeof((obj)->name) / sizeof(type);                                           \
        if (!strcmp(#type, "char")) snprintf((char *)p_, n_, "f%d", (i));                          \
        else for (size_t j_ = 0; j_ < n_; j_++) SETONE_(p_ + j_, (long)((i) * 1000 + j_ + 1));     \
    } while (0)

PROBE_API int cca_probe_fill(const char *name, void *out);

int cca_probe_fill(const char *name, void *out)
{
    int i = 0;
    if (!strcmp(name, "cca_stats_t")) {
        cca_stats_t *s = out;
#define FILL_CCA_POOLED_(f) for (int j = 0; j < CCA_POOL_COUNT; j++) fill_stat(&(f)[j], i * 100 + j * 10);
#define FILL_CCA_STAT_(f) fill_stat(&(f), i * 100);
#define FILL_CCA_COUNTER_(f) (f) = i * 1000 + 1;
#define FILL_CCA_GAUGE_(f) FILL_CCA_COUNTER_(f)
#define FILL_CCA_SETTING_(f) FILL_CCA_COUNTER_(f)
#define FILL_CCA_PROFILE_(f) FILL_CCA_COUNTER_(f)
#define FIELD_(kind, name, doc) ++i; FILL_##kind##_(s->name)
        CCA_STATS_FIELDS(FIELD_)
#undef FIELD_
        return i;
    }
#define STRUCT_(sname, type_t, LIST)                                  \
    if (!strcmp(name, sname)) {                                       \
        type_t *o = out;                                              \
        memset(o, 0, sizeof *o);                                      \
        LIST(ONE_)                                                    \
        return i;                                                     \
    }
#define ONE_(type, fname, dims, doc) ++i; SET_(o, type, fname, i);
    STRUCT_("cca_config_t", cca_config_t, CCA_CONFIG_FIELDS)
    STRUCT_("cca_frag_t", cca_frag_t, CCA_FRAG_FIELDS)
    STRUCT_("cca_segment_info_t", cca_segment_info_t, CCA_SEGMENT_INFO_FIELDS)
    STRUCT_("cca_block_info_t", cca_block_info_t, CCA_BLOCK_INFO_FIELDS)
    STRUCT_("cca_oom_report_t", cca_oom_report_t, CCA_OOM_REPORT_FIELDS)
    STRUCT_("cca_scope_result_t", cca_scope_result_t, CCA_SCOPE_RESULT_FIELDS)
    STRUCT_("cca_history_entry_t", cca_history_entry_t, CCA_HISTORY_ENTRY_FIELDS)
    STRUCT_("cca_notice_t", cca_notice_t, CCA_NOTICE_FIELDS)
#undef ONE_
#undef STRUCT_
    return -1;
}

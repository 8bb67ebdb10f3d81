/* summary.c - a text table in the spirit of torch.cuda.memory_summary():
 * current, peak, total allocated and freed per pool, then the fragmentation
 * figures, the occupied size classes, (once anything was tagged) the
 * allocated memory by tag, and the locks' traffic, all from one view. */
#include <stdio.h>
#include <stdlib.h>
#include "stats_internal.h"

#define RULE  "|===========================================================================|\n"
#define LINE  "|---------------------------------------------------------------------------|\n"

typedef struct row { const char *label; size_t offset; bool bytes; } row_t;

#define ROW_(label, field, bytes) { label, offsetof(cca_stats_t, field), bytes }
static const row_t rows[] = {
    ROW_("Allocated memory", allocated_bytes, true),
    ROW_("Active memory", active_bytes, true),
    ROW_("Requested memory", requested_bytes, true),
    ROW_("GPU reserved memory", reserved_bytes, true),
    ROW_("Non-releasable memory", inactive_split_bytes, true),
    ROW_("Allocations", allocation, false),
    ROW_("Active allocs", active, false),
    ROW_("GPU reserved segments", segment, false),
    ROW_("Non-releasable allocs", inactive_split, false),
};

typedef struct figures {                              /* everything, taken under one lock */
    cca_stats_t stats;
    cca_frag_t frag;
    cca_oom_report_t oom;
    size_t cap;
    int device;
    size_t tag_bytes[CCA_TAG_MAX], tag_blocks[CCA_TAG_MAX];   /* allocated, by tag (0: untagged) */
} figures_t;

static const char *summary_value(int64_t v, bool bytes, char out[32])
{
    if (bytes) return _cca_emit_bytes(v < 0 ? 0 : (size_t)v, out);
    snprintf(out, 32, "%lld", (long long)v);
    return out;
}

static void summary_stat_row(cca_emit_t *e, const char *label, const cca_stat_t *s, bool bytes)
{
    char b[4][32];
    _cca_emit(e, "| %-21s | %10s | %10s | %10s | %10s |\n", label, summary_value(s->current, bytes, b[0]),
              summary_value(s->peak, bytes, b[1]), summary_value(s->allocated, bytes, b[2]), summary_value(s->freed, bytes, b[3]));
}

static void summary_stats_table(cca_emit_t *e, const figures_t *f)
{
    _cca_emit(e, "|        Metric         | Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed  |\n");
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        const cca_stat_t *s = (const cca_stat_t *)((const char *)&f->stats + rows[i].offset);
        _cca_emit(e, LINE);
        summary_stat_row(e, rows[i].label, &s[CCA_POOL_ALL], rows[i].bytes);
        summary_stat_row(e, "      from large pool", &s[CCA_POOL_LARGE], rows[i].bytes);
        summary_stat_row(e, "      from small pool", &s[CCA_POOL_SMALL], rows[i].bytes);
    }
}

static void summary_header(cca_emit_t *e, const figures_t *f)
{
    char t[80], b[32];
    _cca_emit(e, RULE);
    snprintf(t, sizeof t, "cca memory summary, device %d, cap %s", f->device, f->cap ? _cca_emit_bytes(f->cap, b) : "none");
    _cca_emit(e, "| %-73s |\n", t);
    _cca_emit(e, LINE);
    snprintf(t, sizeof t, "OOMs: %lld    cudaMalloc retries: %lld    cudaMalloc: %lld    cudaFree: %lld",
             (long long)f->stats.num_ooms, (long long)f->stats.num_alloc_retries,
             (long long)f->stats.num_device_alloc, (long long)f->stats.num_device_free);
    _cca_emit(e, "| %-73s |\n", t);
    if (f->oom.verdict != CCA_OOM_NONE) {
        snprintf(t, sizeof t, "last OOM: %s, %s requested", cca_oom_verdict_string(f->oom.verdict),
                 _cca_emit_bytes(f->oom.requested, b));
        _cca_emit(e, "| %-73s |\n", t);
    }
    _cca_emit(e, RULE);
}

static void summary_frag_line(cca_emit_t *e, const char *k1, const char *v1, const char *k2, const char *v2)
{
    _cca_emit(e, "| %-21s | %-12s | %-21s | %-10s |\n", k1, v1, k2, v2);
}

static void summary_frag_table(cca_emit_t *e, const cca_frag_t *g)
{
    char b[4][32];
    _cca_emit(e, LINE);
    summary_frag_line(e, "Free cached memory", _cca_emit_bytes(g->free_cached, b[0]), "Largest free block", _cca_emit_bytes(g->largest_free, b[1]));
    snprintf(b[2], 32, "%.2f%%", 100.0 * g->external_fragmentation);
    snprintf(b[3], 32, "%.2f%%", 100.0 * g->utilization);
    summary_frag_line(e, "Ext. fragmentation", b[2], "Utilization", b[3]);
    summary_frag_line(e, "Internal waste", _cca_emit_bytes(g->internal_waste, b[0]), "Inactive split", _cca_emit_bytes(g->inactive_split, b[1]));
}

static const char *summary_pow2(int k, char out[16])
{
    static const char *units[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
    snprintf(out, 16, "%zu %s", (size_t)1 << (k % 10), units[k / 10]);
    return out;
}

static void summary_class_table(cca_emit_t *e, const cca_frag_t *g)
{
    _cca_emit(e, LINE);
    _cca_emit(e, "| %-19s | %-15s | %-15s | %-15s |\n", "Block size class", "Free", "Allocated", "Pending free");
    for (int k = 0; k < CCA_SIZE_CLASSES; k++) {
        const cca_size_class_t *c = &g->classes[k];
        if (!c->free_blocks && !c->allocated_blocks && !c->pending_blocks) continue;
        char lo[16], hi[16], label[40], b[3][32];
        snprintf(label, sizeof label, "[%s, %s)", summary_pow2(k, lo), k + 1 < 64 ? summary_pow2(k + 1, hi) : "16 EiB");
        _cca_emit(e, "| %-19s | %4zu %10s | %4zu %10s | %4zu %10s |\n", label,
                  c->free_blocks, _cca_emit_bytes(c->free_bytes, b[0]), c->allocated_blocks,
                  _cca_emit_bytes(c->allocated_bytes, b[1]), c->pending_blocks, _cca_emit_bytes(c->pending_bytes, b[2]));
    }
    _cca_emit(e, RULE);
}

static int summary_tag_block(const cca_segment_info_t *s, const cca_block_info_t *b, bool counts_split, void *arg)
{
    (void)s, (void)counts_split;
    figures_t *f = arg;
    if (b->state != CCA_STATE_ACTIVE_ALLOCATED) return 0;
    uint32_t t = b->tag < CCA_TAG_MAX ? b->tag : 0;
    f->tag_bytes[t] += b->size;
    f->tag_blocks[t]++;
    return 0;
}

static cca_status_t summary_view(cca_view_t *v, void *arg)
{
    figures_t *f = arg;
    f->stats = v->stats;
    _cca_frag_of(v, &f->frag);
    f->oom = v->acct->last_oom ? *v->acct->last_oom : (cca_oom_report_t){ .verdict = CCA_OOM_NONE };
    f->cap = v->cap == SIZE_MAX ? 0 : v->cap;
    f->device = v->device;
    memset(f->tag_bytes, 0, sizeof f->tag_bytes);
    memset(f->tag_blocks, 0, sizeof f->tag_blocks);
    _cca_view_walk(v, &(cca_view_walk_t){ NULL, summary_tag_block, f });
    return CCA_OK;
}

/* Allocated memory by tag, most first; only once anything was ever tagged. */
static void summary_tag_table(cca_emit_t *e, const figures_t *f)
{
    if (!cca_tag_name(1)) return;
    _cca_emit(e, "| %-33s | %-17s | %-17s |\n", "Allocated by tag", "Bytes", "Blocks");
    bool done[CCA_TAG_MAX] = { false };
    for (;;) {
        uint32_t best = CCA_TAG_MAX;
        for (uint32_t t = 0; t < CCA_TAG_MAX; t++)
            if (!done[t] && f->tag_blocks[t] && (best == CCA_TAG_MAX || f->tag_bytes[t] > f->tag_bytes[best])) best = t;
        if (best == CCA_TAG_MAX) break;
        done[best] = true;
        const char *name = cca_tag_name(best);
        char b[32];
        _cca_emit(e, "| %-33.33s | %17s | %17zu |\n", name ? name : "(untagged)", _cca_emit_bytes(f->tag_bytes[best], b),
                  f->tag_blocks[best]);
    }
    _cca_emit(e, RULE);
}

static const char *summary_ns(int64_t ns, char out[32])
{
    if (ns < 10000) snprintf(out, 32, "%lld ns", (long long)ns);
    else if (ns < 10000000) snprintf(out, 32, "%.1f us", (double)ns / 1e3);
    else snprintf(out, 32, "%.1f ms", (double)ns / 1e6);
    return out;
}

static void summary_lock_row(cca_emit_t *e, const char *label, int64_t acq, int64_t cont, int64_t total, int64_t max)
{
    char b[2][32];
    _cca_emit(e, "| %-13s | %12lld | %12lld | %12s | %12s |\n", label, (long long)acq, (long long)cont,
              summary_ns(total, b[0]), summary_ns(max, b[1]));
}

/* The locks (cca's own, not torch's): acquisitions, those that waited,
 * and their waits, per class; the all-locked entries. */
static void summary_lock_table(cca_emit_t *e, const cca_stats_t *s)
{
    _cca_emit(e, "| %-13s | %-12s | %-12s | %-12s | %-12s |\n", "Lock", "Acquisitions", "Waited", "Wait total",
              "Longest wait");
    _cca_emit(e, LINE);
#define SUMMARY_LOCK_(label, cls) \
    summary_lock_row(e, label, s->lock_##cls##_acquisitions, s->lock_##cls##_contended, s->lock_##cls##_wait_ns_total, \
                     s->lock_##cls##_wait_ns_max)
    SUMMARY_LOCK_("allocator", allocator);
    SUMMARY_LOCK_("streams", streams);
    SUMMARY_LOCK_("segment list", segments);
    SUMMARY_LOCK_("headroom", headroom);
#undef SUMMARY_LOCK_
    char t[80];
    snprintf(t, sizeof t, "all-locked path entered %lld times", (long long)s->num_all_locked);
    _cca_emit(e, "| %-73s |\n", t);
    _cca_emit(e, RULE);
}

cca_status_t cca_memory_summary(cca_allocator_t *a, cca_write_fn write, void *arg)
{
    if (!a || !write)
        return _cca_errors_fail(CCA_ERROR_INVALID_ARGUMENT, "cca_memory_summary: %s is NULL", a ? "write" : "allocator");
    figures_t *f = malloc(sizeof *f);
    cca_emit_t *e = malloc(sizeof *e);
    if (!f || !e) {
        free(f);
        free(e);
        return _cca_errors_fail(CCA_ERROR_OUT_OF_MEMORY, "cca_memory_summary: out of host memory");
    }
    _cca_view(a, summary_view, f);
    _cca_emit_init(e, write, arg);
    summary_header(e, f);
    summary_stats_table(e, f);
    summary_frag_table(e, &f->frag);
    summary_class_table(e, &f->frag);
    summary_tag_table(e, f);
    summary_lock_table(e, &f->stats);
    bool ok = _cca_emit_finish(e);
    free(e);
    free(f);
    return ok ? CCA_OK : _cca_errors_fail(CCA_ERROR_INVALID_ARGUMENT, "cca_memory_summary: the write callback failed");
}

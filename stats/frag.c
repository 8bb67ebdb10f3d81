/* frag.c - fragmentation figures from one walk of every segment and block
 * of a consistent view: free cached bytes, largest free block, the
 * derived ratios, and occupancy per power-of-two size class. Handles held
 * unmapped (expandable segments) count in reserved and free_cached as in
 * reserved_bytes. */
#include <string.h>
#include "stats_internal.h"

static int frag_size_class(size_t size)
{
    return size ? 63 - __builtin_clzll((unsigned long long)size) : 0;
}

static int frag_count_segment(const cca_segment_info_t *s, void *arg)
{
    cca_frag_t *f = arg;
    f->segments++;
    f->reserved += s->total_size;
    return 0;
}

static int frag_count_block(const cca_segment_info_t *s, const cca_block_info_t *b, bool counts_split, void *arg)
{
    (void)s;
    cca_frag_t *f = arg;
    cca_size_class_t *c = &f->classes[frag_size_class(b->size)];
    switch (b->state) {
    case CCA_STATE_INACTIVE:
        c->free_blocks++;
        c->free_bytes += b->size;
        f->free_cached += b->size;
        f->free_blocks++;
        if (b->size > f->largest_free) f->largest_free = b->size;
        if (counts_split) f->inactive_split += b->size;
        break;
    case CCA_STATE_ACTIVE_ALLOCATED:
        c->allocated_blocks++;
        c->allocated_bytes += b->size;
        f->allocated += b->size;
        f->requested += b->requested_size;
        break;
    default:
        c->pending_blocks++;
        c->pending_bytes += b->size;
        break;
    }
    return 0;
}

void _cca_frag_of(const cca_view_t *v, cca_frag_t *f)
{
    memset(f, 0, sizeof *f);
    _cca_view_walk(v, &(cca_view_walk_t){ frag_count_segment, frag_count_block, f });
    f->unmapped = (size_t)v->stats.unmapped_bytes.current;   /* reserved_bytes counts them; no segment holds them */
    f->reserved += f->unmapped;
    f->free_cached += f->unmapped;
    f->active = f->reserved - f->free_cached;
    f->internal_waste = f->allocated - f->requested;
    size_t piece = f->largest_free > f->unmapped ? f->largest_free : f->unmapped;   /* handles map as one growth */
    f->external_fragmentation = f->free_cached ? 1.0 - (double)piece / (double)f->free_cached : 0.0;
    f->utilization = f->reserved ? (double)f->allocated / (double)f->reserved : 0.0;
}

static cca_status_t frag_view(cca_view_t *v, void *f)
{
    _cca_frag_of(v, f);
    return CCA_OK;
}

cca_status_t cca_get_fragmentation_sized(cca_allocator_t *a, cca_frag_t *out, size_t out_size)
{
    if (!a || !out)
        return _cca_errors_fail(CCA_ERROR_INVALID_ARGUMENT, "cca_get_fragmentation: %s is NULL", a ? "out" : "allocator");
    if (out_size < CCA_V1_FRAG)
        return _cca_errors_fail(CCA_ERROR_INVALID_ARGUMENT, "cca_get_fragmentation: %zu bytes is no cca_frag_t", out_size);
    cca_frag_t f;
    _cca_view(a, frag_view, &f);
    _cca_copy_out(out, out_size, &f, sizeof f);
    return CCA_OK;
}

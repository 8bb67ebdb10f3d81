/* stats.c - optional accounting attached to an allocator: the OOM report's
 * figures and the watch hooks. (Filled in by the accounting issue.) */
#include <stdlib.h>
#include "internal.h"

/* Free cached bytes and the largest free block, as the request found them. */
void _cca_capture_cache_figures(cca_allocator_t *a, cca_oom_ctx_t *ctx)
{
    size_t free_bytes = 0, largest = 0;
    for (cca_segment_t *s = a->segments; s; s = s->next)
        for (cca_block_t *b = s->first; b; b = b->next)
            if (b->state == CCA_BLOCK_FREE) {
                free_bytes += b->size;
                if (b->size > largest) largest = b->size;
            }
    ctx->free_cached_before = free_bytes;
    ctx->largest_free_before = largest;
    ctx->reserved_before = (size_t)a->stats.reserved_bytes[CCA_POOL_ALL].current;
    ctx->allocated_before = (size_t)a->stats.allocated_bytes[CCA_POOL_ALL].current;
    ctx->captured = true;
}

void _cca_oom_report(cca_allocator_t *a, const cca_oom_ctx_t *ctx) { (void)a; (void)ctx; }
void _cca_hooks_locked(cca_allocator_t *a) { (void)a; }
void _cca_hooks_after_change(cca_allocator_t *a) { (void)a; }
void _cca_stats_destroy(cca_allocator_t *a) { (void)a; }

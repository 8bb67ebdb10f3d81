/* stats.c - the accounting's entry points from the core: the cache figures
 * an OOM report needs, captured before release-and-retry, and the hooks run
 * while the allocator's hooks flag is set. */
#include "stats_internal.h"

/* Free cached bytes (reserved - active: every byte not allocated or pending
 * is free) and the largest free block (the maximum of each free tree):
 * O(streams) instead of a walk of every block. */
void _cca_capture_cache_figures(cca_allocator_t *a, cca_oom_ctx_t *ctx)
{
    const cca_stats_t *s = &a->stats;
    ctx->reserved_before = (size_t)s->reserved_bytes[CCA_POOL_ALL].current;
    ctx->allocated_before = (size_t)s->allocated_bytes[CCA_POOL_ALL].current;
    ctx->free_cached_before = ctx->reserved_before - (size_t)s->active_bytes[CCA_POOL_ALL].current;
    ctx->largest_free_before = _cca_largest_free_locked(a);
    ctx->captured = true;
}

void _cca_hooks_locked(cca_allocator_t *a)
{
    if (a->watch) _cca_watch_locked(a);
}

void _cca_hooks_after_change(cca_allocator_t *a)
{
    _cca_watch_deliver(a);                            /* crossings first: they happened before the failure */
    _cca_oom_deliver(a);
}

void _cca_stats_destroy(cca_allocator_t *a)
{
    _cca_watch_destroy(a);
    _cca_oom_destroy(a);
}

/* stats.c - the accounting's entry points from the core: the cache figures
 * an OOM report needs, captured before release-and-retry, and the hooks run
 * while the allocator's hooks flag is set. */
#include "stats_internal.h"

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

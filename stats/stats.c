/* stats.c - the accounting layer's answers to the core (the table the
 * core calls through, a->acct.ops; see allocator/view.c): watches and
 * scopes see every change while they exist, out-of-memory reports are
 * judged and kept, and callbacks run after the core unlocks. */
#include "stats_internal.h"

static void stats_changed(cca_view_t *v)
{
    if (v->acct->watch) _cca_watch_changed(v);
}

static void stats_after_change(cca_allocator_t *a)
{
    _cca_watch_deliver(a);                            /* crossings first: they happened before the failure */
    _cca_oom_deliver(a);
}

static void stats_destroy(cca_acct_t *acct)
{
    _cca_watch_destroy(acct);
    _cca_oom_destroy(acct);
}

const cca_acct_ops_t _cca_stats_ops = {
    .changed = stats_changed,
    .after_change = stats_after_change,
    .oom = _cca_oom_keep,
    .after_oom = _cca_oom_deliver,
    .destroy = stats_destroy,
};

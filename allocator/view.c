/* view.c - where the core meets the accounting layer (stats/).
 *
 * stats/ reads through _cca_view alone: its function runs on one
 * consistent moment - the all-locked path: every stream's figures summed
 * into the public view, parked blocks freed (blocks whose events completed
 * since the last allocation still show as pending, as in PyTorch) - with
 * the public figures copied out exactly, and it may change only the
 * accounting's own state (v->acct) and, through _cca_view_hooks, whether
 * every change goes all locked to be told to it. The core, in turn, tells
 * stats/ what happened only through a->acct.ops. */
#include "internal.h"

static void view_of(cca_allocator_t *a, cca_view_t *v)
{
    v->a = a;
    v->acct = &a->acct;
    v->mut_ = a;
    _cca_counters_view(a, &v->stats);
}

cca_status_t _cca_view(cca_allocator_t *a, cca_view_fn fn, void *arg)
{
    cca_view_t v;
    _cca_lock_all(a);
    view_of(a, &v);
    cca_status_t s = fn(&v, arg);
    _cca_unlock_all(a, NULL);
    return s;
}

void _cca_view_hooks(cca_view_t *v, bool on)
{
    if (on) atomic_fetch_or_explicit(&v->mut_->hooks, CCA_HOOK_WATCH, memory_order_relaxed);
    else atomic_fetch_and_explicit(&v->mut_->hooks, ~CCA_HOOK_WATCH, memory_order_relaxed);
}

/* The core's side (all locked): a change the accounting asked to see. */
void _cca_acct_changed(cca_allocator_t *a)
{
    cca_view_t v;
    view_of(a, &v);
    a->acct.ops->changed(&v);
}

/* The core's side (all locked): an out-of-memory's figures. */
void _cca_acct_oom(cca_allocator_t *a, cca_oom_report_t *r)
{
    cca_view_t v;
    view_of(a, &v);
    a->acct.ops->oom(&v, r);
}

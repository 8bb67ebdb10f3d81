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
    v->device = a->cfg.device;
    v->id = a->id;
    v->cfg = &a->cfg;
    v->cap = a->cap;
    v->change.addr = a->change.addr;
    v->change.size = a->change.size;
    v->change.kind = a->change.kind;
    v->acct = &a->acct;
    v->mut_ = a;
    _cca_counters_view(a, &v->stats);
}

cca_status_t _cca_view(cca_allocator_t *a, cca_view_fn fn, void *arg)
{
    cca_view_t v;
    _cca_alloc_lock_all(a);
    view_of(a, &v);
    cca_status_t s = fn(&v, arg);
    _cca_alloc_unlock_all(a, NULL);
    return s;
}

void _cca_view_hooks(cca_view_t *v, bool on)
{
    if (on) atomic_fetch_or_explicit(&v->mut_->hooks, CCA_HOOK_WATCH, memory_order_relaxed);
    else atomic_fetch_and_explicit(&v->mut_->hooks, ~CCA_HOOK_WATCH, memory_order_relaxed);
}

/* The core's side (all locked): a change the accounting asked to see. */
void _cca_view_changed(cca_allocator_t *a)
{
    cca_view_t v;
    view_of(a, &v);
    a->acct.ops->changed(&v);
}

/* The core's side (all locked): an out-of-memory's figures. */
void _cca_view_oom(cca_allocator_t *a, cca_oom_report_t *r)
{
    cca_view_t v;
    view_of(a, &v);
    a->acct.ops->oom(&v, r);
}

static cca_snapshot_state_t view_state_of(const cca_block_t *b)
{
    if (b->state == CCA_BLOCK_ALLOCATED) return CCA_STATE_ACTIVE_ALLOCATED;
    if (b->state == CCA_BLOCK_PENDING) return CCA_STATE_ACTIVE_PENDING_FREE;
    return CCA_STATE_INACTIVE;
}

/* A block as the snapshot shows it: a free block's requested size is the
 * last request it served (torch's stale value), its tag and context none
 * (a parked block is freed). */
static void view_block_info(const cca_segment_info_t *si, const cca_block_t *b, cca_block_info_t *bi)
{
    cca_snapshot_state_t state = view_state_of(b);
    memset(bi, 0, sizeof *bi);                        /* padding too: callers compare the structs */
    bi->address = b->addr;
    bi->size = b->size;
    bi->requested_size = b->state == CCA_BLOCK_FREE ? b->last_requested : b->requested;
    bi->state = state;
    bi->stream = si->stream;
    bi->pool = si->pool;
    bi->segment_address = si->address;
    bi->tag = state == CCA_STATE_INACTIVE ? 0 : b->tag;
    bi->context = state == CCA_STATE_INACTIVE ? 0 : b->context;
}

/* A segment's identity; its sums are added block by block (the walk). */
static void view_segment_info(const cca_allocator_t *a, const cca_segment_t *s, cca_segment_info_t *si)
{
    memset(si, 0, sizeof *si);
    si->device = a->cfg.device;
    si->pool = s->pool;
    si->address = s->addr;
    si->total_size = s->size;
    si->stream = s->stream->handle;
    si->is_expandable = s->expandable;
}

static void view_segment_add(cca_segment_info_t *si, const cca_block_t *b)
{
    si->n_blocks++;
    if (b->state == CCA_BLOCK_FREE) return;
    si->active_size += b->size;
    if (b->state == CCA_BLOCK_ALLOCATED) si->allocated_size += b->size;
    si->requested_size += b->requested;
}

/* One pass over each segment's blocks: each block handed over, then its
 * segment with the sums complete. */
void _cca_view_walk(const cca_view_t *v, const cca_view_walk_t *w)
{
    for (const cca_segment_t *s = v->a->segments; s; s = s->next) {
        cca_segment_info_t si;
        view_segment_info(v->a, s, &si);
        for (const cca_block_t *b = s->first; b; b = b->next) {
            if (w->block) {
                cca_block_info_t bi;
                view_block_info(&si, b, &bi);
                if (w->block(&si, &bi, b->state == CCA_BLOCK_FREE && _cca_block_counts_split(b), w->arg)) return;
            }
            view_segment_add(&si, b);
        }
        if (w->segment && w->segment(&si, w->arg)) return;
    }
}

bool _cca_view_history(const cca_view_t *v, cca_history_entry_t **out, size_t *n, uint64_t *dropped)
{
    return _cca_history_copy(v->a, out, n, dropped);
}

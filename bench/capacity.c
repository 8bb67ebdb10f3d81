/* capacity.c - see capacity.h. */
#include "capacity.h"
#include "replay.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

typedef struct search {
    const trace_t *t;
    const bench_alloc_ops_t *ops;
    const char *conf;
    capacity_result_t *r;
} search_t;

/* 1 when the trace replays on ratio x peak live bytes, 0 when it OOMs,
 * -1 on a hard error. */
static int fits(search_t *s, double ratio)
{
    replay_opts_t o = {.stop_at_oom = 1};
    o.capacity = (size_t)ceil(ratio * (double)s->t->peak_live_bytes);
    if (o.capacity == 0)
        o.capacity = 1;
    replay_result_t rr = replay(s->t, s->ops, s->conf, &o);
    s->r->replays++;
    if (!rr.ok) {
        s->r->ok = 0;
        snprintf(s->r->error, sizeof s->r->error, "%s", rr.error);
        return -1;
    }
    return rr.ooms == 0;
}

/* Narrows (lo, hi], where hi fits and lo does not, to the precision. */
static int bisect(search_t *s, double lo, double hi, double precision)
{
    while (hi / lo > 1.0 + precision) {
        double mid = sqrt(lo * hi);
        int f = fits(s, mid);
        if (f < 0)
            return -1;
        if (f)
            hi = mid;
        else
            lo = mid;
    }
    s->r->min_ratio = hi;
    return 0;
}

static int search(search_t *s, double bound, double precision)
{
    int f105 = fits(s, 1.05), f110, fb;
    if (f105 < 0)
        return -1;
    s->r->oom_at_105 = !f105;
    if (f105) {
        int f100 = fits(s, 1.0);
        if (f100 < 0)
            return -1;
        if (f100) {
            s->r->min_ratio = 1.0;
            return 0;
        }
        return bisect(s, 1.0, 1.05, precision);
    }
    if ((f110 = fits(s, 1.10)) < 0)
        return -1;
    s->r->oom_at_110 = !f110;
    if (f110)
        return bisect(s, 1.05, 1.10, precision);
    if ((fb = fits(s, bound)) < 0)
        return -1;
    if (!fb) {
        s->r->above_bound = 1;
        s->r->min_ratio = bound;
        return 0;
    }
    return bisect(s, 1.10, bound, precision);
}

capacity_result_t capacity_search(const trace_t *t, const bench_alloc_ops_t *ops,
                                  const char *conf, double bound, double precision)
{
    capacity_result_t r;
    search_t s = {.t = t, .ops = ops, .conf = conf, .r = &r};
    memset(&r, 0, sizeof r);
    if (!simctl_is_sim()) {
        snprintf(r.error, sizeof r.error, "needs the simulated device");
        return r;
    }
    if (t->peak_live_bytes == 0) {
        snprintf(r.error, sizeof r.error, "trace allocates nothing");
        return r;
    }
    r.ok = 1;
    search(&s, bound, precision);
    return r;
}

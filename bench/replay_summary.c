/* replay_summary.c - see replay_summary.h. */
#include "replay_summary.h"
#include "report_table.h"
#include "results.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define GIB (1024.0 * 1024 * 1024)

static const char *mincap_text(char *b, size_t len, const bench_row_t *r)
{
    double v = results_extra_get(r, "min_capacity_over_live");
    if (isnan(v))
        return "n/a";
    if (results_extra_get(r, "min_capacity_above_bound") > 0)
        snprintf(b, len, ">%.0fx", v);
    else
        snprintf(b, len, "%.3f", v);
    return b;
}

static const char *count_text(char *b, size_t len, size_t v, int valid)
{
    if (!valid)
        return "n/a";
    snprintf(b, len, "%zu", v);
    return b;
}

/* "OOM" or "ok" on a device of `key`'s size (1.05x or 1.10x peak live). */
static const char *oom_flag(const bench_row_t *r, const char *key)
{
    double v = results_extra_get(r, key);
    if (r->modelled || isnan(v))
        return "n/a";
    return v > 0 ? "OOM" : "ok";
}

static void trace_row(FILE *f, const bench_row_t *r, const char *scen, const char *trace, const bench_opts_t *o)
{
    char b[10][24], range[48];
    fprintf(f, "  %-22s", r->alloc);
    if (r->fig.failed) {
        fprintf(f, " FAILED: %s\n", r->fig.msg);
        return;
    }
    snprintf(range, sizeof range, "%s..%s", fmt_num(b[0], 24, r->fig.min),
             fmt_num(b[1], 24, r->fig.max));
    fprintf(f, " %9s %19s %8s %9s %8s %9s %8s %5s %9s", fmt_num(b[2], 24, r->fig.median), range,
            fmt_num(b[3], 24, results_extra_get(r, "reserved_over_live")),
            fmt_num(b[4], 24, r->fig.have_calls ? results_extra_get(r, "cudaMalloc_per_1k_events") : NAN),
            fmt_num(b[5], 24, r->fig.have_calls ? results_extra_get(r, "cudaFree_per_1k_events") : NAN),
            fmt_num(b[8], 24, r->fig.have_calls ? results_extra_get(r, "cuMemCreate_per_1k_events") : NAN),
            fmt_num(b[9], 24, r->fig.have_calls ? results_extra_get(r, "cuMemUnmap_per_1k_events") : NAN),
            count_text(b[6], 24, (size_t)results_extra_get(r, "ooms"), !r->modelled),
            r->modelled ? "-" : mincap_text(b[7], 24, r));
    fprintf(f, " %6s %6s", oom_flag(r, "oom_at_1.05x"), oom_flag(r, "oom_at_1.10x"));
    for (size_t i = 0; i < o->n_allocs; i++) {
        if (!o->allocs[i].is_cca || o->allocs[i].modelled)
            continue;
        const bench_row_t *c = results_find(scen, trace, o->allocs[i].label);
        if (c == r)
            fprintf(f, " %14s", "-");
        else
            fprintf(f, " %13sx", fmt_num(b[0], 24, time_ratio(c, r)));
    }
    fprintf(f, "%s\n", results_extra_get(r, "check_failed") > 0 ? "  CHECK FAILED" : "");
}

static void trace_header(FILE *f, const bench_opts_t *o)
{
    fprintf(f, "  %-22s %9s %19s %8s %9s %8s %9s %8s %5s %9s %6s %6s", "allocator", "ns/event", "min..max",
            "res/live", "malloc/1k", "free/1k", "create/1k", "unmap/1k", "OOMs", "mincap/l", "@1.05x", "@1.10x");
    for (size_t i = 0; i < o->n_allocs; i++)
        if (o->allocs[i].is_cca && !o->allocs[i].modelled)
            fprintf(f, " %12.12s/x", o->allocs[i].label);
    fprintf(f, "\n");
}

void replay_table(FILE *f, const trace_t *t, const bench_opts_t *o, const char *scen)
{
    fprintf(f, "\nreplay %s: %zu events, peak live %.3f GiB, %zu stream(s), "
            "%zu 'allocate failure' rows skipped, %zu unpaired frees skipped\n",
            t->name, t->n_events, (double)t->peak_live_bytes / GIB, t->n_streams,
            t->n_failures, t->n_unpaired_frees);
    trace_header(f, o);
    for (size_t i = 0; i < o->n_allocs; i++) {
        const bench_row_t *r = results_find(scen, t->name, o->allocs[i].label);
        if (r)
            trace_row(f, r, scen, t->name, o);
    }
}

typedef struct acc {
    size_t traces, failed, with_ooms, oom105, oom110, above, checks, n_ratio, n_cap;
    double events, ns, mallocs, frees, creates, unmaps, log_ratio, worst, log_cap;
    const char *worst_trace;
} acc_t;

static void add_trace(acc_t *a, const bench_row_t *r)
{
    double ev = results_extra_get(r, "events"), ratio = results_extra_get(r, "reserved_over_live");
    double cap = results_extra_get(r, "min_capacity_over_live");
    a->traces++;
    if (r->fig.failed) {
        a->failed++;
        return;
    }
    a->ns += r->fig.median * (isnan(ev) ? 0 : ev);
    if (isnan(ev))
        return;
    a->events += ev;
    a->mallocs += results_extra_get(r, "cudaMalloc_per_1k_events") * ev / 1000.0;
    a->frees += results_extra_get(r, "cudaFree_per_1k_events") * ev / 1000.0;
    a->creates += results_extra_get(r, "cuMemCreate_per_1k_events") * ev / 1000.0;
    a->unmaps += results_extra_get(r, "cuMemUnmap_per_1k_events") * ev / 1000.0;
    a->with_ooms += results_extra_get(r, "ooms") > 0;
    a->checks += results_extra_get(r, "check_failed") > 0;
    if (ratio > 0) {
        a->log_ratio += log(ratio);
        a->n_ratio++;
        if (ratio > a->worst) {
            a->worst = ratio;
            a->worst_trace = r->case_name;
        }
    }
    if (!isnan(cap)) {
        a->log_cap += log(cap);
        a->n_cap++;
        a->oom105 += results_extra_get(r, "oom_at_1.05x") > 0;
        a->oom110 += results_extra_get(r, "oom_at_1.10x") > 0;
        a->above += results_extra_get(r, "min_capacity_above_bound") > 0;
    }
}

static void accumulate(acc_t *a, const char *scen, const char *label, const char *const *names, size_t n)
{
    memset(a, 0, sizeof *a);
    a->worst_trace = "-";
    for (size_t k = 0; k < n; k++) {
        const bench_row_t *r = names[k] ? results_find(scen, names[k], label) : NULL;
        if (r)
            add_trace(a, r);
    }
}

static void record(const acc_t *a, const char *scen, const bench_alloc_t *al, int have_calls)
{
    char name[64];
    snprintf(name, sizeof name, "%s-summary", scen);
    bench_row_t *r = results_add(name, "all-traces", al->label, "ns/event");
    double nan = NAN;
    r->is_cca = al->is_cca;
    r->modelled = al->modelled;
    r->fig.median = r->fig.min = r->fig.max = a->events > 0 ? a->ns / a->events : nan;
    r->fig.reps = 1;
    results_extra(r, "traces", (double)a->traces);
    results_extra(r, "traces_failed", (double)a->failed);
    results_extra(r, "events", a->events);
    if (al->modelled)
        return;
    results_extra(r, "geomean_reserved_over_live", a->n_ratio ? exp(a->log_ratio / (double)a->n_ratio) : nan);
    results_extra(r, "max_reserved_over_live", a->n_ratio ? a->worst : nan);
    results_extra(r, "cudaMalloc_per_1k_events", have_calls && a->events ? a->mallocs * 1000 / a->events : nan);
    results_extra(r, "cudaFree_per_1k_events", have_calls && a->events ? a->frees * 1000 / a->events : nan);
    results_extra(r, "cuMemCreate_per_1k_events", have_calls && a->events ? a->creates * 1000 / a->events : nan);
    results_extra(r, "cuMemUnmap_per_1k_events", have_calls && a->events ? a->unmaps * 1000 / a->events : nan);
    results_extra(r, "traces_with_ooms_at_4x", (double)a->with_ooms);
    results_extra(r, "traces_oom_at_1.05x", a->n_cap ? (double)a->oom105 : nan);
    results_extra(r, "traces_oom_at_1.10x", a->n_cap ? (double)a->oom110 : nan);
    results_extra(r, "traces_above_4x", a->n_cap ? (double)a->above : nan);
    results_extra(r, "geomean_min_capacity_over_live", a->n_cap ? exp(a->log_cap / (double)a->n_cap) : nan);
    results_extra(r, "check_failures", (double)a->checks);
}

static void print_acc(FILE *f, const acc_t *a, const bench_alloc_t *al, int have_calls)
{
    char b[10][24];
    double gm = a->n_ratio ? exp(a->log_ratio / (double)a->n_ratio) : NAN;
    double cap = a->n_cap ? exp(a->log_cap / (double)a->n_cap) : NAN;
    double per = a->events > 0 && have_calls ? 1000 / a->events : NAN;
    fprintf(f, "  %-22s %9s", al->label, fmt_num(b[0], 24, a->events > 0 ? a->ns / a->events : NAN));
    if (al->modelled) {
        fprintf(f, "   (timing only)\n");
        return;
    }
    fprintf(f, " %8s %8s %-28.28s %9s %8s %9s %8s %8s %8s %5s %7s %4zu %6zu%s\n", fmt_num(b[1], 24, gm),
            fmt_num(b[2], 24, a->n_ratio ? a->worst : NAN), a->worst_trace,
            fmt_num(b[3], 24, a->mallocs * per), fmt_num(b[4], 24, a->frees * per),
            fmt_num(b[8], 24, a->creates * per), fmt_num(b[9], 24, a->unmaps * per),
            count_text(b[5], 24, a->oom105, a->n_cap > 0),
            count_text(b[6], 24, a->oom110, a->n_cap > 0),
            count_text(b[7], 24, a->above, a->n_cap > 0), fmt_num(b[0], 24, cap), a->with_ooms,
            a->failed, a->checks ? "  CHECK FAILURES" : "");
}

void replay_summary(FILE *f, const char *const *names, size_t n, const bench_opts_t *o, const char *scen)
{
    int have_calls = simctl_is_sim();
    fprintf(f, "\n%s summary over %zu traces (res/live: peak reserved / peak live bytes, "
            "geometric mean and worst; calls per 1,000 events over all traces (create, unmap: cuMemCreate, cuMemUnmap);\n"
            "  OOM@: traces that OOM on a device of 1.05x / 1.10x peak live; >4x: not even at 4x;"
            " mincap: geometric mean of the smallest device / peak live;\n"
            "  OOM4x: traces with OOMs on the large device; fail: traces that could not run)\n", scen, n);
    fprintf(f, "  %-22s %9s %8s %8s %-28s %9s %8s %9s %8s %8s %8s %5s %7s %4s %6s\n", "allocator",
            "ns/event", "gmean", "worst", "(worst trace)", "malloc/1k", "free/1k", "create/1k", "unmap/1k", "OOM@1.05",
            "OOM@1.10", ">4x", "mincap", "OOM4x", "fail");
    for (size_t i = 0; i < o->n_allocs; i++) {
        acc_t a;
        accumulate(&a, scen, o->allocs[i].label, names, n);
        record(&a, scen, &o->allocs[i], have_calls);
        print_acc(f, &a, &o->allocs[i], have_calls);
    }
}

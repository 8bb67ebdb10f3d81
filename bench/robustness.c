/* robustness.c - cca-robustness: does a configuration hold against the
 * default on workloads beyond the shared traces? The smallest device each
 * workload replays on (bisection to 0.5%, as cca-bench's mincap) under the
 * default rules and under each configuration, and on the multi-stream
 * workloads the device calls on a large device (cudaMalloc + cudaFree +
 * cuMemCreate + cuMemUnmap). Workloads: every trace of the folders and
 * files given (default ../shared/traces), each also cut to its first half
 * and first three quarters of events, and the three multi-stream workloads
 * at 6, 12, 24 and 48 steps with --seeds draws of their random sizes.
 * The presets' rules (tests/test_replay.c, docs/testing.md): no configuration needs a device more than 2% larger
 * than the default's, nor makes more than twice its calls on several
 * streams. Prints figures (it measures, it does not gate: tests/test_replay.c
 * asserts the rules on the shared traces and the multistream workloads);
 * exits 0 unless it could not run. A workload that fits on no device up
 * to 4x its peak live bytes counts as 4x (and is named). Beside them, the
 * floor: the smallest device of an ideal page allocator (floor.h), per
 * workload with --workloads, and each configuration's distance from it
 * (over 1%: issue 27's goal for expandable segments). Simulated device
 * only. */
#include "capacity.h"
#include "floor.h"
#include "multistream.h"
#include "replay.h"
#include "sim_ctl.h"
#include "trace_files.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_CONFS 16

typedef struct tally {
    const char *conf;
    size_t n, over, n_ms, calls_over, over_floor;
    double log_min, worst, worst_calls, worst_floor;
    char worst_at[300], worst_calls_at[300], worst_floor_at[300];
} tally_t;

typedef struct run {
    tally_t t[MAX_CONFS + 1];     /* [0]: the default */
    size_t n;
    int verbose, workloads;
    double log_floor;             /* the ideal page allocator's smallest devices, summed as logs */
} run_t;

/* The ideal page allocator's smallest device / peak live (floor.h). */
static double floor_ratio(const trace_t *t)
{
    uint64_t pages = 0;
    if (floor_pages(t, &pages, NULL) != 0) {
        fprintf(stderr, "cca-robustness: out of host memory\n");
        exit(2);
    }
    return t->peak_live_bytes ? (double)(pages * FLOOR_PAGE) / (double)t->peak_live_bytes : 1.0;
}

static double smallest(const trace_t *t, const char *conf)
{
    capacity_result_t c = capacity_search(t, &bench_ops_cca, conf, 4.0, 0.005);
    if (!c.ok) {
        fprintf(stderr, "cca-robustness: %s under '%s': %s\n", t->name, conf, c.error);
        exit(2);
    }
    if (c.above_bound) printf("  %s: '%s' fits on no device up to 4x peak live (counted as 4x)\n", t->name, conf);
    return c.min_ratio;
}

static double calls(const trace_t *t, const char *conf)
{
    replay_opts_t o = {.capacity = replay_big_capacity(t)};
    replay_result_t r = replay(t, &bench_ops_cca, conf, &o);
    if (!r.ok) {
        fprintf(stderr, "cca-robustness: %s under '%s': %s\n", t->name, conf, r.error);
        exit(2);
    }
    return (double)(r.calls.malloc + r.calls.free + r.calls.create + r.calls.unmap);
}

static void one(run_t *R, const trace_t *t, const char *name, int several_streams)
{
    double def = smallest(t, ""), def_calls = several_streams ? calls(t, "") : 0, fl = floor_ratio(t);
    R->log_floor += log(fl);
    if (R->workloads) printf("  %-48s %8.4f", name, fl);
    for (size_t i = 0; i < R->n; i++) {
        tally_t *y = &R->t[i];
        double m = i ? smallest(t, y->conf) : def, q = m / def, qf = m / fl;
        y->n++;
        y->log_min += log(m);
        if (R->workloads) printf(" %10.4f", m);
        if (qf > 1.01) y->over_floor++;
        if (qf > y->worst_floor) {
            y->worst_floor = qf;
            snprintf(y->worst_floor_at, sizeof y->worst_floor_at, "%s", name);
        }
        if (q > 1.02) {
            y->over++;
            if (R->verbose) printf("  %s: '%s' needs %.3fx peak live, the default %.3fx\n", name, y->conf, m, def);
        }
        if (q > y->worst) {
            y->worst = q;
            snprintf(y->worst_at, sizeof y->worst_at, "%s", name);
        }
        if (!several_streams) continue;
        double c = i ? calls(t, y->conf) : def_calls, cq = c / (def_calls > 0 ? def_calls : 1);
        y->n_ms++;
        if (cq > 2.0) {
            y->calls_over++;
            if (R->verbose) printf("  %s: '%s' makes %.0f device calls, the default %.0f\n", name, y->conf, c, def_calls);
        }
        if (cq > y->worst_calls) {
            y->worst_calls = cq;
            snprintf(y->worst_calls_at, sizeof y->worst_calls_at, "%s", name);
        }
    }
    if (R->workloads) printf("\n");
}

/* The trace cut to its first `pct` percent of events (frees of what is
 * allocated later cannot occur; the peak is recounted). */
static void cut(run_t *R, const trace_t *t, unsigned pct)
{
    trace_t u = *t;
    u.n_events = t->n_events * pct / 100;
    uint64_t *size = calloc(t->n_slots ? t->n_slots : 1, sizeof *size), live = 0, peak = 0;
    if (!size) {
        fprintf(stderr, "cca-robustness: out of host memory\n");
        exit(2);
    }
    for (size_t k = 0; k < u.n_events; k++) {
        const trace_event_t *e = &t->events[k];
        if (e->op == TRACE_ALLOC) {
            size[e->slot] = e->size;
            live += e->size;
            if (live > peak) peak = live;
        } else if (e->op == TRACE_FREE) {
            live -= size[e->slot];
            size[e->slot] = 0;
        }
    }
    free(size);
    if (!peak) return;
    u.peak_live_bytes = peak;
    char name[300];
    snprintf(name, sizeof name, "%s@%u%%", t->name, pct);
    one(R, &u, name, t->n_streams > 1);
}

static void usage(void)
{
    fprintf(stderr,
            "usage: cca-robustness [--trace PATH]... [--seeds N] [--verbose] [--workloads] [CONF]...\n"
            "  CONF: cca configurations to hold against the default (default: preset:lean preset:expandable)\n"
            "  --trace PATH  a trace file or folder (repeatable; default ../shared/traces)\n"
            "  --seeds N     draws of the multi-stream workloads' sizes (default 8)\n"
            "  --verbose     every workload that breaks a rule\n"
            "  --workloads   every workload's smallest device / peak live: the ideal page allocator's, then\n"
            "                the default's and each CONF's\n");
    exit(2);
}

int main(int argc, char **argv)
{
    run_t R = {.n = 1};
    R.t[0].conf = "";
    unsigned seeds = 8;
    trace_files_t files = {0};
    int given = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--trace") && i + 1 < argc) {
            if (trace_files_add(&files, argv[++i], 0) < 0) fprintf(stderr, "cca-robustness: cannot read %s: skipped\n", argv[i]);
            given = 1;
        } else if (!strcmp(argv[i], "--seeds") && i + 1 < argc) {
            seeds = (unsigned)strtoul(argv[++i], NULL, 10);
        } else if (!strcmp(argv[i], "--verbose")) {
            R.verbose = 1;
        } else if (!strcmp(argv[i], "--workloads")) {
            R.workloads = 1;
        } else if (argv[i][0] == '-' && argv[i][1] == '-') {
            usage();
        } else if (R.n <= MAX_CONFS) {
            R.t[R.n++].conf = argv[i];
        } else {
            usage();
        }
    }
    if (R.n == 1) {
        R.t[R.n++].conf = "preset:lean";
        R.t[R.n++].conf = "preset:expandable";
    }
    if (!simctl_is_sim()) {
        fprintf(stderr, "cca-robustness: needs the simulated device (-Ddevice=sim)\n");
        return 2;
    }
    if (R.workloads) {
        printf("  %-48s %8s", "workload (smallest device / peak live)", "ideal");
        for (size_t i = 0; i < R.n; i++) printf(" %10.10s", i ? R.t[i].conf : "default");
        printf("\n");
    }
    if (!given && trace_files_add(&files, "../shared/traces", 0) < 0)
        printf("no traces in ../shared/traces: skipped (give --trace PATH)\n");
    for (size_t f = 0; f < files.n; f++) {
        trace_t t;
        if (trace_load(files.paths[f], &t) != 0) {
            printf("%s: not loaded: %s\n", files.paths[f], t.error);
            continue;
        }
        fprintf(stderr, "  [%zu/%zu] %s\n", f + 1, files.n, t.name);
        one(&R, &t, t.name, t.n_streams > 1);
        cut(&R, &t, 50);
        cut(&R, &t, 75);
        trace_free(&t);
    }
    trace_files_free(&files);
    static const unsigned steps[] = {6, 12, 24, 48};
    for (unsigned s = 0; s < seeds; s++)
        for (size_t k = 0; k < multistream_count(); k++)
            for (size_t j = 0; j < sizeof steps / sizeof steps[0]; j++) {
                trace_t t;
                if (multistream_trace_seeded(k, steps[j], s, &t) != 0) {
                    fprintf(stderr, "cca-robustness: %s\n", t.error);
                    return 2;
                }
                char name[300];
                snprintf(name, sizeof name, "%s/%usteps/seed%u", t.name, steps[j], s);
                one(&R, &t, name, 1);
                trace_free(&t);
            }
    printf("%-40s %9s %14s %-44s %8s %12s %-40s %12s %s\n", "configuration", "workloads", "over 2% / n",
           "worst smallest device / default's (at)", "mincap", "calls > 2x", "worst calls / default's (at)",
           "over ideal+1%", "worst / ideal's (at)");
    for (size_t i = 0; i < R.n; i++) {
        tally_t *y = &R.t[i];
        char over[32], co[32], of[32], w[400], wc[400], wf[400];
        snprintf(over, sizeof over, "%zu / %zu", y->over, y->n);
        snprintf(co, sizeof co, "%zu / %zu", y->calls_over, y->n_ms);
        snprintf(of, sizeof of, "%zu / %zu", y->over_floor, y->n);
        snprintf(w, sizeof w, i ? "%.3f (%s)" : "-", y->worst, y->worst_at);
        snprintf(wc, sizeof wc, i ? "%.2f (%s)" : "-", y->worst_calls, y->worst_calls_at);
        snprintf(wf, sizeof wf, "%.3f (%s)", y->worst_floor, y->worst_floor_at);
        printf("%-40s %9zu %14s %-44s %8.4f %12s %-40s %12s %s\n", i ? y->conf : "(default)", y->n, over, w,
               y->n ? exp(y->log_min / (double)y->n) : 0.0, co, wc, of, wf);
    }
    size_t n = R.t[0].n;
    printf("%-40s %9zu %14s %-44s %8.4f\n", "(ideal page allocator, floor.h)", n, "-", "-",
           n ? exp(R.log_floor / (double)n) : 0.0);
    return 0;
}

/* main.c - cca-bench: cca against its peers, side by side in one run. */
#include "allocators.h"
#include "bench.h"
#include "goals.h"
#include "machine.h"
#include "report_json.h"
#include "results.h"
#include "sim_ctl.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef void (*scenario_fn)(const bench_opts_t *);

/* opt_in: only when named with --scenario (callgrind takes minutes). */
static const struct { const char *name; scenario_fn fn; int opt_in; } scenarios[] = {
    {"runtime", scen_runtime_cost, 0},
    {"pingpong", scen_pingpong, 0},
    {"mixed", scen_mixed, 0},
    {"threads", scen_threads, 0},
    {"streams", scen_streams, 0},
    {"xfree", scen_xfree, 0},
    {"hooks", scen_hooks, 0},
    {"replay", scen_replay, 0},
    {"multistream", scen_multistream, 0},
    {"instructions", scen_instructions, 1},
};
#define N_SCEN (sizeof scenarios / sizeof scenarios[0])

typedef struct cli {
    bench_opts_t o;
    int chosen[N_SCEN], any_chosen, model_all, dir_given;
    const char *filters[BENCH_MAX_ALLOCS];
    size_t n_filters;
    const char *count_xfree;     /* --count-xfree VARIANT: one untimed run, for callgrind */
    const char *count_ops;       /* --count-ops WORK: likewise */
} cli_t;

static void usage(FILE *f)
{
    fprintf(f,
        "usage: cca-bench [options]\n"
        "  --scenario NAME   run only this scenario (repeatable): runtime, pingpong, mixed,\n"
        "                    threads, streams, xfree, hooks, replay, multistream (default:\n"
        "                    these), and\n"
        "                    instructions (per operation, under valgrind's callgrind)\n"
        "  --reps N          repetitions of every figure (default 11; --quick: 3; at most 64)\n"
        "  --quick           fast smoke run: short measurements, 3 smallest default traces\n"
        "  --json FILE       also write every figure as JSON\n"
        "  --traces-dir DIR  default trace folder (default ../shared/traces, else the\n"
        "                    folder the build was configured with)\n"
        "  --trace PATH      a trace file or folder to replay too (repeatable)\n"
        "  --alloc LABEL     run only allocators whose label starts with LABEL (repeatable)\n"
        "  --cca LABEL=CONF  also run cca with configuration CONF (CCA_CONF's syntax, e.g.\n"
        "                    max_split_size_mb:256,release_before_grow:True), labelled\n"
        "                    cca:LABEL, in every scenario (repeatable)\n"
        "  --model-all       also run cca and CUB with the modelled runtime latencies\n"
        "  --count-xfree V   no measurement: N frees of variant V of xfree (same-thread,\n"
        "                    cross-thread, cross-thread-1000-exited) by the first --alloc\n"
        "                    allocator, for counting instructions (scripts/instructions.sh)\n"
        "  --count-ops WORK  no measurement: N operations of WORK (pingpong, pingpong12: pairs;\n"
        "                    mixed: steps) by the first --alloc allocator, for callgrind\n"
        "  --count N         how many (default 100000; for the instructions scenario, N of\n"
        "                    its (Ir(2N) - Ir(N)) / N, default 10000, --quick 2000)\n");
}

static int scenario_index(const char *name)
{
    for (size_t i = 0; i < N_SCEN; i++)
        if (!strcmp(scenarios[i].name, name))
            return (int)i;
    return -1;
}

static int is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* ../shared/traces relative to the current directory; when that is absent,
 * the folder the build was configured with (meson option traces). */
static void default_traces(cli_t *c)
{
#ifdef BENCH_TRACES_DIR
    if (!c->dir_given && !is_dir(c->o.traces_dir) && is_dir(BENCH_TRACES_DIR))
        c->o.traces_dir = BENCH_TRACES_DIR;
#else
    (void)c;
    (void)is_dir;
#endif
}

/* Returns 1 when the option took a value, 0 when not, -1 on error. */
static int option(cli_t *c, const char *opt, const char *val)
{
    if (!strcmp(opt, "--quick"))
        return c->o.quick = 1, 0;
    if (!strcmp(opt, "--model-all"))
        return c->model_all = 1, 0;
    if (!val)
        return -1;
    if (!strcmp(opt, "--reps"))
        c->o.reps = atoi(val);
    else if (!strcmp(opt, "--json"))
        c->o.json_path = val;
    else if (!strcmp(opt, "--traces-dir"))
        c->o.traces_dir = val, c->dir_given = 1;
    else if (!strcmp(opt, "--trace") && c->o.n_trace_paths < BENCH_MAX_PATHS)
        c->o.trace_paths[c->o.n_trace_paths++] = val;
    else if (!strcmp(opt, "--alloc") && c->n_filters < BENCH_MAX_ALLOCS)
        c->filters[c->n_filters++] = val;
    else if (!strcmp(opt, "--cca")) {
        char err[600];
        if (allocators_add_cca(val, err, sizeof err) != 0) {
            fprintf(stderr, "cca-bench: %s\n", err);
            exit(2);
        }
    }
    else if (!strcmp(opt, "--count-xfree"))
        c->count_xfree = val;
    else if (!strcmp(opt, "--count-ops"))
        c->count_ops = val;
    else if (!strcmp(opt, "--count"))
        c->o.count = (size_t)strtoull(val, NULL, 10);
    else if (!strcmp(opt, "--scenario") && scenario_index(val) >= 0)
        c->chosen[scenario_index(val)] = c->any_chosen = 1;
    else
        return -1;
    return 1;
}

static int parse(cli_t *c, int argc, char **argv)
{
    memset(c, 0, sizeof *c);
    c->o.reps = 0;
    c->o.traces_dir = "../shared/traces";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            exit(0);
        }
        int r = option(c, argv[i], i + 1 < argc ? argv[i + 1] : NULL);
        if (r < 0) {
            fprintf(stderr, "cca-bench: bad option or value: %s\n", argv[i]);
            usage(stderr);
            return -1;
        }
        i += r;
    }
    default_traces(c);
    if (c->o.reps <= 0)
        c->o.reps = c->o.quick ? 3 : 11;
    if (c->o.reps > BENCH_MAX_REPS)
        c->o.reps = BENCH_MAX_REPS;
    c->o.target_ns = c->o.quick ? 2e6 : 10e6;
    return 0;
}

/* glibc takes a cheaper lock path in a process that never had a second
 * thread: start (and join) one before anything is timed. */
static void *nothing(void *arg) { return arg; }

static void start_a_thread(void)
{
    pthread_t t;
    if (pthread_create(&t, NULL, nothing, NULL) == 0)
        pthread_join(t, NULL);
}

int main(int argc, char **argv)
{
    cli_t c;
    machine_t m;
    if (parse(&c, argc, argv) != 0 ||
        allocators_select(&c.o, c.model_all, c.filters, c.n_filters) != 0)
        return 2;
    char why[160];
    if (!simctl_device_ready(why, sizeof why)) {
        fprintf(stderr, "cca-bench: %s: nothing to measure\n", why);
        return 77;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    start_a_thread();
    if (c.count_xfree)
        return xfree_count(&c.o.allocs[0], c.count_xfree, c.o.count ? c.o.count : 100000);
    if (c.count_ops)
        return count_ops(&c.o.allocs[0], c.count_ops, c.o.count ? c.o.count : 100000);
    machine_probe(&m);
    machine_print(stdout, &m, &c.o);
    for (size_t i = 0; i < N_SCEN; i++)
        if (c.any_chosen ? c.chosen[i] : !scenarios[i].opt_in)
            scenarios[i].fn(&c.o);
    goals_report(stdout, &c.o);
    if (c.o.json_path && report_json(c.o.json_path, &m, &c.o) != 0) {
        fprintf(stderr, "cca-bench: cannot write %s\n", c.o.json_path);
        return 1;
    }
    return 0;
}

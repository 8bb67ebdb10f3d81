/* main.c - cca-bench: cca against its peers, side by side in one run. */
#include "allocators.h"
#include "bench.h"
#include "goals.h"
#include "machine.h"
#include "report_json.h"
#include "results.h"
#include "sim_ctl.h"
#include "summary.h"
#include "trace_files.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef void (*scenario_fn)(const bench_opts_t *);

/* opt_in: only when named with --scenario (callgrind takes minutes). */
static const struct { const char *name; scenario_fn fn; int opt_in; } scenarios[] = {
    {"runtime", scen_runtime_cost, 0},
    {"pingpong", scen_pingpong, 0},
    {"mixed", scen_mixed, 0},
    {"threads", scen_threads, 0},
    {"streams", scen_streams, 0},
    {"recording", scen_recording, 0},
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
        "                    threads, streams, recording, xfree, hooks, replay, multistream\n"
        "                    (default: these), and\n"
        "                    instructions (per operation under valgrind's callgrind, also by streams)\n"
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

static const char *const value_options[] = {
    "--reps", "--json", "--traces-dir", "--trace", "--alloc", "--cca", "--count-xfree", "--count-ops", "--count",
    "--scenario",
};

static int takes_value(const char *opt)
{
    for (size_t i = 0; i < sizeof value_options / sizeof value_options[0]; i++)
        if (!strcmp(value_options[i], opt))
            return 1;
    return 0;
}

/* The scenarios' names, comma-separated, for a message. */
static void scenario_names(char *out, size_t n)
{
    size_t len = 0;
    out[0] = 0;
    for (size_t i = 0; i < N_SCEN && len < n; i++)
        len += (size_t)snprintf(out + len, n - len, "%s%s", i ? ", " : "", scenarios[i].name);
}

/* A count option's value: a whole number in [lo, hi], else a message and exit 2. */
static long whole(const char *opt, const char *val, long lo, long hi)
{
    char *end = NULL;
    errno = 0;
    long v = strtol(val, &end, 10);
    if (errno || end == val || *end || v < lo || v > hi) {
        fprintf(stderr, "cca-bench: %s %s: expected a whole number from %ld to %ld\n", opt, val, lo, hi);
        exit(2);
    }
    return v;
}

/* --trace PATH: a file or folder this process can read, else the reason and exit 2
 * (a path is the caller's: relative to the directory cca-bench runs in). */
static void check_trace(const char *val)
{
    trace_files_t probe = {0};
    int r = trace_files_add(&probe, val, 0);
    int err = errno;
    size_t n = probe.n;
    trace_files_free(&probe);
    if (r != 0) {
        fprintf(stderr, "cca-bench: --trace %s: cannot read it: %s\n", val, strerror(err ? err : EINVAL));
        exit(2);
    }
    if (n == 0) {
        fprintf(stderr, "cca-bench: --trace %s: a folder with no .csv trace in it\n", val);
        exit(2);
    }
}

/* Returns 1 when the option took a value, 0 when not; a bad option or value
 * is a message naming it (and the choices) and exit 2. */
static int option(cli_t *c, const char *opt, const char *val)
{
    if (!strcmp(opt, "--quick"))
        return c->o.quick = 1, 0;
    if (!strcmp(opt, "--model-all"))
        return c->model_all = 1, 0;
    if (!takes_value(opt)) {
        fprintf(stderr, "cca-bench: unknown option %s (cca-bench --help lists them)\n", opt);
        exit(2);
    }
    if (!val) {
        fprintf(stderr, "cca-bench: %s needs a value (cca-bench --help)\n", opt);
        exit(2);
    }
    if (!strcmp(opt, "--reps"))
        c->o.reps = (int)whole(opt, val, 1, BENCH_MAX_REPS);
    else if (!strcmp(opt, "--json"))
        c->o.json_path = val;
    else if (!strcmp(opt, "--traces-dir"))
        c->o.traces_dir = val, c->dir_given = 1;
    else if (!strcmp(opt, "--trace")) {
        if (c->o.n_trace_paths >= BENCH_MAX_PATHS) {
            fprintf(stderr, "cca-bench: --trace %s: at most %d traces\n", val, BENCH_MAX_PATHS);
            exit(2);
        }
        check_trace(val);
        c->o.trace_paths[c->o.n_trace_paths++] = val;
    } else if (!strcmp(opt, "--alloc")) {
        if (c->n_filters >= BENCH_MAX_ALLOCS) {
            fprintf(stderr, "cca-bench: --alloc %s: at most %d filters\n", val, BENCH_MAX_ALLOCS);
            exit(2);
        }
        c->filters[c->n_filters++] = val;
    } else if (!strcmp(opt, "--cca")) {
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
        c->o.count = (size_t)whole(opt, val, 1, 1000000000L);
    else {                                            /* --scenario */
        int k = scenario_index(val);
        if (k < 0) {
            char names[256];
            scenario_names(names, sizeof names);
            fprintf(stderr, "cca-bench: --scenario %s: no such scenario (the scenarios: %s)\n", val, names);
            exit(2);
        }
        c->chosen[k] = c->any_chosen = 1;
    }
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
        i += option(c, argv[i], i + 1 < argc ? argv[i + 1] : NULL);
    }
    default_traces(c);
    if (c->o.reps <= 0)
        c->o.reps = c->o.quick ? 3 : 11;
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
    /* The tables go to a scratch file while the scenarios run (each says
     * on stderr that it starts); the header and the summary, which needs
     * every figure, come first. */
    FILE *tables = tmpfile();
    int saved = -1;
    fflush(stdout);
    if (tables && (saved = dup(1)) >= 0)
        dup2(fileno(tables), 1);
    for (size_t i = 0; i < N_SCEN; i++)
        if (c.any_chosen ? c.chosen[i] : !scenarios[i].opt_in) {
            fprintf(stderr, "cca-bench: %s ...\n", scenarios[i].name);
            scenarios[i].fn(&c.o);
        }
    goals_report(stdout, &c.o);
    fflush(stdout);
    if (saved >= 0) {
        dup2(saved, 1);
        close(saved);
    }
    machine_print(stdout, &m, &c.o);
    char *summary = NULL;
    size_t summary_len = 0;
    FILE *sf = open_memstream(&summary, &summary_len);
    if (sf) {
        summary_print(sf);
        fclose(sf);
        fputs(summary, stdout);
    } else {
        summary_print(stdout);
    }
    if (tables) {
        char buf[1 << 16];
        size_t k;
        rewind(tables);
        while ((k = fread(buf, 1, sizeof buf, tables)) > 0)
            fwrite(buf, 1, k, stdout);
        fclose(tables);
    }
    fflush(stdout);
    if (c.o.json_path && report_json(c.o.json_path, &m, &c.o, summary) != 0) {
        fprintf(stderr, "cca-bench: cannot write %s: %s\n", c.o.json_path, strerror(errno));
        free(summary);
        return 1;
    }
    free(summary);
    return scen_replay_failed() ? 1 : 0;
}

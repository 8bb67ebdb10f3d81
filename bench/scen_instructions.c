/* scen_instructions.c - instructions per operation beside the nanoseconds:
 * for each selected allocator (not the modelled ones), the 4 KiB pingpong
 * pair, the 12-size pingpong pair and the mixed step (one free and one
 * allocation over 1,000 live blocks), counted by running this program
 * under valgrind's callgrind with --count-ops at N (--count) and 2N operations after
 * a warm-up: (Ir(2N) - Ir(N)) / N. Instructions stay the same run after run
 * on a shared machine where nanoseconds do not. Also in --json (scenario
 * "instructions", unit "Ir/op"). Then the same by streams: one thread,
 * step k's 4 KiB pair on stream k mod S, or the mixed step with block i on
 * stream i mod S, for S = 1, 2, 8, 64 (cases "pingpong/S", "mixed/S", their
 * JSON rows with extra "streams": S). Not in the default set
 * (callgrind is slow): --scenario instructions. Skips, saying so, where
 * valgrind is absent. */
#include "allocators.h"
#include "bench.h"
#include "results.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const works[] = {"pingpong", "pingpong12", "mixed"};
#define N_WORKS (sizeof works / sizeof works[0])

/* The "summary:" line of a callgrind output file: total instructions. */
static double summary_of(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    char line[512];
    double ir = -1;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "summary:", 8)) ir = strtod(line + 8, NULL);
    fclose(f);
    return ir;
}

/* Instructions of `self --alloc label --count-ops work --count n` under
 * callgrind; -1 on failure (the reason on stderr). */
static double count_run(const char *self, const char *dir, const char *label, const char *work, size_t n)
{
    char out[512], cmd[8192], extra[4096], file[64];
    snprintf(file, sizeof file, "%s", work);
    for (char *c = file; *c; c++) *c = *c == '/' ? '_' : *c;
    snprintf(out, sizeof out, "%s/cg.%s.%zu", dir, file, n);
    /* labels and works are fixed strings or checked ones (a --cca label is
     * letters, digits, '-', '_', '.'); the --cca configurations are quoted */
    if (allocators_cca_args(extra, sizeof extra) >= sizeof extra) {
        fprintf(stderr, "cca-bench: instructions: the --cca configurations are too long to pass on\n");
        return -1;
    }
    snprintf(cmd, sizeof cmd,
             "valgrind --tool=callgrind --callgrind-out-file='%s' '%s'%s --alloc '%s' --count-ops %s --count %zu "
             ">/dev/null 2>'%s.err'", out, self, extra, label, work, n, out);
    if (system(cmd) != 0) {
        fprintf(stderr, "cca-bench: instructions: %s %s under callgrind failed (see %s.err)\n", label, work, out);
        return -1;
    }
    double ir = summary_of(out);
    remove(out);
    char err[520];
    snprintf(err, sizeof err, "%s.err", out);
    remove(err);
    return ir;
}

/* One row of the table: the per-operation count of work for allocator a
 * (printed, and kept for --json with `streams` when it is > 0). */
static void count_cell(const char *self, const char *dir, const bench_alloc_t *a, const char *work, size_t n,
                       size_t streams)
{
    double x = count_run(self, dir, a->label, work, n);
    double y = x < 0 ? -1 : count_run(self, dir, a->label, work, 2 * n);
    bench_row_t *r = results_add("instructions", work, a->label, "Ir/op");   /* for --json */
    if (r) {
        r->is_cca = a->is_cca;
        r->fig.reps = 1;
        if (streams) results_extra(r, "streams", (double)streams);
    }
    if (x < 0 || y < 0) {
        printf(" %14s", "failed");
        if (r) {
            r->fig.failed = 1;
            snprintf(r->fig.msg, sizeof r->fig.msg, "callgrind run failed");
        }
    } else {
        double ir = (y - x) / (double)n;
        printf(" %14.0f", ir);
        if (r) r->fig.median = r->fig.min = r->fig.max = r->fig.samples[0] = ir;
    }
    fflush(stdout);
}

static const size_t stream_counts[] = {1, 2, 8, 64};
#define N_STREAM_COUNTS (sizeof stream_counts / sizeof stream_counts[0])

/* The streams dimension: per allocator, a row per work, a column per S. */
static void count_by_streams(const bench_opts_t *o, const char *self, const char *dir, size_t n)
{
    printf("\n  by streams (one thread; pair k / block i on stream k, i mod S)\n  %-16s %-9s", "allocator", "work");
    for (size_t j = 0; j < N_STREAM_COUNTS; j++) printf(" %11s=%-2zu", "S", stream_counts[j]);
    printf("\n");
    for (size_t i = 0; i < o->n_allocs; i++) {
        const bench_alloc_t *a = &o->allocs[i];
        if (a->modelled) continue;
        for (int w = 0; w < 2; w++) {
            printf("  %-16s %-9s", a->label, w ? "mixed" : "pingpong");
            for (size_t j = 0; j < N_STREAM_COUNTS; j++) {
                char work[32];
                snprintf(work, sizeof work, "%s/%zu", w ? "mixed" : "pingpong", stream_counts[j]);
                count_cell(self, dir, a, work, n, stream_counts[j]);
            }
            printf("\n");
        }
    }
}

void scen_instructions(const bench_opts_t *o)
{
    printf("\n== instructions: per operation, callgrind, (Ir(2N) - Ir(N)) / N after a warm-up ==\n");
    if (system("valgrind --version >/dev/null 2>&1") != 0) {
        printf("  skipped: valgrind is not installed (apt-get install valgrind)\n");
        return;
    }
    char self[1024];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    if (len <= 0) {
        printf("  skipped: cannot find this program's path\n");
        return;
    }
    self[len] = '\0';
    char dir[] = "/tmp/cca-bench-cg.XXXXXX";
    if (!mkdtemp(dir)) {
        printf("  skipped: no temporary folder\n");
        return;
    }
    size_t n = o->count ? o->count : o->quick ? 2000 : 10000;
    printf("  N = %zu\n  %-16s %14s %14s %14s\n", n, "allocator", "pingpong pair", "12-size pair", "mixed step");
    for (size_t i = 0; i < o->n_allocs; i++) {
        const bench_alloc_t *a = &o->allocs[i];
        if (a->modelled) continue;                    /* the latency model adds time, not instructions */
        printf("  %-16s", a->label);
        for (size_t w = 0; w < N_WORKS; w++) count_cell(self, dir, a, works[w], n, 0);
        printf("\n");
    }
    count_by_streams(o, self, dir, n);
    rmdir(dir);
}

/* crit_main.c - the runner of crit.h's stand-in for Criterion: one forked
 * process per test, the suite's init and fini around it, its timeout as an
 * alarm; "PASS/FAIL/SKIP suite::name" per test and "N passed, N failed"
 * (", N skipped") at the end. Exit 0 when nothing failed, 77 when there is
 * no CUDA device or every test skipped, 1 otherwise. An argument runs only
 * the tests whose "suite::name" contains it. */
#define CCA_CRIT_COMPAT 1
#include "crit.h"
#include "device_check.h"

#include <cuda_runtime_api.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_TESTS 512
#define MAX_SUITES 64

typedef struct test { const char *suite, *name; void (*fn)(void); const struct crit_opts *o; } test_t;
typedef struct suite { const char *name; const struct crit_opts *o; } suite_t;

static test_t tests[MAX_TESTS];
static suite_t suites[MAX_SUITES];
static int n_tests, n_suites;

void crit_register_test(const char *suite, const char *name, void (*fn)(void), const struct crit_opts *o)
{
    if (n_tests == MAX_TESTS) {
        fprintf(stderr, "crit: more than %d tests\n", MAX_TESTS);
        exit(2);
    }
    tests[n_tests++] = (test_t){ suite, name, fn, o };
}

void crit_register_suite(const char *suite, const struct crit_opts *o)
{
    if (n_suites < MAX_SUITES) suites[n_suites++] = (suite_t){ suite, o };
}

/* One report line: prefix, then the caller's message. */
static void report(const char *prefix, const char *fmt, va_list ap)
{
    fprintf(stderr, "%s", prefix);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    fflush(stderr);
}

void crit_fail(const char *file, int line, const char *expr, const char *fmt, ...)
{
    fprintf(stderr, "[----] %s:%d: Assertion Failed: %s\n", file, line, expr);
    if (fmt[0]) {
        va_list ap;
        va_start(ap, fmt);
        report("[----]   ", fmt, ap);
        va_end(ap);
    }
    fflush(stderr);
    _exit(1);
}

void crit_skip(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    report("[SKIP] ", fmt, ap);
    va_end(ap);
    _exit(77);
}

void crit_log(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    report("[----] ", fmt, ap);
    va_end(ap);
}

static const struct crit_opts *suite_opts(const char *name)
{
    for (int i = 0; i < n_suites; i++)
        if (!strcmp(suites[i].name, name)) return suites[i].o;
    return NULL;
}

/* 0 passed, 1 failed, 2 skipped */
static int run_one(const test_t *t)
{
    const struct crit_opts *s = suite_opts(t->suite);
    double timeout = t->o->timeout ? t->o->timeout : s && s->timeout ? s->timeout : 0;
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) return 1;
    if (pid == 0) {
        if (timeout > 0) alarm((unsigned)(timeout + 0.999));
        if (s && s->init) s->init();
        if (t->o->init) t->o->init();
        t->fn();
        if (t->o->fini) t->o->fini();
        if (s && s->fini) s->fini();
        fflush(stdout);
        _exit(0);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0) {}
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return 0;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 77) return 2;
    if (WIFSIGNALED(status))
        fprintf(stderr, "[----] %s::%s: %s\n", t->suite, t->name,
                WTERMSIG(status) == SIGALRM ? "timed out" : "crashed (signal)");
    return 1;
}

int main(int argc, char *argv[])
{
    if (!have_device()) return 77;
    int passed = 0, failed = 0, skipped = 0;
    char full[256];
    const char *filter = NULL;                        /* the first argument that is not a Criterion option (-j1) */
    for (int i = 1; i < argc && !filter; i++)
        if (argv[i][0] != '-') filter = argv[i];
    for (int i = 0; i < n_tests; i++) {
        const test_t *t = &tests[i];
        snprintf(full, sizeof full, "%s::%s", t->suite, t->name);
        if (filter && !strstr(full, filter)) continue;
        const struct crit_opts *s = suite_opts(t->suite);
        if (t->o->disabled || (s && s->disabled)) { skipped++; continue; }
        int r = run_one(t);
        printf("[%s] %s\n", r == 0 ? "PASS" : r == 2 ? "SKIP" : "FAIL", full);
        passed += r == 0;
        failed += r == 1;
        skipped += r == 2;
    }
    printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
    if (failed) return 1;
    return passed == 0 && skipped > 0 ? 77 : 0;
}

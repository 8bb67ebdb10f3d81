/* test_tracefile.c - recording allocations to a trace file (cca_trace_start,
 * the trace_file key): the rows exactly as written, the blocks alive at
 * the start, the version line, several devices' file names, bad paths, a
 * forked child, and the round trip the replay depends on: a program's
 * recording replayed on the same device size reproduces that program's
 * own reserved peak and device allocations, and its peak live is the
 * program's requested_bytes peak. */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "common.h"
#include "types.h"
#include "replay.h"
#include "trace.h"

static char dir[64];

static void make_dir(void)
{
    snprintf(dir, sizeof dir, "/tmp/cca_tracefile.XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    cca_sim_reset();
    cca_sim_set_capacity(0, 1 * GiB);
}

static void remove_dir(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    (void)!system(cmd);
}

TestSuite(tracefile, .init = make_dir, .fini = remove_dir);

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot read %s", path);
    static char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    return buf;
}

/* The file with every Time field replaced by "T" (times are the clock's). */
static char *untimed(const char *path)
{
    char *text = slurp(path);
    static char out[1 << 20];
    size_t o = 0;
    for (char *line = text; *line;) {
        char *nl = strchr(line, '\n');
        size_t len = nl ? (size_t)(nl - line) + 1 : strlen(line);
        char *c1 = memchr(line, ',', len), *c2 = c1 ? memchr(c1 + 1, ',', len - (size_t)(c1 + 1 - line)) : NULL;
        if (line[0] != '#' && strncmp(line, "Thread,", 7) && c1 && c2) {
            size_t head = (size_t)(c1 + 1 - line);
            memcpy(out + o, line, head), o += head;
            out[o++] = 'T';
            memcpy(out + o, c2, len - (size_t)(c2 - line)), o += len - (size_t)(c2 - line);
        } else {
            memcpy(out + o, line, len), o += len;
        }
        line += len;
    }
    out[o] = 0;
    return out;
}

Test(tracefile, rows_as_written)
{
    cca_allocator_t *a = make_alloc(NULL);
    cudaStream_t s1, s2;
    cr_assert_eq(cudaStreamCreate(&s1), cudaSuccess);
    cr_assert_eq(cudaStreamCreate(&s2), cudaSuccess);
    char path[128], got[160];
    snprintf(path, sizeof path, "%s/run.csv", dir);
    cr_assert_eq(cca_trace_start(a, path), CCA_OK, "%s", cca_last_error_string());
    cr_assert_eq(cca_trace_path(a, got, sizeof got), CCA_OK);
    cr_assert_str_eq(got, path);
    void *p = alloc_ok(a, 1000, NULL), *q = alloc_ok(a, 3 * MiB, s2), *r = alloc_ok(a, 7, s1);
    free_ok(a, q);
    void *x = NULL;
    cr_assert_eq(cca_malloc(a, &x, 4 * GiB, s1), CCA_ERROR_OUT_OF_MEMORY);
    cr_assert_eq(cca_malloc_try(a, &x, 4 * GiB, s1), CCA_ERROR_OUT_OF_MEMORY, "a tentative failure is not written");
    free_ok(a, p);
    cr_assert_eq(cca_trace_stop(a), CCA_OK, "%s", cca_last_error_string());
    cr_assert_eq(cca_trace_path(a, got, sizeof got), CCA_OK);
    cr_assert_str_eq(got, "");
    char want[1024];
    snprintf(want, sizeof want,
             "#cca-trace 1 device=0 device_memory=%zu\n"
             "Thread,Time,Action,Pointer,Size,Stream\n"
             "0,T,allocate,%p,1000,0\n"
             "0,T,allocate,%p,3145728,1\n"
             "0,T,allocate,%p,7,2\n"
             "0,T,free,%p,3145728,1\n"
             "0,T,allocate failure,(nil),4294967296,2\n"
             "0,T,free,%p,1000,0\n", (size_t)1 * GiB, p, q, r, q, p);
    cr_assert_str_eq(untimed(path), want);
    /* times: HH:MM:SS.ffffff, the first 0, never going back */
    char *text = slurp(path), *line = strchr(strchr(text, '\n') + 1, '\n') + 1;
    unsigned long long last = 0;
    for (int i = 0; *line; i++, line = strchr(line, '\n') + 1) {
        unsigned h, m, s, us;
        cr_assert_eq(sscanf(line, "0,%2u:%2u:%2u.%6u,", &h, &m, &s, &us), 4, "%.40s", line);
        unsigned long long t = ((h * 60ull + m) * 60 + s) * 1000000 + us;
        cr_assert(i ? t >= last : t == 0, "row %d at %llu after %llu", i, t, last);
        last = t;
    }
    free_ok(a, r);
    cr_assert_eq(atomic_load(&a->hooks), 0, "stopped: the hot path is back");
    cudaStreamDestroy(s1);
    cudaStreamDestroy(s2);
    finish(a);
}

/* Blocks alive when recording starts come first, at time 0, by address;
 * the key at creation records from the start, and cca_destroy writes
 * the rest. Another thread is Thread 1. */
static void *free_on_thread(void *arg)
{
    void **pa = arg;
    cr_assert_eq(cca_free(pa[0], pa[1]), CCA_OK);
    return NULL;
}

Test(tracefile, alive_first_then_the_key_and_destroy)
{
    cca_allocator_t *a = make_alloc(NULL);
    void *b[3];
    for (int i = 0; i < 3; i++) b[i] = alloc_ok(a, (size_t)(i + 1) * 1000, NULL);
    free_ok(a, b[1]);
    char path[128];
    snprintf(path, sizeof path, "%s/alive.csv", dir);
    cr_assert_eq(cca_trace_start(a, path), CCA_OK, "%s", cca_last_error_string());
    void *arg[2] = { a, b[2] };
    pthread_t t;
    pthread_create(&t, NULL, free_on_thread, arg);
    pthread_join(t, NULL);
    free_ok(a, b[0]);
    cca_destroy(a);                                   /* writes the rest, closes */
    void *lo = b[0] < b[2] ? b[0] : b[2], *hi = b[0] < b[2] ? b[2] : b[0];
    char want[512];
    snprintf(want, sizeof want,
             "#cca-trace 1 device=0 device_memory=%zu\nThread,Time,Action,Pointer,Size,Stream\n"
             "0,T,allocate,%p,%d,0\n0,T,allocate,%p,%d,0\n1,T,free,%p,3000,0\n0,T,free,%p,1000,0\n",
             (size_t)1 * GiB, lo, lo == b[0] ? 1000 : 3000, hi, hi == b[0] ? 1000 : 3000, b[2], b[0]);
    cr_assert_str_eq(untimed(path), want);
    cr_assert(strstr(slurp(path), "0,00:00:00.000000,allocate"), "alive blocks at time 0");

    char conf[200];
    snprintf(conf, sizeof conf, "trace_file:%s/key%%d.csv,preset:lean", dir);
    a = make_alloc(conf);
    cca_config_t c;
    cr_assert_eq(cca_get_config(a, &c), CCA_OK);
    snprintf(path, sizeof path, "%s/key%%d.csv", dir);
    cr_assert_str_eq(c.trace_file, path, "preset:lean keeps the trace file");
    void *p = alloc_ok(a, 512, NULL);
    free_ok(a, p);
    cca_destroy(a);
    snprintf(path, sizeof path, "%s/key0.csv", dir);
    snprintf(want, sizeof want, "#cca-trace 1 device=0 device_memory=%zu\nThread,Time,Action,Pointer,Size,Stream\n"
             "0,T,allocate,%p,512,0\n0,T,free,%p,512,0\n", (size_t)1 * GiB, p, p);
    cr_assert_str_eq(untimed(path), want);
    cr_assert_eq(cca_sim_live_allocations(0), 0);
}

/* Without %d, a second device's recording to the same path makes both
 * PATH.devN (the first renamed while it writes); with %d each names its own. */
Test(tracefile, several_devices)
{
    cca_sim_set_device_count(3);
    for (int d = 0; d < 3; d++) cca_sim_set_capacity(d, 1 * GiB);
    cca_allocator_t *a[3];
    char path[128], got[160];
    snprintf(path, sizeof path, "%s/multi.csv", dir);
    for (int d = 0; d < 3; d++) {
        cca_config_t c;
        cca_config_init(&c);
        c.device = d;
        snprintf(c.trace_file, sizeof c.trace_file, "%s", path);
        cr_assert_eq(cca_create(&c, &a[d]), CCA_OK, "%s", cca_last_error_string());
        if (d == 0) {
            cr_assert_eq(cca_trace_path(a[0], got, sizeof got), CCA_OK);
            cr_assert_str_eq(got, path, "one device: the path itself");
            void *p = alloc_ok(a[0], 100, NULL);
            free_ok(a[0], p);
        }
    }
    for (int d = 0; d < 3; d++) {
        char want[160];
        snprintf(want, sizeof want, "%s/multi.dev%d.csv", dir, d);
        cr_assert_eq(cca_trace_path(a[d], got, sizeof got), CCA_OK);
        cr_assert_str_eq(got, want);
        cca_destroy(a[d]);
        char *text = slurp(want);
        char head[80];
        snprintf(head, sizeof head, "#cca-trace 1 device=%d ", d);
        cr_assert(!strncmp(text, head, strlen(head)), "%s", text);
        cr_assert_eq(strstr(text, ",allocate,") != NULL, d == 0, "device 0's rows stayed in its renamed file");
    }
    cr_assert_eq(access(path, F_OK), -1, "no file under the shared name is left");
    /* a path that is no regular file is every device's as given: nothing renamed, no .devN */
    for (int d = 0; d < 2; d++) {
        cca_config_t c;
        cca_config_init(&c);
        c.device = d;
        snprintf(c.trace_file, sizeof c.trace_file, "/dev/null");
        cr_assert_eq(cca_create(&c, &a[d]), CCA_OK, "%s", cca_last_error_string());
        cr_assert_eq(cca_trace_path(a[d], got, sizeof got), CCA_OK);
        cr_assert_str_eq(got, "/dev/null");
    }
    cca_destroy(a[1]);
    cca_destroy(a[0]);
    struct stat sb;
    cr_assert(stat("/dev/null", &sb) == 0 && S_ISCHR(sb.st_mode), "/dev/null is still the device node");
    /* the same device twice on one file: refused, the first goes on */
    cca_allocator_t *x = make_alloc(NULL), *y = make_alloc(NULL);
    snprintf(path, sizeof path, "%s/dev%%d.csv", dir);
    cr_assert_eq(cca_trace_start(x, path), CCA_OK);
    cr_assert_eq(cca_trace_start(y, path), CCA_ERROR_INVALID_ARGUMENT);
    cr_assert(strstr(cca_last_error_string(), "is being written by another allocator of device 0"), "%s",
              cca_last_error_string());
    free_ok(y, alloc_ok(y, 10, NULL));
    cca_destroy(y);
    cca_destroy(x);
}

Test(tracefile, bad_paths_leave_the_allocator_usable)
{
    cca_allocator_t *a = make_alloc(NULL);
    cr_assert_eq(cca_trace_start(a, "/nonexistent/dir/t.csv"), CCA_ERROR_IO);
    cr_assert_str_eq(cca_last_error_string(), "cca_trace_start: cannot write /nonexistent/dir/t.csv: No such file or directory");
    char longp[CCA_TRACE_PATH_MAX + 8];
    memset(longp, 'x', sizeof longp - 1);
    longp[sizeof longp - 1] = 0;
    cr_assert_eq(cca_trace_start(a, longp), CCA_ERROR_INVALID_ARGUMENT);
    cr_assert(strstr(cca_last_error_string(), "longer than 1023 bytes"), "%s", cca_last_error_string());
    cr_assert_eq(atomic_load(&a->hooks), 0);
    free_ok(a, alloc_ok(a, 4096, NULL));
    cr_assert_eq(cca_trace_start(NULL, "x"), CCA_ERROR_INVALID_ARGUMENT);
    cr_assert_eq(cca_trace_stop(a), CCA_OK, "stopping what is not on");
    /* the key: the creation fails with the reason, nothing is held */
    cca_config_t c;
    cca_config_init(&c);
    char err[256];
    cr_assert_eq(cca_config_parse(&c, "trace_file:/nonexistent/t.csv", err, sizeof err), CCA_OK, "%s", err);
    cca_allocator_t *b = NULL;
    cr_assert_eq(cca_create(&c, &b), CCA_ERROR_IO);
    cr_assert_null(b);
    cr_assert(strstr(cca_last_error_string(), "cca_create: trace_file: cca_trace_start: cannot write /nonexistent/t.csv"),
              "%s", cca_last_error_string());
    cr_assert_eq(cca_config_parse(&c, "trace_file:a[1].csv", err, sizeof err), CCA_ERROR_INVALID_CONFIG);
    /* a full disk: rows lost are counted and said */
    if (access("/dev/full", W_OK) == 0) {
        cr_assert_eq(cca_trace_start(a, "/dev/full"), CCA_OK, "%s", cca_last_error_string());
        free_ok(a, alloc_ok(a, 4096, NULL));
        cr_assert_eq(cca_trace_stop(a), CCA_ERROR_IO);
        cr_assert_str_eq(cca_last_error_string(), "cca_trace_stop: 2 of 2 rows of /dev/full were lost: No space left on device");
    }
    finish(a);
}

/* A forked child does not write its parent's file, even at its exit. */
Test(tracefile, a_forked_child_writes_nothing)
{
    cca_allocator_t *a = make_alloc(NULL);
    char path[128];
    snprintf(path, sizeof path, "%s/fork.csv", dir);
    cr_assert_eq(cca_trace_start(a, path), CCA_OK);
    void *p = alloc_ok(a, 64, NULL);
    pid_t pid = fork();
    if (pid == 0) {
        void *q;
        for (int i = 0; i < 100; i++)
            if (cca_malloc(a, &q, 64, NULL) == CCA_OK) cca_free(a, q);
        exit(0);                                      /* runs the exit flush */
    }
    int status;
    waitpid(pid, &status, 0);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    free_ok(a, p);
    cr_assert_eq(cca_trace_stop(a), CCA_OK);
    char want[256];
    snprintf(want, sizeof want, "#cca-trace 1 device=0 device_memory=%zu\nThread,Time,Action,Pointer,Size,Stream\n"
             "0,T,allocate,%p,64,0\n0,T,free,%p,64,0\n", (size_t)1 * GiB, p, p);
    cr_assert_str_eq(untimed(path), want);
    finish(a);
}

/* The round trip: a program (a mixed workload, two streams, no recorded
 * stream uses) recorded; the replay of its file on the same device size
 * under the default gives the program's own reserved peak and device
 * allocations, and the file's peak live is the program's requested peak. */
static void stats_into(void *ctx, void *arg)
{
    cr_assert_eq(cca_get_stats(ctx, arg), CCA_OK);
}

static int round_trip(const char *conf, size_t capacity, unsigned seed)
{
    cca_sim_reset();
    cca_sim_set_capacity(0, capacity);
    char path[128], full[200];
    snprintf(path, sizeof path, "%s/trip.csv", dir);
    snprintf(full, sizeof full, "%s%strace_file:%s", conf, *conf ? "," : "", path);
    cca_allocator_t *a = make_alloc(full);
    cudaStream_t s2;
    cr_assert_eq(cudaStreamCreate(&s2), cudaSuccess);
    enum { LIVE = 300, STEPS = 6000 };
    void *live[LIVE] = { 0 };
    unsigned x = seed;
    int ooms = 0;
    for (int i = 0; i < STEPS; i++) {
        x = x * 1103515245u + 12345u;
        int k = (int)((x >> 8) % LIVE);
        if (live[k]) {
            free_ok(a, live[k]);
            live[k] = NULL;
        } else {
            int shift = (int)((x >> 20) % 26);
            size_t size = ((size_t)1 << shift) + (x >> 4) % 4096;
            cca_status_t s = cca_malloc(a, &live[k], size, (x >> 3) & 1 ? s2 : NULL);
            cr_assert(s == CCA_OK || s == CCA_ERROR_OUT_OF_MEMORY, "%s", cca_last_error_string());
            ooms += s != CCA_OK;
        }
    }
    cca_stats_t st = stats_of(a);
    for (int k = 0; k < LIVE; k++)
        if (live[k]) free_ok(a, live[k]);
    cr_assert_eq(cca_trace_flush(a), CCA_OK);
    trace_t t;
    cr_assert_eq(trace_load(path, &t), 0, "%s", t.error);
    cr_assert_eq(t.version, 1);
    cr_assert_eq(t.device, 0);
    cr_assert_eq(t.device_memory, capacity);
    cr_assert_eq(t.n_failures, (size_t)ooms);
    cr_assert_eq(t.peak_live_bytes, (uint64_t)st.requested_bytes[CCA_POOL_ALL].peak);
    cca_destroy(a);
    cudaStreamDestroy(s2);
    cca_stats_t again;
    replay_opts_t o = { .capacity = capacity, .check = 1, .failures = 1, .inspect = stats_into, .inspect_arg = &again };
    replay_result_t r = replay(&t, &bench_ops_cca, conf, &o);
    cr_assert(r.ok, "%s", r.error);
    cr_assert(!r.check_failed, "%s", r.check_msg);
    cr_assert_eq(r.peak_reserved, (uint64_t)st.reserved_bytes[CCA_POOL_ALL].peak);
    cr_assert_eq(again.num_device_alloc, st.num_device_alloc);
    cr_assert_eq(again.num_device_free, st.num_device_free);
    cr_assert_eq(r.ooms, (size_t)ooms, "the same refusals");
    cr_assert_eq(r.peak_live, t.peak_live_bytes);
    cr_assert(!ooms || r.first_oom < t.n_events);
    trace_free(&t);
    return ooms;
}

Test(tracefile, a_replay_reproduces_the_program)
{
    cr_assert_eq(round_trip("", 4 * GiB, 1), 0);
    cr_assert_gt(round_trip("", 160 * MiB, 2), 0, "tight: refusals, release-and-retry");
    cr_assert_gt(round_trip("", 100 * MiB, 4), 0);
    cr_assert_eq(round_trip("preset:lean", 4 * GiB, 3), 0);
    cr_assert_gt(round_trip("preset:expandable", 120 * MiB, 5), 0);
}

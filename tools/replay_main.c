/* replay_main.c - cca-replay: a recorded run (a trace CSV, a PyTorch memory
 * snapshot pickle, or cca's own) replayed through cca on the simulated
 * device, at any device size and configuration, to say whether it fits
 * and, where it does not, where and why (docs/replay.md). The program and
 * the Python package (cca.replay) run this same function:
 * cca_replay_main, the one name libcca_replay.so exports besides
 * cca_replay_version.
 *
 * For each trace and configuration: one replay on the given device (or,
 * with none, on one large enough for the whole run) that goes on past a
 * refusal as the recorded run did: peak live, peak reserved, device
 * allocations, and whether it fits - if not, the event, time, verdict and
 * advice of its first out-of-memory; then a bisection for the smallest
 * device it fits on (the reserve included; each try stops at its first
 * refusal). Requests the recorded run was refused ("allocate failure")
 * are made again: served on a larger device, each is freed at once. */
#include <errno.h>
#include <pthread.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cca.h>
#include "alloc_ops.h"
#include "pickle.h"
#include "replay.h"
#include "sim_ctl.h"
#include "snapshot_csv.h"
#include "trace.h"

#define EXPORT __attribute__((visibility("default")))
#define MIB ((uint64_t)1 << 20)
#define MAX_CONFS 16
#define REPLAY_JSON_VERSION 1

typedef struct conf { char label[64]; const char *conf; } conf_t;

typedef struct opts {
    const char *traces[256];
    int n_traces;
    uint64_t device_memory;          /* 0: the recording's, where it says */
    uint64_t reserve;
    conf_t confs[MAX_CONFS];
    int n_confs, n_given, only, quiet;
    const char *json, *to_csv;
} opts_t;

typedef struct outcome {
    uint64_t peak_live, peak_reserved, min_device, device, device_allocs;
    int fits;                        /* -1: no device to fit (none given or recorded) */
    size_t oom_event;                /* data row of the first refusal */
    uint64_t oom_time_us, oom_size;
    char verdict[32], advice[400], error[300];
} outcome_t;

/* ---- sizes ------------------------------------------------------------ */

/* "24GiB", "24 GB", "80e9", "1073741824": bytes; 0 with *ok = 0 for anything else. */
static uint64_t parse_size(const char *s, int *ok)
{
    static const struct { const char *unit; double mul; } units[] = {
        {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0}, {"TiB", 1099511627776.0},
        {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"B", 1.0}, {"", 1.0}};
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    *ok = 0;
    if (end == s || errno || !(v >= 0))
        return 0;
    while (*end == ' ')
        end++;
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (!strcmp(end, units[i].unit)) {
            double b = v * units[i].mul;
            if (b >= 1.8e19)
                return 0;
            *ok = 1;
            return (uint64_t)(b + 0.5);
        }
    return 0;
}

static const char *show_size(uint64_t b, char *out, size_t len)
{
    if (b >= ((uint64_t)1 << 30))
        snprintf(out, len, "%.2f GiB", (double)b / (double)((uint64_t)1 << 30));
    else
        snprintf(out, len, "%.1f MiB", (double)b / (double)MIB);
    return out;
}

/* ---- the command line -------------------------------------------------- */

static int usage(FILE *f)
{
    fprintf(f, "usage: cca-replay TRACE... [--device-memory SIZE] [--reserve SIZE] [--cca LABEL=CONF]... [--only]\n"
               "                  [--json FILE] [--quiet]\n"
               "       cca-replay --to-csv DIR TRACE...\n"
               "TRACE: a trace CSV (RMM's logging layout, as cca_trace_start writes it), or a PyTorch memory\n"
               "snapshot pickle (torch.cuda.memory._dump_snapshot, cca.dump_snapshot): every device in it.\n"
               "SIZE: bytes, or a number with KiB/MiB/GiB/TiB (binary) or KB/MB/GB/TB (decimal).\n"
               "  --device-memory SIZE  the device to fit (default: the recording's, where it says)\n"
               "  --reserve SIZE        memory the CUDA context and other libraries hold (default 512MiB)\n"
               "  --cca LABEL=CONF      also replay cca with configuration CONF (CCA_CONF's syntax)\n"
               "  --only                replay only the --cca configurations (default: also pytorch, expandable, lean)\n"
               "  --json FILE           also write the results as JSON\n"
               "  --to-csv DIR          write each trace (each device of a pickle) as DIR/NAME.devN.csv; no replay\n"
               "  --quiet               print nothing (with --json)\n"
               "Exit status: 0 every configuration fits, 1 one does not, 2 bad input.\n");
    return 2;
}

static int bad(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int bad(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("cca-replay: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputs("\n", stderr);
    va_end(ap);
    return 2;
}

static int parse_args(int argc, const char *const *argv, opts_t *o)
{
    memset(o, 0, sizeof *o);
    o->reserve = 512 * MIB;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int ok;
        if (!strcmp(a, "--help") || !strcmp(a, "-h"))
            return usage(stdout) - 2 - 1;                          /* -1: done, exit 0 */
        if (!strcmp(a, "--only")) { o->only = 1; continue; }
        if (!strcmp(a, "--quiet")) { o->quiet = 1; continue; }
        int takes = !strcmp(a, "--device-memory") || !strcmp(a, "--reserve") || !strcmp(a, "--cca") ||
                    !strcmp(a, "--json") || !strcmp(a, "--to-csv");
        if (takes && i + 1 >= argc)
            return bad("%s needs a value", a);
        if (!strcmp(a, "--device-memory") || !strcmp(a, "--reserve")) {
            uint64_t v = parse_size(argv[++i], &ok);
            if (!ok)
                return bad("%s: '%s' is not a size (bytes, or a number with KiB, MiB, GiB, TiB, KB, MB, GB, TB)",
                           a, argv[i]);
            if (a[2] == 'd' && v == 0)
                return bad("--device-memory: a device of 0 bytes");
            *(a[2] == 'd' ? &o->device_memory : &o->reserve) = v;
        } else if (!strcmp(a, "--cca")) {
            const char *v = argv[++i], *eq = strchr(v, '=');
            if (!eq || eq == v || (size_t)(eq - v) >= sizeof o->confs[0].label)
                return bad("--cca: '%s' is not LABEL=CONF (e.g. --cca big=max_split_size_mb:512)", v);
            if (o->n_given == MAX_CONFS - 3)
                return bad("--cca: at most %d configurations", MAX_CONFS - 3);
            conf_t *c = &o->confs[3 + o->n_given++];
            snprintf(c->label, sizeof c->label, "%.*s", (int)(eq - v), v);
            c->conf = eq + 1;
            cca_config_t cfg;
            char err[300];
            cca_config_init(&cfg);
            if (cca_config_parse(&cfg, c->conf, err, sizeof err) != CCA_OK)
                return bad("--cca %s: %s", c->label, err);
            if (cfg.trace_file[0])
                return bad("--cca %s: trace_file has no place in a replay", c->label);
        } else if (!strcmp(a, "--json")) {
            o->json = argv[++i];
        } else if (!strcmp(a, "--to-csv")) {
            o->to_csv = argv[++i];
        } else if (a[0] == '-' && a[1]) {
            return bad("unknown option '%s' (the options: --device-memory, --reserve, --cca, --only, --json, "
                       "--to-csv, --quiet, --help)", a);
        } else {
            if (o->n_traces == (int)(sizeof o->traces / sizeof o->traces[0]))
                return bad("at most 256 traces");
            o->traces[o->n_traces++] = a;
        }
    }
    if (!o->n_traces)
        return bad("no TRACE given (cca-replay --help)");
    if (o->only && !o->n_given)
        return bad("--only keeps the --cca configurations, and none is given");
    static const conf_t builtin[3] = {{"pytorch", ""}, {"expandable", "preset:expandable"}, {"lean", "preset:lean"}};
    int k = 0;
    if (!o->only)
        for (; k < 3; k++)
            o->confs[k] = builtin[k];
    for (int g = 0; g < o->n_given; g++)
        o->confs[k++] = o->confs[3 + g];
    o->n_confs = k;
    return 0;
}

/* ---- loading: CSV or pickle ------------------------------------------- */

typedef struct loaded { trace_t t; char file[1024]; int device; } loaded_t;

static char *read_all(const char *path, size_t *len, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return NULL;
    }
    size_t cap = 1 << 16, n = 0, got;
    char *buf = malloc(cap + 1);
    while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            char *b = realloc(buf, cap * 2 + 1);
            if (!b)
                free(buf);
            buf = b;
            cap *= 2;
        }
    }
    int failed = ferror(f);
    fclose(f);
    if (!buf || failed) {
        free(buf);
        snprintf(err, errlen, "%s: %s", path, failed ? "read error" : "out of memory");
        return NULL;
    }
    buf[n] = 0;
    *len = n;
    return buf;
}

/* NAME of path/NAME.ext */
static void stem(const char *path, char *out, size_t len)
{
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    const char *dot = strrchr(b, '.');
    snprintf(out, len, "%.*s", (int)(dot && dot != b ? dot - b : (int)strlen(b)), b);
}

/* Appends every trace of path to *L (*n of them). 0, or 2 with the reason printed. */
static int load(const char *path, loaded_t **L, int *n)
{
    char err[600];
    size_t len;
    char *buf = read_all(path, &len, err, sizeof err);
    if (!buf)
        return bad("%s", err);
    snapshot_csv_t *csv = NULL;
    size_t n_csv = 0;
    int pickled = pickle_looks_like(buf, len);
    if (pickled && snapshot_csv_from_pickle(buf, len, &csv, &n_csv, err, sizeof err) != 0) {
        free(buf);
        return bad("%s: %s", path, err);
    }
    size_t want = pickled ? n_csv : 1;
    loaded_t *grown = realloc(*L, (size_t)(*n + (int)want) * sizeof **L);
    if (!grown) {
        free(buf);
        snapshot_csv_free(csv, n_csv);
        return bad("out of host memory");
    }
    *L = grown;
    int rc = 0;
    for (size_t i = 0; i < want && !rc; i++) {
        loaded_t *l = &(*L)[*n];
        memset(l, 0, sizeof *l);
        int r;
        if (pickled) {
            char name[300], s[256];
            stem(path, s, sizeof s);
            snprintf(name, sizeof name, "%s.dev%d.csv", s, csv[i].device);
            r = trace_load_text(csv[i].csv, name, &l->t);
            snprintf(l->file, sizeof l->file, "%s", path);
            l->device = csv[i].device;
        } else {
            r = trace_load_text(buf, path, &l->t);
            snprintf(l->file, sizeof l->file, "%s", path);
            l->device = l->t.device;
        }
        if (r != 0)
            rc = bad("%s", l->t.error);
        else
            (*n)++;
    }
    if (!pickled && !rc && (*L)[*n - 1].t.n_rows == 0 && !(*L)[*n - 1].t.version)
        rc = bad("%s: no trace rows (a trace CSV has the header Thread,Time,Action,Pointer,Size,Stream)", path);
    free(buf);
    snapshot_csv_free(csv, n_csv);
    return rc;
}

/* ---- --to-csv ---------------------------------------------------------- */

static int to_csv(const opts_t *o)
{
    struct stat st;
    if (stat(o->to_csv, &st) != 0 || !S_ISDIR(st.st_mode))
        return bad("--to-csv: %s is not a folder", o->to_csv);
    for (int i = 0; i < o->n_traces; i++) {
        char err[600], s[256], out[2048];
        size_t len, n = 0;
        char *buf = read_all(o->traces[i], &len, err, sizeof err);
        if (!buf)
            return bad("%s", err);
        if (!pickle_looks_like(buf, len)) {
            free(buf);
            return bad("%s: not a pickle; --to-csv converts PyTorch memory snapshots (a CSV is a trace already)",
                       o->traces[i]);
        }
        snapshot_csv_t *csv = NULL;
        int r = snapshot_csv_from_pickle(buf, len, &csv, &n, err, sizeof err);
        free(buf);
        if (r != 0)
            return bad("%s: %s", o->traces[i], err);
        stem(o->traces[i], s, sizeof s);
        for (size_t k = 0; k < n; k++) {
            snprintf(out, sizeof out, "%s/%s.dev%d.csv", o->to_csv, s, csv[k].device);
            FILE *f = fopen(out, "wb");
            int ok = f && fwrite(csv[k].csv, 1, csv[k].len, f) == csv[k].len;
            ok = f && fclose(f) == 0 && ok;
            if (!ok) {
                snapshot_csv_free(csv, n);
                return bad("%s: %s", out, strerror(errno));
            }
            if (!o->quiet)
                printf("%s: device %d, %zu rows (%zu alive when recording began)\n", out, csv[k].device,
                       csv[k].events, csv[k].preexisting);
        }
        snapshot_csv_free(csv, n);
    }
    return 0;
}

/* ---- the replays ------------------------------------------------------- */

typedef struct seen { cca_oom_report_t r; int have_oom; cca_stats_t st; int have_stats; } seen_t;

static void take_oom(void *ctx, void *arg)
{
    seen_t *s = arg;
    s->have_oom = cca_last_oom_report(ctx, &s->r) == CCA_OK && s->r.verdict != CCA_OOM_NONE;
}

static void take_stats(void *ctx, void *arg)
{
    seen_t *s = arg;
    s->have_stats = cca_get_stats(ctx, &s->st) == CCA_OK;
}

/* One replay on a device of `device` bytes with the reserve; 1 fits, 0 not, -1 error. */
static int try_device(const trace_t *t, const char *conf, uint64_t device, uint64_t reserve, int stop,
                      replay_result_t *out, seen_t *seen, char *err, size_t errlen)
{
    if (device <= reserve) {
        memset(out, 0, sizeof *out);
        out->first_oom = 0;
        return 0;
    }
    replay_opts_t ro = {.capacity = (size_t)device, .reserve = (size_t)reserve, .stop_at_oom = stop, .failures = 1,
                        .inspect = seen ? take_stats : NULL, .at_oom = seen ? take_oom : NULL, .inspect_arg = seen};
    *out = replay(t, &bench_ops_cca, conf, &ro);
    if (!out->ok) {
        snprintf(err, errlen, "%s", out->error);
        return -1;
    }
    return out->ooms == 0;
}

/* The figures of the replay on the given device, as the recorded run saw
 * them there (it goes on past a refusal, as the run did); with no device,
 * on one large enough for the whole run. Then the smallest device. */
static void run_one(const trace_t *t, const conf_t *c, const opts_t *o, uint64_t device, outcome_t *res)
{
    memset(res, 0, sizeof *res);
    res->device = device;
    res->fits = -1;
    replay_result_t r;
    uint64_t big = (uint64_t)replay_big_capacity(t), refused = 0;   /* room for the largest refused request too */
    for (size_t i = 0; i < t->n_events; i++)
        if (t->events[i].op == TRACE_FAILURE && t->events[i].size > refused)
            refused = t->events[i].size;
    if (2 * (t->peak_live_bytes + refused) > big)
        big = 2 * (t->peak_live_bytes + refused);
    big += o->reserve;
    if (device > big)
        big = device;
    seen_t seen = {0};
    int f = try_device(t, c->conf, device ? device : big, o->reserve, 0, &r, &seen, res->error, sizeof res->error);
    if (f < 0)
        return;
    res->peak_live = r.peak_live;
    res->peak_reserved = r.peak_reserved;
    res->device_allocs = seen.have_stats ? (uint64_t)seen.st.num_device_alloc : 0;
    if (device) {
        res->fits = f;
        if (!f) {
            size_t e = r.first_oom < t->n_events ? r.first_oom : 0;
            res->oom_event = t->n_events ? t->row[e] : 0;
            res->oom_time_us = t->n_events ? t->time_us[e] : 0;
            res->oom_size = t->n_events ? t->events[e].size : 0;
            if (seen.have_oom) {
                snprintf(res->verdict, sizeof res->verdict, "%s", cca_oom_verdict_string(seen.r.verdict));
                snprintf(res->advice, sizeof res->advice, "%s", seen.r.advice);
            } else {
                snprintf(res->verdict, sizeof res->verdict, "external");
                snprintf(res->advice, sizeof res->advice, "the reserve alone does not fit on the device");
            }
        }
    }
    /* the smallest device: it fits at big (where not even there: none);
     * below peak live + the reserve nothing can */
    if (try_device(t, c->conf, big, o->reserve, 1, &r, NULL, res->error, sizeof res->error) != 1)
        return;
    uint64_t lo = t->peak_live_bytes + o->reserve, hi = big;
    if (res->fits == 1 && device < hi)
        hi = device;                                  /* the given device fits: the smallest is no larger */
    if (lo > hi)
        lo = hi;
    f = try_device(t, c->conf, lo, o->reserve, 1, &r, NULL, res->error, sizeof res->error);
    if (f < 0)
        return;
    if (f)
        hi = lo;
    while (hi - lo > MIB && hi - lo > hi / 2000) {
        uint64_t mid = lo + (hi - lo) / 2;
        f = try_device(t, c->conf, mid, o->reserve, 1, &r, NULL, res->error, sizeof res->error);
        if (f < 0)
            return;
        *(f ? &hi : &lo) = mid;
    }
    res->min_device = hi;
}

static void show_time(uint64_t us, char *out, size_t len)
{
    snprintf(out, len, "%02" PRIu64 ":%02" PRIu64 ":%02" PRIu64 ".%06" PRIu64, us / 3600000000u,
             us / 60000000u % 60, us / 1000000u % 60, us % 1000000u);
}

static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            fprintf(f, "\\%c", ch);
        else if (ch < 0x20)
            fprintf(f, "\\u%04x", ch);
        else
            fputc(ch, f);
    }
    fputc('"', f);
}

static void print_trace(const opts_t *o, const loaded_t *l, uint64_t device, const outcome_t *res)
{
    char a[32], b[32], c[32], d[32];
    char dev[16] = "not said";
    if (l->device >= 0)
        snprintf(dev, sizeof dev, "%d", l->device);
    printf("%s: device %s, %zu events, peak live %s", l->t.name, dev, l->t.n_events, show_size(l->t.peak_live_bytes, a, sizeof a));
    if (device)
        printf("; on a %s device, %s reserved for the CUDA context and other libraries\n",
               show_size(device, b, sizeof b), show_size(o->reserve, c, sizeof c));
    else
        printf("; no device size (none given, and the recording names none): %s reserved\n",
               show_size(o->reserve, c, sizeof c));
    printf("  %-16s %12s %14s %16s  %s\n", "configuration", "peak live", "peak reserved", "smallest device",
           device ? "fits" : "");
    for (int k = 0; k < o->n_confs; k++) {
        const outcome_t *r = &res[k];
        if (*r->error) {
            printf("  %-16s failed: %s\n", o->confs[k].label, r->error);
            continue;
        }
        printf("  %-16s %12s %14s %16s  ", o->confs[k].label, show_size(r->peak_live, a, sizeof a),
               show_size(r->peak_reserved, b, sizeof b),
               r->min_device ? show_size(r->min_device, c, sizeof c) : "never");
        if (r->fits == 1)
            printf("yes");
        else if (r->fits == 0) {
            show_time(r->oom_time_us, d, sizeof d);
            printf("no: out of memory at event %zu (%s), allocating %s: %s", r->oom_event, d,
                   show_size(r->oom_size, a, sizeof a), r->verdict);
        }
        printf("\n");
        if (r->fits == 0 && *r->advice)
            printf("  %-16s   advice: %s\n", "", r->advice);
    }
}

static void json_trace(FILE *f, const opts_t *o, const loaded_t *l, const outcome_t *res, int first)
{
    fprintf(f, "%s\n    {\"file\": ", first ? "" : ",");
    json_str(f, l->file);
    fprintf(f, ", \"trace\": ");
    json_str(f, l->t.name);
    if (l->device >= 0)
        fprintf(f, ", \"device\": %d", l->device);
    else
        fprintf(f, ", \"device\": null");
    fprintf(f, ", \"events\": %zu, \"configurations\": [", l->t.n_events);
    for (int k = 0; k < o->n_confs; k++) {
        const outcome_t *r = &res[k];
        fprintf(f, "%s\n      {\"label\": ", k ? "," : "");
        json_str(f, o->confs[k].label);
        fprintf(f, ", \"conf\": ");
        json_str(f, o->confs[k].conf);
        if (*r->error) {
            fprintf(f, ", \"error\": ");
            json_str(f, r->error);
            fprintf(f, "}");
            continue;
        }
        fprintf(f, ", \"peak_live_bytes\": %" PRIu64 ", \"peak_reserved_bytes\": %" PRIu64
                ", \"num_device_alloc\": %" PRIu64, r->peak_live, r->peak_reserved, r->device_allocs);
        if (r->min_device)
            fprintf(f, ", \"min_device_bytes\": %" PRIu64, r->min_device);
        else
            fprintf(f, ", \"min_device_bytes\": null");
        fprintf(f, ", \"fits\": %s", r->fits < 0 ? "null" : r->fits ? "true" : "false");
        if (r->fits == 0)
            fprintf(f, ", \"oom_event\": %zu, \"oom_time_us\": %" PRIu64 ", \"verdict\": ", r->oom_event,
                    r->oom_time_us);
        else
            fprintf(f, ", \"oom_event\": null, \"oom_time_us\": null, \"verdict\": ");
        if (r->fits == 0)
            json_str(f, r->verdict);
        else
            fputs("null", f);
        fprintf(f, ", \"advice\": ");
        if (r->fits == 0)
            json_str(f, r->advice);
        else
            fputs("null", f);
        fprintf(f, "}");
    }
    fprintf(f, "]}");
}

EXPORT int cca_replay_version(void) { return REPLAY_JSON_VERSION; }

static int replay_main(int argc, const char *const *argv);

/* Flushes what it printed before returning: a caller may have pointed
 * stdout and stderr at files for the call (cca.replay). */
EXPORT int cca_replay_main(int argc, const char *const *argv)
{
    static pthread_mutex_t one = PTHREAD_MUTEX_INITIALIZER;   /* the simulator inside is one device world */
    pthread_mutex_lock(&one);
    int rc = replay_main(argc, argv);
    fflush(stdout);
    fflush(stderr);
    pthread_mutex_unlock(&one);
    return rc;
}

static int replay_main(int argc, const char *const *argv)
{
    opts_t o;
    int rc = parse_args(argc, argv, &o);
    if (rc == -1)
        return 0;
    if (rc)
        return rc;
    if (o.to_csv)
        return to_csv(&o);
    if (!simctl_is_sim())
        return bad("needs the simulated device (this build replays on a real GPU's runtime)");
    loaded_t *L = NULL;
    int n = 0;
    for (int i = 0; i < o.n_traces && !rc; i++)
        rc = load(o.traces[i], &L, &n);
    FILE *jf = NULL;
    if (!rc && o.json && !(jf = fopen(o.json, "w")))
        rc = bad("--json: cannot write %s: %s", o.json, strerror(errno));
    if (jf) {
        char dm[32] = "null";
        if (o.device_memory)
            snprintf(dm, sizeof dm, "%" PRIu64, o.device_memory);
        fprintf(jf, "{\"version\": %d, \"reserve_bytes\": %" PRIu64 ", \"device_memory_bytes\": %s, \"traces\": [",
                REPLAY_JSON_VERSION, o.reserve, dm);
    }
    int all_fit = 1, failed = 0;
    for (int i = 0; i < n && !rc; i++) {
        uint64_t device = o.device_memory ? o.device_memory : L[i].t.device_memory;
        outcome_t res[MAX_CONFS];
        for (int k = 0; k < o.n_confs; k++) {
            if (!o.quiet && L[i].t.n_events > (1u << 18))
                fprintf(stderr, "cca-replay: %s: %s ...\n", L[i].t.name, o.confs[k].label);
            run_one(&L[i].t, &o.confs[k], &o, device, &res[k]);
            all_fit &= res[k].fits != 0;
            failed |= *res[k].error != 0;
        }
        if (!o.quiet)
            print_trace(&o, &L[i], device, res);
        else
            for (int k = 0; k < o.n_confs; k++)
                if (*res[k].error)
                    fprintf(stderr, "cca-replay: %s, %s: %s\n", L[i].t.name, o.confs[k].label, res[k].error);
        if (jf)
            json_trace(jf, &o, &L[i], res, i == 0);
    }
    if (jf) {
        fprintf(jf, "\n]}\n");
        if (fclose(jf) != 0 && !rc)
            rc = bad("--json: cannot write %s: %s", o.json, strerror(errno));
    }
    for (int i = 0; i < n; i++)
        trace_free(&L[i].t);
    free(L);
    if (rc)
        return rc;
    return failed ? 2 : all_fit ? 0 : 1;
}
